/*
 * dmvacuum.c — VACUUM for dmindex: ambulkdelete walks the whole remote tree
 * in order, asks VACUUM's callback about each entry's tid, and deletes the
 * dead ones in sorted batches (each leaf locked and written once per
 * batch).  If a delete cannot be confirmed the error propagates: VACUUM must
 * fail rather than let the heap reuse line pointers an entry still points
 * to.  Before it returns, no index-only scan may still hold a deleted
 * entry (dmscanpin.c).  VACUUM touches no other index than its own.
 *
 * When it removed entries it then takes the leaves they left empty out of
 * the tree (dm_tree_reclaim, src/dm/dm_tree_reclaim.c), so that their nodes
 * serve later splits: an index whose rows are deleted and replaced by rows
 * with other keys does not grow without bound.  VACUUM is the reclaimer
 * because it is the one process that deletes entries and, holding
 * ShareUpdateExclusiveLock on the table, the only one doing so for this
 * index (the reclaim pass assumes one reclaimer per tree); concurrent scans
 * and inserts are safe (the core validates every hop, see there).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "dmam.h"

#define DELETE_BATCH 1024

IndexBulkDeleteResult *
dmbulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			 IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	dm_tree    *tree = dmindex_open_tree(index);
	dm_range	all = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 0, 0};
	dm_iter    *it;
	dm_entry   *dead = palloc(sizeof(dm_entry) * DELETE_BATCH);
	int			ndead = 0;
	double		kept = 0;
	dm_entry	e;
	int			rc;
	bool		synced = false;
	/* the suffixes of a batch's dead entries (VAR keys) */
	MemoryContext batchcxt = AllocSetContextCreate(CurrentMemoryContext, "dmindex vacuum batch",
												   ALLOCSET_DEFAULT_SIZES);

	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));

	/*
	 * Standbys read this tree directly: before any entry goes, raise its
	 * removal horizon, so that a standby scan that could miss one of them
	 * sees the raise and is cancelled if its snapshot is older (dmstandby.c).
	 */
	{
		/* VACUUM holds its lock on the table */
		Relation	heap = table_open(IndexGetRelation(RelationGetRelid(index), false), NoLock);

		dmindex_raise_removal_horizon(index, heap, tree, InvalidTransactionId);
		table_close(heap, NoLock);
	}
	if ((rc = dm_iter_open(tree, &all, &it)) != DM_OK)
		dmindex_tree_error(index, tree, rc);
	for (;;)
	{
		ItemPointerData tid;

		rc = dm_iter_next(it, &e);
		if (rc == 1)
		{
			dmindex_tid_unpack(e.tid & ~DM_TID_NULL, &tid);
			if (callback(&tid, callback_state))
				dead[ndead++] = dmindex_entry_copy(e, batchcxt);	/* the leaf copy moves on */
			else
				kept++;
		}
		if (ndead == DELETE_BATCH || (rc != 1 && ndead > 0))
		{
			int			removed = 0;
			int			drc;

			/*
			 * Once, before the first delete: every deleter's commit is in WAL
			 * before the insert position now, so a promoted synchronous
			 * standby has them all (dmfailover.c).
			 */
			if (!synced)
			{
				dmindex_before_remote_write(index, tree, dmindex_wal_insert_end());
				synced = true;
			}

			dmindex_wal_before_write();
			/* offloaded where dmindex.offload says so (dm_offload_sorted) */
			drc = dm_tree_delete_sorted(tree, dead, ndead, &removed);
			/* before the heap may reuse the tids: standbys drop the leaves first */
			dmindex_wal_log_written(index, tree);
			dmindex_offload_publish(tree);
			if (drc != DM_OK)
			{
				dm_iter_close(it);
				dmindex_tree_error(index, tree, drc);
			}
			/* entries are only deleted by VACUUM, one at a time per index */
			stats->tuples_removed += removed;
			/* no index-only scan may still return them when the heap frees their tids */
			dmindex_pin_wait(dm_tree_id(tree), dead, ndead);
			ndead = 0;
			MemoryContextReset(batchcxt);
		}
		if (rc != 1)
			break;
		vacuum_delay_point();
	}
	dm_iter_close(it);
	if (rc < 0)
		dmindex_tree_error(index, tree, -rc);
	pfree(dead);
	MemoryContextDelete(batchcxt);
	if (stats->tuples_removed > 0)
	{
		dm_reclaim_result res;

		dmindex_wal_before_write();
		rc = dm_tree_reclaim(tree, &res);
		/* the nodes it unlinked, marked dead or widened: standbys drop their copies (also after a failure) */
		dmindex_wal_log_written(index, tree);
		if (rc != DM_OK)
			dmindex_tree_error(index, tree, rc);
		/* VACUUM VERBOSE shows remote nodes as "pages" */
		stats->pages_newly_deleted += (BlockNumber) res.leaves_reclaimed;
		stats->pages_deleted += (BlockNumber) res.leaves_reclaimed;
		stats->pages_free = (BlockNumber) res.free_nodes;
	}
	stats->num_index_tuples = kept;
	stats->num_pages = RelationGetNumberOfBlocks(index);
	stats->estimated_count = false;
	return stats;
}

IndexBulkDeleteResult *
dmvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	/*
	 * No bulk delete ran: nothing changed, and counting the entries would
	 * read every node remotely; like nbtree, report nothing.  Trees of
	 * dropped indexes are not VACUUM's business (it would have to open
	 * every index of the database): dmgcworker.c collects them.
	 */
	return stats;
}
