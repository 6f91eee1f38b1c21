/*
 * group_shared.c — groups 3 and 6: four writers and a scanner sharing one
 * cache of 16 frames, and a bulk load into a tree whose empty root is
 * cached (the old root must not be served afterwards).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_cache.h"
#include "dm_client.h"
#include "dm_region.h"		/* dm_tree_name_named */
#include "dm_tree.h"
#include "entrymodel.h"
#include "testutil.h"

#include "tree_cache.h"

/* ---- group 3: four writers and a scanner share one cache --------------------------------------- */

#define G3_WRITERS 4
#define G3_KEYS 6000			/* writer w owns keys == w mod 4 */
#define G3_FRAMES 16			/* the smallest cache: ~1% of the final tree */

static void
group3_one(const transport *tr, int nops)
{
	workcfg		w;
	shcache		sc;
	dm_client  *c = client_new(tr, "g3");
	dm_tree    *t = NULL,
			   *tc = NULL;
	model		stable = {0},
				final = {0};
	expect		x = {NULL, &final, NULL, 1};
	char		label[64];
	uint64_t	nodes,
				t0 = now_ns();
	int			height = 0;
	dm_cache_stats st;

	snprintf(label, sizeof(label), "g3 %s", tr->name);
	memset(&w, 0, sizeof(w));
	w.label = label;
	w.tr = tr;
	dm_tree_name_named(&w.tn, label);
	if (!shcache_new(&sc, DM_CACHE_DEX, G3_FRAMES, 300))
		return;
	if (!CHECK(c != NULL, "%s: client connects", label) || (t = tree_new(c, &w.tn)) == NULL)
		goto out;
	/*
	 * Stable entries on every other key, and a NULL: never deleted, so
	 * readers must see them.  Loaded full, so the first inserts split.
	 */
	for (uint64_t k = 0; k < G3_KEYS; k += 2)
		m_insert(&stable, tk(k, 0));
	m_insert(&stable, test_null(0));
	CHECK_STATUS(bulk_load(t, &stable, 100), DM_OK, "%s: bulk load %zu stable entries", label, stable.n);

	w.nwriters = G3_WRITERS;
	w.nops = nops;
	w.mix = &MIX_MULTI;
	w.stable = &stable;
	w.read_lo = 0;
	w.read_hi = G3_KEYS + 4;
	for (int i = 0; i <= G3_WRITERS; i++)	/* the writers, then the scanner */
	{
		w.cache[i] = &sc;
		w.inst[i] = 0;
		/* writer 3 also owns the NULLs (UINT64_MAX % 4 == 3); the scanner owns nothing */
		if (i < G3_WRITERS)
			w.own[i] = (keyset) {0, G3_KEYS, G3_WRITERS, (uint64_t) i, i == 3};
	}
	run_work(&w, G3_WRITERS + 1, &final);

	check_contents(label, "a handle without cache", t, &x);
	CHECK_STATUS(tree_open(c, &w.tn, sc.c, 0, &tc), DM_OK, "%s: a handle on the shared cache", label);
	if (tc)
	{
		check_cache(label, tc, &sc, NULL);
		check_contents(label, "a handle on the shared cache", tc, &x);
		check_lookups(label, "a handle on the shared cache", tc, &x, 0, G3_KEYS, 3);
		check_cache(label, tc, &sc, NULL);
	}
	nodes = tree_node_count(t, &height, NULL);
	dm_cache_stats_get(sc.c, &st);
	diag_cache(label, &sc);
	tap_diag("%s: final tree %zu entries, %" PRIu64 " nodes, height %d: the cache holds %.1f%% of it", label,
			 final.n, nodes, height, 100.0 * G3_FRAMES / (double) (nodes ? nodes : 1));
	CHECK(st.evictions > 0 && sum_levels(st.hits) > 0 && st.local_writes > 0,
		  "%s: the shared cache was used (%" PRIu64 " hits, %" PRIu64 " evictions, %" PRIu64 " local writes)", label,
		  sum_levels(st.hits), st.evictions, st.local_writes);
	tap_diag("%s: %.1f s", label, (now_ns() - t0) / 1e9);

out:
	dm_tree_close(tc);
	if (t)
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", label);
	if (c)
		dm_client_destroy(c);
	shcache_free(&sc);
	m_free(&stable);
	m_free(&final);
}

void
group3(void)
{
	/* 4500 ops of MIX_MULTI: ~3000 inserts and deletes (singles and batches) each */
	group3_one(&TR_SHM, scaled(4500));
	group3_one(&TR_TCP, scaled(4500));
	group3_one(&TR_SHM_TEAR, scaled(4500));
}

/* ---- group 6: bulk load under a cached empty root ------------------------------------------------ */

#define G6_ENTRIES 20000

static void
group6_one(const transport *tr, uint64_t lookup_step)
{
	char		label[64];
	dm_tree_name tn;
	shcache		sc;
	dm_client  *c = client_new(tr, "g6"),
			   *c2 = client_new(tr, "g6 second");
	dm_tree    *t = NULL,
			   *t2 = NULL;
	model		m = {0},
				empty = {0};
	expect		x = {NULL, &m, NULL, 1},
				x0 = {NULL, &empty, NULL, 1};
	dm_cache_stats st;
	uint64_t	t0 = now_ns();

	snprintf(label, sizeof(label), "g6 %s", tr->name);
	if (!shcache_new(&sc, DM_CACHE_DEX, 1024, 1000))
		return;
	dm_tree_name_named(&tn, label);
	if (!CHECK(c && c2, "%s: clients connect", label) || (t = tree_new(c, &tn)) == NULL)
		goto out;
	CHECK_STATUS(dm_tree_use_cache(t, sc.c, 0), DM_OK, "%s: use_cache", label);
	/* a second handle of the same instance (same cache) that also knows the old root */
	CHECK_STATUS(tree_open(c2, &tn, sc.c, 0, &t2), DM_OK, "%s: a second handle on the cache", label);
	if (!t2)
		goto out;
	check_lookups(label, "the handle (empty tree)", t, &x0, 0, 100, 1);
	check_lookups(label, "the second handle (empty tree)", t2, &x0, 0, 100, 1);
	dm_cache_stats_get(sc.c, &st);
	CHECK(st.frames_used[0] == 1 && sum_levels(st.frames_used) == 1, "%s: the empty root leaf is cached (%" PRIu64
		  " leaf frames)", label, st.frames_used[0]);

	for (uint64_t i = 0; i < G6_ENTRIES; i++)
		m_insert(&m, tk(i * 3, i % 5 + 1));
	CHECK_STATUS(bulk_load(t, &m, 90), DM_OK, "%s: bulk load %d entries through the cached handle", label,
				 G6_ENTRIES);
	check_lookups(label, "the handle", t, &x, 0, G6_ENTRIES * 3, lookup_step);
	check_lookups(label, "the second handle", t2, &x, 1, G6_ENTRIES * 3, lookup_step * 7);
	check_contents(label, "the second handle", t2, &x);
	check_cache(label, t, &sc, NULL);
	/* and the tree works on: inserts through both handles */
	{
		int			bad = 0,
					existed = -1;

		for (uint64_t i = 0; i < 300 && !bad; i++)
		{
			/* a tid the load did not use: every insert adds an entry */
			dm_entry	e = tk(i * 61 + 1, 9);
			int			rc = dm_tree_insert(i % 2 ? t : t2, e, &existed);

			bad = rc != DM_OK || existed != 0;
			if (bad)
				tap_diag("  insert %s: %s existed=%d", E(e), dm_strerror(rc), existed);
			m_insert(&m, e);
		}
		CHECK(!bad, "%s: 300 inserts through both handles after the load", label);
	}
	check_contents(label, "the handle", t, &x);
	check_cache(label, t2, &sc, NULL);
	tap_diag("%s: %.1f s", label, (now_ns() - t0) / 1e9);

out:
	dm_tree_close(t2);
	if (t)
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", label);
	if (c)
		dm_client_destroy(c);
	if (c2)
		dm_client_destroy(c2);
	shcache_free(&sc);
	m_free(&m);
}

void
group6(void)
{
	group6_one(&TR_SHM, 3);
	group6_one(&TR_TCP, 3 * 13);
}
