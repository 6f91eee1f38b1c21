/*
 * test_tree_reclaim.c — empty leaves taken out of the tree and their nodes
 * reused (src/dm/dm_tree_reclaim.c), with a real memnode, over shm and tcp.
 *
 * Sections:
 *  1. model: random inserts, whole ranges deleted, reclaim, reinsertion in
 *     other ranges; after every phase the tree verifies (which checks the
 *     reuse list: dead empty leaves the tree does not reach) and full scans
 *     both ways equal the model.  Leaves are reclaimed and nodes reused.
 *  2. bounded: fill a range, delete it, reclaim, fill another range, N
 *     times; the memnode's bytes_in_use stays bounded (with reclamation off
 *     the same loop grows every round; both are printed).
 *  3. concurrent (shm, tear mode): writers churn their own key bands (fill,
 *     delete, refill: leaves emptied, reclaimed, reused under them) while a
 *     reclaimer loops and scanners check every full scan (both directions)
 *     for order, no duplicate and every stable entry; one of the scanners is
 *     replica-style and must issue no write, CAS or FAA at all.  Then
 *     verify and the exact contents.
 *  4. faults: a reclaimer that unlinks one leaf fails, is killed, or (shm)
 *     is killed between two stored words, at every step; afterwards the
 *     tree verifies, scans equal the model, a writer in the range finishes
 *     any half-done unlink, and a second pass reclaims what is left.
 *  5. fences (a VAR tree in either run): an empty leaf whose left neighbour
 *     has no room for its longer high fence stays; the pass, and writes in
 *     its range afterwards, succeed.
 *  6. revive (its own VAR tree, in the FIXED8 run; with and without a
 *     cache of leaves): a reclaimer killed at each step of one unlink;
 *     where it left the empty leaf half-dead, its left neighbour then fills
 *     up (no room for the dead leaf's fence) and a write in the dead leaf's
 *     range revives it instead of failing; contents, verify and a later
 *     pass are right in every run.  Then a writer stalled at each step of
 *     that write while another empties the neighbour and finishes the
 *     unlink: the stalled revival lands nothing (fenced by the neighbour's
 *     version), and every write succeeds.
 *  7. torn (shm, after section 6's first sweep): the reviver killed right
 *     after each step of its write, then after each stored word of its
 *     revival's batch: B is dead or live afterwards, never torn, and the
 *     next write, the contents, both scans and a pass are right.  By
 *     default (CI) a short form, ~12 s: a binary search over the steps
 *     for the revival's batch and every 10th word of it;
 *     RECLAIM_TORN_STRIDE=1 runs every step and every word (~95 s),
 *     RECLAIM_TORN_STRIDE=<n> every n-th word.
 * TREE_KEY_FORMAT=var (test_tree_reclaim+var) runs it on VAR trees
 * (test/lib/testkeys.h: each key a byte string, the model comparing bytes),
 * section 4 over shm only and only if RECLAIM_SECTIONS names it or
 * DM_TEST_VAR_ALL=1: VAR leaves hold fewer entries, so a reclaim pass of
 * its tree takes 95 steps (FIXED8: 59): 95 s over shm, 200 s over both.
 * TREE_SEED sets the keys; TREE_SCALE=<percent> the sizes; RECLAIM_SECTIONS
 * (e.g. "model,faults,revive") runs only some sections; TREE_BACKEND=shm|tcp
 * one transport only (the sanitized CI run: shm, the faults sweep halved).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
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
#include "dm_region.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testkeys.h"
#include "testutil.h"

#define LOCK_TIMEOUT_MS 300		/* a killed reclaimer's locks are taken over fast */

static memnode_proc mn;
static uint64_t g_seed = 1;
static int	g_scale = 100;

typedef struct transport
{
	const char *name;
	int			backend;
} transport;

static const transport transports[] = {{"shm", DM_BACKEND_SHM}, {"tcp", DM_BACKEND_TCP}};

static dm_client *
connect_client(int backend, int flags, const char *who)
{
	return test_client_connect(backend, (uint32_t) flags, 20000, who, mn.addr, NULL);
}

static int	g_quiet;			/* make_tree: no assertion line (fault runs) */

static dm_tree *
make_tree(dm_client *c, const char *name, uint32_t node_size, dm_tree_name *tn)
{
	dm_tree_opts o;
	dm_tree    *t = NULL;
	int			rc;

	memset(&o, 0, sizeof(o));
	o.node_size = node_size;
	test_tree_leaf_opts(&o);
	if (test_tree_key_opts(&o) != 0)
	{
		CHECK(0, "%s: TREE_KEY_FORMAT is fixed8 or var and %u-byte nodes hold its keys", name, node_size);
		return NULL;
	}
	o.lock_timeout_ms = LOCK_TIMEOUT_MS;
	dm_tree_name_named(tn, name);
	dm_tree_drop(c, 1, tn, NULL);
	rc = dm_tree_create_new(c, 1, tn, &o, &t);
	if (!g_quiet || rc != DM_OK)
		CHECK_STATUS(rc, DM_OK, "%s: create tree (%u-byte nodes)", name, node_size);
	return rc == DM_OK ? t : NULL;
}

static int
insert_keys(dm_tree *t, model *m, uint64_t from, uint64_t to, uint64_t step, uint64_t tid)
{
	for (uint64_t k = from; k < to; k += step)
	{
		dm_entry	e = tk(k, tid + k);

		if (dm_tree_insert(t, e, NULL) != DM_OK)
		{
			tap_diag("insert: %s", dm_tree_error(t));
			return 0;
		}
		if (m)
			m_insert(m, e);
	}
	return 1;
}

/* Like insert_keys, in sorted batches of 256 (each leaf written once per batch). */
static int
insert_sorted(dm_tree *t, model *m, uint64_t from, uint64_t to, uint64_t step, uint64_t tid)
{
	dm_entry	e[256];
	int			n = 0;

	for (uint64_t k = from; k < to || n > 0; k += step)
	{
		if (k < to)
			e[n++] = tk(k, tid + k);
		if (n == 256 || (k >= to && n > 0) || (k + step >= to && n > 0))
		{
			if (dm_tree_insert_sorted(t, e, n, NULL) != DM_OK)
			{
				tap_diag("insert_sorted: %s", dm_tree_error(t));
				return 0;
			}
			for (int i = 0; i < n; i++)
				m_insert(m, e[i]);
			n = 0;
			if (k >= to)
				break;
		}
	}
	return 1;
}

/* Delete every entry with key in [from, to), in sorted batches as VACUUM does. */
static int
delete_range(dm_tree *t, model *m, uint64_t from, uint64_t to)
{
	size_t		a = m_lower(m, tk(from, 0)),
				b = m_lower(m, tk(to, 0));
	dm_entry   *e = malloc(sizeof(dm_entry) * (b - a + 1));
	int			n = (int) (b - a),
				changed = 0,
				ok;

	memcpy(e, m->e + a, sizeof(dm_entry) * (size_t) n);
	ok = dm_tree_delete_sorted(t, e, n, &changed) == DM_OK && changed == n;
	if (!ok)
		tap_diag("delete_range: %s (changed %d of %d)", dm_tree_error(t), changed, n);
	for (int i = 0; i < n; i++)
		m_delete(m, e[i]);
	free(e);
	return ok;
}

/* ---- 1. model ------------------------------------------------------------------ */

static void
test_model(const transport *tr, uint32_t node_size)
{
	char		name[64];
	dm_client  *c = connect_client(tr->backend, 0, "model");
	dm_tree_name tn;
	dm_tree    *t;
	model		m = {0};
	dm_tree_counters ctr;
	dm_reclaim_result res;
	uint64_t	reclaimed = 0;
	int			rounds = 3 * g_scale / 100 + 2;

	snprintf(name, sizeof(name), "reclaim-model-%s-%u", tr->name, node_size);
	if (!CHECK(c != NULL, "%s: connect", name) || (t = make_tree(c, name, node_size, &tn)) == NULL)
		goto out;
	rng_seed_label(g_seed, name, 0);
	/* keys 0..99999: random fill */
	for (int i = 0; i < 2500 * g_scale / 100; i++)
	{
		dm_entry	e = tk(rnd_below(100000), rnd_below(1000));

		if (dm_tree_insert(t, e, NULL) != DM_OK)
			break;
		m_insert(&m, e);
	}
	tree_matches_model(t, &m, 1, name);
	for (int r = 0; r < rounds; r++)
	{
		char		what[128];
		uint64_t	from = rnd_below(80000),
					to = from + 10000 + rnd_below(20000);
		uint64_t	rfrom = rnd_below(90000);

		/* a whole range gone, then a few scattered deletes */
		if (!CHECK(delete_range(t, &m, from, to), "%s round %d: delete keys [%" PRIu64 ", %" PRIu64 ")", name, r, from, to))
			break;
		snprintf(what, sizeof(what), "%s round %d after delete", name, r);
		tree_matches_model(t, &m, 1, what);
		if (!CHECK_STATUS(dm_tree_reclaim(t, &res), DM_OK, "%s round %d: reclaim %s", name, r, dm_tree_error(t)))
			break;
		tap_diag("%s round %d: %" PRIu64 " leaves, %" PRIu64 " empty, %" PRIu64 " reclaimed, %" PRIu64 " free",
				 name, r, res.leaves, res.empty_leaves, res.leaves_reclaimed, res.free_nodes);
		reclaimed += res.leaves_reclaimed;
		snprintf(what, sizeof(what), "%s round %d after reclaim", name, r);
		tree_matches_model(t, &m, 1, what);
		/* reinsertion elsewhere (and into part of the emptied range) */
		{
			dm_entry	e[1200];
			int			n = 1200 * g_scale / 100;

			n = n > 1200 ? 1200 : n;
			for (int i = 0; i < n; i++)
				e[i] = tk(rfrom + rnd_below(10000), rnd_below(1000));
			n = sort_unique(e, n);
			CHECK(dm_tree_insert_sorted(t, e, n, NULL) == DM_OK, "%s round %d: reinsert %d entries", name, r, n);
			for (int i = 0; i < n; i++)
				m_insert(&m, e[i]);
		}
		snprintf(what, sizeof(what), "%s round %d after reinsertion", name, r);
		tree_matches_model(t, &m, 1, what);
	}
	dm_tree_get_counters(t, &ctr);
	/* small nodes split often enough to use up grants: then freed nodes are reused */
	CHECK(reclaimed > 0 && ctr.leaves_reclaimed == reclaimed && (ctr.nodes_reused > 0 || node_size > 256),
		  "%s: %" PRIu64 " leaves reclaimed, %" PRIu64 " nodes reused", name, reclaimed, ctr.nodes_reused);
	/* everything deleted: every leaf but the first children goes */
	if (CHECK(delete_range(t, &m, 0, UINT64_MAX), "%s: delete everything", name) &&
		CHECK_STATUS(dm_tree_reclaim(t, &res), DM_OK, "%s: reclaim of the emptied tree", name))
	{
		dm_tree_stats st;
		int			src;

		tree_matches_model(t, &m, 1, name);
		src = dm_tree_stats_get(t, &st);
		CHECK(src == DM_OK && st.nodes[0] <= st.nodes[1] + (st.height > 2 ? st.nodes[2] : 0) + 1 &&
			  st.free_nodes == res.free_nodes,
			  "%s: an empty tree keeps only first children: %" PRIu64 " leaves under %" PRIu64 " parents, %" PRIu64 " free",
			  name, st.nodes[0], st.nodes[1], st.free_nodes);
	}
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", name);
out:
	m_free(&m);
	if (c)
		dm_client_destroy(c);
}

/* ---- 2. bounded memnode use ------------------------------------------------------ */

/*
 * Fill a range of `per` keys, delete it, reclaim (if on), move to another
 * range; `ranges` distinct ranges of the key space are used in turn
 * (ranges = 0: every round a new range to the right, as a table whose new
 * rows get increasing keys).  Returns bytes_in_use growth from round 2 to
 * the end, and fills *first with the use after round 2.
 */
static int64_t
cycle(const transport *tr, const char *name, int reclaim, int rounds, int per, int ranges, uint64_t *first)
{
	dm_client  *c = connect_client(tr->backend, 0, name);
	dm_tree_name tn;
	dm_tree    *t;
	model		m = {0};
	uint64_t	use = 0,
				peak = 0;
	int64_t		grow = -1;

	if (c == NULL || (t = make_tree(c, name, 1024, &tn)) == NULL)
		goto out;
	for (int r = 0; r < rounds; r++)
	{
		uint64_t	base = (uint64_t) (ranges ? r % ranges : r) * 1000000;
		dm_reclaim_result res;

		if (!insert_sorted(t, &m, base, base + (uint64_t) per * 7, 7, 0) ||
			!delete_range(t, &m, base, base + 1000000))
			goto fail;
		if (reclaim && dm_tree_reclaim(t, &res) != DM_OK)
		{
			tap_diag("%s: reclaim: %s", name, dm_tree_error(t));
			goto fail;
		}
		/* the handle's grant stays with it: give it back so only tree memory counts */
		dm_tree_alloc_release(t);
		use = memnode_bytes_in_use(c, 1);
		if (getenv("RECLAIM_VERBOSE"))
		{
			dm_tree_counters ctr;
			dm_tree_stats st;

			dm_tree_get_counters(t, &ctr);
			dm_tree_stats_get(t, &st);
			tap_diag("%s round %d: bytes_in_use %" PRIu64 ", %" PRIu64 " leaves %" PRIu64 " inner, %" PRIu64
					 " free; reclaimed %" PRIu64 ", reused %" PRIu64 ", splits %" PRIu64, name, r, use, st.nodes[0],
					 st.nodes[1] + st.nodes[2], st.free_nodes, ctr.leaves_reclaimed, ctr.nodes_reused, ctr.splits);
		}
		if (r == 1)
			*first = use;
		if (use > peak)
			peak = use;
	}
	grow = (int64_t) use - (int64_t) *first;
	tree_matches_model(t, &m, 1, name);
fail:
	dm_tree_destroy(t);
out:
	m_free(&m);
	if (c)
		dm_client_destroy(c);
	return grow;
}

static void
test_bounded(const transport *tr)
{
	char		name[64];
	int			rounds = 8 * g_scale / 100 + 4;
	int			per = 2000;
	uint64_t	f_on = 0,
				f_off = 0,
				f_new = 0,
				f_newoff = 0;
	int64_t		on,
				off,
				nw,
				nwoff;

	snprintf(name, sizeof(name), "reclaim-bounded-%s", tr->name);
	on = cycle(tr, name, 1, rounds, per, 4, &f_on);
	snprintf(name, sizeof(name), "reclaim-unbounded-%s", tr->name);
	off = cycle(tr, name, 0, rounds, per, 4, &f_off);
	tap_diag("%s: %d rounds of %d keys over 4 ranges: bytes_in_use grows %" PRId64 " bytes after round 2 (%" PRIu64
			 ") with reclamation, %" PRId64 " without (%" PRIu64 ")", tr->name, rounds, per, on, f_on, off, f_off);
	/* (without reclamation this pattern grows only until every range was filled once) */
	CHECK(on >= 0 && off >= 0 && on <= 16 * 1024,
		  "%s: with reclamation memnode use stays bounded over %d rounds (grew %" PRId64 " bytes; without: %" PRId64 ")",
		  tr->name, rounds, on, off);

	/* ever new ranges to the right: inner nodes keep one (empty) first child each */
	snprintf(name, sizeof(name), "reclaim-newranges-%s", tr->name);
	nw = cycle(tr, name, 1, rounds, per, 0, &f_new);
	snprintf(name, sizeof(name), "reclaim-newranges-off-%s", tr->name);
	nwoff = cycle(tr, name, 0, rounds, per, 0, &f_newoff);
	tap_diag("%s: ever new ranges: grows %" PRId64 " bytes with reclamation, %" PRId64 " without", tr->name, nw, nwoff);
	CHECK(nwoff > (int64_t) (rounds - 2) * per * 8,
		  "%s: ever new ranges without reclamation: the memnode grows every round (%" PRId64 " bytes)", tr->name, nwoff);
	CHECK(nw >= 0 && nw * 5 < nwoff,
		  "%s: ever new ranges: reclamation keeps growth under a fifth (%" PRId64 " vs %" PRId64 " bytes)", tr->name, nw, nwoff);
}

/* ---- 3. concurrent readers, writers and the reclaimer ----------------------------- */

#define BANDS 3					/* writers, one key band each */
#define BAND 1000000
#define STABLE_STEP 97			/* stable keys: multiples of this in every band */
#define STABLE_SPAN 25000		/* below this offset in the band */
#define NSTABLE (BANDS * (STABLE_SPAN / STABLE_STEP + 1))

typedef struct shared
{
	volatile int stop;
	volatile int failed;
	char		msg[256];
	uint64_t	scans;
	uint64_t	reclaimed;
	uint64_t	reused;
	uint64_t	replica_writes;
} shared;

static shared *sh;

static void
cfail(const char *fmt,...)
{
	va_list		ap;

	if (sh->failed++)
		return;
	va_start(ap, fmt);
	vsnprintf(sh->msg, sizeof(sh->msg), fmt, ap);
	va_end(ap);
}

static int
is_stable(uint64_t key)
{
	return key % BAND % STABLE_STEP == 0 && key % BAND < STABLE_SPAN;
}

/* Writer w: churn keys of band w that are not stable: fill a sub-range, delete it, again. */
static void
writer(const dm_tree_name *tn, int w, int rounds)
{
	dm_client  *c = connect_client(DM_BACKEND_SHM, DM_CLIENT_TEAR, "writer");
	dm_tree    *t = NULL;
	model		m = {0};
	dm_tree_counters ctr;

	if (c == NULL || dm_tree_open_existing(c, 1, tn, &t) != DM_OK)
	{
		cfail("writer %d: open", w);
		_exit(1);
	}
	rng_seed_label(g_seed, "writer", (uint64_t) w);
	for (int r = 0; r < rounds && !sh->failed; r++)
	{
		uint64_t	from = (uint64_t) w * BAND + rnd_below(STABLE_SPAN - 1000);

		for (uint64_t k = from; k < from + 1200; k += 3)
		{
			dm_entry	e = tk(k, 1);

			if (is_stable(k))
				continue;
			if (dm_tree_insert(t, e, NULL) != DM_OK)
			{
				cfail("writer %d: insert: %s", w, dm_tree_error(t));
				_exit(1);
			}
			m_insert(&m, e);
		}
		/* keep one entry in ten of the round: the rest are deleted */
		{
			dm_entry   *d = malloc(sizeof(dm_entry) * m.n);
			int			n = 0,
						changed = 0;

			for (size_t i = 0; i < m.n; i++)
				if (tk_key(m.e[i]) % 10 != 0)
					d[n++] = m.e[i];
			if (dm_tree_delete_sorted(t, d, n, &changed) != DM_OK || changed != n)
				cfail("writer %d: delete: %s (%d of %d)", w, dm_tree_error(t), changed, n);
			for (int i = 0; i < n; i++)
				m_delete(&m, d[i]);
			free(d);
		}
	}
	/* the band's exact contents: stable keys and the kept tenth */
	for (size_t i = 0; i < m.n && !sh->failed; i++)
	{
		int			found = 0;

		if (dm_tree_contains(t, m.e[i], &found) != DM_OK || !found)
			cfail("writer %d: kept entry %s missing", w, E(m.e[i]));
	}
	dm_tree_get_counters(t, &ctr);
	__sync_fetch_and_add(&sh->reused, ctr.nodes_reused);
	/* publish the kept entries for the final check */
	{
		char		path[128];
		FILE	   *f;

		snprintf(path, sizeof(path), "/tmp/reclaim-test-%d-%d", (int) getppid(), w);
		if ((f = fopen(path, "w")) != NULL)
		{
			for (size_t i = 0; i < m.n; i++)
				fprintf(f, "%" PRIu64 " %" PRIu64 "\n", tk_key(m.e[i]), m.e[i].tid);
			fclose(f);
		}
	}
	_exit(0);
}

static void
reclaimer(const dm_tree_name *tn)
{
	dm_client  *c = connect_client(DM_BACKEND_SHM, DM_CLIENT_TEAR, "reclaimer");
	dm_tree    *t = NULL;
	dm_tree_counters ctr;

	if (c == NULL || dm_tree_open_existing(c, 1, tn, &t) != DM_OK)
	{
		cfail("reclaimer: open");
		_exit(1);
	}
	while (!sh->stop && !sh->failed)
	{
		dm_reclaim_result res;

		if (dm_tree_reclaim(t, &res) != DM_OK)
			cfail("reclaimer: %s", dm_tree_error(t));
		usleep(2000);
	}
	dm_tree_get_counters(t, &ctr);
	sh->reclaimed = ctr.leaves_reclaimed;
	_exit(0);
}

/* Full scans, both directions: ordered, no duplicate, every stable entry there. */
static void
scanner(const dm_tree_name *tn, int s, int replica)
{
	dm_client  *c = connect_client(DM_BACKEND_SHM, DM_CLIENT_TEAR, "scanner");
	dm_tree    *t = NULL;
	dm_counters cc;

	if (c == NULL || dm_tree_open_existing(c, 1, tn, &t) != DM_OK)
	{
		cfail("scanner: open");
		_exit(1);
	}
	dm_client_reset_counters(c);
	for (int n = 0; !sh->stop && !sh->failed; n++)
	{
		int			bw = (n + s) & 1;
		dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, bw};
		dm_iter    *it;
		dm_entry	e,
					prev = {0, 0};
		uint64_t	stable = 0;
		int			have = 0,
					rc;

		if (dm_iter_open(t, &r, &it) != DM_OK)
		{
			cfail("scanner: open iterator: %s", dm_tree_error(t));
			break;
		}
		while ((rc = dm_iter_next(it, &e)) == 1)
		{
			if (have && (bw ? dm_entry_cmp(e, prev) >= 0 : dm_entry_cmp(e, prev) <= 0))
			{
				cfail("scanner: %s scan: %s after %s", bw ? "backward" : "forward", E(e), E(prev));
				break;
			}
			have = 1;
			/* e's suffix is the iterator's until its next call: prev keeps the interned one */
			if (!tk_own(e, &prev))
			{
				cfail("scanner: %s scan returned %s, whose key bytes are no test key's", bw ? "backward" : "forward",
					  E(e));
				break;
			}
			stable += is_stable(tk_key(e)) && e.tid == tk_key(e);
			/* a slow cursor now and then: its leaf copy and links age */
			if ((stable & 127) == 0 && (n & 3) == 0)
				usleep(200);
		}
		dm_iter_close(it);
		if (rc < 0)
		{
			cfail("scanner: scan failed: %s", dm_tree_error(t));
			break;
		}
		if (stable != (uint64_t) NSTABLE)
		{
			cfail("scanner: %s scan saw %" PRIu64 " stable entries of %d", bw ? "backward" : "forward", stable,
				  NSTABLE);
			break;
		}
		__sync_fetch_and_add(&sh->scans, 1);
		/* and lookups of stable keys */
		for (int k = 0; k < 20; k++)
		{
			uint64_t	key = rnd_below(BANDS) * BAND + rnd_below(STABLE_SPAN / STABLE_STEP + 1) * STABLE_STEP;
			uint64_t	tids[4];
			int			cnt = 0;

			if (tk_lookup(t, key, tids, 4, &cnt) != DM_OK || cnt != 1)
			{
				cfail("scanner: lookup of stable key %" PRIu64 " found %d", key, cnt);
				break;
			}
		}
	}
	if (replica)
	{
		dm_client_counters(c, 1, &cc);
		sh->replica_writes = cc.ops[DM_OP_WRITE] + cc.ops[DM_OP_CAS] + cc.ops[DM_OP_FAA];
	}
	_exit(0);
}

static void
test_concurrent(void)
{
	const char *name = "reclaim-concurrent";
	dm_client  *c = connect_client(DM_BACKEND_SHM, 0, name);
	dm_tree_name tn;
	dm_tree    *t;
	model		m = {0};
	pid_t		pids[BANDS + 3];
	int			np = 0,
				bad = 0,
				rounds = 4 * g_scale / 100 + 2;

	if (c == NULL || (t = make_tree(c, name, 256, &tn)) == NULL)
		return;
	memset(sh, 0, sizeof(*sh));
	for (int w = 0; w < BANDS; w++)
		insert_keys(t, &m, (uint64_t) w * BAND, (uint64_t) w * BAND + STABLE_SPAN, STABLE_STEP, 0);
	tree_matches_model(t, &m, 1, "concurrent: stable entries");
	for (int w = 0; w < BANDS; w++)
		if ((pids[np++] = fork()) == 0)
			writer(&tn, w, rounds);
	if ((pids[np++] = fork()) == 0)
		reclaimer(&tn);
	if ((pids[np++] = fork()) == 0)
		scanner(&tn, 0, 0);
	if ((pids[np++] = fork()) == 0)
		scanner(&tn, 1, 1);
	for (int i = 0; i < BANDS; i++)
		bad += wait_pid_deadline(pids[i], now_ns() + UINT64_C(240) * 1000000000) != 0;
	sh->stop = 1;
	for (int i = BANDS; i < np; i++)
		bad += wait_pid_deadline(pids[i], now_ns() + UINT64_C(60) * 1000000000) != 0;
	if (!CHECK(bad == 0 && !sh->failed, "concurrent: %d writers, a reclaimer, 2 scanners (tear mode): %s", BANDS,
			   sh->failed ? sh->msg : "no error"))
		tap_diag("failed: %s", sh->msg);
	tap_diag("concurrent: %" PRIu64 " full scans, %" PRIu64 " leaves reclaimed, %" PRIu64 " nodes reused",
			 sh->scans, sh->reclaimed, sh->reused);
	CHECK(sh->scans > 0 && sh->reclaimed > 0 && sh->reused > 0,
		  "concurrent: scans ran (%" PRIu64 ") while leaves were reclaimed (%" PRIu64 ") and reused (%" PRIu64 ")",
		  sh->scans, sh->reclaimed, sh->reused);
	CHECK(sh->replica_writes == 0, "concurrent: the replica-style scanner wrote nothing (%" PRIu64 " writes/CAS/FAA)",
		  sh->replica_writes);
	/* exact contents: stable entries plus what each writer kept */
	for (int w = 0; w < BANDS; w++)
	{
		char		path[128];
		FILE	   *f;
		uint64_t	k,
					tid;

		snprintf(path, sizeof(path), "/tmp/reclaim-test-%d-%d", (int) getpid(), w);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		while (fscanf(f, "%" SCNu64 " %" SCNu64, &k, &tid) == 2)
			m_insert(&m, tk(k, tid));
		fclose(f);
		unlink(path);
	}
	tree_matches_model(t, &m, 1, "concurrent: afterwards");
	{
		dm_reclaim_result res;

		CHECK_STATUS(dm_tree_reclaim(t, &res), DM_OK, "concurrent: a last reclaim pass");
		tree_matches_model(t, &m, 1, "concurrent: after the last pass");
	}
	dm_tree_destroy(t);
	m_free(&m);
	dm_client_destroy(c);
}

/* ---- 4. faults in the middle of an unlink ---------------------------------------- */

/*
 * A tree of 256-byte nodes (10 entries a leaf) with keys 0..79 (step 1),
 * then keys [30, 60) deleted: a few empty leaves between full ones.
 */
static dm_tree *
fault_setup(const transport *tr, dm_client *c, const char *name, dm_tree_name *tn, model *m)
{
	dm_tree    *t;

	g_quiet = 1;
	t = make_tree(c, name, 256, tn);
	g_quiet = 0;
	if (t == NULL)
		return NULL;
	m->n = 0;
	if (!insert_keys(t, m, 0, 80, 1, 0) || !delete_range(t, m, 30, 60))
	{
		dm_tree_destroy(t);
		return NULL;
	}
	return t;
}

/*
 * Child: one reclaim pass with the fault armed; with a cache (shared with
 * the parent, which checks it afterwards) warmed with every node first.
 */
static void
faulty_reclaim(const transport *tr, const dm_tree_name *tn, const dm_fault *f, uint64_t *steps, dm_cache *cache)
{
	dm_client  *c = connect_client(tr->backend, 0, "faulty reclaimer");
	dm_tree    *t = NULL;
	dm_reclaim_result res;
	uint64_t	s0;

	if (c == NULL || dm_tree_open_existing(c, 1, tn, &t) != DM_OK ||
		(cache && dm_tree_use_cache(t, cache, 0) != DM_OK))
		_exit(1);
	for (uint64_t k = 0; cache && k < 80; k++)
	{
		int			found;

		(void) dm_tree_contains(t, tk(k, k), &found);
	}
	s0 = dm_client_steps(c);
	dm_client_set_fault(c, f);
	(void) dm_tree_reclaim(t, &res);
	*steps = dm_client_steps(c) - s0;
	while (wait(NULL) > 0 || errno == EINTR)
		;
	_exit(0);
}

static void
test_faults(const transport *tr)
{
	char		name[64];
	dm_client  *c = connect_client(tr->backend, 0, "faults");
	dm_tree_name tn;
	model		m = {0};
	uint64_t	nsteps = 0;
	int			runs = 0,
				bad = 0,
				stride = getenv("RECLAIM_FAULT_STRIDE") ? atoi(getenv("RECLAIM_FAULT_STRIDE")) : 2;
	uint64_t	half_dead = 0,
				finished = 0;
	uint64_t   *steps = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct
	{
		const char *name;
		dm_fault_action action;
		int			ms;
		int			cached;		/* through a compute-side cache (checked afterwards) */
	}			faults[] = {
		{"fail", DM_FAULT_FAIL, 0, 0},
		{"kill", DM_FAULT_KILL, 0, 0},
		{"late", DM_FAULT_LATE, 50, 0},
		{"kill-mid", DM_FAULT_KILL_MID, 0, 0},
		{"fail+cache", DM_FAULT_FAIL, 0, 1},
		{"late+cache", DM_FAULT_LATE, 50, 1},
	};
	dm_cache_config ccfg = {256, 256, DM_CACHE_DEX, 1000, 0};
	size_t		clen = dm_cache_shmem_size(&ccfg);
	void	   *cmem = mmap(NULL, clen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (!CHECK(c != NULL && steps != MAP_FAILED && cmem != MAP_FAILED, "%s: faults: connect", tr->name))
		return;
	/* how many steps a pass takes without a fault */
	snprintf(name, sizeof(name), "reclaim-faults-%s", tr->name);
	{
		dm_tree    *t = fault_setup(tr, c, name, &tn, &m);
		pid_t		p;

		if (t == NULL)
			return;
		dm_tree_close(t);
		*steps = 0;
		if ((p = fork()) == 0)
			faulty_reclaim(tr, &tn, NULL, steps, NULL);
		wait_pid_deadline(p, now_ns() + UINT64_C(60) * 1000000000);
		nsteps = *steps;
	}
	tap_diag("%s: a reclaim pass of this tree takes %" PRIu64 " steps", tr->name, nsteps);
	for (size_t fi = 0; fi < sizeof(faults) / sizeof(faults[0]); fi++)
	{
		/* kill-mid: every few words of the step's writes (shm); over tcp it is KILL */
		int			wmax = faults[fi].action == DM_FAULT_KILL_MID && tr->backend == DM_BACKEND_SHM ? 2 : 1;

		for (uint64_t at = 1; at <= nsteps; at++)
			for (int wi = 0; wi < wmax; wi++)
			{
				dm_fault	f = {faults[fi].action, at, faults[fi].ms, (uint32_t) (1 + wi * 7)};
				dm_tree    *t;
				dm_cache   *cache;
				char		msg[512] = "";
				uint64_t	cnt = 0;
				pid_t		p;
				int			ok = 1;
				dm_reclaim_result res;
				dm_tree_stats st;

				/* late and kill-mid at every stride-th step (RECLAIM_FAULT_STRIDE, default 2) */
				if (fi >= 2 && (at % (uint64_t) stride) != 0)
					continue;
				if ((t = fault_setup(tr, c, name, &tn, &m)) == NULL)
				{
					bad++;
					continue;
				}
				runs++;
				cache = faults[fi].cached ? dm_cache_init(cmem, clen, &ccfg) : NULL;
				if ((p = fork()) == 0)
					faulty_reclaim(tr, &tn, &f, steps, cache);
				/* (it reaps its late executor itself) */
				wait_pid_deadline(p, now_ns() + UINT64_C(60) * 1000000000);
				/*
				 * A pass that failed released every frame it held, once: no
				 * frame stays locked, none is on the free list twice.
				 */
				if (cache && dm_cache_check(cache, msg, sizeof(msg)) != 0)
				{
					tap_diag("%s %s at %" PRIu64 "/%d: the cache after the failed pass: %s", tr->name,
							 faults[fi].name, at, wi, msg);
					ok = 0;
				}
				/* right after: verifies, scans equal the model */
				if (dm_tree_verify(t, &cnt, msg, sizeof(msg)) != DM_OK || cnt != m.n)
				{
					tap_diag("%s %s at %" PRIu64 "/%d: verify after the fault: %s", tr->name, faults[fi].name, at, wi, msg);
					ok = 0;
				}
				if (ok && dm_tree_stats_get(t, &st) == DM_OK)
					half_dead += st.half_dead;
				/*
				 * Writers refill the range (finishing any unlink left half
				 * done), it is emptied again and a full pass reclaims it.
				 */
				if (ok && (!insert_keys(t, &m, 30, 60, 1, 0) ||
						   dm_tree_verify(t, &cnt, msg, sizeof(msg)) != DM_OK || cnt != m.n ||
						   dm_tree_stats_get(t, &st) != DM_OK || st.half_dead != 0 ||
						   !delete_range(t, &m, 30, 60) ||
						   dm_tree_reclaim(t, &res) != DM_OK ||
						   dm_tree_verify(t, &cnt, msg, sizeof(msg)) != DM_OK || cnt != m.n))
				{
					tap_diag("%s %s at %" PRIu64 "/%d: afterwards: %s %s", tr->name, faults[fi].name, at, wi, msg,
							 dm_tree_error(t));
					ok = 0;
				}
				if (ok)
				{
					/* nothing lost, nothing back */
					for (size_t i = 0; i < m.n && ok; i++)
					{
						int			found = 0;

						if (dm_tree_contains(t, m.e[i], &found) != DM_OK || !found)
							ok = 0;
					}
					for (uint64_t k = 30; k < 60 && ok; k++)
					{
						int			found = 1;

						if ( (dm_tree_contains(t, tk(k, k), &found) != DM_OK || found))
							ok = 0;
					}
					if (!ok)
						tap_diag("%s %s at %" PRIu64 "/%d: contents differ", tr->name, faults[fi].name, at, wi);
				}
				bad += !ok;
				{
					dm_tree_counters ctr;

					dm_tree_get_counters(t, &ctr);
					finished += ctr.unlinks_finished;
				}
				dm_tree_destroy(t);
			}
	}
	CHECK(bad == 0 && runs > 0, "%s: faults: %d runs (fail, kill at each of %" PRIu64 " steps; late, kill-mid, "
		  "and fail and late through a cache at every %d%s), %d bad", tr->name, runs, nsteps, stride > 1 ? stride : 1, stride > 1 ? "th" : "", bad);
	tap_diag("%s: faults left %" PRIu64 " half-dead leaves; writers finished %" PRIu64 " unlinks",
			 tr->name, half_dead, finished);
	CHECK(half_dead > 0 && finished > 0, "%s: some faults left an unlink half done (%" PRIu64 ") and writers finished them (%" PRIu64 ")",
		  tr->name, half_dead, finished);
	m_free(&m);
	munmap(steps, 4096);
	dm_client_destroy(c);
}

/* ---- 5. fences ------------------------------------------------------------------ */

/*
 * VAR leaves keep their fences as byte strings: an empty leaf B's left
 * neighbour A may have no room for B's high fence when it is longer than
 * A's own (a short separator between two groups of keys, then a long one
 * inside a group, as two-column keys give).  The pass once marked B dead
 * first and then failed ("a leaf cannot take its dead neighbour's fence"),
 * and every writer that reached B failed the same way: the range took no
 * write any more.  Keys of 20 bytes (the most 256-byte nodes take): a
 * group word, then eleven equal bytes and a counter byte; groups of 1..40 keys in random order in 256-byte
 * nodes; then rounds of: a run of keys from a group's first deleted
 * (sorted, as VACUUM does),
 * reclaim (must succeed), the run inserted again (must succeed).
 */
#define FENCE_KEYS 3000
#define FENCE_LEN 20				/* the longest key of 256-byte nodes */
static uint8_t fence_bytes[FENCE_KEYS][FENCE_LEN];

static void
test_fences(const transport *tr)
{
	char		name[64];
	dm_client  *c = connect_client(tr->backend, 0, "fences");
	dm_tree_name tn;
	dm_tree    *t = NULL;
	dm_tree_opts o;
	model		m = {0};
	dm_entry   *e = malloc(sizeof(dm_entry) * FENCE_KEYS);
	int			n = 0,
				bad_reclaims = 0,
				bad_writes = 0,
				rounds = 120 * g_scale / 100 + 30;
	uint64_t	reclaimed = 0;

	snprintf(name, sizeof(name), "reclaim-fences-%s", tr->name);
	if (!CHECK(c != NULL && e != NULL, "%s: connect", name))
		goto out;
	memset(&o, 0, sizeof(o));
	o.node_size = 256;
	o.key_format = DM_KEY_VAR;
	o.lock_timeout_ms = LOCK_TIMEOUT_MS;
	dm_tree_name_named(&tn, name);
	dm_tree_drop(c, 1, &tn, NULL);
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &o, &t), DM_OK, "%s: create a VAR tree of 256-byte nodes", name))
		goto out;
	rng_seed_label(g_seed, name, 0);
	for (uint32_t group = 1; n < FENCE_KEYS; group++)
	{
		int			size = 1 + (int) rnd_below(40);

		for (int i = 0; i < size && n < FENCE_KEYS; i++, n++)
		{
			for (int b = 0; b < 8; b++)
				fence_bytes[n][b] = (uint8_t) ((0x4700000000000000ull | group) >> (56 - 8 * b));
			memset(fence_bytes[n] + 8, 'c', FENCE_LEN - 9);
			fence_bytes[n][FENCE_LEN - 1] = (uint8_t) (1 + i);
			e[n] = dm_entry_from_bytes(fence_bytes[n], FENCE_LEN, (uint64_t) n + 1);
		}
	}
	/* random order: leaves split where they fill, some left full */
	for (int i = 0; i < n; i++)
	{
		int			j = (int) rnd_below((uint64_t) (n - i)) + i;
		dm_entry	x = e[i];

		e[i] = e[j];
		e[j] = x;
	}
	for (int i = 0; i < n; i++)
		if (dm_tree_insert(t, e[i], NULL) == DM_OK)
			m_insert(&m, e[i]);
	CHECK(m.n == (size_t) n, "%s: %d keys inserted", name, n);
	for (int r = 0; r < rounds; r++)
	{
		size_t		from = rnd_below(m.n),
					len = 5 + rnd_below(30);
		dm_entry	run[40];
		int			changed = 0;
		dm_reclaim_result res;

		/* from a group's first key: an emptied leaf then often starts there */
		while (from > 0 && m.e[from - 1].key == m.e[from].key)
			from--;
		len = from + len > m.n ? m.n - from : len;
		memcpy(run, m.e + from, sizeof(dm_entry) * len);
		if (dm_tree_delete_sorted(t, run, (int) len, &changed) != DM_OK || changed != (int) len)
		{
			tap_diag("%s round %d: delete: %s", name, r, dm_tree_error(t));
			bad_writes++;
			break;
		}
		for (size_t i = 0; i < len; i++)
			m_delete(&m, run[i]);
		if (dm_tree_reclaim(t, &res) != DM_OK)
		{
			if (bad_reclaims++ == 0)
				tap_diag("%s round %d: reclaim: %s", name, r, dm_tree_error(t));
		}
		else
			reclaimed += res.leaves_reclaimed;
		if (dm_tree_insert_sorted(t, run, (int) len, NULL) != DM_OK)
		{
			if (bad_writes++ == 0)
				tap_diag("%s round %d: reinsert: %s", name, r, dm_tree_error(t));
			continue;
		}
		for (size_t i = 0; i < len; i++)
			m_insert(&m, run[i]);
	}
	CHECK(bad_reclaims == 0 && bad_writes == 0 && reclaimed > 0,
		  "%s: %d rounds: every reclaim pass and every write succeeded (%" PRIu64 " leaves reclaimed; "
		  "%d failed passes, %d failed writes)", name, rounds, reclaimed, bad_reclaims, bad_writes);
	tree_matches_model(t, &m, 1, name);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", name);
out:
	free(e);
	m_free(&m);
	if (c)
		dm_client_destroy(c);
}

/* ---- 6. a half-dead leaf whose neighbour fills up --------------------------------- */

/*
 * The residual section 5's check left: a reclaimer killed after marking B
 * dead (step 2), before A took B's range, and then A filled up so that it
 * has no room for B's longer high fence.  The writer that reaches B must
 * then revive it (dm_tree_reclaim.c, revive_leaf) rather than fail with "a
 * leaf cannot take its dead neighbour's fence", as every write in B's range
 * did until a REINDEX.  A VAR tree of 256-byte nodes, 20-byte keys g.i (a
 * group word, eleven equal bytes, the counter i), inserted in order g = 1..4,
 * i = 1..3, has these leaves (two entries of 36 bytes each fill 168 of 256
 * bytes; a fence inside a group has 12 suffix bytes, one between groups none):
 *
 *   [1.1 1.2] [1.3 2.1] | A [2.2 2.3] high G3 | B [3.1 3.2] high 3.3 | [3.3 4.1 4.2 4.3]
 *
 * with A and B under one parent, B not its first child (checked below
 * through the pass's counts, and the sweep must leave B half-dead at least
 * once).  3.1 and 3.2 are deleted (B empty; A takes B's fence: 184 + 12
 * bytes), and a reclaim pass is killed at each of its steps.  Then 2.4 and
 * 2.5 go into A (4 entries: 252 bytes, no split, no room for 12 more), and a
 * write in B's range (3.1 inserted, then deleted) must succeed; the tree
 * verifies, every entry is found, a pass succeeds (B's right neighbour
 * emptied too: the pass must not trip over a revived B, which no parent
 * lists; the emptied neighbour stays then, its left sibling in the parent
 * being A, which does not link it), and writes go on.
 */
#define REVIVE_GROUPS 4
#define REVIVE_PER 6				/* counters 1..6: 4 and 5 fill A, 6 is written at the end */
static uint8_t revive_bytes[REVIVE_GROUPS + 1][REVIVE_PER + 1][FENCE_LEN];

static dm_entry
rk(int g, int i)
{
	uint8_t    *b = revive_bytes[g][i];

	for (int x = 0; x < 8; x++)
		b[x] = (uint8_t) ((0x4700000000000000ull | (uint64_t) g) >> (56 - 8 * x));
	memset(b + 8, 'c', FENCE_LEN - 9);
	b[FENCE_LEN - 1] = (uint8_t) i;
	return dm_entry_from_bytes(b, FENCE_LEN, (uint64_t) (g * 16 + i));
}

/* The tree above, B emptied (quiet; NULL on failure). */
static dm_tree *
revive_setup(dm_client *c, const char *name, dm_tree_name *tn, model *m)
{
	dm_tree_opts o;
	dm_tree    *t = NULL;

	memset(&o, 0, sizeof(o));
	o.node_size = 256;
	o.key_format = DM_KEY_VAR;
	o.lock_timeout_ms = LOCK_TIMEOUT_MS;
	dm_tree_name_named(tn, name);
	dm_tree_drop(c, 1, tn, NULL);
	if (dm_tree_create_new(c, 1, tn, &o, &t) != DM_OK)
		return NULL;
	m->n = 0;
	for (int g = 1; g <= REVIVE_GROUPS; g++)
		for (int i = 1; i <= 3; i++)
		{
			if (dm_tree_insert(t, rk(g, i), NULL) != DM_OK)
				goto fail;
			m_insert(m, rk(g, i));
		}
	for (int i = 1; i <= 2; i++)
	{
		int			found = 0;

		if (dm_tree_delete(t, rk(3, i), &found) != DM_OK || !found)
			goto fail;
		m_delete(m, rk(3, i));
	}
	return t;
fail:
	tap_diag("%s: setup: %s", name, dm_tree_error(t));
	dm_tree_destroy(t);
	return NULL;
}

/* Every model entry found, and the tree verifies with as many; else a diagnostic and 0. */
static int
revive_contents(dm_tree *t, const model *m, const char *what)
{
	char		msg[512] = "";
	uint64_t	cnt = 0;

	if (dm_tree_verify(t, &cnt, msg, sizeof(msg)) != DM_OK || cnt != m->n)
	{
		tap_diag("%s: verify: %s (%" PRIu64 " entries of %zu)", what, msg, cnt, m->n);
		return 0;
	}
	for (size_t i = 0; i < m->n; i++)
	{
		int			found = 0;

		if (dm_tree_contains(t, m->e[i], &found) != DM_OK || !found)
		{
			tap_diag("%s: %s missing", what, E(m->e[i]));
			return 0;
		}
	}
	return 1;
}

/*
 * The tree above with a reclaim pass killed at step `at` (in a child; steps
 * its shared word), opened again, through `cache` unless NULL.  With
 * `replica`: before the pass, a read-only replica handle through `rcache`
 * (its own cache) read every entry, so its cache keeps the parent as it
 * was before the pass took B's downlink (a standby's copy: inner nodes may
 * be stale there, descents correct themselves by fences).
 */
static dm_tree *
revive_killed(const transport *tr, dm_client *c, const char *name, dm_tree_name *tn, model *m, uint64_t at,
			  uint64_t *steps, dm_cache *cache, dm_tree **replica, dm_cache *rcache)
{
	dm_fault	f = {DM_FAULT_KILL, at, 0, 0};
	dm_tree    *t = revive_setup(c, name, tn, m);
	pid_t		p;

	if (t == NULL)
		return NULL;
	dm_tree_close(t);
	if (replica)
	{
		*replica = NULL;
		if (dm_tree_open_existing(c, 1, tn, replica) != DM_OK)
			return NULL;
		dm_tree_set_replica(*replica, 1);
		if (dm_tree_use_cache(*replica, rcache, 0) != DM_OK)
			return NULL;
		for (size_t i = 0; i < m->n; i++)
		{
			int			found = 0;

			if (dm_tree_contains(*replica, m->e[i], &found) != DM_OK || !found)
				return NULL;
		}
	}
	if ((p = fork()) == 0)
		faulty_reclaim(tr, tn, &f, steps, NULL);
	wait_pid_deadline(p, now_ns() + UINT64_C(60) * 1000000000);
	if (dm_tree_open_existing(c, 1, tn, &t) != DM_OK)
		return NULL;
	if (cache && dm_tree_use_cache(t, cache, 0) != DM_OK)
	{
		dm_tree_close(t);
		return NULL;
	}
	return t;
}

/* A fills: 2.4 and 2.5, below B's low fence; 0 (with a diagnostic) if an insert fails. */
static int
revive_fill_a(dm_tree *t, model *m, const char *what)
{
	for (int i = 4; i <= 5; i++)
	{
		if (dm_tree_insert(t, rk(2, i), NULL) != DM_OK)
		{
			tap_diag("%s: insert into A: %s", what, dm_tree_error(t));
			return 0;
		}
		m_insert(m, rk(2, i));
	}
	return 1;
}

/* *half_at: the first kill step that left B half-dead (0: none) */
static void
test_revive(const transport *tr, int cached, uint64_t *half_at)
{
	char		name[64];
	dm_cache_config ccfg = {256, 256, DM_CACHE_DEX, 1000, 0};
	size_t		clen = dm_cache_shmem_size(&ccfg);
	void	   *cmem = cached ? malloc(clen + 64) : NULL;
	dm_client  *c = connect_client(tr->backend, 0, "revive");
	dm_tree_name tn;
	model		m = {0};
	uint64_t	nsteps = 0,
				revived = 0;
	uint64_t   *steps = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int			runs = 0,
				bad = 0,
				half_dead_runs = 0,
				scanned = 0;

	snprintf(name, sizeof(name), "reclaim-revive-%s%s", tr->name, cached ? "+cache" : "");
	if (!CHECK(c != NULL && steps != MAP_FAILED && (!cached || cmem != NULL), "%s: connect", name))
		goto out;
	/* an unfaulted pass: B goes (so A and B share a parent), in how many steps */
	{
		dm_tree    *t = revive_setup(c, name, &tn, &m);
		dm_tree_stats st = {0};
		pid_t		p;

		if (!CHECK(t != NULL, "%s: setup", name))
			goto out;
		dm_tree_close(t);
		*steps = 0;
		if ((p = fork()) == 0)
			faulty_reclaim(tr, &tn, NULL, steps, NULL);
		wait_pid_deadline(p, now_ns() + UINT64_C(60) * 1000000000);
		nsteps = *steps;
		if (dm_tree_open_existing(c, 1, &tn, &t) == DM_OK)
		{
			(void) dm_tree_stats_get(t, &st);
			dm_tree_destroy(t);
		}
		CHECK(nsteps > 0 && st.nodes[0] == 4 && st.free_nodes == 1,
			  "%s: a pass (%" PRIu64 " steps) takes B: 4 leaves left (%" PRIu64 "), 1 free node (%" PRIu64 ")",
			  name, nsteps, st.nodes[0], st.free_nodes);
	}
	for (uint64_t at = 1; at <= nsteps; at++)
	{
		dm_tree    *t;
		dm_tree_stats st;
		dm_tree_counters ctr;
		dm_reclaim_result res;
		uint64_t	leaves;
		char		what[128];
		int			ok = 1,
					half = 0,
					found = 0;

		snprintf(what, sizeof(what), "%s: killed at step %" PRIu64, name, at);
		runs++;
		/* the writes afterwards through a cache of leaves too (A written through its frame), or not */
		if ((t = revive_killed(tr, c, name, &tn, &m, at, steps,
							   cached ? dm_cache_init((void *) (((uintptr_t) cmem + 63) & ~(uintptr_t) 63), clen, &ccfg)
							   : NULL, NULL, NULL)) == NULL)
		{
			bad++;
			continue;
		}
		if (dm_tree_stats_get(t, &st) != DM_OK)
			ok = 0;
		half = ok && st.half_dead > 0;
		half_dead_runs += half;
		if (half && *half_at == 0)
			*half_at = at;
		leaves = st.nodes[0];
		if (ok && !revive_fill_a(t, &m, what))
			ok = 0;
		if (ok && half && (dm_tree_stats_get(t, &st) != DM_OK || st.nodes[0] != leaves || st.half_dead == 0))
		{
			tap_diag("%s: A split, or B is no longer half-dead (%" PRIu64 " leaves, were %" PRIu64 ")", what,
					 st.nodes[0], leaves);
			ok = 0;
		}
		/* a write in B's range, and it taken back */
		if (ok && dm_tree_insert(t, rk(3, 1), NULL) != DM_OK)
		{
			tap_diag("%s: insert into B's range: %s", what, dm_tree_error(t));
			ok = 0;
		}
		if (ok)
			m_insert(&m, rk(3, 1));
		if (ok && !revive_contents(t, &m, what))
			ok = 0;
		if (ok && half && !scanned++)
			ok = tree_matches_model(t, &m, 1, what);
		if (ok && (dm_tree_delete(t, rk(3, 1), &found) != DM_OK || !found))
		{
			tap_diag("%s: delete in B's range: %s", what, dm_tree_error(t));
			ok = 0;
		}
		if (ok)
			m_delete(&m, rk(3, 1));
		/* B's right neighbour [3.3 4.1 4.2 4.3] emptied too: a pass goes through both */
		for (int k = 0; ok && k < 4; k++)
		{
			dm_entry	e = k == 0 ? rk(3, 3) : rk(4, k);

			if (dm_tree_delete(t, e, &found) != DM_OK || !found)
			{
				tap_diag("%s: delete: %s", what, dm_tree_error(t));
				ok = 0;
			}
			m_delete(&m, e);
		}
		if (ok && (dm_tree_reclaim(t, &res) != DM_OK || dm_tree_stats_get(t, &st) != DM_OK || st.half_dead != 0))
		{
			tap_diag("%s: a pass afterwards: %s (%" PRIu64 " half-dead)", what, dm_tree_error(t), st.half_dead);
			ok = 0;
		}
		/* and writes everywhere again */
		for (int g = 1; ok && g <= REVIVE_GROUPS; g++)
		{
			if (dm_tree_insert(t, rk(g, REVIVE_PER), NULL) != DM_OK)
			{
				tap_diag("%s: insert %d.%d: %s", what, g, REVIVE_PER, dm_tree_error(t));
				ok = 0;
			}
			m_insert(&m, rk(g, REVIVE_PER));
		}
		if (ok && !revive_contents(t, &m, what))
			ok = 0;
		dm_tree_get_counters(t, &ctr);
		revived += ctr.dead_leaves_revived;
		bad += !ok;
		dm_tree_destroy(t);
	}
	tap_diag("%s: %d runs, %d left B half-dead, %" PRIu64 " leaves revived", name, runs, half_dead_runs, revived);
	CHECK(bad == 0 && runs > 0 && half_dead_runs > 0,
		  "%s: a reclaimer killed at each of %" PRIu64 " steps (%d of them leaving B half-dead), A filled: "
		  "writes in B's range, a pass and the contents are right in every run (%d bad)",
		  name, nsteps, half_dead_runs, bad);
	CHECK(revived > 0 && revived <= (uint64_t) half_dead_runs,
		  "%s: the writers revived B (%" PRIu64 " times in %d half-dead runs)", name, revived, half_dead_runs);
out:
	free(cmem);
	m_free(&m);
	if (steps != MAP_FAILED)
		munmap(steps, 4096);
	if (c)
		dm_client_destroy(c);
}

/*
 * The reviver stalled.  A writer that found B dead and A full stalls past
 * lock_timeout at a step of its insert in B's range (SLEEP, at each step in
 * turn) while another takes A's lock over, empties A again (2.4, 2.5 gone:
 * now A has room) and writes 3.2: that finishes the unlink, and A covers
 * [L, H).  If the stalled writer had locked A and B and checked B, its
 * revival must land nothing (B is written only in A's batch, after A's
 * guard: a B written under B's own guard would come back live with no live
 * leaf linking it): its insert is redone, into A.  In every run the
 * contents are right and no half-dead leaf is left; in some, the writer's
 * revival was fenced off (no revival, a fenced write) while the other
 * finished the unlink.
 */
#define REVIVE_STALL_MS (4 * LOCK_TIMEOUT_MS)	/* the other writer is done after about 1.5 lock_timeouts: room for a loaded machine */

/* Child: insert 3.1 with the stall armed at step `at` (0: none); out: ok, steps, revived, fenced writes. */
static void
stalled_writer(const transport *tr, const dm_tree_name *tn, uint64_t at, uint64_t *out)
{
	dm_client  *c = connect_client(tr->backend, 0, "stalled writer");
	dm_tree    *t = NULL;
	dm_fault	f = {DM_FAULT_SLEEP, at, REVIVE_STALL_MS, 0};
	dm_tree_counters ctr;
	uint64_t	s0;

	if (c == NULL || dm_tree_open_existing(c, 1, tn, &t) != DM_OK)
		_exit(1);
	s0 = dm_client_steps(c);
	if (at > 0)
		dm_client_set_fault(c, &f);
	out[0] = dm_tree_insert(t, rk(3, 1), NULL) == DM_OK;
	out[1] = dm_client_steps(c) - s0;
	dm_tree_get_counters(t, &ctr);
	out[2] = ctr.dead_leaves_revived;
	out[3] = ctr.fenced_writes;
	_exit(0);
}

static void
test_revive_stall(const transport *tr, uint64_t half_at)
{
	char		name[64];
	dm_client  *c = connect_client(tr->backend, 0, "revive-stall");
	dm_tree_name tn;
	model		m = {0};
	uint64_t   *sh_words = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t   *out = sh_words + 8;
	uint64_t	nsteps = 0;
	int			runs = 0,
				bad = 0,
				fenced_off = 0;
	/* the replica's own cache (a standby's), where the parent stays as it was before the pass */
	dm_cache_config rcfg = {256, 256, DM_CACHE_DEX, 1000, 0};
	size_t		rlen = dm_cache_shmem_size(&rcfg);
	void	   *rmem = malloc(rlen + 64);

	snprintf(name, sizeof(name), "reclaim-revive-stall-%s", tr->name);
	if (!CHECK(c != NULL && sh_words != MAP_FAILED && half_at > 0 && rmem != NULL,
			   "%s: connect (B half-dead after a kill at step %" PRIu64 ")", name, half_at))
		goto out;
	for (uint64_t at = 0; at == 0 || at <= nsteps; at++)
	{
		dm_tree    *t,
				   *rt = NULL;
		dm_tree_stats st;
		dm_tree_counters ctr;
		dm_reclaim_result res;
		char		what[128];
		int			ok = 1,
					found = 0;
		pid_t		p;

		snprintf(what, sizeof(what), "%s: stalled at step %" PRIu64, name, at);
		runs++;
		if ((t = revive_killed(tr, c, name, &tn, &m, half_at, sh_words, NULL, &rt,
							   dm_cache_init((void *) (((uintptr_t) rmem + 63) & ~(uintptr_t) 63), rlen, &rcfg))) == NULL ||
			dm_tree_stats_get(t, &st) != DM_OK || st.half_dead != 1 || !revive_fill_a(t, &m, what))
		{
			tap_diag("%s: no half-dead leaf with a full left neighbour", what);
			bad++;
			if (t)
				dm_tree_destroy(t);
			if (rt)
				dm_tree_close(rt);
			continue;
		}
		memset(out, 0, 4 * sizeof(uint64_t));
		if ((p = fork()) == 0)
			stalled_writer(tr, &tn, at, out);
		if (at == 0)
			wait_pid_deadline(p, now_ns() + UINT64_C(60) * 1000000000);
		else
			usleep(LOCK_TIMEOUT_MS * 1000 / 3);
		/* A emptied again (its lock taken over if the writer holds it), then a write in B's range */
		for (int i = 4; ok && i <= 5; i++)
		{
			if (dm_tree_delete(t, rk(2, i), &found) != DM_OK || !found)
			{
				tap_diag("%s: delete from A: %s", what, dm_tree_error(t));
				ok = 0;
			}
			m_delete(&m, rk(2, i));
		}
		if (ok && dm_tree_insert(t, rk(3, 2), NULL) != DM_OK)
		{
			tap_diag("%s: insert 3.2: %s", what, dm_tree_error(t));
			ok = 0;
		}
		m_insert(&m, rk(3, 2));
		if (at > 0)
			wait_pid_deadline(p, now_ns() + UINT64_C(60) * 1000000000);
		if (at == 0)
			nsteps = out[1];
		if (!out[0])
		{
			tap_diag("%s: the stalled writer's insert of 3.1 failed", what);
			ok = 0;
		}
		m_insert(&m, rk(3, 1));
		dm_tree_get_counters(t, &ctr);
		if (out[2] == 0 && out[3] > 0 && ctr.unlinks_finished > 0)
			fenced_off++;
		/*
		 * The replica's lookups descend through its copy of the parent from
		 * before the pass, which still lists B: a B brought back although
		 * A took its range would be taken for the leaf of 3.1 and 3.2.
		 */
		for (int i = 1; ok && i <= 2; i++)
		{
			found = 0;
			if (dm_tree_contains(rt, rk(3, i), &found) != DM_OK || !found)
			{
				tap_diag("%s: the replica does not find 3.%d: %s", what, i, dm_tree_error(rt));
				ok = 0;
			}
		}
		if (ok && (!revive_contents(t, &m, what) || dm_tree_stats_get(t, &st) != DM_OK || st.half_dead != 0 ||
				   dm_tree_reclaim(t, &res) != DM_OK || !revive_contents(t, &m, what)))
		{
			tap_diag("%s: afterwards: %s (%" PRIu64 " half-dead)", what, dm_tree_error(t), st.half_dead);
			ok = 0;
		}
		bad += !ok;
		dm_tree_close(rt);
		dm_tree_destroy(t);
	}
	tap_diag("%s: %d runs; in %d the stalled writer's revival was fenced off while another finished the unlink",
			 name, runs, fenced_off);
	CHECK(bad == 0 && nsteps > 0, "%s: a writer stalled at each of %" PRIu64 " steps of its insert in B's range while "
		  "another empties A and writes there: every write succeeds, contents right (%d bad)", name, nsteps, bad);
	CHECK(fenced_off > 0, "%s: some stalled revival was fenced off by A's guard while the other writer finished the "
		  "unlink (%d runs)", name, fenced_off);
out:
	free(rmem);
	m_free(&m);
	if (sh_words != MAP_FAILED)
		munmap(sh_words, 4096);
	if (c)
		dm_client_destroy(c);
}

/* ---- 7. the reviver killed between two stored words ------------------------------ */

/*
 * The reviver killed in the middle of its writes over shm (a tcp batch
 * executes whole: there the kill is section 6's).  Its batch stores A's
 * image and B's record in its redo slot, then A's guard, B's words (lock
 * and DIRTY version, body, clean version), A's; whoever takes its locks
 * over repairs A, and B first if B's words were begun (dm_tree_redo.c,
 * repair_second), or finds B untouched and dead.  B must never stay
 * half-revived: first the writer is killed right after each step of its
 * insert in B's range (the first step after which B is live is the
 * revival's batch), then after each stored word of that batch.  In every
 * run the next write in B's range succeeds, no leaf is half-dead, the tree
 * verifies, scans both ways and lookups equal the model (with 3.1, the
 * killed insert, if it landed: a repair finishes a write that was under
 * way), and a pass succeeds.
 */
static void
torn_writer(const transport *tr, const dm_tree_name *tn, uint64_t at, uint32_t words)
{
	dm_client  *c = connect_client(tr->backend, 0, "torn writer");
	dm_tree    *t = NULL;
	dm_fault	f = {DM_FAULT_KILL_MID, at, 0, words};

	if (c == NULL || dm_tree_open_existing(c, 1, tn, &t) != DM_OK)
		_exit(1);
	dm_client_set_fault(c, &f);
	(void) dm_tree_insert(t, rk(3, 1), NULL);
	_exit(0);
}

/* Both scan directions equal the model, quietly (a diagnostic and 0 if not). */
static int
revive_scans(dm_tree *t, const model *m, const char *what)
{
	for (int bw = 0; bw < 2; bw++)
	{
		dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, bw};
		dm_iter    *it;
		dm_entry	e;
		size_t		i = 0;
		int			rc;

		if (dm_iter_open(t, &r, &it) != DM_OK)
		{
			tap_diag("%s: scan: %s", what, dm_tree_error(t));
			return 0;
		}
		while ((rc = dm_iter_next(it, &e)) == 1)
		{
			if (i >= m->n || dm_entry_cmp(e, m->e[bw ? m->n - 1 - i : i]) != 0)
			{
				tap_diag("%s: %s scan: entry %zu is %s", what, bw ? "backward" : "forward", i, E(e));
				dm_iter_close(it);
				return 0;
			}
			i++;
		}
		dm_iter_close(it);
		if (rc != 0 || i != m->n)
		{
			tap_diag("%s: %s scan: rc %d, %zu entries of %zu", what, bw ? "backward" : "forward", rc, i, m->n);
			return 0;
		}
	}
	return 1;
}

/*
 * One run: B half-dead, A full, the writer of 3.1 killed at step `at` after
 * `words` stored words.  1 if everything is right afterwards; *live: B was
 * live right after the kill (once whatever it left torn was repaired).
 */
static int
torn_run(const transport *tr, dm_client *c, const char *name, uint64_t half_at, uint64_t at, uint32_t words,
		 uint64_t *scratch, int *live)
{
	dm_tree_name tn;
	model		m = {0};
	dm_tree    *t;
	dm_tree_stats st;
	dm_reclaim_result res;
	char		what[128];
	int			ok = 1,
				found = 0;
	pid_t		p;

	*live = 0;
	snprintf(what, sizeof(what), "%s: killed at step %" PRIu64 " after %u words", name, at, words);
	if ((t = revive_killed(tr, c, name, &tn, &m, half_at, scratch, NULL, NULL, NULL)) == NULL ||
		dm_tree_stats_get(t, &st) != DM_OK || st.half_dead != 1 || !revive_fill_a(t, &m, what))
	{
		tap_diag("%s: no half-dead leaf with a full left neighbour", what);
		if (t)
			dm_tree_destroy(t);
		m_free(&m);
		return 0;
	}
	if ((p = fork()) == 0)
		torn_writer(tr, &tn, at, words);
	wait_pid_deadline(p, now_ns() + UINT64_C(60) * 1000000000);
	/* the walk reads every node: one left mid-write is repaired by the read's lock takeover */
	if (dm_tree_stats_get(t, &st) != DM_OK)
	{
		tap_diag("%s: stats: %s", what, dm_tree_error(t));
		ok = 0;
	}
	*live = ok && st.half_dead == 0;
	if (ok && dm_tree_contains(t, rk(3, 1), &found) != DM_OK)
		ok = 0;
	if (ok && found)
		m_insert(&m, rk(3, 1));
	if (ok && dm_tree_insert(t, rk(3, 2), NULL) != DM_OK)
	{
		tap_diag("%s: insert 3.2: %s", what, dm_tree_error(t));
		ok = 0;
	}
	if (ok)
		m_insert(&m, rk(3, 2));
	if (ok && (dm_tree_stats_get(t, &st) != DM_OK || st.half_dead != 0))
	{
		tap_diag("%s: a half-dead leaf after a write in its range", what);
		ok = 0;
	}
	if (ok && (!revive_contents(t, &m, what) || !revive_scans(t, &m, what)))
		ok = 0;
	if (ok && (dm_tree_reclaim(t, &res) != DM_OK || !revive_contents(t, &m, what)))
	{
		tap_diag("%s: a pass afterwards: %s", what, dm_tree_error(t));
		ok = 0;
	}
	dm_tree_destroy(t);
	m_free(&m);
	return ok;
}

/*
 * The default word stride: ~15 runs, ~12 s on an idle 2-core machine (CI).
 * RECLAIM_TORN_STRIDE=1 kills after every step and every word: ~117 runs,
 * ~95 s.
 */
#define TORN_STRIDE 10

static void
test_revive_torn(const transport *tr, uint64_t half_at)
{
	char		name[64];
	dm_client  *c;
	uint64_t   *sh_words;
	uint64_t	nsteps = 0,
				rs = 0;
	int			runs = 0,
				bad = 0,
				live = 0,
				dead_runs = 0,
				live_runs = 0,
				stride = getenv("RECLAIM_TORN_STRIDE") ? atoi(getenv("RECLAIM_TORN_STRIDE")) : TORN_STRIDE;
	uint64_t	t0 = now_ns();

	if (tr->backend != DM_BACKEND_SHM)
		return;
	if (stride < 1)
		stride = 1;
	snprintf(name, sizeof(name), "reclaim-revive-torn-%s", tr->name);
	c = connect_client(tr->backend, 0, "revive-torn");
	sh_words = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!CHECK(c != NULL && sh_words != MAP_FAILED && half_at > 0, "%s: connect", name))
		goto out;
	/* the insert's steps, unfaulted (it revives B) */
	{
		dm_tree_name tn;
		model		m = {0};
		dm_tree    *t = revive_killed(tr, c, name, &tn, &m, half_at, sh_words, NULL, NULL, NULL);
		uint64_t   *o = sh_words + 8;
		pid_t		p;

		if (t != NULL && revive_fill_a(t, &m, name))
		{
			memset(o, 0, 4 * sizeof(uint64_t));
			if ((p = fork()) == 0)
				stalled_writer(tr, &tn, 0, o);
			wait_pid_deadline(p, now_ns() + UINT64_C(60) * 1000000000);
			nsteps = o[0] && o[2] == 1 ? o[1] : 0;
		}
		if (t)
			dm_tree_destroy(t);
		m_free(&m);
	}
	if (!CHECK(nsteps > 0, "%s: the unfaulted insert revives B (%" PRIu64 " steps)", name, nsteps))
		goto out;
	if (stride == 1)
	{
		/* killed right after each step (more words than any batch stores) */
		for (uint64_t at = 1; at <= nsteps; at++)
		{
			runs++;
			bad += !torn_run(tr, c, name, half_at, at, UINT32_C(1) << 20, sh_words, &live);
			if (live && rs == 0)
				rs = at;
		}
	}
	else
	{
		/*
		 * The short form: B is live after a kill right after step `at` iff
		 * `at` is the revival's batch or later, so a binary search finds
		 * that step in ~log2(nsteps) runs, each checked as above.
		 */
		uint64_t	lo = 1,
					hi = nsteps + 1;

		while (lo < hi)
		{
			uint64_t	mid = lo + (hi - lo) / 2;

			runs++;
			bad += !torn_run(tr, c, name, half_at, mid, UINT32_C(1) << 20, sh_words, &live);
			if (live)
				hi = mid;
			else
				lo = mid + 1;
		}
		rs = lo <= nsteps ? lo : 0;
	}
	if (!CHECK(rs > 0, "%s: killed right after step %" PRIu64 " of %" PRIu64 ", B is live: the revival's batch", name,
			   rs, nsteps))
		goto out;
	/*
	 * Killed after each word of that batch (every stride-th:
	 * RECLAIM_TORN_STRIDE, default TORN_STRIDE; 1, the full form, also
	 * kills after every step above: B's first word is half of a 16-byte
	 * store).  With 256-byte nodes it stores about 80 words: A's image and
	 * B's record in the slot, then B's, then A's.  The first word killed
	 * at follows the seed, so that other seeds kill at other words.
	 */
	for (uint32_t w = 1 + (uint32_t) (g_seed % (uint64_t) stride); w <= 100; w += (uint32_t) stride)
	{
		runs++;
		bad += !torn_run(tr, c, name, half_at, rs, w, sh_words, &live);
		live_runs += live;
		dead_runs += !live;
	}
	tap_diag("%s: %d runs (%.1f s); killed inside the revival's batch, B was dead after %d and live after %d", name,
			 runs, (now_ns() - t0) / 1e9, dead_runs, live_runs);
	CHECK(bad == 0, "%s: a reviver killed after steps of its write and words of its revival (word stride %d): "
		  "B dead or live, never torn, writes in its range succeed, contents right (%d runs, %d bad)", name, stride,
		  runs, bad);
	CHECK(dead_runs > 0 && live_runs > 0, "%s: kills inside the batch left B dead (%d) and live (%d)", name,
		  dead_runs, live_runs);
out:
	if (sh_words != MAP_FAILED)
		munmap(sh_words, 4096);
	if (c)
		dm_client_destroy(c);
}

/* TREE_BACKEND=shm|tcp: that transport only (the sanitized CI run: shm; default both) */
static int
transport_wanted(size_t i)
{
	const char *only = getenv("TREE_BACKEND");

	return only == NULL || *only == '\0' || strcmp(only, transports[i].name) == 0;
}

/* RECLAIM_SECTIONS=model,bounded,concurrent,faults,fences,revive,torn (default: all) */
static int
want(const char *section)
{
	const char *s = getenv("RECLAIM_SECTIONS");

	return s == NULL || *s == '\0' || strstr(s, section) != NULL;
}

/* Section 4 on VAR trees: asked for by name, or with the long VAR variants (run-c-tests.sh). */
static int
var_faults(void)
{
	const char *s = getenv("RECLAIM_SECTIONS"),
			   *all = getenv("DM_TEST_VAR_ALL");

	return (s != NULL && strstr(s, "faults") != NULL) || (all != NULL && strcmp(all, "1") == 0);
}

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "256M", "--chunk-size", "1M", NULL};
	uint64_t	t0 = now_ns();

	tree_test_env(&g_seed, &g_scale);
	{
		/* the longest test key is fixed by the smallest node size the test uses */
		dm_tree_opts o = {.node_size = 256};

		if (!CHECK(test_tree_key_opts(&o) == 0, "TREE_KEY_FORMAT is fixed8 or var"))
			return tap_done();
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (memnode_start(&mn, 0, args) != 0)
	{
		CHECK(0, "start memnode (id 1, 256M, --shm)");
		return tap_done();
	}
	if (want("model"))
		for (size_t i = 0; i < 2; i++)
		{
			if (!transport_wanted(i))
				continue;
			test_model(&transports[i], 256);
			test_model(&transports[i], 1024);
		}
	tap_diag("model: %.1f s", (now_ns() - t0) / 1e9);
	if (want("bounded"))
		for (size_t i = 0; i < 2; i++)
			if (transport_wanted(i))
				test_bounded(&transports[i]);
	tap_diag("bounded: %.1f s", (now_ns() - t0) / 1e9);
	if (want("concurrent"))
		test_concurrent();
	tap_diag("concurrent: %.1f s", (now_ns() - t0) / 1e9);
	/*
	 * VAR: over shm only (kill-mid, the torn writes, is shm's; tcp's sweep
	 * runs in the FIXED8 run), and only when asked for (RECLAIM_SECTIONS
	 * naming it, or DM_TEST_VAR_ALL=1): it takes 95 s there
	 */
	if (test_key_var() && !var_faults())
		tap_diag("faults: not run on VAR trees unless RECLAIM_SECTIONS names it or DM_TEST_VAR_ALL=1");
	else if (want("faults"))
		for (size_t i = 0; i < (test_key_var() ? 1 : 2); i++)
			if (transport_wanted(i))
				test_faults(&transports[i]);
	/* its own VAR tree: once, in the FIXED8 run */
	if (!test_key_var() && want("fences"))
		for (size_t i = 0; i < 2; i++)
			if (transport_wanted(i))
				test_fences(&transports[i]);
	tap_diag("fences: %.1f s", (now_ns() - t0) / 1e9);
	/* torn needs the kill step that leaves B half-dead: section 6's first sweep finds it */
	if (!test_key_var() && (want("revive") || want("torn")))
		for (size_t i = 0; i < 2; i++)
		{
			uint64_t	half_at = 0,
						unused = 0;

			if (!transport_wanted(i))
				continue;

			test_revive(&transports[i], 0, &half_at);
			if (want("revive"))
			{
				test_revive(&transports[i], 1, &unused);
				test_revive_stall(&transports[i], half_at);
			}
			if (want("torn"))
				test_revive_torn(&transports[i], half_at);
		}
	tap_diag("revive: %.1f s", (now_ns() - t0) / 1e9);
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	tap_diag("total %.1f s", (now_ns() - t0) / 1e9);
	return tap_done();
}
