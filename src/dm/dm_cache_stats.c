/*
 * dm_cache_stats.c — the node cache's statistics (summed over the
 * per-process stripes) and dm_cache_check(), which walks the whole cache
 * and reports the first inconsistency (the tests run it after their
 * concurrent phases).  What a frame must hold is asked of the node format
 * through dm_node_fmt.h, not of the tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_cache_int.h"
#include "dm_node_fmt.h"

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
			if (h->level < 0 || dm_node_fmt_level(DATA(c, h)) != h->level)
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
