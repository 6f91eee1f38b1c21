/*
 * dmcheck.c — SQL functions about one dmindex index:
 *
 *   dmindex_stats(index)  the remote tree's shape, entries and size; from
 *       schema 0.4 also its leaf format, neighbourhood and overflowed
 *       hopscotch homes (a database still at 0.1-0.3 declares the first
 *       8 columns only, and gets those)
 *   dmindex_check(index, heapallindexed)
 *       verifies the remote tree's invariants (dm_tree_verify), and with
 *       heapallindexed also that every heap tuple visible to the current
 *       snapshot has its entry, and that no entry is stale: points at an
 *       unused line pointer, past the end of the heap, or at a tuple whose
 *       value has another key (a reused tid would make the index lie).
 *       Raises ERRCODE_INDEX_CORRUPTED on the first problem it finds.
 *       On a hot standby (read-only, no lock recovery cannot take) the heap
 *       lags the tree: entries ahead of it are legitimate, so only the
 *       tree, the cache and "every visible row has its entry" are checked,
 *       and a removal horizon above the snapshot's xmin cancels the check
 *       like a query (dmstandby.c).
 *   dmindex_gc()  frees remote trees no index owns any more.
 */
#include "postgres.h"


#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "dmam.h"

PG_FUNCTION_INFO_V1(dmindex_stats);
PG_FUNCTION_INFO_V1(dmindex_check);
PG_FUNCTION_INFO_V1(dmindex_gc);

Relation
dmindex_open_checked(Oid indexoid, Relation *heap, LOCKMODE mode)
{
	Oid			heapoid = IndexGetRelation(indexoid, true);
	Relation	index;

	if (!OidIsValid(heapoid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index", get_rel_name(indexoid) ? get_rel_name(indexoid) : "?")));
	*heap = table_open(heapoid, mode);
	index = index_open(indexoid, mode);
	if (index->rd_rel->relam != get_index_am_oid("dmindex", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a dmindex index", RelationGetRelationName(index))));
	return index;
}

/* Columns of dmindex_stats as schema 0.1 (to 0.3) and 0.4 declare it. */
#define STATS_COLS_01 8
#define STATS_COLS_04 11

Datum
dmindex_stats(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Relation	heap, index;
	TupleDesc	tupdesc;
	dm_tree    *tree;
	dm_tree_stats st;
	DmMetaPageData meta;
	Datum		values[STATS_COLS_04];
	bool		nulls[STATS_COLS_04] = {0};
	uint64		inner = 0;
	int			rc;
	int			format, h;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (tupdesc->natts != STATS_COLS_01 && tupdesc->natts != STATS_COLS_04)
		elog(ERROR, "dmindex_stats: the function is declared with %d columns, not %d or %d",
			 tupdesc->natts, STATS_COLS_01, STATS_COLS_04);
	index = dmindex_open_checked(indexoid, &heap, AccessShareLock);
	dmindex_read_meta(index, &meta);
	tree = dmindex_open_tree(index);
	if ((rc = dm_tree_stats_get(tree, &st)) != DM_OK)
		dmindex_tree_error(index, tree, rc);
	for (int l = 1; l < 16; l++)
		inner += st.nodes[l];
	values[0] = Int32GetDatum(st.height);
	values[1] = Int64GetDatum((int64) st.nodes[0]);
	values[2] = Int64GetDatum((int64) inner);
	values[3] = Int64GetDatum((int64) st.entries);
	values[4] = Float8GetDatum(st.leaf_fill);
	values[5] = Int64GetDatum((int64) st.remote_bytes);
	values[6] = Int32GetDatum((int32) meta.node_size);
	values[7] = Int32GetDatum((int32) meta.nmemnodes);
	/* the tree's own format (dmindex_open_tree checked the metapage agrees) */
	format = dm_tree_leaf_format(tree, &h);
	values[8] = CStringGetTextDatum(dmindex_leaf_format_name(format));
	values[9] = Int32GetDatum(h);
	values[10] = Int64GetDatum((int64) st.hop_overflow_homes);
	nulls[9] = nulls[10] = format != DM_LEAF_HOPSCOTCH;
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

typedef struct CheckState
{
	Relation	index;
	dm_entry   *entries;		/* every entry of the tree, sorted */
	int64		nentries;
	int64		heap_tuples;
	int64		missing;
	ItemPointerData first_missing;
} CheckState;

static int
entry_cmp(const void *a, const void *b)
{
	return dm_entry_cmp(*(const dm_entry *) a, *(const dm_entry *) b);
}

/* Called for each visible heap tuple (root tid for HOT chains). */
static void
check_tuple_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
					 bool tupleIsAlive, void *state)
{
	CheckState *cs = state;
	dm_entry	e = dmindex_form_entry(index, values, isnull, tid, CurrentMemoryContext);
	bool		found;

	cs->heap_tuples++;
	found = bsearch(&e, cs->entries, cs->nentries, sizeof(dm_entry), entry_cmp) != NULL;
	if (e.sfx_len > 0)
		pfree((void *) e.sfx);
	if (!found)
	{
		if (cs->missing++ == 0)
			cs->first_missing = *tid;
	}
}

/* The entry's tid must lead to a used line pointer holding a tuple with the same key. */
static void
check_not_stale(Relation heap, Relation index, IndexInfo *ii, EState *estate,
				TupleTableSlot *slot, dm_entry e)
{
	ItemPointerData tid;
	BlockNumber blk;
	Buffer		buf;
	Page		page;
	ItemId		lp;
	OffsetNumber off;
	bool		mismatch = false;

	dmindex_tid_unpack(e.tid & ~DM_TID_NULL, &tid);
	blk = ItemPointerGetBlockNumber(&tid);
	off = ItemPointerGetOffsetNumber(&tid);
	if (blk >= RelationGetNumberOfBlocks(heap))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has an entry for (%u,%u), past the end of table \"%s\"",
						RelationGetRelationName(index), blk, off, RelationGetRelationName(heap))));
	buf = ReadBuffer(heap, blk);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page) ||
		!ItemIdIsUsed(lp = PageGetItemId(page, off)))
	{
		UnlockReleaseBuffer(buf);
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has a stale entry for (%u,%u): the line pointer is unused",
						RelationGetRelationName(index), blk, off),
				 errdetail("The heap may reuse that line pointer for another row, which the entry would then point to.")));
	}
	if (ItemIdIsNormal(lp))
	{
		HeapTupleData tup;
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];
		dm_entry	expect;

		tup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
		tup.t_len = ItemIdGetLength(lp);
		tup.t_tableOid = RelationGetRelid(heap);
		tup.t_self = tid;
		ExecStoreBufferHeapTuple(&tup, slot, buf);
		FormIndexDatum(ii, slot, estate, values, isnull);
		expect = dmindex_form_entry(index, values, isnull, &tid, CurrentMemoryContext);
		mismatch = dm_entry_cmp(expect, e) != 0;
		ExecClearTuple(slot);
	}
	UnlockReleaseBuffer(buf);
	if (mismatch)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has a stale entry for (%u,%u): the row there has another value",
						RelationGetRelationName(index), blk, off)));
}

Datum
dmindex_check(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	bool		heapallindexed = PG_GETARG_BOOL(1);
	Relation	heap, index;
	TupleDesc	tupdesc;
	dm_tree    *tree;
	char		msg[512];
	uint64		count = 0;
	int			rc;
	CheckState	cs;
	Datum		values[3];
	bool		nulls[3] = {0};
	bool		standby = RecoveryInProgress();
	/* ShareLock: no concurrent writers, so heap and index agree while we compare (not in recovery) */
	LOCKMODE	mode = heapallindexed && !standby ? ShareLock : AccessShareLock;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	index = dmindex_open_checked(indexoid, &heap, mode);
	/* this transaction's own buffered entries count as present */
	dmindex_flush_pending();
	tree = dmindex_open_tree(index);
	rc = dm_tree_verify(tree, &count, msg, sizeof(msg));
	if (rc == DM_ERR_CORRUPT)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is corrupted", RelationGetRelationName(index)),
				 errdetail("%s", msg),
				 errhint("REINDEX the index.")));
	if (rc != DM_OK)
		dmindex_tree_error(index, tree, rc);
	/* the node cache must agree with remote memory (write-through) */
	rc = dm_tree_verify_cache(tree, NULL, msg, sizeof(msg));
	if (rc == DM_ERR_CORRUPT)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("the node cache of index \"%s\" disagrees with its memory nodes",
						RelationGetRelationName(index)),
				 errdetail("%s", msg),
				 errhint("Restart the server to empty the cache, and report the problem.")));
	if (rc != DM_OK)
		dmindex_tree_error(index, tree, rc);

	memset(&cs, 0, sizeof(cs));
	if (heapallindexed)
	{
		dm_range	all = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 0, 0};
		dm_iter    *it;
		dm_entry	e;
		IndexInfo  *ii = BuildIndexInfo(index);
		EState	   *estate = CreateExecutorState();
		TupleTableSlot *slot = table_slot_create(heap, NULL);
		Snapshot	snapshot = RegisterSnapshot(GetTransactionSnapshot());
		TableScanDesc scan;

		GetPerTupleExprContext(estate)->ecxt_scantuple = slot;
		int64		cap = Max(count, 1);

		cs.index = index;
		cs.entries = palloc_extended(sizeof(dm_entry) * cap, MCXT_ALLOC_HUGE);
		if ((rc = dm_iter_open(tree, &all, &it)) != DM_OK)
			dmindex_tree_error(index, tree, rc);
		while ((rc = dm_iter_next(it, &e)) == 1)
		{
			if (standby)
			{
				/* the primary writes on: more entries than verify counted, and none may be missing */
				dmindex_check_removal_horizon(index, tree, snapshot);
				if (cs.nentries == cap)
				{
					cap *= 2;
					cs.entries = repalloc_huge(cs.entries, sizeof(dm_entry) * cap);
				}
			}
			else if ((uint64) cs.nentries == count)
				break;			/* verify counted fewer: it ran before us, under our lock */
			/* a suffix points into the iterator's leaf copy: keep a copy */
			e = dmindex_entry_copy(e, CurrentMemoryContext);
			cs.entries[cs.nentries++] = e;
			/* on a standby an entry may be ahead of the heap: not stale */
			if (!standby)
				check_not_stale(heap, index, ii, estate, slot, e);
			CHECK_FOR_INTERRUPTS();
		}
		dm_iter_close(it);
		if (rc < 0)
			dmindex_tree_error(index, tree, -rc);
		if (standby)
			dmindex_check_removal_horizon(index, tree, snapshot);

		/* every tuple the snapshot sees must have its entry */
		scan = table_beginscan_strat(heap, snapshot, 0, NULL, true, false);
		table_index_build_scan(heap, index, ii, true, false, check_tuple_callback, &cs, scan);
		UnregisterSnapshot(snapshot);
		ExecDropSingleTupleTableSlot(slot);
		FreeExecutorState(estate);
		if (cs.missing > 0)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\" lacks entries for %lld rows of table \"%s\"",
							RelationGetRelationName(index), (long long) cs.missing,
							RelationGetRelationName(heap)),
					 errdetail("The first is row (%u,%u).",
							   ItemPointerGetBlockNumber(&cs.first_missing),
							   ItemPointerGetOffsetNumber(&cs.first_missing)),
					 errhint("REINDEX the index.")));
	}
	values[0] = Int64GetDatum((int64) count);
	values[1] = Int64GetDatum(cs.heap_tuples);
	nulls[1] = !heapallindexed;
	values[2] = BoolGetDatum(true);
	index_close(index, mode);
	table_close(heap, mode);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
dmindex_gc(PG_FUNCTION_ARGS)
{
	int64		freed;

	/* a standby's catalog lags its primary's: it could free a live tree */
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("dmindex_gc() cannot run during recovery"),
				 errhint("Run it on the primary.")));
	freed = dmindex_gc_database(true);

	if (freed < 0)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("dmindex_gc() cannot run in a transaction that has changed the database"),
				 errhint("Run it in its own transaction.")));
	PG_RETURN_INT64(freed);
}
