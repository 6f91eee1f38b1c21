/*
 * dm_tree_own.c — key ownership of compute instances (DEX §4; DESIGN.md
 * §7): the partition map kept in remote memory, the owned ranges of a
 * handle, and attaching a handle to a compute-side cache.
 *
 * The map is one node-sized block on the tree's home memnode, pointed to
 * by meta word 7 of the catalog entry; a new map is a new block installed
 * by CAS on that word, so readers never see half a map.  Block layout
 * (u64 words): magic, epoch, n, then n pairs (lo key, instance).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_tree_int.h"

#define PART_MAGIC UINT64_C(0x44504D4150310000)	/* "DPMAP1" */
#define PART_WORD 7				/* meta word holding the map's address */

static dm_gaddr
part_word_addr(dm_tree *t)
{
	/* meta words follow the root word: word k is at meta_addr + 8 * (k - 1) */
	return t->info.meta_addr + 8 * (PART_WORD - 1);
}

static void
default_map(dm_partition_map *m)
{
	memset(m, 0, sizeof(*m));
	m->n = 1;
}

static int
map_valid(const dm_partition_map *m, int max)
{
	if (m->n < 1 || m->n > max || m->n > DM_PART_MAX || m->lo[0] != 0)
		return 0;
	for (int i = 1; i < m->n; i++)
		if (m->lo[i] <= m->lo[i - 1])
			return 0;
	return 1;
}

static int
map_capacity(const dm_tree *t)
{
	int			n = (int) ((t->node_size - 24) / 16);

	return n < DM_PART_MAX ? n : DM_PART_MAX;
}

/* Read the map the meta word points to now; *blk_out: its block (0 = the default map). */
static int
read_map(dm_tree *t, dm_partition_map *m, dm_gaddr *blk_out)
{
	dm_gaddr	blk;
	uint64_t   *w;
	int			rc;

	if ((rc = dm_read(t->c, part_word_addr(t), &blk, 8)) != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	if (blk_out)
		*blk_out = blk;
	if (blk == 0)
	{
		default_map(m);
		return DM_OK;
	}
	if ((w = malloc(t->node_size)) == NULL)
		return DM_ERR_NOMEM;
	if ((rc = dm_read(t->c, blk, w, t->node_size)) != DM_OK)
	{
		free(w);
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	}
	memset(m, 0, sizeof(*m));
	m->epoch = w[1];
	m->n = w[2] <= (uint64_t) map_capacity(t) ? (int) w[2] : -1;
	for (int i = 0; i < m->n; i++)
	{
		m->lo[i] = w[3 + 2 * i];
		m->instance[i] = (uint32_t) w[4 + 2 * i];
	}
	rc = w[0] == PART_MAGIC && map_valid(m, map_capacity(t)) ? DM_OK :
		dm_tree_fail(t, DM_ERR_CORRUPT, "the partition map of the tree does not validate");
	free(w);
	return rc;
}

int
dm_tree_partitions_get(dm_tree *t, dm_partition_map *m)
{
	return read_map(t, m, NULL);
}

int
dm_tree_partitions_capacity(const dm_tree *t)
{
	return map_capacity(t);
}

int
dm_tree_partitions_set(dm_tree *t, const dm_partition_map *m)
{
	dm_partition_map old;
	dm_gaddr	blk, prev;
	uint64_t   *w;
	uint64_t	seen;
	int			rc;

	if ((rc = dm_tree_writable(t, "store a partition map")) != DM_OK)
		return rc;
	if (!map_valid(m, map_capacity(t)))
		return dm_tree_fail(t, DM_ERR_INVALID,
							"a partition map needs 1 to %d ranges starting at key 0 in ascending order",
							map_capacity(t));
	if ((rc = dm_read(t->c, part_word_addr(t), &prev, 8)) != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	if ((rc = dm_tree_partitions_get(t, &old)) != DM_OK)
		return rc;
	if ((rc = dm_node_alloc(t, t->home, &blk)) != DM_OK)
		return rc;
	if ((w = calloc(1, t->node_size)) == NULL)
		return DM_ERR_NOMEM;
	w[0] = PART_MAGIC;
	w[1] = old.epoch + 1;
	w[2] = (uint64_t) m->n;
	for (int i = 0; i < m->n; i++)
	{
		w[3 + 2 * i] = m->lo[i];
		w[4 + 2 * i] = m->instance[i];
	}
	/*
	 * One batch on the home memnode, fenced like every write of the tree
	 * (dm_tree_writer.c): a writer that was taken over stores no map.  The
	 * block is written before the CAS publishes it (a batch runs in order).
	 */
	{
		dm_op		ops[3];

		if ((rc = dm_tree_fence_op(t, &ops[0], t->home)) != DM_OK)
		{
			free(w);
			return rc;
		}
		dm_op_write(&ops[1], blk, w, t->node_size);
		dm_op_atomic(&ops[2], DM_OP_CAS, part_word_addr(t), prev, blk);
		rc = dm_post(t->c, ops, 3, NULL);
		free(w);
		if (rc != DM_OK)
			return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
		if (dm_tree_fenced_off(t, &ops[0]))
			return DM_ERR_FENCED;
		seen = ops[2].result;
	}
	if (seen != prev)
		return dm_tree_fail(t, DM_ERR_EXISTS, "the partition map changed concurrently");
	return DM_OK;
}

/* Turn the map into this instance's owned entry ranges, merging neighbours. */
static void
set_owned(dm_tree *t, const dm_partition_map *m, dm_gaddr blk)
{
	t->map = *m;
	t->part_blk = blk;
	t->nown = 0;
	for (int i = 0; i < m->n; i++)
	{
		dm_entry	lo,
					hi;

		if (m->instance[i] != t->instance)
			continue;
		lo = dm_entry_make(m->lo[i], 0);
		hi = i + 1 < m->n ? dm_entry_make(m->lo[i + 1], 0) : DM_ENTRY_INF;
		if (t->nown > 0 && dm_entry_cmp(t->own_hi[t->nown - 1], lo) == 0)
			t->own_hi[t->nown - 1] = hi;
		else
		{
			t->own_lo[t->nown] = lo;
			t->own_hi[t->nown] = hi;
			t->nown++;
		}
	}
	t->part_epoch = m->epoch;
}

/* The home memnode's incarnation as the client sees it (0 if unknown). */
static uint64_t
home_incarnation(const dm_tree *t)
{
	for (int j = 0; j < dm_client_nnodes(t->c); j++)
	{
		dm_node_info ni;

		if (dm_client_node_info(t->c, j, &ni) == DM_OK && ni.node_id == t->home)
			return ni.incarnation;
	}
	return 0;
}

uint64_t
dm_tree_cache_tag(const dm_tree *t)
{
	return dm_cache_tree_tag(t->info.tree_id, home_incarnation(t));
}

int
dm_tree_use_cache(dm_tree *t, dm_cache *cache, uint32_t instance)
{
	dm_partition_map m;
	dm_gaddr	blk;
	int			rc;

	t->instance = instance;
	if ((rc = read_map(t, &m, &blk)) != DM_OK)
		return rc;
	set_owned(t, &m, blk);
	t->own_enforce = 1;
	if (cache && dm_cache_get_policy(cache) != DM_CACHE_OFF && t->node_size <= dm_cache_frame_size(cache))
	{
		uint64_t	inc = home_incarnation(t);

		if (t->hints == NULL &&
			(t->hints = malloc(sizeof(uint32_t) * dm_cache_hint_slots(cache))) == NULL)
			return DM_ERR_NOMEM;
		t->cache = cache;
		t->ctag = dm_cache_tree_tag(t->info.tree_id, inc);
		t->root_frame = DM_FRAME_NONE;
	}
	else
		t->cache = NULL;
	return DM_OK;
}

int
dm_tree_partitions_refresh(dm_tree *t, int *changed)
{
	dm_partition_map m;
	dm_gaddr	blk;
	int			rc;

	if (changed)
		*changed = 0;
	/* every new map is a new block: an unchanged word is an unchanged map (one 8-byte read) */
	if ((rc = dm_read(t->c, part_word_addr(t), &blk, 8)) != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	if (blk == t->part_blk && t->own_enforce)
		return DM_OK;
	if ((rc = read_map(t, &m, &blk)) != DM_OK)
		return rc;
	if (m.epoch != t->part_epoch || blk != t->part_blk)
	{
		/* cached nodes were classified by the old map: owned ones may not be ours now */
		if (t->cache && m.epoch != t->part_epoch)
			dm_cache_invalidate_tree(t->cache, t->ctag);
		set_owned(t, &m, blk);
		if (changed)
			*changed = 1;
	}
	return DM_OK;
}

void
dm_tree_partitions_cached(const dm_tree *t, dm_partition_map *m)
{
	if (t->own_enforce)
		*m = t->map;
	else
		default_map(m);
}

int
dm_tree_map_owner(const dm_partition_map *m, uint64_t key)
{
	int			i = m->n - 1;

	/* ranges are ascending from lo[0] = 0: the last one starting at or below key */
	while (i > 0 && m->lo[i] > key)
		i--;
	return (int) m->instance[i];
}

void
dm_tree_write_any_key(dm_tree *t, int on)
{
	/*
	 * Out of single-writer mode, inner nodes of other instances' ranges are
	 * foreign again (dm_tree_node_class): copies cached meanwhile must go.
	 */
	if (t->write_any && !on && t->cache)
		dm_cache_invalidate_tree(t->cache, t->ctag);
	t->write_any = on ? 1 : 0;
}

int
dm_tree_owns_entry(const dm_tree *t, dm_entry e)
{
	if (!t->own_enforce)
		return 1;
	for (int i = 0; i < t->nown; i++)
		if (dm_entry_cmp(e, t->own_lo[i]) >= 0 &&
			(dm_entry_cmp(t->own_hi[i], DM_ENTRY_INF) == 0 || dm_entry_cmp(e, t->own_hi[i]) < 0))
			return 1;
	return 0;
}

int
dm_tree_owns_key(const dm_tree *t, uint64_t key)
{
	return dm_tree_owns_entry(t, dm_entry_make(key, 0));
}

int
dm_tree_owns_all(const dm_tree *t)
{
	return !t->own_enforce ||
		(t->nown == 1 && dm_entry_cmp(t->own_lo[0], DM_ENTRY_MIN) == 0 &&
		 dm_entry_cmp(t->own_hi[0], DM_ENTRY_INF) == 0);
}

int
dm_tree_own_class(const dm_tree *t, dm_entry low, dm_entry high)
{
	int			touches = 0;

	if (!t->own_enforce)
		return DM_OWN_OWNED;
	for (int i = 0; i < t->nown; i++)
	{
		int			hi_inf = dm_entry_cmp(t->own_hi[i], DM_ENTRY_INF) == 0;

		/* [low, high) inside [own_lo, own_hi) */
		if (dm_entry_cmp(low, t->own_lo[i]) >= 0 &&
			(hi_inf || (dm_entry_cmp(high, DM_ENTRY_INF) != 0 && dm_entry_cmp(high, t->own_hi[i]) <= 0)))
			return DM_OWN_OWNED;
		/* overlap: low < own_hi and own_lo < high */
		if ((hi_inf || dm_entry_cmp(low, t->own_hi[i]) < 0) &&
			(dm_entry_cmp(high, DM_ENTRY_INF) == 0 || dm_entry_cmp(t->own_lo[i], high) < 0))
			touches = 1;
	}
	return touches ? DM_OWN_SHARED : DM_OWN_FOREIGN;
}

int
dm_tree_node_class(const dm_tree *t, const void *hdr)
{
	const dm_node_hdr *h = hdr;

	/*
	 * A replica (a hot standby) writes nothing.  Its inner nodes are like
	 * shared ones, possibly stale (fences send a descent right and drop the
	 * copy).  Its leaves: without coherence it learns of no write and keeps
	 * none; with coherence (every remote write of the tree reaches its
	 * cache as an invalidation before it can matter to its readers: the
	 * primary's WAL, dm_tree_set_replica_coherent) it keeps the leaves of
	 * its own key ranges, like an owner, and no others.
	 */
	if (t->replica)
	{
		if (h->level > 0)
			return DM_OWN_SHARED;
		if (t->replica_coherent && dm_tree_own_class(t, dm_node_low(hdr), dm_node_high(hdr)) == DM_OWN_OWNED)
			return DM_OWN_OWNED;
		return DM_OWN_FOREIGN;
	}

	/*
	 * The only writer (single-writer mode, a PostgreSQL primary): an inner
	 * node inside another instance's range changes only by this handle's
	 * own writes, under the remote lock like a shared node's, so it may be
	 * cached as a shared node (DEX §4: every instance caches inner nodes;
	 * the map decides which leaves).  Where other instances write (several
	 * writers, each owning its ranges), such a node is theirs and changes
	 * without our knowledge: foreign, never cached.
	 */
	{
		int			cls = dm_tree_own_class(t, dm_node_low(hdr), dm_node_high(hdr));

		if (cls == DM_OWN_FOREIGN && t->write_any && h->level > 0)
			return DM_OWN_SHARED;
		return cls;
	}
}

void
dm_tree_set_replica_coherent(dm_tree *t, int on)
{
	t->replica_coherent = on ? 1 : 0;
}
