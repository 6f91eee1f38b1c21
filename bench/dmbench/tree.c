/*
 * tree.c — the tree the cells run on, from the parent: connecting to every
 * memnode, creating and bulk-loading the tree with --entries keys, and at the
 * end of a transport (or cache cell) verifying it holds exactly one entry per
 * row and dropping it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dm_cache.h"
#include "dm_client.h"
#include "dm_offload.h"
#include "dm_tree.h"
#include "testutil.h"

#include "dmbench.h"

/* ---- setup and teardown of the tree (parent) ------------------------------------- */

static int
connect_all(dm_client **out, uint16_t *ids, char *err, size_t errsz)
{
	dm_client_opts opts;
	dm_client  *c;
	int			i,
				st;

	memset(&opts, 0, sizeof(opts));
	/* Setup and verify are not measured: whatever is fastest. */
	opts.backend = DM_BACKEND_AUTO;
	opts.name = "dmbench-setup";
	/* Verify walks the whole tree; give the memnode time on tcp. */
	opts.op_timeout_ms = 60000;
	c = dm_client_create(&opts);
	if (!c)
	{
		snprintf(err, errsz, "dm_client_create failed");
		return DM_ERR_NOMEM;
	}
	for (i = 0; i < nmemnode_addrs; i++)
	{
		st = dm_client_connect(c, memnode_addrs[i], &ids[i]);
		if (st != DM_OK)
		{
			snprintf(err, errsz, "connect %s: %s (%s)", memnode_addrs[i],
					 dm_strerror(st), dm_client_error(c));
			dm_client_destroy(c);
			return st;
		}
	}
	*out = c;
	return DM_OK;
}

static int
cmp_entry(const void *a, const void *b)
{
	return dm_entry_cmp(*(const dm_entry *) a, *(const dm_entry *) b);
}

/* LSD radix sort by key (keys are distinct), 16 bits per pass; falls back to qsort. */
static void
sort_entries(dm_entry *e, uint64_t n)
{
	dm_entry   *tmp = malloc(n * sizeof(dm_entry));
	size_t	   *cnt;
	int			pass;

	cnt = malloc(65536 * sizeof(size_t));
	if (!tmp || !cnt)
	{
		free(tmp);
		free(cnt);
		qsort(e, n, sizeof(dm_entry), cmp_entry);
		return;
	}
	for (pass = 0; pass < 4; pass++)
	{
		int			shift = pass * 16;
		size_t		sum = 0;
		uint64_t	i;
		dm_entry   *src = (pass % 2 == 0) ? e : tmp,
				   *dst = (pass % 2 == 0) ? tmp : e;

		memset(cnt, 0, 65536 * sizeof(size_t));
		for (i = 0; i < n; i++)
			cnt[(src[i].key >> shift) & 0xFFFF]++;
		for (i = 0; i < 65536; i++)
		{
			size_t		c = cnt[i];

			cnt[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[cnt[(src[i].key >> shift) & 0xFFFF]++] = src[i];
	}
	/* Four passes: the result is back in e. */
	free(tmp);
	free(cnt);
}

/* Create the tree for this transport and bulk-load n_entries keys into it. */
int
create_and_load(int transport, load_info *li, char *err, size_t errsz)
{
	dm_client  *c = NULL;
	uint16_t	ids[MAX_MEMNODES];
	dm_tree_opts topts;
	dm_tree    *t = NULL;
	dm_bulk    *b = NULL;
	dm_entry   *e;
	uint64_t	i,
				t0;
	int			st;

	memset(li, 0, sizeof(*li));
	st = connect_all(&c, ids, err, errsz);
	if (st != DM_OK)
		return st;
	home_node = ids[0];
	memset(&tree_name, 0, sizeof(tree_name));
	tree_name.kind = DM_TREE_NAMED;
	snprintf(tree_name.name, sizeof(tree_name.name), "dmbench-%d-%s",
			 (int) getpid(), transport_names[transport]);

	memset(&topts, 0, sizeof(topts));
	topts.node_size = node_size;
	topts.leaf_format = leaf_format;
	topts.neighborhood = leaf_format == DM_LEAF_HOPSCOTCH ? leaf_neighborhood : 0;
	if (nmemnode_addrs > 1)
	{
		topts.nmemnodes = nmemnode_addrs;
		for (i = 0; i < (uint64_t) nmemnode_addrs; i++)
			topts.memnodes[i] = ids[i];
	}
	st = dm_tree_create_new(c, home_node, &tree_name, &topts, &t);
	if (st != DM_OK)
	{
		snprintf(err, errsz, "dm_tree_create_new: %s (%s)", dm_strerror(st), dm_client_error(c));
		dm_client_destroy(c);
		return st;
	}

	/* Ordinals 0..n-1 with tid ordinal+1, sorted by key for the bulk load. */
	t0 = now_ns();
	e = malloc((n_entries ? n_entries : 1) * sizeof(dm_entry));
	if (!e)
	{
		snprintf(err, errsz, "out of memory for %" PRIu64 " entries", n_entries);
		dm_tree_destroy(t);
		dm_client_destroy(c);
		return DM_ERR_NOMEM;
	}
	for (i = 0; i < n_entries; i++)
	{
		e[i] = dm_entry_make(key_of(i), i + 1);
		cur_tid[i] = i + 1;
	}
	sort_entries(e, n_entries);
	li->gen_s = (double) (now_ns() - t0) / 1e9;
	/* --oracle: where each loaded key sits in key order (hence in which leaf) */
	if (do_oracle && pos_of_ord == NULL && n_entries < UINT32_MAX &&
		(pos_of_ord = malloc(n_entries * sizeof(uint32_t))) != NULL)
		for (i = 0; i < n_entries; i++)
			pos_of_ord[e[i].tid - 1] = (uint32_t) i;

	dm_client_reset_counters(c);
	t0 = now_ns();
	st = dm_tree_bulk_begin(t, fillfactor, &b);
	for (i = 0; st == DM_OK && i < n_entries; i += BULK_BATCH)
	{
		uint64_t	m = n_entries - i < BULK_BATCH ? n_entries - i : BULK_BATCH;

		st = dm_bulk_add(b, e + i, (int) m);
	}
	if (st == DM_OK)
	{
		st = dm_bulk_finish(b);
		b = NULL;
	}
	li->load_s = (double) (now_ns() - t0) / 1e9;
	dm_client_counters(c, -1, &li->ctr);
	free(e);
	if (st != DM_OK)
	{
		snprintf(err, errsz, "bulk load: %s (%s; %s)", dm_strerror(st), dm_tree_error(t),
				 dm_client_error(c));
		if (b)
			dm_bulk_abort(b);
		dm_tree_destroy(t);
		dm_client_destroy(c);
		return st;
	}
	sh->next_ord = n_entries;
	if (dm_tree_stats_get(t, &li->st) == DM_OK)
		li->have_stats = 1;
	/* Disconnect: an idle connection should not hold a memnode thread's attention. */
	dm_tree_close(t);
	dm_client_destroy(c);
	return DM_OK;
}

/* Verify the tree (and that each row has exactly one entry), then drop it. */
void
verify_and_drop(end_info *ei, cell *ce)
{
	dm_client  *c = NULL;
	uint16_t	ids[MAX_MEMNODES];
	dm_tree    *t = NULL;
	char		err[512];
	int			st;
	uint64_t	t0;

	memset(ei, 0, sizeof(*ei));
	if (connect_all(&c, ids, err, sizeof(err)) != DM_OK)
	{
		ei->verified = -1;
		snprintf(ei->msg, sizeof(ei->msg), "%s", err);
		return;
	}
	st = dm_tree_open_existing(c, home_node, &tree_name, &t);
	if (st != DM_OK)
	{
		ei->verified = -1;
		snprintf(ei->msg, sizeof(ei->msg), "dm_tree_open_existing: %s", dm_strerror(st));
		dm_client_destroy(c);
		return;
	}
	if (dm_tree_stats_get(t, &ei->st) == DM_OK)
		ei->have_stats = 1;
	if (do_verify)
	{
		t0 = now_ns();
		st = dm_tree_verify(t, &ei->entries, err, sizeof(err));
		ei->verify_s = (double) (now_ns() - t0) / 1e9;
		ei->expected = sh->next_ord;
		if (st != DM_OK)
		{
			ei->verified = -1;
			snprintf(ei->msg, sizeof(ei->msg), "dm_tree_verify: %s: %s", dm_strerror(st), err);
		}
		else if (ei->entries != ei->expected)
		{
			ei->verified = -1;
			snprintf(ei->msg, sizeof(ei->msg),
					 "tree has %" PRIu64 " entries, expected %" PRIu64 " (one per row)",
					 ei->entries, ei->expected);
		}
		else
			ei->verified = 1;
	}
	/* Every cached node of an owned range must be identical to remote memory. */
	if (ce && cur_cache && do_verify)
	{
		char		msg[400] = "";

		st = dm_tree_use_cache(t, cur_cache, 0);
		if (st == DM_OK)
			st = dm_tree_verify_cache(t, &ce->cache_checked, msg, sizeof(msg));
		ce->cache_verified = st == DM_OK ? 1 : -1;
		if (st != DM_OK)
			snprintf(ce->cache_msg, sizeof(ce->cache_msg), "dm_tree_verify_cache: %s: %s",
					 dm_strerror(st), msg[0] ? msg : dm_tree_error(t));
	}
	st = dm_tree_destroy(t);
	if (st != DM_OK)
		fprintf(stderr, "dmbench: dm_tree_destroy: %s\n", dm_strerror(st));
	dm_client_destroy(c);
}
