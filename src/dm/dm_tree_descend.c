/*
 * dm_tree_descend.c — finding the node that covers an entry: descent from
 * the root (or, in executor mode, from the offloaded start node) through the
 * cache, following right links past half-done splits and restarting when a
 * node turns out to be reused or dead; and root growth (dm_tree_grow_root),
 * which the splitter of a root does, and anyone who meets a root whose
 * split never got its new root.  Writes (dm_tree.c) lock what this finds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_tree_int.h"

/* ---- root growth ------------------------------------------------------------- */

/*
 * The level of `root` has more nodes than a new root holds.  Most likely
 * the root grew long ago and the level below it has grown wide since: our
 * look at the root word was stale (we were stalled).  Then there is nothing
 * to do (DM_OK, t->root cleared so the caller reads the root word again).
 * The same holds whatever made the new root full: its count (FIXED8) or its
 * bytes (VAR: long separators fill it before inner_cap children; before
 * this was checked for them too, a writer stalled in a root split failed
 * with "level 0 has more nodes than a root holds", test_tree_faults+var).
 */
static int
level_too_wide(dm_tree *t, dm_gaddr root, int level)
{
	dm_gaddr	now;
	int			rc;

	if ((rc = dm_read(t->c, t->info.root_addr, &now, sizeof(now))) != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	if (now != root)
	{
		t->root = 0;
		return DM_OK;
	}
	return dm_tree_fail(t, DM_ERR_CORRUPT, "level %d has more nodes than a root holds and no parent", level);
}

/*
 * Install a new root above the level of `root` (whose copy is rootbuf),
 * which no longer spans the key space: its split landed but the new root
 * did not, or not yet.  The splitter does this itself right after a root
 * split; anyone else does it when it finds the root word pointing at such a
 * node — the splitter ran out of memory, timed out, was cancelled or killed
 * between its split and the root CAS (as nbtree finishes incomplete
 * splits), or is simply still on its way.  Without this, every later split
 * at that level would wait forever for a parent level that never comes.
 *
 * The new root lists every node of the level, found by walking the right
 * links from the old root (the leftmost node: low fence MIN), each with its
 * low fence as separator.  A node that splits during the walk is fine
 * either way: if we read it after the split we list its new sibling too,
 * if before, the sibling is reached by its right link like any half-done
 * split, and its splitter adds its separator above later (a duplicate
 * separator is ignored there).  The CAS on the root word decides between
 * concurrent growers; a loser's node is never reachable and is leaked (one
 * node, only when two growers race for the same root).
 */
int
dm_tree_grow_root(dm_tree *t, dm_gaddr root, const void *rootbuf)
{
	const dm_node_hdr *rh = NODE_HDR(rootbuf);
	int			level = rh->level;
	uint8_t    *nb = aligned_alloc(8, t->node_size);
	uint8_t    *cur = aligned_alloc(8, t->node_size);
	dm_gaddr	last = root;
	dm_gaddr	naddr, next;
	uint64_t	old;
	int			n = 0, rc = DM_OK;

	if ((rc = dm_tree_writable(t, "grow the root")) != DM_OK)
		goto out;
	if (nb == NULL || cur == NULL)
	{
		rc = dm_tree_fail(t, DM_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (level + 1 >= DM_TREE_MAX_LEVELS)
	{
		/* a limit, not damage: the tree is sound, only one level too tall to grow */
		rc = dm_tree_fail(t, DM_ERR_TOOBIG, "tree would grow past %d levels", DM_TREE_MAX_LEVELS);
		goto out;
	}
	(void) dm_tree_node_init(t, nb, level + 1, DM_ENTRY_MIN, DM_ENTRY_INF);	/* no suffixes: fits */
	memcpy(cur, rootbuf, t->node_size);
	/* appended as found: a separator's suffix is copied before cur is read over */
	dm_node_append(nb, (dm_item) {DM_ENTRY_MIN, root});
	n++;
	while ((next = NODE_HDR(cur)->right) != 0)
	{
		dm_owned_entry prev_high;	/* owned: cur is read over next */

		dm_entry_own(&prev_high, dm_node_high(cur));
		if (n == t->inner_cap)
		{
			rc = level_too_wide(t, root, level);
			goto out;
		}
		if ((rc = dm_node_read(t, next, cur)) != DM_OK)
			goto out;
		if (NODE_HDR(cur)->level != level || (NODE_HDR(cur)->flags & DM_NODE_DEAD) ||
			dm_entry_cmp(dm_node_low(cur), prev_high.e) != 0)
		{
			rc = dm_tree_fail(t, DM_ERR_CORRUPT, "sibling chain at level %d broken at node 0x%llx",
							  level, (unsigned long long) next);
			goto out;
		}
		/* a VAR root fills by bytes, usually before inner_cap children */
		if ((rc = dm_node_append(nb, (dm_item) {dm_node_low(cur), next})) == DM_ERR_TOOBIG)
		{
			rc = level_too_wide(t, root, level);
			goto out;
		}
		if (rc != DM_OK)
		{
			rc = dm_tree_fail(t, rc, "level %d: cannot list node 0x%llx in a new root", level,
							  (unsigned long long) next);
			goto out;
		}
		n++;
		last = next;
	}
	if (dm_entry_cmp(dm_node_high(cur), DM_ENTRY_INF) != 0)
	{
		rc = dm_tree_fail(t, DM_ERR_CORRUPT, "node at 0x%llx has a high fence but no right sibling",
						  (unsigned long long) last);
		goto out;
	}
	if (n == 1)
		goto out;				/* the root spans everything after all */
	dm_node_seal(nb);
	if ((rc = dm_node_alloc(t, dm_tree_place(t, level + 1, dm_gaddr_node(root)), &naddr)) != DM_OK)
		goto out;
	/* for replicas' caches, before posting: the writes may land even if a post fails */
	dm_tree_wlog_add(t, naddr);
	{
		/* both fenced: the new root on its memnode, then the root word on the home */
		dm_op		ops[2];

		if ((rc = dm_tree_fence_op(t, &ops[0], dm_gaddr_node(naddr))) != DM_OK)
			goto out;
		dm_op_write(&ops[1], naddr, nb, dm_node_used_bytes(nb));
		if ((rc = dm_post(t->c, ops, 2, NULL)) != DM_OK)
		{
			rc = dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
			goto out;
		}
		if (dm_tree_fenced_off(t, &ops[0]))
		{
			rc = DM_ERR_FENCED;
			goto out;
		}
		if ((rc = dm_tree_fence_op(t, &ops[0], t->home)) != DM_OK)
			goto out;
		dm_op_atomic(&ops[1], DM_OP_CAS, t->info.root_addr, root, naddr);
		if ((rc = dm_post(t->c, ops, 2, NULL)) != DM_OK)
		{
			rc = dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
			goto out;
		}
		if (dm_tree_fenced_off(t, &ops[0]))
		{
			rc = DM_ERR_FENCED;
			goto out;
		}
		old = ops[1].result;
	}
	if (old == root)
	{
		t->root = naddr;
		t->ctr.root_grows++;
	}
	else
	{
		t->root = 0;			/* somebody else grew it: read the root word again */
		t->ctr.nodes_unlinked++;
	}
out:
	free(nb);
	free(cur);
	return rc;
}

/* ---- descent ------------------------------------------------------------------ */

/*
 * Shared by descend (node covering e) and descend_before (leaf holding the
 * greatest entry < e): `before` shifts every fence comparison by one so
 * that an entry equal to a fence belongs to the node on its left.
 *
 * The cached root may be stale (the root grew): if e lies right of it, or
 * the tree is not yet as tall as `level`, the root word is read again, with
 * backoff.  A root read from the root word that does not span the key space
 * is the left half of a root split whose new root was not installed: a
 * writer (no_read: lock_covering) installs one (dm_tree_grow_root) and starts over;
 * a reader (DM_DESCEND_READER too) follows right links, as past any
 * half-done split.
 */
int
dm_tree_descend_impl(dm_tree *t, dm_entry e, int level, int before, int no_read, dm_gaddr *out_addr,
			 void *buf, dm_fetch_ctx *out_ctx)
{
	int			rc;

	for (int restarts = 0; restarts < DM_TREE_MAX_RESTARTS; restarts++)
	{
		dm_gaddr	addr = t->root;
		int			fresh = 0;
		int			top = 1;
		int			hinted = 0;
		uint32_t	frame = DM_FRAME_NONE;
		/* the cached parent we came through, if it may be stale (shared) */
		dm_gaddr	stale_suspect = 0;
		/* reached by a right link from a copy whose high fence was came_high */
		int			via_right = 0;
		/* owned: buf is read over by the right sibling it is compared with */
		dm_owned_entry came_high;

		came_high.e = DM_ENTRY_MIN;
		if (restarts > 0 && t->exec_active)
			return dm_tree_fail(t, DM_ERR_FALLBACK, "the start node no longer covers the entry");
		if (restarts > 0)
		{
			t->ctr.restarts++;
			if (restarts > 4)
			{
				struct timespec ts = {0, restarts < 64 ? 1000 : 100000};

				nanosleep(&ts, NULL);
			}
		}
		if (t->exec_active)
		{
			/* the executor starts below the root: it may move right, never grows the root */
			addr = t->exec_start;
			top = 0;
		}
		else if (restarts == 0 && t->desc_hint != 0 && no_read != DM_DESCEND_WRITER && t->desc_hint_level >= level &&
				 dm_entry_cmp(e, t->desc_hint_e) == 0)
		{
			/*
			 * Where the offload policy's walk through the cache missed (a
			 * child of a cached owned node that covered e): read as that
			 * child would be in a descent from the root, moving right past
			 * splits; a stale one (reused, merged) starts over from the
			 * root like any stale node.
			 */
			addr = t->desc_hint;
			top = 0;
			hinted = 1;
		}
		else if (addr == 0)
		{
			if ((rc = dm_tree_read_root(t, &addr)) != DM_OK)
				return rc;
			fresh = 1;
		}
		if (hinted)
		{
			dm_fetch_ctx hctx = {t->desc_hint_pframe, t->desc_hint_slot, t->desc_hint_frame, 0};

			t->desc_hint = 0;
			t->ctr.hinted_descents++;
			/*
			 * A reader that wants only the address of the node at `level`
			 * (a hopscotch lookup, which then reads one neighbourhood of
			 * the leaf, or the leaf from the cache) gets it as a descent
			 * from the parent would give it: unread.  Reading it here read
			 * every leaf it missed whole.  The reader validates what it
			 * reads there (level, fences, DEAD) as after any descent.
			 */
			if (no_read && t->desc_hint_level == level && hctx.slot >= 0)
			{
				*out_addr = addr;
				if (out_ctx)
					*out_ctx = hctx;
				return DM_OK;
			}
			if ((rc = dm_node_fetch(t, addr, t->desc_hint_level, hctx, buf, &frame)) != DM_OK)
				return rc;
		}
		else
		{
			dm_fetch_ctx rctx = {DM_FRAME_NONE, -1, t->root_frame, 0};

			if ((rc = dm_node_fetch(t, addr, -1, rctx, buf, &frame)) != DM_OK)
				return rc;
			t->root_frame = frame;
		}
		for (;;)
		{
			dm_node_hdr *h = NODE_HDR(buf);
			dm_entry	low = dm_node_low(buf);
			dm_entry	high = dm_node_high(buf);
			int			at_min = dm_entry_cmp(low, DM_ENTRY_MIN) == 0;
			int			at_inf = dm_entry_cmp(high, DM_ENTRY_INF) == 0;
			int			left_of_low = before ? !at_min && dm_entry_cmp(e, low) <= 0
				: dm_entry_cmp(e, low) < 0;
			int			right_of_high = !at_inf &&
				(before ? dm_entry_cmp(e, high) > 0 : dm_entry_cmp(e, high) >= 0);

			if (top && fresh && no_read == DM_DESCEND_WRITER && !at_inf && !(h->flags & DM_NODE_DEAD) && at_min)
			{
				/* an unfinished root split: finish it, then descend again */
				if ((rc = dm_tree_grow_root(t, addr, buf)) != DM_OK)
					return rc;
				t->ctr.root_repairs++;
				break;
			}
			/*
			 * A dead leaf right after the leaf we came from: an empty range
			 * (an unlink in progress or done, dm_tree_reclaim.c).  A reader
			 * takes it as the leaf for e (it has no entries) or moves on
			 * through its right link; a writer starts over (lock_covering
			 * finishes the unlink).
			 */
			int			empty_range = via_right && no_read != DM_DESCEND_WRITER && level == 0 && h->level == 0 &&
				(h->flags & DM_NODE_DEAD) && dm_entry_cmp(low, came_high.e) == 0;

			if (((h->flags & DM_NODE_DEAD) && !empty_range) || left_of_low || h->level < level ||
				(t->exec_active && addr == t->exec_start &&
				 (t->exec_seen_level = h->level, t->exec_level >= 0 && h->level != t->exec_level)))
				break;			/* stale: start over from the root word */
			if (right_of_high)
			{
				dm_gaddr	right = h->right;

				if (top && !fresh)
					break;		/* the cached root is no longer the root */
				if (right == 0)
					return dm_tree_fail(t, DM_ERR_CORRUPT, "node at 0x%llx has a high fence but no right sibling",
										(unsigned long long) addr);
				/* a cached shared parent that sent us here may lack a separator */
				if (stale_suspect && t->cache)
				{
					dm_cache_invalidate(t->cache, t->ctag, stale_suspect);
					stale_suspect = 0;
				}
				if (t->exec_active && (rc = dm_tree_exec_check(t, right, "right sibling")) != DM_OK)
					return rc;
				dm_entry_own(&came_high, high);
				via_right = 1;
				if ((rc = dm_node_fetch(t, right, h->level, DM_FETCH_CTX_NONE, buf, &frame)) != DM_OK)
					return rc;
				addr = right;
				continue;
			}
			if (h->level == level)
			{
				*out_addr = addr;
				return DM_OK;
			}
			else
			{
				int			i = dm_inner_child_index(buf, &e);
				int			want = h->level - 1;
				dm_gaddr	child;
				dm_fetch_ctx ctx;

				/* before: the child holding entries < e has the last sep < e */
				while (before && i > 0 && dm_entry_cmp(dm_node_sep(buf, i), e) >= 0)
					i--;
				child = dm_node_child(buf, i);
				ctx.pframe = frame;
				ctx.slot = i;
				ctx.hint = frame != DM_FRAME_NONE ? t->hints[i] : DM_FRAME_NONE;
				/* (by dm_tree_node_class: a replica's inner nodes are shared, never owned) */
				stale_suspect = frame != DM_FRAME_NONE &&
					dm_tree_node_class(t, h) != DM_OWN_OWNED ? addr : 0;
				ctx.suspect = stale_suspect;
				if (t->exec_active && (rc = dm_tree_exec_check(t, child, "child")) != DM_OK)
					return rc;

				/*
				 * A writer locks the node next, which reads it again: stop at
				 * its address (the lock's read validates fences and level).
				 */
				if (no_read && want == level)
				{
					*out_addr = child;
					if (out_ctx)
						*out_ctx = ctx;
					return DM_OK;
				}
				if ((rc = dm_node_fetch(t, child, want, ctx, buf, &frame)) != DM_OK)
					return rc;
				addr = child;
				top = 0;
				via_right = 0;
				if (NODE_HDR(buf)->level != want)
					break;
			}
		}
		if (stale_suspect && t->cache)
			dm_cache_invalidate(t->cache, t->ctag, stale_suspect);
		t->root = 0;
	}
	return dm_tree_fail(t, DM_ERR_CORRUPT, "descent did not converge after %d restarts", DM_TREE_MAX_RESTARTS);
}

int
dm_tree_descend(dm_tree *t, dm_entry e, int level, dm_gaddr *addr, void *buf)
{
	return dm_tree_descend_impl(t, e, level, 0, 0, addr, buf, NULL);
}

int
dm_tree_descend_before(dm_tree *t, dm_entry e, dm_gaddr *addr, void *buf)
{
	return dm_tree_descend_impl(t, e, 0, 1, 0, addr, buf, NULL);
}
