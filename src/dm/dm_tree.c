/*
 * dm_tree.c — the write operations: single and batched inserts and deletes
 * with B-link splits.  Handles are made in dm_tree_handle.c; the descent
 * and root growth that writes use are in dm_tree_descend.c.
 *
 * Every write goes through level_apply(): for a sorted batch of items at
 * one level it locks each covering node once, applies all the items that
 * fall inside its fences, and writes it back once; a node that overflows is
 * split in two (new right node written first, then the old node with its new
 * sibling pointer and fence, released in the same round trip), and the new
 * separators are applied one level up the same way.  A split root gets a new
 * root installed by CAS on the catalog's root word (dm_tree_grow_root).
 *
 * A node write that finds the node changed since it was read (its version
 * guard failed, dm_tree_io.c: a stale write of another writer landed, or
 * our lock was taken over) wrote nothing: level_apply locks the node again
 * and redoes that step.
 *
 * Hopscotch leaves (dm_hop.h, DESIGN.md §5.1) take the same steps: the
 * merge is computed from a sorted view of the leaf, the entries are placed
 * in a scratch copy of the table and only the buckets that changed are
 * written; a leaf whose table cannot take them (dm_hop_place says split) is
 * split by entry range like a full sorted leaf, both halves rebuilt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_hop.h"
#include "dm_tree_int.h"

/* ---- writes -------------------------------------------------------------------- */

/*
 * Lock the node at `level` covering e (moving right past concurrent splits).
 * Returns with the node locked (*wl) and its copy in buf.
 */
static int
lock_covering(dm_tree *t, int level, dm_entry e, dm_wlock *wl, void *buf)
{
	dm_gaddr	addr;
	dm_fetch_ctx ctx;
	int			rc,
				released;

	for (int attempt = 0; attempt < DM_TREE_MAX_RESTARTS; attempt++)
	{
		/* the address only: locking reads the node anyway (one round trip saved) */
		if ((rc = dm_tree_descend_impl(t, e, level, 0, DM_DESCEND_WRITER, &addr, buf, &ctx)) != DM_OK)
			return rc;
		if ((rc = dm_node_wlock(t, addr, level, ctx, buf, wl)) != DM_OK)
			return rc;
		released = 0;
		for (;;)
		{
			dm_node_hdr *h = NODE_HDR(buf);
			dm_gaddr	right = h->right;

			if ((h->flags & DM_NODE_DEAD) || h->level != level || dm_entry_cmp(e, dm_node_low(buf)) < 0)
				break;			/* changed under us before we locked it: descend again */
			if (dm_node_covers(buf, e))
				return DM_OK;
			if (right == 0)
			{
				dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
				return dm_tree_fail(t, DM_ERR_CORRUPT, "node at 0x%llx has a high fence but no right sibling",
									(unsigned long long) addr);
			}
			/*
			 * An unlink whose reclaimer stopped after marking our right
			 * sibling dead (dm_tree_reclaim.c): we hold its left
			 * neighbour, so finish it and start over.
			 */
			if (t->exec_active && (rc = dm_tree_exec_check(t, right, "right sibling")) != DM_OK)
			{
				dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
				return rc;
			}
			if (level == 0)
			{
				uint8_t    *rbuf = aligned_alloc(8, t->node_size);
				int			dead;

				if (rbuf == NULL)
				{
					dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
					return dm_tree_fail(t, DM_ERR_NOMEM, "out of memory");
				}
				if ((rc = dm_node_read(t, right, rbuf)) != DM_OK)
				{
					free(rbuf);
					dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
					return rc;
				}
				dead = (NODE_HDR(rbuf)->flags & DM_NODE_DEAD) && NODE_HDR(rbuf)->level == level &&
					dm_entry_cmp(dm_node_low(rbuf), dm_node_high(buf)) == 0;
				if (dead && t->exec_active)
				{
					/* the executor changes one node at a time: a client finishes unlinks */
					free(rbuf);
					dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
					return dm_tree_fail(t, DM_ERR_FALLBACK, "an unlink is to be finished");
				}
				if (dead)
					rc = dm_tree_finish_unlink(t, wl, buf, rbuf);
				free(rbuf);
				if (dead)
				{
					if (rc != DM_OK && rc != DM_TREE_STALE)
						return rc;
					released = 1;
					break;
				}
			}
			/* split after our descent read it: the entry moved right */
			if ((rc = dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL)) != DM_OK)
				return rc;
			addr = right;
			if ((rc = dm_node_wlock(t, addr, level, DM_FETCH_CTX_NONE, buf, wl)) != DM_OK)
				return rc;
		}
		if (!released && (rc = dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL)) != DM_OK)
			return rc;
		/* a cached shared parent that led to the wrong node must be read again */
		if (t->cache && ctx.suspect)
			dm_cache_invalidate(t->cache, t->ctag, ctx.suspect);
		t->root = 0;
	}
	return dm_tree_fail(t, DM_ERR_CORRUPT, "could not lock the node covering an entry");
}

/*
 * Where to split m merged items: near the middle, but for leaves preferably
 * between two different keys (as nbtree's _bt_findsplitloc prefers), so the
 * entries of one key stay in one leaf where they fit: a lookup of the key
 * then reads one leaf, and concurrent updates of a key cannot move its
 * entry across a leaf boundary under a running lookup.
 */
static int
split_point(const dm_item *merged, int m, int level, int cap)
{
	int			mid = m / 2;
	/* both sides must fit a node: m can be up to twice the capacity */
	int			lo = m - cap > 1 ? m - cap : 1;
	int			hi = cap < m - 1 ? cap : m - 1;

	if (level != 0)
		return mid;
	for (int d = 0; d <= m / 4; d++)
	{
		if (mid - d >= lo && mid - d <= hi && !dm_entry_same_key(merged[mid - d - 1].sep, merged[mid - d].sep))
			return mid - d;
		if (mid + d >= lo && mid + d <= hi && !dm_entry_same_key(merged[mid + d - 1].sep, merged[mid + d].sep))
			return mid + d;
	}
	return mid;
}

/* The end j of the items from items[i] on that the node in buf covers: at most cap, so one split suffices. */
static int
covered_end(const void *buf, const dm_item *items, int i, int n, int cap)
{
	int			j = i;

	while (j < n && j - i < cap && dm_node_covers(buf, items[j].sep))
		j++;
	return j;
}

/*
 * Delete step: remove those of items[i..j) the locked leaf (wl, copy in
 * buf) holds, and release it, written back if anything was removed.
 * *removed: how many.  DM_TREE_STALE: nothing written, redo from a fresh copy.
 */
static int
leaf_delete(dm_tree *t, dm_wlock *wl, uint8_t *buf, const dm_item *items, int i, int j,
			int *removed)
{
	*removed = 0;
	if (dm_hop_is(buf))
	{
		dm_hop_range r = DM_HOP_RANGE_NONE;

		for (int x = i; x < j; x++)
		{
			int			b = dm_hop_find(buf, items[x].sep);

			if (b >= 0)
			{
				dm_hop_remove(buf, b, &r);
				(*removed)++;
			}
		}
		if (*removed > 0)
		{
			wl->part_lo = DM_NODE_HEADER + (uint32_t) r.lo * sizeof(dm_rawent);
			wl->part_hi = DM_NODE_HEADER + (uint32_t) r.hi * sizeof(dm_rawent);
		}
		return dm_node_wunlock(t, wl, buf, *removed > 0, 0, NULL, NULL);
	}
	for (int x = i; x < j; x++)
	{
		int			p = dm_leaf_lower_bound(buf, &items[x].sep);

		if (p < NODE_HDR(buf)->count && dm_entry_cmp(dm_node_entry(buf, p), items[x].sep) == 0)
		{
			dm_node_remove(buf, p);
			(*removed)++;
		}
	}
	return dm_node_wunlock(t, wl, buf, *removed > 0, 0, NULL, NULL);
}

/*
 * Merge step: the entries of the node in buf (leaf or inner by level) and
 * items[i..j), in order, into merged (*m of them), an item already present
 * only once.  Returns how many items were not present.
 */
static int
merge_items(int level, const uint8_t *buf, const dm_item *items, int i, int j,
			dm_item *merged, int *m_out)
{
	int			count = NODE_HDR(buf)->count;
	int			m = 0, added = 0, k = 0;

	for (int x = i; k < count || x < j;)
	{
		dm_item		cur = {{0}};

		if (k < count)
			cur = dm_node_item(buf, k);
		if (x < j && (k >= count || dm_entry_cmp(items[x].sep, cur.sep) < 0))
		{
			merged[m++] = items[x++];
			added++;
			continue;
		}
		if (x < j && dm_entry_cmp(items[x].sep, cur.sep) == 0)
			x++;				/* already present: inserting it again changes nothing */
		merged[m++] = cur;
		k++;
	}
	*m_out = m;
	return added;
}

/*
 * The common insert, one item into a FIXED8 node (not a hopscotch leaf)
 * with room for it: placed in buf in place, without the merge and fill
 * through merged[] (40-byte items: a round trip of the whole node for
 * every insert).  Returns 1 if added, 0 if it was present already.
 */
static int
insert_one_fixed8(int level, uint8_t *buf, const dm_item *it)
{
	dm_node_hdr *h = NODE_HDR(buf);
	int			p;

	if (level == 0)
	{
		dm_rawent  *ents = LEAF_ENTS(buf);

		p = dm_leaf_lower_bound(buf, &it->sep);
		if (p < h->count && ents[p].key == it->sep.key && ents[p].tid == it->sep.tid)
			return 0;
		memmove(&ents[p + 1], &ents[p], (size_t) (h->count - p) * sizeof(dm_rawent));
		ents[p] = dm_raw_of(it->sep);
	}
	else
	{
		dm_rawinner *ents = INNER_ENTS(buf);

		/* the last separator <= the item's (or 0): the item is there, or goes after it */
		p = dm_inner_child_index(buf, &it->sep);
		if (p < h->count)
		{
			if (ents[p].sep.key == it->sep.key && ents[p].sep.tid == it->sep.tid)
				return 0;
			if (ents[p].sep.key < it->sep.key || (ents[p].sep.key == it->sep.key && ents[p].sep.tid < it->sep.tid))
				p++;
		}
		memmove(&ents[p + 1], &ents[p], (size_t) (h->count - p) * sizeof(dm_rawinner));
		ents[p].sep = dm_raw_of(it->sep);
		ents[p].child = it->child;
	}
	h->count++;
	return 1;
}

/*
 * Make merged[from..to) the entries of the node in buf (leaf or inner by
 * level; a hopscotch leaf's table is rebuilt).
 */
static int
fill_entries(int level, uint8_t *buf, const dm_item *merged, int from, int to)
{
	if (level == 0 && dm_hop_is(buf))
	{
		dm_entry	ents[DM_NODE_MAX / sizeof(dm_rawent)];

		for (int x = from; x < to; x++)
			ents[x - from] = merged[x].sep;
		dm_hop_build(buf, ents, to - from);
		return DM_OK;
	}
	return dm_node_fill(buf, merged + from, to - from);
}

/*
 * Split step: the m merged entries do not fit the locked node (wl, copy in
 * buf).  The upper part goes to a new right node (built in rbuf), and both
 * are written in one fenced write that releases the node; *up gets the new
 * node's separator and address for the level above (its suffix in rbuf).
 * FIXED8 nodes split by count, VAR nodes by bytes with truncated leaf
 * separators (dm_var_split_point).  merged[]'s suffixes may point into
 * buf: rbuf is built first, then buf is rebuilt aside (dm_var_build).
 * DM_TREE_STALE: nothing reachable was written (a reused node is given
 * back), redo.
 */
static int
split_write(dm_tree *t, int level, dm_wlock *wl, uint8_t *buf, uint8_t *rbuf,
			const dm_item *merged, int m, int cap, dm_item *up)
{
	dm_node_hdr *h = NODE_HDR(buf);
	dm_node_hdr *rh = NODE_HDR(rbuf);
	dm_gaddr	addr = wl->addr;
	int			half;
	dm_entry	sep;
	dm_gaddr	raddr;
	uint16_t	mn = dm_tree_place(t, level, dm_gaddr_node(addr));
	uint64_t	rver = 0;
	int			rc;

	if (t->key_var)
	{
		half = dm_var_split_point(level, t->node_size, dm_node_low(buf), dm_node_high(buf), merged, m, &sep);
		if (half < 1)
		{
			/* keys within dm_tree_key_max always have a cut (DESIGN.md §5.2) */
			dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
			return dm_tree_fail(t, DM_ERR_TOOBIG, "no split of a node of %d entries fits", m);
		}
	}
	else
	{
		half = split_point(merged, m, level, cap);
		sep = level == 0 ? dm_tree_leaf_bound(merged[half - 1].sep, merged[half].sep) : merged[half].sep;
	}
	/*
	 * A reused node (dm_tree_reclaim.c) only where it is written after this
	 * node's guard, in one batch: on the same memnode.
	 */
	if (mn == dm_gaddr_node(addr))
		rc = dm_node_alloc_split(t, mn, &raddr, &rver);
	else
		rc = dm_node_alloc(t, mn, &raddr);
	if (rc != DM_OK)
	{
		dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
		return rc;
	}
	if ((rc = dm_tree_node_init(t, rbuf, level, sep, dm_node_high(buf))) != DM_OK)
	{
		dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
		return dm_tree_fail(t, rc, "the new node's fences do not fit");
	}
	/* a leaf's new right half has the leaf's format (the executor never gets here) */
	if (level == 0 && dm_hop_is(buf))
		dm_hop_init(rbuf, h->hop_h);
	/* versions at an address only grow: a stale write fenced on an old one never lands */
	NODE_HDR(rbuf)->version = rver;
	rh->right = h->right;
	rh->left = addr;
	/*
	 * Both halves fit (split_point keeps each within cap, dm_var_split_point
	 * within the node's bytes): cannot fail.  A VAR left half is built
	 * whole with its new high fence (the old one may be longer).
	 */
	if ((rc = fill_entries(level, rbuf, merged, half, m)) != DM_OK ||
		(t->key_var ? (rc = dm_var_build(buf, dm_node_low(buf), dm_node_low(rbuf), merged, half)) != DM_OK :
		 ((rc = fill_entries(level, buf, merged, 0, half)) != DM_OK ||
		  (rc = dm_node_set_fences(buf, dm_node_low(buf), dm_node_low(rbuf))) != DM_OK)))
	{
		dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
		return dm_tree_fail(t, rc, "split halves do not fit their nodes");
	}
	h->right = raddr;
	rc = dm_node_wunlock(t, wl, buf, 1, 1, &raddr, (uint8_t *const *) &rbuf);
	if (rc == DM_TREE_STALE)
	{
		/* the new node was not written (same memnode) or stays unreachable */
		if (rver != 0)
		{
			if ((rc = dm_tree_reuse_return(t, raddr)) != DM_OK)
				return rc;
		}
		else
			t->ctr.nodes_unlinked++;
		return DM_TREE_STALE;
	}
	if (rc != DM_OK)
		return rc;
	t->ctr.splits++;
	up->sep = dm_node_low(rbuf);
	up->child = raddr;
	return DM_OK;
}

static int	level_apply(dm_tree *t, int level, const dm_item *items, int n, int del, int *changed);

/*
 * Hopscotch insert step: place those of items[i..j) the leaf (copy in buf)
 * lacks into the scratch copy hbuf of it, and, if all could be placed, make
 * that buf and note in wl the buckets to write.  0: the leaf should be
 * split instead, buf unchanged.
 */
static int
hop_insert(dm_tree *t, dm_wlock *wl, uint8_t *buf, uint8_t *hbuf, const dm_item *items, int i, int j)
{
	dm_hop_range r = DM_HOP_RANGE_NONE;

	memcpy(hbuf, buf, t->node_size);
	for (int x = i; x < j; x++)
	{
		int			res;

		if (dm_hop_find(hbuf, items[x].sep) >= 0)
			continue;
		res = dm_hop_place(hbuf, items[x].sep, 1, &r);
		if (res == DM_HOP_SPLIT || res == DM_HOP_FULL)
			return 0;
	}
	memcpy(buf, hbuf, t->node_size);
	if (r.hi > r.lo)
	{
		wl->part_lo = DM_NODE_HEADER + (uint32_t) r.lo * sizeof(dm_rawent);
		wl->part_hi = DM_NODE_HEADER + (uint32_t) r.hi * sizeof(dm_rawent);
	}
	return 1;
}

/*
 * Parent step, after the node at addr (copy in buf) split: add its new
 * sibling (up) one level up; a node that was the root (was_root: it
 * spanned the key space) gets a new root above the two instead.
 */
static int
add_to_parent(dm_tree *t, int level, dm_gaddr addr, const uint8_t *buf, int was_root,
			  const dm_item *up)
{
	int			rc;

	if (was_root)
	{
		dm_gaddr	before = t->root;

		/*
		 * A new root above the old one and its new sibling.  If we fail
		 * here, the next writer to meet the old root finishes the job
		 * (dm_tree_grow_root).
		 */
		if ((rc = dm_tree_grow_root(t, addr, buf)) != DM_OK)
			return rc;
		if (t->root != 0 && t->root != before)
			return DM_OK;
		/* somebody else grew it, maybe without our new node: add it the usual way */
	}
	return level_apply(t, level + 1, up, 1, 0, NULL);
}

/*
 * Apply a sorted batch of items at one level: leaf entries (child = 0) or
 * separators with their child.  del = 1 removes leaf entries instead.
 * *changed counts items inserted or removed.  Per covering node: lock it,
 * then the delete step, or the merge step and a write back (it fits) or
 * the split and parent steps.
 */
static int
level_apply(dm_tree *t, int level, const dm_item *items, int n, int del, int *changed)
{
	int			cap = level == 0 ? t->leaf_cap : t->inner_cap;
	uint8_t    *buf = aligned_alloc(8, t->node_size);
	uint8_t    *rbuf = aligned_alloc(8, t->node_size);
	uint8_t    *hbuf = NULL;		/* hopscotch leaves' scratch copy, when one is met */
	dm_item *merged = malloc(sizeof(dm_item) * (size_t) cap * 2);
	int			rc = DM_OK;
	int			i = 0;
	/* items per step: cap, or fewer where a VAR node had no cut for them (below) */
	int			limit = cap,
				limit_i = -1;

	if (!buf || !rbuf || !merged)
	{
		rc = dm_tree_fail(t, DM_ERR_NOMEM, "out of memory");
		goto out;
	}
	while (i < n)
	{
		dm_wlock	wl;
		dm_gaddr	addr;
		dm_item up;
		int			j, m, added, was_root,
					in_place = 0;

		if (i != limit_i)
			limit = cap;
		if ((rc = lock_covering(t, level, items[i].sep, &wl, buf)) != DM_OK)
			goto out;
		addr = wl.addr;
		j = covered_end(buf, items, i, n, limit);

		if (del)
		{
			int			removed;

			rc = leaf_delete(t, &wl, buf, items, i, j, &removed);
			if (rc == DM_TREE_STALE)
				continue;		/* fenced off: nothing written, redo from a fresh copy */
			if (rc != DM_OK)
				goto out;
			if (removed > 0 && t->exec_active)
				dm_tree_exec_note_changed(t, addr);
			if (changed)
				*changed += removed;
			i = j;
			continue;
		}

		if (j == i + 1 && NODE_HDR(buf)->count < cap && !dm_node_is_var(buf) &&
			items[i].sep.sfx_len == 0 && (level != 0 || !dm_hop_is(buf)))
		{
			/* one item into a FIXED8 node with room: in place (no merged[] round trip) */
			added = insert_one_fixed8(level, buf, &items[i]);
			m = NODE_HDR(buf)->count;
			in_place = 1;
		}
		else if (level == 0 && dm_hop_is(buf))
		{
			if (hbuf == NULL && (hbuf = aligned_alloc(8, t->node_size)) == NULL)
			{
				dm_node_wunlock(t, &wl, buf, 0, 0, NULL, NULL);
				rc = dm_tree_fail(t, DM_ERR_NOMEM, "out of memory");
				goto out;
			}
			/* merged in order from a sorted view (rbuf is free until a split) */
			memcpy(rbuf, buf, t->node_size);
			dm_hop_sorted_view(rbuf);
			added = merge_items(level, rbuf, items, i, j, merged, &m);
		}
		else
		{
			/*
			 * In a VAR tree merged[]'s suffixes point into buf, which is
			 * rebuilt from them: dm_var_build builds aside, and a split
			 * builds the new node before it rebuilds buf (split_write).
			 */
			added = merge_items(level, buf, items, i, j, merged, &m);
		}
		if (added == 0)
		{
			if ((rc = dm_node_wunlock(t, &wl, buf, 0, 0, NULL, NULL)) != DM_OK)
				goto out;
			i = j;
			continue;
		}
		if (t->key_var)
		{
			/* a VAR node fits by bytes: built in place if it does, else split */
			rc = m <= cap ? fill_entries(level, buf, merged, 0, m) : DM_ERR_TOOBIG;
			if (rc != DM_OK && rc != DM_ERR_TOOBIG)
			{
				dm_node_wunlock(t, &wl, buf, 0, 0, NULL, NULL);
				rc = dm_tree_fail(t, rc, "entries cannot make a node");
				goto out;
			}
			in_place = rc == DM_OK;
			rc = DM_OK;
		}
		if ((t->key_var ? in_place : m <= cap) &&
			(level != 0 || !dm_hop_is(buf) || hop_insert(t, &wl, buf, hbuf, items, i, j)))
		{
			if (!in_place && (level != 0 || !dm_hop_is(buf)) &&
				(rc = fill_entries(level, buf, merged, 0, m)) != DM_OK)
			{
				dm_node_wunlock(t, &wl, buf, 0, 0, NULL, NULL);
				rc = dm_tree_fail(t, rc, "entries do not fit their node");
				goto out;
			}
			rc = dm_node_wunlock(t, &wl, buf, 1, 0, NULL, NULL);
			if (rc == DM_TREE_STALE)
				continue;
			if (rc != DM_OK)
				goto out;
			if (t->exec_active)
				dm_tree_exec_note_changed(t, addr);
			if (changed)
				*changed += added;
			i = j;
			continue;
		}

		/* split: the upper half goes to a new right node */
		if (t->exec_active)
		{
			/* a structural change: the executor leaves it to the client */
			dm_node_wunlock(t, &wl, buf, 0, 0, NULL, NULL);
			rc = dm_tree_fail(t, DM_ERR_FALLBACK, "the leaf must be split");
			goto out;
		}
		/*
		 * Items are taken by count (cap), so a VAR node given many long ones
		 * at once may have no cut into two that fit: take half as many and
		 * redo.  For one item there always is one (DESIGN.md §5.2).
		 */
		if (t->key_var && j - i > 1)
		{
			dm_entry	sep;

			if (dm_var_split_point(level, t->node_size, dm_node_low(buf), dm_node_high(buf), merged, m, &sep) < 1)
			{
				if ((rc = dm_node_wunlock(t, &wl, buf, 0, 0, NULL, NULL)) != DM_OK)
					goto out;
				limit_i = i;
				limit = (j - i) / 2;
				continue;
			}
		}
		was_root = dm_entry_cmp(dm_node_low(buf), DM_ENTRY_MIN) == 0 &&
			dm_entry_cmp(dm_node_high(buf), DM_ENTRY_INF) == 0;
		rc = split_write(t, level, &wl, buf, rbuf, merged, m, cap, &up);
		if (rc == DM_TREE_STALE)
			continue;
		if (rc != DM_OK)
			goto out;
		if (changed)
			*changed += added;
		if ((rc = add_to_parent(t, level, addr, buf, was_root, &up)) != DM_OK)
			goto out;
		i = j;
	}
out:
	free(buf);
	free(rbuf);
	free(hbuf);
	free(merged);
	return rc;
}

static int
apply_entries(dm_tree *t, const dm_entry *e, int n, int del, int *changed)
{
	dm_item *items;
	int			rc;

	if (changed)
		*changed = 0;
	if ((rc = dm_tree_writable(t, del ? "delete entries" : "insert entries")) != DM_OK)
		return rc;
	if (n < 0)
		return DM_ERR_INVALID;
	if (n == 0)
		return DM_OK;
	for (int i = 0; i < n; i++)
		if (!dm_tree_entry_valid(t, e[i]) || (i > 0 && dm_entry_cmp(e[i - 1], e[i]) >= 0))
			return dm_tree_fail(t, DM_ERR_INVALID, "entries must be valid and strictly ascending (at %d)", i);
	for (int i = 0; i < n && !t->write_any; i++)
		if (!dm_tree_owns_entry(t, e[i]))
			return dm_tree_fail(t, DM_ERR_NOTOWNER,
								"key %llu is outside the key ranges instance %u owns in this tree",
								(unsigned long long) e[i].key, t->instance);
	if ((items = malloc(sizeof(*items) * (size_t) n)) == NULL)
		return DM_ERR_NOMEM;
	for (int i = 0; i < n; i++)
	{
		items[i].sep = e[i];
		items[i].child = 0;
	}
	rc = level_apply(t, 0, items, n, del, changed);
	free(items);
	return rc;
}

int
dm_tree_insert_sorted(dm_tree *t, const dm_entry *e, int n, int *changed)
{
	if (dm_offload_wanted(t))
		return t->off_hooks->sorted(t, e, n, 0, changed);
	return apply_entries(t, e, n, 0, changed);
}

int
dm_tree_delete_sorted(dm_tree *t, const dm_entry *e, int n, int *changed)
{
	if (dm_offload_wanted(t))
		return t->off_hooks->sorted(t, e, n, 1, changed);
	return apply_entries(t, e, n, 1, changed);
}

int
dm_tree_insert(dm_tree *t, dm_entry e, int *existed)
{
	int			changed = 0;
	int			rc;

	if (dm_offload_wanted(t))
		return t->off_hooks->write(t, e, 0, existed);
	rc = apply_entries(t, &e, 1, 0, &changed);

	if (rc == DM_OK && existed)
		*existed = changed == 0;
	return rc;
}

int
dm_tree_delete(dm_tree *t, dm_entry e, int *existed)
{
	int			changed = 0;
	int			rc;

	if (dm_offload_wanted(t))
		return t->off_hooks->write(t, e, 1, existed);
	rc = apply_entries(t, &e, 1, 1, &changed);

	if (rc == DM_OK && existed)
		*existed = changed != 0;
	return rc;
}

int
dm_tree_contains(dm_tree *t, dm_entry e, int *found)
{
	uint8_t    *buf = aligned_alloc(8, t->node_size);
	dm_gaddr	addr;
	int			rc;

	*found = 0;
	if (buf == NULL)
		return DM_ERR_NOMEM;
	rc = dm_tree_descend(t, e, 0, &addr, buf);
	if (rc == DM_OK)
	{
		if (dm_hop_is(buf))
			*found = dm_hop_find(buf, e) >= 0;
		else
		{
			int			p = dm_leaf_lower_bound(buf, &e);

			*found = p < NODE_HDR(buf)->count && dm_entry_cmp(dm_node_entry(buf, p), e) == 0;
		}
	}
	free(buf);
	return rc;
}
