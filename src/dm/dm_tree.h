/*
 * dm_tree.h — the remote B-link tree: an ordered set of (key, tid) entries
 * kept in fixed-size nodes in memory-node memory, read and written with
 * one-sided operations (DESIGN.md §5; Sherman/CHIME node protocol; the
 * NAM-tree paper's one-sided B-link tree).
 *
 * Node layout (node_size N = 256..4096, a power of two; little-endian):
 *
 *   0   lock      u64  0 = free, else the holder's token (CAS to take)
 *   8   version   u64  +1 on every write of the node; bit 63 (DIRTY) is set
 *                      while a write is under way (a fenced write: its guard
 *                      CAS on this word, see dm_tree_io.c)
 *   16  checksum  u64  hash of bytes [8,16) and [24, 88 + count * entry size)
 *                      (a VAR node: [24, used bytes), below)
 *   24  magic     u16  DM_NODE_MAGIC
 *   26  level     u8   0 = leaf
 *   27  flags     u8   DM_NODE_DEAD (a retired node), DM_NODE_HOP (a
 *                      hopscotch leaf: dm_hop.h, DESIGN.md §5.1),
 *                      DM_NODE_VAR (the VAR format, below)
 *   28  count     u16  entries (leaf) or children (inner)
 *   30  size_log2 u8   log2(N)
 *   31  hop_h     u8   hopscotch leaves: the neighbourhood H; else 0
 *   32  tree_tag  u64  the tree's id: a pointer into another tree's node fails
 *   40  right     u64  global address of the right sibling (0 = rightmost)
 *   48  left      u64  left sibling: a hint, validated by fences on use
 *   56  low fence  (key u64, tid u64)  inclusive
 *   72  high fence (key u64, tid u64)  exclusive; (MAX, MAX) = +infinity
 *   88  entries: leaf  (key u64, tid u64), 16 bytes, strictly ascending;
 *                hopscotch leaf: (N-88)/16 buckets in hash order (dm_hop.h),
 *                count = used buckets, the checksum covers all of them
 *                inner (sep key u64, sep tid u64, child u64), 24 bytes;
 *                child i holds [sep i, sep i+1); sep 0 = the node's low fence
 *
 * That is the FIXED8 format (every key one 64-bit word: dm_rawent and
 * dm_rawinner in dm_node.h).  A node flagged DM_NODE_VAR (0x4 in flags;
 * trees of key format VAR, DESIGN.md §5.2; dm_node_var.h) has variable-
 * length keys: the header above with the fences' prefix and tid words, then
 *
 *   88  low_sfx_len  u16  the low fence's suffix bytes (first in the heap)
 *   90  high_sfx_len u16  the high fence's (next in the heap)
 *   92  heap_bytes   u16  all suffix bytes, the fences' included
 *   94  zero         u16
 *   96  slots, in order: leaf  (prefix u64, tid u64, sfx_off u16,
 *                              sfx_len u16, zero u32), 24 bytes;
 *                       inner (prefix u64, tid u64, child u64, sfx_off u16,
 *                              sfx_len u16, zero u32), 32 bytes
 *   96 + count * slot: the heap: low fence's suffix, high fence's, then
 *       each slot's suffix in slot order, packed (sfx_off from the node's
 *       start); zeros after it
 *
 * Every write stores a rebuilt compact image (dm_var_build), so there is no
 * free space inside: used bytes are 96 + count * slot + heap_bytes, rounded
 * up to whole words, and the checksum covers [8,16) and [24, used) as for
 * FIXED8 nodes.  Validation also checks that the suffixes are packed in
 * that order inside the heap (none outside, none overlapping, heap_bytes
 * their sum), that no suffix is longer than dm_tree_key_max allows, and
 * that the slots ascend.
 *
 * Validation.  Writers hold the lock while they write; readers take no
 * lock and accept a node only if its magic, size, tree tag, count and
 * checksum agree (RDMA/CXL give 8-byte atomicity only, so a concurrent
 * write can tear a read; the checksum catches it).  Fences make half-
 * finished splits safe: a key at or beyond a node's high fence is looked for
 * to the right.  A node that fails validation DM_TREE_READ_RETRIES times is
 * reported as DM_ERR_CORRUPT.  A lookup in a hopscotch leaf reads only the
 * header and one neighbourhood, which no checksum covers: it is validated
 * by the version read before and after it instead; a key the handle's
 * hotspot buffer remembers reads only the leaf's version and checksum
 * words, which must be those its answer was read at (dm_tree_hop.c).
 *
 * Keys.  Entries order by (key, tid) as unsigned integers and are unique as
 * pairs (with suffixes: prefix word, then suffix, then tid: dm_entry_cmp).
 * A NULL key is stored as key = UINT64_MAX with DM_TID_NULL set in
 * the tid, so NULLs sort after every value; tids use at most 62 bits.
 */
#ifndef DM_TREE_H
#define DM_TREE_H

#include <string.h>

#include "dm_client.h"
#include "dm_node_fmt.h"	/* DM_NODE_MAGIC, DM_NODE_HEADER, DM_NODE_MIN/MAX */

/*
 * An entry: a key and a tid (DESIGN.md §5.2).  key is the key's prefix
 * word: its first 8 bytes read as a big-endian integer, zero-padded; sfx /
 * sfx_len are the key's bytes after the eighth (empty for keys of at most 8
 * bytes, so always empty in FIXED8 trees).  The suffix is borrowed: it
 * points into the caller's memory or a node image the code holds, never
 * owned by the entry.  spare is zero (entries are compared with memcmp by
 * some callers: no padding byte may be left undefined).
 */
typedef struct dm_entry
{
	uint64_t	key;
	uint64_t	tid;
	const uint8_t *sfx;
	uint32_t	sfx_len;
	uint32_t	spare;
} dm_entry;

_Static_assert(sizeof(dm_entry) == 32, "dm_entry has no padding");

#define DM_TID_NULL		(UINT64_C(1) << 63)	/* marks an entry with a NULL key */
#define DM_TID_MAX		(DM_TID_NULL - 1)	/* bound for key ranges (dm_key_hi) */
#define DM_TID_LIMIT	(UINT64_C(1) << 62)	/* tids of stored entries are below this */
#define DM_TREE_MAX_MEMNODES 16
#define DM_TREE_READ_RETRIES 2000

static inline dm_entry
dm_entry_make(uint64_t key, uint64_t tid)
{
	dm_entry	e = {key, tid};

	return e;
}

/*
 * The entry of a key given as bytes (1 up to dm_tree_key_max bytes: the
 * caller checks): prefix word from the first 8, zero-padded; the suffix
 * points into k.
 */
static inline dm_entry
dm_entry_from_bytes(const void *k, uint32_t len, uint64_t tid)
{
	const uint8_t *p = k;
	dm_entry	e = {0, tid};

	for (uint32_t i = 0; i < 8; i++)
		e.key = (e.key << 8) | (i < len ? p[i] : 0);
	if (len > 8)
	{
		e.sfx = p + 8;
		e.sfx_len = len - 8;
	}
	return e;
}

static inline dm_entry
dm_entry_null(uint64_t tid)
{
	dm_entry	e = {UINT64_MAX, tid | DM_TID_NULL};

	return e;
}

static inline int
dm_entry_is_null(dm_entry e)
{
	return (e.tid & DM_TID_NULL) != 0;
}

/*
 * Two suffixes: memcmp, the shorter first on a tie.  Out of line
 * (dm_node_var.c) and on scalars: FIXED8 entries never get here, and every
 * inlined dm_entry_cmp stays small and keeps its entries in registers.
 */
extern int	dm_sfx_cmp(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen);

/*
 * The order of entries (DESIGN.md §5.2): prefix word as an unsigned
 * integer, then the suffix, then the tid.  Entries without suffixes (every
 * entry of a FIXED8 tree) never look at it.  +infinity (DM_ENTRY_INF:
 * prefix and tid all ones, no suffix) stays above every entry, also above
 * keys that start with eight 0xFF bytes and go on (no stored entry has its
 * tid).
 */
static inline int
dm_entry_cmp(dm_entry a, dm_entry b)
{
	if (a.key != b.key)
		return a.key < b.key ? -1 : 1;
	if (__builtin_expect((a.sfx_len | b.sfx_len) != 0, 0))
	{
		int			c;

		if (a.key == UINT64_MAX && a.sfx_len == 0 && a.tid == UINT64_MAX)
			return 1;
		if (b.key == UINT64_MAX && b.sfx_len == 0 && b.tid == UINT64_MAX)
			return -1;
		if ((c = dm_sfx_cmp(a.sfx, a.sfx_len, b.sfx, b.sfx_len)) != 0)
			return c;
	}
	if (a.tid != b.tid)
		return a.tid < b.tid ? -1 : 1;
	return 0;
}

/* Whether two entries have the same key (prefix and suffix), whatever their tids. */
static inline int
dm_entry_same_key(dm_entry a, dm_entry b)
{
	return a.key == b.key && a.sfx_len == b.sfx_len &&
		(a.sfx_len == 0 || memcmp(a.sfx, b.sfx, a.sfx_len) == 0);
}

/* Smallest and largest possible entries (fences of the whole key space). */
#define DM_ENTRY_MIN ((dm_entry) {0, 0})
#define DM_ENTRY_INF ((dm_entry) {UINT64_MAX, UINT64_MAX})

typedef struct dm_tree dm_tree;

/* Leaf formats (DESIGN.md §5.1): chosen per tree at creation, kept in its catalog entry. */
#define DM_LEAF_SORTED		0	/* entries in order (the default) */
#define DM_LEAF_HOPSCOTCH	1	/* CHIME hopscotch leaves: a lookup reads one neighbourhood */

/*
 * Key formats (DESIGN.md §5.2): chosen per tree at creation, kept in its
 * catalog entry.  FIXED8: every key is the 8-byte prefix word, entries
 * never have suffixes (today's trees, byte for byte).  VAR: keys of 1 to
 * dm_tree_key_max(node_size) bytes, memcomparable and prefix-free, in VAR
 * nodes; sorted leaves only, never offloaded.
 */
#define DM_KEY_FIXED8		0
#define DM_KEY_VAR			1

typedef struct dm_tree_opts
{
	uint32_t	node_size;		/* 0 = 1024 */
	int			leaf_format;	/* DM_LEAF_*; 0 = sorted */
	int			neighborhood;	/* hopscotch: H, 2..16; 0 = 8 */
	int			key_format;		/* DM_KEY_*; 0 = FIXED8 (VAR: leaf_format must be sorted) */
	/*
	 * M: a subtree rooted at level M lives on one memnode (so an offloaded
	 * traversal never leaves it).  Bulk load spreads the level-M subtrees
	 * round-robin over the memnodes; a node split keeps the new node on its
	 * sibling's memnode at or below M (moving children would be needed
	 * otherwise), so a tree grown from empty by inserts stays on the home
	 * memnode until it is rebuilt.  0 = 1.
	 */
	int			placement_level;
	int			nmemnodes;		/* memnodes to spread over; 0 = just the home memnode */
	uint16_t	memnodes[DM_TREE_MAX_MEMNODES];
	int			lock_timeout_ms;	/* a lock held longer is taken over (holder died); 0 = 10000 */
	uint64_t	writer;			/* the first writer word (below); 0 is fine */
	uint64_t	high_water;		/* the first high-water mark */
} dm_tree_opts;

/*
 * Create a tree on home (its catalog entry and root live there), or open
 * one.  The client must already be connected to every memnode involved.
 */
extern int	dm_tree_create_new(dm_client *c, uint16_t home, const dm_tree_name *name,
							   const dm_tree_opts *opts, dm_tree **out);
extern int	dm_tree_open_existing(dm_client *c, uint16_t home, const dm_tree_name *name,
								  dm_tree **out);
/*
 * Local only (its client may be gone already).  A handle that ends while
 * its client is usable should first call dm_tree_alloc_release().
 */
extern void dm_tree_close(dm_tree *t);
/*
 * Give the unused rest of this handle's node grants back to the memnodes,
 * for any handle of the tree to reuse (a handle that is closed without this
 * strands fewer than 16 nodes per memnode until the tree is dropped).
 */
extern int	dm_tree_alloc_release(dm_tree *t);
/*
 * Free everything the tree has on every memnode and its catalog entry.  On
 * success the handle is freed too; on failure it stays valid (retry or close).
 */
extern int	dm_tree_destroy(dm_tree *t);

extern uint32_t dm_tree_node_size(const dm_tree *t);
/*
 * The longest key (bytes) a tree of key format VAR with nodes of node_size
 * bytes holds (DESIGN.md §5.2): a node holds both fences and three
 * entries of that size, so that inner splits keep two children a side.
 * 256 B: 20 bytes; 1 KiB: 174; 4 KiB: 788.  0 for an invalid size.
 */
extern uint32_t dm_tree_key_max(uint32_t node_size);
/* DM_LEAF_*, and for hopscotch leaves the neighbourhood (*neighborhood may be NULL; 0 for sorted). */
extern int	dm_tree_leaf_format(const dm_tree *t, int *neighborhood);
/* DM_KEY_FIXED8 or DM_KEY_VAR. */
extern int	dm_tree_key_format(const dm_tree *t);
/*
 * The neighbourhoods dm_tree_create_new accepts for hopscotch leaves of
 * node_size bytes: DM_TREE_HOP_H_MIN up to this (at most DM_TREE_HOP_H_MAX,
 * and no more than a leaf has buckets); 0 for an invalid node size.  For
 * callers that check options before creating a tree (the reloptions).
 */
#define DM_TREE_HOP_H_MIN		2
#define DM_TREE_HOP_H_MAX		16
#define DM_TREE_HOP_H_DEFAULT	8
extern int	dm_tree_hop_h_max(uint32_t node_size);
extern uint64_t dm_tree_id(const dm_tree *t);
/* The client a handle uses, and the memnode holding its catalog entry. */
extern dm_client *dm_tree_client(const dm_tree *t);
extern uint16_t dm_tree_home(const dm_tree *t);

/* Single-entry operations.  *existed (may be NULL) tells whether it was there. */
extern int	dm_tree_insert(dm_tree *t, dm_entry e, int *existed);
extern int	dm_tree_delete(dm_tree *t, dm_entry e, int *existed);
/*
 * Exact lookup: the tids of key, in order; *n is how many there are (only
 * the first max are stored).  For NULL keys iterate DM_RANGE_NULLS.
 */
extern int	dm_tree_lookup(dm_tree *t, uint64_t key, uint64_t *tids, int max, int *n);
/*
 * The same for a key given as an entry (its prefix word and suffix, e.g.
 * from dm_entry_from_bytes; the tid is ignored): what a VAR tree needs,
 * where dm_tree_lookup finds only the keys of at most 8 bytes.  In a FIXED8
 * tree it is dm_tree_lookup of key.key.  DM_ERR_INVALID for a key the
 * tree's format cannot hold (longer than dm_tree_key_max; a suffix in a
 * FIXED8 tree).
 */
extern int	dm_tree_lookup_key(dm_tree *t, dm_entry key, uint64_t *tids, int max, int *n);

/*
 * The hotspot buffer of a handle on a tree of hopscotch leaves (DESIGN.md
 * §5.1, speculative reads) when it uses no cache: how many keys it may
 * remember (rounded up to a multiple of 4; 0 = off;
 * DM_TREE_HOTSPOT_DEFAULT when never set).  Each takes 64 bytes of this
 * process's memory, allocated on first use; a hopscotch lookup of a
 * remembered key reads 16 bytes of its leaf (and, when no cache holds
 * leaves, no inner node).  Setting it forgets what the buffer held.  A
 * handle that uses a cache (dm_tree_use_cache) speculates with the
 * cache's buffer instead, shared by the processes of the instance and
 * sized by dm_cache_config.hotspot_entries.
 */
#define DM_TREE_HOTSPOT_DEFAULT 1024
extern int	dm_tree_set_hotspot(dm_tree *t, int entries);
/* Bytes the hotspot buffer takes when full (0 when off). */
extern size_t dm_tree_hotspot_bytes(const dm_tree *t);
extern int	dm_tree_contains(dm_tree *t, dm_entry e, int *found);

/*
 * Batches of sorted, distinct entries: each leaf is locked and written once
 * for all its entries (splitting as needed).  *changed (may be NULL) counts
 * entries actually inserted / removed.
 */
extern int	dm_tree_insert_sorted(dm_tree *t, const dm_entry *e, int n, int *changed);
extern int	dm_tree_delete_sorted(dm_tree *t, const dm_entry *e, int n, int *changed);

/*
 * Bulk load into an empty tree, bottom-up, from entries given in strictly
 * ascending order (in as many dm_tree_bulk_add calls as you like).  Nodes
 * are filled to fillfactor percent (10..100) and written many per round
 * trip; level-M subtrees are spread round-robin over the tree's memnodes.
 */
typedef struct dm_bulk dm_bulk;
extern int	dm_tree_bulk_begin(dm_tree *t, int fillfactor, dm_bulk **out);
extern int	dm_bulk_add(dm_bulk *b, const dm_entry *e, int n);
extern int	dm_bulk_finish(dm_bulk *b);	/* installs the tree; frees b */
extern void dm_bulk_abort(dm_bulk *b);

/*
 * Range iteration over entries between two bounds, forward or backward.
 * Not a snapshot: an entry inserted or deleted during the scan may or may
 * not be seen (lookups included), which PostgreSQL's MVCC makes harmless.
 * Bounds are entries; incl says whether an entry equal to the bound is in
 * range.  Use DM_ENTRY_MIN / DM_ENTRY_INF for open ends, and the helpers
 * below to turn key bounds into entry bounds.  The iterator keeps a copy of
 * the current leaf (like nbtree's BTScanPosData) and survives concurrent
 * splits and deletes: it never returns an entry twice or out of order, and
 * never misses one that was present for the whole scan.
 */
typedef struct dm_iter dm_iter;
typedef struct dm_range
{
	dm_entry	lo;
	int			lo_incl;
	dm_entry	hi;
	int			hi_incl;
	int			backward;
} dm_range;

extern int	dm_iter_open(dm_tree *t, const dm_range *r, dm_iter **out);
/*
 * 1 = *e is the next entry, 0 = end of range, else -dm_status.  e's suffix
 * (VAR trees) points into the iterator's leaf copy: valid until the next
 * dm_iter_next or dm_iter_close (copy it to keep it).  The suffixes of the
 * range's bounds are borrowed for as long as the iterator is open.
 */
extern int	dm_iter_next(dm_iter *it, dm_entry *e);
extern void dm_iter_close(dm_iter *it);
/*
 * The far fence of the leaf copy the iterator holds (the high fence going
 * forward, the low fence going backward): every entry it can still return
 * without reading remote memory again lies between its last returned entry
 * and this bound.  0 when it holds nothing (the range is done).  Its
 * suffix points into the leaf copy, as dm_iter_next's entries do.
 */
extern int	dm_iter_copy_bound(const dm_iter *it, dm_entry *bound);

/* Entry bounds for key bounds: keys >= k (incl) or > k, keys <= k or < k. */
static inline dm_entry
dm_key_lo(uint64_t key, int incl)
{
	return incl ? dm_entry_make(key, 0) : dm_entry_make(key, DM_TID_MAX);
}
static inline dm_entry
dm_key_hi(uint64_t key, int incl)
{
	return incl ? dm_entry_make(key, DM_TID_MAX) : dm_entry_make(key, 0);
}
/* For key bounds use lo_incl = 1 with dm_key_lo(k, 1), lo_incl = 0 with dm_key_lo(k, 0), etc. */

/* Range over all NULL entries. */
#define DM_RANGE_NULLS(bw) ((dm_range) {{UINT64_MAX, DM_TID_NULL}, 1, DM_ENTRY_INF, 0, (bw)})

/* Shape and occupancy. */
typedef struct dm_tree_stats
{
	int			height;
	uint64_t	nodes[16];		/* by level */
	uint64_t	entries;		/* leaf entries */
	uint64_t	inner_entries;
	double		leaf_fill;		/* FIXED8: entries / (leaves * leaf capacity); VAR: leaf bytes past the headers / their room */
	uint64_t	remote_bytes;	/* nodes * node size */
	uint64_t	nodes_by_memnode[DM_TREE_MAX_MEMNODES];	/* by position in the tree's memnode list */
	uint64_t	free_nodes;		/* in the reuse list (not counted above) */
	uint64_t	half_dead;		/* dead leaves still in the sibling chain (unfinished unlinks) */
	uint64_t	hop_overflow_homes;	/* hopscotch leaves: home buckets flagged as overflowed */
	uint64_t	used_bytes;		/* bytes of the nodes that carry data (dm_node_used_bytes) */
	uint64_t	leaf_used_bytes;	/* the same, of the leaves */
	uint64_t	sep_sfx_bytes;	/* suffix bytes of inner nodes' separators (VAR trees) */
	/*
	 * Sorted leaves: boundaries between two non-empty neighbours whose fence
	 * is not the one a split would put between the entries around it
	 * (dm_tree_leaf_bound; VAR: the truncated separator).  0 right after a
	 * bulk load; later inserts and deletes make some.
	 */
	uint64_t	loose_leaf_fences;
} dm_tree_stats;
extern int	dm_tree_stats_get(dm_tree *t, dm_tree_stats *st);

/*
 * Verify every invariant: each node validates (checksum), entries strictly
 * ascending inside fences, sibling chains consistent (next.low == prev.high,
 * first low = MIN, last high = INF), children one level below with fences
 * matching their separators, and level-M subtrees on one memnode.  On
 * failure returns DM_ERR_CORRUPT and describes the first problem in msg.
 * *entries (may be NULL) receives the number of leaf entries.
 */
extern int	dm_tree_verify(dm_tree *t, uint64_t *entries, char *msg, size_t msglen);

/*
 * Take empty leaves out of the tree and keep their nodes for reuse by later
 * splits (dm_tree_reclaim.c; DESIGN.md §5).  A leaf is taken out when it is
 * empty and not the first child of its parent; at most as many per pass as
 * the tree's reuse list (8191 nodes) has room for.  Run by one process per
 * tree at a time (VACUUM); readers and writers may run concurrently.
 */
typedef struct dm_reclaim_result
{
	uint64_t	parents;		/* level-1 nodes visited */
	uint64_t	leaves;			/* leaves seen */
	uint64_t	empty_leaves;	/* of which empty */
	uint64_t	leaves_reclaimed;	/* taken out now */
	uint64_t	free_nodes;		/* in the reuse list afterwards */
} dm_reclaim_result;
extern int	dm_tree_reclaim(dm_tree *t, dm_reclaim_result *res);
/*
 * The nodes in the tree's reuse list (up to max of them in addrs, which may
 * be NULL); *n counts them all.
 */
extern int	dm_tree_reuse_list(dm_tree *t, dm_gaddr *addrs, int max, int *n);

/*
 * Compute-side cache and key ownership (DESIGN.md §6–§7, DEX §4–§5).
 *
 * A tree's key space is split into ranges, each owned by one compute
 * instance; the partition map lives in remote memory (meta word 7 of the
 * tree's catalog entry points to it) with an epoch.  Without a stored map
 * the whole key space belongs to instance 0.  Range i holds keys
 * [lo[i], lo[i+1]); the last range runs to the end and holds the NULLs.
 *
 * dm_tree_use_cache() reads the map and makes this handle work as part of
 * `instance`: writes of keys the instance does not own fail with
 * DM_ERR_NOTOWNER, and, with a cache (may be NULL), nodes are read through
 * it.  Nodes whose fences lie inside the instance's ranges ("owned") are
 * written under the cache frame's local lock only — every process of the
 * instance writes them through the same cache, and no other instance
 * writes them — straight through to remote memory before the write
 * returns.  Nodes that straddle a boundary ("shared") are written under the
 * remote lock as well; cached copies of shared inner nodes may be stale and
 * are refreshed when a descent finds them so (fences); shared and foreign
 * leaves are never cached.  All handles of one instance that write a tree
 * must use the same cache (or none: then none may).
 */
#define DM_PART_MAX 64

typedef struct dm_partition_map
{
	uint64_t	epoch;
	int			n;
	uint64_t	lo[DM_PART_MAX];	/* lo[0] = 0, strictly ascending */
	uint32_t	instance[DM_PART_MAX];
} dm_partition_map;

struct dm_cache;
extern int	dm_tree_use_cache(dm_tree *t, struct dm_cache *cache, uint32_t instance);
extern int	dm_tree_partitions_get(dm_tree *t, dm_partition_map *m);
/*
 * Store a new map (epoch = old epoch + 1).  Instances pick it up at their
 * next dm_tree_use_cache() or dm_tree_partitions_refresh(); the caller
 * makes sure no instance writes keys that change hands meanwhile.
 */
extern int	dm_tree_partitions_set(dm_tree *t, const dm_partition_map *m);
/*
 * Re-read the map if it changed (one 8-byte read when it did not: a new
 * map is always a new block); if its epoch changed, drop the tree's cached
 * nodes and set *changed (may be NULL).
 */
extern int	dm_tree_partitions_refresh(dm_tree *t, int *changed);
/* The map as this handle last read it (no remote access). */
extern void dm_tree_partitions_cached(const dm_tree *t, dm_partition_map *m);
/* Most ranges a map of this tree can have. */
extern int	dm_tree_partitions_capacity(const dm_tree *t);
/* The instance whose range of map m holds key. */
extern int	dm_tree_map_owner(const dm_partition_map *m, uint64_t key);
/*
 * Single-writer mode (PostgreSQL: only the primary writes): writes of keys
 * this instance does not own are allowed instead of failing with
 * DM_ERR_NOTOWNER.  The nodes they touch are classified as before (foreign
 * or shared: written under the remote lock, not kept in the cache), so the
 * map still decides what this instance caches.  Only safe when no other
 * instance writes the tree: an owner writes its owned nodes without the
 * remote lock over tcp, relying on being their only writer.
 */
extern void dm_tree_write_any_key(dm_tree *t, int on);
/*
 * Compare every cached node of this tree with remote memory: an owned node
 * must be identical (write-through), a shared one may only be older.
 * DM_ERR_CORRUPT with a description in msg otherwise; *checked (may be
 * NULL) counts the frames compared.  Nodes evicted meanwhile are skipped.
 */
extern int	dm_tree_verify_cache(dm_tree *t, uint64_t *checked, char *msg, size_t msglen);
/* Whether this handle's instance owns key (NULLs: key UINT64_MAX). */
extern int	dm_tree_owns_key(const dm_tree *t, uint64_t key);
/* Whether it owns every key (the default map, for instance 0). */
extern int	dm_tree_owns_all(const dm_tree *t);

/*
 * Write tracking, for caches of other compute instances that learn of this
 * handle's writes (PostgreSQL: the primary WAL-logs them for its hot
 * standbys).  With tracking on, every node the handle writes (changed,
 * new, repaired, a new root) is remembered; dm_tree_written_nodes returns
 * them sorted without duplicates and starts a new list (the array is the
 * handle's, valid until its next call).  *overflow is set when more than
 * DM_TREE_WLOG_MAX were written, or an offloaded write's outcome is unknown
 * (dm_offload.h): the list is then incomplete and the caller must
 * invalidate the whole tree instead.  Nodes an offload executor wrote for
 * this handle are in the list too.
 */
#define DM_TREE_WLOG_MAX 65536
extern void dm_tree_track_writes(dm_tree *t, int on);
extern const dm_gaddr *dm_tree_written_nodes(dm_tree *t, int *n, int *overflow);
/* The tag this handle's nodes have in a compute-side cache (dm_cache_tree_tag). */
extern uint64_t dm_tree_cache_tag(const dm_tree *t);

/*
 * Read-only replica handles (DESIGN.md §7).  A handle in replica mode reads
 * the tree like any other (lookups, scans, verify, statistics) but never
 * changes remote memory: every write, CAS, lock, node grant or redo-slot
 * allocation, free, lock takeover or repair is refused with
 * DM_ERR_REPLICA before anything is sent.  A node found mid-write (DIRTY)
 * is read again until the client's op timeout, then DM_ERR_TIMEOUT: the
 * writer's side repairs a node whose writer died, a replica never does.
 * Through a cache, a replica keeps no leaf (unless coherent, below) and
 * treats every inner node as shared (possibly stale: descents correct
 * themselves by fences).  Set the mode right after opening, before the
 * handle is used.
 */
extern void dm_tree_set_replica(dm_tree *t, int on);
/*
 * A replica whose cache is told of every remote write of the tree before
 * it can matter (dm_cache_invalidate_nodes; PostgreSQL: the primary's WAL,
 * src/pg/dmwal.c) keeps the leaves of its own key ranges too.
 */
extern void dm_tree_set_replica_coherent(dm_tree *t, int on);
extern int	dm_tree_is_replica(const dm_tree *t);
/*
 * Whether the catalog still holds this very tree (DM_OK) or not
 * (DM_ERR_NOTFOUND: dropped, perhaps its slot reused): tells a replica
 * whose reads fail validation that its writer freed the tree under it.
 */
extern int	dm_tree_check_exists(dm_tree *t);

/*
 * The removal horizon: a per-tree 64-bit word in the catalog entry (meta
 * word 11), zero at creation, that a writer raises (monotonic maximum)
 * before it deletes entries that readers elsewhere might still need; what
 * the value means is the caller's (the access method stores a full
 * transaction id).  dm_tree_horizon_raise returns only once the new value
 * is stored, so a delete issued after it can only be observed by a read
 * that comes after the horizon changed.  A replica handle reads the word
 * after every node read (same batch when on the same memnode) and
 * dm_tree_horizon_seen() gives the largest value it has read: a reader
 * that read a leaf after a delete has seen the horizon raised before it.
 */
extern int	dm_tree_horizon_raise(dm_tree *t, uint64_t horizon);
extern int	dm_tree_horizon_get(dm_tree *t, uint64_t *horizon);
extern uint64_t dm_tree_horizon_seen(const dm_tree *t);

/*
 * Writers and fencing (DESIGN.md §7, Failover; dm_tree_writer.c).  A tree
 * has one writer word (epoch in bits 48..63, an identity of the user's
 * choice below) and a high-water mark.  A handle writes under the writer
 * word it adopted (at open: the current one); every write batch is guarded
 * by a fence word on each memnode it touches, so once another handle took
 * the tree over (raised the epoch), this one's writes fail with
 * DM_ERR_FENCED and land nothing.
 */
#define DM_WRITER_EPOCH(w) ((uint32_t) ((w) >> 48))
#define DM_WRITER_IDENT(w) ((w) & UINT64_C(0xFFFFFFFFFFFF))
#define DM_WRITER_MAKE(epoch, ident) (((uint64_t) (epoch) << 48) | ((ident) & UINT64_C(0xFFFFFFFFFFFF)))
#define DM_WRITER_EPOCH_MAX 0xFFFF
/* A high-water mark no writer reaches: the tree is unusable for its writer (the user decides so). */
#define DM_WRITER_POISON UINT64_MAX

/* Remote read of the writer word and the high-water mark (either may be NULL). */
extern int	dm_tree_writer_read(dm_tree *t, uint64_t *word, uint64_t *high_water);
/* The word this handle writes under. */
extern uint64_t dm_tree_writer_word(const dm_tree *t);
/* Write under this word from now on. */
extern void dm_tree_writer_adopt(dm_tree *t, uint64_t word);
/* Refuse every write of this handle (DM_ERR_FENCED) without a remote op. */
extern void dm_tree_writer_refuse(dm_tree *t);
extern int	dm_tree_writer_refused(const dm_tree *t);
/*
 * Take the tree over: CAS the writer word from expected to word (whose
 * epoch must be higher); *seen gets what was there (the takeover happened
 * only if *seen == expected: else re-read and decide again).  On success
 * the other memnodes' fence words are raised and the handle writes under
 * word; then the high-water mark is read again — final now: it covers every
 * write of the old writer that landed — (dm_tree_writer_high_water tells
 * it) and raised to high_water if lower.  When it returns, no batch of a
 * writer under an older word can land any more.
 */
extern int	dm_tree_writer_takeover(dm_tree *t, uint64_t expected, uint64_t word,
									uint64_t high_water, uint64_t *seen);
/*
 * Raise the high-water mark to at least mark (never lowers it; fenced like
 * a write).  No remote op when this handle already saw it that high.
 */
extern int	dm_tree_writer_raise(dm_tree *t, uint64_t mark);
/* The high-water mark as this handle last saw it. */
extern uint64_t dm_tree_writer_high_water(const dm_tree *t);
/*
 * The next write of this handle depends on mark: raise the mark to it before
 * that write lands.  No remote op here: the batch that writes the node
 * carries the raise (a fetch-and-max after its fence guard), so it costs no
 * round trip of its own; where a batch cannot carry it (the node on another
 * memnode than the mark, a ucx transport), the write raises it first.
 */
extern void dm_tree_writer_require(dm_tree *t, uint64_t mark);
/* Raise what dm_tree_writer_require asked for now (a write that carries no raise). */
extern int	dm_tree_writer_settle(dm_tree *t);

/* Counters of this handle (on top of the client's transport counters). */
typedef struct dm_tree_counters
{
	uint64_t	node_reads;
	uint64_t	read_retries;	/* validation failures (torn or locked) */
	uint64_t	lock_retries;
	uint64_t	lock_takeovers;
	uint64_t	splits;
	uint64_t	root_grows;
	uint64_t	restarts;		/* descents restarted from the root */
	uint64_t	fenced_writes;	/* writes whose version guard failed (redone) */
	uint64_t	fenced_off;		/* batches refused by the writer fence (DM_ERR_FENCED) */
	uint64_t	root_repairs;	/* unfinished root splits this handle finished */
	uint64_t	node_repairs;	/* torn nodes of dead writers rewritten from their redo slot */
	uint64_t	redo_slots;		/* redo slots (one node each) this handle holds now */
	uint64_t	nodes_unlinked;	/* nodes it allocated that never got linked: a split redone
								 * after its write was fenced off, a new root another grower
								 * beat (leaked until the tree is dropped) */
	uint64_t	leaves_reclaimed;	/* empty leaves this handle took out (dm_tree_reclaim) */
	uint64_t	nodes_reused;	/* nodes its splits took from the tree's reuse list */
	uint64_t	unlinks_finished;	/* unlinks of a dead reclaimer this handle finished */
	uint64_t	dead_leaves_revived;	/* half-dead VAR leaves it brought back because their
										 * left neighbour had no room for their high fence */
	uint64_t	redo_slots_lost;	/* redo slots it left to the tree instead of freeing them:
									 * a write of its abandoned (timed out) may still use them */
	uint64_t	hop_reads;		/* lookups answered by one neighbourhood read (hopscotch leaves) */
	uint64_t	hop_retries;	/* neighbourhood reads that did not validate (torn or mid-write) */
	uint64_t	hop_whole;		/* lookups answered from one whole leaf: its home overflowed,
								 * the leaf was cached or is the root */
	uint64_t	hop_fallbacks;	/* lookups that went to the iterator instead (the key may go
								 * on past the leaf, the leaf moved, retries spent) */
	uint64_t	hop_spec_hits;	/* lookups answered by a speculative read (hotspot buffer):
								 * the leaf's version and checksum unchanged */
	uint64_t	hop_spec_stale;	/* speculative reads rejected (the leaf was written, freed or
								 * reused since): answered the ordinary way */
	uint64_t	hinted_descents;	/* one-sided descents started where the offload policy's
									 * cache walk missed, not at the root (dm_offload.c) */
} dm_tree_counters;
extern void dm_tree_get_counters(const dm_tree *t, dm_tree_counters *out);

/* The description of the last error of this handle. */
extern const char *dm_tree_error(const dm_tree *t);

#endif							/* DM_TREE_H */
