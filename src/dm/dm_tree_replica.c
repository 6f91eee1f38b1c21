/*
 * dm_tree_replica.c — read-only replica handles and the removal horizon
 * (DESIGN.md §7).
 *
 * A hot standby reads its primary's trees directly.  Its handles are in
 * replica mode: every function that would change remote memory (node
 * writes, CAS, locks, lock takeover and repair, node grants, redo slots,
 * frees, the partition map, the horizon) first asks dm_tree_writable(),
 * which refuses with DM_ERR_REPLICA, so a replica sends no write, atomic or
 * allocator RPC at all (test_tree_replica.c counts them).
 *
 * The removal horizon is meta word 11 of the catalog entry.  The writer
 * raises it (monotonic maximum, by CAS) and only then deletes entries; a
 * replica reads it after every node read.  Ordering: the raise is
 * acknowledged before any delete is issued, so a delete that a replica's
 * node read observes was executed after the raise; the horizon read comes
 * after that node read (later in the same batch on the same memnode, where
 * ops execute in order, else a later round trip), so it sees the raised
 * value or a later one.  The caller compares what the replica has seen
 * with what its readers need (the access method: the snapshot's xmin).
 */
#include <stddef.h>
#include <stdio.h>

#include "dm_region.h"
#include "dm_tree_int.h"

void
dm_tree_set_replica(dm_tree *t, int on)
{
	t->replica = on ? 1 : 0;
}

int
dm_tree_is_replica(const dm_tree *t)
{
	return t->replica;
}

int
dm_tree_check_exists(dm_tree *t)
{
	dm_tree_info info;
	int			rc = dm_tree_open(t->c, t->home, &t->name, &info);

	if (rc == DM_OK && info.tree_id != t->info.tree_id)
		rc = DM_ERR_NOTFOUND;
	if (rc == DM_ERR_NOTFOUND)
		return dm_tree_fail(t, rc, "tree %llx is no longer in the catalog of memnode %u",
							(unsigned long long) t->info.tree_id, t->home);
	return rc == DM_OK ? DM_OK : dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
}

int
dm_tree_writable(dm_tree *t, const char *what)
{
	if (!t->replica)
		return DM_OK;
	return dm_tree_fail(t, DM_ERR_REPLICA, "cannot %s through a read-only replica handle of tree %llx",
						what, (unsigned long long) t->info.tree_id);
}

static void
note_horizon(dm_tree *t, uint64_t h)
{
	if (h > t->horizon_seen)
		t->horizon_seen = h;
}

/*
 * The words a replica reads after a node: the horizon (meta word 11) up to
 * the catalog entry's tree id, which the memnode zeroes or changes when the
 * tree is dropped (clients may read the whole entry).
 */
#define TAIL_WORDS ((offsetof(dm_cat_entry, tree_id) - offsetof(dm_cat_entry, meta[DM_META_HORIZON - 1])) / 8 + 1)

static int
note_tail(dm_tree *t, const uint64_t *tail)
{
	/*
	 * The writer dropped the tree (a standby that has not replayed the
	 * DROP or REINDEX yet): the node may be freed memory, and the horizon
	 * is gone with the entry.  Whatever the node said, report the tree as
	 * gone.
	 */
	if (tail[TAIL_WORDS - 1] != t->info.tree_id)
		return dm_tree_fail(t, DM_ERR_NOTFOUND, "tree %llx was dropped while this replica read it",
							(unsigned long long) t->info.tree_id);
	note_horizon(t, tail[0]);
	return DM_OK;
}

int
dm_tree_read_node_raw(dm_tree *t, dm_gaddr addr, void *buf)
{
	dm_gaddr	haddr = DM_META_WORD_ADDR(t, DM_META_HORIZON);
	uint64_t	tail[TAIL_WORDS];
	dm_op		ops[2];
	int			same, rc;

	if (!t->replica)
		return dm_read(t->c, addr, buf, t->node_size);
	/* the node first, then the horizon: ops to one memnode execute in order */
	same = dm_gaddr_node(addr) == dm_gaddr_node(haddr);
	dm_op_read(&ops[0], addr, buf, t->node_size);
	if (same)
		dm_op_read(&ops[1], haddr, tail, sizeof(tail));
	if ((rc = dm_post(t->c, ops, same ? 2 : 1, NULL)) != DM_OK)
		return rc;
	if (same)
		return note_tail(t, tail);
	/* on another memnode only leaves need it (inner nodes lose no entries): a second round trip */
	if (NODE_HDR(buf)->level == 0 || !dm_node_valid(buf, t->node_size, t->info.tree_id))
	{
		if ((rc = dm_read(t->c, haddr, tail, sizeof(tail))) != DM_OK)
			return rc;
		return note_tail(t, tail);
	}
	return DM_OK;
}

int
dm_tree_read_horizon_after(dm_tree *t)
{
	uint64_t	tail[TAIL_WORDS];
	int			rc;

	if (!t->replica)
		return DM_OK;
	if ((rc = dm_read(t->c, DM_META_WORD_ADDR(t, DM_META_HORIZON), tail, sizeof(tail))) != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	return note_tail(t, tail);
}

int
dm_tree_horizon_get(dm_tree *t, uint64_t *horizon)
{
	int			rc = dm_read(t->c, DM_META_WORD_ADDR(t, DM_META_HORIZON), horizon, 8);

	if (rc != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	note_horizon(t, *horizon);
	return DM_OK;
}

int
dm_tree_horizon_raise(dm_tree *t, uint64_t horizon)
{
	dm_gaddr	haddr = DM_META_WORD_ADDR(t, DM_META_HORIZON);
	uint64_t	cur;
	int			rc;

	if ((rc = dm_tree_writable(t, "raise the removal horizon")) != DM_OK)
		return rc;
	if ((rc = dm_read(t->c, haddr, &cur, 8)) != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	/* a monotonic maximum: concurrent raisers (several VACUUMs) never lower it */
	while (cur < horizon)
	{
		uint64_t	old;

		if ((rc = dm_cas(t->c, haddr, cur, horizon, &old)) != DM_OK)
			return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
		if (old == cur)
			break;
		cur = old;
	}
	return DM_OK;
}

uint64_t
dm_tree_horizon_seen(const dm_tree *t)
{
	return t->horizon_seen;
}
