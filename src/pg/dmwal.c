/*
 * dmwal.c — cache coherence of hot standbys through the primary's WAL
 * (DESIGN.md §7): a custom WAL resource manager whose records name the
 * remote nodes the primary wrote, and whose redo drops them from the
 * standby's node cache.
 *
 * A standby reads its primary's remote trees directly; its cache may keep
 * nodes (leaves of its own key ranges, inner nodes) only if it learns of
 * every change to them before that change can matter to its snapshots.
 * The primary's tree handles track the nodes they write
 * (dm_tree_track_writes); after every remote write batch — each flush of
 * the insert buffer (at pre-commit, so before the commit record, and the
 * early flushes) and each ambulkdelete batch (so before VACUUM lets the
 * heap reuse the tids) — dmindex_wal_log_written() logs their addresses.
 * Redo on a standby drops those nodes with dm_cache_invalidate_nodes,
 * which bumps the cache's invalidation generation first, so a reader that
 * read a node remotely before the redo cannot admit its copy after it.  A
 * snapshot that sees a commit was taken after the commit record was
 * replayed, hence after the invalidations logged before it: it can meet
 * no cached copy older than the changes it sees.
 *
 * The records are logged even when the write failed half way (a split done
 * but its batch not), because the nodes written are changed all the same.
 * A primary that crashes after a remote write and before its record
 * reached the disk loses the record; so the first writer after a primary
 * starts logs an "everything" record (standbys drop their whole cache)
 * before its first remote write.
 *
 * Resource manager id: 128 (RM_EXPERIMENTAL_ID, PostgreSQL's id for
 * extensions under development; https://wiki.postgresql.org/wiki/CustomWALResourceManagers
 * lists the reserved ones).  Registering it needs dmindex in
 * shared_preload_libraries, which dmindex requires anyway.  Records are
 * only written at wal_level replica or higher (no standby otherwise).
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "storage/lwlock.h"
#include "utils/rel.h"

#include "dm_cache.h"
#include "dmam.h"

#define DMINDEX_RMGR_ID			RM_EXPERIMENTAL_ID
#define XLOG_DMINDEX_NODES		0x00	/* these nodes of one tree changed */
#define XLOG_DMINDEX_ALL		0x10	/* anything may have changed: drop the whole cache */

#define MAX_ADDRS_PER_RECORD	4096

typedef struct xl_dmindex_nodes
{
	uint64		tree_id;
	uint64		tag;			/* the tree's cache tag (tree id and home incarnation) */
	uint32		n;
	uint32		whole_tree;		/* the primary lost count: drop every node of the tree */
	/* dm_gaddr addrs[n] follow */
} xl_dmindex_nodes;

/* Shared: whether this postmaster's first "everything" record was written. */
/* the "everything" record of this server's run: not yet, being logged, logged */
#define ALL_NOT_LOGGED	0
#define ALL_LOGGING		1
#define ALL_LOGGED		2

typedef struct WalShared
{
	slock_t		mutex;
	int			all_state;
} WalShared;

static WalShared *wal_shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* ---- redo (a standby's startup process) ------------------------------------------ */

static void
dmindex_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	char	   *data = XLogRecGetData(record);

	/* no cache: nothing to keep coherent (also the primary's own crash recovery: a new cache) */
	if (dmindex_node_cache == NULL)
		return;
	if (info == XLOG_DMINDEX_ALL)
	{
		dm_cache_invalidate_all(dmindex_node_cache);
		return;
	}
	if (info == XLOG_DMINDEX_NODES)
	{
		xl_dmindex_nodes hdr;
		uint64		tag;

		memcpy(&hdr, data, sizeof(hdr));
		tag = hdr.tag;
		if (hdr.whole_tree)
		{
			dm_cache_invalidate_nodes(dmindex_node_cache, tag, NULL, 0);	/* the generation */
			dm_cache_invalidate_tree(dmindex_node_cache, tag);
		}
		else
		{
			dm_gaddr   *addrs = palloc(sizeof(dm_gaddr) * Max(hdr.n, 1));

			memcpy(addrs, data + sizeof(hdr), sizeof(dm_gaddr) * hdr.n);
			dm_cache_invalidate_nodes(dmindex_node_cache, tag, addrs, (int) hdr.n);
			pfree(addrs);
		}
		return;
	}
	elog(PANIC, "dmindex_redo: unknown op code %u", info);
}

static void
dmindex_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info == XLOG_DMINDEX_NODES)
	{
		xl_dmindex_nodes hdr;

		memcpy(&hdr, XLogRecGetData(record), sizeof(hdr));
		appendStringInfo(buf, "tree %016llx: %s%u nodes", (unsigned long long) hdr.tree_id,
						 hdr.whole_tree ? "all nodes, " : "", hdr.n);
	}
}

static const char *
dmindex_identify(uint8 info)
{
	switch (info & ~XLR_INFO_MASK)
	{
		case XLOG_DMINDEX_NODES:
			return "NODES_WRITTEN";
		case XLOG_DMINDEX_ALL:
			return "ALL_CHANGED";
	}
	return NULL;
}

static RmgrData dmindex_rmgr = {
	.rm_name = "dmindex",
	.rm_redo = dmindex_redo,
	.rm_desc = dmindex_desc,
	.rm_identify = dmindex_identify,
};

/* ---- logging (the primary) ------------------------------------------------------------ */

/*
 * Log the "everything" record once per run of the server, before its first
 * remote write.  No backend may write before that record is in the WAL
 * (else a standby could replay its commit while still holding copies the
 * record is meant to drop): the others wait while one logs it.
 */
static void
log_all_once(void)
{
	for (;;)
	{
		int			state;

		SpinLockAcquire(&wal_shared->mutex);
		state = wal_shared->all_state;
		if (state == ALL_NOT_LOGGED)
			wal_shared->all_state = ALL_LOGGING;
		SpinLockRelease(&wal_shared->mutex);
		if (state == ALL_LOGGED)
			return;
		if (state == ALL_LOGGING)
		{
			CHECK_FOR_INTERRUPTS();
			pg_usleep(1000L);
			continue;
		}
		break;					/* ours to log */
	}
	PG_TRY();
	{
		char		dummy = 0;

		/*
		 * A promoted standby's cache may hold copies its redo never got the
		 * invalidation of (records its old primary had not sent): drop it.
		 */
		if (dmindex_node_cache)
			dm_cache_invalidate_all(dmindex_node_cache);

		XLogBeginInsert();
		XLogRegisterData(&dummy, 1);
		(void) XLogInsert(DMINDEX_RMGR_ID, XLOG_DMINDEX_ALL);
	}
	PG_CATCH();
	{
		SpinLockAcquire(&wal_shared->mutex);
		wal_shared->all_state = ALL_NOT_LOGGED;
		SpinLockRelease(&wal_shared->mutex);
		PG_RE_THROW();
	}
	PG_END_TRY();
	SpinLockAcquire(&wal_shared->mutex);
	wal_shared->all_state = ALL_LOGGED;
	SpinLockRelease(&wal_shared->mutex);
}

void
dmindex_wal_before_write(void)
{
	if (wal_shared && XLogStandbyInfoActive() && wal_shared->all_state != ALL_LOGGED)
		log_all_once();
}

/* unlogged indexes are not readable on standbys */
static bool
standbys_read(Relation index)
{
	return XLogStandbyInfoActive() && !RecoveryInProgress() && RelationNeedsWAL(index);
}

void
dmindex_wal_log_whole_tree(Relation index, dm_tree *tree)
{
	xl_dmindex_nodes hdr;

	if (!standbys_read(index))
		return;
	memset(&hdr, 0, sizeof(hdr));
	hdr.tree_id = dm_tree_id(tree);
	hdr.tag = dm_tree_cache_tag(tree);
	hdr.whole_tree = 1;
	XLogBeginInsert();
	XLogRegisterData((char *) &hdr, sizeof(hdr));
	(void) XLogInsert(DMINDEX_RMGR_ID, XLOG_DMINDEX_NODES);
}

void
dmindex_wal_log_written(Relation index, dm_tree *tree)
{
	const dm_gaddr *addrs;
	int			n,
				overflow;
	xl_dmindex_nodes hdr;

	addrs = dm_tree_written_nodes(tree, &n, &overflow);
	if ((n == 0 && !overflow) || !standbys_read(index))
		return;
	if (overflow)
	{
		dmindex_wal_log_whole_tree(index, tree);
		return;
	}
	memset(&hdr, 0, sizeof(hdr));
	hdr.tree_id = dm_tree_id(tree);
	hdr.tag = dm_tree_cache_tag(tree);
	for (int off = 0; off < n; off += MAX_ADDRS_PER_RECORD)
	{
		hdr.n = (uint32) Min(n - off, MAX_ADDRS_PER_RECORD);
		XLogBeginInsert();
		XLogRegisterData((char *) &hdr, sizeof(hdr));
		XLogRegisterData((char *) (addrs + off), sizeof(dm_gaddr) * hdr.n);
		(void) XLogInsert(DMINDEX_RMGR_ID, XLOG_DMINDEX_NODES);
	}
}

/* ---- registration ------------------------------------------------------------------- */

static void
wal_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(WalShared)));
}

static void
wal_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	wal_shared = ShmemInitStruct("dmindex wal", sizeof(WalShared), &found);
	if (!found)
	{
		/* also after a crash restart of the backends: their writes since the last record may be unlogged */
		SpinLockInit(&wal_shared->mutex);
		wal_shared->all_state = ALL_NOT_LOGGED;
	}
	LWLockRelease(AddinShmemInitLock);
}

void
dmindex_wal_init(void)
{
	RegisterCustomRmgr(DMINDEX_RMGR_ID, &dmindex_rmgr);
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = wal_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = wal_shmem_startup;
}
