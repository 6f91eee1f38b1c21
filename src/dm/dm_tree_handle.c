/*
 * dm_tree_handle.c — tree handles: creating a tree (its catalog entry, meta
 * words, writer word and empty root leaf) or opening an existing one from
 * its catalog entry, closing a handle, freeing a tree everywhere
 * (dm_tree_destroy), and what a handle tells about its tree.  Operations on
 * the tree are in dm_tree.c (writes), dm_tree_descend.c, dm_tree_scan.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dm_hop.h"
#include "dm_tree_int.h"

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
	(void) dm_tree_set_hotspot(t, DM_TREE_HOTSPOT_DEFAULT);	/* used by hopscotch lookups only */
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
	if (o.leaf_format == DM_LEAF_HOPSCOTCH && o.neighborhood == 0)
		o.neighborhood = DM_HOP_H_DEFAULT;
	if ((o.leaf_format != DM_LEAF_SORTED && o.leaf_format != DM_LEAF_HOPSCOTCH) ||
		(o.leaf_format == DM_LEAF_SORTED && o.neighborhood != 0) ||
		(o.leaf_format == DM_LEAF_HOPSCOTCH &&
		 (o.neighborhood < DM_HOP_H_MIN || o.neighborhood > DM_HOP_H_MAX ||
		  (uint32_t) o.neighborhood > (uint32_t) dm_hop_nb(o.node_size))))
		return DM_ERR_INVALID;
	/* hopscotch leaves hash the 64-bit key: FIXED8 only (§5.2) */
	if ((o.key_format != DM_KEY_FIXED8 && o.key_format != DM_KEY_VAR) ||
		(o.key_format == DM_KEY_VAR && o.leaf_format != DM_LEAF_SORTED))
		return DM_ERR_INVALID;
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
	t->leaf_hop = o.leaf_format == DM_LEAF_HOPSCOTCH ? o.neighborhood : 0;
	if (t->leaf_hop)
		(void) dm_hop_split_at(t->node_size, t->leaf_hop);	/* computed now, not under a leaf's lock */
	t->key_var = o.key_format == DM_KEY_VAR;
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
	meta[1] = (DM_TREE_META_MAGIC << 32) |
		((uint64_t) (t->leaf_hop ? DM_TREE_FORMAT_HOP : t->key_var ? DM_TREE_FORMAT_VAR : DM_TREE_FORMAT) << 16) |
		((uint64_t) __builtin_ctz(o.node_size) << 8) | (uint64_t) o.placement_level;
	/* low half: number of memnodes; high half: the lock takeover timeout */
	meta[2] = (uint64_t) o.nmemnodes | ((uint64_t) t->lock_timeout_ms << 32);
	for (int i = 0; i < o.nmemnodes; i++)
		meta[3 + i / 4] |= (uint64_t) o.memnodes[i] << (16 * (i % 4));
	/* words 8-10: the writer, its high-water mark and the fence words (dm_tree_writer.c) */
	/* word 14: the leaf format, which every client and verify go by */
	if (t->leaf_hop)
		meta[DM_META_LEAF] = (uint64_t) DM_LEAF_HOPSCOTCH | ((uint64_t) t->leaf_hop << 8);
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
	(void) dm_tree_node_init(t, buf, 0, DM_ENTRY_MIN, DM_ENTRY_INF);	/* fences without suffixes: fits */
	if (t->leaf_hop)
		dm_hop_init(buf, t->leaf_hop);
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
	uint32_t	format;
	uint64_t	leaf;

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
	format = (uint32_t) (words[1] >> 16) & 0xFFFF;
	leaf = words[DM_META_LEAF];
	if ((words[1] >> 32) != DM_TREE_META_MAGIC ||
		((format == DM_TREE_FORMAT || format == DM_TREE_FORMAT_VAR) && leaf != 0) ||
		(format == DM_TREE_FORMAT_HOP &&
		 ((leaf & 0xFF) != DM_LEAF_HOPSCOTCH || (leaf >> 16) != 0 || ((leaf >> 8) & 0xFF) < DM_HOP_H_MIN ||
		  ((leaf >> 8) & 0xFF) > DM_HOP_H_MAX)) ||
		(format != DM_TREE_FORMAT && format != DM_TREE_FORMAT_HOP && format != DM_TREE_FORMAT_VAR) ||
		size_log2 < 8 || size_log2 > 12 || (words[2] & 0xFFFFFFFF) == 0 ||
		(words[2] & 0xFFFFFFFF) > DM_TREE_MAX_MEMNODES || words[0] == 0)
	{
		free(t);
		return DM_ERR_CORRUPT;
	}
	set_geometry(t, 1u << size_log2);
	t->leaf_hop = format == DM_TREE_FORMAT_HOP ? (int) ((leaf >> 8) & 0xFF) : 0;
	t->key_var = format == DM_TREE_FORMAT_VAR;
	if (t->leaf_hop > t->leaf_cap)
	{
		free(t);
		return DM_ERR_CORRUPT;
	}
	if (t->leaf_hop)
		(void) dm_hop_split_at(t->node_size, t->leaf_hop);	/* computed now, not under a leaf's lock */
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
		dm_hot_free(t);
		dm_tree_wlog_free(t);
		dm_tree_offload_release(t);
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
	{
		dm_cache_invalidate_tree(t->cache, t->ctag);
		dm_cache_drains_forget(t->cache, t->info.tree_id);	/* nobody will drain them */
	}
	free(t->hints);
	dm_hot_free(t);
	dm_tree_offload_release(t);
	free(t);
	return DM_OK;
}

uint32_t
dm_tree_node_size(const dm_tree *t)
{
	return t->node_size;
}

int
dm_tree_key_format(const dm_tree *t)
{
	return t->key_var ? DM_KEY_VAR : DM_KEY_FIXED8;
}

int
dm_tree_leaf_format(const dm_tree *t, int *neighborhood)
{
	if (neighborhood)
		*neighborhood = t->leaf_hop;
	return t->leaf_hop ? DM_LEAF_HOPSCOTCH : DM_LEAF_SORTED;
}

/* dm_tree.h states the limits for users that do not see dm_hop.h: they must be the same */
_Static_assert(DM_TREE_HOP_H_MIN == DM_HOP_H_MIN && DM_TREE_HOP_H_MAX == DM_HOP_H_MAX &&
			   DM_TREE_HOP_H_DEFAULT == DM_HOP_H_DEFAULT, "hopscotch limits differ");

int
dm_tree_hop_h_max(uint32_t node_size)
{
	if (!valid_node_size(node_size))
		return 0;
	return dm_hop_nb(node_size) < DM_HOP_H_MAX ? dm_hop_nb(node_size) : DM_HOP_H_MAX;
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
