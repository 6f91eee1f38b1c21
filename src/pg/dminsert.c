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
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "dmam.h"

typedef struct PendingIndex
{
	Oid			indexoid;		/* hash key */
	Oid			relfilenode;	/* entries are for this storage only */
	dm_entry   *entries;
	int		   *nest;			/* subtransaction nest level of each entry */
	int			n;
	int			cap;
	bool		sorted;
	bool		owns_all;		/* this server owns every key: no per-row check */
} PendingIndex;

int			dmindex_insert_buffer = 10000;

static HTAB *pending = NULL;	/* in TopTransactionContext */
static int64 pending_total = 0;
static bool callbacks_registered = false;

static int
entry_cmp(const void *a, const void *b)
{
	return dm_entry_cmp(*(const dm_entry *) a, *(const dm_entry *) b);
}

/* Sort one index's buffer and drop duplicates (nest levels go with them). */
static void
sort_pending(PendingIndex *p)
{
	int			w = 0;

	if (p->sorted)
		return;
	/* sort (entry, nest) pairs together: use an index permutation */
	{
		typedef struct
		{
			dm_entry	e;
			int			nest;
		}			pair;
		pair	   *tmp = palloc(sizeof(pair) * Max(p->n, 1));

		for (int i = 0; i < p->n; i++)
		{
			tmp[i].e = p->entries[i];
			tmp[i].nest = p->nest[i];
		}
		qsort(tmp, p->n, sizeof(pair), entry_cmp);
		for (int i = 0; i < p->n; i++)
		{
			if (w > 0 && dm_entry_cmp(tmp[i].e, p->entries[w - 1]) == 0)
			{
				/* keep the outermost level: it survives the most rollbacks */
				p->nest[w - 1] = Min(p->nest[w - 1], tmp[i].nest);
				continue;
			}
			p->entries[w] = tmp[i].e;
			p->nest[w] = tmp[i].nest;
			w++;
		}
		pfree(tmp);
	}
	pending_total -= p->n - w;
	p->n = w;
	p->sorted = true;
}

/* Write one index's buffered entries remotely (WAL already flushed). */
static void
flush_index(PendingIndex *p)
{
	Relation	index;
	dm_tree    *tree;
	int			rc;

	if (p->n == 0)
		return;
	/* dropped, or rewritten (TRUNCATE, REINDEX) later in this transaction: nothing to do */
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(p->indexoid)))
		return;
	index = index_open(p->indexoid, NoLock);
	if (index->rd_node.relNode == p->relfilenode)
	{
		sort_pending(p);
		tree = dmindex_open_tree(index);
		rc = dm_tree_insert_sorted(tree, p->entries, p->n, NULL);
		if (rc != DM_OK)
			dmindex_tree_error(index, tree, rc);
	}
	index_close(index, NoLock);
	pending_total -= p->n;
	p->n = 0;
}

void
dmindex_flush_pending(void)
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
		flush_index(p);
	pending_total = 0;
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
			dmindex_flush_pending();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* the memory goes with TopTransactionContext; no remote work here */
			pending = NULL;
			pending_total = 0;
			break;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	HASH_SEQ_STATUS st;
	PendingIndex *p;
	int			level = GetCurrentTransactionNestLevel();

	if (pending == NULL || (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB))
		return;
	hash_seq_init(&st, pending);
	while ((p = hash_seq_search(&st)) != NULL)
	{
		int			w = 0;

		for (int i = 0; i < p->n; i++)
		{
			if (p->nest[i] >= level)
			{
				if (event == SUBXACT_EVENT_ABORT_SUB)
					continue;	/* rolled back */
				p->nest[i] = level - 1; /* released: now the parent's */
			}
			p->entries[w] = p->entries[i];
			p->nest[w] = p->nest[i];
			w++;
		}
		pending_total -= p->n - w;
		p->n = w;
	}
}

static PendingIndex *
pending_for(Relation index, bool create)
{
	PendingIndex *p;
	bool		found;

	if (!callbacks_registered)
	{
		RegisterXactCallback(xact_callback, NULL);
		RegisterSubXactCallback(subxact_callback, NULL);
		callbacks_registered = true;
	}
	if (pending == NULL)
	{
		HASHCTL		ctl;

		if (!create)
			return NULL;
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(PendingIndex);
		ctl.hcxt = TopTransactionContext;
		pending = hash_create("dmindex pending inserts", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	p = hash_search(pending, &RelationGetRelid(index), create ? HASH_ENTER : HASH_FIND, &found);
	if (p && !found)
	{
		p->relfilenode = index->rd_node.relNode;
		p->n = 0;
		p->cap = 64;
		p->entries = MemoryContextAlloc(TopTransactionContext, sizeof(dm_entry) * p->cap);
		p->nest = MemoryContextAlloc(TopTransactionContext, sizeof(int) * p->cap);
		p->sorted = true;
		/* the partition map is read when the tree handle is opened (may raise an error) */
		p->owns_all = false;
		p->owns_all = dm_tree_owns_all(dmindex_open_tree(index));
	}
	if (p && p->relfilenode != index->rd_node.relNode)
	{
		/* the index was rewritten in this transaction: old entries are moot */
		pending_total -= p->n;
		p->n = 0;
		p->relfilenode = index->rd_node.relNode;
		p->owns_all = false;	/* a new tree: check every row */
	}
	return p;
}

bool
dminsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		 Relation heapRel, IndexUniqueCheck checkUnique,
		 bool indexUnchanged, struct IndexInfo *indexInfo)
{
	PendingIndex *p = pending_for(index, true);

	if (p->n == p->cap)
	{
		p->cap *= 2;
		p->entries = repalloc_huge(p->entries, sizeof(dm_entry) * p->cap);
		p->nest = repalloc_huge(p->nest, sizeof(int) * p->cap);
	}
	p->entries[p->n] = dmindex_make_entry(index, values[0], isnull[0], ht_ctid);
	/* a key another instance owns fails now, not at commit */
	if (!p->owns_all && !dm_tree_owns_key(dmindex_open_tree(index), p->entries[p->n].key))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot write a key of index \"%s\" that this server does not own",
						RelationGetRelationName(index)),
				 errdetail("This server is instance %d of the index's partition map.", dmindex_instance_id),
				 errhint("Write it through the server whose \"dmindex.instance_id\" owns its range; dmindex_partitions() shows the ranges.")));
	p->nest[p->n] = GetCurrentTransactionNestLevel();
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
dmindex_forget_pending(Relation index)
{
	PendingIndex *p = pending_for(index, false);

	if (p)
	{
		pending_total -= p->n;
		p->n = 0;
	}
}

/*
 * Parallel workers scan the index too, but cannot see this backend's
 * buffer: write it out (WAL first, as always) before a parallel plan runs.
 */
static ExecutorStart_hook_type prev_executor_start = NULL;

static void
dm_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (queryDesc->plannedstmt->parallelModeNeeded && !IsParallelWorker())
		dmindex_flush_pending();
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
}

const dm_entry *
dmindex_pending_entries(Relation index, int *n)
{
	PendingIndex *p = pending_for(index, false);

	if (p == NULL || p->n == 0)
	{
		*n = 0;
		return NULL;
	}
	sort_pending(p);
	*n = p->n;
	return p->entries;
}
