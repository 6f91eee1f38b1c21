/*
 * dm_tree_writer.c — who may write a tree: the writer word, the fence words
 * that every write batch is guarded by, taking the tree over (a promoted
 * PostgreSQL standby), and the high-water mark of what the tree's entries
 * depend on (DESIGN.md §7, Failover).
 *
 * Catalog meta words used here (word k at meta_addr + 8*(k-1)):
 *
 *   word 8   the writer word: epoch (bits 48..63) and an identity the user
 *            chooses (bits 0..47; the access method puts its instance id
 *            and timeline there).  It changes only by a takeover, which
 *            raises the epoch.  It is also the fence word of the home
 *            memnode.
 *   word 9   the high-water mark: a number the writer raises before a write
 *            that depends on it (the access method: the WAL position every
 *            remote entry's heap tuple is at or before).  Only raised, fenced
 *            like any write: by a fetch-and-max in the batch that writes the
 *            node (dm_tree_writer_require: no round trip of its own), or by
 *            CAS (dm_tree_writer_raise; ucx, which has no fetch-and-max).
 *   word 10  the fence directory: the address of a block on the home memnode
 *            holding, per position in the tree's memnode list, the address
 *            of that memnode's fence word (0 for the home: word 8); 0 when
 *            the tree has one memnode.  Each other memnode's fence word is
 *            the first word of a slab of the tree there, holding a copy of
 *            the writer word.
 *
 * Fencing.  A handle writes under the writer word it adopted (at open, the
 * current one).  Every batch that changes the tree — node writes (with the
 * new nodes of a split, on every memnode), root switches, repairs, bulk-load
 * writes, the high-water mark — starts, on each memnode it touches, with a
 * guard CAS(fence word: mine -> mine) (DM_OPF_GUARD, dm_tree_fence_op):
 * once a takeover has changed the fence words, the guard fails and the
 * memnode (or the shm client) skips the rest of that memnode's part of the
 * batch, so a fenced writer lands nothing, whenever its batch runs.  Cost:
 * one 8-byte CAS more per write batch, in the same round trip; no extra
 * round trip.  Lock words are not fenced: a lock gives progress, not
 * safety (dm_tree_io.c), a fenced writer's next write fails and releases
 * its lock at once, and a handle refused by its user takes no lock at all.
 *
 * A takeover CASes word 8 first (that decides between concurrent takers and
 * against a writer raising the high-water mark with a stale epoch), then
 * raises the other memnodes' fence words to the new word, then resets the
 * high-water mark.  A batch of the old writer that passed a fence guard
 * before the fence word changed lands before the takeover completed; none
 * lands after dm_tree_writer_takeover() returns.
 */
#include <stdio.h>
#include <string.h>

#include "dm_region.h"
#include "dm_tree_int.h"

#define WRITER_WORD		8
#define HIGH_WATER_WORD	9
#define FENCE_DIR_WORD	10

static dm_gaddr
meta_word_addr(const dm_tree *t, int k)
{
	return t->info.meta_addr + 8 * (uint64_t) (k - 1);
}

/* The high-water word: an offload executor's handle knows only its address. */
static dm_gaddr
high_water_addr(const dm_tree *t)
{
	return t->exec_active ? t->exec_hw_word : meta_word_addr(t, HIGH_WATER_WORD);
}

static int
mn_pos(const dm_tree *t, uint16_t mn)
{
	for (int i = 0; i < t->nmemnodes; i++)
		if (t->memnodes[i] == mn)
			return i;
	return -1;
}

int
dm_tree_fence_op(dm_tree *t, dm_op *op, uint16_t mn)
{
	int			i = mn_pos(t, mn);

	if (t->writer_refused)
		return dm_tree_fail(t, DM_ERR_FENCED,
							"this server may not write the tree: it is written by writer %016llx",
							(unsigned long long) t->writer);
	if (i < 0 || t->fence[i] == 0)
		return dm_tree_fail(t, DM_ERR_CORRUPT, "the tree has no fence word on memnode %u", mn);
	dm_op_guard(op, t->fence[i], t->writer, t->writer);
	return DM_OK;
}

int
dm_tree_fenced_off(dm_tree *t, const dm_op *op)
{
	if (op->kind != DM_OP_CAS || !dm_op_guard_failed(op))
		return 0;
	t->ctr.fenced_off++;
	dm_tree_fail(t, DM_ERR_FENCED,
				 "the tree is written by another writer now (fence word %016llx, this handle writes as %016llx)",
				 (unsigned long long) op->result, (unsigned long long) t->writer);
	return 1;
}

/* Set up the handle's writer state from the meta words read at open or create. */
int
dm_tree_writer_load(dm_tree *t, const uint64_t *meta)
{
	int			home = mn_pos(t, t->home);

	t->writer = meta[WRITER_WORD];
	t->high_water = meta[HIGH_WATER_WORD];
	t->writer_refused = 0;
	memset(t->fence, 0, sizeof(t->fence));
	if (home >= 0)
		t->fence[home] = meta_word_addr(t, WRITER_WORD);
	if (meta[FENCE_DIR_WORD] != 0 && t->nmemnodes > 1)
	{
		uint64_t	dir[DM_TREE_MAX_MEMNODES];
		int			rc = dm_read(t->c, meta[FENCE_DIR_WORD], dir, sizeof(dir));

		if (rc != DM_OK)
			return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
		for (int i = 0; i < t->nmemnodes; i++)
			if (i != home)
			{
				if (dir[i] == 0 || dm_gaddr_node(dir[i]) != t->memnodes[i])
					return dm_tree_fail(t, DM_ERR_CORRUPT, "fence directory entry %d is invalid", i);
				t->fence[i] = dir[i];
			}
	}
	return DM_OK;
}

/*
 * At creation, before the meta words are written: a fence word on every
 * other memnode (holding the writer word) and the directory naming them.
 * Sets meta[10]; nothing to do for a tree on one memnode.
 */
int
dm_tree_writer_create(dm_tree *t, uint64_t *meta)
{
	uint64_t	dir[DM_SLAB_ALIGN / 8];
	dm_gaddr	daddr;
	int			rc;

	meta[FENCE_DIR_WORD] = 0;
	if (t->nmemnodes <= 1)
		return DM_OK;
	memset(dir, 0, sizeof(dir));
	for (int i = 0; i < t->nmemnodes; i++)
	{
		uint64_t	blk[DM_SLAB_ALIGN / 8];

		if (t->memnodes[i] == t->home)
			continue;
		if ((rc = dm_slab_alloc(t->c, t->memnodes[i], t->info.tree_id, DM_SLAB_ALIGN, &dir[i])) != DM_OK)
			return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
		memset(blk, 0, sizeof(blk));
		blk[0] = meta[WRITER_WORD];
		if ((rc = dm_write(t->c, dir[i], blk, sizeof(blk))) != DM_OK)
			return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	}
	if ((rc = dm_slab_alloc(t->c, t->home, t->info.tree_id, DM_SLAB_ALIGN, &daddr)) != DM_OK ||
		(rc = dm_write(t->c, daddr, dir, sizeof(dir))) != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	meta[FENCE_DIR_WORD] = daddr;
	return DM_OK;
}

uint64_t
dm_tree_writer_word(const dm_tree *t)
{
	return t->writer;
}

int
dm_tree_writer_read(dm_tree *t, uint64_t *word, uint64_t *high_water)
{
	uint64_t	w[2];
	int			rc = dm_read(t->c, meta_word_addr(t, WRITER_WORD), w, sizeof(w));

	if (rc != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	if (word)
		*word = w[0];
	if (high_water)
		*high_water = w[1];
	return DM_OK;
}

void
dm_tree_writer_adopt(dm_tree *t, uint64_t word)
{
	t->writer = word;
	t->writer_refused = 0;
}

void
dm_tree_writer_refuse(dm_tree *t)
{
	t->writer_refused = 1;
}

int
dm_tree_writer_refused(const dm_tree *t)
{
	return t->writer_refused;
}

int
dm_tree_writer_takeover(dm_tree *t, uint64_t expected, uint64_t word, uint64_t high_water,
						uint64_t *seen)
{
	uint64_t	old;
	int			rc;

	if (DM_WRITER_EPOCH(word) <= DM_WRITER_EPOCH(expected))
		return dm_tree_fail(t, DM_ERR_INVALID, "a takeover must raise the writer epoch");
	if ((rc = dm_cas(t->c, meta_word_addr(t, WRITER_WORD), expected, word, &old)) != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	*seen = old;
	if (old != expected)
		return DM_OK;			/* somebody else changed it: the caller decides again */

	/* ours now: fence the other memnodes (never lowering a newer takeover's word) */
	for (int i = 0; i < t->nmemnodes; i++)
	{
		uint64_t	cur;

		if (t->memnodes[i] == t->home || t->fence[i] == 0)
			continue;
		if ((rc = dm_read(t->c, t->fence[i], &cur, 8)) != DM_OK)
			return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
		while (DM_WRITER_EPOCH(cur) < DM_WRITER_EPOCH(word))
		{
			if ((rc = dm_cas(t->c, t->fence[i], cur, word, &old)) != DM_OK)
				return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
			if (old == cur)
				break;
			cur = old;
		}
	}
	t->writer = word;
	t->writer_refused = 0;

	/*
	 * Only now, with every fence raised, is the mark final: a raise of the
	 * old writer that landed between the caller's look at it and our CAS
	 * is visible here (the old writer raises it before it writes anything
	 * that depends on it, and nothing of it lands any more).  The caller
	 * reads it (dm_tree_writer_high_water) and decides.
	 */
	if ((rc = dm_tree_writer_read(t, NULL, &t->high_water)) != DM_OK)
		return rc;
	return high_water > t->high_water ? dm_tree_writer_raise(t, high_water) : DM_OK;
}

int
dm_tree_writer_raise(dm_tree *t, uint64_t mark)
{
	for (int k = 0; k < 1000 && t->high_water < mark; k++)
	{
		dm_op		ops[2];
		int			rc;

		if ((rc = dm_tree_fence_op(t, &ops[0], t->home)) != DM_OK)
			return rc;
		dm_op_atomic(&ops[1], DM_OP_CAS, high_water_addr(t), t->high_water, mark);
		if ((rc = dm_post(t->c, ops, 2, NULL)) != DM_OK)
			return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
		if (dm_tree_fenced_off(t, &ops[0]))
			return DM_ERR_FENCED;
		t->high_water = ops[1].result == t->high_water ? mark : ops[1].result;
	}
	return t->high_water >= mark ? DM_OK :
		dm_tree_fail(t, DM_ERR_INTERNAL, "could not raise the high-water mark");
}

uint64_t
dm_tree_writer_high_water(const dm_tree *t)
{
	return t->high_water;
}

void
dm_tree_writer_require(dm_tree *t, uint64_t mark)
{
	if (mark > t->hw_want)
		t->hw_want = mark;
}

int
dm_tree_writer_settle(dm_tree *t)
{
	return t->hw_want > t->high_water ? dm_tree_writer_raise(t, t->hw_want) : DM_OK;
}

/*
 * Can a batch to the home memnode carry the raise?  Not over ucx, which has
 * no fetch-and-max atomic (and a CAS cannot carry it: with several writers
 * raising at once its expected value is usually stale, and a failed guard
 * would stop the node's write too).
 */
static int
home_can_carry(dm_tree *t)
{
	if (t->hw_carry == 0)
	{
		t->hw_carry = -1;
		for (int i = 0; i < dm_client_nnodes(t->c); i++)
		{
			dm_node_info ni;

			if (dm_client_node_info(t->c, i, &ni) == DM_OK && ni.node_id == t->home)
				t->hw_carry = ni.backend == DM_BACKEND_UCX ? -1 : 1;
		}
	}
	return t->hw_carry > 0;
}

int
dm_tree_writer_carry_op(dm_tree *t, dm_op *op, uint16_t mn)
{
	int			rc;

	if (t->hw_want <= t->high_water)
		return 0;
	/*
	 * After the fence guard, before the node's guard: a fenced writer raises
	 * nothing, and the mark is up before any byte of the node lands (ops to
	 * one memnode run in order).  If the node's guard then fails, the mark
	 * stays raised for a write that did not land: harmless, the WAL it names
	 * is flushed.
	 */
	if (mn == t->home && home_can_carry(t))
	{
		dm_op_atomic(op, DM_OP_FETCH_MAX, high_water_addr(t), t->hw_want, 0);
		return 1;
	}
	rc = dm_tree_writer_raise(t, t->hw_want);
	return rc == DM_OK ? 0 : -rc;
}

/*
 * An offloaded write to memnode mn carries the raise that is due when the
 * high-water word lives there (the home memnode) and batches there can
 * carry it: *word and *mark go into the request, and the executor's first
 * write batch raises it after its fence guard, as a one-sided write's batch
 * would (no round trip of its own).  Otherwise the raise is made now, by a
 * round trip, and *mark is 0.  What the executor raised comes back in its
 * reply: dm_tree_writer_raised().
 */
int
dm_tree_writer_offload_carry(dm_tree *t, uint16_t mn, dm_gaddr *word, uint64_t *mark)
{
	*word = 0;
	*mark = 0;
	if (t->hw_want <= t->high_water)
		return DM_OK;
	if (mn == t->home && home_can_carry(t))
	{
		*word = meta_word_addr(t, HIGH_WATER_WORD);
		*mark = t->hw_want;
		return DM_OK;
	}
	return dm_tree_writer_raise(t, t->hw_want);
}

void
dm_tree_writer_raised(dm_tree *t, uint64_t now)
{
	if (now > t->high_water)
		t->high_water = now;
}

void
dm_tree_writer_carried(dm_tree *t, const dm_op *op)
{
	uint64_t	now = op->result > op->arg0 ? op->result : op->arg0;

	if (now > t->high_water)
		t->high_water = now;
}
