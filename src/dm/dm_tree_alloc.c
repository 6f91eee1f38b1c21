/*
 * dm_tree_alloc.c — where tree nodes come from and go back to: carving new
 * nodes out of grants (slabs) the memnodes hand this handle, giving the
 * unused rest back, and choosing the memnode of a new node (placement).
 *
 * Grants.  A handle asks a memnode (DM_RPC_SLAB_ALLOC) for a grant of whole
 * nodes and carves nodes from it one by one.  Whatever a handle was granted
 * and has not used is invisible to every other process, so the size of
 * grants decides how much space a handle can strand:
 *
 *  - The first grant of a handle on a memnode is one node, and each next
 *    one doubles, up to DM_GRANT_MAX nodes.  A short session that splits
 *    once takes exactly the node it needs; a long one pays one RPC per
 *    DM_GRANT_MAX splits.  At any moment the unused rest of a handle's grant
 *    is less than what it has used and less than DM_GRANT_MAX nodes.
 *  - A bulk load (many nodes at once) asks for DM_GRANT_BULK nodes at a time
 *    and gives the rest back when it ends.
 *  - dm_tree_alloc_release() gives the unused rest of every grant back
 *    (DM_RPC_SLAB_FREE); the memnode keeps returned ranges in per-chunk
 *    lists and hands them out again, to any handle of the same tree, before
 *    carving new space (dm_region.c).  dm_tree_close() stays local (its
 *    client may already be gone), so a handle that is simply closed, or a
 *    process that dies, strands at most its current grant's rest: under
 *    DM_GRANT_MAX nodes per memnode, and nothing once the tree is dropped.
 *
 * Invariants: (1) a node address is handed out by this file at most once
 * while its tree lives (the memnode never gives a granted range to anyone
 * else until it is returned, and a handle returns only ranges it never
 * handed out); (2) every grant is a whole number of nodes and starts at a
 * node boundary of its chunk, so nodes stay node-aligned whoever returned
 * the ranges before; (3) grants come zeroed.  Only ranges no tree node ever
 * pointed to are returned (a grant's unused rest), so no reader can hold an
 * address inside a returned range.
 *
 * Reused nodes.  Empty leaves that VACUUM takes out of the tree
 * (dm_tree_reclaim.c) are not returned to the memnode: its returned-range
 * header and zeroing would overwrite their lock and version words, and a
 * chunk freed whole could go to another tree, so a stale write fenced on an
 * old version could land there.  They stay with the tree, as DEAD nodes
 * keeping their last version, in the tree's reuse list, and
 * dm_node_alloc_split() hands them to splits when the handle's grant is
 * used up: the new contents continue the address's version sequence (the
 * split seals version + 1), and are written after the guard of the node
 * that links them, in the same batch (so a fenced split writes nothing
 * there and the node is given back).  Why no reader or writer is misled by
 * a reused address is argued at the top of dm_tree_reclaim.c: the address
 * is claimed by a CAS on its reuse slot (one claimer), readers validate
 * every hop (DEAD, level, fences) and restart from the root, and an old
 * version never comes back.
 */
#include "dm_tree_int.h"

#define DM_GRANT_MAX	16		/* nodes: the most a handle strands per memnode */
#define DM_GRANT_BULK	64		/* nodes per grant during a bulk load */

static dm_slab *
slab_of(dm_tree *t, uint16_t memnode)
{
	for (int i = 0; i < t->nmemnodes; i++)
		if (t->slabs[i].memnode == memnode)
			return &t->slabs[i];
	return NULL;
}

int
dm_node_alloc(dm_tree *t, uint16_t memnode, dm_gaddr *addr)
{
	dm_slab    *s = slab_of(t, memnode);
	int			wrc;

	if ((wrc = dm_tree_writable(t, "allocate a node")) != DM_OK)
		return wrc;
	if (s == NULL)
		return dm_tree_fail(t, DM_ERR_INVALID, "memnode %u is not one of the tree's", memnode);
	if (s->cur == 0 || s->cur + t->node_size > s->end)
	{
		uint32_t	nodes = t->alloc_bulk ? DM_GRANT_BULK : (s->grant ? s->grant : 1);
		uint64_t	size = (uint64_t) t->node_size * nodes;
		dm_gaddr	slab;
		int			rc;

		if ((rc = dm_slab_alloc(t->c, memnode, t->info.tree_id, size, &slab)) != DM_OK)
			return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
		s->cur = slab;
		s->end = slab + size;
		if (!t->alloc_bulk && nodes < DM_GRANT_MAX)
			s->grant = nodes * 2;
	}
	*addr = s->cur;
	s->cur += t->node_size;
	return DM_OK;
}

int
dm_node_alloc_split(dm_tree *t, uint16_t memnode, dm_gaddr *addr, uint64_t *version)
{
	dm_slab    *s = slab_of(t, memnode);

	*version = 0;
	/*
	 * Freed nodes first while the tree has any (else they would pile up
	 * while grants keep taking new memory); with none known, look again
	 * only when the grant is used up, before asking for a new one.
	 */
	if (s != NULL && !t->alloc_bulk &&
		((int64_t) t->reuse_hint > 0 || s->cur == 0 || s->cur + t->node_size > s->end))
	{
		int			rc = dm_tree_reuse_pop(t, memnode, addr, version);

		if (rc != DM_ERR_NOTFOUND)
			return rc;
		*version = 0;
	}
	return dm_node_alloc(t, memnode, addr);
}

int
dm_tree_alloc_release(dm_tree *t)
{
	int			rc = DM_OK;

	for (int i = 0; i < t->nmemnodes; i++)
	{
		dm_slab    *s = &t->slabs[i];
		int			r;

		if (s->cur == 0 || s->cur >= s->end)
			continue;
		r = dm_slab_free(t->c, t->info.tree_id, s->cur, s->end - s->cur);
		/* forget it even on failure: a range we may have returned is never used again */
		s->cur = s->end = 0;
		if (r != DM_OK && rc == DM_OK)
			rc = dm_tree_fail(t, r, "%s", dm_client_error(t->c));
	}
	/* and the redo slots of its shm writes (dm_tree_io.c) */
	{
		int			r = dm_tree_redo_release(t);

		if (r != DM_OK && rc == DM_OK)
			rc = r;
	}
	return rc;
}

void
dm_tree_alloc_bulk(dm_tree *t, int on)
{
	t->alloc_bulk = on;
}

uint16_t
dm_tree_place(dm_tree *t, int level, uint16_t from)
{
	/* at or below M a node stays with its subtree; above M spread round-robin */
	if (level <= t->placement_level)
		return from;
	return t->memnodes[t->rr++ % (unsigned) t->nmemnodes];
}
