/*
 * dm_tree_redo.c — redo slots, which make a write over shm repairable (the
 * protocol is at the top of dm_tree_io.c, "Torn nodes" and "Redo slots are
 * guarded too"): the lock value a write takes (over shm it names this
 * handle's slot on the node's memnode, allocated and tagged on first use),
 * giving the slots back between operations, and the repair of a node whose
 * writer died between two stores, from that writer's slot, by whoever took
 * its lock over.
 */
#include <stdlib.h>
#include <string.h>

#include "dm_region.h"
#include "dm_tree_int.h"

/* A redo slot holds two node images: the written node's and a reused new node's (dm_tree_io.c). */
#define REDO_SLOT_BYTES(t) (2 * (t)->node_size)

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
 * The tag of the n-th redo slot of a tree (top of dm_tree_io.c): DM_LOCK_REDO
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

uint64_t
dm_tree_lock_value(dm_tree *t, dm_gaddr addr)
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
		 * A grant of two nodes of the tree's own (freed with it), apart
		 * from the handle's node grants (dm_tree_alloc.c).  Grants are
		 * DM_SLAB_ALIGN-aligned, so the low 8 bits are free for a sequence.
		 */
		_Static_assert(DM_SLAB_ALIGN >= 256, "redo slot addresses leave 8 low bits free");
		if (dm_slab_alloc(t->c, mn, t->info.tree_id, REDO_SLOT_BYTES(t), &slot) != DM_OK ||
			(slot & 0xFF) != 0 || (slot & DM_LOCK_REDO))
			return next_lock_value(t);
		/* its tag: the tree's count of slots, fenced like every write of the tree */
		if (dm_tree_fence_op(t, &ops[0], t->home) != DM_OK)
		{
			(void) dm_slab_free(t->c, t->info.tree_id, slot, REDO_SLOT_BYTES(t));
			return next_lock_value(t);
		}
		dm_op_atomic(&ops[1], DM_OP_FAA, DM_META_WORD_ADDR(t, DM_META_REDO_TAGS), 1, 0);
		if (dm_post(t->c, ops, 2, NULL) != DM_OK || dm_tree_fenced_off(t, &ops[0]))
		{
			(void) dm_slab_free(t->c, t->info.tree_id, slot, REDO_SLOT_BYTES(t));
			return next_lock_value(t);
		}
		tag = redo_tag(mn, t->info.tree_id, ops[1].result);
		if (dm_write(t->c, slot, &tag, 8) != DM_OK)
		{
			(void) dm_slab_free(t->c, t->info.tree_id, slot, REDO_SLOT_BYTES(t));
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
			r = dm_slab_free(t->c, t->info.tree_id, t->redo[i], REDO_SLOT_BYTES(t));
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
 * The reused new node of a dead writer's split, from the second half of its
 * slot (rec: word 0 its clean version, word 1 its address, its image from
 * byte 16; top of dm_tree_io.c): stored, and its version made that clean
 * one, unless the node already has it or a newer one.  Under the node's
 * lock: `locked` when we took it over already (we found the node DIRTY),
 * else we take it from the dead writer (prev) or free, and give it back;
 * held by anyone else, the repair is theirs.  1 repaired, 0 nothing done,
 * else -status.
 */
static int
repair_second(dm_tree *t, uint8_t *rec, uint64_t prev, int locked)
{
	dm_gaddr	r;
	uint64_t	final, cur, old, mine = 0;
	uint8_t    *img;
	dm_op		ops[4];
	int			rc;

	memcpy(&final, rec, 8);
	memcpy(&r, rec + 8, 8);
	if (r == 0 || dm_gaddr_node(r) != dm_gaddr_node(DM_LOCK_REDO_SLOT(prev)) || (final & DM_VERSION_DIRTY))
		return 0;
	if ((img = aligned_alloc(8, t->node_size)) == NULL)
		return -DM_ERR_NOMEM;
	memset(img, 0, 16);
	NODE_HDR(img)->version = final;
	memcpy(img + 16, rec + 16, t->node_size - 16);
	if (!dm_node_valid(img, t->node_size, t->info.tree_id))
	{
		free(img);
		return 0;
	}
	if (!locked)
	{
		mine = next_lock_value(t);
		if ((rc = dm_cas(t->c, r, prev, mine, &old)) == DM_OK && old != prev)
			rc = old == 0 ? dm_cas(t->c, r, 0, mine, &old) : DM_OK;
		if (rc != DM_OK)
		{
			free(img);
			return -rc;
		}
		if (old != prev && old != 0)
		{
			free(img);
			return 0;			/* someone else is repairing it */
		}
	}
	rc = 0;
	if ((rc = dm_read(t->c, r + 8, &cur, 8)) != DM_OK)
		rc = -rc;
	else if (cur != final && (cur & ~DM_VERSION_DIRTY) <= final)
	{
		/* DIRTY, the body, clean: only from the version seen, and fenced */
		if ((rc = dm_tree_fence_op(t, &ops[0], dm_gaddr_node(r))) == DM_OK)
		{
			dm_op_guard(&ops[1], r + 8, cur, final | DM_VERSION_DIRTY);
			dm_op_write(&ops[2], r + 16, img + 16, dm_node_used_bytes(img) - 16);
			dm_op_atomic(&ops[3], DM_OP_CAS, r + 8, final | DM_VERSION_DIRTY, final);
			dm_tree_wlog_add(t, r);
			if ((rc = dm_post(t->c, ops, 4, NULL)) != DM_OK)
				rc = -rc;
			else if (dm_tree_fenced_off(t, &ops[0]))
				rc = -DM_ERR_FENCED;
			else if (dm_op_guard_failed(&ops[1]))
				rc = 0;
			else
			{
				t->ctr.node_repairs++;
				rc = 1;
			}
		}
		else
			rc = -rc;
	}
	if (!locked)
		(void) dm_cas(t->c, r, mine, 0, &old);
	free(img);
	return rc;
}

int
dm_tree_repair_locked(dm_tree *t, dm_gaddr addr, uint64_t prev)
{
	dm_gaddr	slot = DM_LOCK_REDO_SLOT(prev);
	uint8_t    *img;
	uint64_t	ver, tag, target, second;
	dm_op		ops[2];
	int			rc;

	if (!(prev & DM_LOCK_REDO) || slot == 0 || dm_gaddr_node(slot) != dm_gaddr_node(addr))
		return 0;
	if ((img = aligned_alloc(8, REDO_SLOT_BYTES(t))) == NULL)
		return -DM_ERR_NOMEM;
	dm_op_read(&ops[0], addr + 8, &ver, 8);
	dm_op_read(&ops[1], slot, img, REDO_SLOT_BYTES(t));
	if ((rc = dm_post(t->c, ops, 2, NULL)) != DM_OK)
	{
		free(img);
		return -rc;
	}
	memcpy(&tag, img, 8);
	memcpy(&target, img + 8, 8);
	memcpy(&second, img + t->node_size + 8, 8);
	/* the dead writer's slot: claimed (BUSY) by a write that never gave it back */
	if (!((ver & DM_VERSION_DIRTY) && (tag & DM_LOCK_REDO) && (tag & DM_REDO_BUSY) &&
		  dm_gaddr_node(tag) != dm_gaddr_node(slot)))
	{
		free(img);
		return 0;
	}
	/* a stale reader found the reused new node of that writer's split DIRTY: that one only */
	if (second == addr && target != addr)
	{
		rc = repair_second(t, img + t->node_size, prev, 1);
		free(img);
		return rc;
	}
	/* the split node's new node first: whole before the repaired node links it */
	if (target == addr && second != 0 && (rc = repair_second(t, img + t->node_size, prev, 0)) < 0)
	{
		free(img);
		return rc;
	}
	/* the slot's image as the node: its version is the dead write's, made clean */
	memset(img, 0, 8);
	NODE_HDR(img)->version = ver & ~DM_VERSION_DIRTY;
	rc = 0;
	if (target == addr && dm_node_valid(img, t->node_size, t->info.tree_id))
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
dm_tree_redo_index(const dm_tree *t, dm_gaddr slot)
{
	for (int i = 0; i < t->nmemnodes; i++)
		if (t->redo[i] != 0 && t->redo[i] == slot)
			return i;
	return -1;
}

void
dm_tree_redo_abandon(dm_tree *t, int i)
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
 * written, when our redo slot was found claimed (top of dm_tree_io.c): the
 * slot is left, and the operation's next lock names a new one.
 */
