/*
 * dm_tree_exec.c — the offload executor's half of the tree code: what a
 * memnode runs for DM_RPC_OFF_LOOKUP/SCAN/INSERT/DELETE (DEX §6; NAM
 * paper §5, the hybrid design: one RPC for the descent of a subtree that
 * lives on one memnode).
 *
 * The memnode (memnode/offload.c) opens a tree handle in executor mode on
 * an in-process client (dm_client_local.c) and runs the ordinary tree
 * functions with it: dm_tree.c's descent and level_apply, dm_tree_io.c's
 * validated reads, lock words and fenced (version-guarded) writes.  So the
 * executor and clients writing the same nodes one-sided are safe with each
 * other for the same reasons two clients are (dm_tree_io.c), and every
 * batch the executor sends passes the memnode's checks for the calling
 * identity.  Executor mode (t->exec_active) changes four things:
 *
 *   - descents start at the node the client names (at level L), not the
 *     root, and follow right links past splits from there;
 *   - they never leave this memnode (placement keeps a level-M subtree on
 *     one memnode; a right link or child elsewhere means "fall back");
 *   - nothing structural: a leaf that would split, an unlink to finish, a
 *     start node that no longer covers the key, or a lock held by someone
 *     else for more than a few tries, answer DM_ERR_FALLBACK with nothing
 *     changed, and the client does the operation the normal way;
 *   - the nodes it wrote are listed in the reply, for the client to drop
 *     its cached copies (DEX §6.2).
 *
 * Scans (DEX does not offload them): entries from the lower bound up,
 * following right links from leaf to leaf inside this memnode, up to max
 * in one reply, each leaf read as a validated copy and the cursor moved
 * by fences, so no entry is returned twice or out of order and none
 * present for the whole scan is missed (as dm_tree_scan.c's iterator).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dm_hop.h"
#include "dm_offload.h"
#include "dm_tree_int.h"

static uint64_t
exec_token(void)
{
	static __thread uint64_t seq;
	struct timespec ts;
	uint64_t	v;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	v = ((uint64_t) getpid() << 40) ^ ((uint64_t) ts.tv_nsec << 8) ^ (++seq << 20) ^ (uint64_t) ts.tv_sec;
	return v ? v : 1;
}

int
dm_tree_exec_open(dm_client *c, uint16_t memnode, const dm_rpc_off_req *req, dm_tree **out)
{
	dm_tree    *t;
	uint32_t	ns = req->node_size;

	*out = NULL;
	if (ns < DM_NODE_MIN || ns > DM_NODE_MAX || (ns & (ns - 1)) != 0 || req->tree_id == 0 ||
		dm_gaddr_node(req->start) != memnode || (req->start & DM_GADDR_RESERVED_BIT) ||
		(req->level >= DM_TREE_MAX_LEVELS && req->level != UINT32_MAX) ||
		(req->fence != 0 && dm_gaddr_node(req->fence) != memnode) ||
		(req->hw_mark != 0 && (req->hw_word == 0 || dm_gaddr_node(req->hw_word) != memnode ||
							   (req->hw_word & 7) != 0 || (req->hw_word & DM_GADDR_RESERVED_BIT))))
		return DM_ERR_INVALID;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return DM_ERR_NOMEM;
	t->c = c;
	t->home = memnode;
	t->info.tree_id = req->tree_id;
	t->node_size = ns;
	t->leaf_cap = dm_leaf_cap(ns);
	t->inner_cap = dm_inner_cap(ns);
	t->placement_level = DM_TREE_MAX_LEVELS;
	t->nmemnodes = 1;
	t->memnodes[0] = memnode;
	t->lock_timeout_ms = req->lock_timeout_ms ? (int) req->lock_timeout_ms : 10000;
	t->token = exec_token();
	/* writes are fenced by the client's writer word on this memnode's fence word */
	t->writer = req->writer;
	t->fence[0] = req->fence;
	t->writer_refused = req->fence == 0;
	t->exec_active = 1;
	t->exec_start = req->start;
	t->exec_level = req->level == UINT32_MAX ? -1 : (int) req->level;	/* -1: not known */
	t->exec_memnode = memnode;
	/*
	 * The high-water raise the client's write depends on: carried by the
	 * first write batch after its fence guard (dm_tree_writer_carry_op), so
	 * it is up before any byte of the write lands.  Bounds-checked like
	 * every executor batch (a client can only raise a word of its own trees).
	 */
	t->exec_hw_word = req->hw_mark ? req->hw_word : 0;
	t->hw_want = req->hw_mark;
	t->hw_carry = req->hw_mark ? 1 : 0;
	*out = t;
	return DM_OK;
}

static dm_entry
from_wire(dm_entry_wire w)
{
	return dm_entry_make(w.key, w.tid);
}

static dm_entry_wire
to_wire(dm_entry e)
{
	dm_entry_wire w = {e.key, e.tid};

	return w;
}

/* e lies beyond the upper bound hi (incl: hi itself is in range). */
static int
past_hi(dm_entry e, dm_entry hi, int incl)
{
	int			c = dm_entry_cmp(e, hi);

	return incl ? c > 0 : c >= 0;
}

/*
 * Forward scan from lo: entries into ents (at most max); rep->done 1 when
 * the range is exhausted, else rep->resume says where to go on (entries >
 * resume, or >= resume when done is DM_OFF_RESUME_INCL).
 */
static int
exec_scan(dm_tree *t, const dm_rpc_off_req *req, dm_rpc_off_rep *rep, dm_entry_wire *ents)
{
	dm_entry	cur = from_wire(req->lo);
	int			cur_incl = (req->flags & DM_OFF_LO_INCL) != 0;
	dm_entry	hi = from_wire(req->hi);
	int			hi_incl = (req->flags & DM_OFF_HI_INCL) != 0;
	uint32_t	max = req->max;
	uint8_t    *buf = aligned_alloc(8, t->node_size);
	dm_gaddr	addr;
	int			rc;
	uint32_t	n = 0;

	rep->done = 1;
	if (buf == NULL)
		return DM_ERR_NOMEM;
	if ((rc = dm_tree_descend(t, cur, 0, &addr, buf)) != DM_OK)
		goto out;
	for (int hops = 0;; hops++)
	{
		dm_node_hdr *h = NODE_HDR(buf);
		dm_gaddr	right;

		/* a hopscotch leaf as the sorted leaf of its entries (dm_hop.h) */
		dm_hop_sorted_view(buf);
		if (!(h->flags & DM_NODE_DEAD))
		{
			for (int i = dm_leaf_lower_bound(buf, &cur); i < h->count; i++)
			{
				dm_entry	e = dm_node_entry(buf, i);

				if (!cur_incl && dm_entry_cmp(e, cur) == 0)
					continue;
				if (past_hi(e, hi, hi_incl))
					goto out;	/* done */
				if (n == max)
				{
					rep->done = 0;
					rep->resume = ents[n - 1];
					goto out;
				}
				ents[n++] = to_wire(e);
			}
		}
		if (dm_entry_cmp(dm_node_high(buf), DM_ENTRY_INF) == 0 || past_hi(dm_node_high(buf), hi, hi_incl))
			goto out;			/* done */
		/* everything below the high fence is returned: go on from there */
		cur = dm_node_high(buf);
		cur_incl = 1;
		right = h->right;
		if (right == 0 || dm_gaddr_node(right) != t->exec_memnode || hops > 100000)
		{
			/* the rest is on another memnode: the client continues */
			rep->done = DM_OFF_RESUME_INCL;
			rep->resume = to_wire(cur);
			goto out;
		}
		if ((rc = dm_node_read(t, right, buf)) != DM_OK)
			goto out;
		addr = right;
		/*
		 * The leaf that follows has our high fence as its low one (a dead,
		 * empty leaf too: dm_tree_scan.c step_right, whose test this is);
		 * anything else is memory reused since we read the link -- a leaf
		 * further left would take the scan backwards.
		 */
		if (NODE_HDR(buf)->level != 0 || dm_entry_cmp(dm_node_low(buf), cur) != 0 ||
			((NODE_HDR(buf)->flags & DM_NODE_DEAD) && NODE_HDR(buf)->count != 0))
		{
			/* not the leaf that follows any more (reused): find it from the start node */
			if ((rc = dm_tree_descend(t, cur, 0, &addr, buf)) != DM_OK)
				goto out;
		}
	}
out:
	free(buf);
	rep->count = n;
	return rc;
}

int
dm_tree_exec_run(dm_tree *t, uint32_t code, const dm_rpc_off_req *req, dm_rpc_off_rep *rep,
				 dm_entry_wire *ents)
{
	int			rc;
	int			existed = 0;
	dm_entry	e = from_wire(req->lo);

	memset(rep, 0, sizeof(*rep));
	t->exec_nchanged = 0;
	switch (code)
	{
		case DM_RPC_OFF_LOOKUP:
		case DM_RPC_OFF_SCAN:
			if (req->max == 0 || req->max > DM_OFF_MAX_ENTRIES)
				return DM_ERR_INVALID;
			rc = exec_scan(t, req, rep, ents);
			break;
		case DM_RPC_OFF_INSERT:
			rc = dm_tree_insert(t, e, &existed);
			rep->done = (uint32_t) existed;
			break;
		case DM_RPC_OFF_DELETE:
			rc = dm_tree_delete(t, e, &existed);
			rep->done = (uint32_t) existed;
			break;
		default:
			return DM_ERR_INVALID;
	}
	/* a write that changed more nodes than the reply can name cannot happen (no splits) */
	if (t->exec_nchanged > DM_OFF_MAX_CHANGED)
		return DM_ERR_INTERNAL;
	rep->start_level = (uint32_t) t->exec_seen_level;
	rep->high_water = t->high_water;
	rep->nchanged = (uint32_t) t->exec_nchanged;
	memcpy(rep->changed, t->exec_changed, sizeof(rep->changed));
	if (rc != DM_OK)
		rep->count = 0;
	return rc;
}

const char *
dm_tree_exec_error(const dm_tree *t)
{
	return t->err;
}
