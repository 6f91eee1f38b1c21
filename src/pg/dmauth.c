/*
 * dmauth.c — this cluster's credentials for the memnodes: the GUC
 * dmindex.memnode_auth_file and loading it into a client's options.
 *
 * The file holds one line "identity secret" (src/dm/dm_auth.h), owned by
 * the server's user and mode 0600 like a server key.  It is read each time
 * a backend builds its memnode client (at first use, and after a change of
 * a connection setting), so the secret lives only in the dm client's
 * memory, and a SIGHUP that names another file takes effect at the next
 * memnode access of every backend.  The setting is PGC_SIGHUP and
 * superuser-only: every backend must act as the same identity (the trees
 * of one cluster belong to one identity), and its path is nobody else's
 * business.
 */
#include "postgres.h"

#include "utils/guc.h"

#include "dm_auth.h"
#include "dmindex.h"

char	   *dmindex_memnode_auth_file = NULL;

void
dmindex_auth_init(void)
{
	DefineCustomStringVariable("dmindex.memnode_auth_file",
							   "File with the identity and secret this server authenticates with at the memnodes.",
							   "One line \"identity secret\", readable only by the server's user. "
							   "Empty: no authentication (for memnodes without --auth-file).",
							   &dmindex_memnode_auth_file,
							   "",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   NULL,
							   NULL,
							   NULL);
}

/*
 * Fill opts with the credentials of dmindex.memnode_auth_file (nothing if
 * it is empty).  *creds holds them until the client is created; the caller
 * wipes it with dmindex_auth_release() right after.
 */
void
dmindex_auth_apply(dm_client_opts *opts, dm_auth_entry **creds)
{
	char		err[512];
	int			n = 0;

	*creds = NULL;
	if (dmindex_memnode_auth_file == NULL || dmindex_memnode_auth_file[0] == '\0')
		return;
	if (dm_auth_file_load(dmindex_memnode_auth_file, creds, &n, err, sizeof(err)) != DM_OK)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("could not use \"dmindex.memnode_auth_file\""),
				 errdetail_internal("%s", err)));
	if (n != 1)
	{
		dmindex_auth_release(*creds, n);
		*creds = NULL;
		ereport(ERROR,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("could not use \"dmindex.memnode_auth_file\""),
				 errdetail("The file \"%s\" has %d identities; a server authenticates as exactly one.",
						   dmindex_memnode_auth_file, n)));
	}
	opts->auth_identity = (*creds)->identity;
	opts->auth_secret = (*creds)->secret;
	opts->auth_secret_len = (*creds)->secret_len;
}

void
dmindex_auth_release(dm_auth_entry *creds, int n)
{
	dm_auth_free(creds, n);
}
