/*
 * group_single.c — groups 1 and 2, one process: tiny caches of each policy
 * compared against the model over tcp and shm, and owned writes that take no
 * remote lock (the counters prove it).
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

/* ---- group 1: one process, tiny caches, model comparison --------------------------------------- */

typedef struct policy_cfg
{
	const char *name;
	dm_cache_policy policy;
	uint32_t	permille;
	uint32_t	nframes;
} policy_cfg;

static const policy_cfg G1_POLICIES[] = {
	{"DEX-1000", DM_CACHE_DEX, 1000, 24},
	{"DEX-100", DM_CACHE_DEX, 100, 32},
	{"INNER", DM_CACHE_INNER, 0, 40},
};

#define G1_KEYS 8000

static void
group1_one(const transport *tr, const policy_cfg *pc)
{
	char		label[64],
				why[1024] = "";
	dm_tree_name tn;
	shcache		sc;
	dm_client  *c = NULL,
			   *c2 = NULL;
	dm_tree    *t = NULL,
			   *plain = NULL;
	model		m = {0};
	keyset		ks = {0, G1_KEYS, 1, 0, 1};
	expect		x = {NULL, &m, &ks, 1};
	opctx		o = {0};
	dm_cache_stats st;
	int			height = 0,
				op = 0,
				rc;
	uint64_t	nodes = 0,
				inner = 0,
				t0 = now_ns();
	static const struct
	{
		const char *name;
		const opmix *mix;
		int			nops;
	}			phases[] = {
		{"grow", &MIX_GROW, 9000},
		{"mixed", &MIX_MIXED, 3000},
		{"shrink", &MIX_SHRINK, 1500},
	};

	snprintf(label, sizeof(label), "g1 %s %s/%u", tr->name, pc->name, pc->nframes);
	rng_seed_label(g_seed, label, 0);
	if (!shcache_new(&sc, pc->policy, pc->nframes, pc->permille))
		return;
	dm_tree_name_named(&tn, label);
	c = client_new(tr, "g1");
	c2 = client_new(tr, "g1 plain");
	if (!CHECK(c && c2, "%s: clients connect", label) || (t = tree_new(c, &tn)) == NULL)
		goto out;
	/* no partition map stored: instance 0 owns everything */
	CHECK_STATUS(dm_tree_use_cache(t, sc.c, 0), DM_OK, "%s: dm_tree_use_cache(instance 0)", label);
	/* the control: a handle on another client that never attached a cache */
	CHECK_STATUS(dm_tree_open_existing(c2, HOME, &tn, &plain), DM_OK, "%s: open a handle without cache", label);
	if (!plain)
		goto out;

	o.t = t;
	o.mine = &m;
	o.own = &ks;
	o.x = &x;
	o.read_lo = 0;
	o.read_hi = G1_KEYS + 8;
	o.mirror = plain;
	for (size_t p = 0; p < sizeof(phases) / sizeof(phases[0]); p++)
	{
		char		ph[128];
		int			n = scaled(phases[p].nops);

		snprintf(ph, sizeof(ph), "%s %s", label, phases[p].name);
		rc = run_ops(&o, phases[p].mix, op, n, why, sizeof(why));
		if (!CHECK(rc == 0, "%s: %d random ops through the cached handle match the model, each write seen at once "
				   "without cache (%zu entries now)", ph, n, m.n))
			tap_diag("  %s", why);
		op += n;
		if (p == 0)
		{
			nodes = tree_node_count(t, &height, &inner);
			CHECK(height >= 3, "%s: the tree is %d levels tall, %" PRIu64 " nodes (cache: %.1f%% of them)", ph,
				  height, nodes, 100.0 * pc->nframes / (double) (nodes ? nodes : 1));
		}
		check_contents(ph, "the cached handle", t, &x);
		/* write-through: remote memory is current, whoever reads it */
		check_contents(ph, "the handle without cache", plain, &x);
		check_lookups(ph, "the handle without cache", plain, &x, 0, G1_KEYS, 7);
		check_cache(ph, t, &sc, NULL);
	}

	dm_cache_stats_get(sc.c, &st);
	diag_cache(label, &sc);
	CHECK(sum_levels(st.hits) > 0, "%s: cache hits (%" PRIu64 ")", label, sum_levels(st.hits));
	/* (at TREE_SCALE so small that every cacheable node fits, nothing needs evicting) */
	CHECK(st.evictions > 0 || (pc->policy == DM_CACHE_INNER ? inner : nodes) <= pc->nframes,
		  "%s: evictions (%" PRIu64 ")", label, st.evictions);
	CHECK(st.coolings > 0 || (pc->policy == DM_CACHE_INNER ? inner : nodes) <= pc->nframes,
		  "%s: coolings (%" PRIu64 ")", label, st.coolings);
	CHECK(st.local_writes > 0, "%s: writes under the local lock only (%" PRIu64 ")", label, st.local_writes);
	if (pc->policy == DM_CACHE_INNER)
		CHECK(st.frames_used[0] == 0 && st.hits[0] == 0,
			  "%s: INNER caches no leaf (%" PRIu64 " leaf frames, %" PRIu64 " leaf hits)", label, st.frames_used[0],
			  st.hits[0]);
	else if (pc->permille == 1000)
		CHECK(st.admit_skipped == 0 && st.frames_used[0] > 0,
			  "%s: every leaf read is admitted (%" PRIu64 " skipped, %" PRIu64 " leaf frames)", label,
			  st.admit_skipped, st.frames_used[0]);
	else
		CHECK(st.admit_skipped > 0 && st.frames_used[0] > 0,
			  "%s: leaves admitted by coin toss (%" PRIu64 " skipped, %" PRIu64 " leaf frames)", label,
			  st.admit_skipped, st.frames_used[0]);
	tap_diag("%s: %.1f s", label, (now_ns() - t0) / 1e9);

out:
	if (plain)
	{
		dm_tree_close(t);
		t = NULL;
		CHECK_STATUS(dm_tree_destroy(plain), DM_OK, "%s: destroy", label);
	}
	dm_tree_close(t);
	if (c)
		dm_client_destroy(c);
	if (c2)
		dm_client_destroy(c2);
	shcache_free(&sc);
	m_free(&m);
}

void
group1(void)
{
	for (size_t p = 0; p < sizeof(G1_POLICIES) / sizeof(G1_POLICIES[0]); p++)
	{
		group1_one(&TR_SHM, &G1_POLICIES[p]);
		group1_one(&TR_TCP, &G1_POLICIES[p]);
	}
}

/* ---- group 2: owned writes take no remote lock ------------------------------------------------ */

#define G2_LOADED 2000			/* keys 10, 20, ..., loaded at fillfactor 50: 5 a leaf */
#define G2_INSERTS 200			/* every 10th loaded key gets a neighbour: one per leaf */

typedef struct g2_result
{
	uint64_t	atomics,
				round_trips,
				splits,
				local_writes;	/* of the cache, if any */
	int			ok;
} g2_result;

/*
 * Load a tree, read every key (warming the cache if t has one), then insert
 * G2_INSERTS fresh keys, counting the client's remote operations and the
 * tree's splits over the inserts only.
 */
static g2_result
g2_run(const char *label, dm_client *c, dm_tree *t, model *m, shcache *sc)
{
	g2_result	res = {0};
	dm_tree_counters c0,
				c1;
	dm_cache_stats s0 = {0},
				s1 = {0};
	dm_counters cc;
	expect		x = {NULL, m, NULL, 1};
	char		why[512] = "";
	int			bad = 0;

	for (uint64_t i = 1; i <= G2_LOADED; i++)
		m_insert(m, tk(i * 10, 1));
	if (!CHECK_STATUS(bulk_load(t, m, 50), DM_OK, "%s: bulk load %d entries at fillfactor 50", label, G2_LOADED))
		return res;
	for (uint64_t i = 1; i <= G2_LOADED && !bad; i++)
		bad = lookup_check(t, i * 10, &x, why, sizeof(why)) != 0;
	if (!CHECK(!bad, "%s: warm-up lookups of every key", label))
		tap_diag("  %s", why);

	dm_tree_get_counters(t, &c0);
	if (sc)
		dm_cache_stats_get(sc->c, &s0);
	dm_client_reset_counters(c);
	for (uint64_t i = 0; i < G2_INSERTS && !bad; i++)
	{
		dm_entry	e = tk(i * 100 + 15, 1);	/* right of loaded key 10 * (10 i + 1) */
		int			existed = -1;
		int			rc = dm_tree_insert(t, e, &existed);

		bad = rc != DM_OK || existed != 0;
		if (bad)
			snprintf(why, sizeof(why), "insert %s: %s existed=%d %s", E(e), dm_strerror(rc), existed, terr(t));
		m_insert(m, e);
	}
	dm_client_counters(c, -1, &cc);
	dm_tree_get_counters(t, &c1);
	if (sc)
		dm_cache_stats_get(sc->c, &s1);
	res.local_writes = s1.local_writes - s0.local_writes;
	if (!CHECK(!bad, "%s: %d inserts of fresh keys", label, G2_INSERTS))
		tap_diag("  %s", why);
	res.atomics = atomics_of(&cc);
	res.round_trips = cc.round_trips;
	res.splits = c1.splits - c0.splits;
	res.ok = !bad && CHECK(res.splits == 0, "%s: the inserts split nothing (%" PRIu64 " splits)", label, res.splits);
	check_contents(label, "the same handle", t, &x);
	return res;
}

static void
group2_one(const transport *tr)
{
	char		label[64],
				lc[80],
				lp[80];
	dm_tree_name tn1,
				tn2;
	shcache		sc;
	dm_client  *c1 = client_new(tr, "g2 cached"),
			   *c2 = client_new(tr, "g2 plain");
	dm_tree    *tc = NULL,
			   *tp = NULL;
	model		m1 = {0},
				m2 = {0};
	dm_cache_stats s1;
	g2_result	rc_,
				rp;
	uint64_t	nodes;

	snprintf(label, sizeof(label), "g2 %s", tr->name);
	snprintf(lc, sizeof(lc), "%s with cache", label);
	snprintf(lp, sizeof(lp), "%s without cache", label);
	if (!shcache_new(&sc, DM_CACHE_DEX, 4096, 1000))
		return;
	dm_tree_name_named(&tn1, lc);
	dm_tree_name_named(&tn2, lp);
	if (!CHECK(c1 && c2, "%s: clients connect", label) || (tc = tree_new(c1, &tn1)) == NULL ||
		(tp = tree_new(c2, &tn2)) == NULL)
		goto out;
	CHECK_STATUS(dm_tree_use_cache(tc, sc.c, 0), DM_OK, "%s: use_cache", lc);

	rc_ = g2_run(lc, c1, tc, &m1, &sc);
	dm_cache_stats_get(sc.c, &s1);
	rp = g2_run(lp, c2, tp, &m2, NULL);
	nodes = tree_node_count(tc, NULL, NULL);
	tap_diag("%s: %d inserts: with cache %" PRIu64 " atomics, %" PRIu64 " round trips (%.2f per insert); "
			 "without %" PRIu64 " atomics, %" PRIu64 " round trips (%.2f per insert); %" PRIu64 " nodes, %" PRIu64
			 " cached", label, G2_INSERTS, rc_.atomics, rc_.round_trips, rc_.round_trips / (double) G2_INSERTS,
			 rp.atomics, rp.round_trips, rp.round_trips / (double) G2_INSERTS, nodes, sum_levels(s1.frames_used));
	if (rc_.ok && rp.ok)
	{
		/* warm: every node of the tree is in the cache, so every leaf written is owned and cached */
		CHECK(sum_levels(s1.frames_used) == nodes, "%s: the warm cache holds all %" PRIu64 " nodes (%" PRIu64 ")",
			  label, nodes, sum_levels(s1.frames_used));
		CHECK(rc_.local_writes == G2_INSERTS, "%s: every insert was a local write (%" PRIu64 ")", label,
			  rc_.local_writes);
		/*
		 * Every node write carries two guard CASes: on the writer's fence
		 * word (dm_tree_writer.c) and on the version word (the fence
		 * against stale writes, dm_tree_io.c).  Over tcp an owned write
		 * takes no lock, which would cost two more (acquire, release) and
		 * a round trip; over shm it does take it (its value names the
		 * writer's redo slot, for repairs), and claims and gives back the
		 * slot (two more CASes on its tag: a late batch never stores into
		 * a slot freed meanwhile), which costs no round trip there.
		 */
		int			per_write = tr->backend == DM_BACKEND_SHM ? 6 : 2;

		CHECK(rc_.atomics <= (uint64_t) per_write * G2_INSERTS + G2_INSERTS / 20,
			  "%s: with cache: %" PRIu64 " remote atomics for %d inserts (writer fence and version guard%s)",
			  label, rc_.atomics, G2_INSERTS, per_write == 2 ? ", no lock" :
			  " and the lock and the redo slot's claim, no read");
		CHECK(rp.atomics >= 3 * G2_INSERTS, "%s: without cache: %" PRIu64 " remote atomics for %d inserts (lock, guard, release each)",
			  label, rp.atomics, G2_INSERTS);
		CHECK(rc_.round_trips < rp.round_trips, "%s: round trips with cache %" PRIu64 " < without %" PRIu64, label,
			  rc_.round_trips, rp.round_trips);
	}
	check_cache(lc, tc, &sc, NULL);

out:
	if (tc && CHECK_STATUS(dm_tree_destroy(tc), DM_OK, "%s: destroy through the cached handle", lc))
	{
		dm_cache_stats_get(sc.c, &s1);
		CHECK(sum_levels(s1.frames_used) == 0, "%s: destroy dropped the tree's frames (%" PRIu64 " left)", lc,
			  sum_levels(s1.frames_used));
	}
	if (tp)
		CHECK_STATUS(dm_tree_destroy(tp), DM_OK, "%s: destroy", lp);
	if (c1)
		dm_client_destroy(c1);
	if (c2)
		dm_client_destroy(c2);
	shcache_free(&sc);
	m_free(&m1);
	m_free(&m2);
}

void
group2(void)
{
	group2_one(&TR_SHM);
	group2_one(&TR_TCP);
}
