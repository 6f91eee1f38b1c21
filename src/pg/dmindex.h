/*
 * dmindex.h — the lower of the two internal headers of the PostgreSQL side:
 * what its files share that has nothing to do with an index relation: the
 * GUC variables of the connection (dmindex.c), credentials for the memnodes
 * (dmauth.c), the parsed memnode list, the backend's memnode client and the
 * mapping of dm_status codes to ereport() (dmconn.c).  dmfuncs.c (the
 * memnode SQL functions) needs only this.  The access method's own
 * interface is dmam.h, which includes this header; nothing here refers to
 * anything there.
 *
 * The code under src/dm/ knows nothing of PostgreSQL: it returns dm_status
 * codes and waits through a callback.  Everything that turns those into
 * latches, interrupts and SQLSTATEs lives behind this header (dmconn.c), so
 * the access method files only call dm functions and dmindex_raise().
 */
#ifndef DMINDEX_H
#define DMINDEX_H

#include "fmgr.h"

#include "dm_client.h"

/* ---- GUCs (dmindex.c) ---------------------------------------------------- */

/* Values of dmindex.transport: those of dm_backend. */
typedef enum DmTransport
{
	DMINDEX_TRANSPORT_AUTO = DM_BACKEND_AUTO,
	DMINDEX_TRANSPORT_TCP = DM_BACKEND_TCP,
	DMINDEX_TRANSPORT_SHM = DM_BACKEND_SHM,
	DMINDEX_TRANSPORT_UCX = DM_BACKEND_UCX
} DmTransport;

extern char *dmindex_memnodes_guc;	/* dmindex.memnodes, raw */
extern int dmindex_connect_timeout;	/* ms */
extern int dmindex_op_timeout;	/* ms */
extern int dmindex_transport;	/* DmTransport */

extern void _PG_init(void);

/* ---- credentials for the memnodes (dmauth.c) ------------------------------ */

extern char *dmindex_memnode_auth_file;	/* dmindex.memnode_auth_file */
extern void dmindex_auth_init(void);
/* Load the file's identity and secret into opts; *creds to release after dm_client_create. */
extern void dmindex_auth_apply(dm_client_opts *opts, dm_auth_entry **creds);
extern void dmindex_auth_release(dm_auth_entry *creds, int n);

/* ---- memnode lists and the backend's client (dmconn.c) ------------------- */

/*
 * A parsed list of memnode addresses ("host:port"), in one allocation so
 * that it can serve as the "extra" of the dmindex.memnodes GUC (which guc.c
 * releases with free()).  addresses[] point into the same block.
 */
typedef struct DmMemnodeList
{
	int			count;
	const char *addresses[FLEXIBLE_ARRAY_MEMBER];
} DmMemnodeList;

/* Longest accepted address, as dm_node_info.address holds it. */
#define DMINDEX_ADDRESS_MAX ((int) sizeof(((dm_node_info *) NULL)->address) - 1)

/* The current value of dmindex.memnodes, parsed; never NULL after _PG_init. */
extern DmMemnodeList *dmindex_memnode_list;

/*
 * Parse a comma-separated list of host:port entries.  Never raises an
 * error (it runs in a GUC check hook): on failure returns NULL and leaves a
 * full-sentence reason in errbuf.  The result is allocated with alloc as
 * one block; alloc may be malloc (GUC extra) or palloc.
 */
extern DmMemnodeList *dmindex_parse_memnodes(const char *value,
											 void *(*alloc) (Size),
											 char *errbuf, Size errbuf_len);

/*
 * The backend's memnode client, created on first use and rebuilt when
 * dmindex.memnodes, dmindex.transport or a timeout changed (a rebuild drops
 * all connections).  It opens no connection by itself: use
 * dmindex_connect().  The pointer is valid until the next call of this
 * function, so do not keep it across a return to the executor; keep global
 * addresses and node ids instead, and compare dmindex_client_generation()
 * to notice a rebuild.
 */
extern dm_client *dmindex_get_client(void);
extern uint64 dmindex_client_generation(void);

/*
 * Make sure the client has a working connection to address: connect, or
 * re-establish a broken connection.  Returns a dm_status (never raises an
 * error, except out of memory).  A memnode that restarted with empty memory
 * gives DM_ERR_INCARNATION unless accept_new_incarnation, in which case the
 * client switches to the new incarnation; only code that holds no remote
 * data of the old one (or checks incarnations itself, as the metapage check
 * of the access method will) may ask for that.
 */
extern int	dmindex_connect(dm_client *client, const char *address,
							bool accept_new_incarnation, uint16 *node_id);

/* Info about the connection to node_id; false if there is none. */
extern bool dmindex_node_info(const dm_client *client, uint16 node_id,
							  dm_node_info *info);

/*
 * A client for a one-off probe (SQL functions taking addresses).  It is
 * destroyed when the current memory context is reset or deleted, so an
 * error cannot leak it, or earlier by dmindex_temp_client_destroy().
 */
typedef struct DmTempClient DmTempClient;

extern DmTempClient *dmindex_temp_client_create(void);
extern dm_client *dmindex_temp_client_get(DmTempClient *tc);
extern void dmindex_temp_client_destroy(DmTempClient *tc);

/*
 * Report a failed dm operation (status != DM_OK) with a proper SQLSTATE.
 * address names the memnode (NULL: the one the client's error message
 * names, dmindex_error_memnode; "unknown" if none); the detail comes from
 * dm_client_error(client) when client is not NULL.  With elevel >= ERROR it
 * does not return; for DM_ERR_INTERRUPTED it first services the pending
 * interrupt (CHECK_FOR_INTERRUPTS), so a query cancel is reported as such.
 * Lower levels (WARNING from commit/abort callbacks) just log.  Must not be
 * called with elevel >= ERROR inside a critical section.
 */
extern void dmindex_report(int elevel, int status, const dm_client *client,
						   const char *address);

/*
 * What went wrong, as one line for a result column: the client's error
 * message without the memnode prefix, else dm_strerror(status).  palloc'd.
 */
extern char *dmindex_error_text(const dm_client *client, int status,
								const char *address);

/*
 * The memnode the client's last error names ("memnode HOST:PORT: ..."),
 * copied to buf; NULL if it names none (an error of the tree itself).
 */
extern const char *dmindex_error_memnode(const dm_client *client, char *buf, size_t len);

/* dmindex_report(ERROR, ...), and the compiler knows it does not return. */
extern void dmindex_raise(int status, const dm_client *client,
						  const char *address) pg_attribute_noreturn();

#endif							/* DMINDEX_H */
