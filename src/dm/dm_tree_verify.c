/*
 * dm_tree_verify.c — walks the whole tree level by level, top down, and
 * checks every invariant (dm_tree_verify) or gathers its shape
 * (dm_tree_stats_get).  One walker serves both.  Also dm_tree_verify_cache:
 * every frame a handle's tree has in the node cache against remote memory.
 *
 * A level is read in the order its parents list it (64 nodes per round
 * trip).  Between two consecutive children the sibling chain may contain a
 * node no parent lists yet — the right half of a split whose parent update
 * has not happened (a process died in between): that is legal in a B-link
 * tree and is followed and counted, not reported.  So is a dead empty leaf
 * whose left neighbour has not yet taken its range (a reclaimer stopped
 * mid-unlink, dm_tree_reclaim.c).  Verify also checks the tree's reuse
 * list: dead empty leaves the walk did not reach, each listed once.
 * Leaves must have the tree's format; a hopscotch leaf's table is checked
 * (dm_hop_check), then its entries like a sorted leaf's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_hop.h"
#include "dm_tree_int.h"

typedef struct walk
{
	dm_tree    *t;
	dm_tree_stats *st;
	char	   *msg;
	size_t		msglen;
	int			failed;
	uint64_t	half_splits;
	dm_gaddr   *seen;			/* every node the walk reached (verify: for the reuse list) */
	size_t		nseen,
				capseen;
} walk;

static int
note_seen(walk *w, dm_gaddr addr)
{
	if (w->nseen == w->capseen)
	{
		dm_gaddr   *n = realloc(w->seen, (w->capseen ? w->capseen * 2 : 1024) * sizeof(dm_gaddr));

		if (n == NULL)
			return DM_ERR_NOMEM;
		w->seen = n;
		w->capseen = w->capseen ? w->capseen * 2 : 1024;
	}
	w->seen[w->nseen++] = addr;
	return DM_OK;
}

static int	problem(walk *w, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static int
problem(walk *w, const char *fmt,...)
{
	va_list		ap;

	if (!w->failed && w->msg && w->msglen)
	{
		va_start(ap, fmt);
		vsnprintf(w->msg, w->msglen, fmt, ap);
		va_end(ap);
	}
	w->failed = 1;
	return DM_ERR_CORRUPT;
}

/* The node's own invariants: ordering inside its fences, level, separators. */
static int
check_node(walk *w, dm_gaddr addr, const uint8_t *buf, int level)
{
	const dm_node_hdr *h = NODE_HDR(buf);
	int			n = h->count;
	_Alignas(8) uint8_t sorted[DM_NODE_MAX];

	if (h->level == 0 && level == 0 && (dm_hop_is(buf) ? h->hop_h != w->t->leaf_hop : w->t->leaf_hop != 0))
		return problem(w, "leaf 0x%llx is a %s leaf (neighbourhood %d) in a tree of %s leaves (neighbourhood %d)",
						(unsigned long long) addr, dm_hop_is(buf) ? "hopscotch" : "sorted", h->hop_h,
						w->t->leaf_hop ? "hopscotch" : "sorted", w->t->leaf_hop);
	if (h->level == 0 && level == 0 && dm_hop_is(buf))
	{
		char		why[200];

		if (dm_hop_check(buf, why, sizeof(why)) != 0)
			return problem(w, "hopscotch leaf 0x%llx: %s", (unsigned long long) addr, why);
		if (w->st)
			w->st->hop_overflow_homes += (uint64_t) dm_hop_overflowed_homes(buf);
		/* then its entries as the sorted leaf they make */
		memcpy(sorted, buf, w->t->node_size);
		dm_hop_sorted_view(sorted);
		buf = sorted;
		h = NODE_HDR(buf);
	}
	if (h->level != level)
		return problem(w, "node 0x%llx is at level %d, expected %d", (unsigned long long) addr, h->level, level);
	if (dm_node_is_var(buf) != w->t->key_var)
		return problem(w, "node 0x%llx is a %s node in a %s tree", (unsigned long long) addr,
					   dm_node_is_var(buf) ? "VAR" : "FIXED8", w->t->key_var ? "VAR" : "FIXED8");
	if (h->flags & DM_NODE_DEAD)
		return problem(w, "node 0x%llx is marked dead but still linked", (unsigned long long) addr);
	if (dm_entry_cmp(dm_node_low(buf), dm_node_high(buf)) >= 0)
		return problem(w, "node 0x%llx has low fence >= high fence", (unsigned long long) addr);
	if (level > 0 && n == 0)
		return problem(w, "inner node 0x%llx has no children", (unsigned long long) addr);
	for (int i = 0; i < n; i++)
	{
		dm_entry	e = level == 0 ? dm_node_entry(buf, i) : dm_node_sep(buf, i);

		if (i > 0)
		{
			dm_entry	p = level == 0 ? dm_node_entry(buf, i - 1) : dm_node_sep(buf, i - 1);

			if (dm_entry_cmp(p, e) >= 0)
				return problem(w, "node 0x%llx: entries %d and %d out of order", (unsigned long long) addr, i - 1, i);
			/*
			 * A VAR tree's keys are prefix-free (DESIGN.md §5.2): with the
			 * same prefix word, the first key's suffix may not be a proper
			 * prefix of the next one's (whose first 8 bytes then hold all
			 * of the first key).  Keys of at most 8 bytes are zero-padded:
			 * whether one is a prefix of another cannot be seen here.
			 */
			if (level == 0 && p.key == e.key && p.sfx_len < e.sfx_len &&
				(p.sfx_len == 0 || memcmp(p.sfx, e.sfx, p.sfx_len) == 0))
				return problem(w, "node 0x%llx: the key of entry %d is a proper prefix of entry %d's",
							   (unsigned long long) addr, i - 1, i);
		}
		if (!dm_node_covers(buf, e) || dm_entry_cmp(e, DM_ENTRY_INF) == 0)
			return problem(w, "node 0x%llx: entry %d outside its fences", (unsigned long long) addr, i);
		if (level == 0 && (e.tid & DM_TID_NULL) && e.key != UINT64_MAX)
			return problem(w, "node 0x%llx: entry %d has a malformed NULL key", (unsigned long long) addr, i);
	}
	if (level > 0 && dm_entry_cmp(dm_node_sep(buf, 0), dm_node_low(buf)) != 0)
		return problem(w, "inner node 0x%llx: first separator is not its low fence", (unsigned long long) addr);
	return DM_OK;
}

/*
 * Count the sorted leaf in buf's low fence as loose when the previous leaf
 * of the chain had entries and the fence is not the one a split between
 * its last entry and buf's first would make; then remember buf's last.
 */
static void
note_leaf_fence(walk *w, const uint8_t *buf, dm_owned_entry *prev_last, int *have)
{
	int			n = NODE_HDR(buf)->count;

	if (*have && n > 0 &&
		dm_entry_cmp(dm_node_low(buf), dm_tree_split_bound(w->t, prev_last->e, dm_node_entry(buf, 0))) != 0)
		w->st->loose_leaf_fences++;
	*have = n > 0;
	if (n > 0)
		dm_entry_own(prev_last, dm_node_entry(buf, n - 1));
}

static int
memnode_index(const dm_tree *t, uint16_t id)
{
	for (int i = 0; i < t->nmemnodes; i++)
		if (t->memnodes[i] == id)
			return i;
	return -1;
}

static int
run_walk(walk *w)
{
	dm_tree    *t = w->t;
	uint32_t	ns = t->node_size;
	dm_gaddr	root;
	uint8_t    *rootbuf = aligned_alloc(8, ns);
	uint8_t    *bufs = NULL;
	uint8_t    *extra = aligned_alloc(8, ns);
	/* this level's nodes in order, the memnode their level-M subtree is on */
	dm_gaddr   *cur = NULL, *next = NULL;
	uint16_t   *cur_home = NULL, *next_home = NULL;
	dm_entry   *cur_sep = NULL, *next_sep = NULL;	/* the separator each parent lists */
	/*
	 * Their suffixes (VAR trees), copied: the parents' images are read over
	 * (a followed half-split) and freed before their children are checked.
	 * next_sep[k].sfx is set from next_soff[k] once the level is done (the
	 * arena moves as it grows).
	 */
	uint8_t    *cur_arena = NULL, *next_arena = NULL;
	size_t	   *next_soff = NULL;
	size_t		next_alen = 0, next_acap = 0;
	dm_owned_entry *expect_low = malloc(sizeof(dm_owned_entry));
	/* the last entry of the previous leaf when it had one (loose_leaf_fences) */
	dm_owned_entry *prev_last = malloc(sizeof(dm_owned_entry));
	int			have_prev_last = 0;
	size_t		ncur = 0, nnext = 0, capnext = 0;
	int			rc, height;

	if (!rootbuf || !extra || !expect_low || !prev_last)
	{
		free(rootbuf);
		free(extra);
		free(expect_low);
		free(prev_last);
		return DM_ERR_NOMEM;
	}
	if ((rc = dm_tree_read_root(t, &root)) != DM_OK || (rc = dm_node_read(t, root, rootbuf)) != DM_OK)
		goto out;
	height = NODE_HDR(rootbuf)->level + 1;
	if (w->st)
		w->st->height = height;
	/*
	 * The root spans the key space -- or starts it, with right siblings at
	 * its level that span the rest: a root split whose new root was not
	 * installed yet (its writer stopped between the two), legal in a
	 * B-link tree, which readers cross by the right links and the next
	 * writer finishes (dm_tree_descend.c).  The walk below follows that
	 * chain like any half-done split and checks it ends at +inf.
	 */
	if (dm_entry_cmp(dm_node_low(rootbuf), DM_ENTRY_MIN) != 0 ||
		(dm_entry_cmp(dm_node_high(rootbuf), DM_ENTRY_INF) == 0) != (NODE_HDR(rootbuf)->right == 0))
	{
		rc = problem(w, "root 0x%llx does not span the whole key space", (unsigned long long) root);
		goto out;
	}
	cur = malloc(sizeof(*cur));
	cur_home = malloc(sizeof(*cur_home));
	cur_sep = malloc(sizeof(*cur_sep));
	if (!cur || !cur_home || !cur_sep)
	{
		rc = DM_ERR_NOMEM;
		goto out;
	}
	cur[0] = root;
	cur_home[0] = dm_gaddr_node(root);
	cur_sep[0] = DM_ENTRY_MIN;
	ncur = 1;

	for (int level = height - 1; level >= 0; level--)
	{
		dm_gaddr	prev_addr = 0;

		expect_low->e = DM_ENTRY_MIN;
		next_alen = 0;

		free(bufs);
		if ((bufs = aligned_alloc(8, ncur * ns)) == NULL)
		{
			rc = DM_ERR_NOMEM;
			goto out;
		}
		if ((rc = dm_node_read_many(t, cur, (int) ncur, bufs)) != DM_OK)
			goto out;
		nnext = 0;
		for (size_t i = 0; i < ncur; i++)
		{
			uint8_t    *buf = bufs + i * ns;
			dm_gaddr	addr = cur[i];
			uint16_t	home = cur_home[i];

			/* a listed node starts exactly at the separator its parent has for it */
			if (dm_entry_cmp(dm_node_low(buf), cur_sep[i]) != 0)
			{
				rc = problem(w, "node 0x%llx (level %d): low fence differs from its parent's separator",
							 (unsigned long long) addr, level);
				goto out;
			}

			/* the chain from the previous node may pass unlisted half-split nodes */
			for (int followed = 0;; followed = 1)
			{
				const dm_node_hdr *h = NODE_HDR(buf);
				int			mi = memnode_index(t, dm_gaddr_node(addr));
				/*
				 * An unlisted dead empty leaf: an unlink whose reclaimer
				 * stopped before its left neighbour took its range
				 * (dm_tree_reclaim.c); the next writer there finishes it.
				 */
				int			half_dead = followed && level == 0 && h->level == 0 &&
					(h->flags & DM_NODE_DEAD) && h->count == 0 &&
					dm_entry_cmp(dm_node_low(buf), expect_low->e) == 0 &&
					dm_entry_cmp(dm_node_low(buf), dm_node_high(buf)) < 0;

				if ((rc = note_seen(w, addr)) != DM_OK)
					goto out;
				if (!half_dead && (rc = check_node(w, addr, buf, level)) != DM_OK)
					goto out;
				if (half_dead && w->st)
					w->st->half_dead++;
				if (mi < 0)
				{
					rc = problem(w, "node 0x%llx is on memnode %u, not one of the tree's", (unsigned long long) addr,
								 dm_gaddr_node(addr));
					goto out;
				}
				if (level <= t->placement_level && dm_gaddr_node(addr) != home)
				{
					rc = problem(w, "node 0x%llx (level %d) is on memnode %u but its level-%d subtree is on memnode %u",
								 (unsigned long long) addr, level, dm_gaddr_node(addr), t->placement_level, home);
					goto out;
				}
				if (dm_entry_cmp(dm_node_low(buf), expect_low->e) != 0)
				{
					rc = problem(w, "node 0x%llx: low fence does not equal the previous node's high fence",
								 (unsigned long long) addr);
					goto out;
				}
				if (prev_addr != 0 && h->left == 0)
				{
					rc = problem(w, "node 0x%llx has no left sibling pointer", (unsigned long long) addr);
					goto out;
				}
				if (w->st && !half_dead)
				{
					w->st->nodes[level < 16 ? level : 15]++;
					w->st->nodes_by_memnode[mi]++;
					w->st->used_bytes += dm_node_used_bytes(buf);
					if (level == 0)
						w->st->leaf_used_bytes += dm_node_used_bytes(buf);
					if (level == 0)
						w->st->entries += h->count;
					else
						w->st->inner_entries += h->count;
					for (int c = 0; level > 0 && c < h->count; c++)
						w->st->sep_sfx_bytes += dm_node_sep(buf, c).sfx_len;
					if (level == 0 && !t->leaf_hop)
						note_leaf_fence(w, buf, prev_last, &have_prev_last);
				}
				/* queue the children, with the memnode of their level-M subtree */
				for (int c = 0; level > 0 && c < h->count; c++)
				{
					if (nnext == capnext)
					{
						capnext = capnext ? capnext * 2 : 1024;
						next = realloc(next, capnext * sizeof(*next));
						next_home = realloc(next_home, capnext * sizeof(*next_home));
						next_sep = realloc(next_sep, capnext * sizeof(*next_sep));
						next_soff = realloc(next_soff, capnext * sizeof(*next_soff));
						if (!next || !next_home || !next_sep || !next_soff)
						{
							rc = DM_ERR_NOMEM;
							goto out;
						}
					}
					next[nnext] = dm_node_child(buf, c);
					next_sep[nnext] = dm_node_sep(buf, c);
					next_soff[nnext] = next_alen;
					if (next_sep[nnext].sfx_len != 0)
					{
						if (next_alen + next_sep[nnext].sfx_len > next_acap)
						{
							next_acap = (next_alen + next_sep[nnext].sfx_len) * 2;
							if ((next_arena = realloc(next_arena, next_acap)) == NULL)
							{
								rc = DM_ERR_NOMEM;
								goto out;
							}
						}
						memcpy(next_arena + next_alen, next_sep[nnext].sfx, next_sep[nnext].sfx_len);
						next_alen += next_sep[nnext].sfx_len;
					}
					next_home[nnext] = level > t->placement_level ? dm_gaddr_node(next[nnext]) : home;
					nnext++;
				}
				/* owned: buf may be read over by the next node of the chain */
				dm_entry_own(expect_low, dm_node_high(buf));
				prev_addr = addr;
				/* does the chain reach the next listed node directly? */
				if (i + 1 < ncur ? h->right == cur[i + 1] : h->right == 0)
					break;
				if (h->right == 0)
				{
					rc = problem(w, "level %d: sibling chain ends at 0x%llx before the listed nodes do",
								 level, (unsigned long long) addr);
					goto out;
				}
				/* an unlisted node (half-split): follow it */
				w->half_splits++;
				addr = h->right;
				if ((rc = dm_node_read(t, addr, extra)) != DM_OK)
					goto out;
				memcpy(buf, extra, ns);
			}
		}
		if (dm_entry_cmp(expect_low->e, DM_ENTRY_INF) != 0)
		{
			rc = problem(w, "level %d does not end with an infinite high fence", level);
			goto out;
		}
		/* the separators' suffixes now point into the arena, which the next level keeps */
		for (size_t k = 0; k < nnext; k++)
			if (next_sep[k].sfx_len != 0)
				next_sep[k].sfx = next_arena + next_soff[k];
		free(cur_arena);
		cur_arena = next_arena;
		next_arena = NULL;
		next_acap = 0;
		/* children must sit exactly one level below; check_node does it next round */
		free(cur);
		free(cur_home);
		free(cur_sep);
		cur = next;
		cur_home = next_home;
		cur_sep = next_sep;
		ncur = nnext;
		next = NULL;
		next_home = NULL;
		next_sep = NULL;
		capnext = 0;
	}
	rc = DM_OK;
out:
	free(rootbuf);
	free(extra);
	free(bufs);
	free(cur);
	free(cur_home);
	free(cur_sep);
	free(next);
	free(next_home);
	free(next_sep);
	free(next_soff);
	free(cur_arena);
	free(next_arena);
	free(expect_low);
	free(prev_last);
	return rc;
}

static int
cmp_gaddr(const void *a, const void *b)
{
	dm_gaddr	x = *(const dm_gaddr *) a,
				y = *(const dm_gaddr *) b;

	return x < y ? -1 : x > y;
}

/*
 * The reuse list (dm_tree_reclaim.c): every node in it is a dead, empty
 * leaf of this tree that the walk did not reach, and none is in it twice.
 */
static int
check_free(walk *w)
{
	dm_tree    *t = w->t;
	dm_gaddr   *addrs = malloc(sizeof(dm_gaddr) * 8192);
	uint8_t    *buf = aligned_alloc(8, t->node_size);
	int			n,
				rc;

	if (buf == NULL || addrs == NULL)
	{
		free(buf);
		free(addrs);
		return DM_ERR_NOMEM;
	}
	if ((rc = dm_tree_reuse_list(t, addrs, 8192, &n)) != DM_OK)
		goto out;
	if (n > 8192)
	{
		rc = problem(w, "reuse list holds %d nodes, more than it has slots", n);
		goto out;
	}
	if (w->st)
		w->st->free_nodes = (uint64_t) n;
	qsort(w->seen, w->nseen, sizeof(dm_gaddr), cmp_gaddr);
	qsort(addrs, (size_t) n, sizeof(dm_gaddr), cmp_gaddr);
	for (int i = 0; i < n; i++)
	{
		const dm_node_hdr *h = NODE_HDR(buf);

		if (i > 0 && addrs[i] == addrs[i - 1])
		{
			rc = problem(w, "node 0x%llx is in the reuse list twice", (unsigned long long) addrs[i]);
			goto out;
		}
		if (bsearch(&addrs[i], w->seen, w->nseen, sizeof(dm_gaddr), cmp_gaddr) != NULL)
		{
			rc = problem(w, "node 0x%llx is in the reuse list but still in the tree", (unsigned long long) addrs[i]);
			goto out;
		}
		if ((rc = dm_node_read(t, addrs[i], buf)) != DM_OK)
			goto out;
		if (!(h->flags & DM_NODE_DEAD) || h->level != 0 || h->count != 0)
		{
			rc = problem(w, "node 0x%llx in the reuse list is not a dead empty leaf", (unsigned long long) addrs[i]);
			goto out;
		}
	}
out:
	free(buf);
	free(addrs);
	return rc;
}

int
dm_tree_verify(dm_tree *t, uint64_t *entries, char *msg, size_t msglen)
{
	dm_tree_stats st;
	walk		w = {t, &st, msg, msglen, 0, 0, NULL, 0, 0};
	int			rc;

	memset(&st, 0, sizeof(st));
	if (msg && msglen)
		msg[0] = '\0';
	rc = run_walk(&w);
	if (rc == DM_OK)
		rc = check_free(&w);
	free(w.seen);
	if (rc == DM_ERR_CORRUPT && !w.failed)
		problem(&w, "%s", t->err);
	if (rc == DM_OK && entries)
		*entries = st.entries;
	return rc;
}

int
dm_tree_stats_get(dm_tree *t, dm_tree_stats *st)
{
	walk		w = {t, st, t->err, sizeof(t->err), 0, 0, NULL, 0, 0};
	uint64_t	nodes = 0;
	int			rc,
				nfree;

	memset(st, 0, sizeof(*st));
	rc = run_walk(&w);
	free(w.seen);
	if (rc != DM_OK)
		return rc;
	if ((rc = dm_tree_reuse_list(t, NULL, 0, &nfree)) != DM_OK)
		return rc;
	st->free_nodes = (uint64_t) nfree;
	for (int l = 0; l < 16; l++)
		nodes += st->nodes[l];
	st->remote_bytes = nodes * t->node_size;
	/*
	 * A VAR leaf holds as many entries as their bytes allow, not leaf_cap
	 * (the count of 8-byte keys): its fill is the bytes it uses past the
	 * header over the bytes it has there (fence suffixes count as used).
	 */
	if (t->key_var)
		st->leaf_fill = st->nodes[0] ?
			(double) (st->leaf_used_bytes - st->nodes[0] * DM_VAR_HEADER) /
			((double) st->nodes[0] * (t->node_size - DM_VAR_HEADER)) : 0;
	else
		st->leaf_fill = st->nodes[0] ? (double) st->entries / ((double) st->nodes[0] * t->leaf_cap) : 0;
	return DM_OK;
}

/*
 * Every cached frame of the tree against remote memory: valid, and what its
 * ownership class allows (dm_tree_node_class): owned nodes identical, shared
 * inner nodes never newer, no leaf of another instance cached.
 */
int
dm_tree_verify_cache(dm_tree *t, uint64_t *checked, char *msg, size_t msglen)
{
	uint8_t    *mine,
			   *remote;
	uint64_t	n = 0;
	int			rc = DM_OK;
	dm_gaddr	addr;

	if (checked)
		*checked = 0;
	if (t->cache == NULL)
		return DM_OK;
	mine = aligned_alloc(8, t->node_size);
	remote = aligned_alloc(8, t->node_size);
	if (!mine || !remote)
	{
		free(mine);
		free(remote);
		return DM_ERR_NOMEM;
	}
	for (uint32_t f = dm_cache_next_frame(t->cache, t->ctag, 0, &addr); f != DM_FRAME_NONE;
		 f = dm_cache_next_frame(t->cache, t->ctag, f + 1, &addr))
	{
		const dm_node_hdr *h = NODE_HDR(mine);
		int			cls;

		/* under the frame's lock no write-through of it is half done */
		if (dm_cache_lock(t->cache, f, t->ctag, addr, mine, t->node_size) != 0)
			continue;			/* evicted meanwhile */
		rc = dm_node_read(t, addr, remote);
		dm_cache_unlock(t->cache, f, NULL, 0);
		if (rc != DM_OK)
			break;
		n++;
		cls = dm_tree_node_class(t, h);
		if (!dm_node_valid(mine, t->node_size, t->info.tree_id))
		{
			snprintf(msg, msglen, "cached node 0x%llx (frame %u) does not validate",
					 (unsigned long long) addr, f);
			rc = DM_ERR_CORRUPT;
			break;
		}
		if (cls == DM_OWN_OWNED && t->replica)
		{
			/* a replica's own leaf: invalidated after the primary's write, so never newer than remote */
			if (h->version > NODE_HDR(remote)->version)
			{
				snprintf(msg, msglen, "cached leaf 0x%llx (frame %u) of a replica is newer than remote memory",
						 (unsigned long long) addr, f);
				rc = DM_ERR_CORRUPT;
				break;
			}
		}
		else if (cls == DM_OWN_OWNED)
		{
			/* identical from the version on (the lock word is not part of the node's data) */
			if (memcmp(mine + 8, remote + 8, dm_node_used_bytes(remote) - 8) != 0 ||
				dm_node_used_bytes(mine) != dm_node_used_bytes(remote))
			{
				snprintf(msg, msglen, "cached owned node 0x%llx (frame %u, level %d) differs from remote memory: "
						 "version %llu vs %llu, count %u vs %u",
						 (unsigned long long) addr, f, h->level,
						 (unsigned long long) h->version, (unsigned long long) NODE_HDR(remote)->version,
						 h->count, NODE_HDR(remote)->count);
				rc = DM_ERR_CORRUPT;
				break;
			}
		}
		else if (cls == DM_OWN_FOREIGN || h->level == 0 || h->version > NODE_HDR(remote)->version)
		{
			snprintf(msg, msglen, "cached node 0x%llx (frame %u, level %d) is %s",
					 (unsigned long long) addr, f, h->level,
					 cls == DM_OWN_FOREIGN ? "foreign (never cached)" :
					 h->level == 0 ? "a shared leaf (never cached)" : "newer than remote memory");
			rc = DM_ERR_CORRUPT;
			break;
		}
	}
	free(mine);
	free(remote);
	if (checked)
		*checked = n;
	return rc;
}
