/*
 * dm_tree_reclaim.c — empty leaves taken out of the tree (dm_tree_reclaim,
 * run by VACUUM) and their addresses reused by later splits (the tree's
 * reuse list), DESIGN.md §5.
 *
 * Unlink.  An empty leaf B whose left neighbour A lies under the same parent
 * P (B is not P's first child) is taken out in three fenced writes, holding
 * the locks of A, B and then P (normal writers hold one lock at a time, so
 * they cannot deadlock with this; one reclaimer runs per tree at a time —
 * in PostgreSQL VACUUM's lock guarantees it):
 *
 *   1. P loses B's downlink.  B is still reachable through A's right link,
 *      exactly like the right half of a split whose separator is not up yet
 *      (a legal B-link state: descents reach B by moving right from A).
 *   2. B is marked DM_NODE_DEAD (fences and right link kept).  Now no live
 *      leaf covers B's range [L, H): it is empty and no writer can insert
 *      there (writers never insert into a DEAD node).  A reader that moves
 *      right from a copy whose high fence is L onto a DEAD leaf whose low
 *      fence is L treats [L, H) as empty and goes on to its right link.
 *   3. A takes B's range: A.high = H, A.right = B.right.  B is unreachable.
 *
 * Then B's address goes into the reuse list.  A reclaimer that dies after 2
 * leaves a "half-dead" B: readers step over it (above) and the next writer
 * whose descent moves right from A onto it finishes step 3
 * (dm_tree_finish_unlink, called from lock_covering in dm_tree.c); B is
 * then never reused (one node leaked per such crash).  Verify accepts it.
 *
 * Why "a DEAD leaf reached through a right link whose low fence equals our
 * copy's high fence h has no entries for us" is sound, whatever happened to
 * the address since (freed, reused, dead again): let X be what we read
 * there, dead since time td, and t1 the time our copy (high h, right -> X)
 * was read.  An entry e in [h, X.high) present from t1 until now was, at
 * td if td >= t1, in the one live leaf covering it, which was X: but X was
 * empty when it died.  If td < t1, our copy says that at t1 nothing but X
 * followed h (an unfinished unlink: the range had no live leaf, so no
 * entry), since finishing the unlink moves the copy's high fence past X's.
 * Scans and lookups are not snapshots (dm_tree.h), so entries that came
 * and went in between may be missed, as before.
 *
 * Reuse list.  Meta word 12 of the catalog entry points to a 64 KiB block on
 * the home memnode (made on first use, installed by CAS): word 0 a count
 * hint, then 8191 slots, each 0 or the address of a free node, read 4 KiB
 * at a time.  A free node
 * is a DEAD node, unlinked, with its last version.  Push: CAS(slot: 0 -> B)
 * by the reclaimer (at most as many leaves per pass as there are empty
 * slots).  Pop: CAS(slot: B -> 0) by a splitting writer whose node grant on
 * B's memnode is used up (dm_node_alloc_split): the CAS is the claim, so a
 * node is handed to exactly one writer; a slot that holds B again was
 * pushed again, i.e. B is free again (no ABA harm).  Every change of the
 * list (push, pop, each with its count, and installing the block) is one
 * batch behind the writer fence (home_post: dm_tree_writer.c), the slot
 * CAS a guard so the count moves only with it: a writer fenced off by a
 * takeover changes nothing of the list, as it writes no node.  Memory thus stays with
 * the tree (never returned to the memnode, which would overwrite the lock
 * and version words and could hand the range to another tree), and a
 * tree's footprint is bounded by its peak size plus 8191 free nodes.
 *
 * Why a reused address misleads nobody:
 *  - Versions at one address only grow: a popped node is rewritten with
 *    version = its dead version + 1 (the split's seal), so a stale write
 *    fenced on any earlier version of the address (a stalled writer, a late
 *    tcp batch) can never land (dm_tree_io.c's guard), however long ago it
 *    was computed.
 *  - The new contents are written in the split's batch after the guard of
 *    the node that links them, on the same memnode (reuse is only used
 *    there), so a failed guard leaves the popped node untouched (and it is
 *    pushed back), never a valid-looking unlinked node.
 *  - Freed memory is never garbage: until it is rewritten it is a valid,
 *    DEAD node of this tree, so readers restart rather than retry it.
 *  - Every hop validates what it reads: level, DEAD, low <= e (else restart
 *    from the root), e < high (else move right); an iterator's right step
 *    requires low == its copy's high, its left step high == its low.  A
 *    live node that passes is the one leaf (or node) covering e now, or the
 *    right half of a split in progress (which holds exactly the entries it
 *    is about to publish), so it does not matter how the address was
 *    reached: a stale cache frame, a parent copy held for hours, a cursor's
 *    right link, a replica's read.  None of these need to write anything.
 *  - Writers lock then re-check under the lock (lock_covering); a node that
 *    is reused under a stale locker is written with lock 0 (its whole
 *    image), which can cost the stale locker its lock but not safety: the
 *    lock is only for progress, every write is guarded by the version.
 *  - Frames: B is written DEAD through its frame, which drops it
 *    (cacheable() refuses DEAD nodes), and is invalidated again when freed.
 *
 * Inner nodes are not reclaimed (a parent keeps its first child, so it never
 * empties); why, and the half-dead design that would do it, are in
 * docs/design.md §5 ("Inner-node reclamation: not built").
 */
#include <stdlib.h>
#include <string.h>

#include "dm_tree_int.h"

#define REUSE_WORD		12		/* meta word: the reuse block's address, 0 = none yet */
#define REUSE_BYTES		65536	/* the block: word 0 the count hint, then slots */
#define REUSE_WIN		4096	/* read and scanned a window at a time */
#define REUSE_WINS		(REUSE_BYTES / REUSE_WIN)
#define REUSE_WIN_WORDS	(REUSE_WIN / 8)
#define REUSE_SLOTS		((int) (REUSE_BYTES / 8) - 1)

static dm_gaddr
reuse_word(const dm_tree *t)
{
	/* meta words follow the root word: word k is at meta_addr + 8 * (k - 1) */
	return t->info.meta_addr + 8 * (REUSE_WORD - 1);
}

static int
xport(dm_tree *t, int rc)
{
	return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
}

/*
 * Post ops[0..n) to the home memnode, where the reuse list lives, ops[0]
 * being set here to the writer fence (dm_tree_writer.c): a writer fenced
 * off by a takeover (an old primary) pushes, pops and installs nothing.
 * DM_ERR_FENCED then.
 */
static int
home_post(dm_tree *t, dm_op *ops, int n)
{
	int			rc;

	/* these batches carry no high-water raise: one a write of ours needs goes first */
	if ((rc = dm_tree_writer_settle(t)) != DM_OK)
		return rc;
	if ((rc = dm_tree_fence_op(t, &ops[0], t->home)) != DM_OK)
		return rc;
	if ((rc = dm_post(t->c, ops, n, NULL)) != DM_OK)
		return xport(t, rc);
	if (dm_tree_fenced_off(t, &ops[0]))
		return DM_ERR_FENCED;
	return DM_OK;
}

/* The reuse block's address (0 if there is none and create is 0). */
static int
reuse_block(dm_tree *t, int create, dm_gaddr *out)
{
	uint64_t	w;
	dm_gaddr	blk;
	dm_op		ops[2];
	int			rc;

	*out = 0;
	if (t->reuse_blk != 0)
	{
		*out = t->reuse_blk;
		return DM_OK;
	}
	if ((rc = dm_read(t->c, reuse_word(t), &w, 8)) != DM_OK)
		return xport(t, rc);
	if (w == 0 && create)
	{
		if ((rc = dm_slab_alloc(t->c, t->home, t->info.tree_id, REUSE_BYTES, &blk)) != DM_OK)
			return xport(t, rc);
		dm_op_atomic(&ops[1], DM_OP_CAS, reuse_word(t), 0, blk);
		if ((rc = home_post(t, ops, 2)) != DM_OK)
		{
			(void) dm_slab_free(t->c, t->info.tree_id, blk, REUSE_BYTES);
			return rc;
		}
		if (ops[1].result != 0)
		{
			(void) dm_slab_free(t->c, t->info.tree_id, blk, REUSE_BYTES);
			w = ops[1].result;
		}
		else
			w = blk;
	}
	if (w != 0 && ((w & DM_GADDR_RESERVED_BIT) || dm_gaddr_node(w) != t->home || (w & 7) != 0))
		return dm_tree_fail(t, DM_ERR_CORRUPT, "reuse list of tree %llx points to invalid address 0x%llx",
							(unsigned long long) t->info.tree_id, (unsigned long long) w);
	t->reuse_blk = w;
	*out = w;
	return DM_OK;
}

/* Read window wi of the block into words (REUSE_WIN_WORDS); word 0 of window 0 is the hint. */
static int
read_window(dm_tree *t, dm_gaddr blk, int wi, uint64_t *words)
{
	int			rc = dm_read(t->c, blk + (uint64_t) wi * REUSE_WIN, words, REUSE_WIN);

	if (rc != DM_OK)
		return xport(t, rc);
	if (wi == 0)
	{
		t->reuse_hint = words[0];
		words[0] = 0;			/* not a slot */
	}
	return DM_OK;
}

/* Put a free (DEAD, unlinked) node into an empty slot; *pushed = 0 if the list is full. */
static int
reuse_push(dm_tree *t, dm_gaddr addr, int *pushed)
{
	uint64_t	w[REUSE_WIN_WORDS];
	dm_gaddr	blk;
	int			rc;

	*pushed = 0;
	if ((rc = reuse_block(t, 1, &blk)) != DM_OK)
		return rc;
	for (int k = 0; k < REUSE_WINS && !*pushed; k++)
	{
		int			wi = (int) ((t->reuse_push_win + (unsigned) k) % REUSE_WINS);

		if ((rc = read_window(t, blk, wi, w)) != DM_OK)
			return rc;
		for (int i = wi == 0 ? 1 : 0; i < REUSE_WIN_WORDS && !*pushed; i++)
		{
			dm_gaddr	slot = blk + (uint64_t) wi * REUSE_WIN + 8 * (uint64_t) i;

			dm_op		ops[3];

			if (w[i] != 0)
				continue;
			/* the slot, and only if we got it the count: a failed guard ends the batch */
			dm_op_guard(&ops[1], slot, 0, addr);
			dm_op_atomic(&ops[2], DM_OP_FAA, blk, 1, 0);
			if ((rc = home_post(t, ops, 3)) != DM_OK)
				return rc;
			if (!dm_op_guard_failed(&ops[1]))
			{
				*pushed = 1;
				t->reuse_push_win = (unsigned) wi;
				t->reuse_hint = ops[2].result + 1;
			}
		}
	}
	if (t->cache)
		dm_cache_invalidate(t->cache, t->ctag, addr);
	return DM_OK;
}

int
dm_tree_reuse_pop(dm_tree *t, uint16_t memnode, dm_gaddr *addr, uint64_t *version)
{
	uint64_t	w[REUSE_WIN_WORDS];
	uint8_t    *nb;
	dm_gaddr	blk;
	int			rc;

	/* no list yet: look for one now and then only (a VACUUM elsewhere makes it) */
	if (t->reuse_blk == 0 && (t->reuse_probe++ % 16) != 0)
		return DM_ERR_NOTFOUND;
	if ((rc = reuse_block(t, 0, &blk)) != DM_OK)
		return rc;
	if (blk == 0)
		return DM_ERR_NOTFOUND;
	/* empty a moment ago: look at its count now and then only */
	if ((int64_t) t->reuse_hint <= 0)
	{
		if ((t->reuse_probe++ % 4) != 0)
			return DM_ERR_NOTFOUND;
		if ((rc = dm_read(t->c, blk, &t->reuse_hint, 8)) != DM_OK)
			return xport(t, rc);
		if ((int64_t) t->reuse_hint <= 0)
			return DM_ERR_NOTFOUND;
	}
	if ((nb = aligned_alloc(8, t->node_size)) == NULL)
		return dm_tree_fail(t, DM_ERR_NOMEM, "out of memory");
	rc = DM_ERR_NOTFOUND;
	for (int k = 0; k < REUSE_WINS; k++)
	{
		int			wi = (int) ((t->reuse_pop_win + (unsigned) k) % REUSE_WINS);
		int			r;

		if ((r = read_window(t, blk, wi, w)) != DM_OK)
		{
			rc = r;
			goto out;
		}
		for (int i = 0; i < REUSE_WIN_WORDS; i++)
		{
			dm_gaddr	a = w[i];
			dm_gaddr	slot = blk + (uint64_t) wi * REUSE_WIN + 8 * (uint64_t) i;
			dm_op		ops[3];

			if (a == 0 || dm_gaddr_node(a) != memnode)
				continue;
			/* the claim: whoever empties the slot has the node (and counts it) */
			dm_op_guard(&ops[1], slot, a, 0);
			dm_op_atomic(&ops[2], DM_OP_FAA, blk, (uint64_t) -1, 0);
			if ((r = home_post(t, ops, 3)) != DM_OK)
			{
				rc = r;
				goto out;
			}
			if (dm_op_guard_failed(&ops[1]))
				continue;		/* taken by another writer */
			t->reuse_pop_win = (unsigned) wi;
			t->reuse_hint = ops[2].result - 1;
			if ((r = dm_node_read(t, a, nb)) != DM_OK)
			{
				rc = r;
				goto out;
			}
			if (!(NODE_HDR(nb)->flags & DM_NODE_DEAD) || (NODE_HDR(nb)->version & DM_VERSION_DIRTY))
				continue;		/* not a free node (damaged list): leave it alone */
			*addr = a;
			*version = NODE_HDR(nb)->version;
			t->ctr.nodes_reused++;
			rc = DM_OK;
			goto out;
		}
	}
	t->reuse_hint = 0;			/* nothing for this memnode: look again later */
out:
	free(nb);
	return rc;
}

int
dm_tree_reuse_return(dm_tree *t, dm_gaddr addr)
{
	int			pushed;
	int			rc = reuse_push(t, addr, &pushed);

	if (rc == DM_OK && pushed)
		t->ctr.nodes_reused--;
	return rc;
}

int
dm_tree_reuse_list(dm_tree *t, dm_gaddr *addrs, int max, int *n)
{
	uint64_t   *w;
	dm_gaddr	blk;
	int			rc;

	*n = 0;
	if ((rc = reuse_block(t, 0, &blk)) != DM_OK || blk == 0)
		return rc;
	if ((w = malloc(REUSE_BYTES)) == NULL)
		return dm_tree_fail(t, DM_ERR_NOMEM, "out of memory");
	if ((rc = dm_read(t->c, blk, w, REUSE_BYTES)) != DM_OK)
		rc = xport(t, rc);
	else
		for (int i = 1; i <= REUSE_SLOTS; i++)
			if (w[i] != 0)
			{
				if (*n < max)
					addrs[*n] = w[i];
				(*n)++;
			}
	free(w);
	return rc;
}

/*
 * We hold the node at wl (copy in buf, at `level`), and its right sibling
 * (copy in rbuf) is DEAD with low fence = our high fence: an unlink whose
 * last step never happened.  Take the dead node's range (step 3).  The lock
 * is released either way; DM_OK or DM_TREE_STALE: descend again.
 */
int
dm_tree_finish_unlink(dm_tree *t, dm_wlock *wl, void *buf, const void *rbuf)
{
	dm_node_hdr *h = NODE_HDR(buf);
	const dm_node_hdr *rh = NODE_HDR(rbuf);
	int			rc;

	h->high = rh->high;
	h->right = rh->right;
	rc = dm_node_wunlock(t, wl, buf, 1, 0, NULL, NULL);
	if (rc == DM_OK)
		t->ctr.unlinks_finished++;
	return rc;
}

/* ---- the reclaim pass -------------------------------------------------------- */

/* Release what unlink_leaf holds (nothing changed). */
static void
release(dm_tree *t, dm_wlock *wl, void *buf)
{
	if (wl->addr != 0)
		(void) dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
	wl->addr = 0;
}

/*
 * Take the empty leaf at baddr out, its left neighbour being aaddr and its
 * parent paddr (DM_OK and *done = 1 if reclaimed).
 */
static int
unlink_leaf(dm_tree *t, dm_gaddr paddr, dm_gaddr aaddr, dm_gaddr baddr, uint8_t *abuf,
			uint8_t *bbuf, uint8_t *pbuf, int *done)
{
	dm_wlock	wa = {0},
				wb = {0},
				wp = {0};
	dm_node_hdr *ah = NODE_HDR(abuf),
			   *bh = NODE_HDR(bbuf),
			   *ph = NODE_HDR(pbuf);
	int			rc,
				pushed;

	*done = 0;
	if (dm_gaddr_node(aaddr) != dm_gaddr_node(baddr))
		return DM_OK;
	if ((rc = dm_node_wlock(t, aaddr, 0, DM_FETCH_CTX_NONE, abuf, &wa)) != DM_OK)
		return rc;
	/*
	 * With several writers (each owning its key ranges and writing owned
	 * nodes without the remote lock), only B of our own ranges, and A not
	 * wholly another's, may be changed here.  The only writer (single-writer
	 * mode, a PostgreSQL primary) writes every node under the lock its
	 * class needs: any empty leaf is its to reclaim.
	 */
	if (ah->level != 0 || (ah->flags & DM_NODE_DEAD) || ah->right != baddr ||
		(!t->write_any && dm_tree_own_class(t, ah->low, ah->high) == DM_OWN_FOREIGN))
	{
		release(t, &wa, abuf);
		return DM_OK;
	}
	if ((rc = dm_node_wlock(t, baddr, 0, DM_FETCH_CTX_NONE, bbuf, &wb)) != DM_OK)
	{
		release(t, &wa, abuf);
		return rc;
	}
	if (bh->level != 0 || (bh->flags & DM_NODE_DEAD) || bh->count != 0 ||
		dm_entry_cmp(bh->low, ah->high) != 0 ||
		(!t->write_any && dm_tree_own_class(t, bh->low, bh->high) != DM_OWN_OWNED))
		goto skip;
	if ((rc = dm_node_wlock(t, paddr, 1, DM_FETCH_CTX_NONE, pbuf, &wp)) != DM_OK)
		goto fail;
	if (ph->level != 1 || (ph->flags & DM_NODE_DEAD) || !dm_node_covers(pbuf, bh->low))
		goto skip;
	/* step 1: the downlink (none: B lost it in an earlier, interrupted pass) */
	for (int j = 0; j < ph->count; j++)
	{
		if (INNER_ENTS(pbuf)[j].child != baddr)
			continue;
		if (j == 0)
			goto skip;			/* P's first child: its separator is P's low fence */
		memmove(&INNER_ENTS(pbuf)[j], &INNER_ENTS(pbuf)[j + 1],
				(size_t) (ph->count - j - 1) * sizeof(dm_inner_ent));
		ph->count--;
		rc = dm_node_wunlock(t, &wp, pbuf, 1, 0, NULL, NULL);
		wp.addr = 0;
		if (rc == DM_TREE_STALE)
			goto skip;
		if (rc != DM_OK)
			goto fail;
		break;
	}
	release(t, &wp, pbuf);

	/* step 2: B dead (a half-dead leaf if we stop here) */
	bh->flags |= DM_NODE_DEAD;
	rc = dm_node_wunlock(t, &wb, bbuf, 1, 0, NULL, NULL);
	wb.addr = 0;
	if (rc == DM_TREE_STALE)
		goto skip;
	if (rc != DM_OK)
		goto fail;

	/* step 3: A takes B's range */
	ah->high = bh->high;
	ah->right = bh->right;
	rc = dm_node_wunlock(t, &wa, abuf, 1, 0, NULL, NULL);
	wa.addr = 0;
	if (rc == DM_TREE_STALE)
		return DM_OK;			/* someone finished it for us: B is leaked, not reused */
	if (rc != DM_OK)
		return rc;

	/* B is unreachable, dead, with its last version: free for reuse */
	if ((rc = reuse_push(t, baddr, &pushed)) != DM_OK)
		return rc;
	t->ctr.leaves_reclaimed++;
	*done = 1;
	return DM_OK;

skip:
	rc = DM_OK;
fail:
	release(t, &wp, pbuf);
	release(t, &wb, bbuf);
	release(t, &wa, abuf);
	return rc;
}

/* Free slots in the reuse list: how many leaves this pass may take out. */
static int
free_slots(dm_tree *t, int *n)
{
	dm_gaddr	blk;
	int			used,
				rc;

	*n = 0;
	if ((rc = reuse_block(t, 1, &blk)) != DM_OK || (rc = dm_tree_reuse_list(t, NULL, 0, &used)) != DM_OK)
		return rc;
	*n = REUSE_SLOTS - used;
	return DM_OK;
}

int
dm_tree_reclaim(dm_tree *t, dm_reclaim_result *res)
{
	uint32_t	ns = t->node_size;
	uint8_t    *pbuf = aligned_alloc(8, ns);
	uint8_t    *abuf = aligned_alloc(8, ns);
	uint8_t    *bbuf = aligned_alloc(8, ns);
	uint8_t    *kids = aligned_alloc(8, (size_t) ns * (size_t) t->inner_cap);
	dm_gaddr   *addrs = malloc(sizeof(dm_gaddr) * (size_t) t->inner_cap);
	dm_gaddr	paddr;
	int			budget,
				rc;

	memset(res, 0, sizeof(*res));
	if (!pbuf || !abuf || !bbuf || !kids || !addrs)
	{
		rc = dm_tree_fail(t, DM_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((rc = free_slots(t, &budget)) != DM_OK)
		goto out;
	/* the leftmost node of level 1 (a tree of one leaf has nothing to reclaim) */
	if ((rc = dm_tree_read_root(t, &paddr)) != DM_OK || (rc = dm_node_read(t, paddr, pbuf)) != DM_OK)
		goto out;
	if (NODE_HDR(pbuf)->level == 0)
		goto out;
	if ((rc = dm_tree_descend(t, DM_ENTRY_MIN, 1, &paddr, pbuf)) != DM_OK)
		goto out;
	for (;;)
	{
		dm_node_hdr *ph = NODE_HDR(pbuf);
		dm_entry	high = ph->high;
		int			n = ph->count;

		res->parents++;
		for (int i = 0; i < n; i++)
			addrs[i] = INNER_ENTS(pbuf)[i].child;
		if ((rc = dm_node_read_many(t, addrs, n, kids)) != DM_OK)
			goto out;
		/* right to left: each unlink leaves the next candidate's left neighbour in place */
		for (int i = n - 1; i >= 0; i--)
		{
			const dm_node_hdr *kh = NODE_HDR(kids + (size_t) i * ns);
			int			done;

			if (kh->level != 0)
				continue;
			res->leaves++;
			if (kh->count != 0 || (kh->flags & DM_NODE_DEAD))
				continue;
			res->empty_leaves++;
			if (i == 0 || budget == 0)
				continue;		/* a first child stays; or the reuse list is full */
			/* pbuf is free for P's locked copy: its children and high fence are saved */
			if ((rc = unlink_leaf(t, paddr, addrs[i - 1], addrs[i], abuf, bbuf, pbuf, &done)) != DM_OK)
				goto out;
			if (done)
			{
				res->leaves_reclaimed++;
				budget--;
			}
		}
		if (dm_entry_cmp(high, DM_ENTRY_INF) == 0)
			break;
		/* the next parent: the one covering our high fence, found afresh */
		if ((rc = dm_tree_descend(t, high, 1, &paddr, pbuf)) != DM_OK)
			goto out;
	}
	rc = DM_OK;
out:
	if (rc == DM_OK)
	{
		int			nfree;

		if (dm_tree_reuse_list(t, NULL, 0, &nfree) == DM_OK)
			res->free_nodes = (uint64_t) nfree;
	}
	free(pbuf);
	free(abuf);
	free(bbuf);
	free(kids);
	free(addrs);
	return rc;
}
