/*
 * dm_tree_cacheio.c — node reads and write locks through the node cache
 * (dm_cache.h): a read served from a frame, or fetched and admitted with
 * its parent's swizzle hint; a write lock that is the frame's local lock
 * alone for an owned node (with the remote lock as well over shm, whose
 * value names the redo slot) and also the remote lock for any other; the
 * write-through on release.  What a handle may keep in the cache is
 * dm_tree_node_class's answer (dm_tree_own.c); the remote reads, locks and
 * fenced writes underneath are dm_tree_io.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "dm_tree_int.h"

static void
no_hints(dm_tree *t)
{
	if (t->hints)
		for (uint32_t s = 0; s < dm_cache_hint_slots(t->cache); s++)
			t->hints[s] = DM_FRAME_NONE;
}

/*
 * Whether a node just read may stay in the cache: owned nodes are always
 * fresh there; shared inner nodes may go stale (descents notice through
 * fences and refresh them) but leaves must not, and foreign nodes change
 * without our knowledge.  The class comes from dm_tree_node_class (replica
 * handles: leaves foreign, inner nodes shared).
 */
static int
cacheable(dm_tree *t, const void *buf)
{
	const dm_node_hdr *h = buf;
	int			cls = dm_tree_node_class(t, buf);

	if (h->flags & DM_NODE_DEAD)
		return 0;
	return cls == DM_OWN_OWNED || (cls == DM_OWN_SHARED && h->level > 0);
}

int
dm_node_fetch(dm_tree *t, dm_gaddr addr, int level, dm_fetch_ctx ctx, void *buf, uint32_t *frame)
{
	dm_cache   *c = t->cache;
	uint32_t	hint = ctx.hint;
	int			rc;

	if (frame)
		*frame = DM_FRAME_NONE;
	if (c == NULL)
		return dm_node_read(t, addr, buf);
	if (addr == 0 || (addr & DM_GADDR_RESERVED_BIT))
		return dm_tree_fail(t, DM_ERR_CORRUPT, "tree points to invalid address 0x%llx",
							(unsigned long long) addr);
	for (int k = 0; k < 8; k++)
	{
		int			io,
					admitted;
		uint64_t	gen;
		uint32_t	f = dm_cache_lookup(c, t->ctag, addr, hint, &io);
		uint32_t	existing;

		if (f != DM_FRAME_NONE)
		{
			uint64_t	stamp = 0;
			int			r = dm_cache_copy_stamped(c, f, t->ctag, addr, buf, t->node_size, t->hints, NULL,
												  &stamp);

			if (r == DM_CACHE_COPIED)
			{
				/*
				 * A replica learns the removal horizon from every node it
				 * reads: a cached copy carries the one read with it (its
				 * admitter's), so a reader of the copy sees every removal
				 * the copy reflects, as a remote read would show it.
				 */
				if (t->replica && stamp > t->horizon_seen)
					t->horizon_seen = stamp;
				/* reached through the table: swizzle the parent's pointer again */
				if (f != hint && ctx.pframe != DM_FRAME_NONE)
					dm_cache_set_hint(c, ctx.pframe, ctx.slot, f);
				if (frame)
					*frame = f;
				return DM_OK;
			}
			if (r == DM_CACHE_BUSY)
				break;
			hint = DM_FRAME_NONE;
			continue;
		}
		if (io || (level >= 0 && !dm_cache_should_admit(c, level)))
			break;
		/* the I/O flag: we fetch it, others read it remotely meanwhile */
		f = dm_cache_admit_begin(c, t->ctag, addr, &existing);
		if (f == DM_FRAME_NONE)
		{
			if (existing == DM_FRAME_NONE)
				break;
			hint = existing;
			continue;
		}
		gen = dm_cache_inval_gen(c);
		if ((rc = dm_node_read(t, addr, buf)) != DM_OK)
		{
			dm_cache_admit_abort(c, f);
			return rc;
		}
		dm_cache_count_miss(c, NODE_HDR(buf)->level);
		if (!cacheable(t, buf) || !dm_cache_caches_level(c, NODE_HDR(buf)->level))
		{
			dm_cache_admit_abort(c, f);
			no_hints(t);
			return DM_OK;
		}
		/* the horizon read with the node (or later) goes with the copy */
		if (t->replica)
			dm_cache_set_stamp(c, f, t->horizon_seen);
		/* an invalidation since `gen` may be for this very node: then do not keep it */
		admitted = dm_cache_admit_finish_gen(c, f, buf, t->node_size, NODE_HDR(buf)->level,
											 ctx.pframe, ctx.slot, gen);
		no_hints(t);
		if (frame && admitted)
			*frame = f;
		return DM_OK;
	}
	if ((rc = dm_node_read(t, addr, buf)) != DM_OK)
		return rc;
	dm_cache_count_miss(c, NODE_HDR(buf)->level);
	no_hints(t);
	return DM_OK;
}

/*
 * A lock that failed after the frame was taken: the frame is dropped (its
 * copy may be stale) and forgotten, so the caller's release of the failed
 * lock (unlink_leaf's error path does release it) does not drop it again,
 * which would unlock a frame another process may own by then.
 */
static void
wlock_drop_frame(dm_cache *c, dm_wlock *wl)
{
	dm_cache_unlock_drop(c, wl->frame);
	wl->frame = DM_FRAME_NONE;
}

int
dm_node_fetch_if_cached(dm_tree *t, dm_gaddr addr, dm_fetch_ctx ctx, void *buf)
{
	dm_cache   *c = t->cache;
	uint32_t	hint = ctx.hint;
	int			io = 0;
	int			rc;

	if (c == NULL || !dm_cache_caches_level(c, 0))
		return 0;
	for (int k = 0; k < 8; k++)
	{
		uint32_t	f = dm_cache_lookup(c, t->ctag, addr, hint, &io);
		uint64_t	stamp = 0;
		int			r;

		if (f == DM_FRAME_NONE)
			break;
		r = dm_cache_copy_stamped(c, f, t->ctag, addr, buf, t->node_size, NULL, NULL, &stamp);
		if (r == DM_CACHE_COPIED)
		{
			if (t->replica && stamp > t->horizon_seen)
				t->horizon_seen = stamp;
			if (f != hint && ctx.pframe != DM_FRAME_NONE)
				dm_cache_set_hint(c, ctx.pframe, ctx.slot, f);
			return 1;
		}
		if (r == DM_CACHE_BUSY)
			return 0;
		hint = DM_FRAME_NONE;
	}
	/*
	 * The policy's admission decides, at its rate for a point lookup's miss
	 * (dm_cache_should_admit_lookup: the miss itself reads a neighbourhood,
	 * so an admission reads the whole leaf for the cache alone): whole,
	 * admitted.  Level -1: the coin was tossed here, dm_node_fetch must not
	 * toss again (that read the leaf whole for one admission in a hundred,
	 * not ten).
	 */
	if (!io && dm_cache_should_admit_lookup(c))
	{
		if ((rc = dm_node_fetch(t, addr, -1, ctx, buf, NULL)) != DM_OK)
			return -rc;
		return 1;
	}
	dm_cache_count_miss(c, 0);
	return 0;
}

int
dm_node_wlock(dm_tree *t, dm_gaddr addr, int level, dm_fetch_ctx ctx, void *buf, dm_wlock *wl)
{
	dm_cache   *c = t->cache;
	uint32_t	hint = ctx.hint;
	uint32_t	f = DM_FRAME_NONE;
	int			rc;

	wl->addr = addr;
	wl->frame = DM_FRAME_NONE;
	wl->remote = 1;
	wl->held = 0;
	wl->part_lo = wl->part_hi = 0;
	if ((rc = dm_tree_writable(t, "lock a node for writing")) != DM_OK)
		return rc;
	if (c == NULL || !dm_cache_caches_level(c, level))
		return dm_node_lock(t, addr, buf, &wl->held);

	/*
	 * Nodes at a cached level are written through their frame, always (a
	 * remote-only write would race with a process writing the frame), so
	 * a node that is not cached is admitted first.
	 */
	uint64_t	since = 0;
	int			from_frame = 0;

	for (int k = 0;; k++)
	{
		int			io;
		uint32_t	existing;

		f = dm_cache_lookup(c, t->ctag, addr, hint, &io);
		if (f != DM_FRAME_NONE)
		{
			if (dm_cache_lock(c, f, t->ctag, addr, buf, t->node_size) == 0)
			{
				from_frame = 1;
				break;
			}
			hint = DM_FRAME_NONE;
			continue;
		}
		if (!io)
		{
			f = dm_cache_admit_begin(c, t->ctag, addr, &existing);
			if (f != DM_FRAME_NONE)
			{
				if ((rc = dm_node_read(t, addr, buf)) != DM_OK)
				{
					dm_cache_admit_abort(c, f);
					return rc;
				}
				dm_cache_count_miss(c, NODE_HDR(buf)->level);
				if (NODE_HDR(buf)->flags & DM_NODE_DEAD)
				{
					/* a retired node: lock it remotely like any stale address */
					dm_cache_admit_abort(c, f);
					return dm_node_lock(t, addr, buf, &wl->held);
				}
				dm_cache_admit_finish(c, f, buf, t->node_size, NODE_HDR(buf)->level,
									  ctx.pframe, ctx.slot, 1);
				/* admitted for the write only: first in line for eviction */
				if (!dm_cache_should_admit(c, NODE_HDR(buf)->level))
					dm_cache_make_cold(c, f);
				break;
			}
			if (existing != DM_FRAME_NONE)
			{
				hint = existing;
				continue;
			}
		}
		/*
		 * Another process is fetching the node (we must not write around
		 * its frame), or no frame could be freed: wait, sleeping, as long as
		 * for a remote lock.
		 */
		if (since == 0)
			since = dm_tree_mono_ms();
		else if (dm_tree_mono_ms() - since > (uint64_t) t->lock_timeout_ms)
			return dm_tree_fail(t, DM_ERR_TIMEOUT,
								io ? "waited %d ms for another process's fetch of node 0x%llx into the cache"
								: "waited %d ms for a free frame of the node cache to write node 0x%llx",
								t->lock_timeout_ms, (unsigned long long) addr);
		dm_tree_backoff(k);
	}
	wl->frame = f;
	if (dm_tree_own_class(t, dm_node_low(buf), dm_node_high(buf)) == DM_OWN_OWNED)
	{
		/* the frame's copy is current for an owned node: no remote read at all */
		if (from_frame)
			dm_cache_count_hit(c, NODE_HDR(buf)->level, t->node_size);
		wl->remote = 0;
		if (dm_client_is_local(t->c, dm_gaddr_node(addr)))
		{
			/*
			 * Over shm the remote lock as well, just a CAS: its value names
			 * our redo slot, for the repair of a write we die in.  Taken
			 * (by a process of ours that died holding it): the full path,
			 * which waits it out, repairs and reads the node afresh.
			 */
			uint64_t	mine = dm_tree_lock_value(t, addr), old;

			if ((rc = dm_cas(t->c, addr, 0, mine, &old)) != DM_OK)
			{
				wlock_drop_frame(c, wl);
				return dm_tree_transport_error(t, rc);
			}
			wl->held = mine;
			if (old != 0 && (rc = dm_node_lock(t, addr, buf, &wl->held)) != DM_OK)
			{
				wlock_drop_frame(c, wl);
				return rc;
			}
		}
		return DM_OK;
	}
	/* shared: other instances write it too, under the remote lock (which reads it fresh) */
	if ((rc = dm_node_lock(t, addr, buf, &wl->held)) != DM_OK)
	{
		wlock_drop_frame(c, wl);
		return rc;
	}
	return DM_OK;
}

int
dm_node_wunlock(dm_tree *t, dm_wlock *wl, void *buf, int changed,
				int nnew, const dm_gaddr *new_addrs, uint8_t *const *new_bufs)
{
	dm_cache   *c = t->cache;
	int			rc = DM_OK;

	if (changed)
		rc = dm_node_write_unlock(t, wl->addr, buf, wl->held, nnew, new_addrs, new_bufs,
								  wl->part_lo, wl->part_hi);
	else if (wl->held)
		rc = dm_node_unlock(t, wl->addr, wl->held);
	if (wl->frame != DM_FRAME_NONE)
	{
		/*
		 * A failed write may or may not have landed, and a fenced one
		 * (DM_TREE_STALE) found the node newer than our copy: forget it.
		 */
		if ((changed && rc != DM_OK) || !cacheable(t, buf))
			dm_cache_unlock_drop(c, wl->frame);
		else
			dm_cache_unlock(c, wl->frame, changed || wl->remote ? buf : NULL, t->node_size);
		if (changed && rc == DM_OK && !wl->remote)
			dm_cache_count_local_write(c);
	}
	wl->frame = DM_FRAME_NONE;
	return rc;
}
