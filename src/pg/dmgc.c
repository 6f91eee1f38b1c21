/*
 * dmgc.c — no remote tree may outlive its index.
 *
 * Eagerly: the object-access hook notes every dmindex index dropped (also
 * by DROP TABLE / SCHEMA ... CASCADE) and every database dropped; the trees
 * are freed after the transaction commits.  A transaction that is prepared
 * (PREPARE TRANSACTION) hands its frees to the collector instead.  A tree created by a transaction
 * that aborts (a failed or rolled-back CREATE INDEX, REINDEX, TRUNCATE) is
 * freed after the abort.  These frees run in commit/abort callbacks, so
 * they never raise an error: whatever fails there is left to the collector.
 *
 * The collector (the background worker of dmgcworker.c, and dmindex_gc())
 * lists the trees of this
 * cluster on every memnode and frees those of this database whose
 * relfilenode no dmindex index has, unless the transaction that created
 * the tree is still running (an index being built is not yet visible in
 * pg_class to anyone else).  The order matters: in-progress transactions are
 * checked first and pg_class is read afterwards with a fresh snapshot, so a
 * builder that commits in between is seen in pg_class.  With
 * all_databases, trees of databases that no longer exist go too.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "dmam.h"

typedef struct GcTree
{
	DmMetaPageData meta;
	int			nest;			/* subtransaction level that noted it */
} GcTree;

static List *created_trees = NIL;	/* free if the transaction aborts */
static List *dropped_trees = NIL;	/* free once it commits */
static List *dropped_dbs = NIL;		/* database OIDs: free their trees at commit */
static object_access_hook_type prev_object_access_hook = NULL;
static bool callbacks_registered = false;

/* Free one tree; errors only reported by status, never raised. */
static int
free_tree_quietly(dm_client *client, const dm_tree_name *name, uint16 home)
{
	dm_tree    *t;
	int			rc = dm_tree_open_existing(client, home, name, &t);

	if (rc == DM_OK)
	{
		/* a tree another server took over after a failover is not ours to free */
		if (!dmindex_writer_may_free(t))
		{
			dm_tree_close(t);
			return DM_ERR_FENCED;
		}
		/* attached to the node cache, destroying also frees the tree's frames now */
		(void) dm_tree_use_cache(t, dmindex_node_cache, (uint32) dmindex_instance_id);
		rc = dm_tree_destroy(t);
		if (rc != DM_OK)
			dm_tree_close(t);
	}
	return rc;
}

/* Connect quietly to every configured memnode (callbacks: no errors). */
static dm_client *
client_quietly(void)
{
	dm_client  *client = dmindex_get_client();

	for (int i = 0; i < dmindex_memnode_list->count; i++)
	{
		uint16		id;

		(void) dmindex_connect(client, dmindex_memnode_list->addresses[i], false, &id);
	}
	return client;
}

/* All trees of sysid (and dboid unless 0) on memnode id, appended to *out. */
static int
list_trees(dm_client *client, uint16 id, Oid dboid, dm_tree_info **out, int *n, int *cap)
{
	dm_rpc_list_req req;
	uint32		next = 0;
	dm_tree_info page[DM_LIST_MAX];

	memset(&req, 0, sizeof(req));
	req.kind = DM_TREE_PG;
	req.sysid = GetSystemIdentifier();
	req.dboid = dboid;
	req.max = DM_LIST_MAX;
	for (;;)
	{
		uint32		count;
		int			rc;

		req.start_slot = next;
		rc = dm_tree_list(client, id, &req, page, &count, &next);
		if (rc != DM_OK)
			return rc;
		for (uint32 i = 0; i < count; i++)
		{
			if (*n == *cap)
			{
				*cap = *cap ? *cap * 2 : 64;
				*out = *out ? repalloc(*out, sizeof(dm_tree_info) * *cap) : palloc(sizeof(dm_tree_info) * *cap);
			}
			(*out)[(*n)++] = page[i];
		}
		if (count == 0 || next == 0 || count < req.max)
			break;
	}
	return DM_OK;
}

/* Free every tree of database dboid on every connected memnode; how many went. */
static int64
free_database_trees(dm_client *client, Oid dboid)
{
	int64		freed = 0;

	for (int i = 0; i < dm_client_nnodes(client); i++)
	{
		dm_node_info ni;
		dm_tree_info *trees = NULL;
		int			n = 0, cap = 0;

		if (dm_client_node_info(client, i, &ni) != DM_OK || ni.status != DM_OK)
			continue;
		if (list_trees(client, ni.node_id, dboid, &trees, &n, &cap) != DM_OK)
			continue;
		for (int k = 0; k < n; k++)
			if (free_tree_quietly(client, &trees[k].name, ni.node_id) == DM_OK)
				freed++;
		if (trees)
			pfree(trees);
	}
	return freed;
}

static void
free_dropped_databases(dm_client *client)
{
	ListCell   *lc;

	foreach(lc, dropped_dbs)
		(void) free_database_trees(client, lfirst_oid(lc));
}

/* The databases that have trees of this cluster on a reachable memnode (palloc'd). */
Oid *
dmindex_gc_tree_databases(int *ndb)
{
	dm_client  *client = client_quietly();
	Oid		   *dbs = NULL;
	int			cap = 0;

	*ndb = 0;
	for (int i = 0; i < dm_client_nnodes(client); i++)
	{
		dm_node_info ni;
		dm_tree_info *trees = NULL;
		int			n = 0, tcap = 0;

		if (dm_client_node_info(client, i, &ni) != DM_OK || ni.status != DM_OK)
			continue;
		if (list_trees(client, ni.node_id, InvalidOid, &trees, &n, &tcap) != DM_OK)
			continue;
		for (int k = 0; k < n; k++)
		{
			Oid			db = trees[k].name.dboid;
			bool		seen = false;

			for (int j = 0; j < *ndb && !seen; j++)
				seen = dbs[j] == db;
			if (seen)
				continue;
			if (*ndb == cap)
			{
				cap = cap ? cap * 2 : 16;
				dbs = dbs ? repalloc(dbs, sizeof(Oid) * cap) : palloc(sizeof(Oid) * cap);
			}
			dbs[(*ndb)++] = db;
		}
		if (trees)
			pfree(trees);
	}
	return dbs;
}

int64
dmindex_gc_free_database(Oid dboid)
{
	return free_database_trees(client_quietly(), dboid);
}

static void
gc_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;
	dm_client  *client;

	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (dropped_trees != NIL || dropped_dbs != NIL)
			{
				client = client_quietly();
				foreach(lc, dropped_trees)
				{
					GcTree	   *g = lfirst(lc);

					(void) free_tree_quietly(client, &g->meta.tree, g->meta.home);
				}
				free_dropped_databases(client);
			}
			break;
		case XACT_EVENT_PREPARE:

			/*
			 * The outcome is decided later, perhaps in another session or
			 * after a restart: free nothing now.  Whatever the outcome leaves
			 * without an index (trees dropped by COMMIT PREPARED, created by
			 * a transaction that ROLLBACK PREPARED ends) is garbage the
			 * collector frees; until then pg_class and the prepared
			 * transaction's xid keep both kinds alive.
			 */
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (created_trees != NIL)
			{
				client = client_quietly();
				foreach(lc, created_trees)
				{
					GcTree	   *g = lfirst(lc);

					(void) free_tree_quietly(client, &g->meta.tree, g->meta.home);
				}
			}
			break;
		default:
			return;
	}
	list_free_deep(created_trees);
	list_free_deep(dropped_trees);
	list_free(dropped_dbs);
	created_trees = dropped_trees = dropped_dbs = NIL;
}

static List *
forget_level(List *l, int level, bool to_parent)
{
	ListCell   *lc;

	foreach(lc, l)
	{
		GcTree	   *g = lfirst(lc);

		if (g->nest >= level)
		{
			if (to_parent)
				g->nest = level - 1;
			else
			{
				l = foreach_delete_current(l, lc);
				pfree(g);
			}
		}
	}
	return l;
}

static void
gc_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	if (event == SUBXACT_EVENT_ABORT_SUB)
		/* a drop rolled back keeps its tree; a creation rolled back is left to the collector */
		dropped_trees = forget_level(dropped_trees, level, false);
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		dropped_trees = forget_level(dropped_trees, level, true);
		created_trees = forget_level(created_trees, level, true);
	}
}

static void
register_callbacks(void)
{
	if (!callbacks_registered)
	{
		RegisterXactCallback(gc_xact_callback, NULL);
		RegisterSubXactCallback(gc_subxact_callback, NULL);
		callbacks_registered = true;
	}
}

static void
note(List **list, const DmMetaPageData *meta)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	GcTree	   *g = palloc(sizeof(GcTree));

	g->meta = *meta;
	g->nest = GetCurrentTransactionNestLevel();
	*list = lappend(*list, g);
	MemoryContextSwitchTo(old);
	register_callbacks();
}

void
dmindex_gc_note_created(const DmMetaPageData *meta)
{
	note(&created_trees, meta);
}

/* A dmindex index is being dropped: remember its tree for after commit. */
static void
note_index_drop(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class cls;
	Oid			amoid = get_index_am_oid("dmindex", true);
	Relation	index;

	if (!HeapTupleIsValid(tup))
		return;
	cls = (Form_pg_class) GETSTRUCT(tup);
	if (cls->relkind != RELKIND_INDEX || !OidIsValid(amoid) || cls->relam != amoid)
	{
		ReleaseSysCache(tup);
		return;
	}
	ReleaseSysCache(tup);
	index = index_open(relid, NoLock);

	/*
	 * A damaged or never-built index must still be droppable: no errors.
	 * Only a tree this index owns: a copy made by CREATE DATABASE names the
	 * template's tree, which must survive the copy's drop.
	 */
	{
		DmMetaPageData meta;

		if (dmindex_try_read_meta(index, &meta) && !(meta.flags & DMINDEX_META_UNLOGGED_INIT) &&
			meta.tree.sysid == GetSystemIdentifier() && meta.tree.dboid == MyDatabaseId &&
			meta.tree.relfilenode == index->rd_node.relNode)
			note(&dropped_trees, &meta);
	}
	index_close(index, NoLock);
}

static void
gc_object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP)
		return;
	if (classId == RelationRelationId && subId == 0)
		note_index_drop(objectId);
	else if (classId == DatabaseRelationId)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		dropped_dbs = lappend_oid(dropped_dbs, objectId);
		MemoryContextSwitchTo(old);
		register_callbacks();
	}
}

void
dmindex_gc_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = gc_object_access;
}

static int
oid_cmp(const void *a, const void *b)
{
	Oid			x = *(const Oid *) a, y = *(const Oid *) b;

	return x < y ? -1 : x > y;
}

/* Append o to a growing array. */
static void
add_oid(Oid **out, int *n, int *cap, Oid o)
{
	if (*n == *cap)
	{
		*cap *= 2;
		*out = repalloc(*out, sizeof(Oid) * *cap);
	}
	(*out)[(*n)++] = o;
}

/*
 * relfilenodes of every dmindex index in this database, sorted (fresh
 * snapshot), and the relfilenodes their trees were named after.  An index
 * whose lock is not free at once (DDL running on it, perhaps in a prepared
 * transaction that holds it for days) makes this return NULL without
 * waiting: the caller then collects nothing this time.
 */
static Oid *
live_relfilenodes(int *n)
{
	Oid			amoid = get_index_am_oid("dmindex", true);
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	int			cap = 64;
	Oid		   *out = palloc(sizeof(Oid) * cap);
	bool		busy = false;

	*n = 0;
	if (!OidIsValid(amoid))
		return out;				/* no access method: no dmindex index either */
	InvalidateCatalogSnapshot();
	rel = table_open(RelationRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (!busy && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_class cls = (Form_pg_class) GETSTRUCT(tup);
		Relation	index;
		DmMetaPageData meta;

		if (cls->relkind != RELKIND_INDEX || cls->relam != amoid)
			continue;
		add_oid(&out, n, &cap, cls->relfilenode);

		/*
		 * ALTER INDEX ... SET TABLESPACE copies the metapage to a new
		 * relfilenode: the tree keeps the name it was built with.  An index
		 * dropped meanwhile needs nothing: its tree is garbage.
		 */
		if (!ConditionalLockRelationOid(cls->oid, AccessShareLock))
		{
			ereport(NOTICE,
					(errmsg("not collecting remote trees of database \"%s\" now: index \"%s\" is locked",
							get_database_name(MyDatabaseId), NameStr(cls->relname)),
					 errdetail("A transaction is changing the index (DDL, or a prepared transaction)."),
					 errhint("Try again when it has ended.")));
			busy = true;
			break;
		}
		index = try_relation_open(cls->oid, NoLock);
		if (index == NULL)
		{
			UnlockRelationOid(cls->oid, AccessShareLock);
			continue;
		}
		if (index->rd_rel->relkind == RELKIND_INDEX &&
			dmindex_try_read_meta(index, &meta) && meta.tree.relfilenode != cls->relfilenode)
			add_oid(&out, n, &cap, meta.tree.relfilenode);
		relation_close(index, AccessShareLock);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (busy)
	{
		pfree(out);
		return NULL;
	}
	qsort(out, *n, sizeof(Oid), oid_cmp);
	return out;
}

void
dmindex_gc_free_relfilenode(Oid relfilenode)
{
	dm_client  *client = dmindex_get_client();

	for (int i = 0; i < dmindex_memnode_list->count; i++)
	{
		uint16		id;
		dm_tree_info *trees = NULL;
		int			n = 0, cap = 0, rc;

		if (dmindex_connect(client, dmindex_memnode_list->addresses[i], false, &id) != DM_OK)
			continue;
		if ((rc = list_trees(client, id, MyDatabaseId, &trees, &n, &cap)) != DM_OK)
			dmindex_raise(rc, client, dmindex_memnode_list->addresses[i]);
		/*
		 * DM_ERR_FENCED: the tree of another server with the same storage
		 * (the original of a restored base backup or of a point-in-time
		 * recovery, still running): not this index's to free, and no
		 * reason to refuse this index its new tree.
		 */
		for (int k = 0; k < n; k++)
			if (trees[k].name.relfilenode == relfilenode &&
				(rc = free_tree_quietly(client, &trees[k].name, id)) != DM_OK &&
				rc != DM_ERR_NOTFOUND && rc != DM_ERR_FENCED)
				dmindex_raise(rc, client, dmindex_memnode_list->addresses[i]);
		if (trees)
			pfree(trees);
	}
}

int64
dmindex_gc_database(bool all_databases)
{
	dm_client  *client = dmindex_get_client();
	int64		freed = 0;

	/*
	 * This transaction's own uncommitted DROP, REINDEX or TRUNCATE would
	 * look final in pg_class, and a rollback would bring back an index whose
	 * tree we freed: collect only from a transaction that changed nothing.
	 */
	if (TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return -1;

	for (int i = 0; i < dmindex_memnode_list->count; i++)
	{
		uint16		id;
		dm_tree_info *trees = NULL;
		int			n = 0, cap = 0, keep = 0, nlive;
		Oid		   *live;
		int			rc;

		if ((rc = dmindex_connect(client, dmindex_memnode_list->addresses[i], false, &id)) != DM_OK)
			continue;			/* unreachable: nothing to collect there now */
		if ((rc = list_trees(client, id, all_databases ? InvalidOid : MyDatabaseId, &trees, &n, &cap)) != DM_OK)
			dmindex_raise(rc, client, dmindex_memnode_list->addresses[i]);

		/* first drop candidates whose creator may still commit */
		for (int k = 0; k < n; k++)
		{
			TransactionId xid = (TransactionId) trees[k].name.generation;

			if (trees[k].name.dboid == MyDatabaseId &&
				TransactionIdIsValid(xid) &&
				(TransactionIdIsCurrentTransactionId(xid) || TransactionIdIsInProgress(xid)))
				continue;
			trees[keep++] = trees[k];
		}
		/* ...then look at pg_class, with a snapshot taken after that check */
		live = live_relfilenodes(&nlive);
		if (live == NULL)
		{
			/* DDL on one of the indexes: try again next time */
			if (trees)
				pfree(trees);
			return freed;
		}
		for (int k = 0; k < keep; k++)
		{
			const dm_tree_name *name = &trees[k].name;
			bool		garbage;

			if (name->dboid == MyDatabaseId)
				garbage = bsearch(&name->relfilenode, live, nlive, sizeof(Oid), oid_cmp) == NULL;
			else
				garbage = !SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(name->dboid));
			if (!garbage)
				continue;
			rc = free_tree_quietly(client, name, id);
			if (rc == DM_OK)
				freed++;
			/* FENCED: another server's tree (dmindex_writer_may_free): not garbage of ours */
			else if (rc != DM_ERR_NOTFOUND && rc != DM_ERR_FENCED)
				dmindex_raise(rc, client, dmindex_memnode_list->addresses[i]);
		}
		pfree(live);
		if (trees)
			pfree(trees);
	}
	return freed;
}
