/*
 * dm_tree_scan.c — range iteration over the remote tree, forward and
 * backward, and exact lookup built on it.
 *
 * Like nbtree's BTScanPosData, the iterator works on a private copy of one
 * leaf.  Moving on reads the next leaf: to the right through the sibling
 * pointer (a node's low fence never changes, so the right sibling's low
 * fence must equal our copy's high fence), to the left through the left
 * pointer, which is only a hint — if the node found there is not the
 * immediate left neighbour (it split since), we walk right from it to the
 * node whose high fence is our low fence, or descend afresh.  The last
 * returned entry is remembered and anything not strictly beyond it is
 * skipped, so an entry is never returned twice or out of order whatever
 * splits happen meanwhile; an entry present for the whole scan is in one of
 * the copies we read, so it is never missed.
 *
 * A hopscotch leaf (dm_hop.h) is read whole like any leaf, and its copy is
 * turned into the sorted image of its entries (dm_hop_sorted_view) as soon
 * as it is read, so the iterator works on sorted copies only.
 */
#include <stdlib.h>
#include <string.h>

#include "dm_hop.h"
#include "dm_tree_int.h"

#define MAX_WALK 100000

struct dm_iter
{
	dm_tree    *t;
	dm_range	r;
	uint8_t    *buf;			/* copy of the current leaf */
	dm_gaddr	addr;			/* its address */
	int			pos;			/* next index to look at */
	int			have_last;
	dm_entry	last;			/* last entry returned */
	int			done;
	/*
	 * VAR trees: where last's suffix is kept once the leaf it points into
	 * is read over (iter_keep_last); DM_VAR_SFX_MAX bytes, NULL in FIXED8
	 * trees (their entries have no suffixes).
	 */
	uint8_t    *last_sfx;
};

/* Before it->buf is read over: last's suffix into the iterator's own storage. */
static inline void
iter_keep_last(dm_iter *it)
{
	if (it->have_last && it->last.sfx_len != 0 && it->last.sfx != it->last_sfx)
	{
		memcpy(it->last_sfx, it->last.sfx, it->last.sfx_len);
		it->last.sfx = it->last_sfx;
	}
}

/*
 * An entry of the iterator (a bound, its last entry) as the comparisons
 * below see it.  fixed (a constant where these are inlined: see
 * leaf_next_fwd): known to have no suffix, so that dm_entry_cmp never
 * looks at one and the comparison is two words.
 */
static inline dm_entry
iter_ent(const dm_entry *e, const int fixed)
{
	return fixed ? dm_entry_make(e->key, e->tid) : *e;
}

/*
 * e is at or past the far bound of the range, in the scan's direction.
 * Inline, entries by reference: called for every entry a scan passes.
 */
static inline int
beyond_end(const dm_iter *it, const dm_entry *e, const int fixed)
{
	if (!it->r.backward)
	{
		int			c = dm_entry_cmp(*e, iter_ent(&it->r.hi, fixed));

		return c > 0 || (c == 0 && !it->r.hi_incl);
	}
	else
	{
		int			c = dm_entry_cmp(*e, iter_ent(&it->r.lo, fixed));

		return c < 0 || (c == 0 && !it->r.lo_incl);
	}
}

/* e is before the near bound (not yet in range) */
static inline int
before_start(const dm_iter *it, const dm_entry *e, const int fixed)
{
	if (!it->r.backward)
	{
		int			c = dm_entry_cmp(*e, iter_ent(&it->r.lo, fixed));

		return c < 0 || (c == 0 && !it->r.lo_incl);
	}
	else
	{
		int			c = dm_entry_cmp(*e, iter_ent(&it->r.hi, fixed));

		return c > 0 || (c == 0 && !it->r.hi_incl);
	}
}

int
dm_iter_open(dm_tree *t, const dm_range *r, dm_iter **out)
{
	/*
	 * malloc, not calloc: glibc's calloc skips the per-thread cache, and
	 * above 128 bytes (dm_iter is 152) takes the slow path of the arena,
	 * 300-odd instructions per point lookup (bench/dmicount.c).
	 */
	dm_iter    *it = malloc(sizeof(*it));
	int			rc;

	*out = NULL;
	if (it == NULL)
		return DM_ERR_NOMEM;
	*it = (dm_iter) {.t = t, .r = *r};
	if ((it->buf = aligned_alloc(8, t->node_size)) == NULL ||
		(t->key_var && (it->last_sfx = malloc(DM_VAR_SFX_MAX)) == NULL))
	{
		free(it->buf);
		free(it);
		return DM_ERR_NOMEM;
	}
	/* an empty range needs no remote access at all */
	if (dm_entry_cmp(r->lo, r->hi) > 0 ||
		(dm_entry_cmp(r->lo, r->hi) == 0 && !(r->lo_incl && r->hi_incl)))
		it->done = 1;
	else if (!r->backward)
	{
		if ((rc = dm_tree_descend(t, r->lo, 0, &it->addr, it->buf)) != DM_OK)
			goto fail;
		/* a forward scan skips what is before lo: a hopscotch leaf's view leaves it out */
		dm_hop_sorted_view_from(it->buf, &r->lo);
		it->pos = dm_leaf_lower_bound(it->buf, &r->lo);
	}
	else
	{
		if ((rc = dm_tree_descend(t, r->hi, 0, &it->addr, it->buf)) != DM_OK)
			goto fail;
		dm_hop_sorted_view(it->buf);
		it->pos = dm_leaf_lower_bound(it->buf, &r->hi);
		/* the entry equal to hi, if any, is at pos: start there; else just before */
		if (!(it->pos < NODE_HDR(it->buf)->count &&
			  dm_entry_cmp(dm_node_entry(it->buf, it->pos), r->hi) == 0))
			it->pos--;
	}
	*out = it;
	return DM_OK;
fail:
	free(it->buf);
	free(it->last_sfx);
	free(it);
	return rc;
}

void
dm_iter_close(dm_iter *it)
{
	if (it == NULL)
		return;
	free(it->buf);
	free(it->last_sfx);
	free(it);
}

/* Move to the right neighbour of the current leaf. */
static int
step_right(dm_iter *it)
{
	dm_tree    *t = it->t;
	dm_owned_entry high_own;	/* it->buf is read over */
	dm_entry	high;
	dm_gaddr	right = NODE_HDR(it->buf)->right;
	int			rc;

	dm_entry_own(&high_own, dm_node_high(it->buf));
	high = high_own.e;
	iter_keep_last(it);

	if (right == 0)
		return dm_tree_fail(t, DM_ERR_CORRUPT, "leaf at 0x%llx has a high fence but no right sibling",
							(unsigned long long) it->addr);
	if ((rc = dm_node_fetch(t, right, 0, DM_FETCH_CTX_NONE, it->buf, NULL)) != DM_OK)
		return rc;
	/*
	 * A dead leaf whose low fence is our high fence is an empty range (an
	 * unlink in progress or done, dm_tree_reclaim.c: sound whatever the
	 * address held since): we stay on it and step right again from it.
	 */
	if (NODE_HDR(it->buf)->level != 0 || dm_entry_cmp(dm_node_low(it->buf), high) != 0 ||
		((NODE_HDR(it->buf)->flags & DM_NODE_DEAD) && NODE_HDR(it->buf)->count != 0))
	{
		/* not the neighbour we expected (memory reused?): find it from the root */
		if ((rc = dm_tree_descend(t, high, 0, &right, it->buf)) != DM_OK)
			return rc;
	}
	dm_hop_sorted_view(it->buf);
	it->addr = right;
	it->pos = 0;
	return DM_OK;
}

/* Move to the left neighbour: the leaf whose high fence is our low fence. */
static int
step_left(dm_iter *it)
{
	dm_tree    *t = it->t;
	dm_owned_entry low_own;		/* it->buf is read over */
	dm_entry	low;
	dm_gaddr	addr = NODE_HDR(it->buf)->left;
	int			rc;

	dm_entry_own(&low_own, dm_node_low(it->buf));
	low = low_own.e;
	iter_keep_last(it);

	if (addr != 0)
	{
		if ((rc = dm_node_fetch(t, addr, 0, DM_FETCH_CTX_NONE, it->buf, NULL)) != DM_OK)
			return rc;
		/* a stale hint points further left: its right siblings lead to our neighbour */
		for (int k = 0; k < MAX_WALK; k++)
		{
			dm_node_hdr *h = NODE_HDR(it->buf);
			dm_gaddr	right = h->right;

			if (h->level != 0 || (h->flags & DM_NODE_DEAD) || dm_entry_cmp(dm_node_low(it->buf), low) >= 0)
				break;			/* not a left neighbour at all */
			if (dm_entry_cmp(dm_node_high(it->buf), low) == 0)
			{
				dm_hop_sorted_view(it->buf);
				it->addr = addr;
				it->pos = h->count - 1;
				return DM_OK;
			}
			if (dm_entry_cmp(dm_node_high(it->buf), low) > 0 || right == 0)
				break;
			if ((rc = dm_node_fetch(t, right, 0, DM_FETCH_CTX_NONE, it->buf, NULL)) != DM_OK)
				return rc;
			addr = right;
		}
	}
	/* no usable hint: descend to the leaf holding the greatest entry < low */
	if ((rc = dm_tree_descend_before(t, low, &it->addr, it->buf)) != DM_OK)
		return rc;
	dm_hop_sorted_view(it->buf);
	it->pos = NODE_HDR(it->buf)->count - 1;
	return DM_OK;
}

/*
 * The next entry of the leaf copy going forward: 1 (in *out), 0 (the range
 * is done: it->done set) or -1 (nothing more in this leaf).  Inlined twice
 * by dm_iter_next: with fixed = 1 for FIXED8 leaves (entries read as two
 * words and compared as two words: the hot loop of every FIXED8 scan), else
 * with fixed = 0 through the accessors.
 */
static inline __attribute__((always_inline)) int
leaf_next_fwd(dm_iter *it, dm_entry *out, const int fixed)
{
	int			count = NODE_HDR(it->buf)->count;

	while (it->pos < count)
	{
		dm_entry	e = fixed ? dm_raw_entry(LEAF_ENTS(it->buf)[it->pos]) : dm_node_entry(it->buf, it->pos);

		it->pos++;
		if ((it->have_last && dm_entry_cmp(e, iter_ent(&it->last, fixed)) <= 0) ||
			before_start(it, &e, fixed))
			continue;
		if (beyond_end(it, &e, fixed))
		{
			it->done = 1;
			return 0;
		}
		it->have_last = 1;
		it->last = e;
		*out = e;
		return 1;
	}
	return -1;
}

int
dm_iter_next(dm_iter *it, dm_entry *out)
{
	while (!it->done)
	{
		dm_node_hdr *h = NODE_HDR(it->buf);
		dm_entry	high;
		int			rc;

		if (!it->r.backward)
		{
			/* FIXED8 leaf, no suffix in the bounds or the last entry: the two-word loop */
			if (!dm_node_is_var(it->buf) &&
				(it->r.lo.sfx_len | it->r.hi.sfx_len | it->last.sfx_len) == 0)
				rc = leaf_next_fwd(it, out, 1);
			else
				rc = leaf_next_fwd(it, out, 0);
			if (rc >= 0)
				return rc;
			/* leaf exhausted: anything to the right is >= high */
			high = dm_node_high(it->buf);
			if (dm_entry_cmp(high, DM_ENTRY_INF) == 0 || beyond_end(it, &high, 0))
			{
				it->done = 1;
				return 0;
			}
			rc = step_right(it);
		}
		else
		{
			while (it->pos >= 0)
			{
				dm_entry	e;

				if (it->pos >= h->count)
				{
					it->pos = h->count - 1;
					continue;
				}
				e = dm_node_entry(it->buf, it->pos--);
				if ((it->have_last && dm_entry_cmp(e, it->last) >= 0) || before_start(it, &e, 0))
					continue;
				if (beyond_end(it, &e, 0))
				{
					it->done = 1;
					return 0;
				}
				it->have_last = 1;
				it->last = e;
				*out = e;
				return 1;
			}
			/* leaf exhausted: anything to the left is < low */
			if (dm_entry_cmp(dm_node_low(it->buf), DM_ENTRY_MIN) == 0 ||
				dm_entry_cmp(dm_node_low(it->buf), it->r.lo) <= 0)
			{
				/* entries left of us are < low <= lo: none in range */
				it->done = 1;
				return 0;
			}
			rc = step_left(it);
		}
		if (rc != DM_OK)
		{
			it->done = 1;
			return -rc;
		}
	}
	return 0;
}

int
dm_iter_copy_bound(const dm_iter *it, dm_entry *bound)
{
	if (it->done)
		return 0;
	*bound = it->r.backward ? dm_node_low(it->buf) : dm_node_high(it->buf);
	return 1;
}

/* The tids of the entries in r (one key's), in order; *n counts them all. */
static int
lookup_range(dm_tree *t, const dm_range *r, uint64_t *tids, int max, int *n)
{
	dm_iter    *it;
	dm_entry	e;
	int			rc;

	if ((rc = dm_iter_open(t, r, &it)) != DM_OK)
		return rc;
	/* *n counts them all, so a caller whose array was too small can tell */
	while ((rc = dm_iter_next(it, &e)) == 1)
	{
		if (*n < max)
			tids[*n] = e.tid;
		(*n)++;
	}
	dm_iter_close(it);
	return rc == 0 ? DM_OK : -rc;
}

int
dm_tree_lookup(dm_tree *t, uint64_t key, uint64_t *tids, int max, int *n)
{
	dm_range	r = {dm_entry_make(key, 0), 1, dm_entry_make(key, DM_TID_MAX), 1, 0};
	int			rc;

	*n = 0;
	if (dm_offload_wanted(t))
		return t->off_hooks->lookup(t, key, tids, max, n);
	/* hopscotch leaves: one neighbourhood read (a replica reads whole leaves: the horizon) */
	if (t->leaf_hop && !t->replica && !t->exec_active)
	{
		int			done;

		if ((rc = dm_tree_hop_lookup(t, key, tids, max, n, &done)) != DM_OK || done)
			return rc;
	}
	return lookup_range(t, &r, tids, max, n);
}

int
dm_tree_lookup_key(dm_tree *t, dm_entry key, uint64_t *tids, int max, int *n)
{
	dm_range	r = {key, 1, key, 1, 0};

	*n = 0;
	key.tid = 0;
	if (!dm_tree_entry_valid(t, key))
		return dm_tree_fail(t, DM_ERR_INVALID, "a key the tree cannot hold");
	/* a FIXED8 key is its word: the lookup of the tree's key format (hopscotch, offloading) */
	if (!t->key_var)
		return dm_tree_lookup(t, key.key, tids, max, n);
	r.lo.tid = 0;
	r.hi.tid = DM_TID_MAX;
	return lookup_range(t, &r, tids, max, n);
}
