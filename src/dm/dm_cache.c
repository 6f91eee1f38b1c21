/*
 * dm_cache.c — the compute-side node cache (see dm_cache.h for the design):
 * creating and attaching it, lookup through the mapping table and swizzle
 * hints, optimistic reads of a frame, admission, write-through under the
 * frame's version lock, and invalidation.  Cooling and eviction are in
 * dm_cache_evict.c, the frame structures below them in dm_cache_frame.c,
 * statistics and the consistency check in dm_cache_stats.c (the layout and
 * shared helpers: dm_cache_int.h).
 *
 * Memory (one block, offsets only, so any mapping address works):
 *   header | stats stripes | mapping buckets | cooling buckets |
 *   hotspot buffer (dm_hot.c works on it; zeroed = every way free) | frames
 *
 * Lock order: frame version lock, then mapping bucket, then cooling bucket.
 * Spinlocks are held for a few instructions only; a frame's version lock can
 * be held across one remote round trip (a fetch or a write-through), so
 * readers that find it held for long read the node remotely instead.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "dm_cache_int.h"
#include "dm_hot.h"
#include "dm_node_fmt.h"

/* ---- setup --------------------------------------------------------------------- */

static int
layout(const dm_cache_config *cfg, dm_cache *c)
{
	uint32_t	nmap = 16;
	uint64_t	off;
	uint32_t	cp = cfg->cooling_percent ? cfg->cooling_percent : 10;
	uint32_t	hot = cfg->hotspot_entries == 0 ? DM_CACHE_HOTSPOT_DEFAULT :
		cfg->hotspot_entries == DM_CACHE_HOTSPOT_NONE ? 0 : cfg->hotspot_entries;
	uint32_t	hop_admit = cfg->hop_admit_permille == 0 ? DM_CACHE_HOP_ADMIT_DEFAULT :
		cfg->hop_admit_permille == DM_CACHE_HOP_ADMIT_NEVER ? 0 : cfg->hop_admit_permille;

	if (cfg->frame_size < DM_NODE_MIN || cfg->frame_size > DM_NODE_MAX ||
		(cfg->frame_size & (cfg->frame_size - 1)) != 0 || cfg->nframes < 16 ||
		cfg->nframes > DM_CACHE_MAX_FRAMES || cfg->policy > DM_CACHE_DEX ||
		cfg->leaf_admit_permille > 1000 || cp > 50 || hot > DM_CACHE_HOTSPOT_MAX || hop_admit > 1000)
		return -1;
	while (nmap < cfg->nframes * 2u)	/* at most 2^31: no overflow */
		nmap <<= 1;
	memset(c, 0, sizeof(*c));
	c->frame_size = cfg->frame_size;
	c->nframes = cfg->nframes;
	c->policy = cfg->policy;
	c->leaf_admit_permille = cfg->leaf_admit_permille;
	c->hop_admit_permille = hop_admit;
	c->nmap = nmap;
	c->ncool = (uint32_t) ((uint64_t) cfg->nframes * cp / 100 / COOL_SLOTS);
	if (c->ncool == 0)
		c->ncool = 1;
	c->hint_slots = (uint32_t) dm_node_fmt_fanout(cfg->frame_size);
	c->data_off = (uint32_t) ALIGN64(sizeof(frame_hdr) + 4u * c->hint_slots);
	c->stride = c->data_off + cfg->frame_size;
	off = ALIGN64(sizeof(dm_cache));
	c->stripes_off = off;
	off += ALIGN64(sizeof(stripe) * NSTRIPES);
	c->map_off = off;
	off += ALIGN64(sizeof(map_bucket) * (uint64_t) nmap);
	c->cool_off = off;
	off += ALIGN64(sizeof(cool_bucket) * (uint64_t) c->ncool);
	c->hot_off = off;
	c->hot_sets = dm_hot_sets_for(hot);
	off += ALIGN64(sizeof(dm_hot_slot) * DM_HOT_WAYS * (uint64_t) c->hot_sets);
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
	dm_cache_config cfg = {frame_size, 16, DM_CACHE_DEX, 100, 10, DM_CACHE_HOTSPOT_NONE};
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

struct dm_hot_slot *
dm_cache_hotspot(dm_cache *c, uint32_t *nsets)
{
	*nsets = c->hot_sets;
	return c->hot_sets ? (dm_hot_slot *) ((uint8_t *) c + c->hot_off) : NULL;
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

/* A leaf read admitted with probability permille / 1000 (DEX's coin; counted when not). */
static int
leaf_coin(dm_cache *c, uint32_t permille)
{
	if (!dm_cache_caches_level(c, 0))
		return 0;
	if (rnd() % 1000 < permille)
		return 1;
	COUNT(c, admit_skipped, 1);
	return 0;
}

int
dm_cache_should_admit(dm_cache *c, int level)
{
	return level > 0 ? dm_cache_caches_level(c, level) : leaf_coin(c, c->leaf_admit_permille);
}

int
dm_cache_should_admit_lookup(dm_cache *c)
{
	return leaf_coin(c, c->hop_admit_permille);
}

uint64_t
dm_cache_tree_tag(uint64_t tree_id, uint64_t incarnation)
{
	uint64_t	t = mix64(tree_id ^ mix64(incarnation));

	return t ? t : 1;
}

/* ---- mapping table --------------------------------------------------------------- */

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
	f = dm_cache_chain_find(c, b, tag, addr);
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
	if ((f = dm_cache_get_frame(c)) == DM_FRAME_NONE)
		return DM_FRAME_NONE;
	h = FR(c, f);
	h->tag = tag;
	h->addr = addr;
	h->parent = DM_FRAME_NONE;
	h->level = -1;
	h->stamp = 0;
	clear_hints(c, h);
	spin_lock(&b->lock);
	if ((g = dm_cache_chain_find(c, b, tag, addr)) != DM_FRAME_NONE)
	{
		/* somebody admitted it meanwhile: give the frame back */
		uint32_t	st = __atomic_load_n(&FR(c, g)->state, __ATOMIC_RELAXED);

		spin_unlock(&b->lock);
		*existing = st == FS_IO ? DM_FRAME_NONE : g;
		h->tag = 0;
		h->addr = 0;
		frame_unlock(h);
		dm_cache_free_push(c, f);
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
	uint32_t	dropped = 0;

	/* first the generation: admissions that read remote memory before now fail */
	__atomic_add_fetch(&c->inval_gen, 1, __ATOMIC_SEQ_CST);
	/*
	 * Counted here, not from the statistics before and after: those sum
	 * every frame of the cache, which on every offloaded write cost more
	 * than the write's round trip with a cache of some ten thousand frames.
	 */
	for (int i = 0; i < n; i++)
		dropped += (uint32_t) dm_cache_invalidate(c, tag, addrs[i]);
	return dropped;
}

void
dm_cache_admit_abort(dm_cache *c, uint32_t f)
{
	frame_hdr  *h = FR(c, f);

	dm_cache_frame_clear(c, h, f);
	frame_unlock(h);
	dm_cache_free_push(c, f);
}

void
dm_cache_make_cold(dm_cache *c, uint32_t f)
{
	uint32_t	victim;

	if (f >= c->nframes)
		return;
	victim = dm_cache_cool_frame(c, f);
	if (victim != DM_FRAME_NONE)
	{
		/* the bucket was full: its oldest candidate was evicted for us; keep it free */
		frame_unlock(FR(c, victim));
		dm_cache_free_push(c, victim);
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
	dm_cache_frame_clear(c, h, f);
	COUNT(c, invalidations, 1);
	frame_unlock(h);
	dm_cache_free_push(c, f);
}

int
dm_cache_invalidate(dm_cache *c, uint64_t tag, dm_gaddr addr)
{
	for (;;)
	{
		int			io;
		uint32_t	f = dm_cache_lookup(c, tag, addr, DM_FRAME_NONE, &io);

		if (f == DM_FRAME_NONE && !io)
			return 0;
		if (io)
		{
			sched_yield();
			continue;
		}
		if (dm_cache_lock(c, f, tag, addr, NULL, 0) == 0)
		{
			dm_cache_unlock_drop(c, f);
			return 1;
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
