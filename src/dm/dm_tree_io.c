/*
 * dm_tree_io.c — remote I/O on tree nodes: validated optimistic reads,
 * lock acquisition (CAS and read in one round trip), fenced write-and-unlock
 * (one round trip).  Where new nodes come from is dm_tree_alloc.c.
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
 * stores it and makes the version clean (repair_locked): the very bytes the
 * dead writer was storing, so repairing is idempotent, and done under the
 * lock, so no other writer is writing the node meanwhile.  The residual
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
 */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dm_region.h"
#include "dm_tree_int.h"

int
dm_tree_fail(dm_tree *t, int status, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	return status;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

/* Back off after the k-th failed attempt: spin, then yield, then sleep. */
static void
backoff(int k)
{
	if (k < 4)
		return;
	if (k < 64)
	{
		sched_yield();
		return;
	}
	{
		struct timespec ts = {0, (k < 512 ? 20 : 200) * 1000};

		nanosleep(&ts, NULL);
	}
}

static int
transport_error(dm_tree *t, int rc)
{
	return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
}

int
dm_tree_read_root(dm_tree *t, dm_gaddr *root)
{
	int			rc = dm_read(t->c, t->info.root_addr, root, sizeof(*root));

	if (rc != DM_OK)
		return transport_error(t, rc);
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
			return rc == DM_ERR_NOTFOUND ? rc : transport_error(t, rc);
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
		backoff(k);
	}

	/*
	 * A replica takes no lock and repairs nothing (dm_tree_replica.c): a
	 * node mid-write is read again until the op timeout.  A live writer
	 * finishes within microseconds; a dead one's node is repaired by the
	 * next writer of the tree's own side, which a replica waits for.
	 */
	if (t->replica && (NODE_HDR(buf)->version & DM_VERSION_DIRTY) && NODE_HDR(buf)->magic == DM_NODE_MAGIC)
	{
		uint64_t	start = mono_ms();
		uint64_t	limit = (uint64_t) dm_client_op_timeout(t->c);

		for (int k = DM_TREE_READ_RETRIES; mono_ms() - start <= limit; k++)
		{
			int			rc = dm_tree_read_node_raw(t, addr, buf);

			if (rc != DM_OK)
				return rc == DM_ERR_NOTFOUND ? rc : transport_error(t, rc);
			t->ctr.node_reads++;
			if (dm_node_valid(buf, t->node_size, t->info.tree_id))
				return DM_OK;
			t->ctr.read_retries++;
			if (!(NODE_HDR(buf)->version & DM_VERSION_DIRTY))
				break;			/* torn, not mid-write: the retries above were spent */
			backoff(k);
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
			return transport_error(t, rc);
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

/*
 * The value we put in a lock word: different for every acquisition, so a
 * waiter that sees the same value for lock_timeout knows one holder kept
 * it that long (a live process re-locking a hot node shows new values).
 */
static uint64_t
next_lock_value(dm_tree *t)
{
	uint64_t	v = ((t->token & ~UINT64_C(0xFFFFFF)) | (++t->lock_seq & 0xFFFFFF)) & ~DM_LOCK_REDO;

	return v ? v : 1;
}

/*
 * The tag of the n-th redo slot of a tree (top of the file): DM_LOCK_REDO
 * set, a memnode field other than the slot's own (lock words there that
 * have DM_LOCK_REDO name slots of that memnode), and n, made to differ
 * between trees, in bits 1..47 (bit 0 is DM_REDO_BUSY).  Distinct n give
 * distinct tags: unique within the tree, whose memory the slot stays.
 */
static uint64_t
redo_tag(uint16_t mn, uint64_t tree_id, uint64_t n)
{
	uint64_t	nonce = (n + tree_id * UINT64_C(0x9E3779B97F4A7C15)) & ((UINT64_C(1) << 47) - 1);

	return DM_LOCK_REDO | ((uint64_t) ((mn ^ 1) & DM_NODE_ID_MAX) << DM_OFFSET_BITS) | (nonce << 1);
}

/*
 * The lock value for a write of the node at addr: over shm it names this
 * handle's redo slot on that memnode (allocated on first use; without one,
 * e.g. when the memnode is full, a plain value: no repair then).
 */
static uint64_t
lock_value_for(dm_tree *t, dm_gaddr addr)
{
	uint16_t	mn = dm_gaddr_node(addr);
	int			i;

	/* a reader locking a node to repair it (dm_node_read) writes nothing of its own */
	if (t->repairing || !dm_client_is_local(t->c, mn))
		return next_lock_value(t);
	for (i = 0; i < t->nmemnodes && t->memnodes[i] != mn; i++)
		;
	if (i == t->nmemnodes)
		return next_lock_value(t);
	if (t->redo[i] == 0)
	{
		dm_gaddr	slot;
		dm_op		ops[2];
		uint64_t	tag;

		/*
		 * One node-sized grant of the tree's own (freed with it), apart
		 * from the handle's node grants (dm_tree_alloc.c).  Grants are
		 * DM_SLAB_ALIGN-aligned, so the low 8 bits are free for a sequence.
		 */
		_Static_assert(DM_SLAB_ALIGN >= 256, "redo slot addresses leave 8 low bits free");
		if (dm_slab_alloc(t->c, mn, t->info.tree_id, t->node_size, &slot) != DM_OK ||
			(slot & 0xFF) != 0 || (slot & DM_LOCK_REDO))
			return next_lock_value(t);
		/* its tag: the tree's count of slots, fenced like every write of the tree */
		if (dm_tree_fence_op(t, &ops[0], t->home) != DM_OK)
		{
			(void) dm_slab_free(t->c, t->info.tree_id, slot, t->node_size);
			return next_lock_value(t);
		}
		dm_op_atomic(&ops[1], DM_OP_FAA, DM_META_WORD_ADDR(t, DM_META_REDO_TAGS), 1, 0);
		if (dm_post(t->c, ops, 2, NULL) != DM_OK || dm_tree_fenced_off(t, &ops[0]))
		{
			(void) dm_slab_free(t->c, t->info.tree_id, slot, t->node_size);
			return next_lock_value(t);
		}
		tag = redo_tag(mn, t->info.tree_id, ops[1].result);
		if (dm_write(t->c, slot, &tag, 8) != DM_OK)
		{
			(void) dm_slab_free(t->c, t->info.tree_id, slot, t->node_size);
			return next_lock_value(t);
		}
		t->redo[i] = slot;
		t->redo_tag[i] = tag;
		t->ctr.redo_slots++;
	}
	return DM_LOCK_REDO | t->redo[i] | (++t->lock_seq & 0xFF);
}

int
dm_tree_redo_release(dm_tree *t)
{
	int			rc = DM_OK;

	/* only while no lock of ours names a slot: between operations */
	for (int i = 0; i < t->nmemnodes; i++)
	{
		uint64_t	old = 0;
		int			r;

		if (t->redo[i] == 0)
			continue;
		/*
		 * Untag it first: a batch of ours still on its way then fails its
		 * claim, whatever the memory has become.  Claimed (BUSY): such a
		 * batch is under way or stopped half-way; the slot stays the
		 * tree's.  Not fenced: the slot is this handle's own, and a
		 * fenced writer's batches stop at their fence before the slot.
		 */
		r = dm_cas(t->c, t->redo[i], t->redo_tag[i], 0, &old);
		if (r == DM_OK && old == t->redo_tag[i])
			r = dm_slab_free(t->c, t->info.tree_id, t->redo[i], t->node_size);
		else if (r == DM_OK)
			t->ctr.redo_slots_lost++;
		t->redo[i] = 0;
		t->redo_tag[i] = 0;
		t->ctr.redo_slots--;
		if (r != DM_OK && rc == DM_OK)
			rc = dm_tree_fail(t, r, "%s", dm_client_error(t->c));
	}
	return rc;
}

/*
 * We hold the lock of the node at addr, taken over from `prev`.  If the
 * node is DIRTY and prev's redo slot holds this node's image for exactly
 * that version, store the image (the dead writer's write, finished).  1 if
 * repaired, 0 if there was nothing to repair, else -status.
 */
static int
repair_locked(dm_tree *t, dm_gaddr addr, uint64_t prev)
{
	dm_gaddr	slot = DM_LOCK_REDO_SLOT(prev);
	uint8_t    *img;
	uint64_t	ver, tag, target;
	dm_op		ops[2];
	int			rc;

	if (!(prev & DM_LOCK_REDO) || slot == 0 || dm_gaddr_node(slot) != dm_gaddr_node(addr))
		return 0;
	if ((img = aligned_alloc(8, t->node_size)) == NULL)
		return -DM_ERR_NOMEM;
	dm_op_read(&ops[0], addr + 8, &ver, 8);
	dm_op_read(&ops[1], slot, img, t->node_size);
	if ((rc = dm_post(t->c, ops, 2, NULL)) != DM_OK)
	{
		free(img);
		return -rc;
	}
	memcpy(&tag, img, 8);
	memcpy(&target, img + 8, 8);
	/* the slot's image as the node: its version is the dead write's, made clean */
	memset(img, 0, 8);
	NODE_HDR(img)->version = ver & ~DM_VERSION_DIRTY;
	rc = 0;
	/* claimed (BUSY) by a write of this node that never gave it back: the dead writer's */
	if ((ver & DM_VERSION_DIRTY) && (tag & DM_LOCK_REDO) && (tag & DM_REDO_BUSY) &&
		dm_gaddr_node(tag) != dm_gaddr_node(slot) && target == addr &&
		dm_node_valid(img, t->node_size, t->info.tree_id))
	{
		dm_op		wops[3];

		/* the body, then the version made clean only if still the dead writer's; fenced */
		if ((rc = dm_tree_fence_op(t, &wops[0], dm_gaddr_node(addr))) != DM_OK)
		{
			free(img);
			return -rc;
		}
		dm_op_write(&wops[1], addr + 16, img + 16, dm_node_used_bytes(img) - 16);
		dm_op_atomic(&wops[2], DM_OP_CAS, addr + 8, ver, NODE_HDR(img)->version);
		dm_tree_wlog_add(t, addr);	/* before posting: it may land even if the post fails */
		if ((rc = dm_post(t->c, wops, 3, NULL)) != DM_OK)
			rc = -rc;
		else if (dm_tree_fenced_off(t, &wops[0]))
			rc = -DM_ERR_FENCED;
		else
		{
			t->ctr.node_repairs++;
			rc = 1;
		}
	}
	free(img);
	return rc;
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
	mine = lock_value_for(t, addr);
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
			return transport_error(t, rc);
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
			seen_since = mono_ms();
		}
		else if (mono_ms() - seen_since > (uint64_t) t->lock_timeout_ms)
		{
			uint64_t	old;

			if ((rc = dm_cas(t->c, addr, seen, mine, &old)) != DM_OK)
				return transport_error(t, rc);
			if (old == seen)
			{
				t->ctr.lock_takeovers++;
				/* a holder that died mid-write over shm left a torn node: finish its write */
				if ((rc = repair_locked(t, addr, seen)) < 0)
				{
					dm_node_unlock(t, addr, mine);
					return rc == -DM_ERR_FENCED ? DM_ERR_FENCED : transport_error(t, -rc);
				}
				if ((rc = dm_node_read(t, addr, buf)) != DM_OK)
				{
					dm_node_unlock(t, addr, mine);
					return rc;
				}
				return DM_OK;
			}
		}
		backoff(k);
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

	return rc == DM_OK ? DM_OK : transport_error(t, rc);
}

/* The position of this handle's redo slot `slot` (-1: not one of ours now). */
static int
redo_index(const dm_tree *t, dm_gaddr slot)
{
	for (int i = 0; i < t->nmemnodes; i++)
		if (t->redo[i] != 0 && t->redo[i] == slot)
			return i;
	return -1;
}

/*
 * Leave redo slot i to the tree (a batch of ours abandoned earlier claimed
 * it, or may): a new one is taken at the next lock.
 */
static void
redo_abandon(dm_tree *t, int i)
{
	t->redo[i] = 0;
	t->redo_tag[i] = 0;
	t->ctr.redo_slots--;
	t->ctr.redo_slots_lost++;
}

/*
 * Write new nodes, then the node at addr (sealed), fenced by its version
 * (see the top of the file), and release its remote lock `held` (0: a node
 * written under its cache frame's local lock only; the guard fences it all
 * the same).  DM_TREE_STALE: the guard failed, nothing of the node landed
 * (new nodes on another memnode did, unreachable: leaked), and our lock,
 * if we still had it, is released.  Also DM_TREE_STALE, with nothing
 * written, when our redo slot was found claimed (top of the file): the
 * slot is left, and the operation's next lock names a new one.
 */
static int
write_nodes(dm_tree *t, dm_gaddr addr, void *buf, uint64_t held,
			int nnew, const dm_gaddr *new_addrs, uint8_t *const *new_bufs)
{
	dm_op		ops[16];
	int			n = 0, g, f, sg = -1, ri = -1, hw = -1;
	uint64_t	v = NODE_HDR(buf)->version;
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
	 * nothing); the others are posted first.
	 */
	for (int i = 0; i < nnew; i++)
	{
		NODE_HDR(new_bufs[i])->lock = 0;
		dm_node_seal(new_bufs[i]);
		if (dm_gaddr_node(new_addrs[i]) != dm_gaddr_node(addr))
		{
			if ((rc = dm_tree_fence_op(t, &ops[0], dm_gaddr_node(new_addrs[i]))) != DM_OK)
				goto fenced;
			dm_op_write(&ops[1], new_addrs[i], new_bufs[i], dm_node_used_bytes(new_bufs[i]));
			if ((rc = dm_post(t->c, ops, 2, NULL)) != DM_OK)
				return transport_error(t, rc);
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
		if ((ri = redo_index(t, slot)) < 0)
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
	}
	g = n;
	dm_op_guard(&ops[n++], addr + 8, v, NODE_HDR(buf)->version | DM_VERSION_DIRTY);
	for (int i = 0; i < nnew; i++)
		if (dm_gaddr_node(new_addrs[i]) == dm_gaddr_node(addr))
			dm_op_write(&ops[n++], new_addrs[i], new_bufs[i], dm_node_used_bytes(new_bufs[i]));
	/* from the checksum on (lock and version words are the ops'), then clean */
	dm_op_write(&ops[n++], addr + 16, (uint8_t *) buf + 16, dm_node_used_bytes(buf) - 16);
	dm_op_write(&ops[n++], addr + 8, &NODE_HDR(buf)->version, 8);
	if (sg >= 0)
		dm_op_atomic(&ops[n++], DM_OP_CAS, DM_LOCK_REDO_SLOT(held), t->redo_tag[ri] | DM_REDO_BUSY,
					 t->redo_tag[ri]);
	if (held)
		dm_op_atomic(&ops[n++], DM_OP_CAS, addr, held, 0);
	if ((rc = dm_post(t->c, ops, n, NULL)) != DM_OK)
		return transport_error(t, rc);
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
		redo_abandon(t, ri);
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
				return transport_error(t, rc);
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
					 int nnew, const dm_gaddr *new_addrs, uint8_t *const *new_bufs)
{
	return write_nodes(t, addr, buf, held, nnew, new_addrs, new_bufs);
}

/* ---- through the cache ------------------------------------------------------------ */

static void
no_hints(dm_tree *t)
{
	if (t->hints)
		for (uint32_t s = 0; s < dm_cache_hint_slots(t->cache); s++)
			t->hints[s] = DM_FRAME_NONE;
}

/*
 * Whether a node just read may stay in the cache: owned nodes are always
 * fresh there; shared inner nodes may go stale (descents notice through
 * fences and refresh them) but leaves must not, and foreign nodes change
 * without our knowledge.  The class comes from dm_tree_node_class (replica
 * handles: leaves foreign, inner nodes shared).
 */
static int
cacheable(dm_tree *t, const void *buf)
{
	const dm_node_hdr *h = buf;
	int			cls = dm_tree_node_class(t, buf);

	if (h->flags & DM_NODE_DEAD)
		return 0;
	return cls == DM_OWN_OWNED || (cls == DM_OWN_SHARED && h->level > 0);
}

int
dm_node_fetch(dm_tree *t, dm_gaddr addr, int level, dm_fetch_ctx ctx, void *buf, uint32_t *frame)
{
	dm_cache   *c = t->cache;
	uint32_t	hint = ctx.hint;
	int			rc;

	if (frame)
		*frame = DM_FRAME_NONE;
	if (c == NULL)
		return dm_node_read(t, addr, buf);
	if (addr == 0 || (addr & DM_GADDR_RESERVED_BIT))
		return dm_tree_fail(t, DM_ERR_CORRUPT, "tree points to invalid address 0x%llx",
							(unsigned long long) addr);
	for (int k = 0; k < 8; k++)
	{
		int			io,
					admitted;
		uint64_t	gen;
		uint32_t	f = dm_cache_lookup(c, t->ctag, addr, hint, &io);
		uint32_t	existing;

		if (f != DM_FRAME_NONE)
		{
			uint64_t	stamp = 0;
			int			r = dm_cache_copy_stamped(c, f, t->ctag, addr, buf, t->node_size, t->hints, NULL,
												  &stamp);

			if (r == DM_CACHE_COPIED)
			{
				/*
				 * A replica learns the removal horizon from every node it
				 * reads: a cached copy carries the one read with it (its
				 * admitter's), so a reader of the copy sees every removal
				 * the copy reflects, as a remote read would show it.
				 */
				if (t->replica && stamp > t->horizon_seen)
					t->horizon_seen = stamp;
				/* reached through the table: swizzle the parent's pointer again */
				if (f != hint && ctx.pframe != DM_FRAME_NONE)
					dm_cache_set_hint(c, ctx.pframe, ctx.slot, f);
				if (frame)
					*frame = f;
				return DM_OK;
			}
			if (r == DM_CACHE_BUSY)
				break;
			hint = DM_FRAME_NONE;
			continue;
		}
		if (io || (level >= 0 && !dm_cache_should_admit(c, level)))
			break;
		/* the I/O flag: we fetch it, others read it remotely meanwhile */
		f = dm_cache_admit_begin(c, t->ctag, addr, &existing);
		if (f == DM_FRAME_NONE)
		{
			if (existing == DM_FRAME_NONE)
				break;
			hint = existing;
			continue;
		}
		gen = dm_cache_inval_gen(c);
		if ((rc = dm_node_read(t, addr, buf)) != DM_OK)
		{
			dm_cache_admit_abort(c, f);
			return rc;
		}
		dm_cache_count_miss(c, NODE_HDR(buf)->level);
		if (!cacheable(t, buf) || !dm_cache_caches_level(c, NODE_HDR(buf)->level))
		{
			dm_cache_admit_abort(c, f);
			no_hints(t);
			return DM_OK;
		}
		/* the horizon read with the node (or later) goes with the copy */
		if (t->replica)
			dm_cache_set_stamp(c, f, t->horizon_seen);
		/* an invalidation since `gen` may be for this very node: then do not keep it */
		admitted = dm_cache_admit_finish_gen(c, f, buf, t->node_size, NODE_HDR(buf)->level,
											 ctx.pframe, ctx.slot, gen);
		no_hints(t);
		if (frame && admitted)
			*frame = f;
		return DM_OK;
	}
	if ((rc = dm_node_read(t, addr, buf)) != DM_OK)
		return rc;
	dm_cache_count_miss(c, NODE_HDR(buf)->level);
	no_hints(t);
	return DM_OK;
}

int
dm_node_wlock(dm_tree *t, dm_gaddr addr, int level, dm_fetch_ctx ctx, void *buf, dm_wlock *wl)
{
	dm_cache   *c = t->cache;
	uint32_t	hint = ctx.hint;
	uint32_t	f = DM_FRAME_NONE;
	int			rc;

	wl->addr = addr;
	wl->frame = DM_FRAME_NONE;
	wl->remote = 1;
	wl->held = 0;
	if ((rc = dm_tree_writable(t, "lock a node for writing")) != DM_OK)
		return rc;
	if (c == NULL || !dm_cache_caches_level(c, level))
		return dm_node_lock(t, addr, buf, &wl->held);

	/*
	 * Nodes at a cached level are written through their frame, always (a
	 * remote-only write would race with a process writing the frame), so
	 * a node that is not cached is admitted first.
	 */
	uint64_t	since = 0;
	int			from_frame = 0;

	for (int k = 0;; k++)
	{
		int			io;
		uint32_t	existing;

		f = dm_cache_lookup(c, t->ctag, addr, hint, &io);
		if (f != DM_FRAME_NONE)
		{
			if (dm_cache_lock(c, f, t->ctag, addr, buf, t->node_size) == 0)
			{
				from_frame = 1;
				break;
			}
			hint = DM_FRAME_NONE;
			continue;
		}
		if (!io)
		{
			f = dm_cache_admit_begin(c, t->ctag, addr, &existing);
			if (f != DM_FRAME_NONE)
			{
				if ((rc = dm_node_read(t, addr, buf)) != DM_OK)
				{
					dm_cache_admit_abort(c, f);
					return rc;
				}
				dm_cache_count_miss(c, NODE_HDR(buf)->level);
				if (NODE_HDR(buf)->flags & DM_NODE_DEAD)
				{
					/* a retired node: lock it remotely like any stale address */
					dm_cache_admit_abort(c, f);
					return dm_node_lock(t, addr, buf, &wl->held);
				}
				dm_cache_admit_finish(c, f, buf, t->node_size, NODE_HDR(buf)->level,
									  ctx.pframe, ctx.slot, 1);
				/* admitted for the write only: first in line for eviction */
				if (!dm_cache_should_admit(c, NODE_HDR(buf)->level))
					dm_cache_make_cold(c, f);
				break;
			}
			if (existing != DM_FRAME_NONE)
			{
				hint = existing;
				continue;
			}
		}
		/*
		 * Another process is fetching the node (we must not write around
		 * its frame), or no frame could be freed: wait, sleeping, as long as
		 * for a remote lock.
		 */
		if (since == 0)
			since = mono_ms();
		else if (mono_ms() - since > (uint64_t) t->lock_timeout_ms)
			return dm_tree_fail(t, DM_ERR_TIMEOUT,
								io ? "waited %d ms for another process's fetch of node 0x%llx into the cache"
								: "waited %d ms for a free frame of the node cache to write node 0x%llx",
								t->lock_timeout_ms, (unsigned long long) addr);
		backoff(k);
	}
	wl->frame = f;
	if (dm_tree_own_class(t, NODE_HDR(buf)->low, NODE_HDR(buf)->high) == DM_OWN_OWNED)
	{
		/* the frame's copy is current for an owned node: no remote read at all */
		if (from_frame)
			dm_cache_count_hit(c, NODE_HDR(buf)->level, t->node_size);
		wl->remote = 0;
		if (dm_client_is_local(t->c, dm_gaddr_node(addr)))
		{
			/*
			 * Over shm the remote lock as well, just a CAS: its value names
			 * our redo slot, for the repair of a write we die in.  Taken
			 * (by a process of ours that died holding it): the full path,
			 * which waits it out, repairs and reads the node afresh.
			 */
			uint64_t	mine = lock_value_for(t, addr), old;

			if ((rc = dm_cas(t->c, addr, 0, mine, &old)) != DM_OK)
			{
				dm_cache_unlock_drop(c, f);
				return transport_error(t, rc);
			}
			wl->held = mine;
			if (old != 0 && (rc = dm_node_lock(t, addr, buf, &wl->held)) != DM_OK)
			{
				dm_cache_unlock_drop(c, f);
				return rc;
			}
		}
		return DM_OK;
	}
	/* shared: other instances write it too, under the remote lock (which reads it fresh) */
	if ((rc = dm_node_lock(t, addr, buf, &wl->held)) != DM_OK)
	{
		dm_cache_unlock_drop(c, f);
		return rc;
	}
	return DM_OK;
}

int
dm_node_wunlock(dm_tree *t, dm_wlock *wl, void *buf, int changed,
				int nnew, const dm_gaddr *new_addrs, uint8_t *const *new_bufs)
{
	dm_cache   *c = t->cache;
	int			rc = DM_OK;

	if (changed)
		rc = write_nodes(t, wl->addr, buf, wl->held, nnew, new_addrs, new_bufs);
	else if (wl->held)
		rc = dm_node_unlock(t, wl->addr, wl->held);
	if (wl->frame != DM_FRAME_NONE)
	{
		/*
		 * A failed write may or may not have landed, and a fenced one
		 * (DM_TREE_STALE) found the node newer than our copy: forget it.
		 */
		if ((changed && rc != DM_OK) || !cacheable(t, buf))
			dm_cache_unlock_drop(c, wl->frame);
		else
			dm_cache_unlock(c, wl->frame, changed || wl->remote ? buf : NULL, t->node_size);
		if (changed && rc == DM_OK && !wl->remote)
			dm_cache_count_local_write(c);
	}
	wl->frame = DM_FRAME_NONE;
	return rc;
}
