/*
 * dm_cache_evict.c — where the node cache's frames come from when none is
 * free (DEX §5.3): sampling HOT frames into the cooling map, path-aware (an
 * inner node delegates its cooling to a HOT child reached through it, so a
 * parent cools after its children), removing a cooled frame's swizzled
 * pointer from its parent, and evicting the oldest candidate of a cooling
 * bucket.  A COOLING frame touched again becomes HOT (dm_cache.c).  The
 * cache is write-through, so an evicted frame needs no write-back.
 */
#include <string.h>

#include "dm_cache_int.h"

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
	dm_cache_frame_clear(c, h, f);
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

uint32_t
dm_cache_cool_frame(dm_cache *c, uint32_t f)
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
		if ((got = dm_cache_cool_frame(c, f)) != DM_FRAME_NONE)
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

uint32_t
dm_cache_get_frame(dm_cache *c)
{
	uint32_t	f;
	uint64_t	capacity = (uint64_t) c->ncool * COOL_SLOTS;

	if ((f = dm_cache_free_pop(c)) != DM_FRAME_NONE)
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
