/*
 * dm_cache_drain.c — the node cache's table of offloaded writes whose
 * outcome is unknown (dm_offload.c): a write the memnode may still be
 * running when its client gave up.  Until it is drained (DM_RPC_OFF_DRAIN
 * says it can no longer land) a copy of a node it writes, cached by any
 * process of this instance, may turn stale without anyone noticing, so
 * the table lives in the cache's shared memory, and a process about to use
 * the tree drains the tree's entries first (dm_tree_drain_settle).  The
 * table is small: entries are few and short-lived (one per failed offload,
 * gone at the tree's next use).
 */
#include <string.h>

#include "dm_cache_int.h"

int
dm_cache_drain_add(dm_cache *c, uint64_t tag, uint16_t memnode, uint64_t token)
{
	int			rc = -1;

	spin_lock(&c->drain_lock);
	for (int i = 0; i < DM_CACHE_DRAINS; i++)
		if (!c->drains[i].used)
		{
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
dm_cache_drains(dm_cache *c, uint64_t tag, dm_cache_drain *out, int max)
{
	int			n = 0;

	if (__atomic_load_n(&c->ndrains, __ATOMIC_SEQ_CST) == 0)
		return 0;
	spin_lock(&c->drain_lock);
	for (int i = 0; i < DM_CACHE_DRAINS && n < max; i++)
		if (c->drains[i].used && c->drains[i].tag == tag)
			out[n++] = c->drains[i];
	spin_unlock(&c->drain_lock);
	return n;
}

void
dm_cache_drains_done(dm_cache *c, uint64_t tag, const dm_cache_drain *done, int n)
{
	spin_lock(&c->drain_lock);
	for (int i = 0; i < DM_CACHE_DRAINS; i++)
		for (int k = 0; k < n; k++)
			if (c->drains[i].used && c->drains[i].tag == tag && c->drains[i].token == done[k].token &&
				c->drains[i].memnode == done[k].memnode)
			{
				c->drains[i].used = 0;
				__atomic_sub_fetch(&c->ndrains, 1, __ATOMIC_SEQ_CST);
				break;
			}
	spin_unlock(&c->drain_lock);
}
