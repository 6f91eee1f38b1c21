/*
 * dm_cache_drain.c — the node cache's table of offloaded writes whose
 * outcome is unknown (dm_offload.c): a write the memnode may still be
 * running when its client gave up.  Until it is drained (DM_RPC_OFF_DRAIN
 * says it can no longer land) a copy of a node it writes, cached by any
 * process of this instance, may turn stale without anyone noticing, so
 * the table lives in the cache's shared memory, and a process about to use
 * the tree drains the tree's entries first (dm_tree_drain_settle).  Entries
 * are few and short-lived: one per failed offload, gone at the tree's next
 * use, or when the tree is dropped.
 */
#include <string.h>

#include "dm_cache_int.h"

int
dm_cache_drain_add(dm_cache *c, uint64_t tree_id, uint64_t tag, uint16_t memnode, uint64_t token)
{
	int			rc = -1;

	spin_lock(&c->drain_lock);
	for (int i = 0; i < DM_CACHE_DRAINS; i++)
		if (!c->drains[i].used)
		{
			c->drains[i].tree_id = tree_id;
			c->drains[i].tag = tag;
			c->drains[i].token = token;
			c->drains[i].memnode = memnode;
			c->drains[i].used = 1;
			__atomic_add_fetch(&c->ndrains, 1, __ATOMIC_SEQ_CST);
			rc = 0;
			break;
		}
	spin_unlock(&c->drain_lock);
	return rc;
}

int
dm_cache_drains(dm_cache *c, uint64_t tree_id, dm_cache_drain *out, int max)
{
	int			n = 0;

	if (__atomic_load_n(&c->ndrains, __ATOMIC_SEQ_CST) == 0)
		return 0;
	spin_lock(&c->drain_lock);
	for (int i = 0; i < DM_CACHE_DRAINS && n < max; i++)
		if (c->drains[i].used && c->drains[i].tree_id == tree_id)
			out[n++] = c->drains[i];
	spin_unlock(&c->drain_lock);
	return n;
}

/* Remove entries matching e (by tree and token, or all of a tree when token is 0). */
static void
remove_matching(dm_cache *c, uint64_t tree_id, uint64_t token, uint32_t memnode)
{
	for (int i = 0; i < DM_CACHE_DRAINS; i++)
		if (c->drains[i].used && c->drains[i].tree_id == tree_id &&
			(token == 0 || (c->drains[i].token == token && c->drains[i].memnode == memnode)))
		{
			c->drains[i].used = 0;
			__atomic_sub_fetch(&c->ndrains, 1, __ATOMIC_SEQ_CST);
		}
}

void
dm_cache_drains_done(dm_cache *c, const dm_cache_drain *done, int n)
{
	spin_lock(&c->drain_lock);
	for (int k = 0; k < n; k++)
		if (done[k].token != 0)
			remove_matching(c, done[k].tree_id, done[k].token, done[k].memnode);
	spin_unlock(&c->drain_lock);
}

void
dm_cache_drains_forget(dm_cache *c, uint64_t tree_id)
{
	if (__atomic_load_n(&c->ndrains, __ATOMIC_SEQ_CST) == 0)
		return;
	spin_lock(&c->drain_lock);
	remove_matching(c, tree_id, 0, 0);
	spin_unlock(&c->drain_lock);
}
