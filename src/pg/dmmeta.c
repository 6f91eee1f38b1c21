/*
 * dmmeta.c — the remote tree an index's metapage (block 0, dmmetapage.c)
 * names: creating the tree for a new relfilenode, opening it (cached per
 * backend), and checking that the memnodes still hold it.
 *
 * An index's tree is named in its home memnode's catalog by (system
 * identifier, database, relfilenode, creating transaction id), so REINDEX,
 * TRUNCATE and a rolled-back CREATE INDEX, which all get a new relfilenode,
 * always build a new tree; dmgc.c frees the trees nothing refers to.
 *
 * The metapage also records each memnode's incarnation at build time.  A
 * memnode restarted on its region file keeps its incarnation and every
 * tree: the backend just reconnects.  One that restarted with an empty
 * region has a new incarnation, so the index has lost its data: that is
 * reported as ERRCODE_INDEX_CORRUPTED with a hint to REINDEX, never
 * answered with wrong rows.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "dm_cache.h"
#include "dm_offload.h"
#include "dmam.h"

/* The per-backend cache of open trees, by index OID. */
typedef struct DmTreeCacheEntry
{
	Oid			indexoid;		/* hash key */
	Oid			relfilenode;
	uint64		client_generation;
	TimestampTz map_checked;	/* when the partition map was last looked at */
	TimestampTz sound_at;		/* start of the statement that found the memnodes sound */
	dm_tree    *tree;
} DmTreeCacheEntry;

static HTAB *tree_cache = NULL;

/*
 * Offloaded writes of this tree whose outcome some backend never learned
 * (a timeout, a cancel) may land on the memnode after that backend's
 * error: before this backend uses its cached copies of the tree's nodes,
 * they are drained and the copies dropped (dm_tree_drain_settle).  One
 * load of shared memory when there are none, i.e. nearly always.  Hot
 * standbys may have cached a node before such a write landed too: the
 * whole tree is logged for them once the writes are drained, before any
 * VACUUM of this server can let the heap reuse a tid they name.
 */
static void
settle_drains(Relation index, dm_tree *tree)
{
	int			drained = 0;
	int			rc = dm_tree_drain_settle(tree, &drained);

	if (rc != DM_OK)
		dmindex_tree_error(index, tree, rc);
	if (drained > 0)
		dmindex_wal_log_whole_tree(index, tree);
}

static DmIndexOptions *
index_options(Relation index)
{
	return (DmIndexOptions *) index->rd_options;
}

/*
 * Connect to every configured memnode that answers and return the client.
 * Memnodes that do not answer are only an error if the index needs them,
 * which the caller finds out.
 */
static dm_client *
connect_all(void)
{
	dm_client  *client = dmindex_get_client();
	int			reachable = 0;
	int			last = DM_OK;

	if (dmindex_memnode_list->count == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("no memory nodes are configured"),
				 errhint("Set dmindex.memnodes to the host:port of one or more dmindex-memnode processes.")));
	for (int i = 0; i < dmindex_memnode_list->count; i++)
	{
		uint16		id;
		int			rc = dmindex_connect(client, dmindex_memnode_list->addresses[i], false, &id);

		/* a restarted memnode is reachable; whether that is fatal depends on the index */
		if (rc == DM_OK || rc == DM_ERR_INCARNATION)
			reachable++;
		else if (rc == DM_ERR_INTERRUPTED)
			dmindex_raise(rc, client, dmindex_memnode_list->addresses[i]);
		else
			last = rc;
	}
	if (reachable == 0)
		dmindex_raise(last, client, dmindex_memnode_list->count == 1 ?
					  dmindex_memnode_list->addresses[0] : NULL);
	return client;
}

/* The connection to memnode id, or an error naming what is wrong. */
static void
require_memnode(Relation index, dm_client *client, uint16 id, uint64 incarnation)
{
	dm_node_info info;

	/*
	 * A memnode this backend saw restart: if the index was built on its new
	 * incarnation (REINDEX after the restart, maybe in another session),
	 * switch this backend's connection over to it; otherwise the index has
	 * lost its data.
	 */
	if (dmindex_node_info(client, id, &info) && info.status == DM_ERR_INCARNATION)
	{
		(void) dm_client_reconnect(client, id);		/* refresh the incarnation we see */
		if (dmindex_node_info(client, id, &info) && incarnation != 0 &&
			info.seen_incarnation == incarnation)
			(void) dm_client_accept_incarnation(client, id);
	}
	if (!dmindex_node_info(client, id, &info))
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("index \"%s\" needs memory node %u, which is not reachable",
						RelationGetRelationName(index), id),
				 errdetail("%s", dm_client_error(client)),
				 errhint("Check that the memnode with --id %u is running and listed in dmindex.memnodes.", id)));
	if (info.status == DM_ERR_INCARNATION ||
		(incarnation != 0 && info.incarnation != incarnation) ||
		(info.seen_incarnation != 0 && info.seen_incarnation != incarnation && incarnation != 0))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has lost its data: memory node %u restarted",
						RelationGetRelationName(index), id),
				 errdetail("The index was built on incarnation %016llx; the memnode at %s now has incarnation %016llx.",
						   (unsigned long long) incarnation, info.address,
						   (unsigned long long) (info.seen_incarnation ? info.seen_incarnation : info.incarnation)),
				 errhint("REINDEX the index.")));
	if (info.status != DM_OK)
		dmindex_raise(info.status, client, info.address);
}


/* Memnodes the new tree spreads over: the "memnodes" reloption, else all. */
static int
placement_memnodes(Relation index, dm_client *client, uint16 *ids, uint64 *incs)
{
	DmIndexOptions *opts = index_options(index);
	DmMemnodeList *list = dmindex_memnode_list;
	int			n = 0;

	if (opts && opts->memnodes_offset)
	{
		char		errbuf[256];

		list = dmindex_parse_memnodes((char *) opts + opts->memnodes_offset, palloc, errbuf, sizeof(errbuf));
		if (list == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for option \"memnodes\""),
					 errdetail("%s", errbuf)));
	}
	for (int i = 0; i < list->count; i++)
	{
		uint16		id;
		/* a new tree may go on whatever incarnation the memnode has now */
		int			rc = dmindex_connect(client, list->addresses[i], true, &id);
		dm_node_info info;

		if (rc != DM_OK)
			dmindex_raise(rc, client, list->addresses[i]);
		if (n == DMINDEX_MAX_MEMNODES)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("an index can use at most %d memory nodes", DMINDEX_MAX_MEMNODES)));
		dmindex_node_info(client, id, &info);
		ids[n] = id;
		incs[n] = info.incarnation;
		n++;
	}
	return n;
}

dm_tree *
dmindex_create_tree(Relation index, ForkNumber forkNum, bool transactional,
					const DmMetaPageData *init)
{
	DmIndexOptions *opts = index_options(index);
	DmMetaPageData meta;
	dm_client  *client;
	dm_tree_opts to;
	dm_tree    *tree;
	int			rc;

	memset(&meta, 0, sizeof(meta));
	meta.magic = DMINDEX_META_MAGIC;
	meta.version = DMINDEX_META_VERSION;
	meta.node_size = opts ? opts->node_size : 1024;
	meta.fillfactor = opts ? opts->fillfactor : 90;
	meta.placement_level = opts ? opts->placement_level : 1;
	/*
	 * The tree an unlogged index gets after a crash keeps the format its
	 * build chose (recorded in the init fork): the first user's session
	 * may have another dmindex.default_leaf_format.
	 */
	if (init != NULL)
	{
		/* and its node size: its keys were admitted against that one's maximum */
		if (init->node_size >= DM_NODE_MIN && init->node_size <= DM_NODE_MAX)
			meta.node_size = init->node_size;
		meta.leaf_format = init->leaf_format;
		meta.neighborhood = init->neighborhood;
	}
	else
	{
		int			h;

		meta.leaf_format = (uint32) dmindex_leaf_choice(index, &h);
		meta.neighborhood = (uint32) h;
	}
	/* from the index's definition (dmvarkey.c); raises for a column it cannot encode */
	meta.key_format = (uint32) dmindex_key_format(index);
	if (meta.key_format == DM_KEY_VAR && meta.leaf_format == DM_LEAF_HOPSCOTCH)
	{
		DmIndexOptions *o = (DmIndexOptions *) index->rd_options;

		/* hopscotch leaves hash a 64-bit key: asked for explicitly, refuse; by default, sorted */
		if (o && o->leaf_format == DM_LEAF_HOPSCOTCH)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("index \"%s\" cannot have hopscotch leaves",
							RelationGetRelationName(index)),
					 errdetail("Hopscotch leaves hold keys of 8 bytes; this index has several columns, a DESC or NULLS FIRST column, or a type whose keys are longer."),
					 errhint("Use leaf_format = sorted.")));
		meta.leaf_format = DM_LEAF_SORTED;
		meta.neighborhood = 0;
	}

	if (forkNum == INIT_FORKNUM)
	{
		/*
		 * The init fork of an unlogged index: no tree yet.  After a crash the
		 * main fork is reset to this page, and the first use builds a fresh,
		 * empty tree (the unlogged table is empty then too).
		 */
		Page		page = (Page) palloc0(BLCKSZ);

		meta.flags = DMINDEX_META_UNLOGGED_INIT;
		meta.nmemnodes = 1;
		dmindex_fill_metapage(page, &meta);
		PageSetChecksumInplace(page, DMINDEX_METAPAGE_BLKNO);
		smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, DMINDEX_METAPAGE_BLKNO, (char *) page, true);
		log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM,
					DMINDEX_METAPAGE_BLKNO, page, true);
		smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
		pfree(page);
		return NULL;
	}

	client = connect_all();
	memset(&to, 0, sizeof(to));
	/*
	 * This server writes the new tree.  Its high-water mark starts at the
	 * WAL insert position: the build's entries depend only on WAL before
	 * this transaction's commit, and a server without that commit has no
	 * such index; a writer's mark is never below the start of its timeline
	 * (dmfailover.c).
	 */
	to.writer = dmindex_writer_initial();
	to.high_water = RecoveryInProgress() ? 0 : (uint64) GetXLogInsertRecPtr();
	to.node_size = meta.node_size;
	to.leaf_format = (int) meta.leaf_format;
	to.neighborhood = (int) meta.neighborhood;
	to.key_format = (int) meta.key_format;
	to.placement_level = (int) meta.placement_level;
	to.nmemnodes = placement_memnodes(index, client, to.memnodes, meta.incarnations);
	meta.nmemnodes = (uint16) to.nmemnodes;
	memcpy(meta.memnodes, to.memnodes, sizeof(meta.memnodes));
	meta.home = to.memnodes[0];
	dm_tree_name_pg(&meta.tree, GetSystemIdentifier(), MyDatabaseId,
					index->rd_node.relNode, GetTopTransactionId());

	rc = dm_tree_create_new(client, meta.home, &meta.tree, &to, &tree);
	if (rc == DM_ERR_EXISTS)
	{
		/*
		 * Same relfilenode, same transaction: the storage is rebuilt in place
		 * (a second TRUNCATE of a table created or truncated in this
		 * transaction).  The old tree is this transaction's own: replace it.
		 */
		dm_tree    *old;

		dmindex_forget_cached_tree(index);
		if (dm_tree_open_existing(client, meta.home, &meta.tree, &old) == DM_OK &&
			dm_tree_destroy(old) != DM_OK)
			dm_tree_close(old);
		rc = dm_tree_create_new(client, meta.home, &meta.tree, &to, &tree);
	}
	if (rc != DM_OK)
	{
		if (rc == DM_ERR_INVALID)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid options for index \"%s\"", RelationGetRelationName(index))));
		dmindex_raise(rc, client, NULL);
	}
	meta.tree_id = dm_tree_id(tree);
	/* what the tree has is what the metapage records (dmindex_open_tree compares them) */
	{
		int			h;

		meta.leaf_format = (uint32) dm_tree_leaf_format(tree, &h);
		meta.neighborhood = (uint32) h;
		meta.key_format = (uint32) dm_tree_key_format(tree);
	}
	/* a tree this transaction created is freed if it aborts */
	if (transactional)
		dmindex_gc_note_created(&meta);
	dmindex_writer_created(index, tree);

	dmindex_write_metapage(index, &meta, RelationGetNumberOfBlocks(index) == 0);
	return tree;
}

/*
 * Give the handle's unused node grants (and its redo slot) back to the
 * memnodes, for other backends to use: only through the client it was
 * opened with (a rebuilt client has dropped those connections).  Never
 * raises an error: it also runs at backend exit.
 */
static void
release_grants(DmTreeCacheEntry *e)
{
	if (e->tree && e->client_generation == dmindex_client_generation())
		(void) dm_tree_alloc_release(e->tree);
}

static void
forget_cached(DmTreeCacheEntry *e)
{
	release_grants(e);
	if (e->tree)
		dm_tree_close(e->tree);
	e->tree = NULL;
	e->sound_at = 0;
}

/* At backend exit: many short sessions must not each strand remote memory. */
static void
release_all_at_exit(int code, Datum arg)
{
	HASH_SEQ_STATUS st;
	DmTreeCacheEntry *e;

	if (tree_cache == NULL)
		return;
	hash_seq_init(&st, tree_cache);
	while ((e = hash_seq_search(&st)) != NULL)
		release_grants(e);
}

void
dmindex_forget_cached_tree(Relation index)
{
	DmTreeCacheEntry *e;

	if (tree_cache == NULL)
		return;
	e = hash_search(tree_cache, &RelationGetRelid(index), HASH_FIND, NULL);
	if (e)
		forget_cached(e);
}

/*
 * Are the connections to the index's memnodes still sound?  A memnode that
 * was restarted since this backend last used it (its region reattached,
 * same incarnation) has closed our connection: noticing it here, before
 * the statement's first operation, makes the slow path below reconnect, so
 * the restart costs the session nothing.
 */
static bool
memnodes_sound(dm_client *client, const DmMetaPageData *meta)
{
	for (int i = 0; i < meta->nmemnodes; i++)
		if (dm_client_check(client, meta->memnodes[i]) != DM_OK)
			return false;
	return true;
}

dm_tree *
dmindex_open_tree(Relation index)
{
	DmTreeCacheEntry *e;
	bool		found;
	DmMetaPageData meta;
	dm_client  *client;
	int			rc;

	if (tree_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(DmTreeCacheEntry);
		ctl.hcxt = TopMemoryContext;
		tree_cache = hash_create("dmindex open trees", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		before_shmem_exit(release_all_at_exit, (Datum) 0);
	}
	client = dmindex_get_client();
	e = hash_search(tree_cache, &RelationGetRelid(index), HASH_ENTER, &found);
	if (!found)
	{
		e->tree = NULL;
		e->sound_at = 0;
	}
	/* the metapage is a shared-buffer hit: cheap enough to check every time */
	dmindex_read_meta(index, &meta);
	/*
	 * The memnodes' connections once per statement, not at every open (an
	 * INSERT opens the tree twice: the entry, the flush at commit; a poll
	 * each is a tenth of a one-row INSERT over shm).  Within the statement,
	 * every remote operation still notices a memnode gone or replaced.
	 */
	if (e->tree && e->relfilenode == index->rd_node.relNode &&
		e->client_generation == dmindex_client_generation() &&
		dm_tree_id(e->tree) == meta.tree_id && !(meta.flags & DMINDEX_META_UNLOGGED_INIT) &&
		dm_tree_is_replica(e->tree) == (RecoveryInProgress() ? 1 : 0) &&
		(e->sound_at == GetCurrentStatementStartTimestamp() || memnodes_sound(client, &meta)))
	{
		e->sound_at = GetCurrentStatementStartTimestamp();
		dmindex_writer_check(index, e->tree);
		/* both cheap (shared memory, a clock read) until a lease or the interval runs out */
		dmindex_claim_check(client, meta.home);
		dmindex_partitions_maybe_refresh(index, e->tree, &e->map_checked);
		dmindex_offload_apply(e->tree);	/* dmindex.offload may have changed (dmoffload.c) */
		settle_drains(index, e->tree);
		return e->tree;
	}
	forget_cached(e);

	if (meta.flags & DMINDEX_META_UNLOGGED_INIT)
	{
		/*
		 * An unlogged index reset after a crash: make its (empty) tree.  One
		 * backend does it, under a heavyweight lock on the metapage; the
		 * trees this storage had before the crash are garbage now.
		 */
		LockPage(index, DMINDEX_METAPAGE_BLKNO, ExclusiveLock);
		dmindex_read_meta(index, &meta);
		if (meta.flags & DMINDEX_META_UNLOGGED_INIT)
		{
			dm_tree    *t;

			(void) connect_all();
			dmindex_gc_free_relfilenode(index->rd_node.relNode);
			t = dmindex_create_tree(index, MAIN_FORKNUM, false, &meta);
			dm_tree_close(t);
		}
		UnlockPage(index, DMINDEX_METAPAGE_BLKNO, ExclusiveLock);
		dmindex_read_meta(index, &meta);
	}

	/*
	 * CREATE DATABASE copies indexes file by file: a copy would share the
	 * template's tree (and corrupt it with the copy's writes).
	 */
	if (meta.tree.dboid != MyDatabaseId || meta.tree.sysid != GetSystemIdentifier())
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" belongs to another database or cluster",
						RelationGetRelationName(index)),
				 errdetail("It was copied (by CREATE DATABASE or a file-level copy) from the index whose remote tree it names."),
				 errhint("REINDEX the index.")));
	client = connect_all();
	for (int i = 0; i < meta.nmemnodes; i++)
		require_memnode(index, client, meta.memnodes[i], meta.incarnations[i]);
	rc = dm_tree_open_existing(client, meta.home, &meta.tree, &e->tree);
	if (rc == DM_ERR_NOTFOUND && RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("the remote tree of index \"%s\" no longer exists", RelationGetRelationName(index)),
				 errdetail("The primary has dropped or rebuilt the index, and this standby has not replayed that yet."),
				 errhint("Retry once the standby has caught up.")));
	if (rc == DM_ERR_NOTFOUND)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("the remote tree of index \"%s\" does not exist", RelationGetRelationName(index)),
				 errdetail("Memory node %u has no tree for relfilenode %u.", meta.home, meta.tree.relfilenode),
				 errhint("REINDEX the index.")));
	if (rc != DM_OK)
	{
		e->tree = NULL;
		dmindex_raise(rc, client, NULL);
	}
	if (dm_tree_id(e->tree) != meta.tree_id)
	{
		forget_cached(e);
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("the remote tree of index \"%s\" is not the one it was built with",
						RelationGetRelationName(index)),
				 errhint("REINDEX the index.")));
	}
	/*
	 * The tree's own catalog entry says how its leaves are laid out, and
	 * every reader goes by that; the metapage recorded the same at build
	 * time.  They can differ only if one of them is damaged.
	 */
	{
		int			h;
		int			format = dm_tree_leaf_format(e->tree, &h);

		if ((uint32) format != meta.leaf_format || (uint32) h != meta.neighborhood)
		{
			forget_cached(e);
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("the remote tree of index \"%s\" does not have the leaf format its metapage records",
							RelationGetRelationName(index)),
					 errdetail("The metapage records %s leaves (neighborhood %u); the tree has %s leaves (neighborhood %d).",
							   dmindex_leaf_format_name((int) meta.leaf_format), meta.neighborhood,
							   dmindex_leaf_format_name(format), h),
					 errhint("REINDEX the index.")));
		}
	}
	/*
	 * The key format: the tree's catalog entry, the metapage and the index's
	 * definition (which every backend's entries follow) must agree.  A
	 * metapage from before byte keys reads FIXED8, as its tree has.
	 */
	{
		int			tree_format = dm_tree_key_format(e->tree);
		int			def_format = dmindex_key_format(index);

		if ((uint32) tree_format != meta.key_format || (uint32) def_format != meta.key_format)
		{
			forget_cached(e);
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("the key format of index \"%s\" is inconsistent",
							RelationGetRelationName(index)),
					 errdetail("The metapage records key format %s, the remote tree has %s, and the index's definition asks for %s.",
							   dmindex_key_format_name((int) meta.key_format),
							   dmindex_key_format_name(tree_format),
							   dmindex_key_format_name(def_format)),
					 errhint("REINDEX the index.")));
		}
	}
	/* another live server with our instance id would cache the same ranges as its own */
	PG_TRY();
	{
		dmindex_claim_check(client, meta.home);
	}
	PG_CATCH();
	{
		dm_tree_close(e->tree);
		e->tree = NULL;
		PG_RE_THROW();
	}
	PG_END_TRY();

	/*
	 * A hot standby reads its primary's tree and must change nothing of it:
	 * a read-only replica handle (DESIGN.md §7), which refuses every remote
	 * write and reads the removal horizon after every node (dmscan.c
	 * compares it with the snapshot).  Its redo drops every node the primary
	 * writes from the cache (dmwal.c), so it may keep the leaves of its own
	 * key ranges (coherent).  The mode follows the server: a handle cached
	 * before a promotion is reopened above.
	 */
	if (RecoveryInProgress())
	{
		dm_tree_set_replica(e->tree, 1);
		dm_tree_set_replica_coherent(e->tree, 1);
	}
	/*
	 * Read through this instance's node cache, which keeps the nodes of the
	 * ranges the partition map gives this instance.  Only the primary writes
	 * (PostgreSQL refuses writes during recovery), so it writes every key:
	 * keys of other instances' ranges go to foreign or shared nodes, under
	 * the remote lock (dmpartition.c).
	 */
	rc = dm_tree_use_cache(e->tree, dmindex_node_cache, (uint32) dmindex_instance_id);
	dm_tree_write_any_key(e->tree, 1);
	/* the nodes written go to the WAL for standbys' caches (dmwal.c) */
	dm_tree_track_writes(e->tree, 1);
	e->map_checked = GetCurrentTimestamp();
	if (rc != DM_OK)
	{
		dm_tree    *t = e->tree;

		e->tree = NULL;
		PG_TRY();
		{
			dmindex_tree_error(index, t, rc);
		}
		PG_FINALLY();
		{
			dm_tree_close(t);
		}
		PG_END_TRY();
	}
	e->relfilenode = index->rd_node.relNode;
	e->client_generation = dmindex_client_generation();
	/* who writes the tree: this server, a promoted one taking it over, or another */
	dmindex_writer_check(index, e->tree);
	dmindex_offload_apply(e->tree);
	settle_drains(index, e->tree);
	return e->tree;
}
