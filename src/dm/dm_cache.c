/*
 * dm_cache.c — the compute-side node cache (see dm_cache.h for the design):
 * frames with optimistic version locks, the mapping table, swizzle hints,
 * the cooling map with path-aware cooling, and eviction.
 *
 * Memory (one block, offsets only, so any mapping address works):
 *   header | stats stripes | mapping buckets | cooling buckets | frames
 *
 * Lock order: frame version lock, then mapping bucket, then cooling bucket.
 * Spinlocks are held for a few instructions only; a frame's version lock can
 * be held across one remote round trip (a fetch or a write-through), so
 * readers that find it held for long read the node remotely instead.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dm_cache.h"
#include "dm_node.h"

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
static void
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

static void
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

static void
spin_unlock(uint32_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/*
 * Per-process state: random numbers and the statistics stripe.  It is set
 * up on first use and reset in the child of a fork (the cache is shared by
 * forked processes: PostgreSQL backends, benchmark clients), without asking
 * getpid() on the hot path — a system call costs more than a cache hit.
 */
static __thread uint64_t rng_state;
static __thread uint32_t stripe_idx;
static __thread int proc_ready;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void
after_fork_child(void)
{
	proc_ready = 0;
}

static void
register_atfork(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

static void
proc_init(void)
{
	struct timespec ts;
	pid_t		pid = getpid();

	pthread_once(&atfork_once, register_atfork);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	rng_state = mix64(((uint64_t) pid << 32) ^ (uint64_t) ts.tv_nsec ^ (uint64_t) (uintptr_t) &ts) | 1;
	stripe_idx = (uint32_t) (mix64((uint64_t) pid) % NSTRIPES);
	proc_ready = 1;
}

static uint64_t
rnd(void)
{
	if (__builtin_expect(!proc_ready, 0))
		proc_init();
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static inline stripe *
my_stripe(dm_cache *c)
{
	if (__builtin_expect(!proc_ready, 0))
		proc_init();
	return (stripe *) ((uint8_t *) c + c->stripes_off) + stripe_idx;
}

#define COUNT(c, field, n) __atomic_fetch_add(&my_stripe(c)->field, (n), __ATOMIC_RELAXED)

static inline int
lvl_index(int level)
{
	return level < 0 ? 0 : level >= DM_CACHE_LEVELS ? DM_CACHE_LEVELS - 1 : level;
}

/* ---- setup --------------------------------------------------------------------- */

static int
layout(const dm_cache_config *cfg, dm_cache *c)
{
	uint32_t	nmap = 16;
	uint64_t	off;
	uint32_t	cp = cfg->cooling_percent ? cfg->cooling_percent : 10;

	if (cfg->frame_size < DM_NODE_MIN || cfg->frame_size > DM_NODE_MAX ||
		(cfg->frame_size & (cfg->frame_size - 1)) != 0 || cfg->nframes < 16 ||
		cfg->nframes > DM_CACHE_MAX_FRAMES || cfg->policy > DM_CACHE_DEX ||
		cfg->leaf_admit_permille > 1000 || cp > 50)
		return -1;
	while (nmap < cfg->nframes * 2u)	/* at most 2^31: no overflow */
		nmap <<= 1;
	memset(c, 0, sizeof(*c));
	c->frame_size = cfg->frame_size;
	c->nframes = cfg->nframes;
	c->policy = cfg->policy;
	c->leaf_admit_permille = cfg->leaf_admit_permille;
	c->nmap = nmap;
	c->ncool = (uint32_t) ((uint64_t) cfg->nframes * cp / 100 / COOL_SLOTS);
	if (c->ncool == 0)
		c->ncool = 1;
	c->hint_slots = (uint32_t) dm_inner_cap(cfg->frame_size);
	c->data_off = (uint32_t) ALIGN64(sizeof(frame_hdr) + 4u * c->hint_slots);
	c->stride = c->data_off + cfg->frame_size;
	off = ALIGN64(sizeof(dm_cache));
	c->stripes_off = off;
	off += ALIGN64(sizeof(stripe) * NSTRIPES);
	c->map_off = off;
	off += ALIGN64(sizeof(map_bucket) * (uint64_t) nmap);
	c->cool_off = off;
	off += ALIGN64(sizeof(cool_bucket) * (uint64_t) c->ncool);
	c->frames_off = off;
	off += (uint64_t) c->stride * cfg->nframes;
	c->total = off;
	return 0;
}

size_t
dm_cache_shmem_size(const dm_cache_config *cfg)
{
	dm_cache	c;

	return layout(cfg, &c) == 0 ? (size_t) c.total : 0;
}

uint32_t
dm_cache_frames_for_bytes(size_t bytes, uint32_t frame_size)
{
	dm_cache_config cfg = {frame_size, 16, DM_CACHE_DEX, 100, 10};
	uint64_t	lo = 16,
				hi;

	if (dm_cache_shmem_size(&cfg) == 0 || bytes < dm_cache_shmem_size(&cfg))
		return 0;
	/* the size grows with the frame count: binary search for the largest that fits */
	hi = bytes / frame_size + 1;
	if (hi > DM_CACHE_MAX_FRAMES)
		hi = DM_CACHE_MAX_FRAMES;
	while (lo < hi)
	{
		uint64_t	mid = lo + (hi - lo + 1) / 2;

		cfg.nframes = (uint32_t) mid;
		if (dm_cache_shmem_size(&cfg) <= bytes)
			lo = mid;
		else
			hi = mid - 1;
	}
	return (uint32_t) lo;
}

dm_cache *
dm_cache_init(void *mem, size_t len, const dm_cache_config *cfg)
{
	dm_cache   *c = mem;
	dm_cache	l;

	if (mem == NULL || ((uintptr_t) mem & 63) != 0 || layout(cfg, &l) != 0 || len < l.total)
		return NULL;
	memset(mem, 0, (size_t) l.frames_off);
	*c = l;
	for (uint32_t i = 0; i < c->nmap; i++)
		MAPB(c, i)->head = DM_FRAME_NONE;
	for (uint32_t f = 0; f < c->nframes; f++)
	{
		frame_hdr  *h = FR(c, f);

		memset(h, 0, c->data_off);
		h->next = DM_FRAME_NONE;
		h->parent = DM_FRAME_NONE;
		h->level = -1;
		for (uint32_t s = 0; s < c->hint_slots; s++)
			HINTS(h)[s] = DM_FRAME_NONE;
	}
	__atomic_store_n(&c->magic, CACHE_MAGIC, __ATOMIC_RELEASE);
	return c;
}

dm_cache *
dm_cache_attach(void *mem)
{
	dm_cache   *c = mem;

	return c && __atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) == CACHE_MAGIC ? c : NULL;
}

dm_cache_policy
dm_cache_get_policy(const dm_cache *c)
{
	return (dm_cache_policy) c->policy;
}

uint32_t
dm_cache_frame_size(const dm_cache *c)
{
	return c->frame_size;
}

uint32_t
dm_cache_nframes(const dm_cache *c)
{
	return c->nframes;
}

uint32_t
dm_cache_hint_slots(const dm_cache *c)
{
	return c->hint_slots;
}

int
dm_cache_caches_level(const dm_cache *c, int level)
{
	if (c == NULL || c->policy == DM_CACHE_OFF)
		return 0;
	return level > 0 || c->policy == DM_CACHE_DEX;
}

int
dm_cache_should_admit(dm_cache *c, int level)
{
	if (!dm_cache_caches_level(c, level))
		return 0;
	if (level > 0)
		return 1;
	if (rnd() % 1000 < c->leaf_admit_permille)
		return 1;
	COUNT(c, admit_skipped, 1);
	return 0;
}

uint64_t
dm_cache_tree_tag(uint64_t tree_id, uint64_t incarnation)
{
	uint64_t	t = mix64(tree_id ^ mix64(incarnation));

	return t ? t : 1;
}

/* ---- frame locks ---------------------------------------------------------------- */

static inline uint64_t
vload(frame_hdr *h)
{
	return __atomic_load_n(&h->vlock, __ATOMIC_ACQUIRE);
}

static int
frame_trylock(frame_hdr *h)
{
	uint64_t	v = __atomic_load_n(&h->vlock, __ATOMIC_RELAXED);

	return (v & 1) == 0 &&
		__atomic_compare_exchange_n(&h->vlock, &v, v + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void
frame_lock(frame_hdr *h)
{
	for (int k = 0; !frame_trylock(h); k++)
		pause_k(k);
}

static void
frame_unlock(frame_hdr *h)
{
	__atomic_store_n(&h->vlock, h->vlock + 1, __ATOMIC_RELEASE);
}

static void
clear_hints(dm_cache *c, frame_hdr *h)
{
	for (uint32_t s = 0; s < c->hint_slots; s++)
		__atomic_store_n(&HINTS(h)[s], DM_FRAME_NONE, __ATOMIC_RELAXED);
}

/* ---- mapping table --------------------------------------------------------------- */

/* Find (tag, addr) in its chain; the bucket lock must be held. */
static uint32_t
chain_find(dm_cache *c, map_bucket *b, uint64_t tag, dm_gaddr addr)
{
	for (uint32_t f = b->head; f != DM_FRAME_NONE; f = FR(c, f)->next)
	{
		frame_hdr  *h = FR(c, f);

		if (h->tag == tag && h->addr == addr)
			return f;
	}
	return DM_FRAME_NONE;
}

static void
chain_unlink(dm_cache *c, frame_hdr *h, uint32_t f)
{
	map_bucket *b = MAPB(c, map_index(c, h->tag, h->addr));
	uint32_t   *p;

	spin_lock(&b->lock);
	for (p = &b->head; *p != DM_FRAME_NONE; p = &FR(c, *p)->next)
		if (*p == f)
		{
			*p = h->next;
			break;
		}
	spin_unlock(&b->lock);
	h->next = DM_FRAME_NONE;
}

uint32_t
dm_cache_lookup(dm_cache *c, uint64_t tag, dm_gaddr addr, uint32_t hint, int *io)
{
	map_bucket *b;
	uint32_t	f;
	uint32_t	st = FS_FREE;

	if (io)
		*io = 0;
	if (hint < c->nframes)
	{
		frame_hdr  *h = FR(c, hint);

		/* racy reads: dm_cache_copy re-checks the identity under the version */
		if (__atomic_load_n(&h->tag, __ATOMIC_RELAXED) == tag &&
			__atomic_load_n(&h->addr, __ATOMIC_RELAXED) == addr &&
			__atomic_load_n(&h->state, __ATOMIC_RELAXED) >= FS_HOT)
		{
			COUNT(c, hint_hits, 1);
			return hint;
		}
	}
	b = MAPB(c, map_index(c, tag, addr));
	spin_lock(&b->lock);
	f = chain_find(c, b, tag, addr);
	if (f != DM_FRAME_NONE)
		st = __atomic_load_n(&FR(c, f)->state, __ATOMIC_RELAXED);
	spin_unlock(&b->lock);
	if (f != DM_FRAME_NONE && st == FS_IO)
	{
		COUNT(c, io_waits, 1);
		if (io)
			*io = 1;
		return DM_FRAME_NONE;
	}
	return f;
}

/* ---- free frames ---------------------------------------------------------------- */

static void
free_push(dm_cache *c, uint32_t f)
{
	uint64_t	old = __atomic_load_n(&c->free_head, __ATOMIC_RELAXED);

	for (;;)
	{
		uint64_t	nw = ((old >> 32) + 1) << 32 | (uint64_t) (f + 1);

		FR(c, f)->next = (uint32_t) (old & 0xFFFFFFFF) - 1;
		if (__atomic_compare_exchange_n(&c->free_head, &old, nw, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	}
}

static uint32_t
free_pop(dm_cache *c)
{
	uint64_t	old = __atomic_load_n(&c->free_head, __ATOMIC_ACQUIRE);

	for (;;)
	{
		uint32_t	top = (uint32_t) (old & 0xFFFFFFFF);
		uint32_t	next;
		uint64_t	nw;

		if (top == 0)
			return DM_FRAME_NONE;
		next = __atomic_load_n(&FR(c, top - 1)->next, __ATOMIC_RELAXED);
		nw = ((old >> 32) + 1) << 32 | (uint64_t) (next + 1);
		if (__atomic_compare_exchange_n(&c->free_head, &old, nw, 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
			return top - 1;
	}
}

/*
 * Make a locked frame FREE: out of the mapping table, identity cleared.
 * Returns it still locked (for reuse) — callers unlock or push it.
 */
static void
frame_clear(dm_cache *c, frame_hdr *h, uint32_t f)
{
	if (h->state != FS_FREE)
		chain_unlink(c, h, f);
	__atomic_store_n(&h->state, FS_FREE, __ATOMIC_RELEASE);
	__atomic_store_n(&h->tag, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h->addr, 0, __ATOMIC_RELAXED);
	h->parent = DM_FRAME_NONE;
	h->level = -1;
	clear_hints(c, h);
}

/* Evict a cooling frame; returns 1 with the frame locked and FREE. */
static int
try_evict(dm_cache *c, uint32_t f)
{
	frame_hdr  *h = FR(c, f);
	uint32_t	st = FS_COOLING;

	if (__atomic_load_n(&h->state, __ATOMIC_RELAXED) != FS_COOLING || !frame_trylock(h))
		return 0;
	/* a reader may have promoted it (CAS on the state, without the lock) */
	if (!__atomic_compare_exchange_n(&h->state, &st, FS_IO, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
	{
		frame_unlock(h);
		return 0;
	}
	frame_clear(c, h, f);
	__atomic_fetch_sub(&c->ncooling, 1, __ATOMIC_RELAXED);
	COUNT(c, evictions, 1);
	return 1;
}

/*
 * A COOLING frame that left the cooling map without being evicted (busy
 * when its turn came, and no room to put it back) becomes HOT again, so
 * that sampling can cool it later: a COOLING frame outside the map could
 * never be evicted.
 */
static void
uncool(dm_cache *c, uint32_t f)
{
	uint32_t	st = FS_COOLING;

	if (__atomic_compare_exchange_n(&FR(c, f)->state, &st, FS_HOT, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		__atomic_fetch_sub(&c->ncooling, 1, __ATOMIC_RELAXED);
}

/* Remove the parent's swizzled pointers to f (its hints naming f). */
static void
unswizzle(dm_cache *c, frame_hdr *h, uint32_t f)
{
	uint32_t	p = h->parent;

	if (p >= c->nframes)
		return;
	for (uint32_t s = 0; s < c->hint_slots; s++)
	{
		uint32_t	expect = f;

		__atomic_compare_exchange_n(&HINTS(FR(c, p))[s], &expect, DM_FRAME_NONE, 0,
									__ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

/* A HOT child that f's hints point to and that was reached through f, if any. */
static uint32_t
hot_child(dm_cache *c, uint32_t f)
{
	frame_hdr  *h = FR(c, f);
	uint32_t	n = c->hint_slots;
	uint32_t	start = n ? (uint32_t) (rnd() % n) : 0;

	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	ch = __atomic_load_n(&HINTS(h)[(start + i) % n], __ATOMIC_RELAXED);

		if (ch < c->nframes && ch != f)
		{
			frame_hdr  *k = FR(c, ch);

			if (__atomic_load_n(&k->state, __ATOMIC_RELAXED) == FS_HOT &&
				k->parent == f && k->tag == h->tag)
				return ch;
		}
	}
	return DM_FRAME_NONE;
}

/*
 * Put f (HOT) into the cooling map.  Returns a frame the bucket's overflow
 * evicted (locked, FREE), or DM_FRAME_NONE.
 */
static uint32_t
cool_frame(dm_cache *c, uint32_t f)
{
	frame_hdr  *h = FR(c, f);
	uint32_t	st = FS_HOT;
	cool_bucket *b;
	uint32_t	victim = DM_FRAME_NONE;

	if (!__atomic_compare_exchange_n(&h->state, &st, FS_COOLING, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return DM_FRAME_NONE;
	unswizzle(c, h, f);
	COUNT(c, coolings, 1);
	__atomic_fetch_add(&c->ncooling, 1, __ATOMIC_RELAXED);
	b = COOLB(c, (uint32_t) (mix64(h->addr ^ h->tag) % c->ncool));
	spin_lock(&b->lock);
	/* a slot left from an earlier cooling (promoted since) would jump the queue */
	for (uint32_t i = 0; i < b->n; i++)
		if (b->slot[i] == f)
		{
			memmove(&b->slot[i], &b->slot[i + 1], sizeof(uint32_t) * (b->n - i - 1));
			b->n--;			/* (its count went when it was promoted) */
			break;
		}
	if (b->n == COOL_SLOTS)
	{
		victim = b->slot[0];
		memmove(&b->slot[0], &b->slot[1], sizeof(uint32_t) * (COOL_SLOTS - 1));
		b->n--;
	}
	b->slot[b->n++] = f;
	spin_unlock(&b->lock);
	if (victim != DM_FRAME_NONE)
	{
		if (try_evict(c, victim))
			return victim;
		uncool(c, victim);
	}
	return DM_FRAME_NONE;
}

/*
 * Sample random frames and cool them, delegating down the path (DEX §5.3):
 * an inner node with a HOT child reached through it passes the cooling on,
 * so the node that cools is at the end of a cached path.
 */
static uint32_t
cool_some(dm_cache *c, uint32_t used)
{
	for (int s = 0; s < SAMPLE; s++)
	{
		uint32_t	f = (uint32_t) (rnd() % used);
		uint32_t	got;

		if (__atomic_load_n(&FR(c, f)->state, __ATOMIC_RELAXED) != FS_HOT)
			continue;
		for (int d = 0; d < DELEGATE_MAX && FR(c, f)->level > 0; d++)
		{
			uint32_t	ch = hot_child(c, f);

			if (ch == DM_FRAME_NONE)
				break;
			COUNT(c, delegations, 1);
			f = ch;
		}
		if ((got = cool_frame(c, f)) != DM_FRAME_NONE)
			return got;
	}
	return DM_FRAME_NONE;
}

/* The oldest evictable candidate of a random cooling bucket, evicted. */
static uint32_t
evict_one(dm_cache *c)
{
	cool_bucket *b = COOLB(c, (uint32_t) (rnd() % c->ncool));

	for (;;)
	{
		uint32_t	f;

		spin_lock(&b->lock);
		if (b->n == 0)
		{
			spin_unlock(&b->lock);
			return DM_FRAME_NONE;
		}
		f = b->slot[0];
		memmove(&b->slot[0], &b->slot[1], sizeof(uint32_t) * (COOL_SLOTS - 1));
		b->n--;
		spin_unlock(&b->lock);
		if (try_evict(c, f))
			return f;
		/* promoted (stays out of the map) or busy: a busy one goes back to the tail */
		if (__atomic_load_n(&FR(c, f)->state, __ATOMIC_RELAXED) == FS_COOLING)
		{
			int			kept = 0;

			spin_lock(&b->lock);
			if (b->n < COOL_SLOTS)
			{
				b->slot[b->n++] = f;
				kept = 1;
			}
			spin_unlock(&b->lock);
			if (!kept)
				uncool(c, f);
			return DM_FRAME_NONE;
		}
	}
}

/* A FREE frame, locked, out of the mapping table; DM_FRAME_NONE if none could be freed. */
static uint32_t
get_frame(dm_cache *c)
{
	uint32_t	f;
	uint64_t	capacity = (uint64_t) c->ncool * COOL_SLOTS;

	if ((f = free_pop(c)) != DM_FRAME_NONE)
	{
		frame_lock(FR(c, f));
		return f;
	}
	if (__atomic_load_n(&c->hwm, __ATOMIC_RELAXED) < c->nframes)
	{
		f = __atomic_fetch_add(&c->hwm, 1, __ATOMIC_RELAXED);
		if (f < c->nframes)
		{
			frame_lock(FR(c, f));
			return f;
		}
	}
	for (int attempt = 0; attempt < 64; attempt++)
	{
		/* keep the cooling map about half full: candidates get time for a second chance */
		int64_t		cooling = __atomic_load_n(&c->ncooling, __ATOMIC_RELAXED);

		if ((cooling < 0 || (uint64_t) cooling * 2 < capacity) &&
			(f = cool_some(c, c->nframes)) != DM_FRAME_NONE)
			return f;
		if ((f = evict_one(c)) != DM_FRAME_NONE)
			return f;
		if ((f = cool_some(c, c->nframes)) != DM_FRAME_NONE)
			return f;
	}
	COUNT(c, no_frame, 1);
	return DM_FRAME_NONE;
}

/* ---- reading -------------------------------------------------------------------- */

int
dm_cache_copy(dm_cache *c, uint32_t f, uint64_t tag, dm_gaddr addr,
			  void *buf, uint32_t len, uint32_t *hints, int *level)
{
	return dm_cache_copy_stamped(c, f, tag, addr, buf, len, hints, level, NULL);
}

void
dm_cache_set_stamp(dm_cache *c, uint32_t f, uint64_t stamp)
{
	/* the frame is IO (locked) until admit_finish: no reader sees it yet */
	FR(c, f)->stamp = stamp;
}

int
dm_cache_copy_stamped(dm_cache *c, uint32_t f, uint64_t tag, dm_gaddr addr,
					  void *buf, uint32_t len, uint32_t *hints, int *level, uint64_t *stamp)
{
	frame_hdr  *h;

	if (f >= c->nframes || len > c->frame_size)
		return DM_CACHE_GONE;
	h = FR(c, f);
	for (int k = 0;; k++)
	{
		uint64_t	v1 = vload(h);
		uint32_t	st;
		int			lvl;

		if (v1 & 1)
		{
			/* a write-through or fetch takes a round trip: read remotely rather than wait long */
			if (k > 64)
				return DM_CACHE_BUSY;
			pause_k(k);
			continue;
		}
		st = __atomic_load_n(&h->state, __ATOMIC_RELAXED);
		if (st < FS_HOT || __atomic_load_n(&h->tag, __ATOMIC_RELAXED) != tag ||
			__atomic_load_n(&h->addr, __ATOMIC_RELAXED) != addr)
			return DM_CACHE_GONE;
		memcpy(buf, DATA(c, h), len);
		if (hints)
			for (uint32_t s = 0; s < c->hint_slots; s++)
				hints[s] = __atomic_load_n(&HINTS(h)[s], __ATOMIC_RELAXED);
		lvl = h->level;
		if (stamp)
			*stamp = __atomic_load_n(&h->stamp, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&h->vlock, __ATOMIC_RELAXED) != v1)
			continue;
		if (st == FS_COOLING)
		{
			uint32_t	exp = FS_COOLING;

			/* second chance: touched while cooling, so it is not cold after all */
			if (__atomic_compare_exchange_n(&h->state, &exp, FS_HOT, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			{
				__atomic_fetch_sub(&c->ncooling, 1, __ATOMIC_RELAXED);
				COUNT(c, promotions, 1);
			}
		}
		/* (each hit also saves a round trip: counted from hits in dm_cache_stats_get) */
		COUNT(c, hits[lvl_index(lvl)], 1);
		COUNT(c, bytes_avoided, len);
		if (level)
			*level = lvl;
		return DM_CACHE_COPIED;
	}
}

void
dm_cache_set_hint(dm_cache *c, uint32_t parent, int slot, uint32_t child)
{
	if (parent >= c->nframes || child >= c->nframes || slot < 0 || (uint32_t) slot >= c->hint_slots)
		return;
	__atomic_store_n(&FR(c, child)->parent, parent, __ATOMIC_RELAXED);
	__atomic_store_n(&HINTS(FR(c, parent))[slot], child, __ATOMIC_RELAXED);
}

void
dm_cache_count_hit(dm_cache *c, int level, uint32_t bytes)
{
	COUNT(c, hits[lvl_index(level)], 1);
	COUNT(c, bytes_avoided, bytes);
}

void
dm_cache_count_miss(dm_cache *c, int level)
{
	COUNT(c, misses[lvl_index(level)], 1);
}

void
dm_cache_count_local_write(dm_cache *c)
{
	COUNT(c, local_writes, 1);
	/* no lock CAS (with its read) and no separate release */
	COUNT(c, rt_avoided, 1);
	COUNT(c, bytes_avoided, 16);
}

/* ---- admission ---------------------------------------------------------------- */

uint32_t
dm_cache_admit_begin(dm_cache *c, uint64_t tag, dm_gaddr addr, uint32_t *existing)
{
	map_bucket *b = MAPB(c, map_index(c, tag, addr));
	frame_hdr  *h;
	uint32_t	f, g;
	int			io;

	*existing = DM_FRAME_NONE;
	if ((g = dm_cache_lookup(c, tag, addr, DM_FRAME_NONE, &io)) != DM_FRAME_NONE || io)
	{
		*existing = g;
		return DM_FRAME_NONE;
	}
	if ((f = get_frame(c)) == DM_FRAME_NONE)
		return DM_FRAME_NONE;
	h = FR(c, f);
	h->tag = tag;
	h->addr = addr;
	h->parent = DM_FRAME_NONE;
	h->level = -1;
	h->stamp = 0;
	clear_hints(c, h);
	spin_lock(&b->lock);
	if ((g = chain_find(c, b, tag, addr)) != DM_FRAME_NONE)
	{
		/* somebody admitted it meanwhile: give the frame back */
		uint32_t	st = __atomic_load_n(&FR(c, g)->state, __ATOMIC_RELAXED);

		spin_unlock(&b->lock);
		*existing = st == FS_IO ? DM_FRAME_NONE : g;
		h->tag = 0;
		h->addr = 0;
		frame_unlock(h);
		free_push(c, f);
		return DM_FRAME_NONE;
	}
	__atomic_store_n(&h->state, FS_IO, __ATOMIC_RELEASE);
	h->next = b->head;
	b->head = f;
	spin_unlock(&b->lock);
	return f;
}

void
dm_cache_admit_finish(dm_cache *c, uint32_t f, const void *node, uint32_t len, int level,
					  uint32_t parent, int slot, int keep_locked)
{
	frame_hdr  *h = FR(c, f);

	memcpy(DATA(c, h), node, len < c->frame_size ? len : c->frame_size);
	h->level = level;
	__atomic_store_n(&h->state, FS_HOT, __ATOMIC_RELEASE);
	COUNT(c, admissions, 1);
	if (parent < c->nframes && parent != f)
	{
		h->parent = parent;
		dm_cache_set_hint(c, parent, slot, f);
	}
	if (!keep_locked)
		frame_unlock(h);
}

uint64_t
dm_cache_inval_gen(dm_cache *c)
{
	return __atomic_load_n(&c->inval_gen, __ATOMIC_SEQ_CST);
}

int
dm_cache_admit_finish_gen(dm_cache *c, uint32_t f, const void *node, uint32_t len, int level,
						  uint32_t parent, int slot, uint64_t gen)
{
	/*
	 * The frame is still IO, so an invalidation that bumped the generation
	 * after our caller read `gen` either is seen here, or waits for the
	 * frame to leave IO and then drops it (dm_cache_invalidate): a copy read
	 * before an invalidation never stays cached after it.
	 */
	if (__atomic_load_n(&c->inval_gen, __ATOMIC_SEQ_CST) != gen)
	{
		COUNT(c, admit_skipped, 1);
		dm_cache_admit_abort(c, f);
		return 0;
	}
	dm_cache_admit_finish(c, f, node, len, level, parent, slot, 0);
	return 1;
}

uint32_t
dm_cache_invalidate_nodes(dm_cache *c, uint64_t tag, const dm_gaddr *addrs, int n)
{
	uint32_t	before,
				after;
	dm_cache_stats st;

	/* first the generation: admissions that read remote memory before now fail */
	__atomic_add_fetch(&c->inval_gen, 1, __ATOMIC_SEQ_CST);
	dm_cache_stats_get(c, &st);
	before = (uint32_t) st.invalidations;
	for (int i = 0; i < n; i++)
		dm_cache_invalidate(c, tag, addrs[i]);
	dm_cache_stats_get(c, &st);
	after = (uint32_t) st.invalidations;
	return after - before;
}

void
dm_cache_admit_abort(dm_cache *c, uint32_t f)
{
	frame_hdr  *h = FR(c, f);

	frame_clear(c, h, f);
	frame_unlock(h);
	free_push(c, f);
}

void
dm_cache_make_cold(dm_cache *c, uint32_t f)
{
	uint32_t	victim;

	if (f >= c->nframes)
		return;
	victim = cool_frame(c, f);
	if (victim != DM_FRAME_NONE)
	{
		/* the bucket was full: its oldest candidate was evicted for us; keep it free */
		frame_unlock(FR(c, victim));
		free_push(c, victim);
	}
}

/* ---- writing ---------------------------------------------------------------- */

int
dm_cache_lock(dm_cache *c, uint32_t f, uint64_t tag, dm_gaddr addr, void *buf, uint32_t len)
{
	frame_hdr  *h;
	uint32_t	st;

	if (f >= c->nframes || len > c->frame_size)
		return DM_CACHE_GONE;
	h = FR(c, f);
	frame_lock(h);
	st = __atomic_load_n(&h->state, __ATOMIC_RELAXED);
	if (st < FS_HOT || h->tag != tag || h->addr != addr)
	{
		frame_unlock(h);
		return DM_CACHE_GONE;
	}
	if (st == FS_COOLING)
	{
		uint32_t	exp = FS_COOLING;

		if (__atomic_compare_exchange_n(&h->state, &exp, FS_HOT, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		{
			__atomic_fetch_sub(&c->ncooling, 1, __ATOMIC_RELAXED);
			COUNT(c, promotions, 1);
		}
	}
	if (buf)
		memcpy(buf, DATA(c, h), len);
	return 0;
}

void
dm_cache_unlock(dm_cache *c, uint32_t f, const void *node, uint32_t len)
{
	frame_hdr  *h = FR(c, f);

	if (node)
	{
		memcpy(DATA(c, h), node, len < c->frame_size ? len : c->frame_size);
		/* entries may have moved: the hints' slots no longer match */
		if (h->level > 0)
			clear_hints(c, h);
	}
	frame_unlock(h);
}

void
dm_cache_unlock_drop(dm_cache *c, uint32_t f)
{
	frame_hdr  *h = FR(c, f);

	if (__atomic_load_n(&h->state, __ATOMIC_RELAXED) == FS_COOLING)
		__atomic_fetch_sub(&c->ncooling, 1, __ATOMIC_RELAXED);
	frame_clear(c, h, f);
	COUNT(c, invalidations, 1);
	frame_unlock(h);
	free_push(c, f);
}

void
dm_cache_invalidate(dm_cache *c, uint64_t tag, dm_gaddr addr)
{
	for (;;)
	{
		int			io;
		uint32_t	f = dm_cache_lookup(c, tag, addr, DM_FRAME_NONE, &io);

		if (f == DM_FRAME_NONE && !io)
			return;
		if (io)
		{
			sched_yield();
			continue;
		}
		if (dm_cache_lock(c, f, tag, addr, NULL, 0) == 0)
		{
			dm_cache_unlock_drop(c, f);
			return;
		}
	}
}

uint32_t
dm_cache_invalidate_all(dm_cache *c)
{
	uint32_t	used = __atomic_load_n(&c->hwm, __ATOMIC_RELAXED);
	uint32_t	n = 0;

	__atomic_add_fetch(&c->inval_gen, 1, __ATOMIC_SEQ_CST);
	if (used > c->nframes)
		used = c->nframes;
	for (uint32_t f = 0; f < used; f++)
	{
		frame_hdr  *h = FR(c, f);

		/* frames in IO finish or abandon their admission by the generation */
		frame_lock(h);
		if (h->state >= FS_HOT)
		{
			dm_cache_unlock_drop(c, f);
			n++;
		}
		else
			frame_unlock(h);
	}
	return n;
}

uint32_t
dm_cache_invalidate_tree(dm_cache *c, uint64_t tag)
{
	uint32_t	used = __atomic_load_n(&c->hwm, __ATOMIC_RELAXED);
	uint32_t	n = 0;

	if (used > c->nframes)
		used = c->nframes;
	for (uint32_t f = 0; f < used; f++)
	{
		frame_hdr  *h = FR(c, f);

		if (__atomic_load_n(&h->tag, __ATOMIC_RELAXED) != tag)
			continue;
		frame_lock(h);
		if (h->tag == tag && h->state >= FS_HOT)
		{
			dm_cache_unlock_drop(c, f);
			n++;
		}
		else
			frame_unlock(h);
	}
	return n;
}

uint32_t
dm_cache_next_frame(dm_cache *c, uint64_t tag, uint32_t start, dm_gaddr *addr)
{
	uint32_t	used = __atomic_load_n(&c->hwm, __ATOMIC_RELAXED);

	if (used > c->nframes)
		used = c->nframes;
	for (uint32_t f = start; f < used; f++)
	{
		frame_hdr  *h = FR(c, f);

		if (__atomic_load_n(&h->tag, __ATOMIC_RELAXED) == tag &&
			__atomic_load_n(&h->state, __ATOMIC_RELAXED) >= FS_HOT)
		{
			*addr = __atomic_load_n(&h->addr, __ATOMIC_RELAXED);
			return f;
		}
	}
	return DM_FRAME_NONE;
}

/* ---- statistics ------------------------------------------------------------------ */

void
dm_cache_stats_get(dm_cache *c, dm_cache_stats *st)
{
	uint32_t	used = __atomic_load_n(&c->hwm, __ATOMIC_RELAXED);

	memset(st, 0, sizeof(*st));
	st->policy = c->policy;
	st->frame_size = c->frame_size;
	st->nframes = c->nframes;
	st->cooling_capacity = (uint64_t) c->ncool * COOL_SLOTS;
	for (int i = 0; i < NSTRIPES; i++)
	{
		stripe	   *s = (stripe *) ((uint8_t *) c + c->stripes_off) + i;

#define ADD(f) st->f += __atomic_load_n(&s->f, __ATOMIC_RELAXED)
		for (int l = 0; l < DM_CACHE_LEVELS; l++)
		{
			ADD(hits[l]);
			ADD(misses[l]);
		}
		ADD(hint_hits);
		ADD(admissions);
		ADD(admit_skipped);
		ADD(evictions);
		ADD(coolings);
		ADD(delegations);
		ADD(promotions);
		ADD(io_waits);
		ADD(no_frame);
		ADD(invalidations);
		ADD(local_writes);
		st->round_trips_avoided += __atomic_load_n(&s->rt_avoided, __ATOMIC_RELAXED);
		for (int l = 0; l < DM_CACHE_LEVELS; l++)
			st->round_trips_avoided += __atomic_load_n(&s->hits[l], __ATOMIC_RELAXED);
		ADD(bytes_avoided);
#undef ADD
	}
	if (used > c->nframes)
		used = c->nframes;
	for (uint32_t f = 0; f < used; f++)
	{
		frame_hdr  *h = FR(c, f);
		uint32_t	s = __atomic_load_n(&h->state, __ATOMIC_RELAXED);

		if (s >= FS_HOT)
			st->frames_used[lvl_index(h->level)]++;
		if (s == FS_COOLING)
			st->frames_cooling++;
	}
}

void
dm_cache_stats_reset(dm_cache *c)
{
	memset((uint8_t *) c + c->stripes_off, 0, sizeof(stripe) * NSTRIPES);
}

int
dm_cache_check(dm_cache *c, char *msg, size_t msglen)
{
	uint32_t	used = __atomic_load_n(&c->hwm, __ATOMIC_RELAXED);
	uint64_t	in_table = 0, live = 0;

	if (used > c->nframes)
		used = c->nframes;
	for (uint32_t i = 0; i < c->nmap; i++)
	{
		uint64_t	steps = 0;

		for (uint32_t f = MAPB(c, i)->head; f != DM_FRAME_NONE; f = FR(c, f)->next)
		{
			frame_hdr  *h = FR(c, f);

			if (f >= used || ++steps > c->nframes)
			{
				snprintf(msg, msglen, "mapping bucket %u: chain leaves the frames or loops (frame %u)", i, f);
				return -1;
			}
			if (h->state == FS_FREE || map_index(c, h->tag, h->addr) != i)
			{
				snprintf(msg, msglen, "frame %u in bucket %u: state %u, belongs to bucket %u",
						 f, i, h->state, map_index(c, h->tag, h->addr));
				return -1;
			}
			for (uint32_t g = h->next; g != DM_FRAME_NONE && g < used; g = FR(c, g)->next)
				if (FR(c, g)->tag == h->tag && FR(c, g)->addr == h->addr)
				{
					snprintf(msg, msglen, "frames %u and %u both hold node 0x%llx", f, g,
							 (unsigned long long) h->addr);
					return -1;
				}
			in_table++;
		}
	}
	for (uint32_t f = 0; f < used; f++)
	{
		frame_hdr  *h = FR(c, f);

		if (h->vlock & 1)
		{
			snprintf(msg, msglen, "frame %u is still locked", f);
			return -1;
		}
		if (h->state == FS_IO)
		{
			snprintf(msg, msglen, "frame %u is still in IO", f);
			return -1;
		}
		if (h->state >= FS_HOT)
		{
			live++;
			if (NODE_HDR(DATA(c, h))->magic != DM_NODE_MAGIC || h->level < 0 ||
				NODE_HDR(DATA(c, h))->level != h->level)
			{
				snprintf(msg, msglen, "frame %u holds no node", f);
				return -1;
			}
		}
	}
	if (live != in_table)
	{
		snprintf(msg, msglen, "%llu live frames but %llu in the mapping table",
				 (unsigned long long) live, (unsigned long long) in_table);
		return -1;
	}
	for (uint32_t i = 0; i < c->ncool; i++)
	{
		cool_bucket *b = COOLB(c, i);

		if (b->lock || b->n > COOL_SLOTS)
		{
			snprintf(msg, msglen, "cooling bucket %u: lock %u, %u entries", i, b->lock, b->n);
			return -1;
		}
		for (uint32_t s = 0; s < b->n; s++)
			if (b->slot[s] >= used)
			{
				snprintf(msg, msglen, "cooling bucket %u names frame %u of %u", i, b->slot[s], used);
				return -1;
			}
	}
	/* a COOLING frame must be in the cooling map, or it could never be evicted */
	{
		uint8_t    *listed = calloc(used ? used : 1, 1);

		if (listed == NULL)
		{
			snprintf(msg, msglen, "out of memory");
			return -1;
		}
		for (uint32_t i = 0; i < c->ncool; i++)
			for (uint32_t s = 0; s < COOLB(c, i)->n; s++)
				listed[COOLB(c, i)->slot[s]] = 1;
		for (uint32_t f = 0; f < used; f++)
			if (FR(c, f)->state == FS_COOLING && !listed[f])
			{
				snprintf(msg, msglen, "frame %u is cooling but not in the cooling map", f);
				free(listed);
				return -1;
			}
		free(listed);
	}
	return 0;
}
