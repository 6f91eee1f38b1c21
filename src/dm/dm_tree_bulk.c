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
 *
 * Trees of key format VAR (DESIGN.md §5.2) are loaded by bytes instead
 * (var_* below): a node is full when its image would pass fillfactor
 * percent of the node size, leaves are bounded by the truncated separator
 * an insert's split would make (dm_tree_split_bound), and since fan-out then
 * varies, a node's parent is chosen when the node is started (its low
 * fence is known then), which gives its memnode.  The node under
 * construction is kept as items whose suffixes are copied into its level's
 * own arena, and every fence kept across a call into storage of the
 * loader (dm_owned_entry): nothing points into the caller's entries after
 * dm_bulk_add returns, nor into an image that is rebuilt.
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

/* A level of a VAR tree being loaded: the node under construction as items. */
typedef struct var_level
{
	int			started;
	uint64_t	index;			/* of the node under construction in its level */
	dm_gaddr	addr;
	dm_gaddr	left;			/* the previous node of the level (0: none) */
	uint16_t	memnode;		/* the node's memnode */
	dm_owned_entry low;			/* its low fence (kept across dm_bulk_add calls) */
	dm_item    *items;			/* suffixes in arena */
	int			n;
	uint8_t    *arena;			/* node_size bytes: the items' suffixes fit a node */
	uint32_t	arena_used;
	uint32_t	bytes;			/* dm_var_need of the node with a high fence without suffix */
} var_level;

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
	/* VAR trees */
	var_level  *v;				/* DM_TREE_MAX_LEVELS of them */
	uint32_t	var_target;		/* fill: bytes of a node's image */
	uint32_t	sfx_max;		/* the longest suffix of the tree's keys */
	dm_owned_entry var_last;	/* the last entry added (b->last's suffix) */
	uint8_t    *var_buf;		/* a node's image being built */
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

/* ---- VAR trees: nodes filled by bytes ------------------------------------------- */

static int	var_add(dm_bulk *b, int level, dm_entry e, dm_gaddr child);

/*
 * Whether e still goes into the level's node.  Leaves take one entry and
 * inner nodes two whatever their size (both fences and two slots of
 * dm_tree_key_max fit any node, DESIGN.md §5.2), so every node splits the
 * input and the levels shrink.  Beyond that:
 *
 * A leaf takes e while its image stays within the fill target, or beyond
 * it when e continues the last entry's key (as a split prefers a cut
 * between keys: a fence inside a key is the whole key, untruncated), and
 * while a high fence still fits after e: the separator between e and the
 * next entry, no longer than e's suffix (keys are prefix-free:
 * var_bulk_add checks).
 *
 * An inner node's next item and high fence are separators of any length
 * up to sfx_max.  Whether it takes e is decided without looking at e:
 * were long separators the ones that do not fit, they would become the
 * next node's low fence and so the items of the level above, whose nodes
 * would fill with long separators and get a small fan-out, level after
 * level.
 */
static int
var_fits(const dm_bulk *b, int level, const var_level *V, dm_entry e)
{
	uint32_t	after = V->bytes + dm_var_slot(level) + e.sfx_len;

	if (level > 0)
		return V->n < 2 ||
			(V->bytes + dm_var_slot(level) <= b->var_target &&
			 V->bytes + dm_var_slot(level) + 2 * b->sfx_max <= b->t->node_size);
	if (V->n == 0)
		return 1;
	return (after <= b->var_target || dm_entry_same_key(V->items[V->n - 1].sep, e)) &&
		after + e.sfx_len <= b->t->node_size;
}

static void
var_append(var_level *V, int level, dm_entry e, dm_gaddr child)
{
	dm_item    *it = &V->items[V->n++];

	it->sep = e;
	it->child = child;
	if (e.sfx_len != 0)
	{
		memcpy(V->arena + V->arena_used, e.sfx, e.sfx_len);
		it->sep.sfx = V->arena + V->arena_used;
		V->arena_used += e.sfx_len;
	}
	V->bytes += dm_var_slot(level) + e.sfx_len;
}

/* Start a node of the level at addr (on memnode) with this low fence. */
static void
var_start(var_level *V, dm_gaddr addr, uint16_t memnode, dm_entry low)
{
	V->addr = addr;
	V->memnode = memnode;
	dm_entry_own(&V->low, low);
	V->n = 0;
	V->arena_used = 0;
	V->bytes = DM_VAR_HEADER + V->low.e.sfx_len;
	V->started = 1;
}

/* Build the level's node with this high fence and right sibling; queue it. */
static int
var_finish(dm_bulk *b, int level, dm_entry high, dm_gaddr right)
{
	var_level  *V = &b->v[level];
	uint8_t    *buf = b->var_buf;
	int			rc;

	if ((rc = dm_var_init(buf, b->t->node_size, level, b->t->info.tree_id, V->low.e, high)) == DM_OK)
	{
		NODE_HDR(buf)->left = V->left;
		NODE_HDR(buf)->right = right;
		rc = dm_var_build(buf, V->low.e, high, V->items, V->n);
	}
	if (rc != DM_OK)
		return dm_tree_fail(b->t, rc, "a node being loaded does not fit");
	return enqueue(b, V->addr, buf);
}

/*
 * The level's node is full and e comes next: e's predecessor and e get a
 * fence between them, the node is finished with it, and the next node,
 * starting at it, is listed in its parent first (which decides where it
 * lives: on its parent's memnode up to the placement level, round-robin
 * above).  The first node of a level gets its parent with the second.
 */
static int
var_next_node(dm_bulk *b, int level, dm_entry e)
{
	var_level  *V = &b->v[level],
			   *P = &b->v[level + 1];
	/*
	 * The fence's suffix is e's, valid until this returns: e is the
	 * caller's entry, or the fence of the level below (pointing into the
	 * caller's entry too), or that level's first node's low fence (owned).
	 * The levels above copy what they keep (their items and low fence).
	 */
	dm_entry	bound = level == 0 ? dm_tree_split_bound(b->t, V->items[V->n - 1].sep, e) : e;
	uint16_t	memnode;
	dm_gaddr	next;
	int			rc;

	if (V->index == 0 && (rc = var_add(b, level + 1, V->low.e, V->addr)) != DM_OK)
		return rc;
	if ((rc = var_add(b, level + 1, bound, 0)) != DM_OK)
		return rc;
	if (level + 1 <= b->t->placement_level)
		memnode = P->memnode;
	else
		memnode = b->t->memnodes[(V->index + 1) % (uint64_t) b->t->nmemnodes];
	if ((rc = dm_node_alloc(b->t, memnode, &next)) != DM_OK)
		return rc;
	P->items[P->n - 1].child = next;
	if ((rc = var_finish(b, level, bound, next)) != DM_OK)
		return rc;
	V->left = V->addr;
	V->index++;
	var_start(V, next, memnode, bound);
	return DM_OK;
}

/* Add e (leaf: an entry; inner: a child's low fence and its address) to the level. */
static int
var_add(dm_bulk *b, int level, dm_entry e, dm_gaddr child)
{
	var_level  *V;
	int			rc;

	if (level >= DM_TREE_MAX_LEVELS)
		return dm_tree_fail(b->t, DM_ERR_TOOBIG, "tree would be taller than %d levels", DM_TREE_MAX_LEVELS);
	V = &b->v[level];
	if (!V->started)
	{
		dm_gaddr	addr;

		/* the first node of every level is in level-M subtree 0 and node 0 above it */
		if (V->items == NULL &&
			((V->items = malloc(sizeof(dm_item) * (b->t->node_size / sizeof(dm_var_leaf) + 1))) == NULL ||
			 (V->arena = malloc(b->t->node_size)) == NULL))
			return DM_ERR_NOMEM;
		if ((rc = dm_node_alloc(b->t, b->t->memnodes[0], &addr)) != DM_OK)
			return rc;
		V->index = 0;
		V->left = 0;
		var_start(V, addr, b->t->memnodes[0], DM_ENTRY_MIN);
	}
	else if (!var_fits(b, level, V, e) && (rc = var_next_node(b, level, e)) != DM_OK)
		return rc;
	var_append(V, level, e, child);
	return DM_OK;
}

static int
var_bulk_add(dm_bulk *b, const dm_entry *e, int n)
{
	for (int i = 0; i < n; i++)
	{
		dm_entry	l = b->var_last.e;
		int			rc;

		if (!dm_tree_entry_valid(b->t, e[i]) || (b->have_last && dm_entry_cmp(l, e[i]) >= 0))
			return dm_tree_fail(b->t, DM_ERR_INVALID, "bulk load input must be valid and strictly ascending");
		/* the check dm_tree_verify makes: a key whose bytes extend the previous one's */
		if (b->have_last && l.key == e[i].key && l.sfx_len < e[i].sfx_len &&
			(l.sfx_len == 0 || memcmp(l.sfx, e[i].sfx, l.sfx_len) == 0))
			return dm_tree_fail(b->t, DM_ERR_INVALID, "bulk load input must be prefix-free keys");
		if ((rc = var_add(b, 0, e[i], 0)) != DM_OK)
			return rc;
		b->have_last = 1;
		dm_entry_own(&b->var_last, e[i]);
	}
	return DM_OK;
}

/* Close every level bottom-up (each last node is listed in its parent already); *root: the top. */
static int
var_close(dm_bulk *b, dm_gaddr *root)
{
	for (int l = 0; l < DM_TREE_MAX_LEVELS; l++)
	{
		var_level  *V = &b->v[l];
		int			rc;

		if ((rc = var_finish(b, l, DM_ENTRY_INF, 0)) != DM_OK)
			return rc;
		if (V->index == 0)
		{
			*root = V->addr;
			return DM_OK;
		}
	}
	return dm_tree_fail(b->t, DM_ERR_CORRUPT, "bulk load left no root");
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
		(b->qbuf = aligned_alloc(8, (size_t) FLUSH_AT * t->node_size)) == NULL ||
		(t->key_var &&
		 ((b->v = calloc(DM_TREE_MAX_LEVELS, sizeof(var_level))) == NULL ||
		  (b->var_buf = aligned_alloc(8, t->node_size)) == NULL)))
	{
		if (b)
		{
			free(b->qbuf);
			free(b->v);
		}
		free(b);
		return DM_ERR_NOMEM;
	}
	b->t = t;
	b->old_root = t->root;
	b->leaf_fill = t->leaf_cap * fillfactor / 100;
	/*
	 * A hopscotch leaf refuses keys well before its buckets are all used
	 * (dm_hop_usable_permille): filled to fillfactor of its buckets it would
	 * split on about its next insert, where a sorted leaf takes the rest of
	 * its room first.  Filled to fillfactor of what it can hold, it has
	 * about as many inserts ahead as a sorted leaf.  (At 90% of the buckets
	 * a quarter of the inserts of YCSB e split a leaf, and the scans that
	 * followed read the many half-empty leaves: bench/results.)
	 */
	if (t->leaf_hop)
		b->leaf_fill = (int) ((long) t->leaf_cap * fillfactor * dm_hop_usable_permille(t->node_size, t->leaf_hop) /
							  100000);
	b->inner_fill = t->inner_cap * fillfactor / 100;
	if (b->leaf_fill < 1)
		b->leaf_fill = 1;
	if (b->inner_fill < 2)
		b->inner_fill = 2;
	b->var_target = t->node_size * (uint32_t) fillfactor / 100;
	b->sfx_max = t->key_var ? dm_tree_key_max(t->node_size) - 8 : 0;
	dm_tree_alloc_bulk(t, 1);
	*out = b;
	return DM_OK;
}

int
dm_bulk_add(dm_bulk *b, const dm_entry *e, int n)
{
	if (b->t->key_var)
		return var_bulk_add(b, e, n);
	for (int i = 0; i < n; i++)
	{
		int			rc;

		if (!dm_tree_entry_valid(b->t, e[i]) || (b->have_last && dm_entry_cmp(b->last, e[i]) >= 0))
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
	{
		free(b->lv[l].buf);
		if (b->v)
		{
			free(b->v[l].items);
			free(b->v[l].arena);
		}
	}
	free(b->v);
	free(b->var_buf);
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

	if (!(b->v ? b->v[0].started : b->lv[0].started))
	{
		bulk_free(b);			/* nothing added: the empty tree stays as it is */
		return DM_OK;
	}
	if (b->v)
		rc = var_close(b, &root);
	/* close every level bottom-up; the first level with a single node is the root */
	for (int l = 0; l < DM_TREE_MAX_LEVELS && rc == DM_OK && !b->v; l++)
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
