/*
 * group_partition.c — groups 4 and 5, ownership: two instances owning the
 * two halves of the key space (each caches and writes only its own), and
 * partition-map errors, epochs and refresh dropping a tree's cached nodes.
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

/* ---- group 4: two instances own the two halves of the key space ------------------------------ */

#define G4_K		(UINT64_C(1) << 20)	/* the boundary */
#define G4_R		2000		/* writers' keys: [K - R, K) and [K, K + R) */
#define G4_FRAMES	64

static int
map_equal(const dm_partition_map *a, const dm_partition_map *b)
{
	if (a->n != b->n)
		return 0;
	for (int i = 0; i < a->n; i++)
		if (a->lo[i] != b->lo[i] || a->instance[i] != b->instance[i])
			return 0;
	return 1;
}

/* Assert what dm_tree_owns_key answers for keys with known owners. */
static void
check_owns(const char *label, const dm_tree *t, const char *who, const uint64_t *keys, const int *want, int n)
{
	char		got[256] = "";
	int			ok = 1;

	for (int i = 0; i < n; i++)
	{
		int			o = dm_tree_owns_key(t, tk(keys[i], 0).key);	/* VAR: ownership is by prefix word */

		ok &= o == want[i];
		if (keys[i] == UINT64_MAX)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), " MAX:%d", o);
		else
			snprintf(got + strlen(got), sizeof(got) - strlen(got), " %" PRIu64 ":%d", keys[i], o);
	}
	CHECK(ok, "%s: dm_tree_owns_key of %s:%s", label, who, got);
}

static void
group4_one(const transport *tr, int nops)
{
	workcfg		w;
	shcache		ca,
				cb;
	dm_client  *c = client_new(tr, "g4");
	dm_tree    *t = NULL,
			   *ta = NULL,
			   *tb = NULL;
	model		stable = {0},
				final = {0};
	expect		x = {NULL, &final, NULL, 1};
	dm_partition_map m0,
				m,
				got;
	char		label[64];
	dm_tree_counters tot;
	uint64_t	t0 = now_ns();
	int			rc,
				existed = -1,
				found = -1,
				changed = -1;

	snprintf(label, sizeof(label), "g4 %s", tr->name);
	memset(&w, 0, sizeof(w));
	w.label = label;
	w.tr = tr;
	dm_tree_name_named(&w.tn, label);
	if (!shcache_new(&ca, DM_CACHE_DEX, G4_FRAMES, 500))
		return;
	if (!shcache_new(&cb, DM_CACHE_DEX, G4_FRAMES, 500))
	{
		shcache_free(&ca);
		return;
	}
	if (!CHECK(c != NULL, "%s: client connects", label) || (t = tree_new(c, &w.tn)) == NULL)
		goto out;

	/*
	 * Stable entries on every 16th key around K, a few far away on both
	 * sides, and a NULL (instance 2's: the last range holds them).  A small
	 * tree loaded full: the writers split it at once and the root, shared
	 * by both instances, grows while they run (so cached copies of it go
	 * stale in the other instance's cache).
	 */
	for (uint64_t k = G4_K - G4_R - 512; k < G4_K + G4_R + 512; k += 16)
		m_insert(&stable, tk(k, 0));
	for (uint64_t k = 0; k < 8; k++)
	{
		m_insert(&stable, tk(k * 1000, 0));
		m_insert(&stable, tk(UINT64_MAX - 1 - k * 1000, 0));
	}
	m_insert(&stable, test_null(0));
	CHECK_STATUS(bulk_load(t, &stable, 100), DM_OK, "%s: bulk load %zu stable entries", label, stable.n);

	/* the map: [0, K) -> instance 1, [K, max] -> instance 2 */
	memset(&m0, 0xff, sizeof(m0));
	rc = dm_tree_partitions_get(t, &m0);
	CHECK(rc == DM_OK && m0.n == 1 && m0.lo[0] == 0 && m0.instance[0] == 0,
		  "%s: without a stored map, one range owned by instance 0 (epoch %" PRIu64 ")", label, m0.epoch);
	memset(&m, 0, sizeof(m));
	m.n = 2;
	m.lo[0] = 0;
	m.instance[0] = 1;
	m.lo[1] = tk(G4_K, 0).key;	/* VAR: K's prefix word (K % 256 == 0: K - 1's is below it) */
	m.instance[1] = 2;
	CHECK_STATUS(dm_tree_partitions_set(t, &m), DM_OK, "%s: dm_tree_partitions_set [0,K)->1 [K,max]->2", label);
	memset(&got, 0, sizeof(got));
	rc = dm_tree_partitions_get(t, &got);
	CHECK(rc == DM_OK && map_equal(&got, &m) && got.epoch == m0.epoch + 1,
		  "%s: dm_tree_partitions_get returns it with epoch %" PRIu64 " (was %" PRIu64 ")", label, got.epoch,
		  m0.epoch);

	/* children 0, 1: instance 1 on cache A; 2, 3: instance 2 on cache B; each owns its keys mod 2 */
	w.nwriters = 4;
	w.nops = nops;
	w.mix = &MIX_MULTI;
	w.stable = &stable;
	w.read_lo = G4_K - G4_R - 600;
	w.read_hi = G4_K + G4_R + 600;
	for (int i = 0; i < 4; i++)
	{
		int			inst2 = i >= 2;

		w.cache[i] = inst2 ? &cb : &ca;
		w.inst[i] = inst2 ? 2 : 1;
		w.own[i] = (keyset) {inst2 ? G4_K : G4_K - G4_R, G4_R, 2, (uint64_t) (i % 2), i == 3};
		w.foreign[i] = (keyset) {inst2 ? G4_K - G4_R : G4_K, G4_R, 1, 0, !inst2};
	}
	tot = run_work(&w, 4, &final);
	CHECK(tot.root_grows > 0, "%s: the shared root split while both instances ran (%" PRIu64 " times)", label,
		  tot.root_grows);

	check_contents(label, "a handle without cache", t, &x);
	CHECK_STATUS(tree_open(c, &w.tn, ca.c, 1, &ta), DM_OK, "%s: a handle of instance 1 (cache A)", label);
	CHECK_STATUS(tree_open(c, &w.tn, cb.c, 2, &tb), DM_OK, "%s: a handle of instance 2 (cache B)", label);
	if (!ta || !tb)
		goto out;
	check_cache(label, ta, &ca, NULL);
	check_cache(label, tb, &cb, NULL);
	diag_cache("g4 cache A", &ca);
	diag_cache("g4 cache B", &cb);
	{
		dm_cache_stats sa,
					sb;

		dm_cache_stats_get(ca.c, &sa);
		dm_cache_stats_get(cb.c, &sb);
		CHECK(sa.local_writes > 0 && sb.local_writes > 0,
			  "%s: both instances wrote owned nodes locally (%" PRIu64 ", %" PRIu64 ")", label, sa.local_writes,
			  sb.local_writes);
	}
	/* reads of the other instance's range are allowed and exact once the writers are done */
	check_contents(label, "instance 1", ta, &x);
	check_contents(label, "instance 2", tb, &x);
	check_lookups(label, "instance 1", ta, &x, w.read_lo, w.read_hi, 1);
	check_lookups(label, "instance 2", tb, &x, w.read_lo, w.read_hi, 1);

	/* ownership at the boundary, at the ends, and for NULLs (key UINT64_MAX: the last range) */
	{
		const uint64_t keys[] = {0, G4_K - 1, G4_K, G4_K + 1, UINT64_MAX - 1, UINT64_MAX};
		const int	want1[] = {1, 1, 0, 0, 0, 0},
					want2[] = {0, 0, 1, 1, 1, 1};

		check_owns(label, ta, "instance 1", keys, want1, 6);
		check_owns(label, tb, "instance 2", keys, want2, 6);
	}

	/* refused writes change nothing */
	rc = dm_tree_insert(ta, tk(G4_K, 2), &existed);
	CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: instance 1 inserting key K", label);
	rc = dm_tree_delete(ta, tk(G4_K, 0), &existed);
	CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: instance 1 deleting stable (K, 0)", label);
	rc = dm_tree_delete(tb, tk(G4_K - 8, 0), &existed);
	CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: instance 2 deleting stable (K-8, 0)", label);
	rc = dm_tree_insert(ta, test_null(3), &existed);
	CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: instance 1 inserting a NULL", label);
	{
		dm_entry	b[2] = {tk(G4_K - 1, FOREIGN_TID + 1), tk(G4_K, FOREIGN_TID + 1)};

		rc = dm_tree_insert_sorted(ta, b, 2, &changed);
		CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: instance 1 inserting a batch (K-1, K)", label);
		rc = dm_tree_contains(tb, b[0], &found);
		CHECK(rc == DM_OK && found == 0, "%s: the batch's owned entry was not inserted either", label);
	}
	/* ownership holds without a cache too (such a handle must not write owned keys meanwhile: not done) */
	{
		dm_tree    *tn = NULL;
		const uint64_t keys[] = {G4_K - 1, G4_K, UINT64_MAX};
		const int	want[] = {1, 0, 0};

		CHECK_STATUS(tree_open(c, &w.tn, NULL, 1, &tn), DM_OK, "%s: a handle of instance 1 without a cache", label);
		if (tn)
		{
			check_owns(label, tn, "instance 1 without a cache", keys, want, 3);
			rc = dm_tree_insert(tn, tk(G4_K + 1, 2), &existed);
			CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: instance 1 without a cache inserting key K+1", label);
			dm_tree_close(tn);
		}
	}
	check_contents(label, "a handle without cache, after the refused writes", t, &x);
	/* the owners may */
	/* (a NULL with a tid no writer used: writer 3 owned the NULLs) */
	rc = dm_tree_insert(tb, test_null(FOREIGN_TID + 1), &existed);
	CHECK(rc == DM_OK && existed == 0, "%s: instance 2 inserts a NULL: %s", label, dm_strerror(rc));
	rc = dm_tree_delete(tb, test_null(FOREIGN_TID + 1), &existed);
	CHECK(rc == DM_OK && existed == 1, "%s: and deletes it: %s", label, dm_strerror(rc));
	rc = dm_tree_insert(ta, tk(G4_K - 1, 3), &existed);
	CHECK(rc == DM_OK && existed == m_has(&final, tk(G4_K - 1, 3)), "%s: instance 1 inserts key K-1: %s",
		  label, dm_strerror(rc));
	m_insert(&final, tk(G4_K - 1, 3));
	check_contents(label, "instance 2, after the owners' writes", tb, &x);
	check_cache(label, ta, &ca, NULL);
	check_cache(label, tb, &cb, NULL);
	tap_diag("%s: %.1f s", label, (now_ns() - t0) / 1e9);

out:
	dm_tree_close(ta);
	dm_tree_close(tb);
	if (t)
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", label);
	if (c)
		dm_client_destroy(c);
	shcache_free(&ca);
	shcache_free(&cb);
	m_free(&stable);
	m_free(&final);
}

void
group4(void)
{
	group4_one(&TR_SHM, scaled(5000));
	group4_one(&TR_TCP, scaled(3000));
	group4_one(&TR_SHM_TEAR, scaled(3000));
}

/* ---- group 5: partition-map errors, epochs, refresh --------------------------------------------- */

#define G5_KEYS 2000			/* keys 0..1999, two tids each */

void
group5(void)
{
	const char *label = "g5 shm";
	dm_tree_name tn,
				tnq;
	shcache		sc;
	dm_client  *c = client_new(&TR_SHM, "g5");
	dm_tree    *p = NULL,
			   *h = NULL,
			   *q = NULL,
			   *hq = NULL;
	model		m = {0},
				mq = {0};
	expect		x = {NULL, &m, NULL, 1},
				xq = {NULL, &mq, NULL, 1};
	dm_partition_map bad,
				got,
				m14,
				m2;
	dm_cache_stats s0,
				s1;
	uint64_t	checked = 0,
				nh = 0,
				nq = 0;
	int			rc,
				existed = -1;

	if (!shcache_new(&sc, DM_CACHE_DEX, 256, 1000))
		return;
	dm_tree_name_named(&tn, label);
	if (!CHECK(c != NULL, "%s: client connects", label) || (p = tree_new(c, &tn)) == NULL)
		goto out;
	for (uint64_t k = 0; k < G5_KEYS; k++)
	{
		m_insert(&m, dm_entry_make(k, 1));
		m_insert(&m, dm_entry_make(k, 2));
	}
	CHECK_STATUS(bulk_load(p, &m, 70), DM_OK, "%s: bulk load %zu entries", label, m.n);

	/* invalid maps: refused, and the stored map stays as it was */
	{
		struct
		{
			const char *what;
			int			n;
			uint64_t	lo[3];
		}			cases[] = {
			{"lo[0] != 0", 2, {5, 100}},
			{"equal bounds", 3, {0, 100, 100}},
			{"descending bounds", 3, {0, 200, 100}},
			{"n = 0", 0, {0}},
			{"n < 0", -1, {0}},
			{"n = 15 > the capacity of a 256-byte block (14)", 15, {0}},
			{"n = DM_PART_MAX + 1", DM_PART_MAX + 1, {0}},
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		{
			memset(&bad, 0, sizeof(bad));
			bad.n = cases[i].n;
			for (int j = 0; j < DM_PART_MAX; j++)
				bad.lo[j] = j < 3 && cases[i].n <= 3 ? cases[i].lo[j] : (uint64_t) j * 10;
			CHECK_STATUS(dm_tree_partitions_set(p, &bad), DM_ERR_INVALID, "%s: partitions_set refuses %s", label,
						 cases[i].what);
		}
	}
	memset(&got, 0xff, sizeof(got));
	rc = dm_tree_partitions_get(p, &got);
	CHECK(rc == DM_OK && got.n == 1 && got.epoch == 0 && got.instance[0] == 0,
		  "%s: after the refusals still no map (epoch %" PRIu64 ", %d ranges)", label, got.epoch, got.n);

	/* a cached handle of instance 0, warmed: the whole tree is owned */
	CHECK_STATUS(tree_open(c, &tn, sc.c, 0, &h), DM_OK, "%s: a cached handle of instance 0", label);
	if (!h)
		goto out;
	check_lookups(label, "the cached handle (warming)", h, &x, 0, G5_KEYS, 1);
	check_cache(label, h, &sc, &checked);
	CHECK(checked > 0, "%s: warm cache holds %" PRIu64 " nodes", label, checked);

	/* the largest map a 256-byte block holds: 14 ranges; instance 0 owns the even ones */
	memset(&m14, 0, sizeof(m14));
	m14.n = 14;
	for (int i = 0; i < 14; i++)
	{
		m14.lo[i] = (uint64_t) i * 100;
		m14.instance[i] = (uint32_t) (i % 2);
	}
	CHECK_STATUS(dm_tree_partitions_set(p, &m14), DM_OK, "%s: partitions_set of 14 ranges", label);
	memset(&got, 0, sizeof(got));
	rc = dm_tree_partitions_get(p, &got);
	CHECK(rc == DM_OK && map_equal(&got, &m14) && got.epoch == 1,
		  "%s: read back identically, epoch %" PRIu64 " (want 1)", label, got.epoch);

	/*
	 * Another tree in the same cache, warmed after the first: a refresh of
	 * the first must drop the first's frames only.
	 */
	dm_tree_name_named(&tnq, "g5 shm other tree");
	if ((q = tree_new(c, &tnq)) == NULL)
		goto out;
	for (uint64_t k = 0; k < 300; k++)
		m_insert(&mq, dm_entry_make(k * 5, 1));
	CHECK_STATUS(bulk_load(q, &mq, 70), DM_OK, "%s: bulk load the other tree", label);
	CHECK_STATUS(tree_open(c, &tnq, sc.c, 0, &hq), DM_OK, "%s: a cached handle of the other tree", label);
	if (!hq)
		goto out;
	check_lookups(label, "the other tree's cached handle", hq, &xq, 0, 1500, 1);

	/* the cached handle has not seen the new map yet */
	{
		const uint64_t keys[] = {0, 99, 100, 199, 200, 1399, UINT64_MAX};
		const int	old[] = {1, 1, 1, 1, 1, 1, 1},
					nw[] = {1, 1, 0, 0, 1, 0, 0};

		check_owns(label, h, "the handle before refresh (old map)", keys, old, 7);
		check_cache(label, h, &sc, &nh);
		check_cache(label, hq, &sc, &nq);
		dm_cache_stats_get(sc.c, &s0);
		CHECK(nh > 0 && nq > 0 && nh + nq == sum_levels(s0.frames_used),
			  "%s: the cache holds %" PRIu64 " nodes of the tree and %" PRIu64 " of the other (%" PRIu64 " in all)",
			  label, nh, nq, sum_levels(s0.frames_used));
		CHECK_STATUS(dm_tree_partitions_refresh(h, NULL), DM_OK, "%s: dm_tree_partitions_refresh", label);
		dm_cache_stats_get(sc.c, &s1);
		check_cache(label, h, &sc, &checked);
		CHECK(checked == 0 && sum_levels(s1.frames_used) == nq && s1.invalidations - s0.invalidations == nh,
			  "%s: refresh dropped the tree's %" PRIu64 " cached nodes (%" PRIu64 " left of it, %" PRIu64
			  " frames used, %" PRIu64 " invalidations)", label, nh, checked, sum_levels(s1.frames_used),
			  s1.invalidations - s0.invalidations);
		check_cache(label, hq, &sc, &checked);
		CHECK(checked == nq, "%s: and kept the other tree's %" PRIu64 " (%" PRIu64 ")", label, nq, checked);
		check_owns(label, h, "the handle after refresh (14 ranges)", keys, nw, 7);
	}
	/* same epoch: nothing dropped */
	check_lookups(label, "the cached handle (after refresh)", h, &x, 0, G5_KEYS, 1);
	dm_cache_stats_get(sc.c, &s0);
	CHECK_STATUS(dm_tree_partitions_refresh(h, NULL), DM_OK, "%s: refresh again (same epoch)", label);
	dm_cache_stats_get(sc.c, &s1);
	CHECK(s1.invalidations == s0.invalidations && sum_levels(s1.frames_used) == sum_levels(s0.frames_used) &&
		  sum_levels(s0.frames_used) > 0, "%s: a refresh without a new epoch drops nothing (%" PRIu64 " frames)",
		  label, sum_levels(s1.frames_used));
	/* now shared and foreign nodes exist: only owned nodes and shared inner ones may be cached */
	check_cache(label, h, &sc, NULL);

	/* writes follow the new map: owned ranges yes (with splits), others no */
	{
		int			bad_ = 0,
					refused = 0;
		char		why[256] = "";

		for (uint64_t k = 0; k < G5_KEYS && !bad_; k++)
		{
			dm_entry	e = dm_entry_make(k, 3);
			int			own = k < 1300 && (k / 100) % 2 == 0;	/* [1300, max] is range 13's */

			rc = dm_tree_insert(h, e, &existed);
			if (own ? rc != DM_OK || existed != 0 : rc != DM_ERR_NOTOWNER)
			{
				snprintf(why, sizeof(why), "insert %s: %s existed=%d", E(e), dm_strerror(rc), existed);
				bad_ = 1;
			}
			if (own)
				m_insert(&m, e);
			else
				refused++;
		}
		if (!CHECK(!bad_, "%s: inserts through the 14-range map: owned ones done, %d others refused", label, refused))
			tap_diag("  %s", why);
	}
	check_contents(label, "the cached handle", h, &x);
	check_cache(label, h, &sc, NULL);

	/* a 2-range map, epoch 2: ownership flips again */
	memset(&m2, 0, sizeof(m2));
	m2.n = 2;
	m2.lo[1] = 1000;
	m2.instance[0] = 1;
	m2.instance[1] = 0;
	CHECK_STATUS(dm_tree_partitions_set(h, &m2), DM_OK, "%s: partitions_set of 2 ranges (through the cached handle)",
				 label);
	memset(&got, 0, sizeof(got));
	rc = dm_tree_partitions_get(p, &got);
	CHECK(rc == DM_OK && map_equal(&got, &m2) && got.epoch == 2,
		  "%s: epoch %" PRIu64 " (want 2)", label, got.epoch);
	CHECK_STATUS(dm_tree_partitions_refresh(h, NULL), DM_OK, "%s: refresh", label);
	{
		const uint64_t keys[] = {0, 999, 1000, UINT64_MAX};
		const int	want[] = {0, 0, 1, 1};

		check_owns(label, h, "the handle after the second refresh", keys, want, 4);
	}
	rc = dm_tree_insert(h, dm_entry_make(999, 4), &existed);
	CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: key 999 is no longer ours", label);
	rc = dm_tree_insert(h, dm_entry_make(1000, 4), &existed);
	CHECK(rc == DM_OK && existed == 0, "%s: key 1000 is: %s", label, dm_strerror(rc));
	m_insert(&m, dm_entry_make(1000, 4));

	/* single-writer mode (PostgreSQL's primary): every key may be written, the map only decides caching */
	{
		dm_partition_map cm;

		dm_tree_partitions_cached(h, &cm);
		CHECK(map_equal(&cm, &m2) && cm.epoch == 2 && dm_tree_map_owner(&cm, 0) == 1 &&
			  dm_tree_map_owner(&cm, 999) == 1 && dm_tree_map_owner(&cm, 1000) == 0 &&
			  dm_tree_map_owner(&cm, UINT64_MAX) == 0,
			  "%s: the handle's cached map and dm_tree_map_owner agree with the map set", label);
		dm_tree_write_any_key(h, 1);
		rc = dm_tree_insert(h, dm_entry_make(999, 4), &existed);
		CHECK(rc == DM_OK && existed == 0, "%s: single-writer mode: key 999 (instance 1's) written: %s", label,
			  dm_strerror(rc));
		m_insert(&m, dm_entry_make(999, 4));
		/*
		 * Enough entries in instance 1's range that inner nodes lie wholly
		 * inside it: the only writer caches them as shared nodes and must
		 * keep its copies right through its own splits of them.
		 */
		for (uint64_t k = 1; k < 1000 && rc == DM_OK; k += 2)
			for (uint64_t tid = 5; tid < 45; tid++)
			{
				if ((rc = dm_tree_insert(h, dm_entry_make(k, tid), &existed)) != DM_OK)
					break;
				m_insert(&m, dm_entry_make(k, tid));
			}
		CHECK_STATUS(rc, DM_OK, "%s: single-writer mode: 20000 more foreign entries written (with splits)", label);
		for (uint64_t k = 1; k < 1000; k += 14)
		{
			uint64_t	tids[256];
			int			n = 0;
			size_t		want = m_lower(&m, dm_entry_make(k + 1, 0)) - m_lower(&m, dm_entry_make(k, 0));

			rc = dm_tree_lookup(h, k, tids, 256, &n);
			if (rc == DM_OK && (size_t) n != want)
				rc = DM_ERR_INTERNAL;	/* as many entries as the model has */
			if (rc != DM_OK)
				break;
		}
		CHECK_STATUS(rc, DM_OK, "%s: single-writer mode: lookups of foreign keys through the cache", label);
		check_cache(label, h, &sc, NULL);
		rc = dm_tree_delete(h, dm_entry_make(999, 4), &existed);
		CHECK(rc == DM_OK && existed == 1, "%s: and key 999 deleted again: %s", label, dm_strerror(rc));
		m_delete(&m, dm_entry_make(999, 4));
		dm_tree_write_any_key(h, 0);
		rc = dm_tree_insert(h, dm_entry_make(997, 4), &existed);
		CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: out of single-writer mode the key is refused again", label);
	}
	check_contents(label, "a handle without cache", p, &x);
	/* the foreign leaves written were not kept: only owned nodes and shared inner ones are cached */
	check_cache(label, h, &sc, NULL);

out:
	dm_tree_close(h);
	dm_tree_close(hq);
	if (q)
		CHECK_STATUS(dm_tree_destroy(q), DM_OK, "%s: destroy the other tree", label);
	if (p)
		CHECK_STATUS(dm_tree_destroy(p), DM_OK, "%s: destroy", label);
	if (c)
		dm_client_destroy(c);
	shcache_free(&sc);
	m_free(&m);
	m_free(&mq);
}
