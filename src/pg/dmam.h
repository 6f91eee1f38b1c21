/*
 * dmam.h — the access method's internal interface: everything that deals
 * with an index relation and its remote tree, shared by the files of the AM.
 * It builds on dmindex.h (GUCs of the connection, the memnode list, the
 * backend's client, dm_status -> ereport), which it includes; a file that
 * needs no Relation (dmconn.c, dmauth.c, dmfuncs.c) includes dmindex.h
 * only, and nothing declared there refers to what is declared here.
 *
 * The callbacks (one file per group, as in contrib/bloom and pgvector):
 *   dmhandler.c   the IndexAmRoutine, reloptions (amoptions), amcanreturn
 *   dmbuild.c     ambuild, ambuildempty, ambuildphasename (sort + bulk load)
 *   dminsert.c    aminsert and the per-transaction insert buffer
 *   dmscan.c      index scans (plain, bitmap, index-only; both directions)
 *   dmvacuum.c    ambulkdelete, amvacuumcleanup
 *   dmcost.c      amcostestimate
 *   dmvalidate.c  amvalidate
 * The index and its tree:
 *   dmkey.c       key encoding: support functions and scan-key bounds
 *   dmkeyenc.c    byte keys of variable-length and multi-column keys (dmkeyenc.h)
 *   dmvarkey.c    the key format (FIXED8 / VAR) and the entries of index rows
 *   dmscanvar.c   scan keys -> byte ranges of VAR indexes
 *   dmmetapage.c  the metapage (block 0) as a page: reading, writing
 *   dmmeta.c      the remote tree a metapage names: create, open (cached), check
 *   dmtreeerror.c the error for a failed tree operation (dmindex_tree_error)
 *   dmscanpin.c   key-range pins: VACUUM waits for index-only scans (btree's pin)
 *   dmstandby.c   hot standbys: tids past the heap's end, the removal horizon
 *   dmfailover.c  who writes a tree: sync-rep waits, fencing, takeover after promotion
 *   dmpartition.c key ranges per instance: picking up a new partition map
 *   dmpartfuncs.c dmindex_set_partitions(), dmindex_partitions(), dmindex_owner()
 *   dmwal.c       the WAL resource manager: written nodes, for standbys' caches
 *   dmshmem.c     the node cache in shared memory
 *   dmclaim.c     this server's claim of its instance id on the memnodes
 * Trees nobody uses any more, and checks:
 *   dmgc.c        freeing the trees of dropped indexes and aborted builds
 *   dmgcworker.c  the background worker that collects orphaned trees
 *   dmcheck.c     dmindex_stats(), dmindex_check(), dmindex_gc()
 * dmindex.c (_PG_init, dmindex.h) calls each file's init function.
 *
 * Keys (FIXED8 indexes; VAR indexes use the byte keys of dmkeyenc.c, see
 * dmvarkey.c).  Every opclass maps its type to a 64-bit unsigned key that orders
 * exactly like the type's btree order (support function 1, "encode",
 * type -> int8 holding the key's bits).  Types whose encoding can be undone
 * exactly also have support function 2 ("decode", int8 -> type): those
 * allow index-only scans.  Entries in the remote tree are (key, tid).
 */
#ifndef DMAM_H
#define DMAM_H

#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "access/xlogdefs.h"
#include "access/relscan.h"
#include "common/relpath.h"
#include "datatype/timestamp.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "storage/bufpage.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"

#include "dm_tree.h"
#include "dmindex.h"
#include "dmkeyenc.h"

/* Support function numbers. */
#define DMINDEX_ENCODE_PROC 1	/* (type) -> int8: order-preserving key */
#define DMINDEX_DECODE_PROC 2	/* (int8) -> type: exact inverse (optional) */
#define DMINDEX_NPROCS 2

/* Strategies: those of btree, so the planner can use it for ordering. */
#define DMINDEX_NSTRATEGIES 5

/* ---- failover (dmfailover.c) ------------------------------------------------ */

/* The writer word of a tree this server creates. */
extern uint64 dmindex_writer_initial(void);
extern void dmindex_writer_forget_copied_nonces(void);
/* A tree this server just created: its key space is this server's instance's. */
extern void dmindex_writer_created(Relation index, dm_tree *tree);
/*
 * Before a remote write that depends on WAL up to lsn: flush it, wait for
 * the synchronous standbys (if any), and have the tree's high-water mark
 * raised to lsn before the first of those writes lands (the write's own
 * batch carries the raise: dm_tree_writer_require).
 */
extern void dmindex_before_remote_write(Relation index, dm_tree *tree, XLogRecPtr lsn);
/* The end of the WAL inserted so far, as a position XLogFlush can reach. */
extern XLogRecPtr dmindex_wal_insert_end(void);
/* On every use of an open tree: write under it, take it over, or refuse (ERROR). */
extern void dmindex_writer_check(Relation index, dm_tree *tree);
/* Whether this server may free the tree (never raises). */
extern bool dmindex_writer_may_free(dm_tree *tree);

/* ---- reloptions (dmhandler.c) ---------------------------------------------- */

typedef struct DmIndexOptions
{
	int32		vl_len_;		/* varlena header (do not touch directly!) */
	int			node_size;		/* bytes, power of two 256..4096 */
	int			fillfactor;		/* percent, for the bulk load of CREATE INDEX */
	int			placement_level;	/* M of DESIGN.md §5 */
	int			memnodes_offset;	/* offset of the memnode list string, 0 = all */
	int			leaf_format;	/* DM_LEAF_*, or DMINDEX_LEAF_UNSET: dmindex.default_leaf_format */
	int			neighborhood;	/* hopscotch H, 0 = not given (DM_TREE_HOP_H_DEFAULT) */
} DmIndexOptions;

#define DMINDEX_LEAF_UNSET (-1)

extern void dmindex_init_reloptions(void);	/* reloptions and dmindex.default_leaf_format; from _PG_init */
/*
 * The leaf format (DM_LEAF_*) and neighbourhood (0 for sorted leaves) a new
 * tree of the index gets: its reloptions, else dmindex.default_leaf_format.
 */
extern int	dmindex_leaf_choice(Relation index, int *neighborhood);
/* "sorted" or "hopscotch" */
extern const char *dmindex_leaf_format_name(int format);
extern int	dmindex_insert_buffer;	/* GUC dmindex.insert_buffer (dminsert.c) */

/* ---- key encoding (dmkey.c) ------------------------------------------------- */

/* A tid packed into 48 bits (block << 16 | offset): order-preserving. */
static inline uint64
dmindex_tid_pack(ItemPointer tid)
{
	return ((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
		(uint64) ItemPointerGetOffsetNumberNoCheck(tid);
}

static inline void
dmindex_tid_unpack(uint64 v, ItemPointer tid)
{
	ItemPointerSet(tid, (BlockNumber) ((v >> 16) & 0xFFFFFFFF), (OffsetNumber) (v & 0xFFFF));
}

/* The entry for a heap tuple's indexed value (encoded with the column's opclass). */
extern dm_entry dmindex_make_entry(Relation index, Datum value, bool isnull, ItemPointer tid);

/* Encode a value of type typid with the opfamily's support function 1. */
extern uint64 dmindex_encode(Relation index, Oid typid, Datum value);

/* ---- key formats and byte keys (dmvarkey.c) ---- */

/*
 * How an index's keys are made, from its definition (cached in rd_amcache):
 * DM_KEY_FIXED8 (one ascending NULLS LAST column of an opclass with support
 * function 1) or DM_KEY_VAR (dmkeyenc.c's byte keys of every key column).
 */
typedef struct DmKeyInfo
{
	int			format;			/* DM_KEY_* */
	int			natts;			/* key columns */
	uint32		key_max;		/* VAR: the longest key (dm_tree_key_max of the node size) */
	Oid			types[INDEX_MAX_KEYS];	/* VAR: the columns' types */
	DmKeyColumn cols[INDEX_MAX_KEYS];	/* VAR: the columns' encodings */
} DmKeyInfo;

/*
 * Raises 0A000 for a VAR column the encoding cannot order (type, collation,
 * opclass).  The result lives in the relcache entry (rd_amcache), which an
 * invalidation frees: any catalog access, even a detoasting, may accept
 * one.  Whoever does such things while using it works on a copy
 * (dmindex_key_info_copy; the ICU locales it names are never freed).
 */
extern const DmKeyInfo *dmindex_key_info(Relation index);
extern void dmindex_key_info_copy(Relation index, DmKeyInfo *out);
extern int	dmindex_key_format(Relation index);
/* "fixed8", "var" (messages, dmindex_stats) */
extern const char *dmindex_key_format_name(int format);
/*
 * VAR: append the key of an index row to buf and return its length; 54000
 * if it is longer than the maximum (tid names the row in the message).
 */
extern int	dmindex_form_key(Relation index, Datum *values, bool *isnull, ItemPointer tid,
							 StringInfo buf);
/* The entry of an index row (any format); a suffix is allocated in sfxcxt. */
extern dm_entry dmindex_form_entry(Relation index, Datum *values, bool *isnull,
								   ItemPointer tid, MemoryContext sfxcxt);
/* e with its suffix (if any) copied into cxt. */
extern dm_entry dmindex_entry_copy(dm_entry e, MemoryContext cxt);
/* VAR: the scan keys' entry ranges (dmscanvar.c); as dmindex_keys_to_ranges. */
extern int	dmindex_var_keys_to_ranges(Relation index, ScanKey keys, int nkeys, dm_range **out);

/* Whether the column's opclass can decode keys (index-only scans). */
extern bool dmindex_can_decode(Relation index);
extern Datum dmindex_decode(Relation index, uint64 key);

/*
 * The entry ranges the scan keys allow (dmscankey.c): ascending, disjoint,
 * palloc'd in the current memory context into *out; returns how many (0 if
 * no entry can match: contradictory keys, a comparison with NULL, an empty
 * "= ANY" array).  One unless there are "= ANY(array)" keys.
 */
extern int	dmindex_keys_to_ranges(Relation index, ScanKey keys, int nkeys, dm_range **out);
/* No entry lies in r (its bounds cross, or meet with one of them exclusive). */
extern bool dmindex_range_empty(const dm_range *r);
/*
 * The non-NULL elements of an "= ANY(array)" key's array (dmscankey.c),
 * palloc'd; *n how many (NULLs match nothing), *elemtype their type.
 */
extern Datum *dmindex_array_elements(ScanKey key, Oid *elemtype, int *n);

/* ---- the remote tree of an index (dmmeta.c) ---------------------------------- */

#define DMINDEX_META_MAGIC 0x444D4958	/* "DMIX" */
#define DMINDEX_META_VERSION 1
#define DMINDEX_METAPAGE_BLKNO 0
#define DMINDEX_MAX_MEMNODES DM_TREE_MAX_MEMNODES

/* Block 0 of every dmindex index: where its tree is and how it was built. */
typedef struct DmMetaPageData
{
	uint32		magic;
	uint32		version;
	dm_tree_name tree;			/* name in the home memnode's catalog */
	uint64		tree_id;
	uint16		home;			/* memnode holding the catalog entry and root */
	uint16		nmemnodes;
	uint16		memnodes[DMINDEX_MAX_MEMNODES];
	uint64		incarnations[DMINDEX_MAX_MEMNODES];	/* as at build time */
	uint32		node_size;
	uint32		fillfactor;
	uint32		placement_level;
	uint32		flags;			/* DMINDEX_META_* */
	/*
	 * The tree's leaf format (DM_LEAF_*) and hopscotch neighbourhood (0 for
	 * sorted leaves), as the tree's catalog entry has them.  Added without a
	 * version change: metapages written before have zeros here (PageInit
	 * zeroes the page), which is what a sorted tree has.
	 */
	uint32		leaf_format;
	uint32		neighborhood;
	/*
	 * The tree's key format (DM_KEY_*), as its catalog entry has it: added
	 * like leaf_format, so older metapages read 0 = DM_KEY_FIXED8, which is
	 * what their trees have.
	 */
	uint32		key_format;
} DmMetaPageData;

#define DMINDEX_META_UNLOGGED_INIT 0x1	/* init fork: no tree yet, build one on first use */

/* ---- the metapage as a page (dmmetapage.c) ---- */

/* Read the metapage (raises ERRCODE_INDEX_CORRUPTED if it is not ours). */
extern void dmindex_read_meta(Relation index, DmMetaPageData *meta);
/* The same without errors: false if there is no valid metapage (for DROP and GC). */
extern bool dmindex_try_read_meta(Relation index, DmMetaPageData *meta);
/* Lay the metapage into page (a zeroed BLCKSZ buffer or a locked buffer page). */
extern void dmindex_fill_metapage(Page page, const DmMetaPageData *meta);
/* Write the metapage to block 0 of the main fork (WAL-logged when the index is). */
extern void dmindex_write_metapage(Relation index, const DmMetaPageData *meta, bool extend);

/* ---- the tree behind the metapage (dmmeta.c) ---- */

/*
 * The open tree of an index, cached per backend and revalidated against the
 * metapage and the memnodes' incarnations.  Raises an error (connection
 * failure, or ERRCODE_INDEX_CORRUPTED with a hint to REINDEX when a memnode
 * has lost the tree) instead of returning NULL.  The handle is valid until
 * the end of the transaction at most; do not free it.
 */
extern dm_tree *dmindex_open_tree(Relation index);

/* dmstandby.c: hot standbys (docs/design.md §7) */
/* Primary, before VACUUM removes entries and after a build: raise the tree's removal horizon. */
extern void dmindex_raise_removal_horizon(Relation index, Relation heap, dm_tree *tree,
										  TransactionId at_least);
/* Standby: 40001 if the primary removed entries the snapshot may need. */
extern void dmindex_check_removal_horizon(Relation index, dm_tree *tree, Snapshot snapshot);
/* Whether tid's block is past the heap's end (*nblocks: cached length, InvalidBlockNumber = unknown). */
extern bool dmindex_tid_beyond_heap(Relation heap, ItemPointer tid, BlockNumber *nblocks);
/* Open index_oid as a dmindex index (and its table), or raise an error (dmcheck.c). */
extern Relation dmindex_open_checked(Oid indexoid, Relation *heap, LOCKMODE mode);

/* ---- node cache in shared memory (dmshmem.c) ---- */
extern int	dmindex_cache_size_kb;		/* dmindex.cache_size */
extern int	dmindex_cache_policy;		/* dmindex.cache_policy: a dm_cache_policy */
extern double dmindex_cache_leaf_admission;	/* dmindex.cache_leaf_admission */
extern int	dmindex_hotspot_entries;	/* dmindex.hotspot_entries */
extern double dmindex_cache_hop_admission;	/* dmindex.cache_hop_admission */
extern int	dmindex_cache_frame_size;	/* dmindex.cache_frame_size */
extern int	dmindex_instance_id;		/* dmindex.instance_id */
#define DMINDEX_MAX_INSTANCE_ID 65535
extern struct dm_cache *dmindex_node_cache;	/* NULL: no cache */
/* From _PG_init: define the GUCs above and install the shared memory hooks. */
extern void dmindex_cache_init(void);

/* dmpartition.c */
extern int	dmindex_partition_refresh_ms;	/* dmindex.partition_refresh_interval */
extern void dmindex_partition_init(void);	/* GUCs, from _PG_init */
/* Re-read the index's partition map if *last_check is older than the interval. */
extern void dmindex_partitions_maybe_refresh(Relation index, dm_tree *tree, TimestampTz *last_check);

/* dmoffload.c */
extern int	dmindex_offload;	/* dmindex.offload: a dm_offload_mode */
extern void dmindex_offload_init(void);	/* GUC, shared counters; from _PG_init */
/* Make the tree's handle offload as dmindex.offload says (never a standby's). */
extern void dmindex_offload_apply(dm_tree *tree);
/* Add the handle's offload counts to this server's totals. */
extern void dmindex_offload_publish(dm_tree *tree);

/* dmwal.c */
extern void dmindex_wal_init(void);	/* the resource manager, shared memory; from _PG_init */
/* Before a remote write: the first writer after a start logs "drop everything" for standbys. */
extern void dmindex_wal_before_write(void);
/* WAL-log the nodes tree wrote since the last call (standbys drop them from their caches). */
extern void dmindex_wal_log_written(Relation index, dm_tree *tree);
/* Standbys drop every cached node of the tree at this point of the WAL. */
extern void dmindex_wal_log_whole_tree(Relation index, dm_tree *tree);

/* dmclaim.c */
extern int	dmindex_instance_lease;	/* dmindex.instance_lease, seconds */
extern void dmindex_claim_init(void);	/* GUC, shared memory, keeper worker; from _PG_init */
/*
 * Make sure this server holds the claim of its instance id on memnode node
 * (client connected to it); ERRCODE_OBJECT_IN_USE if another live server
 * holds it.  Cheap (shared memory only) while more than half the lease is
 * left.
 */
extern void dmindex_claim_check(struct dm_client *client, uint16 node);
/* Another running server holds the claim of instance on memnode node. */
extern bool dmindex_claim_held_by_other(struct dm_client *client, uint16 node, int instance);


/*
 * Create a fresh remote tree for the index's current relfilenode and write
 * the metapage (generic WAL for a permanent index; forkNum selects the
 * init fork for unlogged indexes).  Returns the open tree (a handle the
 * caller closes).  transactional: the tree belongs to this transaction's
 * new relfilenode and is freed if it aborts (not for the tree an unlogged
 * index makes on first use after a crash: its metapage write is not undone).
 * init: for that tree, the init fork's metapage, whose leaf format it keeps;
 * otherwise NULL (the reloptions, else dmindex.default_leaf_format).
 */
extern dm_tree *dmindex_create_tree(Relation index, ForkNumber forkNum, bool transactional,
									const DmMetaPageData *init);

/* Raise the error for a failed tree operation (dmtreeerror.c). */
extern void dmindex_tree_error(Relation index, dm_tree *tree, int status) pg_attribute_noreturn();

/* ---- per-transaction insert buffer (dminsert.c) --------------------------------- */

/*
 * The not-yet-flushed entries this transaction inserted into index
 * (DESIGN.md §8 WAL-first rule), sorted, for the transaction's own scans to
 * merge.  *n is set; the array, and the key suffixes its entries point to,
 * are valid until the next insert or subtransaction end (a flush or a
 * rollback frees the suffixes): a caller that keeps entries copies them.
 */
extern const dm_entry *dmindex_pending_entries(Relation index, dm_tree *tree, int *n);
/* Flush pending entries of every index now (WAL first, then remote writes). */
extern void dmindex_flush_pending(void);
/* The index was rebuilt in place (same relfilenode, new tree). */
extern void dmindex_pending_rebuilt(Relation index);
/* ExecutorStart hook: parallel workers cannot see the buffer, so flush first. */
extern void dmindex_insert_init(void);
/* Drop the backend's cached handle of the index's tree. */
extern void dmindex_forget_cached_tree(Relation index);

/* ---- pins of scans that VACUUM must wait for (dmscanpin.c) ------------------------ */

extern void dmindex_scanpin_init(void);	/* shared memory hooks, from _PG_init */
typedef struct DmScanPinHandle DmScanPinHandle;
/*
 * A pin for a scan of the tree, allocated in the current memory context
 * (the scan's): released by dmindex_pin_release, or when that memory goes.
 */
extern DmScanPinHandle *dmindex_pin_acquire(uint64 tree_id);
/* The scan may still return entries in [lo, hi] (an empty range when lo > hi). */
extern void dmindex_pin_set(DmScanPinHandle *pin, dm_entry lo, dm_entry hi);
extern void dmindex_pin_release(DmScanPinHandle *pin);
/* After deleting the sorted entries: wait until no scan may still return one. */
extern void dmindex_pin_wait(uint64 tree_id, const dm_entry *deleted, int n);

/* ---- the AM callbacks ------------------------------------------------------------- */

/*
 * One line each: what PostgreSQL may expect of the callback (filled into the
 * IndexAmRoutine by dmhandler()).
 */

/* ambuild: a new remote tree for the index's new relfilenode, bulk-loaded from every heap tuple, and its metapage. */
extern IndexBuildResult *dmbuild(Relation heap, Relation index, IndexInfo *indexInfo);
/* ambuildempty: an unlogged index's init fork: a metapage naming no tree (the first use after a crash builds one). */
extern void dmbuildempty(Relation index);
/* ambuildphasename: the name of a CREATE INDEX progress phase, NULL for an unknown one. */
extern char *dmbuildphasename(int64 phasenum);
/* aminsert: queue the row's (key, tid) in the transaction's insert buffer, written remotely at commit (WAL first); returns false. */
extern bool dminsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
					 Relation heapRel, IndexUniqueCheck checkUnique,
					 bool indexUnchanged, struct IndexInfo *indexInfo);
/* ambulkdelete: raise the removal horizon, delete every entry whose tid callback calls dead, wait out scan pins; stats. */
extern IndexBulkDeleteResult *dmbulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
										   IndexBulkDeleteCallback callback, void *callback_state);
/* amvacuumcleanup: nothing to clean up; returns stats as given (NULL when no bulk delete ran), like nbtree. */
extern IndexBulkDeleteResult *dmvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats);
/* amcanreturn: index-only scans when the opclass can decode keys, never during recovery. */
extern bool dmcanreturn(Relation index, int attno);
/* amcostestimate: btcostestimate's method over the remote tree's size, its node reads dearer than local pages. */
extern void dmcostestimate(PlannerInfo *root, IndexPath *path, double loop_count,
						   Cost *indexStartupCost, Cost *indexTotalCost,
						   Selectivity *indexSelectivity, double *indexCorrelation,
						   double *indexPages);
/* amoptions: parse and validate the reloptions (node_size, fillfactor, placement_level, memnodes, leaf_format, neighborhood). */
extern bytea *dmoptions(Datum reloptions, bool validate);
/* amvalidate: whether an operator class is sound (btree strategies, encode function, optional decode); each problem reported as INFO. */
extern bool dmvalidate(Oid opclassoid);
/* ambeginscan: the scan's state; nothing remote happens before amrescan and the first fetch. */
extern IndexScanDesc dmbeginscan(Relation index, int nkeys, int norderbys);
/* amrescan: turn the scan keys into one entry range and start over from it. */
extern void dmrescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys);
/* amgettuple: the next matching tid in direction dir (remote entries merged with the transaction's buffered ones); false at the end. */
extern bool dmgettuple(IndexScanDesc scan, ScanDirection dir);
/* amgetbitmap: add every matching tid to the bitmap (to recheck on a standby); returns how many. */
extern int64 dmgetbitmap(IndexScanDesc scan, TIDBitmap *tbm);
/* amendscan: release the scan's iterator, pin and memory. */
extern void dmendscan(IndexScanDesc scan);

/* ---- garbage collection of remote trees (dmgc.c) ----------------------------------- */

extern void dmindex_gc_init(void);	/* hooks, from _PG_init */
/* Free every tree of this database named by relfilenode (an unlogged index's pre-crash trees). */
extern void dmindex_gc_free_relfilenode(Oid relfilenode);
/* This transaction created the tree: free it if the transaction aborts. */
extern void dmindex_gc_note_created(const DmMetaPageData *meta);
/*
 * Free trees of this database whose index no longer exists; returns how
 * many, or -1 when this transaction has changed the database (it cannot
 * tell its own uncommitted drops from final ones).
 */
extern int64 dmindex_gc_database(bool all_databases);
/* Databases that have trees of this cluster on the memnodes (for the worker). */
extern Oid *dmindex_gc_tree_databases(int *ndb);
/* Free every tree of a database that no longer exists; how many were freed. */
extern int64 dmindex_gc_free_database(Oid dboid);

/* ---- the collector's background worker (dmgcworker.c) ------------------------------ */

extern int	dmindex_gc_naptime;	/* dmindex.gc_naptime, seconds; 0 = off */
/* From _PG_init: the GUC, and the launcher when preloaded. */
extern void dmindex_gc_worker_init(void);

#endif							/* DMAM_H */
