/*
 * dm_offload_drain.c — offloaded writes whose outcome is unknown (their
 * RPC timed out or was cancelled; the memnode may still run them): their
 * tokens are kept in the node cache's shared table (dm_cache_drain.c), and
 * the next user of the tree has the memnode cancel them and waits until
 * none runs (DM_RPC_OFF_DRAIN) before the tree's cached copies are trusted
 * again.  Why, and the residuals: docs/design.md, "Writes of unknown
 * outcome"; the memnode's side: memnode/offload.c.
 */
#include <string.h>

#include "dm_cache.h"
#include "dm_offload.h"
#include "dm_tree_int.h"

/*
 * Ask memnode mn until none of the tokens runs any more (each is cancelled
 * by the first ask): then none of their writes can land.  Bounded by the
 * op timeout.
 */
static int
drain_at(dm_tree *t, uint16_t mn, const uint64_t *tokens, int n)
{
	dm_rpc_off_drain_req req;
	uint64_t	start = dm_tree_mono_ms();
	uint64_t	limit = (uint64_t) dm_client_op_timeout(t->c);

	memset(&req, 0, sizeof(req));
	req.n = (uint32_t) n;
	memcpy(req.tokens, tokens, (size_t) n * sizeof(uint64_t));
	for (int k = 0;; k++)
	{
		dm_rpc_off_drain_rep rep;
		int			rc = dm_client_rpc(t->c, mn, DM_RPC_OFF_DRAIN, &req, sizeof(req), &rep, sizeof(rep),
									   sizeof(rep), NULL);

		if (rc != DM_OK)
			return dm_tree_fail(t, rc, "cannot drain offloaded writes whose outcome is unknown: %s",
								dm_client_error(t->c));
		if (rep.running == 0)
			return DM_OK;
		if (dm_tree_mono_ms() - start > limit)
			return dm_tree_fail(t, DM_ERR_TIMEOUT,
								"%u offloaded writes whose outcome is unknown still run on memnode %u after %llu ms",
								rep.running, mn, (unsigned long long) limit);
		dm_tree_backoff(k);
	}
}

/*
 * An offloaded write whose reply never came (a timeout, a cancel) may
 * still be running on the memnode and land after any invalidation we do
 * now: a process of this instance caching a node it writes before it lands
 * would keep a stale copy, trusted for good (owned nodes are never read
 * again remotely) -- a scan would miss an entry, VACUUM would not remove
 * one whose tid the heap then reuses.  So the token goes into the cache's
 * shared table, and whoever uses the tree next drains it first
 * (dm_tree_drain_settle).  A full table (DM_CACHE_DRAINS writes lost and
 * not yet drained): drain here and now, on a new connection (the failure
 * broke ours); if even that fails the write is only covered by the tree's
 * invalidation done at the failure (docs/design.md: residual).
 */
void
dm_offload_remember_unknown(dm_tree *t, uint16_t mn, uint64_t token)
{
	if (t->cache == NULL)
		return;
	if (dm_cache_drain_add(t->cache, t->info.tree_id, t->ctag, mn, token) == 0)
		return;
	if (dm_client_reconnect(t->c, mn) == DM_OK && drain_at(t, mn, &token, 1) == DM_OK)
	{
		(void) dm_cache_invalidate_nodes(t->cache, t->ctag, NULL, 0);
		dm_cache_invalidate_tree(t->cache, t->ctag);
	}
}

int
dm_tree_drain_settle(dm_tree *t, int *drained)
{
	dm_cache_drain d[DM_CACHE_DRAINS];
	int			n;

	if (drained)
		*drained = 0;
	if (t->cache == NULL || (n = dm_cache_drains(t->cache, t->info.tree_id, d, DM_CACHE_DRAINS)) == 0)
		return DM_OK;
	for (int i = 0; i < n; i++)
	{
		uint64_t	tokens[DM_OFF_DRAIN_MAX];
		int			m = 0,
					rc,
					seen = 0;

		/* one memnode at a time, the first time it appears */
		for (int j = 0; j < i; j++)
			seen |= d[j].memnode == d[i].memnode;
		if (seen)
			continue;
		for (int j = i; j < n; j++)
			if (d[j].memnode == d[i].memnode)
			{
				tokens[m++] = d[j].token;
				if (m == DM_OFF_DRAIN_MAX)
				{
					if ((rc = drain_at(t, (uint16_t) d[i].memnode, tokens, m)) != DM_OK)
						return rc;
					m = 0;
				}
			}
		if (m > 0 && (rc = drain_at(t, (uint16_t) d[i].memnode, tokens, m)) != DM_OK)
			return rc;
	}
	/*
	 * None can land now: copies read before they landed go (under the tag
	 * the tree has now and the one it had then, if its home memnode
	 * restarted since), and admissions under way fail.
	 */
	(void) dm_cache_invalidate_nodes(t->cache, t->ctag, NULL, 0);
	dm_cache_invalidate_tree(t->cache, t->ctag);
	for (int i = 0; i < n; i++)
		if (d[i].tag != t->ctag)
			dm_cache_invalidate_tree(t->cache, d[i].tag);
	dm_cache_drains_done(t->cache, d, n);
	if (drained)
		*drained = n;
	return DM_OK;
}
