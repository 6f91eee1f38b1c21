/*
 * dm_cache_frame.c — the node cache's frames as shared structures (see
 * dm_cache.h for the design, dm_cache_int.h for the layout): each process's
 * random numbers and statistics stripe, the chains of the mapping table, the
 * lock-free stack of free frames, and clearing a frame's identity.  The
 * files above it (dm_cache.c, dm_cache_evict.c) build lookup, admission and
 * eviction on these.
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "dm_cache_int.h"

/*
 * Per-process state: random numbers and the statistics stripe.  It is set
 * up on first use and reset in the child of a fork (the cache is shared by
 * forked processes: PostgreSQL backends, benchmark clients), without asking
 * getpid() on the hot path — a system call costs more than a cache hit.
 */
__thread uint64_t dm_cache_rng_state;
__thread uint32_t dm_cache_stripe_idx;
__thread int dm_cache_proc_ready;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void
after_fork_child(void)
{
	dm_cache_proc_ready = 0;
}

static void
register_atfork(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

void
dm_cache_proc_init(void)
{
	struct timespec ts;
	pid_t		pid = getpid();

	pthread_once(&atfork_once, register_atfork);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	dm_cache_rng_state = mix64(((uint64_t) pid << 32) ^ (uint64_t) ts.tv_nsec ^ (uint64_t) (uintptr_t) &ts) | 1;
	dm_cache_stripe_idx = (uint32_t) (mix64((uint64_t) pid) % NSTRIPES);
	dm_cache_proc_ready = 1;
}

/* ---- mapping table chains --------------------------------------------------------- */

uint32_t
dm_cache_chain_find(dm_cache *c, map_bucket *b, uint64_t tag, dm_gaddr addr)
{
	for (uint32_t f = b->head; f != DM_FRAME_NONE; f = FR(c, f)->next)
	{
		frame_hdr  *h = FR(c, f);

		if (h->tag == tag && h->addr == addr)
			return f;
	}
	return DM_FRAME_NONE;
}

void
dm_cache_chain_unlink(dm_cache *c, frame_hdr *h, uint32_t f)
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

/* ---- free frames ---------------------------------------------------------------- */

void
dm_cache_free_push(dm_cache *c, uint32_t f)
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

uint32_t
dm_cache_free_pop(dm_cache *c)
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

void
dm_cache_frame_clear(dm_cache *c, frame_hdr *h, uint32_t f)
{
	if (h->state != FS_FREE)
		dm_cache_chain_unlink(c, h, f);
	__atomic_store_n(&h->state, FS_FREE, __ATOMIC_RELEASE);
	__atomic_store_n(&h->tag, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h->addr, 0, __ATOMIC_RELAXED);
	h->parent = DM_FRAME_NONE;
	h->level = -1;
	clear_hints(c, h);
}
