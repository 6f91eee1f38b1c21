/*
 * dm_tree_bulk.c — bulk load of an empty tree from ascending entries,
 * bottom-up and streaming: one node under construction per level; when a
 * node is full, the next item's entry becomes its high fence (and the next
 * node's low fence), the node is queued for writing, and (its low fence,
 * its address) is added to the level above.  Finished nodes are written 64
 * at a time (one round trip per memnode).  The whole tree is in place before
 * the root word is switched to it, so no reader ever sees it half built.
 *
 * Placement: inner nodes hold exactly `inner_fill` children, so node j of
 * level k belongs to the level-M subtree j / inner_fill^(M-k); subtree s
 * goes to memnode s mod n.  Nodes above M are spread round-robin.
 */
#include <stdlib.h>
#include <string.h>

#include "dm_hop.h"
#include "dm_tree_int.h"

#define FLUSH_AT 64

typedef struct level_build
{
	int			started;
	uint64_t	index;			/* of the node under construction in its level */
	dm_gaddr	addr;
	uint8_t    *buf;
} level_build;

struct dm_bulk
{
	dm_tree    *t;
	dm_gaddr	old_root;
	int			leaf_fill;
	int			inner_fill;
	level_build lv[DM_TREE_MAX_LEVELS];
	int			have_last;
	dm_entry	last;
	/* finished nodes waiting to be written */
	int			nq;
	dm_gaddr	qaddr[FLUSH_AT];
	uint8_t    *qbuf;
};

static uint16_t
bulk_place(dm_bulk *b, int level, uint64_t index)
{
	dm_tree    *t = b->t;
	uint64_t	s = index;

	if (level > t->placement_level)
		return t->memnodes[index % (uint64_t) t->nmemnodes];
	for (int k = level; k < t->placement_level; k++)
		s /= (uint64_t) b->inner_fill;
	return t->memnodes[s % (uint64_t) t->nmemnodes];
}

static int
flush(dm_bulk *b)
{
	dm_op		ops[DM_TREE_MAX_MEMNODES + FLUSH_AT];
	int			n = 0, nf, rc;

	if (b->nq == 0)
		return DM_OK;
	/* first the writer fence of every memnode written to (dm_tree_writer.c) */
	for (int m = 0; m < b->t->nmemnodes; m++)
	{
		int			used = 0;

		for (int i = 0; i < b->nq && !used; i++)
			used = dm_gaddr_node(b->qaddr[i]) == b->t->memnodes[m];
		if (used && (rc = dm_tree_fence_op(b->t, &ops[n++], b->t->memnodes[m])) != DM_OK)
			return rc;
	}
	nf = n;
	for (int i = 0; i < b->nq; i++)
	{
		uint8_t    *buf = b->qbuf + (size_t) i * b->t->node_size;

		dm_op_write(&ops[n++], b->qaddr[i], buf, dm_node_used_bytes(buf));
	}
	rc = dm_post(b->t->c, ops, n, NULL);
	b->nq = 0;
	if (rc != DM_OK)
		return dm_tree_fail(b->t, rc, "%s", dm_client_error(b->t->c));
	for (int m = 0; m < nf; m++)
		if (dm_tree_fenced_off(b->t, &ops[m]))
			return DM_ERR_FENCED;
	return DM_OK;
}

/* CAS the root word from old to root, fenced; *prev gets what was there. */
static int
switch_root(dm_tree *t, dm_gaddr old, dm_gaddr root, dm_gaddr *prev)
{
	dm_op		ops[2];
	int			rc;

	if ((rc = dm_tree_fence_op(t, &ops[0], t->home)) != DM_OK)
		return rc;
	dm_op_atomic(&ops[1], DM_OP_CAS, t->info.root_addr, old, root);
	if ((rc = dm_post(t->c, ops, 2, NULL)) != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	if (dm_tree_fenced_off(t, &ops[0]))
		return DM_ERR_FENCED;
	*prev = ops[1].result;
	return DM_OK;
}

static int
enqueue(dm_bulk *b, dm_gaddr addr, const uint8_t *buf)
{
	memcpy(b->qbuf + (size_t) b->nq * b->t->node_size, buf, b->t->node_size);
	dm_node_seal(b->qbuf + (size_t) b->nq * b->t->node_size);
	b->qaddr[b->nq++] = addr;
	return b->nq == FLUSH_AT ? flush(b) : DM_OK;
}

static int	add_item(dm_bulk *b, int level, dm_entry e, dm_gaddr child);

/* Start node `index` of a level at addr with the given low fence. */
static void
start_node(dm_bulk *b, int level, dm_gaddr addr, dm_entry low, dm_gaddr left)
{
	level_build *L = &b->lv[level];

	dm_node_init(L->buf, b->t->node_size, level, b->t->info.tree_id, low, DM_ENTRY_INF);
	NODE_HDR(L->buf)->left = left;
	L->addr = addr;
	L->started = 1;
}

/* Finish the level's current node with the given high fence and right sibling. */
static int
finish_node(dm_bulk *b, int level, dm_entry high, dm_gaddr right)
{
	level_build *L = &b->lv[level];
	dm_node_hdr *h = NODE_HDR(L->buf);
	int			rc;

	if ((rc = dm_node_set_fences(L->buf, dm_node_low(L->buf), high)) != DM_OK)
		return dm_tree_fail(b->t, rc, "a node's fences do not fit it");
	h->right = right;
	if (level == 0 && b->t->leaf_hop)
	{
		/* built in order; stored as the tree's hopscotch leaves (dm_hop.h) */
		dm_entry	ents[DM_NODE_MAX / sizeof(dm_rawent)];
		int			n = h->count;

		for (int i = 0; i < n; i++)
			ents[i] = dm_node_entry(L->buf, i);
		dm_hop_init(L->buf, b->t->leaf_hop);
		dm_hop_build(L->buf, ents, n);
	}
	if ((rc = enqueue(b, L->addr, L->buf)) != DM_OK)
		return rc;
	return DM_OK;
}

static int
add_item(dm_bulk *b, int level, dm_entry e, dm_gaddr child)
{
	level_build *L = &b->lv[level];
	int			fill = level == 0 ? b->leaf_fill : b->inner_fill;
	int			rc;

	if (level >= DM_TREE_MAX_LEVELS)
		return dm_tree_fail(b->t, DM_ERR_TOOBIG, "tree would be taller than %d levels", DM_TREE_MAX_LEVELS);
	if (L->buf == NULL && (L->buf = aligned_alloc(8, b->t->node_size)) == NULL)
		return DM_ERR_NOMEM;
	if (!L->started)
	{
		dm_gaddr	addr;

		if ((rc = dm_node_alloc(b->t, bulk_place(b, level, 0), &addr)) != DM_OK)
			return rc;
		start_node(b, level, addr, DM_ENTRY_MIN, 0);
		L->index = 0;
	}
	else if (NODE_HDR(L->buf)->count == fill)
	{
		dm_gaddr	next, prev = L->addr;
		dm_entry	prev_low = dm_node_low(L->buf);
		dm_entry	bound = e;

		/* between leaves, (key, 0) when a key starts there: dm_tree_leaf_bound */
		if (level == 0)
			bound = dm_tree_leaf_bound(dm_node_entry(L->buf, NODE_HDR(L->buf)->count - 1), e);
		if ((rc = dm_node_alloc(b->t, bulk_place(b, level, L->index + 1), &next)) != DM_OK)
			return rc;
		if ((rc = finish_node(b, level, bound, next)) != DM_OK)
			return rc;
		/* the finished node becomes a child one level up */
		if ((rc = add_item(b, level + 1, prev_low, prev)) != DM_OK)
			return rc;
		start_node(b, level, next, bound, prev);
		L->index++;
	}
	if ((rc = dm_node_append(L->buf, (dm_item) {e, child})) != DM_OK)
		return dm_tree_fail(b->t, rc, "an entry does not fit a node being loaded");
	return DM_OK;
}

int
dm_tree_bulk_begin(dm_tree *t, int fillfactor, dm_bulk **out)
{
	dm_bulk    *b;
	uint8_t    *buf;
	int			rc;

	*out = NULL;
	if ((rc = dm_tree_writable(t, "bulk load")) != DM_OK)
		return rc;
	if (fillfactor < 10 || fillfactor > 100)
		return dm_tree_fail(t, DM_ERR_INVALID, "fillfactor must be between 10 and 100");
	/* only an empty tree: its root must be an empty leaf */
	if ((buf = aligned_alloc(8, t->node_size)) == NULL)
		return DM_ERR_NOMEM;
	if ((rc = dm_tree_read_root(t, &t->root)) == DM_OK)
		rc = dm_node_read(t, t->root, buf);
	if (rc == DM_OK && (NODE_HDR(buf)->level != 0 || NODE_HDR(buf)->count != 0))
		rc = dm_tree_fail(t, DM_ERR_INVALID, "bulk load needs an empty tree");
	free(buf);
	if (rc != DM_OK)
		return rc;
	if ((b = calloc(1, sizeof(*b))) == NULL ||
		(b->qbuf = aligned_alloc(8, (size_t) FLUSH_AT * t->node_size)) == NULL)
	{
		free(b);
		return DM_ERR_NOMEM;
	}
	b->t = t;
	b->old_root = t->root;
	b->leaf_fill = t->leaf_cap * fillfactor / 100;
	b->inner_fill = t->inner_cap * fillfactor / 100;
	if (b->leaf_fill < 1)
		b->leaf_fill = 1;
	if (b->inner_fill < 2)
		b->inner_fill = 2;
	dm_tree_alloc_bulk(t, 1);
	*out = b;
	return DM_OK;
}

int
dm_bulk_add(dm_bulk *b, const dm_entry *e, int n)
{
	for (int i = 0; i < n; i++)
	{
		int			rc;

		if ((e[i].tid & ~DM_TID_NULL) >= DM_TID_LIMIT || ((e[i].tid & DM_TID_NULL) && e[i].key != UINT64_MAX) ||
			(b->have_last && dm_entry_cmp(b->last, e[i]) >= 0))
			return dm_tree_fail(b->t, DM_ERR_INVALID, "bulk load input must be valid and strictly ascending");
		if ((rc = add_item(b, 0, e[i], 0)) != DM_OK)
			return rc;
		b->have_last = 1;
		b->last = e[i];
	}
	return DM_OK;
}

static void
bulk_free(dm_bulk *b)
{
	/* back to small grants (the rest of the large one: see dm_bulk_finish) */
	dm_tree_alloc_bulk(b->t, 0);
	for (int l = 0; l < DM_TREE_MAX_LEVELS; l++)
		free(b->lv[l].buf);
	free(b->qbuf);
	free(b);
}

void
dm_bulk_abort(dm_bulk *b)
{
	/* nodes already written stay allocated to the tree until it is dropped */
	if (b)
		bulk_free(b);
}

int
dm_bulk_finish(dm_bulk *b)
{
	dm_tree    *t = b->t;
	dm_gaddr	root = 0;
	uint8_t    *old;
	dm_wlock	wl;
	uint64_t	prev = 0;
	int			rc = DM_OK;

	if (!b->lv[0].started)
	{
		bulk_free(b);			/* nothing added: the empty tree stays as it is */
		return DM_OK;
	}
	/* close every level bottom-up; the first level with a single node is the root */
	for (int l = 0; l < DM_TREE_MAX_LEVELS && rc == DM_OK; l++)
	{
		level_build *L = &b->lv[l];

		if (L->index == 0 && !b->lv[l + 1].started)
		{
			root = L->addr;
			rc = finish_node(b, l, DM_ENTRY_INF, 0);
			break;
		}
		{
			dm_entry	low = dm_node_low(L->buf);

			rc = finish_node(b, l, DM_ENTRY_INF, 0);
			if (rc == DM_OK)
				rc = add_item(b, l + 1, low, L->addr);
		}
	}
	if (rc == DM_OK)
		rc = flush(b);
	if (rc != DM_OK)
	{
		bulk_free(b);
		return rc;
	}

	/*
	 * Under the old root's lock: check it is still the empty leaf we started
	 * from (an insert meanwhile would be lost), switch the root word, and
	 * retire the old root so a handle that cached its address sees it is
	 * dead and rereads the root word.
	 */
	if ((old = aligned_alloc(8, t->node_size)) == NULL)
	{
		bulk_free(b);
		return DM_ERR_NOMEM;
	}
	if ((rc = dm_node_wlock(t, b->old_root, 0, DM_FETCH_CTX_NONE, old, &wl)) == DM_OK)
	{
		if (NODE_HDR(old)->count != 0 || NODE_HDR(old)->level != 0 || (NODE_HDR(old)->flags & DM_NODE_DEAD))
			rc = dm_tree_fail(t, DM_ERR_INVALID, "the tree changed during the bulk load");
		else if ((rc = switch_root(t, b->old_root, root, &prev)) != DM_OK)
			;
		else if (prev != b->old_root)
			rc = dm_tree_fail(t, DM_ERR_INVALID, "the tree changed during the bulk load");
		if (rc == DM_OK)
		{
			NODE_HDR(old)->flags |= DM_NODE_DEAD;
			/* a dead node is never cached: this also drops the old root's frame */
			rc = dm_node_wunlock(t, &wl, old, 1, 0, NULL, NULL);
			t->root = root;

			/*
			 * Fenced off: a stale write (of a writer whose operation failed)
			 * landed on the old root after we read it.  The root word has
			 * moved on, so only the DEAD mark is still to be written.
			 */
			for (int k = 0; rc == DM_TREE_STALE && k < 1000; k++)
			{
				if ((rc = dm_node_wlock(t, b->old_root, 0, DM_FETCH_CTX_NONE, old, &wl)) != DM_OK)
					break;
				NODE_HDR(old)->flags |= DM_NODE_DEAD;
				rc = dm_node_wunlock(t, &wl, old, 1, 0, NULL, NULL);
			}
			if (rc == DM_TREE_STALE)
				rc = dm_tree_fail(t, DM_ERR_CORRUPT, "could not retire the old root 0x%llx",
								  (unsigned long long) b->old_root);
		}
		else
			dm_node_wunlock(t, &wl, old, 0, 0, NULL, NULL);
	}
	free(old);
	bulk_free(b);

	/*
	 * The rest of the last large grant goes back to the memnodes (a loader
	 * usually closes its handle next).  Only after success: a failure's
	 * message must stay the handle's error; and a failed return is not the
	 * load's failure (it strands under one grant, as a closed handle does).
	 */
	if (rc == DM_OK)
		(void) dm_tree_alloc_release(t);
	return rc;
}
