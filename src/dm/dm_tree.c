/*
 * dm_tree.c — tree handles (create, open, destroy), descent, and the write
 * operations: single and batched inserts and deletes with B-link splits.
 *
 * Every write goes through level_apply(): for a sorted batch of items at
 * one level it locks each covering node once, applies all the items that
 * fall inside its fences, and writes it back once; a node that overflows is
 * split in two (new right node written first, then the old node with its new
 * sibling pointer and fence, released in the same round trip), and the new
 * separators are applied one level up the same way.  A split root gets a new
 * root installed by CAS on the catalog's root word (grow_root).
 *
 * A node write that finds the node changed since it was read (its version
 * guard failed, dm_tree_io.c: a stale write of another writer landed, or
 * our lock was taken over) wrote nothing: level_apply locks the node again
 * and redoes that step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "dm_offload.h"
#include "dm_tree_int.h"

#define MAX_RESTARTS 10000

/* ---- handles ---------------------------------------------------------------- */

static int
valid_node_size(uint32_t n)
{
	return n >= DM_NODE_MIN && n <= DM_NODE_MAX && (n & (n - 1)) == 0;
}

static uint64_t
make_token(void)
{
	struct timespec ts;
	uint64_t	v;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	v = ((uint64_t) getpid() << 32) ^ (uint64_t) ts.tv_nsec ^ ((uint64_t) ts.tv_sec << 20);
	return v ? v : 1;
}

static int
setup_handle(dm_client *c, uint16_t home, const dm_tree_name *name, dm_tree **out)
{
	dm_tree    *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return DM_ERR_NOMEM;
	t->c = c;
	t->home = home;
	t->name = *name;
	t->token = make_token();
	t->lock_timeout_ms = 10000;
	*out = t;
	return DM_OK;
}

static int
check_memnodes_connected(dm_tree *t)
{
	for (int i = 0; i < t->nmemnodes; i++)
	{
		int			found = 0;

		for (int j = 0; j < dm_client_nnodes(t->c); j++)
		{
			dm_node_info ni;

			if (dm_client_node_info(t->c, j, &ni) == DM_OK && ni.node_id == t->memnodes[i])
				found = 1;
		}
		if (!found)
			return dm_tree_fail(t, DM_ERR_NOTFOUND, "tree uses memnode id %u, which this client is not connected to",
								t->memnodes[i]);
		t->slabs[i].memnode = t->memnodes[i];
	}
	return DM_OK;
}

static void
set_geometry(dm_tree *t, uint32_t node_size)
{
	t->node_size = node_size;
	t->leaf_cap = dm_leaf_cap(node_size);
	t->inner_cap = dm_inner_cap(node_size);
}

int
dm_tree_create_new(dm_client *c, uint16_t home, const dm_tree_name *name,
				   const dm_tree_opts *opts, dm_tree **out)
{
	dm_tree_opts o = opts ? *opts : (dm_tree_opts) {0};
	dm_tree    *t;
	uint64_t	meta[1 + DM_TREE_META_WORDS];
	uint8_t    *buf;
	dm_gaddr	root;
	uint64_t	old;
	int			rc, home_in = 0;

	*out = NULL;
	if (o.node_size == 0)
		o.node_size = 1024;
	if (o.placement_level == 0)
		o.placement_level = 1;
	if (o.nmemnodes == 0)
	{
		o.nmemnodes = 1;
		o.memnodes[0] = home;
	}
	if (!valid_node_size(o.node_size) || o.placement_level < 0 || o.placement_level > 8 ||
		o.nmemnodes < 0 || o.nmemnodes > DM_TREE_MAX_MEMNODES || o.lock_timeout_ms < 0)
		return DM_ERR_INVALID;
	for (int i = 0; i < o.nmemnodes; i++)
	{
		home_in |= o.memnodes[i] == home;
		for (int j = 0; j < i; j++)
			if (o.memnodes[i] == o.memnodes[j])
				return DM_ERR_INVALID;
	}
	if (!home_in)
		return DM_ERR_INVALID;

	if ((rc = setup_handle(c, home, name, &t)) != DM_OK)
		return rc;
	set_geometry(t, o.node_size);
	t->placement_level = o.placement_level;
	t->nmemnodes = o.nmemnodes;
	memcpy(t->memnodes, o.memnodes, sizeof(t->memnodes));
	if (o.lock_timeout_ms > 0)
		t->lock_timeout_ms = o.lock_timeout_ms;
	if ((rc = check_memnodes_connected(t)) != DM_OK)
		goto fail;
	if ((rc = dm_tree_create(c, home, name, &t->info)) != DM_OK)
	{
		dm_tree_fail(t, rc, "%s", dm_client_error(c));
		goto fail;
	}

	/* metadata first, root last: a reader that sees a root sees valid metadata */
	memset(meta, 0, sizeof(meta));
	meta[1] = (DM_TREE_META_MAGIC << 32) | ((uint64_t) DM_TREE_FORMAT << 16) |
		((uint64_t) __builtin_ctz(o.node_size) << 8) | (uint64_t) o.placement_level;
	/* low half: number of memnodes; high half: the lock takeover timeout */
	meta[2] = (uint64_t) o.nmemnodes | ((uint64_t) t->lock_timeout_ms << 32);
	for (int i = 0; i < o.nmemnodes; i++)
		meta[3 + i / 4] |= (uint64_t) o.memnodes[i] << (16 * (i % 4));
	/* words 8-10: the writer, its high-water mark and the fence words (dm_tree_writer.c) */
	meta[8] = o.writer;
	meta[9] = o.high_water;
	if ((rc = dm_tree_writer_create(t, meta)) != DM_OK)
		goto fail_drop;
	if ((rc = dm_write(c, t->info.meta_addr, &meta[1], DM_TREE_META_WORDS * 8)) != DM_OK)
		goto fail_drop;
	if ((rc = dm_tree_writer_load(t, meta)) != DM_OK)
		goto fail_drop;

	if ((buf = aligned_alloc(8, t->node_size)) == NULL)
	{
		rc = DM_ERR_NOMEM;
		goto fail_drop;
	}
	dm_node_init(buf, t->node_size, 0, t->info.tree_id, DM_ENTRY_MIN, DM_ENTRY_INF);
	dm_node_seal(buf);
	rc = dm_node_alloc(t, home, &root);
	if (rc == DM_OK)
		rc = dm_write(c, root, buf, dm_node_used_bytes(buf));
	free(buf);
	if (rc == DM_OK)
		rc = dm_cas(c, t->info.root_addr, 0, root, &old);
	if (rc == DM_OK && old != 0)
		rc = DM_ERR_EXISTS;
	if (rc != DM_OK)
		goto fail_drop;
	t->root = root;
	*out = t;
	return DM_OK;

fail_drop:
	if (t->err[0] == '\0')
		dm_tree_fail(t, rc, "%s", dm_client_error(c));
	dm_tree_drop(c, home, name, NULL);
fail:
	free(t);
	return rc;
}

int
dm_tree_open_existing(dm_client *c, uint16_t home, const dm_tree_name *name, dm_tree **out)
{
	dm_tree    *t;
	uint64_t	words[1 + DM_TREE_META_WORDS];
	int			rc;
	uint32_t	size_log2;

	*out = NULL;
	if ((rc = setup_handle(c, home, name, &t)) != DM_OK)
		return rc;
	if ((rc = dm_tree_open(c, home, name, &t->info)) != DM_OK ||
		(rc = dm_read(c, t->info.root_addr, words, sizeof(words))) != DM_OK)
	{
		free(t);
		return rc;
	}
	size_log2 = (uint32_t) (words[1] >> 8) & 0xFF;
	if ((words[1] >> 32) != DM_TREE_META_MAGIC || ((words[1] >> 16) & 0xFFFF) != DM_TREE_FORMAT ||
		size_log2 < 8 || size_log2 > 12 || (words[2] & 0xFFFFFFFF) == 0 ||
		(words[2] & 0xFFFFFFFF) > DM_TREE_MAX_MEMNODES || words[0] == 0)
	{
		free(t);
		return DM_ERR_CORRUPT;
	}
	set_geometry(t, 1u << size_log2);
	t->placement_level = (int) (words[1] & 0xFF);
	t->nmemnodes = (int) (words[2] & 0xFFFFFFFF);
	if ((words[2] >> 32) != 0)
		t->lock_timeout_ms = (int) (words[2] >> 32);
	for (int i = 0; i < t->nmemnodes; i++)
		t->memnodes[i] = (uint16_t) (words[3 + i / 4] >> (16 * (i % 4)));
	if ((rc = check_memnodes_connected(t)) != DM_OK ||
		(rc = dm_tree_writer_load(t, words)) != DM_OK)
	{
		free(t);
		return rc;
	}
	t->root = words[0];
	*out = t;
	return DM_OK;
}

void
dm_tree_close(dm_tree *t)
{
	if (t)
	{
		free(t->hints);
		dm_tree_wlog_free(t);
		dm_offload_free(t->off);
	}
	free(t);
}

int
dm_tree_destroy(dm_tree *t)
{
	int			rc;
	uint64_t	word;

	/* a writer fenced off must not free what the new writer uses (a race remains: read, then free) */
	if (t->writer_refused)
		return dm_tree_fail(t, DM_ERR_FENCED, "this handle may not change the tree");
	if ((rc = dm_tree_writer_read(t, &word, NULL)) != DM_OK)
		return rc;
	if (word != t->writer)
		return dm_tree_fail(t, DM_ERR_FENCED,
							"the tree is written by another writer now (writer %016llx, this handle writes as %016llx)",
							(unsigned long long) word, (unsigned long long) t->writer);

	if ((rc = dm_tree_writable(t, "free the tree")) != DM_OK)
		return rc;
	/* other memnodes first: if one fails, the catalog entry remains for a retry */
	for (int i = 0; i < t->nmemnodes; i++)
		if (t->memnodes[i] != t->home &&
			(rc = dm_chunk_free_owner(t->c, t->memnodes[i], t->info.tree_id, NULL)) != DM_OK)
			return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	if ((rc = dm_tree_drop(t->c, t->home, &t->name, NULL)) != DM_OK)
		return dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
	if (t->cache)
		dm_cache_invalidate_tree(t->cache, t->ctag);
	free(t->hints);
	dm_offload_free(t->off);
	free(t);
	return DM_OK;
}

uint32_t
dm_tree_node_size(const dm_tree *t)
{
	return t->node_size;
}

uint64_t
dm_tree_id(const dm_tree *t)
{
	return t->info.tree_id;
}

dm_client *
dm_tree_client(const dm_tree *t)
{
	return t->c;
}

uint16_t
dm_tree_home(const dm_tree *t)
{
	return t->home;
}

void
dm_tree_get_counters(const dm_tree *t, dm_tree_counters *out)
{
	*out = t->ctr;
}

const char *
dm_tree_error(const dm_tree *t)
{
	return t->err;
}

/* ---- root growth ------------------------------------------------------------- */

/*
 * Install a new root above the level of `root` (whose copy is rootbuf),
 * which no longer spans the key space: its split landed but the new root
 * did not, or not yet.  The splitter does this itself right after a root
 * split; anyone else does it when it finds the root word pointing at such a
 * node — the splitter ran out of memory, timed out, was cancelled or killed
 * between its split and the root CAS (as nbtree finishes incomplete
 * splits), or is simply still on its way.  Without this, every later split
 * at that level would wait forever for a parent level that never comes.
 *
 * The new root lists every node of the level, found by walking the right
 * links from the old root (the leftmost node: low fence MIN), each with its
 * low fence as separator.  A node that splits during the walk is fine
 * either way: if we read it after the split we list its new sibling too,
 * if before, the sibling is reached by its right link like any half-done
 * split, and its splitter adds its separator above later (a duplicate
 * separator is ignored there).  The CAS on the root word decides between
 * concurrent growers; a loser's node is never reachable and is leaked (one
 * node, only when two growers race for the same root).
 */
static int
grow_root(dm_tree *t, dm_gaddr root, const void *rootbuf)
{
	const dm_node_hdr *rh = NODE_HDR(rootbuf);
	int			level = rh->level;
	uint8_t    *nb = aligned_alloc(8, t->node_size);
	uint8_t    *cur = aligned_alloc(8, t->node_size);
	dm_inner_ent *ents = INNER_ENTS(nb);
	dm_gaddr	naddr, next;
	uint64_t	old;
	int			n = 0, rc = DM_OK;

	if ((rc = dm_tree_writable(t, "grow the root")) != DM_OK)
		goto out;
	if (nb == NULL || cur == NULL)
	{
		rc = dm_tree_fail(t, DM_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (level + 1 >= DM_TREE_MAX_LEVELS)
	{
		rc = dm_tree_fail(t, DM_ERR_CORRUPT, "tree would grow past %d levels", DM_TREE_MAX_LEVELS);
		goto out;
	}
	dm_node_init(nb, t->node_size, level + 1, t->info.tree_id, DM_ENTRY_MIN, DM_ENTRY_INF);
	memcpy(cur, rootbuf, t->node_size);
	ents[n].sep = DM_ENTRY_MIN;
	ents[n++].child = root;
	while ((next = NODE_HDR(cur)->right) != 0)
	{
		dm_entry	prev_high = NODE_HDR(cur)->high;

		if (n == t->inner_cap)
		{
			dm_gaddr	now;

			/*
			 * Most likely the root grew long ago and the level below it
			 * has grown wide since: our look at the root word was stale
			 * (we were stalled).  Then there is nothing to do.
			 */
			if ((rc = dm_read(t->c, t->info.root_addr, &now, sizeof(now))) != DM_OK)
			{
				rc = dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
				goto out;
			}
			if (now != root)
			{
				t->root = 0;
				goto out;
			}
			rc = dm_tree_fail(t, DM_ERR_CORRUPT, "level %d has more than %d nodes and no parent",
							  level, t->inner_cap);
			goto out;
		}
		if ((rc = dm_node_read(t, next, cur)) != DM_OK)
			goto out;
		if (NODE_HDR(cur)->level != level || (NODE_HDR(cur)->flags & DM_NODE_DEAD) ||
			dm_entry_cmp(NODE_HDR(cur)->low, prev_high) != 0)
		{
			rc = dm_tree_fail(t, DM_ERR_CORRUPT, "sibling chain at level %d broken at node 0x%llx",
							  level, (unsigned long long) next);
			goto out;
		}
		ents[n].sep = NODE_HDR(cur)->low;
		ents[n++].child = next;
	}
	if (dm_entry_cmp(NODE_HDR(cur)->high, DM_ENTRY_INF) != 0)
	{
		rc = dm_tree_fail(t, DM_ERR_CORRUPT, "node at 0x%llx has a high fence but no right sibling",
						  (unsigned long long) (n == 1 ? root : ents[n - 1].child));
		goto out;
	}
	if (n == 1)
		goto out;				/* the root spans everything after all */
	NODE_HDR(nb)->count = (uint16_t) n;
	dm_node_seal(nb);
	if ((rc = dm_node_alloc(t, dm_tree_place(t, level + 1, dm_gaddr_node(root)), &naddr)) != DM_OK)
		goto out;
	/* for replicas' caches, before posting: the writes may land even if a post fails */
	dm_tree_wlog_add(t, naddr);
	{
		/* both fenced: the new root on its memnode, then the root word on the home */
		dm_op		ops[2];

		if ((rc = dm_tree_fence_op(t, &ops[0], dm_gaddr_node(naddr))) != DM_OK)
			goto out;
		dm_op_write(&ops[1], naddr, nb, dm_node_used_bytes(nb));
		if ((rc = dm_post(t->c, ops, 2, NULL)) != DM_OK)
		{
			rc = dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
			goto out;
		}
		if (dm_tree_fenced_off(t, &ops[0]))
		{
			rc = DM_ERR_FENCED;
			goto out;
		}
		if ((rc = dm_tree_fence_op(t, &ops[0], t->home)) != DM_OK)
			goto out;
		dm_op_atomic(&ops[1], DM_OP_CAS, t->info.root_addr, root, naddr);
		if ((rc = dm_post(t->c, ops, 2, NULL)) != DM_OK)
		{
			rc = dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
			goto out;
		}
		if (dm_tree_fenced_off(t, &ops[0]))
		{
			rc = DM_ERR_FENCED;
			goto out;
		}
		old = ops[1].result;
	}
	if (old == root)
	{
		t->root = naddr;
		t->ctr.root_grows++;
	}
	else
	{
		t->root = 0;			/* somebody else grew it: read the root word again */
		t->ctr.nodes_unlinked++;
	}
out:
	free(nb);
	free(cur);
	return rc;
}

/* ---- descent ------------------------------------------------------------------ */

/*
 * Shared by descend (node covering e) and descend_before (leaf holding the
 * greatest entry < e): `before` shifts every fence comparison by one so
 * that an entry equal to a fence belongs to the node on its left.
 *
 * The cached root may be stale (the root grew): if e lies right of it, or
 * the tree is not yet as tall as `level`, the root word is read again, with
 * backoff.  A root read from the root word that does not span the key space
 * is the left half of a root split whose new root was not installed: a
 * writer (no_read: lock_covering) installs one (grow_root) and starts over;
 * a reader follows right links, as past any half-done split.
 */
static int
descend_impl(dm_tree *t, dm_entry e, int level, int before, int no_read, dm_gaddr *out_addr,
			 void *buf, dm_fetch_ctx *out_ctx)
{
	int			rc;

	for (int restarts = 0; restarts < MAX_RESTARTS; restarts++)
	{
		dm_gaddr	addr = t->root;
		int			fresh = 0;
		int			top = 1;
		uint32_t	frame = DM_FRAME_NONE;
		/* the cached parent we came through, if it may be stale (shared) */
		dm_gaddr	stale_suspect = 0;
		/* reached by a right link from a copy whose high fence was came_high */
		int			via_right = 0;
		dm_entry	came_high = DM_ENTRY_MIN;

		if (restarts > 0 && t->exec_active)
			return dm_tree_fail(t, DM_ERR_FALLBACK, "the start node no longer covers the entry");
		if (restarts > 0)
		{
			t->ctr.restarts++;
			if (restarts > 4)
			{
				struct timespec ts = {0, restarts < 64 ? 1000 : 100000};

				nanosleep(&ts, NULL);
			}
		}
		if (t->exec_active)
		{
			/* the executor starts below the root: it may move right, never grows the root */
			addr = t->exec_start;
			top = 0;
		}
		else if (addr == 0)
		{
			if ((rc = dm_tree_read_root(t, &addr)) != DM_OK)
				return rc;
			fresh = 1;
		}
		{
			dm_fetch_ctx rctx = {DM_FRAME_NONE, -1, t->root_frame, 0};

			if ((rc = dm_node_fetch(t, addr, -1, rctx, buf, &frame)) != DM_OK)
				return rc;
			t->root_frame = frame;
		}
		for (;;)
		{
			dm_node_hdr *h = NODE_HDR(buf);
			int			at_min = dm_entry_cmp(h->low, DM_ENTRY_MIN) == 0;
			int			at_inf = dm_entry_cmp(h->high, DM_ENTRY_INF) == 0;
			int			left_of_low = before ? !at_min && dm_entry_cmp(e, h->low) <= 0
				: dm_entry_cmp(e, h->low) < 0;
			int			right_of_high = !at_inf &&
				(before ? dm_entry_cmp(e, h->high) > 0 : dm_entry_cmp(e, h->high) >= 0);

			if (top && fresh && no_read && !at_inf && !(h->flags & DM_NODE_DEAD) && at_min)
			{
				/* an unfinished root split: finish it, then descend again */
				if ((rc = grow_root(t, addr, buf)) != DM_OK)
					return rc;
				t->ctr.root_repairs++;
				break;
			}
			/*
			 * A dead leaf right after the leaf we came from: an empty range
			 * (an unlink in progress or done, dm_tree_reclaim.c).  A reader
			 * takes it as the leaf for e (it has no entries) or moves on
			 * through its right link; a writer starts over (lock_covering
			 * finishes the unlink).
			 */
			int			empty_range = via_right && !no_read && level == 0 && h->level == 0 &&
				(h->flags & DM_NODE_DEAD) && dm_entry_cmp(h->low, came_high) == 0;

			if (((h->flags & DM_NODE_DEAD) && !empty_range) || left_of_low || h->level < level ||
				(t->exec_active && addr == t->exec_start &&
				 (t->exec_seen_level = h->level, t->exec_level >= 0 && h->level != t->exec_level)))
				break;			/* stale: start over from the root word */
			if (right_of_high)
			{
				dm_gaddr	right = h->right;

				if (top && !fresh)
					break;		/* the cached root is no longer the root */
				if (right == 0)
					return dm_tree_fail(t, DM_ERR_CORRUPT, "node at 0x%llx has a high fence but no right sibling",
										(unsigned long long) addr);
				/* a cached shared parent that sent us here may lack a separator */
				if (stale_suspect && t->cache)
				{
					dm_cache_invalidate(t->cache, t->ctag, stale_suspect);
					stale_suspect = 0;
				}
				if (t->exec_active && (rc = dm_tree_exec_check(t, right, "right sibling")) != DM_OK)
					return rc;
				came_high = h->high;
				via_right = 1;
				if ((rc = dm_node_fetch(t, right, h->level, DM_FETCH_CTX_NONE, buf, &frame)) != DM_OK)
					return rc;
				addr = right;
				continue;
			}
			if (h->level == level)
			{
				*out_addr = addr;
				return DM_OK;
			}
			else
			{
				int			i = dm_inner_child_index(buf, e);
				int			want = h->level - 1;
				dm_gaddr	child;
				dm_fetch_ctx ctx;

				/* before: the child holding entries < e has the last sep < e */
				while (before && i > 0 && dm_entry_cmp(INNER_ENTS(buf)[i].sep, e) >= 0)
					i--;
				child = INNER_ENTS(buf)[i].child;
				ctx.pframe = frame;
				ctx.slot = i;
				ctx.hint = frame != DM_FRAME_NONE ? t->hints[i] : DM_FRAME_NONE;
				/* (by dm_tree_node_class: a replica's inner nodes are shared, never owned) */
				stale_suspect = frame != DM_FRAME_NONE &&
					dm_tree_node_class(t, h) != DM_OWN_OWNED ? addr : 0;
				ctx.suspect = stale_suspect;
				if (t->exec_active && (rc = dm_tree_exec_check(t, child, "child")) != DM_OK)
					return rc;

				/*
				 * A writer locks the node next, which reads it again: stop at
				 * its address (the lock's read validates fences and level).
				 */
				if (no_read && want == level)
				{
					*out_addr = child;
					if (out_ctx)
						*out_ctx = ctx;
					return DM_OK;
				}
				if ((rc = dm_node_fetch(t, child, want, ctx, buf, &frame)) != DM_OK)
					return rc;
				addr = child;
				top = 0;
				via_right = 0;
				if (NODE_HDR(buf)->level != want)
					break;
			}
		}
		if (stale_suspect && t->cache)
			dm_cache_invalidate(t->cache, t->ctag, stale_suspect);
		t->root = 0;
	}
	return dm_tree_fail(t, DM_ERR_CORRUPT, "descent did not converge after %d restarts", MAX_RESTARTS);
}

int
dm_tree_descend(dm_tree *t, dm_entry e, int level, dm_gaddr *addr, void *buf)
{
	return descend_impl(t, e, level, 0, 0, addr, buf, NULL);
}

int
dm_tree_descend_before(dm_tree *t, dm_entry e, dm_gaddr *addr, void *buf)
{
	return descend_impl(t, e, 0, 1, 0, addr, buf, NULL);
}

/* ---- writes -------------------------------------------------------------------- */

static int
entry_valid(dm_entry e)
{
	uint64_t	tid = e.tid & ~DM_TID_NULL;

	/* tids stay below DM_TID_LIMIT, so no entry can equal +infinity or a key bound */
	if (tid >= DM_TID_LIMIT)
		return 0;
	/* a NULL-key entry is exactly what dm_entry_null() makes */
	return !(e.tid & DM_TID_NULL) || e.key == UINT64_MAX;
}

/*
 * Lock the node at `level` covering e (moving right past concurrent splits).
 * Returns with the node locked (*wl) and its copy in buf.
 */
static int
lock_covering(dm_tree *t, int level, dm_entry e, dm_wlock *wl, void *buf)
{
	dm_gaddr	addr;
	dm_fetch_ctx ctx;
	int			rc,
				released;

	for (int attempt = 0; attempt < MAX_RESTARTS; attempt++)
	{
		/* the address only: locking reads the node anyway (one round trip saved) */
		if ((rc = descend_impl(t, e, level, 0, 1, &addr, buf, &ctx)) != DM_OK)
			return rc;
		if ((rc = dm_node_wlock(t, addr, level, ctx, buf, wl)) != DM_OK)
			return rc;
		released = 0;
		for (;;)
		{
			dm_node_hdr *h = NODE_HDR(buf);
			dm_gaddr	right = h->right;

			if ((h->flags & DM_NODE_DEAD) || h->level != level || dm_entry_cmp(e, h->low) < 0)
				break;			/* changed under us before we locked it: descend again */
			if (dm_node_covers(buf, e))
				return DM_OK;
			if (right == 0)
			{
				dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
				return dm_tree_fail(t, DM_ERR_CORRUPT, "node at 0x%llx has a high fence but no right sibling",
									(unsigned long long) addr);
			}
			/*
			 * An unlink whose reclaimer stopped after marking our right
			 * sibling dead (dm_tree_reclaim.c): we hold its left
			 * neighbour, so finish it and start over.
			 */
			if (t->exec_active && (rc = dm_tree_exec_check(t, right, "right sibling")) != DM_OK)
			{
				dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
				return rc;
			}
			if (level == 0)
			{
				uint8_t    *rbuf = aligned_alloc(8, t->node_size);
				int			dead;

				if (rbuf == NULL)
				{
					dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
					return dm_tree_fail(t, DM_ERR_NOMEM, "out of memory");
				}
				if ((rc = dm_node_read(t, right, rbuf)) != DM_OK)
				{
					free(rbuf);
					dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
					return rc;
				}
				dead = (NODE_HDR(rbuf)->flags & DM_NODE_DEAD) && NODE_HDR(rbuf)->level == level &&
					dm_entry_cmp(NODE_HDR(rbuf)->low, h->high) == 0;
				if (dead && t->exec_active)
				{
					/* the executor changes one node at a time: a client finishes unlinks */
					free(rbuf);
					dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL);
					return dm_tree_fail(t, DM_ERR_FALLBACK, "an unlink is to be finished");
				}
				if (dead)
					rc = dm_tree_finish_unlink(t, wl, buf, rbuf);
				free(rbuf);
				if (dead)
				{
					if (rc != DM_OK && rc != DM_TREE_STALE)
						return rc;
					released = 1;
					break;
				}
			}
			/* split after our descent read it: the entry moved right */
			if ((rc = dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL)) != DM_OK)
				return rc;
			addr = right;
			if ((rc = dm_node_wlock(t, addr, level, DM_FETCH_CTX_NONE, buf, wl)) != DM_OK)
				return rc;
		}
		if (!released && (rc = dm_node_wunlock(t, wl, buf, 0, 0, NULL, NULL)) != DM_OK)
			return rc;
		/* a cached shared parent that led to the wrong node must be read again */
		if (t->cache && ctx.suspect)
			dm_cache_invalidate(t->cache, t->ctag, ctx.suspect);
		t->root = 0;
	}
	return dm_tree_fail(t, DM_ERR_CORRUPT, "could not lock the node covering an entry");
}

/*
 * Where to split m merged items: near the middle, but for leaves preferably
 * between two different keys (as nbtree's _bt_findsplitloc prefers), so the
 * entries of one key stay in one leaf where they fit: a lookup of the key
 * then reads one leaf, and concurrent updates of a key cannot move its
 * entry across a leaf boundary under a running lookup.
 */
static int
split_point(const dm_inner_ent *merged, int m, int level, int cap)
{
	int			mid = m / 2;
	/* both sides must fit a node: m can be up to twice the capacity */
	int			lo = m - cap > 1 ? m - cap : 1;
	int			hi = cap < m - 1 ? cap : m - 1;

	if (level != 0)
		return mid;
	for (int d = 0; d <= m / 4; d++)
	{
		if (mid - d >= lo && mid - d <= hi && merged[mid - d - 1].sep.key != merged[mid - d].sep.key)
			return mid - d;
		if (mid + d >= lo && mid + d <= hi && merged[mid + d - 1].sep.key != merged[mid + d].sep.key)
			return mid + d;
	}
	return mid;
}

/*
 * Apply a sorted batch of items at one level: leaf entries (child = 0) or
 * separators with their child.  del = 1 removes leaf entries instead.
 * *changed counts items inserted or removed.
 */
static int
level_apply(dm_tree *t, int level, const dm_inner_ent *items, int n, int del, int *changed)
{
	int			cap = level == 0 ? t->leaf_cap : t->inner_cap;
	size_t		esz = level == 0 ? sizeof(dm_entry) : sizeof(dm_inner_ent);
	uint8_t    *buf = aligned_alloc(8, t->node_size);
	uint8_t    *rbuf = aligned_alloc(8, t->node_size);
	dm_inner_ent *merged = malloc(sizeof(dm_inner_ent) * (size_t) cap * 2);
	int			rc = DM_OK;
	int			i = 0;

	if (!buf || !rbuf || !merged)
	{
		rc = dm_tree_fail(t, DM_ERR_NOMEM, "out of memory");
		goto out;
	}
	while (i < n)
	{
		dm_wlock	wl;
		dm_gaddr	addr;
		dm_node_hdr *h = NODE_HDR(buf);
		int			j = i, m = 0, added = 0, k = 0;
		int			count;

		if ((rc = lock_covering(t, level, items[i].sep, &wl, buf)) != DM_OK)
			goto out;
		addr = wl.addr;
		count = h->count;
		/* the items this node covers, at most cap per round so one split suffices */
		while (j < n && j - i < cap && dm_node_covers(buf, items[j].sep))
			j++;

		if (del)
		{
			dm_entry   *ents = LEAF_ENTS(buf);
			int			removed = 0;

			for (int x = i; x < j; x++)
			{
				int			p = dm_leaf_lower_bound(buf, items[x].sep);

				if (p < h->count && dm_entry_cmp(ents[p], items[x].sep) == 0)
				{
					memmove(&ents[p], &ents[p + 1], (size_t) (h->count - p - 1) * sizeof(dm_entry));
					h->count--;
					removed++;
				}
			}
			rc = dm_node_wunlock(t, &wl, buf, removed > 0, 0, NULL, NULL);
			if (rc == DM_TREE_STALE)
				continue;		/* fenced off: nothing written, redo from a fresh copy */
			if (rc != DM_OK)
				goto out;
			if (removed > 0 && t->exec_active)
				dm_tree_exec_note_changed(t, addr);
			if (changed)
				*changed += removed;
			i = j;
			continue;
		}

		/* merge the node's entries with items[i..j), dropping duplicates */
		for (int x = i; k < count || x < j;)
		{
			dm_inner_ent cur;

			if (level == 0 && k < count)
				cur.sep = LEAF_ENTS(buf)[k], cur.child = 0;
			else if (k < count)
				cur = INNER_ENTS(buf)[k];
			if (x < j && (k >= count || dm_entry_cmp(items[x].sep, cur.sep) < 0))
			{
				merged[m++] = items[x++];
				added++;
				continue;
			}
			if (x < j && dm_entry_cmp(items[x].sep, cur.sep) == 0)
				x++;			/* already present: inserting it again changes nothing */
			merged[m++] = cur;
			k++;
		}
		if (added == 0)
		{
			if ((rc = dm_node_wunlock(t, &wl, buf, 0, 0, NULL, NULL)) != DM_OK)
				goto out;
			i = j;
			continue;
		}
		if (m <= cap)
		{
			for (int x = 0; x < m; x++)
			{
				if (level == 0)
					LEAF_ENTS(buf)[x] = merged[x].sep;
				else
					INNER_ENTS(buf)[x] = merged[x];
			}
			h->count = (uint16_t) m;
			rc = dm_node_wunlock(t, &wl, buf, 1, 0, NULL, NULL);
			if (rc == DM_TREE_STALE)
				continue;
			if (rc != DM_OK)
				goto out;
			if (t->exec_active)
				dm_tree_exec_note_changed(t, addr);
			if (changed)
				*changed += added;
			i = j;
			continue;
		}

		/* split: the upper half goes to a new right node */
		if (t->exec_active)
		{
			/* a structural change: the executor leaves it to the client */
			dm_node_wunlock(t, &wl, buf, 0, 0, NULL, NULL);
			rc = dm_tree_fail(t, DM_ERR_FALLBACK, "the leaf must be split");
			goto out;
		}
		{
			int			half = split_point(merged, m, level, cap);
			int			was_root = dm_entry_cmp(h->low, DM_ENTRY_MIN) == 0 &&
				dm_entry_cmp(h->high, DM_ENTRY_INF) == 0;
			dm_node_hdr *rh = NODE_HDR(rbuf);
			dm_gaddr	raddr;
			dm_inner_ent up;
			uint16_t	mn = dm_tree_place(t, level, dm_gaddr_node(addr));
			uint64_t	rver = 0;

			/*
			 * A reused node (dm_tree_reclaim.c) only where it is written
			 * after this node's guard, in one batch: on the same memnode.
			 */
			if (mn == dm_gaddr_node(addr))
				rc = dm_node_alloc_split(t, mn, &raddr, &rver);
			else
				rc = dm_node_alloc(t, mn, &raddr);
			if (rc != DM_OK)
			{
				dm_node_wunlock(t, &wl, buf, 0, 0, NULL, NULL);
				goto out;
			}
			dm_node_init(rbuf, t->node_size, level, t->info.tree_id, merged[half].sep, h->high);
			/* versions at an address only grow: a stale write fenced on an old one never lands */
			NODE_HDR(rbuf)->version = rver;
			rh->right = h->right;
			rh->left = addr;
			for (int x = half; x < m; x++)
			{
				if (level == 0)
					LEAF_ENTS(rbuf)[x - half] = merged[x].sep;
				else
					INNER_ENTS(rbuf)[x - half] = merged[x];
			}
			rh->count = (uint16_t) (m - half);
			for (int x = 0; x < half; x++)
			{
				if (level == 0)
					LEAF_ENTS(buf)[x] = merged[x].sep;
				else
					INNER_ENTS(buf)[x] = merged[x];
			}
			h->count = (uint16_t) half;
			h->high = rh->low;
			h->right = raddr;
			(void) esz;
			rc = dm_node_wunlock(t, &wl, buf, 1, 1, &raddr, (uint8_t *const *) &rbuf);
			if (rc == DM_TREE_STALE)
			{
				/* the new node was not written (same memnode) or stays unreachable */
				if (rver != 0)
				{
					if ((rc = dm_tree_reuse_return(t, raddr)) != DM_OK)
						goto out;
				}
				else
					t->ctr.nodes_unlinked++;
				continue;
			}
			if (rc != DM_OK)
				goto out;
			if (changed)
				*changed += added;
			t->ctr.splits++;
			up.sep = rh->low;
			up.child = raddr;

			if (was_root)
			{
				dm_gaddr	before = t->root;

				/*
				 * A new root above the old one and its new sibling.  If we
				 * fail here, the next writer to meet the old root finishes
				 * the job (grow_root).
				 */
				if ((rc = grow_root(t, addr, buf)) != DM_OK)
					goto out;
				if (t->root != 0 && t->root != before)
				{
					i = j;
					continue;
				}
				/* somebody else grew it, maybe without our new node: add it the usual way */
			}
			if ((rc = level_apply(t, level + 1, &up, 1, 0, NULL)) != DM_OK)
				goto out;
		}
		i = j;
	}
out:
	free(buf);
	free(rbuf);
	free(merged);
	return rc;
}

static int
apply_entries(dm_tree *t, const dm_entry *e, int n, int del, int *changed)
{
	dm_inner_ent *items;
	int			rc;

	if (changed)
		*changed = 0;
	if ((rc = dm_tree_writable(t, del ? "delete entries" : "insert entries")) != DM_OK)
		return rc;
	if (n < 0)
		return DM_ERR_INVALID;
	if (n == 0)
		return DM_OK;
	for (int i = 0; i < n; i++)
		if (!entry_valid(e[i]) || (i > 0 && dm_entry_cmp(e[i - 1], e[i]) >= 0))
			return dm_tree_fail(t, DM_ERR_INVALID, "entries must be valid and strictly ascending (at %d)", i);
	for (int i = 0; i < n && !t->write_any; i++)
		if (!dm_tree_owns_entry(t, e[i]))
			return dm_tree_fail(t, DM_ERR_NOTOWNER,
								"key %llu is outside the key ranges instance %u owns in this tree",
								(unsigned long long) e[i].key, t->instance);
	if ((items = malloc(sizeof(*items) * (size_t) n)) == NULL)
		return DM_ERR_NOMEM;
	for (int i = 0; i < n; i++)
	{
		items[i].sep = e[i];
		items[i].child = 0;
	}
	rc = level_apply(t, 0, items, n, del, changed);
	free(items);
	return rc;
}

int
dm_tree_insert_sorted(dm_tree *t, const dm_entry *e, int n, int *changed)
{
	if (dm_offload_wanted(t))
		return dm_offload_sorted(t, e, n, 0, changed);
	return apply_entries(t, e, n, 0, changed);
}

int
dm_tree_delete_sorted(dm_tree *t, const dm_entry *e, int n, int *changed)
{
	if (dm_offload_wanted(t))
		return dm_offload_sorted(t, e, n, 1, changed);
	return apply_entries(t, e, n, 1, changed);
}

int
dm_tree_insert(dm_tree *t, dm_entry e, int *existed)
{
	int			changed = 0;
	int			rc;

	if (dm_offload_wanted(t))
		return dm_offload_write(t, e, 0, existed);
	rc = apply_entries(t, &e, 1, 0, &changed);

	if (rc == DM_OK && existed)
		*existed = changed == 0;
	return rc;
}

int
dm_tree_delete(dm_tree *t, dm_entry e, int *existed)
{
	int			changed = 0;
	int			rc;

	if (dm_offload_wanted(t))
		return dm_offload_write(t, e, 1, existed);
	rc = apply_entries(t, &e, 1, 1, &changed);

	if (rc == DM_OK && existed)
		*existed = changed != 0;
	return rc;
}

int
dm_tree_contains(dm_tree *t, dm_entry e, int *found)
{
	uint8_t    *buf = aligned_alloc(8, t->node_size);
	dm_gaddr	addr;
	int			rc;

	*found = 0;
	if (buf == NULL)
		return DM_ERR_NOMEM;
	rc = dm_tree_descend(t, e, 0, &addr, buf);
	if (rc == DM_OK)
	{
		int			p = dm_leaf_lower_bound(buf, e);

		*found = p < NODE_HDR(buf)->count && dm_entry_cmp(LEAF_ENTS(buf)[p], e) == 0;
	}
	free(buf);
	return rc;
}
