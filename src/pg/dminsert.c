/*
 * dminsert.c — aminsert and the per-transaction insert buffer that enforces
 * the WAL-first rule of DESIGN.md §8.
 *
 * A remote entry must never outlive a heap tuple a crash could lose: the
 * memnodes do not crash with PostgreSQL, so an entry written before the heap
 * tuple's WAL is durable could, after a crash, point at a tuple that never
 * existed — and later at whatever reuses its tid.  So aminsert only buffers
 * the entry (in backend memory, per index).  At pre-commit, or when the
 * buffer grows past dmindex.insert_buffer, the backend flushes its WAL up to
 * its last record and only then writes the entries remotely, sorted and
 * batched per leaf.  A crash before that loses only entries of a
 * transaction that did not commit.
 *
 * The transaction's own scans must see its unflushed entries:
 * dmindex_pending_entries() gives them sorted, and dmscan.c merges them.
 * Entries made inside a subtransaction that rolls back are dropped; those of
 * a released savepoint pass to its parent.
 *
 * A buffer belongs to one remote tree of an index, not to its relfilenode:
 * TRUNCATE or REINDEX inside a savepoint builds a new tree, and rolling the
 * savepoint back brings the old tree back together with the entries the
 * transaction made for it before; ALTER INDEX ... SET TABLESPACE gives a new
 * relfilenode but keeps the tree.  At flush a buffer whose tree is no
 * longer the index's (a rewrite that stays) is dropped: the rebuild read
 * the heap, this transaction's rows included.
 *
 * INSERT ... ON CONFLICT calls aminsert before it knows whether the row
 * stays: a speculative insertion that loses its race is "super-deleted"
 * (xmin made invalid, dead to everyone at once), VACUUM may free its tid
 * while this transaction is still open, and another row may reuse it.  So
 * entries made while a statement with ON CONFLICT ran in this transaction
 * are checked against the heap before they reach a memnode or a scan: the
 * tuple at the tid must be this transaction's, not super-deleted, and its
 * index key (and partial-index predicate) must give this very entry.  One
 * whose speculative insertion is still undecided stays in the buffer.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/plannodes.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "dmam.h"

/* A buffer: one index's entries for one of its remote trees. */
typedef struct PendingKey
{
	Oid			indexoid;
	uint64		tree_id;
} PendingKey;

/* Per-entry information beside the entry: subtransaction level, flags. */
#define PEND_NEST_MASK	0x7FFFFFFF
#define PEND_SPECULATIVE 0x80000000 /* made while an ON CONFLICT statement ran */

typedef struct PendingIndex
{
	PendingKey	key;			/* hash key */
	dm_entry   *entries;
	uint32	   *info;			/* nest level | PEND_* flags, per entry */
	int			n;
	int			cap;
	int			nspec;			/* entries with PEND_SPECULATIVE */
	bool		sorted;
	bool		parked;			/* not the index's tree at the last early flush */
	MemoryContext sfxcxt;		/* VAR keys' suffixes of the entries (see keep_suffixes) */
} PendingIndex;

/* Which tree an index's current relfilenode has (saves a metapage read per row). */
typedef struct CurrentTree
{
	Oid			indexoid;		/* hash key */
	Oid			relfilenode;
	uint64		tree_id;
} CurrentTree;

int			dmindex_insert_buffer = 10000;

static HTAB *pending = NULL;	/* PendingIndex, in TopTransactionContext */
static HTAB *current_trees = NULL;	/* CurrentTree, in TopTransactionContext */
static int64 pending_total = 0;	/* entries of buffers not parked */
static bool callbacks_registered = false;
/* a statement with ON CONFLICT started in this transaction: flag new entries */
static bool xact_saw_on_conflict = false;

typedef struct PendingPair
{
	dm_entry	e;
	uint32		info;
} PendingPair;

static int
pair_cmp(const void *a, const void *b)
{
	return dm_entry_cmp(((const PendingPair *) a)->e, ((const PendingPair *) b)->e);
}

/* Sort one index's buffer and drop duplicates (their info goes with them). */
static void
sort_pending(PendingIndex *p)
{
	int			w = 0;
	PendingPair *tmp;

	if (p->sorted)
		return;
	tmp = palloc(sizeof(PendingPair) * Max(p->n, 1));
	for (int i = 0; i < p->n; i++)
	{
		tmp[i].e = p->entries[i];
		tmp[i].info = p->info[i];
	}
	qsort(tmp, p->n, sizeof(PendingPair), pair_cmp);
	p->nspec = 0;
	for (int i = 0; i < p->n; i++)
	{
		if (w > 0 && dm_entry_cmp(tmp[i].e, p->entries[w - 1]) == 0)
		{
			uint32		a = p->info[w - 1],
						b = tmp[i].info;

			/*
			 * Keep the outermost level: it survives the most rollbacks; and
			 * the heap check if either copy needs it (the copy that did not
			 * may belong to a level that rolls back).
			 */
			p->info[w - 1] = Min(a & PEND_NEST_MASK, b & PEND_NEST_MASK) |
				((a | b) & PEND_SPECULATIVE);
			if (!(a & PEND_SPECULATIVE) && (b & PEND_SPECULATIVE))
				p->nspec++;
			continue;
		}
		p->entries[w] = tmp[i].e;
		p->info[w] = tmp[i].info;
		if (tmp[i].info & PEND_SPECULATIVE)
			p->nspec++;
		w++;
	}
	pfree(tmp);
	if (!p->parked)
		pending_total -= p->n - w;
	p->n = w;
	p->sorted = true;
}

/* ---- entries of ON CONFLICT statements ------------------------------------------ */

typedef enum SpecFate
{
	SPEC_KEEP,					/* the tuple is ours and gives this entry */
	SPEC_DROP,					/* super-deleted, or the tid holds another row */
	SPEC_UNDECIDED				/* the speculative insertion is still running */
} SpecFate;

/* What a heap check needs, set up once per buffer. */
typedef struct SpecCheck
{
	Relation	heap;
	IndexInfo  *ii;
	EState	   *estate;
	ExprState  *predicate;
	TupleTableSlot *slot;
} SpecCheck;

static SpecFate
spec_fate(Relation index, SpecCheck *sc, dm_entry e)
{
	ItemPointerData tid;
	HeapTuple	tuple;
	bool		should_free;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	SpecFate	fate;

	dmindex_tid_unpack(e.tid & ~DM_TID_NULL, &tid);
	/* SnapshotAny: whatever tuple the line pointer holds now, if any */
	if (!table_tuple_fetch_row_version(sc->heap, &tid, SnapshotAny, sc->slot))
		return SPEC_DROP;
	tuple = ExecFetchSlotHeapTuple(sc->slot, false, &should_free);
	if (!TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetRawXmin(tuple->t_data)))
		fate = SPEC_DROP;		/* super-deleted (xmin invalid), or not our row */
	else if (HeapTupleHeaderIsSpeculative(tuple->t_data))
		fate = SPEC_UNDECIDED;
	else
	{
		ExprContext *econtext = GetPerTupleExprContext(sc->estate);

		econtext->ecxt_scantuple = sc->slot;
		if (sc->predicate && !ExecQual(sc->predicate, econtext))
			fate = SPEC_DROP;
		else
		{
			/* the datums and the entry are freed with the tuple's memory, below */
			MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);

			FormIndexDatum(sc->ii, sc->slot, sc->estate, values, isnull);
			fate = dm_entry_cmp(dmindex_form_entry(index, values, isnull, &tid,
												   econtext->ecxt_per_tuple_memory), e) == 0
				? SPEC_KEEP : SPEC_DROP;
			MemoryContextSwitchTo(old);
		}
		ResetExprContext(econtext);
	}
	if (should_free)
		heap_freetuple(tuple);
	ExecClearTuple(sc->slot);
	return fate;
}

/*
 * Check the buffer's ON CONFLICT entries against the heap: drop those whose
 * row is gone or another; keep those still undecided unless decided_only
 * (at commit nothing is running any more: a tuple still marked speculative
 * then becomes visible like any other, so it is kept).  Returns how many
 * undecided entries remain flagged.
 */
static int
resolve_speculative(Relation index, PendingIndex *p, bool at_commit)
{
	SpecCheck	sc;
	int			w = 0;
	int			undecided = 0;
	bool		pushed = false;

	if (p->nspec == 0)
		return 0;
	/* index expressions may run queries: at commit no snapshot is active */
	if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		pushed = true;
	}
	sc.heap = table_open(index->rd_index->indrelid, NoLock);
	sc.ii = BuildIndexInfo(index);
	sc.estate = CreateExecutorState();
	sc.predicate = sc.ii->ii_Predicate ? ExecPrepareQual(sc.ii->ii_Predicate, sc.estate) : NULL;
	sc.slot = table_slot_create(sc.heap, NULL);
	for (int i = 0; i < p->n; i++)
	{
		if (p->info[i] & PEND_SPECULATIVE)
		{
			SpecFate	fate = spec_fate(index, &sc, p->entries[i]);

			if (fate == SPEC_DROP)
				continue;
			if (fate == SPEC_KEEP || at_commit)
				p->info[i] &= ~PEND_SPECULATIVE;
			else
				undecided++;
		}
		p->entries[w] = p->entries[i];
		p->info[w] = p->info[i];
		w++;
	}
	ExecDropSingleTupleTableSlot(sc.slot);
	FreeExecutorState(sc.estate);
	table_close(sc.heap, NoLock);
	if (pushed)
		PopActiveSnapshot();
	if (!p->parked)
		pending_total -= p->n - w;
	p->n = w;
	p->nspec = undecided;
	return undecided;
}

/* ---- flushing ------------------------------------------------------------------------ */

/* Move the entries that may go out now to the front; returns how many. */
static int
partition_ready(PendingIndex *p)
{
	int			ready = 0;
	PendingPair *held;
	int			nheld = 0;

	if (p->nspec == 0)
		return p->n;
	held = palloc(sizeof(PendingPair) * p->nspec);
	for (int i = 0; i < p->n; i++)
	{
		if (p->info[i] & PEND_SPECULATIVE)
		{
			held[nheld].e = p->entries[i];
			held[nheld++].info = p->info[i];
			continue;
		}
		p->entries[ready] = p->entries[i];
		p->info[ready++] = p->info[i];
	}
	for (int i = 0; i < nheld; i++)
	{
		p->entries[ready + i] = held[i].e;
		p->info[ready + i] = held[i].info;
	}
	pfree(held);
	return ready;
}

/*
 * A buffer whose tree is not its index's now (the index was dropped or
 * rewritten later in this transaction).  At commit that is final: the
 * entries are moot (the rebuild read the heap, our rows included).  Before
 * commit a savepoint rollback may still bring the tree back, so the entries
 * are kept aside ("parked": they no longer count towards an early flush).
 */
static void
set_aside(PendingIndex *p, bool at_commit)
{
	if (at_commit)
	{
		if (!p->parked)
			pending_total -= p->n;
		p->n = 0;
		p->nspec = 0;
	}
	else if (!p->parked)
	{
		pending_total -= p->n;
		p->parked = true;
	}
}

/*
 * Free the suffixes of entries that left the buffer (written, dropped as
 * speculative, rolled back, set aside): an empty buffer's memory is reset;
 * otherwise the few entries left (undecided ON CONFLICT entries) get their
 * suffixes copied into a fresh context and the old one goes.  Without this
 * a long transaction kept every suffix it ever buffered: with the buffer
 * flushed early every dmindex.insert_buffer entries, the memory stays
 * bounded by what one buffer holds.
 */
static void
keep_suffixes(PendingIndex *p)
{
	MemoryContext fresh;

	if (p->n == 0)
	{
		MemoryContextReset(p->sfxcxt);
		return;
	}
	fresh = AllocSetContextCreate(TopTransactionContext, "dmindex pending suffixes",
								  ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < p->n; i++)
		p->entries[i] = dmindex_entry_copy(p->entries[i], fresh);
	MemoryContextDelete(p->sfxcxt);
	p->sfxcxt = fresh;
}

/* Write one buffer's entries remotely (WAL already flushed). */
static void
flush_index(PendingIndex *p, bool at_commit)
{
	Relation	index;
	DmMetaPageData meta;
	int			ready;
	int			n_before;

	if (p->n == 0)
		return;
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(p->key.indexoid)))
	{
		set_aside(p, at_commit);	/* dropped later in this transaction */
		return;
	}
	index = index_open(p->key.indexoid, NoLock);
	dmindex_read_meta(index, &meta);
	if (meta.tree_id != p->key.tree_id)
	{
		index_close(index, NoLock);
		set_aside(p, at_commit);	/* rewritten (TRUNCATE, REINDEX) */
		return;
	}
	if (p->parked)
	{
		/* its tree is back (a savepoint rollback) */
		p->parked = false;
		pending_total += p->n;
	}
	n_before = p->n;
	sort_pending(p);
	resolve_speculative(index, p, at_commit);
	/* undecided ON CONFLICT entries wait; the rest keep their order */
	ready = partition_ready(p);
	if (ready > 0)
	{
		dm_tree    *tree = dmindex_open_tree(index);
		int			rc;

		/* the synchronous standbys have the heap WAL first (dmfailover.c) */
		dmindex_before_remote_write(index, tree, XactLastRecEnd);

		dmindex_wal_before_write();
		/* offloaded where dmindex.offload says so (dm_offload_sorted) */
		rc = dm_tree_insert_sorted(tree, p->entries, ready, NULL);
		/* before the commit record, also after a failure (nodes may have been written) */
		dmindex_wal_log_written(index, tree);
		dmindex_offload_publish(tree);
		if (rc != DM_OK)
			dmindex_tree_error(index, tree, rc);
		memmove(p->entries, p->entries + ready, sizeof(dm_entry) * (p->n - ready));
		memmove(p->info, p->info + ready, sizeof(uint32) * (p->n - ready));
		pending_total -= ready;
		p->n -= ready;
	}
	if (p->n < n_before)
		keep_suffixes(p);
	index_close(index, NoLock);
}

static void
flush_all(bool at_commit)
{
	HASH_SEQ_STATUS st;
	PendingIndex *p;

	if (pending == NULL || pending_total == 0)
		return;
	/* WAL first: every heap tuple these entries point to must be durable */
	if (XactLastRecEnd != InvalidXLogRecPtr)
		XLogFlush(XactLastRecEnd);
	hash_seq_init(&st, pending);
	while ((p = hash_seq_search(&st)) != NULL)
		flush_index(p, at_commit);
}

void
dmindex_flush_pending(void)
{
	flush_all(false);
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			/* may raise an error: the transaction then aborts, as it must */
			flush_all(true);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* the memory goes with TopTransactionContext; no remote work here */
			pending = NULL;
			current_trees = NULL;
			pending_total = 0;
			xact_saw_on_conflict = false;
			break;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	HASH_SEQ_STATUS st;
	PendingIndex *p;
	uint32		level = (uint32) GetCurrentTransactionNestLevel();

	if (pending == NULL || (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB))
		return;
	/*
	 * A rollback may bring back an older relfilenode (and tree): look again,
	 * and let parked buffers count again (the next early flush parks those
	 * whose tree is still not back).
	 */
	if (event == SUBXACT_EVENT_ABORT_SUB && current_trees != NULL)
	{
		HASH_SEQ_STATUS cst;
		CurrentTree *ct;

		hash_seq_init(&cst, current_trees);
		while ((ct = hash_seq_search(&cst)) != NULL)
			(void) hash_search(current_trees, &ct->indexoid, HASH_REMOVE, NULL);
	}
	hash_seq_init(&st, pending);
	while ((p = hash_seq_search(&st)) != NULL)
	{
		int			w = 0;

		for (int i = 0; i < p->n; i++)
		{
			uint32		info = p->info[i];

			if ((info & PEND_NEST_MASK) >= level)
			{
				if (event == SUBXACT_EVENT_ABORT_SUB)
				{
					if (info & PEND_SPECULATIVE)
						p->nspec--;
					continue;	/* rolled back */
				}
				info = (info & ~PEND_NEST_MASK) | (level - 1);	/* released: now the parent's */
			}
			p->entries[w] = p->entries[i];
			p->info[w] = info;
			w++;
		}
		if (p->parked)
		{
			if (event == SUBXACT_EVENT_ABORT_SUB)
			{
				p->parked = false;
				pending_total += w;
			}
		}
		else
			pending_total -= p->n - w;
		p->n = w;
	}
}

static void
register_callbacks(void)
{
	if (!callbacks_registered)
	{
		RegisterXactCallback(xact_callback, NULL);
		RegisterSubXactCallback(subxact_callback, NULL);
		callbacks_registered = true;
	}
}

/* The id of the tree the index's current storage names (a metapage read when it changed). */
static uint64
current_tree_id(Relation index, dm_tree *tree)
{
	CurrentTree *ct;
	bool		found;

	if (current_trees == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(CurrentTree);
		ctl.hcxt = TopTransactionContext;
		current_trees = hash_create("dmindex current trees", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	ct = hash_search(current_trees, &RelationGetRelid(index), HASH_ENTER, &found);
	if (!found || ct->relfilenode != index->rd_node.relNode)
	{
		ct->relfilenode = index->rd_node.relNode;
		ct->tree_id = dm_tree_id(tree ? tree : dmindex_open_tree(index));
	}
	return ct->tree_id;
}

/*
 * The buffer of the index's current tree; NULL if it has none and !create.
 * tree may be given if the caller has the index's open tree at hand.
 */
static PendingIndex *
pending_for(Relation index, dm_tree *tree, bool create)
{
	PendingIndex *p;
	PendingKey	key;
	bool		found;

	register_callbacks();
	if (pending == NULL)
	{
		HASHCTL		ctl;

		if (!create)
			return NULL;
		ctl.keysize = sizeof(PendingKey);
		ctl.entrysize = sizeof(PendingIndex);
		ctl.hcxt = TopTransactionContext;
		pending = hash_create("dmindex pending inserts", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	memset(&key, 0, sizeof(key));
	key.indexoid = RelationGetRelid(index);
	key.tree_id = current_tree_id(index, tree);
	p = hash_search(pending, &key, create ? HASH_ENTER : HASH_FIND, &found);
	if (p && !found)
	{
		p->n = 0;
		p->cap = 64;
		p->nspec = 0;
		p->entries = MemoryContextAlloc(TopTransactionContext, sizeof(dm_entry) * p->cap);
		p->info = MemoryContextAlloc(TopTransactionContext, sizeof(uint32) * p->cap);
		p->sorted = true;
		p->parked = false;
		p->sfxcxt = AllocSetContextCreate(TopTransactionContext, "dmindex pending suffixes",
										  ALLOCSET_DEFAULT_SIZES);
	}
	if (p && p->parked)
	{
		/* the index's current tree again */
		p->parked = false;
		pending_total += p->n;
	}
	return p;
}

bool
dminsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		 Relation heapRel, IndexUniqueCheck checkUnique,
		 bool indexUnchanged, struct IndexInfo *indexInfo)
{
	PendingIndex *p = pending_for(index, NULL, true);
	uint32		info = (uint32) GetCurrentTransactionNestLevel();

	if (p->n == p->cap)
	{
		p->cap *= 2;
		p->entries = repalloc_huge(p->entries, sizeof(dm_entry) * p->cap);
		p->info = repalloc_huge(p->info, sizeof(uint32) * p->cap);
	}
	/* a VAR key's suffix lives as long as its entry in the buffer (keep_suffixes) */
	p->entries[p->n] = dmindex_form_entry(index, values, isnull, ht_ctid, p->sfxcxt);
	if (xact_saw_on_conflict)
	{
		info |= PEND_SPECULATIVE;
		p->nspec++;
	}
	p->info[p->n] = info;
	if (p->n > 0 && dm_entry_cmp(p->entries[p->n - 1], p->entries[p->n]) >= 0)
		p->sorted = false;
	p->n++;
	pending_total++;

	/* a large buffer goes out early: its heap tuples' WAL is flushed first */
	if (pending_total >= dmindex_insert_buffer)
		dmindex_flush_pending();
	return false;
}

void
dmindex_pending_rebuilt(Relation index)
{
	/* same relfilenode, new tree: the entries made for the old one are dropped at flush */
	if (current_trees != NULL)
		(void) hash_search(current_trees, &RelationGetRelid(index), HASH_REMOVE, NULL);
}

/* Whether a plan (or one of its subplans, e.g. a CTE) is an INSERT ... ON CONFLICT. */
static bool
plan_has_on_conflict(PlannedStmt *stmt)
{
	ListCell   *lc;

	if (stmt->commandType == CMD_UTILITY)
		return false;
	if (stmt->planTree && IsA(stmt->planTree, ModifyTable) &&
		((ModifyTable *) stmt->planTree)->onConflictAction != ONCONFLICT_NONE)
		return true;
	foreach(lc, stmt->subplans)
	{
		Plan	   *sub = lfirst(lc);

		if (sub && IsA(sub, ModifyTable) && ((ModifyTable *) sub)->onConflictAction != ONCONFLICT_NONE)
			return true;
	}
	return false;
}

/*
 * Parallel workers scan the index too, but cannot see this backend's
 * buffer: write it out (WAL first, as always) before a parallel plan runs.
 * Statements with ON CONFLICT make the transaction's later entries subject
 * to the heap check (see the top of this file), which is done as soon as a
 * statement ends — then every speculative insertion it made is decided, and
 * the index expressions run in the statement's context rather than at
 * commit.
 */
static ExecutorStart_hook_type prev_executor_start = NULL;
static ExecutorEnd_hook_type prev_executor_end = NULL;

static void
resolve_all(void)
{
	HASH_SEQ_STATUS st;
	PendingIndex *p;

	hash_seq_init(&st, pending);
	while ((p = hash_seq_search(&st)) != NULL)
	{
		Relation	index;
		DmMetaPageData meta;

		if (p->nspec == 0 || p->parked ||
			!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(p->key.indexoid)))
			continue;
		index = index_open(p->key.indexoid, NoLock);
		dmindex_read_meta(index, &meta);
		if (meta.tree_id == p->key.tree_id)
			resolve_speculative(index, p, false);
		index_close(index, NoLock);
	}
}

static void
dm_executor_end(QueryDesc *queryDesc)
{
	static bool resolving = false;

	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	/* index expressions that run queries end statements of their own: no recursion */
	if (xact_saw_on_conflict && pending != NULL && IsTransactionState() && !resolving)
	{
		resolving = true;
		PG_TRY();
		{
			resolve_all();
		}
		PG_FINALLY();
		{
			resolving = false;
		}
		PG_END_TRY();
	}
}

static void
dm_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (queryDesc->plannedstmt->parallelModeNeeded && !IsParallelWorker())
		dmindex_flush_pending();
	if (!xact_saw_on_conflict && !(eflags & EXEC_FLAG_EXPLAIN_ONLY) &&
		plan_has_on_conflict(queryDesc->plannedstmt))
	{
		register_callbacks();	/* it is reset at the end of the transaction */
		xact_saw_on_conflict = true;
	}
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

void
dmindex_insert_init(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = dm_executor_start;
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = dm_executor_end;
}

const dm_entry *
dmindex_pending_entries(Relation index, dm_tree *tree, int *n)
{
	PendingIndex *p = pending_for(index, tree, false);

	if (p == NULL || p->n == 0)
	{
		*n = 0;
		return NULL;
	}
	sort_pending(p);
	/* an entry whose row lost its ON CONFLICT race must not be seen either */
	resolve_speculative(index, p, false);
	*n = p->n;
	return p->entries;
}
