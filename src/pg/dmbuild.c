/*
 * dmbuild.c — CREATE INDEX (and REINDEX, TRUNCATE) for dmindex: create a
 * remote tree for the new relfilenode, scan the heap into a tuplesort of
 * (key, tid) pairs, and bulk-load the sorted stream bottom-up into the tree
 * (many nodes per round trip).  Progress is reported through
 * pg_stat_progress_create_index.  ambuildempty writes the init fork of an
 * unlogged index.
 */
#include "postgres.h"

#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type.h"
#include "commands/progress.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplesort.h"

#include "utils/snapmgr.h"

#include "dmam.h"

/* Our subphases of pg_stat_progress_create_index (core uses 1). */
#define DMINDEX_PHASE_SCAN 2
#define DMINDEX_PHASE_SORT 3
#define DMINDEX_PHASE_LOAD 4

#define LOAD_BATCH 1024

/*
 * The sort works on two int8 columns.  Keys and tids are unsigned 64-bit,
 * int8 sorts signed: flipping the top bit makes signed order equal unsigned
 * order.
 */
#define FLIP(v) ((int64) ((uint64) (v) ^ (UINT64CONST(1) << 63)))
#define UNFLIP(v) ((uint64) (v) ^ (UINT64CONST(1) << 63))

typedef struct DmBuildState
{
	Relation	index;
	bool		var;			/* key format VAR: (bytea key, tid) */
	Tuplesortstate *sort;
	TupleTableSlot *slot;		/* virtual: what we put into the sort */
	TupleTableSlot *out;		/* minimal: what the sort gives back */
	StringInfoData key;			/* VAR: the row's key, as a bytea */
	double		indtuples;
} DmBuildState;

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	DmBuildState *bs = state;

	ExecClearTuple(bs->slot);
	if (bs->var)
	{
		/* 54000 for a key above the maximum, before anything is written */
		resetStringInfo(&bs->key);
		appendStringInfoSpaces(&bs->key, VARHDRSZ);
		(void) dmindex_form_key(index, values, isnull, tid, &bs->key);
		SET_VARSIZE(bs->key.data, bs->key.len);
		bs->slot->tts_values[0] = PointerGetDatum(bs->key.data);
		bs->slot->tts_values[1] = Int64GetDatum(FLIP(dmindex_tid_pack(tid)));
	}
	else
	{
		dm_entry	e = dmindex_make_entry(index, values[0], isnull[0], tid);

		bs->slot->tts_values[0] = Int64GetDatum(FLIP(e.key));
		bs->slot->tts_values[1] = Int64GetDatum(FLIP(e.tid));
	}
	bs->slot->tts_isnull[0] = bs->slot->tts_isnull[1] = false;
	ExecStoreVirtualTuple(bs->slot);
	tuplesort_puttupleslot(bs->sort, bs->slot);
	bs->indtuples++;
}

/* The sorted entries go to the bulk load (which copies VAR suffixes it keeps). */
typedef struct DmLoader
{
	Relation	index;
	dm_tree    *tree;
	dm_bulk    *bulk;
} DmLoader;

static void
loader_begin(DmLoader *ld, Relation index, dm_tree *tree, int fillfactor)
{
	int			rc;

	ld->index = index;
	ld->tree = tree;
	ld->bulk = NULL;
	if ((rc = dm_tree_bulk_begin(tree, fillfactor, &ld->bulk)) != DM_OK)
		dmindex_tree_error(index, tree, rc);
}

static void
loader_add(DmLoader *ld, const dm_entry *batch, int n)
{
	int			rc;

	if ((rc = dm_bulk_add(ld->bulk, batch, n)) != DM_OK)
	{
		dm_bulk_abort(ld->bulk);
		ld->bulk = NULL;
		dmindex_tree_error(ld->index, ld->tree, rc);
	}
}

static void
loader_finish(DmLoader *ld)
{
	int			rc = dm_bulk_finish(ld->bulk);

	ld->bulk = NULL;
	if (rc != DM_OK)
		dmindex_tree_error(ld->index, ld->tree, rc);
}

/* ambuild: a new remote tree for the index's new relfilenode, bulk-loaded from every heap tuple, and its metapage. */
IndexBuildResult *
dmbuild(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	DmBuildState bs;
	TupleDesc	tupdesc;
	AttrNumber	attnums[2] = {1, 2};
	Oid			sortops[2] = {Int8LessOperator, Int8LessOperator};
	Oid			collations[2] = {InvalidOid, InvalidOid};
	bool		nullsfirst[2] = {false, false};
	double		reltuples;
	dm_tree    *tree;
	DmLoader	ld;
	dm_entry   *batch;
	MemoryContext batchcxt;
	int			nbatch = 0;
	DmIndexOptions *opts = (DmIndexOptions *) index->rd_options;
	int64		loaded = 0;

	if (index->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("dmindex does not support temporary tables"),
				 errdetail("The index would live in memory shared by every session and server using the memory nodes."),
				 errhint("Use a btree index on temporary tables.")));
	/* entries reach the tree only at commit: other sessions could not see a conflict */
	if (indexInfo->ii_ExclusionOps != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("dmindex does not support exclusion constraints")));
	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	/* rebuilt in place (TRUNCATE in the creating transaction): entries for the old tree are moot */
	dmindex_pending_rebuilt(index);

	/* the key format (and, for VAR, every column's encoding) is settled before the tree exists */
	bs.var = dmindex_key_format(index) == DM_KEY_VAR;
	tree = dmindex_create_tree(index, MAIN_FORKNUM, true, NULL);

	tupdesc = CreateTemplateTupleDesc(2);
	/* VAR keys sort as bytea: memcmp, the shorter first on a tie, which is the entry order (§5.2) */
	TupleDescInitEntry(tupdesc, 1, "key", bs.var ? BYTEAOID : INT8OID, -1, 0);
	TupleDescInitEntry(tupdesc, 2, "tid", INT8OID, -1, 0);
	if (bs.var)
	{
		sortops[0] = ByteaLessOperator;
		initStringInfo(&bs.key);
	}
	bs.index = index;
	bs.indtuples = 0;
	bs.slot = MakeSingleTupleTableSlot(tupdesc, &TTSOpsVirtual);
	bs.out = MakeSingleTupleTableSlot(tupdesc, &TTSOpsMinimalTuple);
	bs.sort = tuplesort_begin_heap(tupdesc, 2, attnums, sortops, collations, nullsfirst,
								   maintenance_work_mem, NULL, TUPLESORT_NONE);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, DMINDEX_PHASE_SCAN);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &bs, NULL);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, DMINDEX_PHASE_SORT);
	tuplesort_performsort(bs.sort);

	{
		const int	params[] = {PROGRESS_CREATEIDX_SUBPHASE, PROGRESS_CREATEIDX_TUPLES_TOTAL,
		PROGRESS_CREATEIDX_TUPLES_DONE};
		const int64 values[] = {DMINDEX_PHASE_LOAD, (int64) bs.indtuples, 0};

		pgstat_progress_update_multi_param(3, params, values);
	}
	loader_begin(&ld, index, tree, opts ? opts->fillfactor : 90);
	batch = palloc(sizeof(dm_entry) * LOAD_BATCH);
	/* the suffixes of one batch's entries (the sort's tuples are gone at the next fetch; the loader copies what it keeps) */
	batchcxt = AllocSetContextCreate(CurrentMemoryContext, "dmindex build batch",
									 ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		bool		more = tuplesort_gettupleslot(bs.sort, true, false, bs.out, NULL);
		bool		isnull;

		if (more)
		{
			uint64		tid = UNFLIP(DatumGetInt64(slot_getattr(bs.out, 2, &isnull)));

			if (bs.var)
			{
				bytea	   *k = DatumGetByteaPP(slot_getattr(bs.out, 1, &isnull));

				batch[nbatch++] = dmindex_entry_copy(dm_entry_from_bytes(VARDATA_ANY(k),
																		 VARSIZE_ANY_EXHDR(k), tid),
													 batchcxt);
			}
			else
			{
				uint64		key = UNFLIP(DatumGetInt64(slot_getattr(bs.out, 1, &isnull)));

				/* whole entries: no suffix (palloc leaves the memory undefined) */
				batch[nbatch++] = dm_entry_make(key, tid);
			}
		}
		if (nbatch == LOAD_BATCH || (!more && nbatch > 0))
		{
			loader_add(&ld, batch, nbatch);
			MemoryContextReset(batchcxt);
			loaded += nbatch;
			nbatch = 0;
			pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, loaded);
			CHECK_FOR_INTERRUPTS();
		}
		if (!more)
			break;
	}
	loader_finish(&ld);

	/*
	 * The build left out rows dead to every snapshot the primary knows of
	 * (or, concurrently, rows its snapshot does not see): a standby
	 * snapshot older than that must not trust the new tree (dmstandby.c).
	 */
	dmindex_raise_removal_horizon(index, heap, tree,
								  indexInfo->ii_Concurrent && ActiveSnapshotSet() ?
								  GetActiveSnapshot()->xmin : InvalidTransactionId);
	dm_tree_close(tree);
	tuplesort_end(bs.sort);
	ExecDropSingleTupleTableSlot(bs.slot);
	ExecDropSingleTupleTableSlot(bs.out);
	MemoryContextDelete(batchcxt);
	pfree(batch);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = bs.indtuples;
	return result;
}

/* ambuildempty: an unlogged index's init fork: a metapage naming no tree (the first use after a crash builds one). */
void
dmbuildempty(Relation index)
{
	dmindex_create_tree(index, INIT_FORKNUM, true, NULL);
}

/* ambuildphasename: the name of a CREATE INDEX progress phase, NULL for an unknown one. */
char *
dmbuildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case DMINDEX_PHASE_SCAN:
			return "scanning table";
		case DMINDEX_PHASE_SORT:
			return "sorting entries";
		case DMINDEX_PHASE_LOAD:
			return "loading tree";
		default:
			return NULL;
	}
}
