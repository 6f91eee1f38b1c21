/*
 * dm_tree_io.c — remote I/O on tree nodes: validated optimistic reads,
 * lock acquisition (CAS and read in one round trip), fenced write-and-unlock
 * (one round trip).  Where new nodes come from is dm_tree_alloc.c; the
 * redo slots described below are kept in dm_tree_redo.c; reads and write
 * locks through the node cache are dm_tree_cacheio.c's.
 *
 * Fencing (why a lock is not enough).  A lock word cannot stop a write its
 * holder already issued: a tcp batch sent before an op_timeout (or a cancel)
 * can execute at the memnode long after, when the lock has been taken over
 * or is free again, and a process stalled past lock_timeout (taken over as
 * if dead) writes when it wakes.  So every node write is a conditional
 * batch on the node's VERSION word (write_nodes):
 *
 *     CAS(version: v -> (v+1) | DIRTY)  flagged DM_OPF_GUARD
 *     [new, still unreachable nodes of a split, same memnode]
 *     WRITE bytes [16, used)            checksum, header, entries
 *     WRITE version = v+1               clean again
 *     CAS(lock: ours -> 0)              release (never a blind store)
 *
 * v is the version of the copy the write was computed from.  A failed guard
 * stops the batch where it is, on the memnode's executor and on the shm
 * client's alike, so a stale writer (its copy predates a write that landed)
 * lands nothing, whenever its batch runs; the writer learns it
 * (DM_TREE_STALE) and redoes its operation from a fresh copy.  Two writers
 * can never both land on one node: the CAS admits one per version.  While a
 * write is under way the version word is DIRTY, which no checksum matches,
 * so no reader and no writer accepts the node until the last store of the
 * winning write is done: a writer that took a lock over cannot compute its
 * write from a half-landed one and race the rest of it.  The lock is thus
 * only for progress (one writer at a time, no wasted work); safety rests on
 * the guard, and takeover of a lock after lock_timeout (dm_node_lock) is
 * mere liveness for dead holders: the worst a live holder taken over can
 * do is waste its own write.
 *
 * Torn nodes (writers killed mid-write over shm).  A memnode executes a
 * tcp batch whole (and one killed in the middle of a batch finishes it from
 * its journal when it reattaches: dm_journal.h), but a shm client stores
 * the words itself: killed between
 * its guard and its last store, it leaves the node DIRTY for good.  So a
 * handle writing over shm first copies the node's full new image into its
 * own redo slot (one node it allocates per memnode, written in
 * the same batch, before the guard), and its lock value names that slot
 * (DM_LOCK_REDO; shm writes always take the remote lock, owned nodes too,
 * which there costs a CAS and no round trip).  A DIRTY node's lock is
 * still held by its writer (the release is the last op).  Whoever takes
 * that lock over after lock_timeout — a writer, or a reader that found the
 * node DIRTY for longer than its retries (dm_node_read) — finds the slot
 * from the lock value and, if the slot holds an image of exactly this node
 * (address, version = the DIRTY version made clean, valid checksum),
 * stores it and makes the version clean (dm_tree_repair_locked in
 * dm_tree_redo.c): the very bytes the dead writer was storing, so
 * repairing is idempotent, and done under the lock, so no other writer is
 * writing the node meanwhile.  The residual
 * risk is a writer that is not dead but stalled between two stores for
 * longer than lock_timeout (default 10 s): its remaining stores, equal to
 * the repaired bytes, would land on whatever was written after the repair.
 * Its lock value cannot tell a stalled process from a dead one; the
 * lock_timeout is chosen so that the first does not happen.
 *
 * Redo slots are guarded too.  A slot is freed (dm_tree_redo_release,
 * between operations) and its memory handed out again, as anyone's node or
 * slot, while a batch of its old writer may still be on its way: a shm
 * write abandoned on a timeout that a process executes later, a writer
 * stalled inside its batch.  The redo stores come before the node's guard,
 * so the node guard cannot stop them.  So a slot's first word holds a tag
 * (unique per slot the tree ever had: meta word 13 counts them, and its
 * memnode field is not the slot's memnode, so no lock word of a node there
 * can hold it), and a write claims the slot by a guard CAS(tag -> tag |
 * BUSY) before its redo stores and gives it back (BUSY cleared) after its
 * last store to the node:
 *
 *   [fence] GUARD CAS(slot: tag -> tag|BUSY)  WRITE slot+8 target, slot+16
 *   image  GUARD CAS(version ...)  ...  WRITE version  CAS(slot: tag|BUSY ->
 *   tag)  CAS(lock: ours -> 0)
 *
 * Freeing first CASes tag -> 0; only if that succeeds (no write holds the
 * slot) is it freed, so no late batch can pass the slot guard afterwards,
 * whatever the memory has become.  If it fails (BUSY: a batch abandoned
 * earlier is under way, or stopped at its failed node guard and left the
 * slot claimed) the slot stays with the tree, unused (redo_slots_lost).
 * A write that finds its own slot claimed likewise leaves the slot, and
 * is redone (DM_TREE_STALE) under a new lock value naming a new one.  A
 * slot's image is thus written only by the write that holds it BUSY, and
 * stays BUSY, with that image, when its writer dies mid-write: a repair
 * requires exactly that.  A late batch that claims the slot between two
 * writes of its handle stores a stale image nobody uses (it only matters
 * while BUSY, and the next write's claim fails on it, or overwrites it).
 * Slot layout: word 0 the tag, word 1 the node's address, then the node's
 * image from byte 16 on (its version is the DIRTY version made clean, and
 * the checksum covers it).
 *
 * A split's new right node that is a reused one (DEAD memory of the tree,
 * dm_tree_reclaim.c: it must be written after the node's guard, in the same
 * batch, since a stale reader may hold its address) is torn too if its
 * writer dies inside its stores, and the repaired node would link it.  So
 * the slot is two nodes long, and its second half holds that node's record:
 * word 0 its final (clean) version, word 1 its address (0: no such node in
 * this write; always stored, so an older write's record is never taken for
 * this one's), then its image from byte 16 on.  The new node's lock word is
 * the writer's lock value (naming the slot) until its last store, then 0.
 * Whoever repairs the split node repairs the new one first, under the new
 * one's lock (dm_tree_repair_locked): so it is whole before anything links
 * it; a stale reader that finds it DIRTY takes its lock over and repairs it
 * alone, which is as safe, since the split node stays DIRTY and locked (no
 * writer can change what the new node must hold) until it is repaired.
 */
#include <stdlib.h>
#include <string.h>

#include "dm_tree_int.h"

int
dm_tree_read_root(dm_tree *t, dm_gaddr *root)
{
	int			rc = dm_read(t->c, t->info.root_addr, root, sizeof(*root));

	if (rc != DM_OK)
		return dm_tree_transport_error(t, rc);
	if (*root == 0)
		return dm_tree_fail(t, DM_ERR_CORRUPT, "tree has no root");
	t->root = *root;
	return DM_OK;
}

int
dm_node_read(dm_tree *t, dm_gaddr addr, void *buf)
{
	if (addr == 0 || (addr & DM_GADDR_RESERVED_BIT))
		return dm_tree_fail(t, DM_ERR_CORRUPT, "tree points to invalid address 0x%llx",
							(unsigned long long) addr);
	for (int k = 0; k < DM_TREE_READ_RETRIES; k++)
	{
		int			rc = dm_tree_read_node_raw(t, addr, buf);

		if (rc != DM_OK)
			return rc == DM_ERR_NOTFOUND ? rc : dm_tree_transport_error(t, rc);
		t->ctr.node_reads++;
		if (dm_node_valid(buf, t->node_size, t->info.tree_id))
			return DM_OK;
		t->ctr.read_retries++;
		/*
		 * The offload executor occupies a memnode worker: it neither waits
		 * long for a node mid-write nor repairs one (a client does).
		 */
		if (t->exec_active && k >= 64)
			return dm_tree_fail(t, DM_ERR_FALLBACK, "node at 0x%llx is being written", (unsigned long long) addr);
		dm_tree_backoff(k);
	}

	/*
	 * A replica takes no lock and repairs nothing (dm_tree_replica.c): a
	 * node mid-write is read again until the op timeout.  A live writer
	 * finishes within microseconds; a dead one's node is repaired by the
	 * next writer of the tree's own side, which a replica waits for.
	 */
	if (t->replica && (NODE_HDR(buf)->version & DM_VERSION_DIRTY) && NODE_HDR(buf)->magic == DM_NODE_MAGIC)
	{
		uint64_t	start = dm_tree_mono_ms();
		uint64_t	limit = (uint64_t) dm_client_op_timeout(t->c);

		for (int k = DM_TREE_READ_RETRIES; dm_tree_mono_ms() - start <= limit; k++)
		{
			int			rc = dm_tree_read_node_raw(t, addr, buf);

			if (rc != DM_OK)
				return rc == DM_ERR_NOTFOUND ? rc : dm_tree_transport_error(t, rc);
			t->ctr.node_reads++;
			if (dm_node_valid(buf, t->node_size, t->info.tree_id))
				return DM_OK;
			t->ctr.read_retries++;
			if (!(NODE_HDR(buf)->version & DM_VERSION_DIRTY))
				break;			/* torn, not mid-write: the retries above were spent */
			dm_tree_backoff(k);
		}
		if (NODE_HDR(buf)->version & DM_VERSION_DIRTY)
			return dm_tree_fail(t, DM_ERR_TIMEOUT,
								"node at 0x%llx stayed mid-write for %llu ms; a read-only replica does not "
								"take over its writer's lock or repair it (a writer of the tree does)",
								(unsigned long long) addr, (unsigned long long) limit);
	}

	/*
	 * DIRTY all along: a write under way for that long, or its writer died
	 * in the middle (over shm).  Wait for its lock as a writer would —
	 * taking it over after lock_timeout repairs the node from the dead
	 * writer's redo slot — then read it under the lock.
	 */
	if ((NODE_HDR(buf)->version & DM_VERSION_DIRTY) && NODE_HDR(buf)->magic == DM_NODE_MAGIC && !t->repairing)
	{
		uint64_t	held;
		int			rc;

		t->repairing = 1;
		rc = dm_node_lock(t, addr, buf, &held);
		t->repairing = 0;
		if (rc == DM_OK)
			return dm_node_unlock(t, addr, held);
		return rc;
	}
	return dm_tree_fail(t, DM_ERR_CORRUPT,
						"node at 0x%llx failed validation %d times (magic, checksum or tree tag)",
						(unsigned long long) addr, DM_TREE_READ_RETRIES);
}

int
dm_node_read_many(dm_tree *t, const dm_gaddr *addrs, int n, uint8_t *bufs)
{
	dm_op		ops[64];

	for (int base = 0; base < n; base += 64)
	{
		int			m = n - base < 64 ? n - base : 64;
		int			rc;

		for (int i = 0; i < m; i++)
		{
			if (addrs[base + i] == 0 || (addrs[base + i] & DM_GADDR_RESERVED_BIT))
				return dm_tree_fail(t, DM_ERR_CORRUPT, "tree points to invalid address 0x%llx",
									(unsigned long long) addrs[base + i]);
			dm_op_read(&ops[i], addrs[base + i], bufs + (size_t) (base + i) * t->node_size, t->node_size);
		}
		if ((rc = dm_post(t->c, ops, m, NULL)) != DM_OK)
			return dm_tree_transport_error(t, rc);
		t->ctr.node_reads += (uint64_t) m;
		/* after the nodes, as dm_node_read does (dm_tree_replica.c) */
		if ((rc = dm_tree_read_horizon_after(t)) != DM_OK)
			return rc;
		for (int i = 0; i < m; i++)
		{
			uint8_t    *b = bufs + (size_t) (base + i) * t->node_size;

			if (!dm_node_valid(b, t->node_size, t->info.tree_id))
			{
				t->ctr.read_retries++;
				if ((rc = dm_node_read(t, addrs[base + i], b)) != DM_OK)
					return rc;
			}
		}
	}
	return DM_OK;
}
int
dm_node_lock(dm_tree *t, dm_gaddr addr, void *buf, uint64_t *held)
{
	uint64_t	seen = 0;
	uint64_t	seen_since = 0;
	uint64_t	mine;
	int			wrc;

	*held = 0;
	if ((wrc = dm_tree_writable(t, "lock a node")) != DM_OK)
		return wrc;
	mine = dm_tree_lock_value(t, addr);
	*held = mine;

	for (int k = 0;; k++)
	{
		dm_op		ops[2];
		int			rc;

		/*
		 * CAS then READ in one batch: executed in order, so the copy we get
		 * is post-lock.  Not fenced by the writer word: a lock is progress,
		 * not safety, and a fenced writer's write (which is fenced) fails
		 * and releases it at once.
		 */
		if (t->writer_refused)
			return dm_tree_fence_op(t, &ops[0], dm_gaddr_node(addr));
		dm_op_atomic(&ops[0], DM_OP_CAS, addr, 0, mine);
		dm_op_read(&ops[1], addr, buf, t->node_size);
		if ((rc = dm_post(t->c, ops, 2, NULL)) != DM_OK)
			return dm_tree_transport_error(t, rc);
		t->ctr.node_reads++;
		if (ops[0].result == 0)
		{
			if (dm_node_valid(buf, t->node_size, t->info.tree_id))
				return DM_OK;

			/*
			 * The instance owning a node writes it under its cache's local
			 * lock only, so a copy read under the remote lock can still be
			 * torn when we locked a node that has become another
			 * instance's (we then only look at its fences and move on).
			 * Read again; a node that never validates is damaged.
			 */
			if ((rc = dm_node_read(t, addr, buf)) != DM_OK)
			{
				dm_node_unlock(t, addr, mine);
				return rc;
			}
			return DM_OK;
		}
		t->ctr.lock_retries++;
		/*
		 * The executor must not wait for a lock long: its holder's unlock
		 * may be queued behind it on the same memnode worker.
		 */
		if (t->exec_active && k >= 32)
			return dm_tree_fail(t, DM_ERR_FALLBACK, "node 0x%llx is locked by another writer",
								(unsigned long long) addr);

		/*
		 * A holder that keeps the same lock value for lock_timeout has died
		 * (a crashed backend) or is stalled: take the lock over.  If it is
		 * alive after all, its write was computed from the version we are
		 * about to read or an older one, so at most one of its write and
		 * ours lands (the guard, see the top of the file); a write of it
		 * still under way keeps the node DIRTY, which the read below waits
		 * out.
		 */
		if (ops[0].result != seen)
		{
			seen = ops[0].result;
			seen_since = dm_tree_mono_ms();
		}
		else if (dm_tree_mono_ms() - seen_since > (uint64_t) t->lock_timeout_ms)
		{
			uint64_t	old;

			if ((rc = dm_cas(t->c, addr, seen, mine, &old)) != DM_OK)
				return dm_tree_transport_error(t, rc);
			if (old == seen)
			{
				t->ctr.lock_takeovers++;
				/* a holder that died mid-write over shm left a torn node: finish its write */
				if ((rc = dm_tree_repair_locked(t, addr, seen)) < 0)
				{
					dm_node_unlock(t, addr, mine);
					return rc == -DM_ERR_FENCED ? DM_ERR_FENCED : dm_tree_transport_error(t, -rc);
				}
				if ((rc = dm_node_read(t, addr, buf)) != DM_OK)
				{
					dm_node_unlock(t, addr, mine);
					return rc;
				}
				return DM_OK;
			}
		}
		dm_tree_backoff(k);
	}
}

int
dm_node_unlock(dm_tree *t, dm_gaddr addr, uint64_t held)
{
	uint64_t	old;
	int			rc;

	if ((rc = dm_tree_writable(t, "unlock a node")) != DM_OK)
		return rc;
	/* a CAS: if our lock was taken over meanwhile, it is not ours to clear */
	rc = dm_cas(t->c, addr, held, 0, &old);

	return rc == DM_OK ? DM_OK : dm_tree_transport_error(t, rc);
}

/*
 * The three writes of a new node of a split (sealed in nb): lock 0 and its
 * version DIRTY, then the rest, then the version clean.  A new node is
 * unreachable until the node that links it is written, but a reused one
 * (dm_tree_reclaim.c) may still be reached through a stale pointer to the
 * dead leaf it was; a neighbourhood read there (dm_tree_hop.c), a seqlock
 * on the version word with no checksum, must see the write under way
 * rather than a clean version over half-written words.  head holds the
 * first two words and must live until the batch is done.
 */
static void
new_node_ops(dm_op *ops, dm_gaddr a, uint8_t *nb, const uint64_t *head)
{
	dm_op_write(&ops[0], a, head, 16);
	dm_op_write(&ops[1], a + 16, nb + 16, dm_node_used_bytes(nb) - 16);
	dm_op_write(&ops[2], a + 8, &NODE_HDR(nb)->version, 8);
}

static int
write_nodes(dm_tree *t, dm_gaddr addr, void *buf, uint64_t held,
			int nnew, const dm_gaddr *new_addrs, uint8_t *const *new_bufs,
			uint32_t part_lo, uint32_t part_hi)
{
	dm_op		ops[32];
	int			n = 0, g, f, sg = -1, ri = -1, hw = -1, nreused = 0;
	dm_gaddr	second = 0;		/* the reused new node recorded in our slot (top of the file) */
	int			early[4] = {0};	/* new node i written before the batch */
	uint64_t	v = NODE_HDR(buf)->version;
	uint64_t	head[4][2];		/* each new node's lock and DIRTY version words */
	int			rc;

	if ((rc = dm_tree_writable(t, "write a node")) != DM_OK)
		return rc;
	if (nnew > 4)
		return dm_tree_fail(t, DM_ERR_INTERNAL, "too many new nodes in one write");

	/*
	 * For replicas' caches (dm_tree_wlog.c), before anything is posted: a
	 * batch that times out or is cancelled may still land later, and a node
	 * logged in vain costs a standby one needless invalidation, while one
	 * not logged could stay stale there.  New nodes too: their addresses
	 * may be reused memory a standby has cached.
	 */
	dm_tree_wlog_add(t, addr);
	for (int i = 0; i < nnew; i++)
		dm_tree_wlog_add(t, new_addrs[i]);

	/*
	 * New nodes must be in place before the node that makes them reachable.
	 * Ops to one memnode execute in order, so those on the locked node's
	 * memnode go into its batch (after the guard: a failed guard writes
	 * nothing); the others are posted first.  So are fresh ones (version 0:
	 * memory no node of the tree ever had, so no reader can hold their
	 * address) when we store the words ourselves (a redo lock: shm): a
	 * writer killed between the guard and the end of its batch leaves the
	 * locked node DIRTY, which whoever takes its lock over repairs from the
	 * redo slot -- but the slot holds that node's image only, so a new node
	 * left half-written there would stay DIRTY for good once the repaired
	 * node links it.  Written first, it is whole before anything links it.
	 * A reused node (DEAD memory of the tree, dm_tree_reclaim.c) must stay
	 * after the guard; a writer killed inside its write is the residual
	 * (docs/design.md §5, "Torn nodes").
	 */
	for (int i = 0; i < nnew; i++)
	{
		int			fresh = NODE_HDR(new_bufs[i])->version == 0;

		NODE_HDR(new_bufs[i])->lock = 0;
		dm_node_seal(new_bufs[i]);
		head[i][0] = 0;
		head[i][1] = NODE_HDR(new_bufs[i])->version | DM_VERSION_DIRTY;
		/* a reused node written in the locked node's batch: its lock names our slot (top of the file) */
		if ((held & DM_LOCK_REDO) && !fresh && dm_gaddr_node(new_addrs[i]) == dm_gaddr_node(addr))
		{
			/* the slot has room for one (splits make one new node) */
			if (++nreused > 1)
				return dm_tree_fail(t, DM_ERR_INTERNAL, "more than one reused node in one write");
			head[i][0] = held;
		}
		if (dm_gaddr_node(new_addrs[i]) != dm_gaddr_node(addr) || (fresh && (held & DM_LOCK_REDO)))
		{
			early[i] = 1;
			if ((rc = dm_tree_fence_op(t, &ops[0], dm_gaddr_node(new_addrs[i]))) != DM_OK)
				goto fenced;
			new_node_ops(&ops[1], new_addrs[i], new_bufs[i], head[i]);
			if ((rc = dm_post(t->c, ops, 4, NULL)) != DM_OK)
				return dm_tree_transport_error(t, rc);
			if (dm_tree_fenced_off(t, &ops[0]))
			{
				rc = DM_ERR_FENCED;
				goto fenced;
			}
		}
	}
	dm_node_seal(buf);
	/* first of all, the writer fence (dm_tree_writer.c) */
	f = n;
	if ((rc = dm_tree_fence_op(t, &ops[n++], dm_gaddr_node(addr))) != DM_OK)
		goto fenced;
	/* then the high-water mark this write depends on, if it is due (dm_tree_writer.c) */
	if ((rc = dm_tree_writer_carry_op(t, &ops[n], dm_gaddr_node(addr))) < 0)
	{
		rc = -rc;
		if (rc == DM_ERR_FENCED)
			goto fenced;
		return rc;
	}
	if (rc == 1)
		hw = n++;
	if (held & DM_LOCK_REDO)
	{
		dm_gaddr	slot = DM_LOCK_REDO_SLOT(held);

		/*
		 * A lock naming a slot we have left since we took it (an earlier
		 * write of the same operation found it claimed: a reclaimer holds
		 * three locks at once): take a new lock, naming a new slot.
		 */
		if ((ri = dm_tree_redo_index(t, slot)) < 0)
		{
			NODE_HDR(buf)->version = v;
			if ((rc = dm_node_unlock(t, addr, held)) != DM_OK)
				return rc;
			return DM_TREE_STALE;
		}
		/*
		 * The redo image first (whoever finds the node torn can finish the
		 * write from it), in the slot claimed by its tag (top of the file).
		 */
		sg = n;
		dm_op_guard(&ops[n++], slot, t->redo_tag[ri], t->redo_tag[ri] | DM_REDO_BUSY);
		dm_op_write(&ops[n++], slot + 8, &addr, 8);
		dm_op_write(&ops[n++], slot + 16, (uint8_t *) buf + 16, dm_node_used_bytes(buf) - 16);
		/* the second half: the record of a reused new node, or none */
		for (int i = 0; i < nnew; i++)
			if (!early[i] && head[i][0] == held)
			{
				second = new_addrs[i];
				dm_op_write(&ops[n++], slot + t->node_size, &NODE_HDR(new_bufs[i])->version, 8);
				dm_op_write(&ops[n++], slot + t->node_size + 16, new_bufs[i] + 16,
							dm_node_used_bytes(new_bufs[i]) - 16);
			}
		dm_op_write(&ops[n++], slot + t->node_size + 8, &second, 8);
	}
	g = n;
	dm_op_guard(&ops[n++], addr + 8, v, NODE_HDR(buf)->version | DM_VERSION_DIRTY);
	for (int i = 0; i < nnew; i++)
		if (!early[i])
		{
			new_node_ops(&ops[n], new_addrs[i], new_bufs[i], head[i]);
			n += 3;
			if (head[i][0] != 0)
				dm_op_atomic(&ops[n++], DM_OP_CAS, new_addrs[i], held, 0);
		}
	/* from the checksum on (lock and version words are the ops'), then clean */
	if (nnew == 0 && part_hi > part_lo && part_lo >= DM_NODE_HEADER && part_hi <= t->node_size &&
		(NODE_HDR(buf)->flags & DM_NODE_HOP))
	{
		/* a hopscotch leaf: checksum and count, and the buckets that changed */
		dm_op_write(&ops[n++], addr + 16, (uint8_t *) buf + 16, 16);
		dm_op_write(&ops[n++], addr + part_lo, (uint8_t *) buf + part_lo, part_hi - part_lo);
	}
	else
		dm_op_write(&ops[n++], addr + 16, (uint8_t *) buf + 16, dm_node_used_bytes(buf) - 16);
	dm_op_write(&ops[n++], addr + 8, &NODE_HDR(buf)->version, 8);
	if (sg >= 0)
		dm_op_atomic(&ops[n++], DM_OP_CAS, DM_LOCK_REDO_SLOT(held), t->redo_tag[ri] | DM_REDO_BUSY,
					 t->redo_tag[ri]);
	if (held)
		dm_op_atomic(&ops[n++], DM_OP_CAS, addr, held, 0);
	if ((rc = dm_post(t->c, ops, n, NULL)) != DM_OK)
		return dm_tree_transport_error(t, rc);
	if (dm_tree_fenced_off(t, &ops[f]))
	{
		rc = DM_ERR_FENCED;
		goto fenced;
	}
	if (hw >= 0)
		dm_tree_writer_carried(t, &ops[hw]);
	if (sg >= 0 && dm_op_guard_failed(&ops[sg]))
	{
		/* our slot is claimed by a batch of ours abandoned earlier: nothing landed */
		dm_tree_redo_abandon(t, ri);
		NODE_HDR(buf)->version = v;
		if ((rc = dm_node_unlock(t, addr, held)) != DM_OK)
			return rc;
		return DM_TREE_STALE;
	}
	if (dm_op_guard_failed(&ops[g]))
	{
		t->ctr.fenced_writes++;
		NODE_HDR(buf)->version = v;
		if (sg >= 0)
		{
			dm_op		uops[2];

			/* the batch stopped with our slot claimed: give it back, with our lock */
			dm_op_atomic(&uops[0], DM_OP_CAS, DM_LOCK_REDO_SLOT(held), t->redo_tag[ri] | DM_REDO_BUSY,
						 t->redo_tag[ri]);
			dm_op_atomic(&uops[1], DM_OP_CAS, addr, held, 0);
			if ((rc = dm_post(t->c, uops, 2, NULL)) != DM_OK)
				return dm_tree_transport_error(t, rc);
		}
		else if (held && (rc = dm_node_unlock(t, addr, held)) != DM_OK)
			return rc;
		return DM_TREE_STALE;
	}
	return DM_OK;

fenced:
	/* nothing of ours landed; a lock we hold is still ours to release */
	NODE_HDR(buf)->version = v;
	if (held)
		(void) dm_node_unlock(t, addr, held);
	return rc;
}

int
dm_node_write_unlock(dm_tree *t, dm_gaddr addr, void *buf, uint64_t held,
					 int nnew, const dm_gaddr *new_addrs, uint8_t *const *new_bufs,
					 uint32_t part_lo, uint32_t part_hi)
{
	return write_nodes(t, addr, buf, held, nnew, new_addrs, new_bufs, part_lo, part_hi);
}
