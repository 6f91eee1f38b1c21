/*
 * dmstandby.c — what a hot standby needs to read its primary's remote trees
 * correctly (docs/design.md §7), and the primary's side of it.
 *
 * A standby's handles are read-only replicas (dmmeta.c, src/dm/
 * dm_tree_replica.c).  Its heap lags the remote tree, which the primary
 * changes at once, so three things can differ from what its snapshot says:
 *
 *  - Entries ahead of its heap: the primary inserted rows the standby has
 *    not replayed.  A tid beyond the heap's end is skipped
 *    (dmindex_tid_beyond_heap); one inside it reaches a line pointer that is
 *    unused or holds another row, which the heap fetch and the recheck of
 *    the scan keys (dmscan.c sets it in recovery) sort out.
 *
 *  - Entries its snapshot still needs: the primary's VACUUM removes entries
 *    of rows dead to every snapshot the primary knows of.  With
 *    hot_standby_feedback through a physical slot that includes the
 *    standby's; without, a standby snapshot may still see a row whose
 *    entry is gone.  So before it removes any entry, the primary raises the
 *    tree's removal horizon (dmindex_raise_removal_horizon) to the oldest
 *    xid it may still need, and a standby scan compares the horizon it has
 *    read after each remote node (the core reads it with the node) with
 *    its snapshot's xmin (dmindex_check_removal_horizon): a horizon above
 *    the xmin means an entry this snapshot needs may be gone, and the query
 *    is cancelled like a recovery conflict.  Why the comparison is enough:
 *    the horizon is stored (acknowledged) before any delete is issued, so a
 *    leaf read that misses a deleted entry happened after the raise, and
 *    the horizon read that follows it in the same batch (or round trip)
 *    sees the raised value; a scan that saw no raise read no leaf that lost
 *    an entry since it began.
 *
 *  - Index-only scans: the visibility map of a lagging standby may call a
 *    page all-visible that the primary has changed since, and the index has
 *    entries for rows the standby has not replayed: amcanreturn is false in
 *    recovery (dmhandler.c).
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xlog.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "dmam.h"

/* A 32-bit xid as a full one, in the epoch of next (xid precedes or equals next). */
static FullTransactionId
full_xid_at(TransactionId xid, FullTransactionId next)
{
	uint32		epoch = EpochFromFullTransactionId(next);

	if (!TransactionIdIsNormal(xid))
		return FullTransactionIdFromEpochAndXid(0, xid);
	/* xid is at most 2^31 before next: if it is numerically above next's, it is of the epoch before */
	if (xid > XidFromFullTransactionId(next))
		epoch--;
	return FullTransactionIdFromEpochAndXid(epoch, xid);
}

void
dmindex_raise_removal_horizon(Relation index, Relation heap, dm_tree *tree, TransactionId at_least)
{
	/*
	 * Conservative: no row VACUUM removes now is needed by a snapshot whose
	 * xmin is at or above the oldest xid any snapshot the primary knows of
	 * may need, taken now (after VACUUM computed its own cutoff).  A build
	 * leaves out rows dead by the same rule, or, building concurrently,
	 * rows its snapshot does not see (at_least: that snapshot's xmin).
	 */
	TransactionId oldest = GetOldestNonRemovableTransactionId(heap);
	FullTransactionId h;

	if (TransactionIdIsNormal(at_least) && TransactionIdFollows(at_least, oldest))
		oldest = at_least;
	h = full_xid_at(oldest, ReadNextFullTransactionId());
	int			rc;

	if ((rc = dm_tree_horizon_raise(tree, U64FromFullTransactionId(h))) != DM_OK)
		dmindex_tree_error(index, tree, rc);
}

void
dmindex_check_removal_horizon(Relation index, dm_tree *tree, Snapshot snapshot)
{
	uint64		seen;
	FullTransactionId xmin;

	if (!dm_tree_is_replica(tree) || snapshot == NULL || !IsMVCCSnapshot(snapshot))
		return;
	seen = dm_tree_horizon_seen(tree);
	if (seen == 0)
		return;
	xmin = full_xid_at(snapshot->xmin, ReadNextFullTransactionId());
	if (seen > U64FromFullTransactionId(xmin))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("canceling statement due to conflict with recovery"),
				 errdetail("The primary removed entries of index \"%s\" that the query's snapshot may need "
						   "(removal horizon %llu, snapshot xmin %llu).",
						   RelationGetRelationName(index), (unsigned long long) seen,
						   (unsigned long long) U64FromFullTransactionId(xmin)),
				 errhint("Set \"hot_standby_feedback\" on the standby and connect it through a physical replication slot, "
						 "so that the primary keeps the entries its queries need.")));
}

bool
dmindex_tid_beyond_heap(Relation heap, ItemPointer tid, BlockNumber *nblocks)
{
	BlockNumber blk = ItemPointerGetBlockNumber(tid);

	if (*nblocks != InvalidBlockNumber && blk < *nblocks)
		return false;
	/* replay may have extended the heap since we last looked: once more before skipping */
	*nblocks = RelationGetNumberOfBlocks(heap);
	return blk >= *nblocks;
}
