/*
 * dm_tree_alloc.c — where tree nodes come from and go back to: carving new
 * nodes out of slabs the memnodes hand this handle, and choosing the memnode
 * of a new node (placement).
 */
#include "dm_tree_int.h"

int
dm_node_alloc(dm_tree *t, uint16_t memnode, dm_gaddr *addr)
{
	dm_slab    *s = NULL;

	for (int i = 0; i < t->nmemnodes; i++)
		if (t->slabs[i].memnode == memnode)
			s = &t->slabs[i];
	if (s == NULL)
		return dm_tree_fail(t, DM_ERR_INVALID, "memnode %u is not one of the tree's", memnode);
	if (s->cur == 0 || s->cur + t->node_size > s->end)
	{
		/* small slabs: many backends each allocating must not strand whole chunks */
		uint64_t	size = (uint64_t) t->node_size * 64;
		dm_gaddr	slab;
		int			rc;

		if (size < 65536)
			size = 65536;
		if ((rc = dm_slab_alloc(t->c, memnode, t->info.tree_id, size, &slab)) != DM_OK)
			return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
		s->cur = slab;
		s->end = slab + size;
	}
	*addr = s->cur;
	s->cur += t->node_size;
	return DM_OK;
}

uint16_t
dm_tree_place(dm_tree *t, int level, uint16_t from)
{
	/* at or below M a node stays with its subtree; above M spread round-robin */
	if (level <= t->placement_level)
		return from;
	return t->memnodes[t->rr++ % (unsigned) t->nmemnodes];
}
