/*
 * dm_tree_reuse.c — the tree's reuse list of free nodes (its layout and
 * why reuse is safe: the top of dm_tree_reclaim.c, "Reuse list" and "Why a
 * reused address misleads nobody"): the list's block behind meta word 12,
 * made on first use; pushing a reclaimed leaf; popping a free node for a
 * split (dm_node_alloc_split) and giving back one never written; listing
 * the free nodes (verify) and counting the empty slots (the reclaim pass).
 * Every change is one batch behind the writer fence.
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

int
dm_tree_reuse_push(dm_tree *t, dm_gaddr addr, int *pushed)
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

	int			first_look = t->reuse_blk == 0;

	/* no list yet: look for one now and then only (a VACUUM elsewhere makes it) */
	if (t->reuse_blk == 0 && (t->reuse_probe++ % 16) != 0)
		return DM_ERR_NOTFOUND;
	if ((rc = reuse_block(t, 0, &blk)) != DM_OK)
		return rc;
	if (blk == 0)
		return DM_ERR_NOTFOUND;
	/*
	 * Empty a moment ago: look at its count now and then only -- but at
	 * once when the list was just found (a new handle, such as a short
	 * connection's, splits with freed nodes as soon as there are any).
	 */
	if ((int64_t) t->reuse_hint <= 0)
	{
		if (!first_look && (t->reuse_probe++ % 4) != 0)
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
	int			rc = dm_tree_reuse_push(t, addr, &pushed);

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

int
dm_tree_reuse_free_slots(dm_tree *t, int *n)
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
