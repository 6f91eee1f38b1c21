/*
 * dmindex.c — module entry point: PG_MODULE_MAGIC and the dmindex.* GUCs.
 *
 * The access method, its shared memory and the SQL functions live in their
 * own files; this one only defines the configuration they read.
 */
#include "postgres.h"

#include <stdlib.h>

#include "miscadmin.h"
#include "utils/guc.h"

#include "dmam.h"
#include "dmindex.h"

PG_MODULE_MAGIC;

/* An hour: a memnode that takes longer than that to answer is gone. */
#define DMINDEX_TIMEOUT_MAX (3600 * 1000)

char	   *dmindex_memnodes_guc = NULL;
int			dmindex_connect_timeout = 5000;
int			dmindex_op_timeout = 10000;
int			dmindex_transport = DMINDEX_TRANSPORT_AUTO;

static const struct config_enum_entry transport_options[] = {
	{"auto", DMINDEX_TRANSPORT_AUTO, false},
	{"tcp", DMINDEX_TRANSPORT_TCP, false},
	{"shm", DMINDEX_TRANSPORT_SHM, false},
	{"ucx", DMINDEX_TRANSPORT_UCX, false},
	{NULL, 0, false}
};

/*
 * Reject a malformed dmindex.memnodes before it is installed, so that a bad
 * reload keeps the old value (and the server keeps running) and a typo is
 * reported where it was made instead of at the first index access.  The
 * parsed list becomes the GUC's "extra" and so is always in step with the
 * string.
 */
static bool
memnodes_check_hook(char **newval, void **extra, GucSource source)
{
	char		errbuf[256];
	DmMemnodeList *list;

	list = dmindex_parse_memnodes(*newval ? *newval : "", malloc,
								  errbuf, sizeof(errbuf));
	if (list == NULL)
	{
		GUC_check_errdetail("%s", errbuf);
		return false;
	}
	*extra = list;
	return true;
}

static void
memnodes_assign_hook(const char *newval, void *extra)
{
	dmindex_memnode_list = (DmMemnodeList *) extra;
}

void
_PG_init(void)
{
	/*
	 * The node cache and the key-range ownership of an instance live in
	 * shared memory, which only a preloaded library can set up; a backend
	 * that loaded dmindex on its own would run without them.
	 */
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("dmindex must be loaded via shared_preload_libraries"),
				 errhint("Add dmindex to shared_preload_libraries in postgresql.conf and restart the server.")));

	/*
	 * PGC_SIGHUP, not PGC_SUSET: global addresses carry only a memnode id,
	 * and the node cache in shared memory (and, later, each index's
	 * metapage) is shared by all backends of the instance, so all of them
	 * must talk to the same set of memnodes.  Administrators can still
	 * probe other memnodes with dmindex_memnodes(text).
	 */
	DefineCustomStringVariable("dmindex.memnodes",
							   "Memory nodes (dmindex-memnode processes) that hold dmindex indexes.",
							   "A comma-separated list of host:port addresses. "
							   "All sessions of a server use the same list.",
							   &dmindex_memnodes_guc,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   memnodes_check_hook,
							   memnodes_assign_hook,
							   NULL);

	/*
	 * Timeouts and the transport only change how this backend reaches the
	 * memnodes, not what it sees there, so every user may tune them.  A
	 * change makes the backend reconnect at its next memnode access.
	 */
	DefineCustomIntVariable("dmindex.connect_timeout",
							"Maximum time to wait while connecting to a memnode.",
							NULL,
							&dmindex_connect_timeout,
							5000,
							1,
							DMINDEX_TIMEOUT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL,
							NULL,
							NULL);

	DefineCustomIntVariable("dmindex.op_timeout",
							"Maximum time to wait for a memnode to answer a request.",
							NULL,
							&dmindex_op_timeout,
							10000,
							1,
							DMINDEX_TIMEOUT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL,
							NULL,
							NULL);

	DefineCustomEnumVariable("dmindex.transport",
							 "How to reach memnodes.",
							 "\"shm\" maps the shared memory a memnode on the same host exports, "
							 "\"tcp\" sends every operation over the network, "
							 "\"ucx\" reads, writes and runs atomics one-sidedly through UCX "
							 "(RDMA where there is hardware; memnodes started with --ucx), "
							 "\"auto\" uses shm where possible and tcp otherwise.",
							 &dmindex_transport,
							 DMINDEX_TRANSPORT_AUTO,
							 transport_options,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomIntVariable("dmindex.insert_buffer",
							"Entries a transaction buffers before writing them to the memory nodes early.",
							"Entries are written at commit at the latest, after the WAL of their rows is flushed.",
							&dmindex_insert_buffer,
							10000,
							1,
							INT_MAX / 2,
							PGC_USERSET,
							0,
							NULL,
							NULL,
							NULL);

	/* a restored base backup is another server than the one it was taken from */
	dmindex_writer_forget_copied_nonces();
	dmindex_auth_init();
	dmindex_cache_init();
	dmindex_partition_init();
	dmindex_claim_init();
	dmindex_wal_init();
	dmindex_offload_init();
	dmindex_gc_worker_init();
	dmindex_scanpin_init();
	dmindex_init_reloptions();	/* defines dmindex.default_leaf_format too */

	MarkGUCPrefixReserved("dmindex");

	dmindex_insert_init();
	dmindex_gc_init();
}
