/*
 * dm_tree_int.h — internals of the remote tree shared by its files (the
 * list and the order to read them in: src/dm/README): the handle, the
 * small helpers all of them use, and what each file offers the others,
 * under the name of the file.
 */
#ifndef DM_TREE_INT_H
#define DM_TREE_INT_H

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "dm_cache.h"
#include "dm_hot.h"
#include "dm_node.h"

#define DM_TREE_META_MAGIC UINT64_C(0x444D5452)	/* "DMTR" */
#define DM_TREE_FORMAT 1
#define DM_TREE_FORMAT_HOP 2	/* leaves are hopscotch leaves (meta word 14): older builds refuse */
#define DM_TREE_FORMAT_VAR 3	/* key format VAR: VAR nodes (§5.2), which older builds cannot read */
#define DM_TREE_MAX_LEVELS 16

/* This handle's current grant of nodes on one memnode (dm_tree_alloc.c). */
typedef struct dm_slab
{
	uint16_t	memnode;
	uint32_t	grant;			/* nodes to ask for next time (0: one) */
	dm_gaddr	cur;			/* next free node, 0 = no grant */
	dm_gaddr	end;
} dm_slab;

struct dm_tree
{
	dm_client  *c;
	dm_tree_name name;
	dm_tree_info info;			/* catalog entry on the home memnode */
	uint16_t	home;
	uint32_t	node_size;
	int			leaf_cap;
	int			leaf_hop;		/* new leaves are hopscotch leaves with this neighbourhood; 0 = sorted */
	int			key_var;		/* key format VAR: every node is a VAR node (dm_node_var.h) */
	int			inner_cap;
	int			placement_level;	/* M */
	int			nmemnodes;
	uint16_t	memnodes[DM_TREE_MAX_MEMNODES];
	int			lock_timeout_ms;
	uint64_t	token;			/* identifies this handle in lock words */
	uint64_t	lock_seq;		/* makes every acquisition's lock value different */
	/* redo slot of this handle on each memnode it writes over shm (dm_tree_io.c); 0 = none yet */
	dm_gaddr	redo[DM_TREE_MAX_MEMNODES];
	uint64_t	redo_tag[DM_TREE_MAX_MEMNODES];	/* the tag in its first word (dm_tree_io.c) */
	int			repairing;		/* dm_node_read is waiting to repair a node: no recursion */
	dm_gaddr	root;			/* cached root address (0 = read the root word) */
	unsigned	rr;				/* round-robin cursor for placement above level M */
	dm_slab		slabs[DM_TREE_MAX_MEMNODES];
	int			alloc_bulk;		/* a bulk load is running: large grants */
	dm_tree_counters ctr;
	/*
	 * the handle's own hotspot buffer (dm_tree_hot.c), used when it has no
	 * cache (else the cache's, the instance's): hot.slots NULL until used
	 */
	dm_hot_table hot;
	dm_hot_table hot_shared;	/* the cache's buffer, as dm_tree_hot_table last found it */
	/* the tree's reuse list (dm_tree_reclaim.c) */
	dm_gaddr	reuse_blk;		/* its block, 0 = not known yet */
	uint64_t	reuse_hint;		/* its count word when last read */
	unsigned	reuse_pop_win;	/* window of the block to look at first for a free node */
	unsigned	reuse_push_win;	/* and for an empty slot */
	unsigned	reuse_probe;	/* calls that did not look */

	/* cache and ownership (dm_tree_own.c) */
	dm_cache   *cache;			/* NULL: every read is remote */
	uint64_t	ctag;			/* this tree's tag in the cache */
	uint32_t	root_frame;		/* hint: the frame that held the root */
	uint32_t   *hints;			/* child hints of the node fetched last */
	int			own_enforce;	/* classify nodes by the map (and refuse writes of keys not owned) */
	int			write_any;		/* the only writer: write every key, non-owned ones as foreign */
	uint32_t	instance;
	uint64_t	part_epoch;
	dm_gaddr	part_blk;		/* the map block part_epoch was read from (0: default map) */
	dm_partition_map map;		/* the whole map as last read */
	/* nodes written since the last dm_tree_written_nodes() (dm_tree_track_writes) */
	int			wlog_on;
	int			wlog_overflow;	/* more than DM_TREE_WLOG_MAX: the caller invalidates the tree */
	int			wlog_n;
	int			wlog_cap;
	dm_gaddr   *wlog;
	/* writer fencing (dm_tree_writer.c) */
	uint64_t	writer;			/* the writer word this handle writes under */
	int			writer_refused;	/* may not write at all (dm_tree_writer_refuse) */
	uint64_t	high_water;		/* the high-water mark as this handle last saw it */
	uint64_t	hw_want;		/* ... as the next write needs it (dm_tree_writer_require) */
	int			hw_carry;		/* 0 unknown, 1 node batches carry the raise, -1 they cannot */
	dm_gaddr	fence[DM_TREE_MAX_MEMNODES];	/* fence word per memnode position */

	int			nown;			/* owned ranges of entries [own_lo, own_hi), merged */
	dm_entry	own_lo[DM_PART_MAX];
	dm_entry	own_hi[DM_PART_MAX];	/* DM_ENTRY_INF: to the end */

	/*
	 * Offload executor mode (dm_tree_exec.c): the handle runs inside a
	 * memnode, starts its descents at exec_start (level exec_level) instead
	 * of the root, never leaves exec_memnode, splits nothing, and answers
	 * DM_ERR_FALLBACK whenever the operation needs more than that.
	 */
	int			exec_active;
	dm_gaddr	exec_start;
	int			exec_level;		/* -1: not known */
	int			exec_seen_level;	/* the start node's level as found */
	uint16_t	exec_memnode;
	dm_gaddr	exec_hw_word;	/* the tree's high-water word (on exec_memnode), 0 if not sent */
	int			exec_nchanged;	/* nodes written so far (at most DM_OFF_MAX_CHANGED kept) */
	dm_gaddr	exec_changed[DM_OFF_MAX_CHANGED];
	/*
	 * Where a one-sided descent for desc_hint_e may start instead of the
	 * root (0: nowhere): the node at which the offload policy's cache walk
	 * missed (dm_offload.c find_start), when it chose the one-sided path.
	 * That walk went through the cached levels above; the descent starts
	 * where it stopped instead of walking them again.  Its level (-1
	 * unknown), the cached parent's frame and child slot it was reached
	 * by, and its own frame if the walk found it cached (a leaf: then the
	 * lookup's read of it needs no search of the cache's table).  Used
	 * once, by the next descent for that same entry.
	 */
	dm_gaddr	desc_hint;
	dm_entry	desc_hint_e;
	int			desc_hint_level;
	uint32_t	desc_hint_pframe;
	int			desc_hint_slot;
	uint32_t	desc_hint_frame;
	/* offloading on the client side (dm_offload.c); NULL = off */
	struct dm_offload *off;
	const struct dm_offload_hooks *off_hooks;	/* set with off (below) */

	/* read-only replica mode (dm_tree_replica.c) */
	int			replica;		/* refuse every remote write, lock, allocation, free */
	int			replica_coherent;	/* every remote write reaches the cache as an invalidation */
	uint64_t	horizon_seen;	/* largest removal horizon read after a node read */
	char		err[512];
};

/*
 * Where a node was reached from, for admitting it with a swizzled pointer:
 * the parent's frame, the child's slot in it and the parent's hint for it.
 */
typedef struct dm_fetch_ctx
{
	uint32_t	pframe;
	int			slot;
	uint32_t	hint;
	dm_gaddr	suspect;		/* the parent, if it came from the cache and may be stale */
} dm_fetch_ctx;

#define DM_FETCH_CTX_NONE ((dm_fetch_ctx) {DM_FRAME_NONE, -1, DM_FRAME_NONE, 0})

/* A node held for writing: its frame's local lock and/or its remote lock. */
typedef struct dm_wlock
{
	dm_gaddr	addr;
	uint32_t	frame;			/* DM_FRAME_NONE: not cached */
	int			remote;			/* the remote lock is held too */
	uint64_t	held;			/* its value (dm_node_lock) */
	/*
	 * A hopscotch leaf's write may store only bytes [part_lo, part_hi) of
	 * its buckets (with the header's checksum and count): set by the
	 * writer after it changed the copy; 0, 0 = the whole node.
	 */
	uint32_t	part_lo;
	uint32_t	part_hi;
} dm_wlock;

/*
 * Internal status (never returned by the public API): a fenced write found
 * the node changed since it was read and wrote nothing; redo the operation.
 */
#define DM_TREE_STALE 1000

/* Ownership classes of a node's fence range. */
#define DM_OWN_FOREIGN	0		/* no key of it is ours */
#define DM_OWN_SHARED	1		/* straddles a boundary of ours */
#define DM_OWN_OWNED	2		/* all of it is ours */

/*
 * Small helpers every file of the tree uses, here rather than in one of
 * them so that no file depends on another for them.
 */
/* Note why an operation failed (dm_tree_error() returns it); returns status. */
static inline int dm_tree_fail(dm_tree *t, int status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
static inline int
dm_tree_fail(dm_tree *t, int status, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	return status;
}

/* A transport error: the client's message becomes the tree's. */
static inline int
dm_tree_transport_error(dm_tree *t, int rc)
{
	return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
}

static inline uint64_t
dm_tree_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

/* Back off after the k-th failed attempt: spin, then yield, then sleep. */
static inline void
dm_tree_backoff(int k)
{
	if (k < 4)
		return;
	if (k < 64)
	{
		sched_yield();
		return;
	}
	{
		struct timespec ts = {0, (k < 512 ? 20 : 200) * 1000};

		nanosleep(&ts, NULL);
	}
}

/* dm_tree_io.c */
extern int	dm_tree_read_root(dm_tree *t, dm_gaddr *root);
extern int	dm_node_read(dm_tree *t, dm_gaddr addr, void *buf);
/* Read several nodes in one round trip per memnode; each validated (retried alone). */
extern int	dm_node_read_many(dm_tree *t, const dm_gaddr *addrs, int n, uint8_t *bufs);
/*
 * Lock values with this bit set name the holder's redo slot (the rest, but
 * for the low 8 bits, is its address): the holder writes over shm, where
 * dying between two stores can leave a torn node (dm_tree_io.c).
 */
#define DM_LOCK_REDO (UINT64_C(1) << 63)
#define DM_LOCK_REDO_SLOT(v) ((v) & ~DM_LOCK_REDO & ~UINT64_C(0xFF))
/* The tag word of a redo slot while a write that uses it is under way (dm_tree_io.c). */
#define DM_REDO_BUSY UINT64_C(1)


/* Lock a node (CAS and read); *held gets the lock value to release it with. */
extern int	dm_node_lock(dm_tree *t, dm_gaddr addr, void *buf, uint64_t *held);
extern int	dm_node_unlock(dm_tree *t, dm_gaddr addr, uint64_t held);
/*
 * Write new (not yet reachable) nodes, then the locked node at addr with
 * its lock released, in this order (sealing each: version and checksum),
 * fenced by the version buf was read with (dm_tree_io.c): DM_TREE_STALE if
 * the node had changed since, and then nothing of it was written.  When
 * everything is on one memnode this is a single round trip.  A hopscotch
 * leaf written without new nodes stores only bytes [part_lo, part_hi) of
 * its buckets when part_hi > part_lo (the rest is unchanged: the guard
 * proves remote memory is our copy's version), and bytes [16, 32)
 * (checksum, count).
 */
extern int	dm_node_write_unlock(dm_tree *t, dm_gaddr addr, void *buf, uint64_t held,
								 int nnew, const dm_gaddr *new_addrs, uint8_t *const *new_bufs,
								 uint32_t part_lo, uint32_t part_hi);

/* dm_tree_redo.c */
/* Give this handle's redo slots back (dm_tree_alloc_release does, between operations). */
extern int	dm_tree_redo_release(dm_tree *t);
/*
 * The lock value for a write of the node at addr: over shm it names this
 * handle's redo slot on that memnode (allocated on first use; without one,
 * e.g. when the memnode is full, a plain value: no repair then).
 */
extern uint64_t dm_tree_lock_value(dm_tree *t, dm_gaddr addr);
/*
 * We hold the lock of the node at addr, taken over from `prev`.  If the
 * node is DIRTY and prev's redo slot holds this node's image for exactly
 * that version, store the image (the dead writer's write, finished).  1 if
 * repaired, 0 if there was nothing to repair, else -status.
 */
extern int	dm_tree_repair_locked(dm_tree *t, dm_gaddr addr, uint64_t prev);
/* The position of this handle's redo slot `slot` (-1: not one of ours now). */
extern int	dm_tree_redo_index(const dm_tree *t, dm_gaddr slot);
/*
 * Leave redo slot i to the tree (a batch of ours abandoned earlier claimed
 * it, or may): a new one is taken at the next lock.
 */
extern void dm_tree_redo_abandon(dm_tree *t, int i);

/* dm_tree_cacheio.c */
/*
 * Read a node through the cache: level is the expected level (-1 unknown),
 * ctx where it was reached from.  *frame (may be NULL) gets the frame the
 * copy came from or was admitted to, and t->hints that frame's child hints.
 */
extern int	dm_node_fetch(dm_tree *t, dm_gaddr addr, int level, dm_fetch_ctx ctx,
						  void *buf, uint32_t *frame);
/*
 * For a reader that can make do with part of the leaf at addr (hopscotch
 * lookups): 1 with a whole copy in buf if the cache holds the leaf or its
 * policy admits it now (read and admitted), 0 if neither (a miss is
 * counted: the caller reads what it needs), else -status.
 */
extern int	dm_node_fetch_if_cached(dm_tree *t, dm_gaddr addr, dm_fetch_ctx ctx, void *buf);
/* Lock a node for writing (the node is expected at `level`); buf gets it. */
extern int	dm_node_wlock(dm_tree *t, dm_gaddr addr, int level, dm_fetch_ctx ctx,
						  void *buf, dm_wlock *wl);
/*
 * Release it.  changed: write buf (sealed here) through to remote memory
 * first, after the new nodes (not yet reachable) in new_addrs/new_bufs;
 * DM_TREE_STALE if that write was fenced off (the node is released and its
 * frame dropped: lock it again and redo).
 */
extern int	dm_node_wunlock(dm_tree *t, dm_wlock *wl, void *buf, int changed,
							int nnew, const dm_gaddr *new_addrs, uint8_t *const *new_bufs);

/* dm_tree_alloc.c */
extern int	dm_node_alloc(dm_tree *t, uint16_t memnode, dm_gaddr *addr);
/* A bulk load begins (on = 1: large grants) or ends (0). */
extern void dm_tree_alloc_bulk(dm_tree *t, int on);
/* Memnode for a new node at level, split off a node on memnode `from`. */
extern uint16_t dm_tree_place(dm_tree *t, int level, uint16_t from);

/* dm_tree_wlog.c */
extern void dm_tree_wlog_add(dm_tree *t, dm_gaddr addr);
/* A write whose nodes are not known (an offload whose outcome is unknown): the list is incomplete. */
extern void dm_tree_wlog_lost(dm_tree *t);
/* dm_offload_drain.c: an offloaded write of unknown outcome, to drain before the cache is trusted again */
extern void dm_offload_remember_unknown(dm_tree *t, uint16_t mn, uint64_t token);
extern void dm_tree_wlog_free(dm_tree *t);
/*
 * Meta words of the catalog entry (word k at meta_addr + 8 * (k - 1)):
 * 1 magic/format/node size/placement, 2 memnodes and lock timeout, 3-6
 * memnode list, 7 partition map (dm_tree_own.c), 8 writer word, 9
 * high-water mark, 10 fence directory (dm_tree_writer.c), 11 removal
 * horizon (dm_tree_replica.c), 12 the reuse list of reclaimed nodes
 * (dm_tree_reclaim.c), 13 the count of redo slots ever tagged (their tags,
 * dm_tree_io.c), 14 the leaf format (0: sorted; else DM_LEAF_HOPSCOTCH in
 * bits 0-7 and the neighbourhood in bits 8-15, with format field 2 in word
 * 1), 15 unused (zero).
 */
#define DM_META_WORD_ADDR(t, k) ((t)->info.meta_addr + 8 * ((k) - 1))
#define DM_META_HORIZON 11
#define DM_META_REDO_TAGS 13
#define DM_META_LEAF 14

/* dm_tree_replica.c */
/*
 * DM_OK if the handle may write remote memory; else DM_ERR_REPLICA (with a
 * message naming what) — called by every function that writes, locks,
 * allocates or frees.
 */
extern int	dm_tree_writable(dm_tree *t, const char *what);
/*
 * Read a node (one attempt, not validated); a replica handle reads the
 * removal horizon after it, in the same batch when it lives on the same
 * memnode, and keeps the largest value seen.
 */
extern int	dm_tree_read_node_raw(dm_tree *t, dm_gaddr addr, void *buf);
/* After several nodes were read another way: read the horizon (replica handles). */
extern int	dm_tree_read_horizon_after(dm_tree *t);

/*
 * A new node for a split of a node on `memnode` (written in the same batch,
 * after that node's guard): from the handle's grant, or, when the grant is
 * used up, a free node of the tree's reuse list.  *version is what the new
 * node's version must start from (its seal adds one): 0 for fresh memory,
 * a reused node's last version otherwise.
 */
extern int	dm_node_alloc_split(dm_tree *t, uint16_t memnode, dm_gaddr *addr, uint64_t *version);

/* dm_tree_reuse.c */
/* Pop a free node on memnode (DM_ERR_NOTFOUND: none); *version its last version. */
extern int	dm_tree_reuse_pop(dm_tree *t, uint16_t memnode, dm_gaddr *addr, uint64_t *version);
/* Give back a popped node that was never written. */
extern int	dm_tree_reuse_return(dm_tree *t, dm_gaddr addr);
/* Put a free (DEAD, unlinked) node into an empty slot; *pushed = 0 if the list is full. */
extern int	dm_tree_reuse_push(dm_tree *t, dm_gaddr addr, int *pushed);
/* Free slots in the reuse list: how many leaves a reclaim pass may take out. */
extern int	dm_tree_reuse_free_slots(dm_tree *t, int *n);

/* dm_tree_reclaim.c */
/*
 * The locked node (wl, copy buf) has as right sibling a DEAD node (copy
 * rbuf) whose low fence is buf's high fence: finish that unlink (buf takes
 * its range; or, a VAR leaf with no room for the dead one's high fence,
 * brings the dead leaf back instead, rbuf used as scratch) and release the
 * lock.  DM_OK or DM_TREE_STALE; descend again.
 */
extern int	dm_tree_finish_unlink(dm_tree *t, dm_wlock *wl, void *buf, void *rbuf);

/* dm_tree_own.c */
extern int	dm_tree_own_class(const dm_tree *t, dm_entry low, dm_entry high);
/*
 * The class the cache uses for a node (its header): what dm_tree_own_class
 * says for its fences, except on a replica handle, where every leaf is
 * foreign and every inner node shared.  The one place that decides what a
 * handle may keep in the cache (dm_tree_cacheio.c) and what dm_tree_verify_cache
 * (dm_tree_verify.c) expects.
 */
extern int	dm_tree_node_class(const dm_tree *t, const void *hdr);
extern int	dm_tree_owns_entry(const dm_tree *t, dm_entry e);

/* dm_tree_writer.c */
/*
 * The fence guard for a batch's part on memnode mn (put it first among the
 * ops to mn): DM_ERR_FENCED at once if the handle may not write at all.
 */
extern int	dm_tree_fence_op(dm_tree *t, dm_op *op, uint16_t mn);
/* Whether that guard failed (then DM_ERR_FENCED is described in t->err). */
extern int	dm_tree_fenced_off(dm_tree *t, const dm_op *op);
/*
 * For a node-writing batch's part on memnode mn, right after its fence op:
 * 1 if the high-water raise dm_tree_writer_require asked for is due and op
 * now carries it, 0 if none is due (or it was raised now, by a round trip of
 * its own, because this batch cannot carry it), else -status.  After the
 * batch passed its fence guard, dm_tree_writer_carried(t, op) notes it.
 */
extern int	dm_tree_writer_carry_op(dm_tree *t, dm_op *op, uint16_t mn);
extern void dm_tree_writer_carried(dm_tree *t, const dm_op *op);
/*
 * An offloaded write to memnode mn: the raise due, as request fields (the
 * executor carries it) or made now by a round trip (*mark = 0); and what
 * the reply says the executor raised the word to.
 */
extern int	dm_tree_writer_offload_carry(dm_tree *t, uint16_t mn, dm_gaddr *word, uint64_t *mark);
extern void dm_tree_writer_raised(dm_tree *t, uint64_t now);
extern int	dm_tree_writer_load(dm_tree *t, const uint64_t *meta);
extern int	dm_tree_writer_create(dm_tree *t, uint64_t *meta);

/*
 * Executor mode (dm_tree_exec.c), as the tree's own operations see it;
 * inline, so that the tree's files do not depend on the executor's file,
 * which is built on them.
 */
/* A node the executor wrote (reported back to the client, which drops its cached copy). */
static inline void
dm_tree_exec_note_changed(dm_tree *t, dm_gaddr addr)
{
	for (int i = 0; i < t->exec_nchanged && i < DM_OFF_MAX_CHANGED; i++)
		if (t->exec_changed[i] == addr)
			return;
	if (t->exec_nchanged < DM_OFF_MAX_CHANGED)
		t->exec_changed[t->exec_nchanged] = addr;
	t->exec_nchanged++;
}

/* May the descent go to addr (same memnode)?  DM_OK, or DM_ERR_FALLBACK with the reason in t->err. */
static inline int
dm_tree_exec_check(dm_tree *t, dm_gaddr addr, const char *what)
{
	if (addr == 0 || dm_gaddr_node(addr) != t->exec_memnode)
		return dm_tree_fail(t, DM_ERR_FALLBACK, "the %s at 0x%llx is on another memnode",
							what, (unsigned long long) addr);
	return DM_OK;
}

/*
 * Offloading on the client side (dm_offload.c) as the tree's public
 * operations call it: through hooks dm_tree_set_offload puts on the
 * handle, so that the tree's files do not depend on dm_offload.c, which
 * is built on them.  wanted: the handle offloads and is not running an
 * operation's one-sided path for it; the others try the operation
 * offloaded (DM_ERR_FALLBACK: do it one-sided).
 */
typedef struct dm_offload_hooks
{
	int			(*wanted) (const dm_tree *t);
	int			(*write) (dm_tree *t, dm_entry e, int del, int *existed);
	int			(*sorted) (dm_tree *t, const dm_entry *e, int n, int del, int *changed);
	int			(*lookup) (dm_tree *t, uint64_t key, uint64_t *tids, int max, int *n);
	void		(*release) (struct dm_offload *o);
} dm_offload_hooks;

static inline int
dm_offload_wanted(const dm_tree *t)
{
	return t->off_hooks != NULL && t->off_hooks->wanted(t);
}

/* Free the handle's offloading state (at close). */
static inline void
dm_tree_offload_release(dm_tree *t)
{
	if (t->off_hooks)
		t->off_hooks->release(t->off);
	t->off = NULL;
	t->off_hooks = NULL;
}

/* dm_tree_hop.c */
/*
 * dm_tree_lookup in a tree of hopscotch leaves: *done = 1 if answered
 * by a speculative read (the hotspot buffer), one neighbourhood read or a
 * cached leaf, else 0 and the caller reads whole leaves (the iterator).
 */
extern int	dm_tree_hop_lookup(dm_tree *t, uint64_t key, uint64_t *tids, int max, int *n, int *done);

/*
 * An entry the tree may store (inserts, deletes, bulk load): the key
 * format's shape, a tid below DM_TID_LIMIT, a well-formed NULL key.
 */
static inline int
dm_tree_entry_valid(const dm_tree *t, dm_entry e)
{
	uint64_t	tid = e.tid & ~DM_TID_NULL;

	/*
	 * FIXED8: no suffix.  VAR: at most dm_tree_key_max bytes, and no NULL
	 * marker (the access method encodes NULLs as bytes, DESIGN.md §5.2).
	 */
	if (t->key_var ? (e.sfx_len > dm_tree_key_max(t->node_size) - 8 || (e.sfx_len != 0 && e.sfx == NULL) ||
					  (e.tid & DM_TID_NULL) != 0) : e.sfx_len != 0)
		return 0;

	/* tids stay below DM_TID_LIMIT, so no entry can equal +infinity or a key bound */
	if (tid >= DM_TID_LIMIT)
		return 0;
	/* a NULL-key entry is exactly what dm_entry_null() makes */
	return !(e.tid & DM_TID_NULL) || e.key == UINT64_MAX;
}

/*
 * The fence between two neighbouring leaves whose entries end with last and
 * start with first: (first's key, 0) when first starts a new key, so the
 * right leaf's range begins where its first key's range does, and a lookup
 * of that key, which descends to (key, 0), lands in the leaf holding all of
 * its entries instead of the one before (dm_tree_hop.c would send it to the
 * iterator, which reads both leaves whole); first itself when the key
 * continues across the two.
 */
static inline dm_entry
dm_tree_leaf_bound(dm_entry last, dm_entry first)
{
	return last.key < first.key ? dm_entry_make(first.key, 0) : first;
}

/*
 * The fence between two neighbouring leaves of the tree (split, bulk
 * load): dm_tree_leaf_bound in FIXED8 trees; in VAR trees the truncated
 * separator (dm_var_separator, DESIGN.md §5.2), whose suffix points into
 * first's.
 */
static inline dm_entry
dm_tree_split_bound(const dm_tree *t, dm_entry last, dm_entry first)
{
	return t->key_var ? dm_var_separator(last, first) : dm_tree_leaf_bound(last, first);
}

/*
 * An empty node of the tree's key format with these fences (a VAR node
 * copies their suffixes).  DM_ERR_TOOBIG only if a VAR node's fences do not
 * fit, which keys within dm_tree_key_max never cause.
 */
static inline int
dm_tree_node_init(const dm_tree *t, void *buf, int level, dm_entry low, dm_entry high)
{
	if (t->key_var)
		return dm_var_init(buf, t->node_size, level, t->info.tree_id, low, high);
	dm_node_init(buf, t->node_size, level, t->info.tree_id, low, high);
	return DM_OK;
}

/*
 * An entry with its suffix copied into storage of its own: what code keeps
 * across a read into the buffer the entry came from (the descent's high
 * fence of the node it left, root growth's previous high fence).
 */
typedef struct dm_owned_entry
{
	dm_entry	e;
	uint8_t		sfx[DM_VAR_SFX_MAX];
} dm_owned_entry;

static inline void
dm_entry_own(dm_owned_entry *o, dm_entry e)
{
	o->e = e;
	if (e.sfx_len != 0)
	{
		memcpy(o->sfx, e.sfx, e.sfx_len);
		o->e.sfx = o->sfx;
	}
}

/* dm_tree_hot.c: the hotspot buffer */
/*
 * The table the handle speculates with: its cache's (the instance's) when
 * it uses a cache, else its own (allocated when create is set); NULL when
 * there is none.  *tag gets the tree's tag in it.
 */
extern dm_hot_table *dm_tree_hot_table(dm_tree *t, int create, uint64_t *tag);
/*
 * Remember that the leaf at addr, at clean version `version` with that
 * checksum word, answered key with these n tids (n > 1: forget the key).
 */
extern void dm_tree_hot_put(dm_tree *t, uint64_t key, dm_gaddr addr, uint64_t version, uint64_t checksum,
							const uint64_t *tids, int n);
extern void dm_hot_free(dm_tree *t);

/* dm_tree_descend.c */
/* Find the node at `level` that covers e: its copy in buf, address in *addr. */
extern int	dm_tree_descend(dm_tree *t, dm_entry e, int level, dm_gaddr *addr, void *buf);
/* Like descend, but to the leaf holding the greatest entry < e. */
extern int	dm_tree_descend_before(dm_tree *t, dm_entry e, dm_gaddr *addr, void *buf);
/*
 * Both of the above (before: to the left of e), and the descent to an
 * address (no_read: the address of the node at `level` only, *out_ctx where
 * it was reached from; DM_DESCEND_WRITER: a root whose split never got its
 * new root is grown first; DM_DESCEND_READER: a reader's, which changes
 * nothing).  When the node at `level` is the root, it is read (into buf)
 * and out_ctx is left as it was.
 */
#define DM_DESCEND_WRITER 1
#define DM_DESCEND_READER 2
extern int	dm_tree_descend_impl(dm_tree *t, dm_entry e, int level, int before, int no_read,
								 dm_gaddr *out_addr, void *buf, dm_fetch_ctx *out_ctx);
/* Install a new root above `root` (copy rootbuf), which no longer spans the key space. */
extern int	dm_tree_grow_root(dm_tree *t, dm_gaddr root, const void *rootbuf);
/* A descent or a lock that restarts this often gives up (DM_ERR_CORRUPT). */
#define DM_TREE_MAX_RESTARTS 10000

#endif
