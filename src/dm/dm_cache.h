/*
 * dm_cache.h — the compute-side node cache (DEX §5; DESIGN.md §6): frames
 * holding copies of remote tree nodes, shared by every process of one
 * compute instance (PostgreSQL backends, or benchmark processes forked
 * after the mapping was made).  It lives in one caller-provided piece of
 * shared memory and uses no pointers inside it, so it works wherever that
 * memory is mapped.
 *
 * Pieces (all synchronised with atomics and small per-bucket spinlocks; no
 * global lock or global list on the hot path):
 *
 *  - frames: node_size bytes of node plus a header with an optimistic
 *    version lock (even = free, odd = held by a writer; readers copy and
 *    re-check), the node's identity (tree tag, global address), its state
 *    (FREE, IO, HOT, COOLING), level, and the frame of the parent it was
 *    reached from;
 *  - swizzled child pointers: an inner node's frame has, parallel to its
 *    child entries, a "hint" per child naming the frame that holds the
 *    child.  A descent that finds a hint goes straight to that frame (no
 *    mapping-table lookup); hints are validated by the target frame's
 *    identity, so stale ones are harmless.  Keeping them beside the node
 *    rather than inside it leaves the node image identical to remote memory:
 *    write-through needs no unswizzling and checksums stay valid;
 *  - the mapping table: a hash of chains from (tree tag, address) to frame,
 *    one spinlock per bucket.  A frame in state IO is the "I/O flag": one
 *    process is fetching that node and everybody else reads it remotely or
 *    waits, instead of fetching it again;
 *  - the cooling map: a hash table of small FIFO arrays (one cache line
 *    each) holding eviction candidates.  A process needing a frame samples
 *    random HOT frames and cools them — path-aware: an inner node delegates
 *    the cooling to a HOT child it points to, so a parent cools only after
 *    its children — then evicts the oldest candidate of a random bucket.
 *    Touching a COOLING node makes it HOT again (second chance).
 *
 *  - the instance's hotspot buffer (dm_cache_hotspot): the table of keys
 *    whose hopscotch lookups speculate (dm_tree_hot.c), kept here so that
 *    every process of the instance shares it; its slots are dm_hot.c's.
 *
 * Write-through: the cache never holds data remote memory does not have, so
 * an evicted frame needs no write-back, and a crash loses nothing.
 */
#ifndef DM_CACHE_H
#define DM_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "dm_types.h"

typedef struct dm_cache dm_cache;

#define DM_FRAME_NONE		UINT32_MAX
#define DM_CACHE_LEVELS		8		/* statistics by level; deeper levels count in the last */
#define DM_CACHE_MAX_FRAMES	(UINT32_C(1) << 30)		/* statistics by level; deeper levels count in the last */

/* What a cache admits (the policy is fixed when the cache is created). */
typedef enum dm_cache_policy
{
	DM_CACHE_OFF = 0,			/* no caching: every node read is remote */
	DM_CACHE_INNER = 1,			/* inner nodes only (Sherman's policy) */
	DM_CACHE_DEX = 2			/* inner nodes always, leaves with a probability (DEX) */
} dm_cache_policy;

typedef struct dm_cache_config
{
	uint32_t	frame_size;		/* bytes of node per frame: the largest node size cached */
	uint32_t	nframes;		/* capacity in frames (16 .. DM_CACHE_MAX_FRAMES) */
	dm_cache_policy policy;
	uint32_t	leaf_admit_permille;	/* DEX: chance (0..1000) that a leaf read is admitted */
	uint32_t	cooling_percent;	/* cooling map capacity as % of frames (1..50; 0 = 10) */
	/*
	 * keys the instance's hotspot buffer holds (dm_cache_hotspot): 0 =
	 * DM_CACHE_HOTSPOT_DEFAULT, DM_CACHE_HOTSPOT_NONE = no buffer; at most
	 * DM_CACHE_HOTSPOT_MAX.  64 bytes each, on top of the frames.
	 */
	uint32_t	hotspot_entries;
	/*
	 * DEX: chance (0..1000) that a leaf a hopscotch point lookup missed is
	 * admitted (dm_cache_should_admit_lookup); 0 = DM_CACHE_HOP_ADMIT_DEFAULT,
	 * DM_CACHE_HOP_ADMIT_NEVER = never.  Such a lookup reads one
	 * neighbourhood (216 B at 1 KiB, H = 8), so admitting reads the whole
	 * leaf for the cache alone, where a sorted leaf's miss reads it anyway
	 * (leaf_admit_permille): docs/design.md §5.1 measures the two rates.
	 */
	uint32_t	hop_admit_permille;
} dm_cache_config;

#define DM_CACHE_HOP_ADMIT_DEFAULT	10
#define DM_CACHE_HOP_ADMIT_NEVER	UINT32_MAX

#define DM_CACHE_HOTSPOT_DEFAULT	32768
#define DM_CACHE_HOTSPOT_NONE		UINT32_MAX
#define DM_CACHE_HOTSPOT_MAX		(UINT32_C(1) << 24)

/* Bytes of shared memory a cache of this configuration needs. */
extern size_t dm_cache_shmem_size(const dm_cache_config *cfg);
/*
 * Frames that fit in `bytes` of shared memory with this frame size (0 if
 * too small), with no hotspot buffer: a buffer's memory comes on top.
 */
extern uint32_t dm_cache_frames_for_bytes(size_t bytes, uint32_t frame_size);

/*
 * Initialise a cache in mem (len bytes, 64-byte aligned, shared between the
 * processes that will use it, zeroed or not).  NULL if cfg is invalid or
 * len too small.  Other processes use the same pointer (dm_cache_attach
 * checks a mapping made elsewhere).
 */
extern dm_cache *dm_cache_init(void *mem, size_t len, const dm_cache_config *cfg);
extern dm_cache *dm_cache_attach(void *mem);

extern dm_cache_policy dm_cache_get_policy(const dm_cache *c);

/*
 * The instance's hotspot buffer (docs/design.md §5.1, dm_hot.h): the slots
 * of the table in the cache's memory and *nsets its sets (0 and NULL: the
 * cache has none).  Every handle that uses this cache speculates with it,
 * so one process's pin serves every process of the instance.
 */
struct dm_hot_slot;
extern struct dm_hot_slot *dm_cache_hotspot(dm_cache *c, uint32_t *nsets);
extern uint32_t dm_cache_frame_size(const dm_cache *c);
extern uint32_t dm_cache_nframes(const dm_cache *c);
/* Whether the policy admits a node of this level (leaves: by coin toss for DEX). */
extern int	dm_cache_should_admit(dm_cache *c, int level);
/* The same for a leaf a hopscotch point lookup missed (hop_admit_permille). */
extern int	dm_cache_should_admit_lookup(dm_cache *c);
/* Whether the policy caches nodes of this level at all (writes go through frames then). */
extern int	dm_cache_caches_level(const dm_cache *c, int level);

/*
 * A tree tag identifies one incarnation of one tree (tree id mixed with
 * its home memnode's incarnation), so frames of a dropped tree, or of a
 * memnode that restarted and reuses addresses, can never be hit.
 */
extern uint64_t dm_cache_tree_tag(uint64_t tree_id, uint64_t incarnation);

/* ---- reading ------------------------------------------------------------ */

/*
 * Find the frame holding (tag, addr): first the hint (a frame number or
 * DM_FRAME_NONE), then the mapping table.  Returns the frame, or
 * DM_FRAME_NONE (*io, may be NULL, is set when a fetch is in progress).
 */
extern uint32_t dm_cache_lookup(dm_cache *c, uint64_t tag, dm_gaddr addr, uint32_t hint, int *io);

/* Results of dm_cache_copy. */
#define DM_CACHE_COPIED		0	/* buf holds a consistent copy */
#define DM_CACHE_GONE		1	/* the frame no longer holds (tag, addr): look up again */
#define DM_CACHE_BUSY		2	/* a writer or fetch held it too long: read remotely */

/*
 * Copy the node in frame f into buf (len bytes) if the frame holds
 * (tag, addr), and its child hints into hints (may be NULL; room for
 * dm_cache_hint_slots entries).  Waits while a writer holds the frame.
 * A COOLING frame becomes HOT again.  *level (may be NULL) gets its level.
 * Counts a hit (and the round trip and bytes it saved).
 */
extern int	dm_cache_copy(dm_cache *c, uint32_t f, uint64_t tag, dm_gaddr addr,
						  void *buf, uint32_t len, uint32_t *hints, int *level);
/*
 * A frame's stamp: a 64-bit value its admitter keeps with the copy, read
 * together with it.  The tree puts there, on a replica, the removal horizon
 * read with the node (dm_tree_replica.c): a reader of the cached copy must
 * learn of every removal the copy reflects.  Set between
 * dm_cache_admit_begin and the finish (0 otherwise).
 */
extern void dm_cache_set_stamp(dm_cache *c, uint32_t f, uint64_t stamp);
extern int	dm_cache_copy_stamped(dm_cache *c, uint32_t f, uint64_t tag, dm_gaddr addr,
								  void *buf, uint32_t len, uint32_t *hints, int *level, uint64_t *stamp);
extern uint32_t dm_cache_hint_slots(const dm_cache *c);

/* Remember that child `slot` of the node in frame parent is in frame child. */
extern void dm_cache_set_hint(dm_cache *c, uint32_t parent, int slot, uint32_t child);

/* ---- admission ---------------------------------------------------------- */

/*
 * Start admitting (tag, addr): returns a frame in state IO, locked and
 * registered in the mapping table, for the caller to fill from remote
 * memory and then finish or abort.  DM_FRAME_NONE when the node is already
 * cached or being fetched (*existing gets that frame, or DM_FRAME_NONE when
 * it is in IO), or when no frame could be freed.
 */
extern uint32_t dm_cache_admit_begin(dm_cache *c, uint64_t tag, dm_gaddr addr, uint32_t *existing);
/*
 * Fill the frame with node (len bytes) of this level and make it HOT.
 * parent/slot (DM_FRAME_NONE / -1 if unknown) record where it was reached
 * from and swizzle the parent's hint.  keep_locked leaves the frame locked
 * for the caller (a writer that admitted the node to write it).
 */
extern void dm_cache_admit_finish(dm_cache *c, uint32_t f, const void *node, uint32_t len, int level,
								  uint32_t parent, int slot, int keep_locked);
extern void dm_cache_admit_abort(dm_cache *c, uint32_t f);

/*
 * Invalidation by address, for a cache whose nodes are written by somebody
 * else (a hot standby's, told by its primary's WAL which nodes changed).
 * A reader that admits a node it read remotely takes the generation
 * (dm_cache_inval_gen) after dm_cache_admit_begin and before its remote
 * read, and finishes with dm_cache_admit_finish_gen: if any invalidation
 * started meanwhile, the admission is abandoned (returns 0; the caller may
 * still use what it read, which is as fresh as any remote read), so a copy
 * read before an invalidation can never be admitted after it.
 * dm_cache_invalidate_nodes bumps the generation, then drops each node
 * (waiting out fetches in progress); returns the frames it dropped.
 */
/*
 * Offloaded writes whose outcome is unknown (dm_offload.c): their tokens,
 * per tree, until a process using the tree has drained them at the
 * memnode (dm_tree_drain_settle) and dropped the tree's frames.  Shared,
 * because another process may cache a node before such a write lands.
 * Entries name the tree by id (its cache tag changes when its home memnode
 * restarts) and the tag it had.  dm_cache_drain_add returns -1 when the
 * table is full; dm_cache_drains copies at most max entries of the tree
 * (0 at once when there are none: one load); dm_cache_drains_done removes
 * the given entries; dm_cache_drains_forget every entry of a tree that is
 * gone (dropped: nobody will use it to drain them).
 */
#define DM_CACHE_DRAINS 256

typedef struct dm_cache_drain
{
	uint64_t	tree_id;
	uint64_t	tag;
	uint64_t	token;
	uint32_t	memnode;
	uint32_t	used;
} dm_cache_drain;

extern int	dm_cache_drain_add(dm_cache *c, uint64_t tree_id, uint64_t tag, uint16_t memnode, uint64_t token);
extern int	dm_cache_drains(dm_cache *c, uint64_t tree_id, dm_cache_drain *out, int max);
extern void dm_cache_drains_done(dm_cache *c, const dm_cache_drain *done, int n);
extern void dm_cache_drains_forget(dm_cache *c, uint64_t tree_id);

extern uint64_t dm_cache_inval_gen(dm_cache *c);
extern int	dm_cache_admit_finish_gen(dm_cache *c, uint32_t f, const void *node, uint32_t len, int level,
									  uint32_t parent, int slot, uint64_t gen);
extern uint32_t dm_cache_invalidate_nodes(dm_cache *c, uint64_t tag, const dm_gaddr *addrs, int n);
/* Bump the generation and drop every frame of every tree; returns frames dropped. */
extern uint32_t dm_cache_invalidate_all(dm_cache *c);
/*
 * Put a HOT frame straight into the cooling map: a node admitted only
 * because it was written (writes go through frames) that the admission
 * policy would not have taken.  It stays unless it is touched again before
 * its bucket evicts it, so written-once leaves do not push out hot nodes.
 */
extern void dm_cache_make_cold(dm_cache *c, uint32_t f);

/* ---- writing ------------------------------------------------------------- */

/*
 * Take the frame's local write lock if it (still) holds (tag, addr); waits
 * for other writers and for a fetch in progress.  0 = locked (buf, may be
 * NULL, gets the node), DM_CACHE_GONE = it was evicted meanwhile.
 */
extern int	dm_cache_lock(dm_cache *c, uint32_t f, uint64_t tag, dm_gaddr addr, void *buf, uint32_t len);
/*
 * Release the lock; node (len bytes, may be NULL = unchanged) becomes the
 * frame's content.  A changed inner node loses its hints (entries moved).
 */
extern void dm_cache_unlock(dm_cache *c, uint32_t f, const void *node, uint32_t len);
/* Drop the frame while holding its lock (its content can no longer be trusted). */
extern void dm_cache_unlock_drop(dm_cache *c, uint32_t f);

/*
 * Drop (tag, addr) if cached (e.g. a node a bulk load replaced); returns 1
 * if this call dropped it.  Waits while another caller admits it, so the
 * caller must not be admitting that node itself.
 */
extern int	dm_cache_invalidate(dm_cache *c, uint64_t tag, dm_gaddr addr);
/*
 * Drop every frame of a tree (dropped, or its ownership changed); returns
 * frames dropped.  It waits for each frame of the tree that another caller
 * has locked or is admitting, so the caller must hold none of them itself.
 */
extern uint32_t dm_cache_invalidate_tree(dm_cache *c, uint64_t tag);

/*
 * The first frame at or after `start` holding a node of tree `tag`
 * (*addr gets its address), or DM_FRAME_NONE.  For checks and tests.
 */
extern uint32_t dm_cache_next_frame(dm_cache *c, uint64_t tag, uint32_t start, dm_gaddr *addr);

/* ---- statistics ------------------------------------------------------------ */

typedef struct dm_cache_stats
{
	uint32_t	policy;
	uint32_t	frame_size;
	uint64_t	nframes;
	uint64_t	cooling_capacity;	/* slots in the cooling map */
	uint64_t	frames_used[DM_CACHE_LEVELS];	/* HOT or COOLING frames, by level */
	uint64_t	frames_cooling;
	uint64_t	hits[DM_CACHE_LEVELS];
	uint64_t	misses[DM_CACHE_LEVELS];
	uint64_t	hint_hits;		/* hits through a swizzled pointer (no table lookup) */
	uint64_t	admissions;
	uint64_t	admit_skipped;	/* leaves not admitted by the coin toss */
	uint64_t	evictions;
	uint64_t	coolings;		/* frames put in the cooling map */
	uint64_t	delegations;	/* cooling passed from a parent to a child */
	uint64_t	promotions;		/* COOLING frames touched and made HOT again */
	uint64_t	io_waits;		/* lookups that found a fetch in progress */
	uint64_t	no_frame;		/* admissions abandoned: no frame could be freed */
	uint64_t	invalidations;
	uint64_t	local_writes;	/* writes under the local lock only (owned nodes) */
	uint64_t	round_trips_avoided;	/* remote reads and lock operations not issued */
	uint64_t	bytes_avoided;
} dm_cache_stats;

extern void dm_cache_stats_get(dm_cache *c, dm_cache_stats *st);
extern void dm_cache_stats_reset(dm_cache *c);
/* Counted by the tree code: a node of this level found in the cache by a writer (bytes not read). */
extern void dm_cache_count_hit(dm_cache *c, int level, uint32_t bytes);
/* Counted by the tree code: a node of this level read remotely. */
extern void dm_cache_count_miss(dm_cache *c, int level);
/* Counted by the tree code: a write that needed no remote lock (saves a CAS round trip and the unlock). */
extern void dm_cache_count_local_write(dm_cache *c);

/*
 * Consistency check for tests: every HOT/COOLING frame is in the mapping
 * table under its identity exactly once, no FREE frame is, chains have no
 * cycles, and cooling slots name real frames.  0 = fine; otherwise msg
 * says what is wrong.  Call it while nobody uses the cache.
 */
extern int	dm_cache_check(dm_cache *c, char *msg, size_t msglen);

#endif							/* DM_CACHE_H */
