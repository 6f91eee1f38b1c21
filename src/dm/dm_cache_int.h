/*
 * dm_cache_int.h — internals of the node cache shared by its files: the
 * layout of the cache's shared memory (header, statistics stripes, mapping
 * and cooling buckets, frames), the small inline helpers every file uses
 * (addressing, spinlocks, frame version locks, per-process random numbers
 * and counters), and the functions one file of the cache provides to the
 * others.  Not for users of the cache (dm_cache.h is their interface).
 *
 *   dm_cache.c        setup, lookup, reading, admission, writing, invalidation
 *   dm_cache_evict.c  cooling (path-aware) and eviction: where frames come from
 *   dm_cache_frame.c  per-process state, mapping chains, the free-frame stack
 *   dm_cache_stats.c  statistics and the consistency check
 *
 * Arrows go one way: dm_cache.c uses dm_cache_evict.c, dm_cache_frame.c and
 * dm_cache_stats.c; dm_cache_evict.c uses dm_cache_frame.c; none calls back.
 */
#ifndef DM_CACHE_INT_H
#define DM_CACHE_INT_H

#include <sched.h>
#include <time.h>

#include "dm_cache.h"

#define CACHE_MAGIC		UINT64_C(0x444D43414348453A)	/* "DMCACHE:" */
#define NSTRIPES		64
#define COOL_SLOTS		6		/* per cooling bucket: one cache line, as in DEX */
#define SAMPLE			2		/* frames sampled per cooling round, as in DEX */
#define DELEGATE_MAX	16

enum
{
	FS_FREE = 0,
	FS_IO = 1,
	FS_HOT = 2,
	FS_COOLING = 3
};

typedef struct frame_hdr
{
	uint64_t	vlock;			/* even: unlocked; odd: a writer or a fetch holds it */
	uint64_t	tag;
	uint64_t	addr;
	uint32_t	state;
	uint32_t	next;			/* mapping chain, or free stack link */
	uint32_t	parent;			/* frame it was reached from (for unswizzling) */
	int32_t		level;
	uint64_t	stamp;			/* the admitter's value kept with the copy (dm_cache_set_stamp) */
	/* uint32_t hints[hint_slots] follow, then (64-aligned) the node */
} frame_hdr;

typedef struct map_bucket
{
	uint32_t	lock;
	uint32_t	head;
} map_bucket;

typedef struct cool_bucket
{
	uint32_t	lock;
	uint32_t	n;
	uint32_t	slot[COOL_SLOTS];	/* FIFO: slot[0] is the oldest */
	uint8_t		pad[64 - 8 - 4 * COOL_SLOTS];
} cool_bucket;

/* Counters, striped by process so the hot path writes no shared line. */
typedef struct stripe
{
	uint64_t	hits[DM_CACHE_LEVELS];
	uint64_t	misses[DM_CACHE_LEVELS];
	uint64_t	hint_hits;
	uint64_t	admissions;
	uint64_t	admit_skipped;
	uint64_t	evictions;
	uint64_t	coolings;
	uint64_t	delegations;
	uint64_t	promotions;
	uint64_t	io_waits;
	uint64_t	no_frame;
	uint64_t	invalidations;
	uint64_t	local_writes;
	uint64_t	rt_avoided;
	uint64_t	bytes_avoided;
	uint8_t		pad[64 - (2 * DM_CACHE_LEVELS + 13) * 8 % 64];
} stripe;

struct dm_cache
{
	uint64_t	magic;
	uint32_t	frame_size;
	uint32_t	nframes;
	uint32_t	policy;
	uint32_t	leaf_admit_permille;
	uint32_t	nmap;			/* mapping buckets (power of two) */
	uint32_t	ncool;			/* cooling buckets */
	uint32_t	hint_slots;
	uint32_t	stride;			/* bytes per frame */
	uint32_t	data_off;		/* node offset inside a frame */
	uint32_t	pad0;
	uint64_t	stripes_off;
	uint64_t	map_off;
	uint64_t	cool_off;
	uint64_t	frames_off;
	uint64_t	hot_off;		/* the hotspot buffer's slots (dm_hot.h) */
	uint32_t	hot_sets;		/* 0: none */
	uint32_t	hop_admit_permille;	/* resolved: 0..1000 */
	uint64_t	total;
	/* hot shared words, each on its own line */
	uint8_t		pad1[64];
	uint32_t	hwm;			/* frames handed out from the never-used part */
	uint8_t		pad2[60];
	uint64_t	free_head;		/* (aba << 32) | (frame + 1) */
	uint8_t		pad3[56];
	int64_t		ncooling;		/* frames in the cooling map (approximate) */
	uint8_t		pad4[56];
	uint64_t	inval_gen;		/* bumped by every dm_cache_invalidate_nodes */
	uint8_t		pad5[56];
	/* offloaded writes whose outcome is unknown, still to drain (dm_cache_drain.c) */
	uint32_t	ndrains;		/* entries used (read without the lock: the fast path) */
	uint32_t	drain_lock;
	uint8_t		pad6[56];
	dm_cache_drain drains[DM_CACHE_DRAINS];
};

#define ALIGN64(x) (((x) + 63) & ~(uint64_t) 63)

/* ---- small helpers ------------------------------------------------------------ */

static inline frame_hdr *
FR(dm_cache *c, uint32_t f)
{
	return (frame_hdr *) ((uint8_t *) c + c->frames_off + (uint64_t) f * c->stride);
}

static inline uint32_t *
HINTS(frame_hdr *h)
{
	return (uint32_t *) (h + 1);
}

static inline uint8_t *
DATA(dm_cache *c, frame_hdr *h)
{
	return (uint8_t *) h + c->data_off;
}

static inline map_bucket *
MAPB(dm_cache *c, uint32_t i)
{
	return (map_bucket *) ((uint8_t *) c + c->map_off) + i;
}

static inline cool_bucket *
COOLB(dm_cache *c, uint32_t i)
{
	return (cool_bucket *) ((uint8_t *) c + c->cool_off) + i;
}

static inline uint64_t
mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x;
}

static inline uint32_t
map_index(dm_cache *c, uint64_t tag, dm_gaddr addr)
{
	return (uint32_t) (mix64(tag ^ (addr * UINT64_C(0x9E3779B97F4A7C15))) & (c->nmap - 1));
}

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Wait a little more after the k-th failed attempt (yield soon: 2 cores, many processes). */
static inline void
pause_k(int k)
{
	if (k < 8)
		cpu_relax();
	else if (k < 200)
		sched_yield();
	else
	{
		struct timespec ts = {0, 50 * 1000};

		nanosleep(&ts, NULL);
	}
}

static inline void
spin_lock(uint32_t *l)
{
	for (int k = 0;; k++)
	{
		if (__atomic_load_n(l, __ATOMIC_RELAXED) == 0 &&
			!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
			return;
		pause_k(k);
	}
}

static inline void
spin_unlock(uint32_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/*
 * Per-process state: random numbers and the statistics stripe (defined and
 * set up in dm_cache_frame.c, reset in the child of a fork).
 */
extern __thread uint64_t dm_cache_rng_state __attribute__((visibility("hidden")));
extern __thread uint32_t dm_cache_stripe_idx __attribute__((visibility("hidden")));
extern __thread int dm_cache_proc_ready __attribute__((visibility("hidden")));
extern void dm_cache_proc_init(void);

static inline uint64_t
rnd(void)
{
	if (__builtin_expect(!dm_cache_proc_ready, 0))
		dm_cache_proc_init();
	dm_cache_rng_state ^= dm_cache_rng_state << 13;
	dm_cache_rng_state ^= dm_cache_rng_state >> 7;
	dm_cache_rng_state ^= dm_cache_rng_state << 17;
	return dm_cache_rng_state;
}

static inline stripe *
my_stripe(dm_cache *c)
{
	if (__builtin_expect(!dm_cache_proc_ready, 0))
		dm_cache_proc_init();
	return (stripe *) ((uint8_t *) c + c->stripes_off) + dm_cache_stripe_idx;
}

#define COUNT(c, field, n) __atomic_fetch_add(&my_stripe(c)->field, (n), __ATOMIC_RELAXED)

static inline int
lvl_index(int level)
{
	return level < 0 ? 0 : level >= DM_CACHE_LEVELS ? DM_CACHE_LEVELS - 1 : level;
}


/* ---- frame locks ---------------------------------------------------------------- */

static inline uint64_t
vload(frame_hdr *h)
{
	return __atomic_load_n(&h->vlock, __ATOMIC_ACQUIRE);
}

static inline int
frame_trylock(frame_hdr *h)
{
	uint64_t	v = __atomic_load_n(&h->vlock, __ATOMIC_RELAXED);

	return (v & 1) == 0 &&
		__atomic_compare_exchange_n(&h->vlock, &v, v + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void
frame_lock(frame_hdr *h)
{
	for (int k = 0; !frame_trylock(h); k++)
		pause_k(k);
}

static inline void
frame_unlock(frame_hdr *h)
{
	__atomic_store_n(&h->vlock, h->vlock + 1, __ATOMIC_RELEASE);
}

static inline void
clear_hints(dm_cache *c, frame_hdr *h)
{
	for (uint32_t s = 0; s < c->hint_slots; s++)
		__atomic_store_n(&HINTS(h)[s], DM_FRAME_NONE, __ATOMIC_RELAXED);
}

/* dm_cache_frame.c */
/* Find (tag, addr) in its chain; the bucket lock must be held. */
extern uint32_t dm_cache_chain_find(dm_cache *c, map_bucket *b, uint64_t tag, dm_gaddr addr);
/* Take frame f (header h) out of its mapping chain. */
extern void dm_cache_chain_unlink(dm_cache *c, frame_hdr *h, uint32_t f);
extern void dm_cache_free_push(dm_cache *c, uint32_t f);
extern uint32_t dm_cache_free_pop(dm_cache *c);
/*
 * Make a locked frame FREE: out of the mapping table, identity cleared.
 * Returns it still locked (for reuse) — callers unlock or push it.
 */
extern void dm_cache_frame_clear(dm_cache *c, frame_hdr *h, uint32_t f);

/* dm_cache_evict.c */
/* A FREE frame, locked, out of the mapping table; DM_FRAME_NONE if none could be freed. */
extern uint32_t dm_cache_get_frame(dm_cache *c);
/*
 * Put f (HOT) into the cooling map.  Returns a frame the bucket's overflow
 * evicted (locked, FREE), or DM_FRAME_NONE.
 */
extern uint32_t dm_cache_cool_frame(dm_cache *c, uint32_t f);

#endif							/* DM_CACHE_INT_H */
