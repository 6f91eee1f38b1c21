/*
 * dmscan.c — index scans for dmindex: plain (ordered, both directions,
 * with direction changes for scrollable cursors), index-only (for opclasses
 * that can decode their keys) and bitmap scans.
 *
 * The scan keys become entry ranges (dmscankey.c): one, or with
 * "col = ANY(array)" keys one per distinct element, ascending; the scan
 * reads them one after the other in its direction (the current one is
 * "range" below).  For each, two sorted streams are
 * merged: the remote tree's iterator (dm_tree_scan.c keeps a private copy of
 * the current leaf, like nbtree's BTScanPosData) and this transaction's own
 * entries that are still in the insert buffer (dminsert.c), which no other
 * backend can see yet but this transaction must.
 *
 * Offloading (dmindex.offload, dmoffload.c).  A forward stream asks the
 * memnode's executor for batches of entries (dm_offload_scan_batch: one
 * RPC follows the leaves of the range on the memnode's CPU), 64 first, then
 * four times more each time up to 4096 (a bitmap scan asks for 4096 at
 * once), so a LIMIT reads little.  When the policy chooses one-sided reads
 * or the executor declines, the stream goes on with an iterator from where
 * the batches stopped.  Backward streams always use the iterator.  A batch
 * is a copy like the iterator's leaf: the pin covers it up to its last
 * entry, so VACUUM waits for it as for a leaf copy.
 *
 * Point lookups (hopscotch leaves, docs/design.md §5.1).  A forward scan
 * for one non-NULL key, from its start, on a tree of hopscotch leaves asks
 * dm_tree_lookup for the key's tids: it reads the key's neighbourhood in
 * one round trip instead of whole leaves (or offloads, or falls back to
 * whole leaves itself: an overflowed home, a key continuing in the next
 * leaf).  The tids become the remote stream as a batch of entries, pinned
 * like an offloaded batch.  A key with more than POINT_MAX entries, a
 * standby (its replica handle reads whole leaves anyway, and checks the
 * removal horizon per leaf) and everything else use the iterator.
 */
#include "postgres.h"

#include "access/itup.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "utils/rel.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "dm_offload.h"
#include "dmam.h"

#define BATCH_FIRST 64			/* entries of a stream's first offloaded batch */
#define POINT_MAX 256			/* tids a point lookup takes (more: the iterator) */

/*
 * DmScanOpaqueData — the state of one scan.
 *
 *	tree		the index's remote tree (cached handle, see dmmeta.c)
 *	ranges		entries the scan keys allow: nranges ranges, ascending and
 *				disjoint (0: none can match, then nothing is read at all);
 *				in keycxt, which every rescan resets: making the ranges
 *				allocates (the "= ANY" elements, detoasted arrays), and a
 *				nested loop rescans once per outer row
 *	cur, range	the range being read (or, after the last call, the one the
 *				scan sits in): range is ranges[cur]
 *	iter		remote iterator over range in the current direction, opened
 *				lazily; NULL once exhausted or before the first call
 *	batching	the remote stream is offloaded batches instead (forward
 *				only): batch[bpos..nbatch) are left of the last one, brest is
 *				the range not fetched yet (bmore: there is some), bwant the
 *				size to ask for next, bcap the room in batch.  A point
 *				lookup's tids are one such batch, with nothing more
 *	rnext		lookahead: the remote stream's next entry (has_rnext)
 *	pend		a copy of the transaction's buffered entries inside range
 *				(sorted), npend of them; ppos is the next one to merge in the
 *				current direction.  In pendcxt, suffixes included: while the
 *				scan is open this transaction may write the buffer early (an
 *				INSERT ... SELECT over this index, a cursor's next FETCH) or
 *				roll a savepoint back, and either frees the buffer's suffixes
 *				(dminsert.c, keep_suffixes)
 *	dir			direction of the streams as opened
 *	has_last	an entry has been returned; last is it
 *	exhausted	the last call ran off the end in direction dir.  Like a
 *				cursor, the scan then sits past last: reversing returns last
 *				again.  Otherwise it sits on last, and reversing continues
 *				strictly beyond it.
 *	pin			for index-only scans and non-MVCC snapshots, the key-range pin
 *				that makes VACUUM wait (dmscanpin.c): it covers what the leaf
 *				copy and rnext may still give; NULL when none is held
 *	var			key format VAR (dmvarkey.c): entries have suffixes, and the
 *				ranges do not capture every condition, so every row is
 *				rechecked (dmscanvar.c).  A suffix of the iterator's points
 *				into its leaf copy, valid until its next entry: last keeps
 *				its own copy (last_sfx), and so does the bound the streams
 *				were opened from (from_sfx: the iterator borrows it while
 *				open), each of the tree's maximum key length
 *	standby		the server is in recovery (a hot standby, dmstandby.c): tids
 *				past the heap's end are skipped, every tid is rechecked, and
 *				the removal horizon is checked after every remote read
 *	heap_nblocks	the heap's length as last read (InvalidBlockNumber: not yet)
 *	heap		the table, opened here for a bitmap scan (whose scan has no
 *				heapRelation); NULL otherwise
 */
typedef struct DmScanOpaqueData
{
	dm_tree    *tree;
	MemoryContext keycxt;
	dm_range   *ranges;
	int			nranges;
	int			cur;
	dm_range	range;
	dm_iter    *iter;
	bool		batching;
	dm_range	brest;
	bool		bmore;
	dm_entry   *batch;
	int			bcap;
	int			nbatch;
	int			bpos;
	int			bwant;
	bool		has_rnext;
	dm_entry	rnext;
	bool		remote_done;
	MemoryContext pendcxt;
	dm_entry   *pend;
	int			npend;
	int			ppos;
	ScanDirection dir;
	bool		started;
	bool		has_last;
	dm_entry	last;
	bool		exhausted;
	DmScanPinHandle *pin;
	bool		var;
	uint8	   *last_sfx;
	uint8	   *from_sfx;
	bool		standby;
	BlockNumber heap_nblocks;
	Relation	heap;
} DmScanOpaqueData;

typedef DmScanOpaqueData *DmScanOpaque;

IndexScanDesc
dmbeginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	DmScanOpaque so = palloc0(sizeof(DmScanOpaqueData));

	scan->opaque = so;
	scan->xs_itupdesc = RelationGetDescr(index);
	so->keycxt = AllocSetContextCreate(CurrentMemoryContext, "dmindex scan keys",
									   ALLOCSET_SMALL_SIZES);
	so->pendcxt = AllocSetContextCreate(CurrentMemoryContext, "dmindex scan buffered entries",
										ALLOCSET_SMALL_SIZES);
	so->var = dmindex_key_format(index) == DM_KEY_VAR;
	if (so->var)
	{
		uint32		max = dmindex_key_info(index)->key_max;

		so->last_sfx = palloc(max);
		so->from_sfx = palloc(max);
	}
	so->heap_nblocks = InvalidBlockNumber;
	return scan;
}

static void
close_streams(DmScanOpaque so)
{
	if (so->iter)
		dm_iter_close(so->iter);
	so->iter = NULL;
	so->batching = false;
	so->bmore = false;
	so->nbatch = so->bpos = 0;
	/* no copy held any more: nothing for VACUUM to wait for */
	if (so->pin)
		dmindex_pin_set(so->pin, DM_ENTRY_INF, DM_ENTRY_MIN);
	so->has_rnext = false;
	so->remote_done = false;
	if (so->pend)
		MemoryContextReset(so->pendcxt);
	so->pend = NULL;
	so->npend = 0;
	so->ppos = 0;
	so->started = false;
}

void
dmrescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys)
{
	DmScanOpaque so = (DmScanOpaque) scan->opaque;

	MemoryContext old;

	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	close_streams(so);
	so->has_last = false;
	so->exhausted = false;
	MemoryContextReset(so->keycxt);
	so->ranges = NULL;			/* gone with the reset, even if the next call fails */
	so->nranges = 0;
	old = MemoryContextSwitchTo(so->keycxt);
	so->nranges = dmindex_keys_to_ranges(scan->indexRelation, scan->keyData,
										 scan->numberOfKeys, &so->ranges);
	MemoryContextSwitchTo(old);
	so->cur = 0;
	so->standby = RecoveryInProgress();
	so->heap_nblocks = InvalidBlockNumber;
}

/* The table of the scan's index (the executor holds its lock). */
static Relation
scan_heap(IndexScanDesc scan)
{
	DmScanOpaque so = (DmScanOpaque) scan->opaque;

	if (scan->heapRelation)
		return scan->heapRelation;
	if (so->heap == NULL)
		so->heap = relation_open(scan->indexRelation->rd_index->indrelid, NoLock);
	return so->heap;
}

/* Is e inside the scan's range (direction aside)? */
static bool
in_range(const dm_range *r, dm_entry e)
{
	int			lo = dm_entry_cmp(e, r->lo);
	int			hi = dm_entry_cmp(e, r->hi);

	return (lo > 0 || (lo == 0 && r->lo_incl)) && (hi < 0 || (hi == 0 && r->hi_incl));
}

/*
 * Pins (see dmscanpin.c).  Before a remote read the pin covers everything
 * the scan may still return (r: the stream's range); after it, only the
 * entries from the last one returned to the far fence of the leaf copy.
 */
static void
pin_widen(DmScanOpaque so, const dm_range *r)
{
	if (so->pin)
		dmindex_pin_set(so->pin, r->lo, r->hi);
}

static void
pin_narrow(DmScanOpaque so)
{
	bool		backward = ScanDirectionIsBackward(so->dir);
	dm_entry	from = so->has_last ? so->last : (backward ? so->range.hi : so->range.lo);
	dm_entry	to;

	if (so->pin == NULL)
		return;
	if (so->iter && dm_iter_copy_bound(so->iter, &to))
		;
	else if (so->batching && so->bpos < so->nbatch)
		to = so->batch[so->nbatch - 1]; /* forward: the batch's last entry */
	else if (so->has_rnext)
		to = so->rnext;
	else
	{
		/* nothing read is left to return */
		dmindex_pin_set(so->pin, DM_ENTRY_INF, DM_ENTRY_MIN);
		return;
	}
	if (backward)
		dmindex_pin_set(so->pin, to, from);
	else
		dmindex_pin_set(so->pin, from, to);
}

/* Room for n entries in so->batch (the scan's memory). */
static void
batch_reserve(DmScanOpaque so, int n)
{
	if (so->bcap >= n)
		return;
	if (so->batch)
		pfree(so->batch);
	so->batch = MemoryContextAlloc(GetMemoryChunkContext(so), sizeof(dm_entry) * n);
	so->bcap = n;
}

/*
 * The remote stream of a forward scan of one non-NULL key from its start,
 * on a tree of hopscotch leaves: the key's tids from one point lookup, as a
 * batch.  False, with nothing changed, for any other scan, or when the key
 * has more than POINT_MAX entries (the caller opens the iterator).
 */
static bool
open_point(IndexScanDesc scan, const dm_range *r)
{
	DmScanOpaque so = (DmScanOpaque) scan->opaque;
	uint64_t	tids[POINT_MAX];
	int			n,
				rc;

	/*
	 * From the key's start: r->lo = (key, 0) inclusive.  A scan continuing
	 * inside this key after a returned entry has r->lo at that entry
	 * (continue_after_last), so only a fresh key — the first, or the next
	 * "= ANY" element — gets here.
	 */
	if (r->backward || so->standby ||
		dm_tree_leaf_format(so->tree, NULL) != DM_LEAF_HOPSCOTCH ||
		!r->lo_incl || !r->hi_incl || r->lo.key != r->hi.key ||
		r->lo.tid != 0 || r->hi.tid != DM_TID_MAX)
		return false;
	rc = dm_tree_lookup(so->tree, r->lo.key, tids, POINT_MAX, &n);
	dmindex_offload_publish(so->tree);
	if (rc != DM_OK)
		dmindex_tree_error(scan->indexRelation, so->tree, rc);
	if (n > POINT_MAX)
		return false;
	batch_reserve(so, Max(n, 1));
	for (int i = 0; i < n; i++)
		so->batch[i] = dm_entry_make(r->lo.key, tids[i]);
	so->batching = true;
	so->bmore = false;
	so->nbatch = n;
	so->bpos = 0;
	return true;
}

/*
 * Narrow r, read in direction r->backward, to its entries strictly beyond
 * the last returned one — or from it on, when the scan ran off the end past
 * it (a cursor reversing returns it again).  A last entry short of r (from
 * an earlier range) leaves r whole; one past its far end (r lies behind the
 * scan after a reversal) leaves it empty.
 */
static void
continue_after_last(const DmScanOpaque so, dm_range *r)
{
	int			c;

	if (!so->has_last)
		return;
	if (r->backward)
	{
		c = dm_entry_cmp(so->last, r->hi);
		if (c < 0 || (c == 0 && !so->exhausted))
		{
			r->hi = so->last;
			r->hi_incl = so->exhausted;
		}
	}
	else
	{
		c = dm_entry_cmp(so->last, r->lo);
		if (c > 0 || (c == 0 && !so->exhausted))
		{
			r->lo = so->last;
			r->lo_incl = so->exhausted;
		}
	}
}

/* Open both streams of the current range in direction dir, strictly beyond the last returned entry. */
static void
open_streams(IndexScanDesc scan, ScanDirection dir)
{
	DmScanOpaque so = (DmScanOpaque) scan->opaque;
	dm_range	r = so->range;
	const dm_entry *pend;
	int			npend;
	int			rc;

	close_streams(so);
	so->dir = dir;
	so->started = true;
	r.backward = ScanDirectionIsBackward(dir);
	/* a direction change, or the next range: from the last returned entry on */
	continue_after_last(so, &r);
	/* the iterator borrows its bounds' suffixes: not last's, which moves on */
	if (r.lo.sfx == so->last_sfx && r.lo.sfx_len > 0)
	{
		memcpy(so->from_sfx, r.lo.sfx, r.lo.sfx_len);
		r.lo.sfx = so->from_sfx;
	}
	if (r.hi.sfx == so->last_sfx && r.hi.sfx_len > 0)
	{
		memcpy(so->from_sfx, r.hi.sfx, r.hi.sfx_len);
		r.hi.sfx = so->from_sfx;
	}
	if (dmindex_range_empty(&r))
	{
		so->remote_done = true; /* nothing of this range is left in this direction */
		return;
	}
	if (so->tree == NULL)
		so->tree = dmindex_open_tree(scan->indexRelation);
	/* entries returned without a heap check that would catch a freed tid */
	if (so->pin == NULL && (scan->xs_want_itup || !IsMVCCSnapshot(scan->xs_snapshot)))
	{
		/* in the scan's memory, which a failed portal takes with it */
		MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(so));

		so->pin = dmindex_pin_acquire(dm_tree_id(so->tree));
		MemoryContextSwitchTo(old);
	}
	pin_widen(so, &r);
	if (open_point(scan, &r))
		;						/* the key's tids are the batch */
	else if (!r.backward && !so->standby && dm_tree_get_offload(so->tree) != DM_OFFLOAD_OFF)
	{
		/* batches from the executor, fetched by next_entry (fetch_batch) */
		so->batching = true;
		so->brest = r;
		so->bmore = true;
		so->bwant = BATCH_FIRST;
	}
	else
	{
		rc = dm_iter_open(so->tree, &r, &so->iter);
		if (rc != DM_OK)
			dmindex_tree_error(scan->indexRelation, so->tree, rc);
	}
	/* a standby: did the primary remove entries our snapshot needs? (dmstandby.c) */
	if (so->standby)
		dmindex_check_removal_horizon(scan->indexRelation, so->tree, scan->xs_snapshot);
	pin_narrow(so);

	pend = dmindex_pending_entries(scan->indexRelation, so->tree, &npend);
	if (npend > 0)
	{
		so->pend = MemoryContextAlloc(so->pendcxt, sizeof(dm_entry) * npend);
		for (int i = 0; i < npend; i++)
			if (in_range(&r, pend[i]))
				so->pend[so->npend++] = dmindex_entry_copy(pend[i], so->pendcxt);
	}
	so->ppos = r.backward ? so->npend - 1 : 0;
}

/*
 * The next offloaded batch of the forward stream; if the policy chose
 * one-sided reads or the executor declined, an iterator over the rest
 * instead.  (The pin covers the rest of the range: next_entry widened it.)
 */
static void
fetch_batch(IndexScanDesc scan)
{
	DmScanOpaque so = (DmScanOpaque) scan->opaque;
	int			n,
				more,
				rc;
	dm_entry	resume;

	batch_reserve(so, so->bwant);
	so->nbatch = so->bpos = 0;
	rc = dm_offload_scan_batch(so->tree, so->brest.lo, so->brest.lo_incl, so->brest.hi,
							   so->brest.hi_incl, so->batch, so->bwant, &n, &more, &resume);
	dmindex_offload_publish(so->tree);
	if (rc == DM_ERR_FALLBACK)
	{
		so->batching = false;
		rc = dm_offload_iter_open(so->tree, &so->brest, &so->iter);
	}
	if (rc != DM_OK)
		dmindex_tree_error(scan->indexRelation, so->tree, rc);
	if (!so->batching)
		return;
	so->nbatch = n;
	so->bmore = more != 0;
	if (more)
	{
		so->brest.lo = resume;
		so->brest.lo_incl = more == DM_OFF_RESUME_INCL;
	}
	so->bwant = Min(so->bwant * 4, DM_OFF_MAX_ENTRIES);
}

/* The remote stream's next entry: 1, 0 at its end (dm_iter_next's convention). */
static int
remote_next(IndexScanDesc scan, dm_entry *e)
{
	DmScanOpaque so = (DmScanOpaque) scan->opaque;

	while (so->batching)
	{
		if (so->bpos < so->nbatch)
		{
			*e = so->batch[so->bpos++];
			return 1;
		}
		if (!so->bmore)
			return 0;
		fetch_batch(scan);
	}
	return so->iter ? dm_iter_next(so->iter, e) : 0;
}

/* The next entry of the merged streams, or false at the end. */
static bool
next_entry(IndexScanDesc scan, dm_entry *out)
{
	DmScanOpaque so = (DmScanOpaque) scan->opaque;
	bool		backward = ScanDirectionIsBackward(so->dir);
	bool		has_pend;
	int			c;

	if (!so->has_rnext && !so->remote_done)
	{
		int			rc;
		dm_range	r = so->range;

		/* from the last returned entry to the end of the range */
		r.backward = backward;
		continue_after_last(so, &r);
		pin_widen(so, &r);
		rc = remote_next(scan, &so->rnext);

		if (rc < 0)
			dmindex_tree_error(scan->indexRelation, so->tree, -rc);
		if (so->standby)
			dmindex_check_removal_horizon(scan->indexRelation, so->tree, scan->xs_snapshot);
		if (rc == 1)
			so->has_rnext = true;
		else
			so->remote_done = true;
	}
	/*
	 * ppos walks pend in the scan's direction: within bounds there is one
	 * more.  (Both bounds: a range left empty by continue_after_last opens
	 * no buffered entries, and ppos then points at none in either
	 * direction.)
	 */
	has_pend = so->ppos >= 0 && so->ppos < so->npend;
	if (!so->has_rnext && !has_pend)
		return false;
	if (!has_pend)
		c = -1;
	else if (!so->has_rnext)
		c = 1;
	else
	{
		c = dm_entry_cmp(so->rnext, so->pend[so->ppos]);
		if (backward)
			c = -c;
	}
	/* c < 0: remote first; c > 0: buffered first; 0: the same entry in both */
	if (c <= 0)
	{
		*out = so->rnext;
		so->has_rnext = false;
		if (c == 0)
			so->ppos += backward ? -1 : 1;
	}
	else
	{
		*out = so->pend[so->ppos];
		so->ppos += backward ? -1 : 1;
	}
	return true;
}

bool
dmgettuple(IndexScanDesc scan, ScanDirection dir)
{
	DmScanOpaque so = (DmScanOpaque) scan->opaque;
	dm_entry	e;

	if (so->nranges == 0)
		return false;
	if (!so->started || so->dir != dir)
	{
		if (!so->started)
		{
			pgstat_count_index_scan(scan->indexRelation);
			so->cur = ScanDirectionIsBackward(dir) ? so->nranges - 1 : 0;
		}
		so->range = so->ranges[so->cur];
		open_streams(scan, dir);
	}
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (!next_entry(scan, &e))
		{
			int			next = so->cur + (ScanDirectionIsBackward(dir) ? -1 : 1);

			if (next >= 0 && next < so->nranges)
			{
				/* the next "= ANY" element's range */
				so->cur = next;
				so->range = so->ranges[next];
				open_streams(scan, dir);
				continue;
			}
			so->exhausted = true;
			/* nothing read is left to return: let VACUUM pass (a reversal pins again) */
			if (so->pin)
			{
				dmindex_pin_release(so->pin);
				so->pin = NULL;
			}
			return false;
		}
		so->exhausted = false;
		so->has_last = true;
		so->last = e;
		if (e.sfx_len > 0)
		{
			/* e's suffix goes with the iterator's next leaf copy */
			memcpy(so->last_sfx, e.sfx, e.sfx_len);
			so->last.sfx = so->last_sfx;
		}
		pin_narrow(so);
		dmindex_tid_unpack(e.tid & ~DM_TID_NULL, &scan->xs_heaptid);

		/*
		 * On a standby, an entry of a row the primary inserted in a heap
		 * page this server has not replayed yet: no row of our snapshot.
		 */
		if (so->standby && dmindex_tid_beyond_heap(scan_heap(scan), &scan->xs_heaptid, &so->heap_nblocks))
			continue;
		break;
	}

	/*
	 * FIXED8 keys encode values exactly: the index's answer needs no
	 * recheck — except on a standby, where the entry may be the primary's
	 * for a row not replayed yet and the tid still hold another row here.
	 * VAR ranges may hold rows that fail a condition (dmscanvar.c).
	 */
	scan->xs_recheck = so->standby || so->var;
	if (scan->xs_want_itup)
	{
		bool		isnull = dm_entry_is_null(e);
		Datum		value = isnull ? (Datum) 0 : dmindex_decode(scan->indexRelation, e.key);

		/* one tuple per call: free the previous one, or memory grows with the scan */
		if (scan->xs_itup)
			pfree(scan->xs_itup);
		scan->xs_itup = index_form_tuple(scan->xs_itupdesc, &value, &isnull);
	}
	return true;
}

int64
dmgetbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	DmScanOpaque so = (DmScanOpaque) scan->opaque;
	ItemPointerData tids[256];
	int			n = 0;
	int64		total = 0;
	dm_entry	e;

	if (so->nranges == 0)
		return 0;
	pgstat_count_index_scan(scan->indexRelation);
	for (so->cur = 0; so->cur < so->nranges; so->cur++)
	{
		so->range = so->ranges[so->cur];
		open_streams(scan, ForwardScanDirection);
		so->bwant = DM_OFF_MAX_ENTRIES;	/* all of the range is wanted */
		while (next_entry(scan, &e))
		{
			dmindex_tid_unpack(e.tid & ~DM_TID_NULL, &tids[n]);
			/* a standby: past the heap's end is a row not replayed yet (see dmgettuple) */
			if (so->standby && dmindex_tid_beyond_heap(scan_heap(scan), &tids[n], &so->heap_nblocks))
				continue;
			n++;
			if (n == lengthof(tids))
			{
				tbm_add_tuples(tbm, tids, n, so->standby || so->var);
				total += n;
				n = 0;
				CHECK_FOR_INTERRUPTS();
			}
		}
	}
	if (n > 0)
		tbm_add_tuples(tbm, tids, n, so->standby || so->var);
	total += n;
	close_streams(so);
	return total;
}

void
dmendscan(IndexScanDesc scan)
{
	DmScanOpaque so = (DmScanOpaque) scan->opaque;

	close_streams(so);
	dmindex_pin_release(so->pin);
	if (so->batch)
		pfree(so->batch);
	if (so->var)
	{
		pfree(so->last_sfx);
		pfree(so->from_sfx);
	}
	MemoryContextDelete(so->keycxt);
	MemoryContextDelete(so->pendcxt);
	if (so->heap)
		relation_close(so->heap, NoLock);
	pfree(so);
}
