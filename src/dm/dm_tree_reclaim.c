/*
 * dm_tree_reclaim.c — empty leaves taken out of the tree (dm_tree_reclaim,
 * run by VACUUM) and their addresses reused by later splits (the tree's
 * reuse list, kept by dm_tree_reuse.c), DESIGN.md §5.
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
 * In a VAR tree step 3 can fail: fences are byte strings kept in the node,
 * and a full A may have no room for B's longer high fence.  So before step
 * 1 the new fences are tried on a copy of A (locked until step 3) and B is
 * left alone if they do not fit (a_takes_b_fence).
 *
 * Then B's address goes into the reuse list.  A reclaimer that dies after 2
 * leaves a "half-dead" B: readers step over it (above) and the next writer
 * whose descent moves right from A onto it finishes step 3
 * (dm_tree_finish_unlink, called from lock_covering in dm_tree.c); B is
 * then never reused (one node leaked per such crash).  Verify accepts it.
 *
 * Revival.  Meanwhile A may have filled up (VAR) so that it has no room
 * for B's high fence: step 3 cannot be done, and every writer reaching B
 * would fail.  That writer brings B back to life instead (revive_leaf): B
 * is still DEAD under its lock (taken after A's, the reclaimer's order), a
 * leaf, empty, at A's high fence; DEAD is cleared and B written in A's
 * batch after A's version guard (A rewritten as it is).  B is then a live
 * empty leaf that only A's right link reaches (no downlink in P: step 1's
 * state, a split's right half whose separator is not up yet), and writers
 * in [L, H) use it.  Why that is sound:
 *  - Readers: one that saw B DEAD skipped [L, H) as empty, which it was
 *    (B died empty and stayed so: no writer writes a DEAD node); one that
 *    sees B live reads it as the leaf covering [L, H), which it is.  The
 *    argument below ("dead since td") holds for the last death of X.
 *  - B is written only if A is still the version under which A.right = B,
 *    A.high = B.low and A's lack of room were seen: B written with its own
 *    guard alone could land for a reviver stalled past lock_timeout after
 *    A had shrunk and another writer finished the unlink, making a live B
 *    that no live leaf links but stale copies (a parent's from before step
 *    1, a cursor's of A) still lead to, as the leaf covering [L, H) while A
 *    holds that range's entries.  B needs no guard of its own: while A is
 *    that version, nobody else writes B (writers never write DEAD nodes,
 *    the reclaimer skips them, and B is in no reuse list: it is pushed only
 *    after step 3 rewrote A); a torn B (a killed step 2) was repaired by
 *    our lock (dm_node_lock), and a reviver killed in our batch leaves A
 *    DIRTY with B recorded in its redo slot, as a split's reused node.
 *  - A's new version also fences off a stalled reclaimer's step 3 (it
 *    could not land anyway: A was written since its copy, or it would
 *    have room).  Such a reclaimer then pushes nothing: B is not freed.
 *  - Later passes never take B (no parent lists it), nor B's right
 *    neighbour while B has no downlink (its left sibling in P, A, does not
 *    link it); a descent into [L, H) moves right once more.  Both last
 *    until REINDEX (a split of B posts only the separator of its new half).
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

/*
 * Revive: we hold the VAR leaf A at wa (copy in abuf, its version v), whose
 * right sibling B = A.right was found DEAD with low fence = A's high fence,
 * and A has no room for B's high fence, so the unlink cannot be finished.
 * Bring B back instead: under B's lock (taken after A's, the reclaimer's
 * order), make sure it is still DEAD, a leaf, empty and at A's high fence,
 * clear DEAD and write it in A's batch, after A's guard (A rewritten as it
 * is, with version v+1; dm_tree_io.c's "new nodes of a split": B is on A's
 * memnode, as unlink_leaf requires).  So B comes back only if A is still
 * the version we hold: a reviver whose lock on A was taken over while it
 * stalled, after which A shrank and another writer did finish the unlink,
 * cannot make a live B that no live leaf links (a stale copy of A or of P
 * would lead readers into it as into the leaf covering [L, H), while A
 * holds that range's entries).  B then is a live empty leaf that only A's
 * right link reaches, as a split's right half whose separator is not up
 * yet.  A's lock is released (and B's) either way; DM_OK, or DM_TREE_STALE
 * (B changed meanwhile): descend again.  bbuf is scratch for B.
 */
static int
revive_leaf(dm_tree *t, dm_wlock *wa, void *abuf, void *bbuf)
{
	dm_gaddr	baddr = NODE_HDR(abuf)->right;
	dm_node_hdr *bh = NODE_HDR(bbuf);
	uint8_t    *bp = bbuf;
	uint64_t	held = 0;
	int			rc;

	if (dm_gaddr_node(baddr) != dm_gaddr_node(wa->addr))
	{
		(void) dm_node_wunlock(t, wa, abuf, 0, 0, NULL, NULL);
		return dm_tree_fail(t, DM_ERR_CORRUPT, "dead leaf 0x%llx is not on the memnode of its left neighbour 0x%llx",
							(unsigned long long) baddr, (unsigned long long) wa->addr);
	}
	/* remotely: B is DEAD, so no frame holds it (cacheable()), nor will the revived one until read */
	if ((rc = dm_node_lock(t, baddr, bbuf, &held)) != DM_OK)
	{
		(void) dm_node_wunlock(t, wa, abuf, 0, 0, NULL, NULL);
		return rc;
	}
	if (bh->level != 0 || !(bh->flags & DM_NODE_DEAD) || bh->count != 0 ||
		dm_entry_cmp(dm_node_low(bbuf), dm_node_high(abuf)) != 0)
	{
		(void) dm_node_unlock(t, baddr, held);
		(void) dm_node_wunlock(t, wa, abuf, 0, 0, NULL, NULL);
		return DM_TREE_STALE;
	}
	bh->flags &= ~DM_NODE_DEAD;
	/* B's lock word is cleared by the write of B (its lock is ours) */
	rc = dm_node_wunlock(t, wa, abuf, 1, 1, &baddr, &bp);
	if (rc != DM_OK)
	{
		/* nothing landed (or, on a transport error, perhaps all: then this CAS finds no lock of ours) */
		(void) dm_node_unlock(t, baddr, held);
		return rc;
	}
	t->ctr.dead_leaves_revived++;
	return DM_OK;
}

/*
 * Step 3 on the locked A (wl, copy buf) whose right sibling (copy rbuf) is
 * DEAD with low fence = A's high fence: A takes the dead node's range
 * (*took = 1), or, a VAR leaf with no room for its high fence, the dead leaf
 * is revived (*took = 0).  The lock is released either way.
 */
static int
take_or_revive(dm_tree *t, dm_wlock *wl, void *buf, void *rbuf, int *took)
{
	int			rc;

	*took = 0;
	rc = dm_node_set_fences(buf, dm_node_low(buf), dm_node_high(rbuf));
	if (rc == DM_ERR_TOOBIG)
		return revive_leaf(t, wl, buf, rbuf);
	if (rc != DM_OK)
	{
		(void) dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
		return dm_tree_fail(t, rc, "a leaf cannot take its dead neighbour's fence");
	}
	NODE_HDR(buf)->right = NODE_HDR(rbuf)->right;
	if ((rc = dm_node_wunlock(t, wl, buf, 1, 0, NULL, NULL)) == DM_OK)
		*took = 1;
	return rc;
}

/*
 * We hold the node at wl (copy in buf, at `level`), and its right sibling
 * (copy in rbuf) is DEAD with low fence = our high fence: an unlink whose
 * last step never happened.  Finish it (or revive the dead leaf).  The lock
 * is released either way; DM_OK or DM_TREE_STALE: descend again.
 */
int
dm_tree_finish_unlink(dm_tree *t, dm_wlock *wl, void *buf, void *rbuf)
{
	int			took,
				rc;

	rc = take_or_revive(t, wl, buf, rbuf, &took);
	if (rc == DM_OK && took)
		t->ctr.unlinks_finished++;
	return rc;
}

/* ---- the reclaim pass -------------------------------------------------------- */

/*
 * Can leaf A (abuf) take B's high fence (step 3)?  A FIXED8 node always can;
 * a VAR node keeps its fences as byte strings among its entries, and a full
 * A cannot take a longer one.  Step 3 must not fail once B is dead: every
 * writer that then reached B would try to finish the unlink and fail the
 * same way (dm_tree_finish_unlink), and so would every later pass, so the
 * range would refuse all writes.  A stays locked from this check to step 3,
 * so the check on a copy answers for step 3.
 */
static int
a_takes_b_fence(const dm_tree *t, const uint8_t *abuf, const uint8_t *bbuf)
{
	uint64_t	copy[DM_NODE_MAX / 8];	/* words: node images are read and written as such */

	if (!(NODE_HDR(abuf)->flags & DM_NODE_VAR))
		return 1;
	memcpy(copy, abuf, t->node_size);
	return dm_node_set_fences(copy, dm_node_low(copy), dm_node_high(bbuf)) == DM_OK;
}

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
				took,
				pushed;

	*done = 0;
	if (dm_gaddr_node(aaddr) != dm_gaddr_node(baddr))
		return DM_OK;
	/* (locking one node twice would wait for ourselves: only a damaged parent names a leaf twice) */
	if (aaddr == baddr || aaddr == paddr || baddr == paddr)
		return dm_tree_fail(t, DM_ERR_CORRUPT, "node 0x%llx appears twice among a leaf, its left neighbour "
							"and their parent", (unsigned long long) (aaddr == paddr ? paddr : baddr));
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
		(!t->write_any && dm_tree_own_class(t, dm_node_low(abuf), dm_node_high(abuf)) == DM_OWN_FOREIGN))
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
		dm_entry_cmp(dm_node_low(bbuf), dm_node_high(abuf)) != 0 ||
		(!t->write_any && dm_tree_own_class(t, dm_node_low(bbuf), dm_node_high(bbuf)) != DM_OWN_OWNED) ||
		!a_takes_b_fence(t, abuf, bbuf))
		goto skip;
	if ((rc = dm_node_wlock(t, paddr, 1, DM_FETCH_CTX_NONE, pbuf, &wp)) != DM_OK)
		goto fail;
	if (ph->level != 1 || (ph->flags & DM_NODE_DEAD) || !dm_node_covers(pbuf, dm_node_low(bbuf)))
		goto skip;
	/* step 1: the downlink (none: B lost it in an earlier, interrupted pass) */
	for (int j = 0; j < ph->count; j++)
	{
		if (dm_node_child(pbuf, j) != baddr)
			continue;
		if (j == 0)
			goto skip;			/* P's first child: its separator is P's low fence */
		dm_node_remove(pbuf, j);
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

	/*
	 * step 3: A takes B's range (the writers' code, which cannot fail here:
	 * a_takes_b_fence answered for A, locked since; if it did, B would be
	 * revived, not left dead)
	 */
	rc = take_or_revive(t, &wa, abuf, bbuf, &took);
	wa.addr = 0;
	if (rc == DM_TREE_STALE || (rc == DM_OK && !took))
		return DM_OK;			/* someone finished it for us (B is leaked, not reused), or B is revived */
	if (rc != DM_OK)
		return rc;

	/* B is unreachable, dead, with its last version: free for reuse */
	if ((rc = dm_tree_reuse_push(t, baddr, &pushed)) != DM_OK)
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
	if ((rc = dm_tree_reuse_free_slots(t, &budget)) != DM_OK)
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
		dm_owned_entry high_own;	/* owned: pbuf is read over by unlink_leaf */
		dm_entry	high;
		int			n = ph->count;

		dm_entry_own(&high_own, dm_node_high(pbuf));
		high = high_own.e;
		res->parents++;
		for (int i = 0; i < n; i++)
			addrs[i] = dm_node_child(pbuf, i);
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
