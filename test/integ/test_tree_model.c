/*
 * test_tree_model.c — model-based test of the remote B-link tree (dm_tree.h)
 * against a real memnode, over the tcp and the shm backend, with 256-byte
 * and 1 KiB nodes.
 *
 * Why model-based: the tree's interesting code (splits, right-moves, runs of
 * equal keys spread over several leaves, empty leaves left behind by
 * deletes, scans crossing all of those in both directions) is reached by
 * long random operation sequences, not by hand-written cases.  Every
 * operation's result is compared with a plain sorted array holding the same
 * set, and after each phase dm_tree_verify must pass and count exactly the
 * model's entries, dm_tree_stats_get must agree with it, and full and random
 * range scans must return exactly the model's slices.  256-byte nodes hold
 * only 10 leaf entries and 7 children, so a few thousand entries give a tree
 * of height 5 and thousands of splits.
 *
 * Sections:
 *   model   random singles, hot keys + NULLs + edge keys, sorted batches,
 *           scans interleaved with changes through the same handle, drain
 *           to empty, refill; then dm_tree_destroy returns every chunk and
 *           removes the catalog entry;
 *   bulk    dm_tree_bulk_begin/dm_bulk_add/dm_bulk_finish at fillfactor
 *           50/90/100 with 0, 1 and thousands of entries, then random ops;
 *   errors  invalid node sizes, duplicate names, bulk into a non-empty tree,
 *           NULL-flagged tids outside dm_entry_null, unsorted batches;
 *   verify  nodes edited and resealed with the tree's own checksum, so that
 *           only dm_tree_verify can notice, one broken invariant at a time;
 *   nospace a 16 MiB memnode fills up: NOSPACE, then the tree still verifies
 *           with every acknowledged entry, deletes work, destroy frees;
 *   corrupt garbage written into a leaf and into the root's checksum makes
 *           operations fail with DM_ERR_CORRUPT in bounded time (each such
 *           operation runs in a child with a deadline, so a tree that loops
 *           forever fails the test instead of hanging it) and verify report
 *           it; restoring the bytes heals the tree.
 *
 * Reproduce: TREE_SEED=<n> build/test/integ/test_tree_model (the seed is
 * printed; each section derives its own stream from it).  On a mismatch the
 * last operations are printed.  TREE_SCALE=<percent> scales op counts;
 * TREE_BACKEND=tcp|shm runs one backend only (handy for seed sweeps).
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
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_node.h"
#include "dm_offload.h"			/* the tree's node struct and dm_node_seal: for sealed corruption */
#include "dm_region.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testutil.h"

/* Tids use at most 62 bits (dm_tree.h). */
#define TID_MASK ((UINT64_C(1) << 62) - 1)

typedef struct tcfg
{
	const char *name;
	int			backend;
	uint32_t	flags;
} tcfg;

static const tcfg cfg_tcp = {"tcp", DM_BACKEND_TCP, 0};
static const tcfg cfg_shm = {"shm", DM_BACKEND_SHM, 0};
static const tcfg cfg_ucx = {"ucx", DM_BACKEND_UCX, 0};

static memnode_proc mn;
static uint64_t g_seed = 1;
static int	g_scale = 100;		/* percent */


static int
scaled(int n)
{
	long		v = (long) n * g_scale / 100;

	return v < 1 ? 1 : (int) v;
}

/* ---- formatting and the op log ------------------------------------------ */


/*
 * The last operations, printed when something goes wrong so that a failure
 * can be turned into a short reproduction.
 */
#define OPLOG_N 24
static char oplog_buf[OPLOG_N][240];
static unsigned oplog_n;

static void oplog(const char *fmt,...) __attribute__((format(printf, 1, 2)));
static void
oplog(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(oplog_buf[oplog_n++ % OPLOG_N], sizeof(oplog_buf[0]), fmt, ap);
	va_end(ap);
}

static void
oplog_dump(void)
{
	unsigned	first = oplog_n > OPLOG_N ? oplog_n - OPLOG_N : 0;

	tap_diag("last operations (op #, oldest first):");
	for (unsigned i = first; i < oplog_n; i++)
		tap_diag("  #%u %s", i, oplog_buf[i % OPLOG_N]);
}

/* First failure of the current step (only the first is kept: the rest follow from it). */
static char failmsg[2048];

static void failf(const char *fmt,...) __attribute__((format(printf, 1, 2)));
static void
failf(const char *fmt,...)
{
	va_list		ap;

	if (failmsg[0])
		return;
	va_start(ap, fmt);
	vsnprintf(failmsg, sizeof(failmsg), fmt, ap);
	va_end(ap);
}

/* CHECK that no failure was recorded; print it and the op log if there was. */
static int
check_nofail(const char *fmt,...) __attribute__((format(printf, 1, 2)));
static int
check_nofail(const char *fmt,...)
{
	char		what[512];
	va_list		ap;
	int			ok = failmsg[0] == '\0';

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	CHECK(ok, "%s", what);
	if (!ok)
	{
		tap_diag("%s", failmsg);
		oplog_dump();
	}
	failmsg[0] = '\0';
	return ok;
}

/* ---- the model: a sorted array of distinct entries -------------------- */


static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* ---- random entries and ranges ----------------------------------------- */

/*
 * Keys: KEY_BASE + i * KEY_STRIDE for i < nkeys, so random key bounds fall
 * both on and between keys, plus the edge keys 0, 1, MAX-1 and MAX (a
 * non-NULL MAX sorts just before the NULLs).  One hot key gets hundreds of
 * tids so its run spans many leaves.
 */
#define KEY_BASE 1000
#define KEY_STRIDE 8
#define HOT_KEY (KEY_BASE + 77 * KEY_STRIDE)

static uint64_t g_nkeys = 3000;
static uint64_t g_ntids = 4;

static uint64_t
rand_tid(void)
{
	uint64_t	r = rnd_below(100);

	if (r < 75)
		return rnd_below(g_ntids);
	if (r < 80)
		return TID_MASK - rnd_below(3);	/* largest tids */
	return rnd() & TID_MASK;
}

static dm_entry
rand_entry(void)
{
	uint64_t	r = rnd_below(1000);

	if (r < 10)
		return dm_entry_make(rnd_below(2), rand_tid());	/* keys 0 and 1 */
	if (r < 20)
		return dm_entry_make(UINT64_MAX - rnd_below(2), rand_tid());	/* MAX-1, non-NULL MAX */
	if (r < 45)
		return dm_entry_null(rnd_below(40) == 0 ? rnd() & TID_MASK : rnd_below(64));
	if (r < 90)
		return dm_entry_make(HOT_KEY, rnd_below(400) * 3);
	return dm_entry_make(KEY_BASE + rnd_below(g_nkeys) * KEY_STRIDE, rand_tid());
}

/* A random key for bounds and lookups: on keys, between keys, at the edges. */
static uint64_t
rand_key(const model *m)
{
	uint64_t	r = rnd_below(100);

	if (r < 40 && m->n)
		return m->e[rnd_below(m->n)].key;
	if (r < 45)
		return rnd_below(3);
	if (r < 50)
		return UINT64_MAX - rnd_below(3);
	if (r < 55)
		return HOT_KEY;
	return rnd_below(KEY_BASE + g_nkeys * KEY_STRIDE + 100);
}

static void
rand_bound(const model *m, int is_hi, dm_entry *b, int *incl)
{
	*incl = (int) rnd_below(2);
	switch (rnd_below(7))
	{
		case 0:				/* open end (incl does not matter for INF, does for MIN) */
			*b = is_hi ? DM_ENTRY_INF : DM_ENTRY_MIN;
			break;
		case 1:
		case 2:				/* key bound, used as the header says */
			{
				uint64_t	k = rand_key(m);

				*b = is_hi ? dm_key_hi(k, *incl) : dm_key_lo(k, *incl);
				break;
			}
		case 3:
		case 4:				/* an existing entry exactly */
			*b = m->n ? m->e[rnd_below(m->n)] : rand_entry();
			break;
		case 5:				/* any entry */
			*b = rand_entry();
			break;
		default:				/* around the NULLs */
			*b = rnd_below(2) ? dm_entry_make(UINT64_MAX, DM_TID_NULL) :
				dm_entry_make(UINT64_MAX, rnd_below(2) ? 0 : DM_TID_MAX);
			break;
	}
}

static dm_range
rand_range(const model *m)
{
	dm_range	r;

	rand_bound(m, 0, &r.lo, &r.lo_incl);
	rand_bound(m, 1, &r.hi, &r.hi_incl);
	/* mostly non-empty ranges; some lo > hi stay to test empty ones */
	if (dm_entry_cmp(r.lo, r.hi) > 0 && rnd_below(100) < 85)
	{
		dm_entry	x = r.lo;
		int			i = r.lo_incl;

		r.lo = r.hi;
		r.lo_incl = r.hi_incl;
		r.hi = x;
		r.hi_incl = i;
	}
	r.backward = (int) rnd_below(2);
	if (rnd_below(20) == 0)
		r = DM_RANGE_NULLS((int) rnd_below(2));
	return r;
}

/* ---- tree helpers ---------------------------------------------------------- */

static dm_client *
connect_client(const tcfg *cf, const char *addr)
{
	return test_client_connect(cf->backend, cf->flags, 30000, "test_tree_model", addr, NULL);
}

static uint64_t
chunks_used(dm_client *c)
{
	dm_node_stats st;

	if (dm_node_stats_get(c, 1, &st) != DM_OK)
		return UINT64_MAX;
	return st.chunks_used;
}

static const char *
terr(dm_tree *t)
{
	const char *s = t ? dm_tree_error(t) : NULL;

	return s ? s : "(no message)";
}

/*
 * Scan a range into a malloc'd array.  Stops (DM_ERR_INTERNAL) after limit
 * entries so that an iterator that never ends cannot hang the test.
 */
static int
tree_scan(dm_tree *t, const dm_range *r, size_t limit, dm_entry **out, size_t *n)
{
	dm_iter    *it = NULL;
	size_t		cap = 256;
	int			rc;

	*n = 0;
	*out = malloc(cap * sizeof(dm_entry));
	if ((rc = dm_iter_open(t, r, &it)) != DM_OK)
		return rc;
	for (;;)
	{
		dm_entry	e;
		int			k = dm_iter_next(it, &e);

		if (k == 0)
			break;
		if (k != 1)
		{
			rc = k < 0 ? -k : DM_ERR_INTERNAL;
			break;
		}
		if (*n >= limit)
		{
			failf("iterator returned more than %zu entries for %s", limit, R(r));
			rc = DM_ERR_INTERNAL;
			break;
		}
		if (*n == cap)
			*out = realloc(*out, (cap *= 2) * sizeof(dm_entry));
		(*out)[(*n)++] = e;
	}
	dm_iter_close(it);
	return rc;
}

/* Compare a range scan with the model's slice; record the first difference. */
static int
check_range(dm_tree *t, const model *m, const dm_range *r)
{
	size_t		from,
				to,
				n,
				want;
	dm_entry   *got;
	int			rc,
				ok = 1;

	m_range(m, r, &from, &to);
	want = to - from;
	rc = tree_scan(t, r, want + 1000, &got, &n);
	if (rc == DM_ERR_INVALID && dm_entry_cmp(r->lo, r->hi) > 0 && want == 0)
	{
		/* lo > hi: rejecting the range is as good as returning nothing */
		free(got);
		return 1;
	}
	if (rc != DM_OK)
	{
		failf("scan %s: %s: %s", R(r), dm_strerror(rc), terr(t));
		free(got);
		return 0;
	}
	for (size_t i = 0; i < n || i < want; i++)
	{
		dm_entry	w = r->backward ? m->e[to - 1 - i] : m->e[from + i];

		if (i >= n || i >= want || dm_entry_cmp(got[i], w) != 0)
		{
			failf("scan %s: %zu entries, model has %zu; first difference at #%zu: got %s, want %s%s%s",
				  R(r), n, want, i, i < n ? E(got[i]) : "(end)", i < want ? E(w) : "(end)",
				  i > 0 ? ", previous " : "", i > 0 ? E(got[i - 1]) : "");
			ok = 0;
			break;
		}
	}
	free(got);
	return ok;
}

/* Lookup of a key compared with the model (non-NULL tids of that key). */
static int
check_lookup(dm_tree *t, const model *m, uint64_t key)
{
	size_t		from = m_lower(m, dm_entry_make(key, 0)),
				to = m_upper(m, dm_entry_make(key, DM_TID_MAX));
	int			want = (int) (to - from),
				max = want + 8,
				n = -1,
				rc;
	uint64_t   *tids = malloc(sizeof(uint64_t) * (size_t) max);

	rc = dm_tree_lookup(t, key, tids, max, &n);
	oplog("lookup(%" PRIu64 ") -> %s n=%d (model %d)", key, dm_strerror(rc), n, want);
	if (rc != DM_OK)
	{
		failf("lookup(%" PRIu64 "): %s: %s", key, dm_strerror(rc), terr(t));
		free(tids);
		return 0;
	}
	if (n != want)
	{
		failf("lookup(%" PRIu64 "): %d tids, model has %d", key, n, want);
		free(tids);
		return 0;
	}
	/* The contract says "every tid of key", not in which order. */
	qsort(tids, (size_t) n, sizeof(uint64_t), cmp_u64);
	for (int i = 0; i < n; i++)
		if (tids[i] != m->e[from + (size_t) i].tid)
		{
			failf("lookup(%" PRIu64 "): tid #%d is %" PRIu64 ", model has %" PRIu64,
				  key, i, tids[i], m->e[from + (size_t) i].tid);
			free(tids);
			return 0;
		}
	free(tids);
	return 1;
}

/*
 * Everything that must hold between phases: verify passes and counts the
 * model's entries; stats agree with verify and are self-consistent; full
 * forward and backward scans, random ranges, the NULL range and lookups
 * of sampled keys equal the model.
 */
static void
check_all(dm_tree *t, const model *m, const char *label)
{
	char		msg[512] = "";
	uint64_t	cnt = UINT64_MAX,
				nodes = 0,
				bymn = 0;
	dm_tree_stats st;
	int			rc,
				h,
				ok = 1;
	uint32_t	ns = dm_tree_node_size(t);
	dm_range	full = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, 0};

	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	if (!CHECK_STATUS(rc, DM_OK, "%s: dm_tree_verify passes", label))
		tap_diag("  verify: %s", msg);
	CHECK(cnt == m->n, "%s: verify counts %" PRIu64 " entries, model has %zu", label, cnt, m->n);

	memset(&st, 0, sizeof(st));
	rc = dm_tree_stats_get(t, &st);
	CHECK_STATUS(rc, DM_OK, "%s: dm_tree_stats_get", label);
	h = st.height;
	if (h < 1 || h > 16)
		ok = 0;
	for (int l = 0; ok && l < 16; l++)
	{
		if ((l < h - 1 && st.nodes[l] == 0) || (l == h - 1 && st.nodes[l] != 1) || (l >= h && st.nodes[l] != 0))
			ok = 0;
		nodes += st.nodes[l];
	}
	for (int i = 0; i < DM_TREE_MAX_MEMNODES; i++)
		bymn += st.nodes_by_memnode[i];
	CHECK(ok && st.entries == cnt,
		  "%s: stats: height %d, one root, every level populated, entries %" PRIu64 " = verify's %" PRIu64,
		  label, h, st.entries, cnt);
	CHECK(bymn == nodes && st.remote_bytes == nodes * ns && st.leaf_fill >= 0 && st.leaf_fill <= 1.0 &&
		  (cnt == 0 || st.leaf_fill > 0),
		  "%s: stats: %" PRIu64 " nodes (%" PRIu64 " by memnode), remote_bytes %" PRIu64 ", leaf_fill %.3f",
		  label, nodes, bymn, st.remote_bytes, st.leaf_fill);
	tap_diag("%s: %zu entries, height %d, %" PRIu64 " nodes (%" PRIu64 " leaves), leaf fill %.2f",
			 label, m->n, h, nodes, st.nodes[0], st.leaf_fill);

	check_range(t, m, &full);
	full.backward = 1;
	check_range(t, m, &full);
	check_nofail("%s: full scans forward and backward equal the model", label);

	for (int i = 0; i < 24 && !failmsg[0]; i++)
	{
		dm_range	r = rand_range(m);

		oplog("scan %s", R(&r));
		check_range(t, m, &r);
	}
	check_nofail("%s: 24 random range scans (random bounds, both directions) equal the model", label);

	/* point ranges [e, e] (one entry) and (e, e], [e, e) (empty), both directions */
	for (int i = 0; i < 12 && m->n && !failmsg[0]; i++)
	{
		dm_entry	e = m->e[rnd_below(m->n)];
		dm_range	r = {e, i % 3 != 1, e, i % 3 != 2, (i / 3) % 2};

		oplog("scan %s", R(&r));
		check_range(t, m, &r);
	}
	check_nofail("%s: point ranges [e,e], (e,e], [e,e) equal the model", label);

	for (int bw = 0; bw < 2 && !failmsg[0]; bw++)
	{
		dm_range	r = DM_RANGE_NULLS(bw);

		check_range(t, m, &r);
	}
	check_nofail("%s: DM_RANGE_NULLS forward and backward equal the model's NULL entries", label);

	check_lookup(t, m, HOT_KEY);
	check_lookup(t, m, UINT64_MAX);	/* non-NULL MAX only: NULLs are not key MAX */
	check_lookup(t, m, 0);
	for (int i = 0; i < 40 && !failmsg[0]; i++)
		check_lookup(t, m, rand_key(m));
	check_nofail("%s: lookups (hot key, 0, MAX, 40 sampled keys) equal the model", label);
}

/* ---- operations checked against the model --------------------------------- */

static int
op_insert(dm_tree *t, model *m, dm_entry e)
{
	int			existed = -1,
				rc = dm_tree_insert(t, e, &existed),
				want = m_has(m, e);

	oplog("insert %s -> %s existed=%d (model %d)", E(e), dm_strerror(rc), existed, want);
	if (rc != DM_OK)
	{
		failf("insert %s: %s: %s", E(e), dm_strerror(rc), terr(t));
		return 0;
	}
	m_insert(m, e);
	if (existed != want)
	{
		failf("insert %s: existed=%d, model says %d", E(e), existed, want);
		return 0;
	}
	return 1;
}

static int
op_delete(dm_tree *t, model *m, dm_entry e)
{
	int			existed = -1,
				rc = dm_tree_delete(t, e, &existed),
				want = m_has(m, e);

	oplog("delete %s -> %s existed=%d (model %d)", E(e), dm_strerror(rc), existed, want);
	if (rc != DM_OK)
	{
		failf("delete %s: %s: %s", E(e), dm_strerror(rc), terr(t));
		return 0;
	}
	m_delete(m, e);
	if (existed != want)
	{
		failf("delete %s: existed=%d, model says %d", E(e), existed, want);
		return 0;
	}
	return 1;
}

static int
op_contains(dm_tree *t, const model *m, dm_entry e)
{
	int			found = -1,
				rc = dm_tree_contains(t, e, &found),
				want = m_has(m, e);

	oplog("contains %s -> %s found=%d (model %d)", E(e), dm_strerror(rc), found, want);
	if (rc != DM_OK || found != want)
	{
		failf("contains %s: %s found=%d, model says %d: %s", E(e), dm_strerror(rc), found, want,
			  rc ? terr(t) : "");
		return 0;
	}
	return 1;
}

/* Sorted batch: insert (ins = 1) or delete; checks *changed. */
static int
op_batch(dm_tree *t, model *m, dm_entry *b, int n, int ins)
{
	int			want = 0,
				changed = -1,
				rc;

	for (int i = 0; i < n; i++)
		want += ins ? !m_has(m, b[i]) : m_has(m, b[i]);
	rc = ins ? dm_tree_insert_sorted(t, b, n, &changed) : dm_tree_delete_sorted(t, b, n, &changed);
	oplog("%s_sorted n=%d %s..%s -> %s changed=%d (model %d)", ins ? "insert" : "delete", n,
		  n ? E(b[0]) : "-", n ? E(b[n - 1]) : "-", dm_strerror(rc), changed, want);
	if (rc != DM_OK)
	{
		failf("%s_sorted of %d entries: %s: %s", ins ? "insert" : "delete", n, dm_strerror(rc), terr(t));
		return 0;
	}
	for (int i = 0; i < n; i++)
		ins ? m_insert(m, b[i]) : m_delete(m, b[i]);
	if (changed != want)
	{
		failf("%s_sorted of %d entries: changed=%d, model says %d", ins ? "insert" : "delete", n, changed, want);
		return 0;
	}
	return 1;
}

/* A random batch for insert_sorted: random entries, or a dense run of one key's tids. */
static int
rand_insert_batch(dm_entry *b, int maxn)
{
	int			n = 1 + (int) rnd_below((uint64_t) maxn);

	if (rnd_below(3) == 0)
	{
		uint64_t	k = rnd_below(4) == 0 ? HOT_KEY : KEY_BASE + rnd_below(g_nkeys) * KEY_STRIDE;
		uint64_t	t0 = rnd_below(500);

		for (int i = 0; i < n; i++)
			b[i] = dm_entry_make(k, t0 + (uint64_t) i);
	}
	else
		for (int i = 0; i < n; i++)
			b[i] = rand_entry();
	return sort_unique(b, n);
}

/* A random batch for delete_sorted: mostly present entries, some absent. */
static int
rand_delete_batch(const model *m, dm_entry *b, int maxn)
{
	int			n = 1 + (int) rnd_below((uint64_t) maxn);

	if (m->n && rnd_below(3) == 0)
	{
		/* a contiguous stretch of the model: empties whole leaves */
		size_t		s = rnd_below(m->n);

		for (int i = 0; i < n; i++)
			b[i] = s + (size_t) i < m->n ? m->e[s + (size_t) i] : rand_entry();
	}
	else
		for (int i = 0; i < n; i++)
			b[i] = (m->n && rnd_below(4) != 0) ? m->e[rnd_below(m->n)] : rand_entry();
	return sort_unique(b, n);
}

/*
 * Random operations.  Weights in percent: insert pi, delete pd, the rest
 * split between contains, lookup, batches and range scans.
 */
static int
phase_random(dm_tree *t, model *m, int nops, int pi, int pd)
{
	dm_entry	b[256];

	for (int op = 0; op < nops && !failmsg[0]; op++)
	{
		int			r = (int) rnd_below(100);

		if (r < pi)
			op_insert(t, m, rand_entry());
		else if (r < pi + pd)
			op_delete(t, m, (m->n && rnd_below(10) < 8) ? m->e[rnd_below(m->n)] : rand_entry());
		else
		{
			switch (rnd_below(12))
			{
				case 0:
				case 1:
				case 2:
					op_contains(t, m, (m->n && rnd_below(2)) ? m->e[rnd_below(m->n)] : rand_entry());
					break;
				case 3:
				case 4:
				case 5:
					check_lookup(t, m, rand_key(m));
					break;
				case 6:
				case 7:
					{
						int			n = rand_insert_batch(b, 64);

						op_batch(t, m, b, n, 1);
						break;
					}
				case 8:
				case 9:
					{
						int			n = rand_delete_batch(m, b, 48);

						op_batch(t, m, b, n, 0);
						break;
					}
				default:
					{
						dm_range	rr = rand_range(m);

						oplog("scan %s", R(&rr));
						check_range(t, m, &rr);
						break;
					}
			}
		}
	}
	return failmsg[0] == '\0';
}

/* Hot keys: hundreds of tids of one key (a run over many leaves), NULLs, edge keys. */
static void
phase_hot(dm_tree *t, model *m)
{
	uint64_t	tids[600],
				canary = UINT64_C(0xDEADBEEFCAFEF00D);
	int			n;

	/* 450 tids of the hot key in random order */
	for (int i = 0; i < 450 && !failmsg[0]; i++)
		op_insert(t, m, dm_entry_make(HOT_KEY, rnd_below(1200) * 3));
	for (int i = 0; i < 120 && !failmsg[0]; i++)
		op_insert(t, m, dm_entry_null(rnd_below(300)));
	for (int i = 0; i < 40 && !failmsg[0]; i++)
	{
		op_insert(t, m, dm_entry_make(0, rnd_below(100)));
		op_insert(t, m, dm_entry_make(UINT64_MAX, rnd_below(100)));
	}
	/* the largest tid of a non-NULL entry, and of a NULL one */
	op_insert(t, m, dm_entry_make(HOT_KEY, TID_MASK));
	op_insert(t, m, dm_entry_null(TID_MASK));
	op_insert(t, m, dm_entry_make(0, 0));	/* == DM_ENTRY_MIN */
	check_lookup(t, m, HOT_KEY);
	check_lookup(t, m, 0);
	check_lookup(t, m, UINT64_MAX);
	for (int i = 0; i < 50 && !failmsg[0]; i++)
		op_contains(t, m, rnd_below(2) ? dm_entry_null(rnd_below(300)) : dm_entry_make(HOT_KEY, rnd_below(1200) * 3));
	check_nofail("hot: 450 tids of one key, 120 NULLs, keys 0 and MAX, max tids: inserts, lookups, contains match");

	/*
	 * A lookup with room for fewer tids than there are must not write
	 * past max; what *n then says is not specified, so only check that
	 * what it returned belongs to the key.
	 */
	for (int i = 0; i < 600; i++)
		tids[i] = canary;
	n = -1;
	{
		int			rc = dm_tree_lookup(t, HOT_KEY, tids, 5, &n);
		int			inkey = 1;

		for (int i = 0; i < 5 && i < n; i++)
			inkey &= m_has(m, dm_entry_make(HOT_KEY, tids[i]));
		CHECK(rc == DM_OK && n >= 5 && inkey && tids[5] == canary && tids[6] == canary,
			  "hot: lookup with max=5 of a key with %zu tids writes at most 5 (rc %s, n=%d)",
			  m_upper(m, dm_entry_make(HOT_KEY, DM_TID_MAX)) - m_lower(m, dm_entry_make(HOT_KEY, 0)),
			  dm_strerror(rc), n);
	}

	/* delete every other hot tid: leaves inside the run get sparse */
	{
		size_t		from = m_lower(m, dm_entry_make(HOT_KEY, 0)),
					to = m_upper(m, dm_entry_make(HOT_KEY, DM_TID_MAX));
		model		hot = {0};

		for (size_t i = from; i < to; i++)
			m_insert(&hot, m->e[i]);
		for (size_t i = 0; i < hot.n && !failmsg[0]; i += 2)
			op_delete(t, m, hot.e[i]);
		m_free(&hot);
	}
	check_lookup(t, m, HOT_KEY);
	check_nofail("hot: deleting every other tid of the hot key matches the model");
}

/* Sorted batches of all shapes, including empty and single-entry ones. */
static void
phase_batches(dm_tree *t, model *m, int nbatches)
{
	dm_entry	b[512];

	for (int i = 0; i < nbatches && !failmsg[0]; i++)
	{
		int			r = (int) rnd_below(100),
					n;

		if (r < 5)
			op_batch(t, m, b, 0, (int) rnd_below(2));
		else if (r < 55)
		{
			n = rand_insert_batch(b, rnd_below(4) == 0 ? 400 : 60);
			op_batch(t, m, b, n, 1);
		}
		else
		{
			n = rand_delete_batch(m, b, rnd_below(4) == 0 ? 300 : 40);
			op_batch(t, m, b, n, 0);
		}
	}
	check_nofail("batches: %d insert_sorted/delete_sorted batches (0..400 entries) match the model", nbatches);
}

/*
 * Scans interleaved with changes made through the same handle (as a
 * PostgreSQL backend does when an UPDATE scans the index it inserts into).
 * The iterator must return entries strictly in order, only entries that
 * existed at some point during the scan, and every entry of the range that
 * was present for the whole scan.
 */
static void
phase_scan_interleaved(dm_tree *t, model *m, int nscans)
{
	for (int s = 0; s < nscans && !failmsg[0]; s++)
	{
		dm_range	r = rand_range(m);
		model		ever = {0},
					gone = {0},
					ret = {0};
		dm_iter    *it = NULL;
		dm_entry	prev = DM_ENTRY_MIN,
					e;
		size_t		from,
					to,
					nret = 0,
					nstable = 0,
					nstable_want = 0;
		int			rc,
					k;

		if (dm_entry_cmp(r.lo, r.hi) > 0)
			continue;
		m_copy(&ever, m);
		oplog("interleaved scan %s", R(&r));
		if ((rc = dm_iter_open(t, &r, &it)) != DM_OK)
		{
			failf("iter_open %s: %s: %s", R(&r), dm_strerror(rc), terr(t));
			break;
		}
		/* entries present at the start; those deleted meanwhile go to gone */
		m_range(m, &r, &from, &to);
		{
			model		start = {0};

			for (size_t i = from; i < to; i++)
				m_insert(&start, m->e[i]);
			while ((k = dm_iter_next(it, &e)) == 1)
			{
				if (nret > 0 && (r.backward ? dm_entry_cmp(e, prev) >= 0 : dm_entry_cmp(e, prev) <= 0))
				{
					failf("interleaved scan %s: %s after %s (not strictly %s)", R(&r), E(e), E(prev),
						  r.backward ? "descending" : "ascending");
					break;
				}
				if (!in_range(&r, e) || !m_has(&ever, e))
				{
					failf("interleaved scan %s: returned %s which is %s", R(&r), E(e),
						  !in_range(&r, e) ? "outside the range" : "not an entry that ever existed");
					break;
				}
				/* returned entries arrive in order: an ascending array after reversing */
				if (ret.n == ret.cap)
				{
					ret.cap = ret.cap ? ret.cap * 2 : 1024;
					ret.e = realloc(ret.e, ret.cap * sizeof(dm_entry));
				}
				ret.e[ret.n++] = e;
				prev = e;
				nret++;
				/* now and then change the tree under the iterator */
				if (rnd_below(6) == 0)
				{
					int			nch = 1 + (int) rnd_below(12);

					for (int j = 0; j < nch && !failmsg[0]; j++)
					{
						if (rnd_below(2) && m->n)
						{
							/* delete something, often right next to the scan position */
							size_t		p = m_lower(m, e);
							dm_entry	d;

							if (rnd_below(2))
								p = rnd_below(m->n);
							else if (r.backward && p > 0)
								p -= 1 + rnd_below(p < 5 ? p : 5);
							else
								p += rnd_below(5);
							if (p >= m->n)
								p = m->n - 1;
							d = m->e[p];
							op_delete(t, m, d);
							m_insert(&gone, d);
						}
						else
						{
							dm_entry	x = rnd_below(2) ? rand_entry() :
								dm_entry_make(e.key, e.tid + 1 + rnd_below(3));

							/* keep within 62-bit tids (the NULL flag stays as it was) */
							if ((x.tid & ~DM_TID_NULL) > TID_MASK)
								x = rand_entry();
							op_insert(t, m, x);
							m_insert(&ever, x);
						}
					}
					if (failmsg[0])
						break;
				}
			}
			if (k < 0 && !failmsg[0])
				failf("interleaved scan %s: iter_next: %s: %s", R(&r), dm_strerror(-k), terr(t));
			if (r.backward)
				for (size_t i = 0; i < ret.n / 2; i++)
				{
					dm_entry	x = ret.e[i];

					ret.e[i] = ret.e[ret.n - 1 - i];
					ret.e[ret.n - 1 - i] = x;
				}
			/* present for the whole scan = there at the start and never deleted */
			for (size_t i = 0; i < start.n; i++)
				if (!m_has(&gone, start.e[i]))
				{
					nstable_want++;
					if (m_has(&ret, start.e[i]))
						nstable++;
					else if (!failmsg[0])
						failf("interleaved scan %s: missed %s, present for the whole scan", R(&r), E(start.e[i]));
				}
			if (!failmsg[0] && nstable != nstable_want)
				failf("interleaved scan %s: returned %zu of the %zu entries present for the whole scan",
					  R(&r), nstable, nstable_want);
			m_free(&start);
		}
		dm_iter_close(it);
		m_free(&ever);
		m_free(&gone);
		m_free(&ret);
	}
	check_nofail("interleaved: %d scans with inserts/deletes through the same handle between steps: "
				 "ordered, no phantoms, nothing present throughout missed", nscans);
}

/* Delete nearly everything, then everything: empty leaves everywhere, then an empty tree. */
static void
phase_drain(dm_tree *t, model *m, const char *label)
{
	dm_entry	b[512];

	/* every other entry of a random stretch, in big sorted batches, down to ~8% */
	size_t		stop = m->n / 12;

	while (m->n > stop && m->n > 100 && !failmsg[0])
	{
		int			n = 0;
		size_t		start = rnd_below(m->n);

		for (size_t i = start; i < m->n && n < 300; i += 2)
			b[n++] = m->e[i];
		op_batch(t, m, b, n, 0);
	}
	/* then random singles */
	for (int i = 0; i < 150 && m->n && !failmsg[0]; i++)
		op_delete(t, m, m->e[rnd_below(m->n)]);
	check_nofail("%s: drain to %zu entries by batches and singles matches the model", label, m->n);
	check_all(t, m, label);

	/* and now everything, leaving only empty leaves */
	while (m->n > 0 && !failmsg[0])
	{
		int			n = 0;

		for (size_t i = 0; i < m->n && n < 500; i++)
			b[n++] = m->e[i];
		op_batch(t, m, b, n, 0);
	}
	check_nofail("%s: deleting every entry matches the model", label);
}

/* ---- the model scenario ------------------------------------------------------ */

static void
run_model(const tcfg *cf, uint32_t ns)
{
	char		label[96],
				name[96];
	dm_client  *c = connect_client(cf, mn.addr);
	dm_tree    *t = NULL,
			   *t2 = NULL;
	dm_tree_name tn;
	dm_tree_opts opts;
	model		m = {0};
	uint64_t	c0,
				t0 = now_ns();
	int			rc,
				big = (ns <= 256 ? 1 : 2) *	/* 1 KiB nodes need more entries for height */
				(cf->backend == DM_BACKEND_SHM ? 4 : 1);	/* shm is ~50x faster: more ops */

	snprintf(label, sizeof(label), "model %s ns=%u", cf->name, ns);
	rng_seed_label(g_seed, label, 0);
	failmsg[0] = '\0';
	oplog_n = 0;
	if (!CHECK(c != NULL, "%s: client connects", label))
		return;
	c0 = chunks_used(c);
	snprintf(name, sizeof(name), "model-%s-%u", cf->name, ns);
	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = ns;
	rc = dm_tree_create_new(c, 1, &tn, &opts, &t);
	if (!CHECK_STATUS(rc, DM_OK, "%s: create tree", label))
	{
		dm_client_destroy(c);
		return;
	}
	CHECK(dm_tree_node_size(t) == ns, "%s: node size %u", label, dm_tree_node_size(t));
	/* TREE_OFFLOAD=always: the same model run with the memnode's executor doing the work */
	if (test_tree_offload(t, -1) != DM_OFFLOAD_OFF)
		tap_diag("%s: offload %s", label, dm_offload_mode_name(test_offload_mode()));

	/* an empty tree */
	check_all(t, &m, "empty");

	/* grow: insert-heavy random ops */
	g_nkeys = 3000;
	g_ntids = 4;
	phase_random(t, &m, scaled(5000 * big), 60, 15);
	check_nofail("%s: %d insert-heavy random ops match the model", label, scaled(5000 * big));
	check_all(t, &m, label);
	{
		dm_tree_stats st;

		if (dm_tree_stats_get(t, &st) == DM_OK)
			CHECK(st.height >= 3, "%s: the tree got tall (height %d)", label, st.height);
	}

	/* a second handle on the same tree sees the same contents */
	rc = dm_tree_open_existing(c, 1, &tn, &t2);
	if (CHECK_STATUS(rc, DM_OK, "%s: dm_tree_open_existing on the live tree", label))
	{
		CHECK(dm_tree_id(t2) == dm_tree_id(t) && dm_tree_node_size(t2) == ns,
			  "%s: second handle has the same id and node size", label);
		check_all(t2, &m, "second handle");
		dm_tree_close(t2);
	}

	phase_hot(t, &m);
	check_all(t, &m, "after hot keys");

	phase_batches(t, &m, scaled(300 * big));
	check_all(t, &m, "after batches");

	/* balanced random ops */
	phase_random(t, &m, scaled(3000 * big), 35, 35);
	check_nofail("%s: %d balanced random ops match the model", label, scaled(3000 * big));

	phase_scan_interleaved(t, &m, scaled(10 * big));
	check_all(t, &m, "after interleaved scans");

	phase_drain(t, &m, "drained");
	check_all(t, &m, "emptied");

	/* refill over the empty leaves, with a different key mix */
	g_nkeys = 500;
	g_ntids = 16;
	phase_random(t, &m, scaled(3000 * big), 55, 20);
	check_nofail("%s: refill after emptying: %d random ops match the model", label, scaled(3000 * big));
	check_all(t, &m, "refilled");
	if (test_offload_mode() == DM_OFFLOAD_ALWAYS)
	{
		dm_offload_counters oc;

		dm_tree_offload_counters(t, &oc);
		tap_diag("%s: %" PRIu64 " operations offloaded, %" PRIu64 " fell back", label,
				 oc.offloads, oc.fallbacks);
		/* inserts that split fall back; the rest, and every lookup, ran on the memnode */
		CHECK(oc.offloads > 0 && oc.offloads > oc.fallbacks,
			  "%s: the executor did most operations (%" PRIu64 " offloaded, %" PRIu64 " fell back)",
			  label, oc.offloads, oc.fallbacks);
		CHECK(oc.fallbacks > 0, "%s: splits fell back to the client (%" PRIu64 ")", label, oc.fallbacks);
	}

	/* destroy returns every chunk and removes the catalog entry */
	rc = dm_tree_destroy(t);
	CHECK_STATUS(rc, DM_OK, "%s: dm_tree_destroy", label);
	CHECK(chunks_used(c) == c0, "%s: chunks_used back to %" PRIu64 " after destroy (now %" PRIu64 ")",
		  label, c0, chunks_used(c));
	t2 = NULL;
	rc = dm_tree_open_existing(c, 1, &tn, &t2);
	CHECK_STATUS(rc, DM_ERR_NOTFOUND, "%s: destroyed tree is gone from the catalog", label);
	if (rc == DM_OK)
		dm_tree_close(t2);
	tap_diag("%s: %.1f s", label, (now_ns() - t0) / 1e9);
	m_free(&m);
	dm_client_destroy(c);
}

/* ---- bulk load ------------------------------------------------------------------ */

/* n strictly ascending entries with runs of equal keys and NULLs at the end. */
static dm_entry *
bulk_entries(size_t n)
{
	dm_entry   *e = malloc((n + 1) * sizeof(dm_entry));
	uint64_t	key = rnd_below(3),
				tid = rnd_below(4);
	size_t		nnull = n >= 20 ? n / 20 : 0;

	for (size_t i = 0; i < n - nnull && n > 0; i++)
	{
		e[i] = dm_entry_make(key, tid);
		/* same key again (a run) a third of the time, runs of up to ~60 */
		if (rnd_below(3) == 0 || (i % 997) < 60)
			tid += 1 + rnd_below(5);
		else
		{
			key += 1 + rnd_below(KEY_STRIDE);
			tid = rnd_below(4);
		}
	}
	for (size_t i = 0; i < nnull; i++)
		e[n - nnull + i] = dm_entry_null(i * 2);
	return e;
}

static void
run_bulk(const tcfg *cf, uint32_t ns, int ff, size_t n)
{
	char		label[96],
				name[96];
	dm_client  *c = connect_client(cf, mn.addr);
	dm_tree    *t = NULL;
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_bulk    *b = NULL;
	dm_entry   *e;
	model		m = {0};
	uint64_t	c0;
	int			rc;

	snprintf(label, sizeof(label), "bulk %s ns=%u ff=%d n=%zu", cf->name, ns, ff, n);
	rng_seed_label(g_seed, label, 0);
	failmsg[0] = '\0';
	oplog_n = 0;
	if (!CHECK(c != NULL, "%s: client connects", label))
		return;
	c0 = chunks_used(c);
	snprintf(name, sizeof(name), "bulk-%s-%u-%d-%zu", cf->name, ns, ff, n);
	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = ns;
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "%s: create", label))
	{
		dm_client_destroy(c);
		return;
	}
	e = bulk_entries(n);
	for (size_t i = 0; i < n; i++)
		m_insert(&m, e[i]);
	CHECK(m.n == n, "%s: generated %zu distinct ascending entries", label, m.n);

	rc = dm_tree_bulk_begin(t, ff, &b);
	if (CHECK_STATUS(rc, DM_OK, "%s: bulk_begin", label))
	{
		/* feed in pieces of random size, including empty ones */
		size_t		i = 0;

		rc = DM_OK;
		while (rc == DM_OK && i < n)
		{
			size_t		k = rnd_below(4) == 0 ? 0 : 1 + rnd_below(700);

			if (k > n - i)
				k = n - i;
			rc = dm_bulk_add(b, e + i, (int) k);
			i += k;
		}
		if (CHECK_STATUS(rc, DM_OK, "%s: bulk_add of %zu entries in random pieces", label, n))
			CHECK_STATUS(dm_bulk_finish(b), DM_OK, "%s: bulk_finish", label);
		else
			dm_bulk_abort(b);
	}
	free(e);
	check_all(t, &m, label);
	if (n >= 20 * (size_t) ((ns - DM_NODE_HEADER) / 16))
	{
		dm_tree_stats st;

		if (dm_tree_stats_get(t, &st) == DM_OK)
			CHECK(st.leaf_fill > ff / 100.0 - 0.1 && st.leaf_fill <= ff / 100.0 + 0.05,
				  "%s: leaf fill %.3f matches fillfactor %d%%", label, st.leaf_fill, ff);
	}

	/* then random ops on the bulk-built tree (splits of full leaves at ff 100) */
	g_nkeys = n > 100 ? n / 3 : 100;
	g_ntids = 4;
	phase_random(t, &m, scaled((n > 100 ? 1500 : 300) * (cf->backend == DM_BACKEND_SHM ? 4 : 1)), 50, 25);
	check_nofail("%s: random ops after the bulk load match the model", label);
	check_all(t, &m, "after bulk + random ops");

	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", label);
	CHECK(chunks_used(c) == c0, "%s: chunks_used back to %" PRIu64 " (now %" PRIu64 ")", label, c0,
		  chunks_used(c));
	m_free(&m);
	dm_client_destroy(c);
}

/* ---- error paths ---------------------------------------------------------------- */

static void
run_errors(const tcfg *cf)
{
	dm_client  *c = connect_client(cf, mn.addr);
	dm_tree    *t = NULL,
			   *t2 = NULL;
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_bulk    *b = NULL;
	uint64_t	c0,
				cnt = 0;
	char		msg[256];
	int			rc,
				changed,
				existed,
				found;
	static const uint32_t bad_sizes[] = {100, 128, 300, 1000, 8192, 65536};
	static const uint32_t good_sizes[] = {0, 256, 512, 2048, 4096};
	dm_entry	ents[8];

	rng_seed_label(g_seed, "errors", 0);
	if (!CHECK(c != NULL, "errors: client connects"))
		return;
	c0 = chunks_used(c);

	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++)
	{
		char		name[64];

		snprintf(name, sizeof(name), "badsize-%u", bad_sizes[i]);
		dm_tree_name_named(&tn, name);
		memset(&opts, 0, sizeof(opts));
		opts.node_size = bad_sizes[i];
		t = NULL;
		rc = dm_tree_create_new(c, 1, &tn, &opts, &t);
		CHECK_STATUS(rc, DM_ERR_INVALID, "errors: node size %u is refused", bad_sizes[i]);
		if (rc == DM_OK)
			dm_tree_destroy(t);
		rc = dm_tree_open_existing(c, 1, &tn, &t2);
		CHECK_STATUS(rc, DM_ERR_NOTFOUND, "errors: refused create of node size %u left no catalog entry",
					 bad_sizes[i]);
	}
	for (size_t i = 0; i < sizeof(good_sizes) / sizeof(good_sizes[0]); i++)
	{
		char		name[64];
		uint32_t	want = good_sizes[i] ? good_sizes[i] : 1024;

		snprintf(name, sizeof(name), "goodsize-%u", good_sizes[i]);
		dm_tree_name_named(&tn, name);
		memset(&opts, 0, sizeof(opts));
		opts.node_size = good_sizes[i];
		t = NULL;
		rc = dm_tree_create_new(c, 1, &tn, &opts, &t);
		if (CHECK_STATUS(rc, DM_OK, "errors: node size %u is accepted", good_sizes[i]))
		{
			CHECK(dm_tree_node_size(t) == want, "errors: node size %u gives %u-byte nodes (got %u)",
				  good_sizes[i], want, dm_tree_node_size(t));
			CHECK_STATUS(dm_tree_insert(t, dm_entry_make(1, 1), NULL), DM_OK,
						 "errors: insert into a %u-byte-node tree (existed may be NULL)", want);
			CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy %u-byte-node tree", want);
		}
	}
	CHECK(chunks_used(c) == c0, "errors: every chunk returned after the node-size trees (%" PRIu64 " vs %" PRIu64 ")",
		  chunks_used(c), c0);

	/* a memnode the client is not connected to */
	dm_tree_name_named(&tn, "unknown-memnode");
	memset(&opts, 0, sizeof(opts));
	opts.nmemnodes = 2;
	opts.memnodes[0] = 1;
	opts.memnodes[1] = 9;
	t = NULL;
	rc = dm_tree_create_new(c, 1, &tn, &opts, &t);
	CHECK(rc != DM_OK, "errors: create over a memnode the client has no connection to fails (%s)",
		  dm_strerror(rc));
	if (rc == DM_OK)
		dm_tree_destroy(t);
	rc = dm_tree_open_existing(c, 1, &tn, &t2);
	CHECK_STATUS(rc, DM_ERR_NOTFOUND, "errors: ... and leaves no catalog entry behind");
	if (rc == DM_OK)
		dm_tree_destroy(t2);
	CHECK_STATUS(dm_tree_open_existing(c, 1, &tn, &t2), DM_ERR_NOTFOUND, "errors: open of a missing tree");

	/* duplicate name */
	dm_tree_name_named(&tn, "errors-main");
	memset(&opts, 0, sizeof(opts));
	opts.node_size = 256;
	t = NULL;
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "errors: create errors-main"))
	{
		dm_client_destroy(c);
		return;
	}
	t2 = NULL;
	rc = dm_tree_create_new(c, 1, &tn, &opts, &t2);
	CHECK_STATUS(rc, DM_ERR_EXISTS, "errors: creating an existing name");
	CHECK_STATUS(dm_tree_insert(t, dm_entry_make(5, 5), &existed), DM_OK, "errors: the original still works");

	/* NULL-flagged tids only through dm_entry_null (key MAX) */
	rc = dm_tree_insert(t, dm_entry_make(5, 7 | DM_TID_NULL), &existed);
	CHECK_STATUS(rc, DM_ERR_INVALID, "errors: insert of key 5 with DM_TID_NULL set in the tid");
	ents[0] = dm_entry_make(3, 1);
	ents[1] = dm_entry_make(6, 2 | DM_TID_NULL);
	rc = dm_tree_insert_sorted(t, ents + 1, 1, &changed);
	CHECK_STATUS(rc, DM_ERR_INVALID, "errors: insert_sorted of a NULL-flagged tid with key 6");
	rc = dm_tree_insert(t, dm_entry_null(7), &existed);
	CHECK(rc == DM_OK && existed == 0, "errors: dm_entry_null(7) is inserted (%s)", dm_strerror(rc));
	rc = dm_tree_insert(t, dm_entry_make(UINT64_MAX, 7 | DM_TID_NULL), &existed);
	CHECK(rc == DM_OK && existed == 1, "errors: the same entry spelled out is the same NULL (%s, existed %d)",
		  dm_strerror(rc), existed);
	rc = dm_tree_contains(t, dm_entry_null(7), &found);
	CHECK(rc == DM_OK && found == 1, "errors: contains(dm_entry_null(7))");
	{
		uint64_t	tids[4];
		int			n = -1;

		rc = dm_tree_lookup(t, UINT64_MAX, tids, 4, &n);
		CHECK(rc == DM_OK && n == 0, "errors: lookup(UINT64_MAX) returns no NULL entry (n=%d)", n);
	}

	/* unsorted or duplicate batches are refused, not stored out of order */
	ents[0] = dm_entry_make(9, 1);
	ents[1] = dm_entry_make(8, 1);
	rc = dm_tree_insert_sorted(t, ents, 2, &changed);
	CHECK_STATUS(rc, DM_ERR_INVALID, "errors: insert_sorted of a descending batch");
	ents[1] = dm_entry_make(9, 1);
	rc = dm_tree_insert_sorted(t, ents, 2, &changed);
	CHECK_STATUS(rc, DM_ERR_INVALID, "errors: insert_sorted of a batch with a repeated entry");
	rc = dm_tree_delete_sorted(t, ents, 2, &changed);
	CHECK_STATUS(rc, DM_ERR_INVALID, "errors: delete_sorted of a batch with a repeated entry");
	rc = dm_tree_insert_sorted(t, ents, 0, &changed);
	CHECK(rc == DM_OK && changed == 0, "errors: insert_sorted of 0 entries is a no-op");
	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_OK && cnt == 2, "errors: after the refused calls the tree holds exactly 2 entries "
		  "(verify %s, %" PRIu64 ")", dm_strerror(rc), cnt);

	/* bulk load into a non-empty tree fails somewhere and changes nothing */
	ents[0] = dm_entry_make(1, 1);
	ents[1] = dm_entry_make(2, 1);
	b = NULL;
	rc = dm_tree_bulk_begin(t, 90, &b);
	if (rc == DM_OK)
	{
		rc = dm_bulk_add(b, ents, 2);
		if (rc == DM_OK)
			rc = dm_bulk_finish(b);
		else
			dm_bulk_abort(b);
	}
	CHECK(rc != DM_OK, "errors: bulk load into a non-empty tree fails (%s)", dm_strerror(rc));
	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_OK && cnt == 2, "errors: ... and leaves its 2 entries alone (verify %s, %" PRIu64 ")",
		  dm_strerror(rc), cnt);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy errors-main");

	/* bulk argument checks on an empty tree */
	dm_tree_name_named(&tn, "errors-bulk");
	t = NULL;
	if (CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "errors: create errors-bulk"))
	{
		CHECK_STATUS(dm_tree_bulk_begin(t, 5, &b), DM_ERR_INVALID, "errors: fillfactor 5 refused");
		CHECK_STATUS(dm_tree_bulk_begin(t, 101, &b), DM_ERR_INVALID, "errors: fillfactor 101 refused");

		rc = dm_tree_bulk_begin(t, 80, &b);
		if (CHECK_STATUS(rc, DM_OK, "errors: bulk_begin ff 80"))
		{
			ents[0] = dm_entry_make(10, 1);
			ents[1] = dm_entry_make(10, 2);
			ents[2] = dm_entry_make(11, 0);
			CHECK_STATUS(dm_bulk_add(b, ents, 3), DM_OK, "errors: bulk_add 3 ascending entries");
			ents[0] = dm_entry_make(11, 0);	/* equal to the last one added */
			CHECK_STATUS(dm_bulk_add(b, ents, 1), DM_ERR_INVALID, "errors: bulk_add of an entry equal to the previous");
			ents[0] = dm_entry_make(4, 0);
			CHECK_STATUS(dm_bulk_add(b, ents, 1), DM_ERR_INVALID, "errors: bulk_add of a smaller entry");
			ents[0] = dm_entry_make(20, 3);
			ents[1] = dm_entry_make(19, 3);
			CHECK_STATUS(dm_bulk_add(b, ents, 2), DM_ERR_INVALID, "errors: bulk_add of a descending piece");
			ents[0] = dm_entry_make(30, 3 | DM_TID_NULL);
			CHECK(dm_bulk_add(b, ents, 1) != DM_OK, "errors: bulk_add of a NULL-flagged tid with key 30 fails");
			dm_bulk_abort(b);
			rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
			CHECK(rc == DM_OK && cnt == 0, "errors: an aborted bulk load leaves the tree empty (verify %s, %" PRIu64 ")",
				  dm_strerror(rc), cnt);
		}
		/* after the abort a bulk load works */
		rc = dm_tree_bulk_begin(t, 100, &b);
		if (rc == DM_OK)
		{
			ents[0] = dm_entry_make(1, 1);
			ents[1] = dm_entry_null(1);
			rc = dm_bulk_add(b, ents, 2);
			if (rc == DM_OK)
				rc = dm_bulk_finish(b);
			else
				dm_bulk_abort(b);
		}
		CHECK_STATUS(rc, DM_OK, "errors: bulk load after an aborted one");
		rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
		CHECK(rc == DM_OK && cnt == 2, "errors: ... gives 2 entries (verify %s, %" PRIu64 ")", dm_strerror(rc), cnt);
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy errors-bulk");
	}

	/*
	 * An insert through another handle while a bulk load is under way (the
	 * tree is still empty, so the insert succeeds into the empty root): the
	 * bulk load must then fail, or the entry must be in the result — it
	 * must not vanish with the superseded root.
	 */
	dm_tree_name_named(&tn, "errors-bulk-race");
	t = t2 = NULL;
	if (CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "errors: create errors-bulk-race") &&
		CHECK_STATUS(dm_tree_open_existing(c, 1, &tn, &t2), DM_OK, "errors: second handle on errors-bulk-race"))
	{
		dm_entry	many[100];
		int			ins_rc,
					fin_rc;

		rc = dm_tree_bulk_begin(t, 90, &b);
		CHECK_STATUS(rc, DM_OK, "errors: bulk_begin on the empty tree");
		ins_rc = dm_tree_insert(t2, dm_entry_make(7777, 1), &existed);
		CHECK_STATUS(ins_rc, DM_OK, "errors: insert (7777,1) through the other handle during the bulk load");
		for (int i = 0; i < 100; i++)
			many[i] = dm_entry_make((uint64_t) i, 1);
		fin_rc = rc == DM_OK ? dm_bulk_add(b, many, 100) : rc;
		if (rc == DM_OK)
		{
			if (fin_rc == DM_OK)
				fin_rc = dm_bulk_finish(b);
			else
				dm_bulk_abort(b);
		}
		found = 0;
		rc = dm_tree_contains(t2, dm_entry_make(7777, 1), &found);
		CHECK(ins_rc != DM_OK || fin_rc != DM_OK || (rc == DM_OK && found == 1),
			  "errors: the entry inserted during the bulk load is not silently lost "
			  "(bulk load %s, entry %s afterwards)", dm_strerror(fin_rc), found ? "present" : "missing");
		rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
		CHECK(rc == DM_OK, "errors: ... and the tree verifies (%s, %" PRIu64 " entries) %s", dm_strerror(rc), cnt, msg);
		dm_tree_close(t2);
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy errors-bulk-race");
	}
	/* tids of stored entries stay below DM_TID_LIMIT (2^62) */
	dm_tree_name_named(&tn, "errors-tids");
	t = NULL;
	if (CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "errors: create errors-tids"))
	{
		CHECK_STATUS(dm_tree_insert(t, dm_entry_make(5, DM_TID_LIMIT), &existed), DM_ERR_INVALID,
					 "errors: insert of tid DM_TID_LIMIT");
		CHECK_STATUS(dm_tree_insert(t, dm_entry_null(DM_TID_LIMIT), &existed), DM_ERR_INVALID,
					 "errors: insert of dm_entry_null(DM_TID_LIMIT)");
		CHECK_STATUS(dm_tree_insert(t, dm_entry_make(5, DM_TID_LIMIT - 1), &existed), DM_OK,
					 "errors: insert of tid DM_TID_LIMIT - 1");
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy errors-tids");
	}

	/*
	 * lock_timeout_ms is a property of the tree (dm_tree_opts at creation),
	 * so a handle from dm_tree_open_existing must use it too: a lock left
	 * by a dead holder is taken over after 300 ms, not after the default
	 * 10 s.  (The margin is large: any handle that honours it finishes in
	 * well under 5 s.)
	 */
	dm_tree_name_named(&tn, "errors-locktimeout");
	memset(&opts, 0, sizeof(opts));
	opts.node_size = 256;
	opts.lock_timeout_ms = 300;
	t = t2 = NULL;
	if (CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "errors: create with lock_timeout_ms 300") &&
		CHECK_STATUS(dm_tree_insert(t, dm_entry_make(1, 1), &existed), DM_OK, "errors: insert into it"))
	{
		dm_tree_info ti;
		dm_gaddr	root = 0;
		uint64_t	old = 1,
					t0;
		double		s1 = -1,
					s2 = -1;

		rc = dm_tree_open(c, 1, &tn, &ti);
		if (rc == DM_OK)
			rc = dm_read(c, ti.root_addr, &root, 8);
		root &= ~DM_GADDR_RESERVED_BIT;
		/* a dead holder's lock on the root leaf */
		if (rc == DM_OK)
			rc = dm_cas(c, root, 0, UINT64_C(0xDEAD00000001), &old);
		if (CHECK(rc == DM_OK && old == 0, "errors: fake a dead holder's lock on the root leaf"))
		{
			t0 = now_ns();
			rc = dm_tree_insert(t, dm_entry_make(2, 1), &existed);
			s1 = (now_ns() - t0) / 1e9;
			CHECK(rc == DM_OK && s1 < 5, "errors: the creating handle takes the lock over (%s in %.2f s)",
				  dm_strerror(rc), s1);
			dm_cas(c, root, 0, UINT64_C(0xDEAD00000002), &old);
			rc = dm_tree_open_existing(c, 1, &tn, &t2);
			if (CHECK_STATUS(rc, DM_OK, "errors: open_existing on it"))
			{
				t0 = now_ns();
				rc = dm_tree_insert(t2, dm_entry_make(3, 1), &existed);
				s2 = (now_ns() - t0) / 1e9;
				CHECK(rc == DM_OK && s2 < 5, "errors: an opened handle honours the tree's lock_timeout_ms too "
					  "(%s in %.2f s)", dm_strerror(rc), s2);
				dm_tree_close(t2);
			}
		}
		rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
		CHECK(rc == DM_OK && cnt == 3, "errors: after the takeovers the tree verifies with 3 entries (%s, %" PRIu64 ")",
			  dm_strerror(rc), cnt);
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy errors-locktimeout");
	}

	CHECK(chunks_used(c) == c0, "errors: every chunk returned at the end (%" PRIu64 " vs %" PRIu64 ")",
		  chunks_used(c), c0);
	dm_client_destroy(c);
}

/* ---- corruption ------------------------------------------------------------------ */

/* Node field offsets (dm_tree.h layout). */
#define NODE_OFF_CHECKSUM 16
#define NODE_OFF_MAGIC 24
#define NODE_OFF_LEVEL 26
#define NODE_OFF_COUNT 28
#define NODE_OFF_TAG 32

typedef struct node_hdr
{
	uint16_t	magic;
	uint8_t		level;
	uint16_t	count;
	uint64_t	tag;
} node_hdr;

static int
read_node(dm_client *c, dm_gaddr a, uint8_t *buf, uint32_t ns, node_hdr *h)
{
	int			rc = dm_read(c, a, buf, ns);

	if (rc != DM_OK)
		return rc;
	memcpy(&h->magic, buf + NODE_OFF_MAGIC, 2);
	h->level = buf[NODE_OFF_LEVEL];
	memcpy(&h->count, buf + NODE_OFF_COUNT, 2);
	memcpy(&h->tag, buf + NODE_OFF_TAG, 8);
	return DM_OK;
}

/* Child i's address in an inner node. */
static dm_gaddr
inner_child(const uint8_t *buf, int i)
{
	dm_gaddr	a;

	memcpy(&a, buf + DM_NODE_HEADER + 24 * i + 16, 8);
	return a;
}

/* What a bounded operation reports back through its pipe. */
typedef struct bounded_res
{
	int			stage;			/* 0 = connect/open, 1 = the operation */
	int			rc;
	int			n;
	double		secs;
	char		msg[256];
} bounded_res;

enum bop
{
	BOP_LOOKUP, BOP_CONTAINS, BOP_INSERT, BOP_DELETE, BOP_SCAN, BOP_SCAN_BACK,
	BOP_INSERT_SORTED, BOP_STATS, BOP_VERIFY
};
static const char *const bop_names[] = {"lookup", "contains", "insert", "delete", "forward scan",
"backward scan", "insert_sorted", "stats_get", "verify"};

static void
bounded_child(const tcfg *cf, const dm_tree_name *tn, enum bop op, uint64_t key, int wfd)
{
	bounded_res res;
	dm_client  *c;
	dm_tree    *t = NULL;
	uint64_t	t0,
				tids[16],
				cnt;
	int			rc,
				x = 0;

	memset(&res, 0, sizeof(res));
	c = connect_client(cf, mn.addr);
	rc = c ? dm_tree_open_existing(c, 1, tn, &t) : DM_ERR_CONNECT;
	if (rc != DM_OK)
	{
		res.rc = rc;
		snprintf(res.msg, sizeof(res.msg), "%s", t ? terr(t) : (c ? dm_client_error(c) : "no client"));
		goto out;
	}
	res.stage = 1;
	t0 = now_ns();
	switch (op)
	{
		case BOP_LOOKUP:
			rc = dm_tree_lookup(t, key, tids, 16, &res.n);
			break;
		case BOP_CONTAINS:
			rc = dm_tree_contains(t, dm_entry_make(key, 1), &x);
			break;
		case BOP_INSERT:
			rc = dm_tree_insert(t, dm_entry_make(key, 2), &x);
			break;
		case BOP_DELETE:
			rc = dm_tree_delete(t, dm_entry_make(key, 1), &x);
			break;
		case BOP_SCAN:
		case BOP_SCAN_BACK:
			{
				dm_range	r = {dm_key_lo(key, 1), 1, DM_ENTRY_INF, 1, op == BOP_SCAN_BACK};
				dm_iter    *it = NULL;
				dm_entry	e;

				if (op == BOP_SCAN_BACK)
				{
					r.lo = DM_ENTRY_MIN;
					r.hi = dm_key_hi(key, 1);
				}
				rc = dm_iter_open(t, &r, &it);
				if (rc == DM_OK)
				{
					while ((x = dm_iter_next(it, &e)) == 1)
						res.n++;
					rc = x < 0 ? -x : DM_OK;
					dm_iter_close(it);
				}
				break;
			}
		case BOP_INSERT_SORTED:
			{
				dm_entry	b[3] = {{key, 3}, {key + 1, 3}, {key + 2, 3}};

				rc = dm_tree_insert_sorted(t, b, 3, &x);
				break;
			}
		case BOP_STATS:
			{
				dm_tree_stats st;

				rc = dm_tree_stats_get(t, &st);
				break;
			}
		case BOP_VERIFY:
			rc = dm_tree_verify(t, &cnt, res.msg, sizeof(res.msg));
			break;
	}
	res.secs = (now_ns() - t0) / 1e9;
	res.rc = rc;
	if (rc != DM_OK && op != BOP_VERIFY)
		snprintf(res.msg, sizeof(res.msg), "%s", terr(t));
out:
	if (write(wfd, &res, sizeof(res)) != (ssize_t) sizeof(res))
		_exit(3);
	_exit(0);
}

/*
 * Run one operation in a child on its own client and handle, at most
 * limit_s seconds: an operation that loops forever on a corrupt node fails
 * the test instead of hanging it.  Returns 0 if the child finished.
 */
static int
run_bounded(const tcfg *cf, const dm_tree_name *tn, enum bop op, uint64_t key, int limit_s,
			bounded_res *res)
{
	int			pfd[2],
				st;
	pid_t		pid;
	struct pollfd p;
	ssize_t		got = 0;

	memset(res, 0, sizeof(*res));
	res->rc = -1;
	if (pipe(pfd) != 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0)
	{
		close(pfd[0]);
		bounded_child(cf, tn, op, key, pfd[1]);
	}
	close(pfd[1]);
	p.fd = pfd[0];
	p.events = POLLIN;
	while (poll(&p, 1, limit_s * 1000) < 0 && errno == EINTR)
		;
	if (p.revents & (POLLIN | POLLHUP))
		got = read(pfd[0], res, sizeof(*res));
	close(pfd[0]);
	if (got != (ssize_t) sizeof(*res))
	{
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		snprintf(res->msg, sizeof(res->msg), "did not finish within %d s", limit_s);
		return -1;
	}
	waitpid(pid, &st, 0);
	return 0;
}

static void
expect_bounded(const tcfg *cf, const dm_tree_name *tn, enum bop op, uint64_t key, int want,
			   const char *what)
{
	bounded_res res;
	int			done = run_bounded(cf, tn, op, key, 60, &res) == 0;
	int			ok;

	if (want == DM_ERR_CORRUPT)
		ok = done && res.rc == DM_ERR_CORRUPT;	/* from the op, or from open if it reads the root */
	else
		ok = done && res.stage == 1 && res.rc == want;
	CHECK(ok, "corrupt %s: %s %s key %" PRIu64 " -> %s (got %s%s in %.2f s)", cf->name, what, bop_names[op],
		  key, dm_strerror(want), done ? dm_strerror(res.rc) : "no answer",
		  done && res.stage == 0 ? " from open_existing" : "", res.secs);
	if (!ok || op == BOP_VERIFY)
		tap_diag("  message: %s", res.msg);
	if (op == BOP_VERIFY && want == DM_ERR_CORRUPT)
		CHECK(done && res.msg[0] != '\0', "corrupt %s: verify describes the problem", cf->name);
}

static void
run_corrupt(const tcfg *cf)
{
	char		name[64],
				msg[512];
	dm_client  *c = connect_client(cf, mn.addr);
	dm_tree    *t = NULL;
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_tree_info ti;
	uint32_t	ns = 256;
	uint8_t		root[4096],
				leaf[4096],
				garbage[4096],
				nb[4096];
	node_hdr	h = {0};
	dm_gaddr	rootw = 0,
				rootaddr,
				leftmost,
				a;
	dm_entry	ents[2000];
	uint64_t	cnt,
				c0;
	int			rc,
				levels = 0,
				changed;

	rng_seed_label(g_seed, cf->name, 0);
	if (!CHECK(c != NULL, "corrupt %s: client connects", cf->name))
		return;
	c0 = chunks_used(c);
	snprintf(name, sizeof(name), "corrupt-%s", cf->name);
	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = ns;
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "corrupt %s: create", cf->name))
		goto out_client;
	/* keys 0..1999 with tid 1: key 0 is in the leftmost leaf, 1999 in the rightmost */
	for (int i = 0; i < 2000; i++)
		ents[i] = dm_entry_make((uint64_t) i, 1);
	rc = dm_tree_insert_sorted(t, ents, 2000, &changed);
	CHECK(rc == DM_OK && changed == 2000, "corrupt %s: 2000 entries inserted", cf->name);
	CHECK_STATUS(dm_tree_verify(t, &cnt, msg, sizeof(msg)), DM_OK, "corrupt %s: verify before", cf->name);

	/* root word in the catalog -> root node -> leftmost leaf */
	rc = dm_tree_open(c, 1, &tn, &ti);
	if (rc == DM_OK)
		rc = dm_read(c, ti.root_addr, &rootw, 8);
	rootaddr = rootw & ~DM_GADDR_RESERVED_BIT;
	if (rc == DM_OK)
		rc = read_node(c, rootaddr, root, ns, &h);
	if (!CHECK(rc == DM_OK && h.magic == DM_NODE_MAGIC && h.tag == dm_tree_id(t) && h.level >= 2,
			   "corrupt %s: the catalog's root word (0x%" PRIx64 ") points at an inner root node of this tree "
			   "(magic 0x%x, level %d, tag 0x%" PRIx64 " vs id 0x%" PRIx64 ")", cf->name, rootw, h.magic, h.level,
			   h.tag, dm_tree_id(t)))
		goto out_tree;
	a = rootaddr;
	memcpy(nb, root, ns);
	while (h.level > 0 && levels++ < 16)
	{
		a = inner_child(nb, 0);
		if (read_node(c, a, nb, ns, &h) != DM_OK || h.magic != DM_NODE_MAGIC)
			break;
	}
	leftmost = a;
	if (!CHECK(h.level == 0 && h.magic == DM_NODE_MAGIC && h.count > 0, "corrupt %s: found the leftmost leaf", cf->name))
		goto out_tree;
	memcpy(leaf, nb, ns);

	/*
	 * (a) garbage over the leftmost leaf (all but its lock word, left free),
	 * with an absurd count: validation must not trust the count to size
	 * the checksum.
	 */
	for (uint32_t i = 0; i < ns; i++)
		garbage[i] = (uint8_t) rnd();
	memset(garbage, 0, 8);
	garbage[NODE_OFF_COUNT] = 0xFF;
	garbage[NODE_OFF_COUNT + 1] = 0xFF;
	CHECK_STATUS(dm_write(c, leftmost + 8, garbage + 8, ns - 8), DM_OK, "corrupt %s: garbage over the leftmost leaf",
				 cf->name);
	expect_bounded(cf, &tn, BOP_LOOKUP, 0, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_CONTAINS, 0, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_INSERT, 0, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_DELETE, 1, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_SCAN, 0, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_SCAN_BACK, 1500, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_INSERT_SORTED, 0, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_LOOKUP, 1999, DM_OK, "garbage leaf: a leaf elsewhere still works:");
	expect_bounded(cf, &tn, BOP_VERIFY, 0, DM_ERR_CORRUPT, "garbage leaf:");
	/* heal (lock word included: a writer may have left it taken) */
	CHECK_STATUS(dm_write(c, leftmost, leaf, ns), DM_OK, "corrupt %s: restore the leaf", cf->name);
	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_OK && cnt == 2000, "corrupt %s: restored leaf verifies with 2000 entries (%s %s)", cf->name,
		  dm_strerror(rc), msg);

	/* (b) a wrong checksum in the root */
	if (read_node(c, rootaddr, root, ns, &h) == DM_OK)
	{
		uint8_t		bad[8];

		for (int i = 0; i < 8; i++)
			bad[i] = root[NODE_OFF_CHECKSUM + i] ^ 0x5A;
		CHECK_STATUS(dm_write(c, rootaddr + NODE_OFF_CHECKSUM, bad, 8), DM_OK,
					 "corrupt %s: overwrite the root's checksum", cf->name);
		expect_bounded(cf, &tn, BOP_LOOKUP, 1000, DM_ERR_CORRUPT, "bad root checksum:");
		expect_bounded(cf, &tn, BOP_INSERT, 1000, DM_ERR_CORRUPT, "bad root checksum:");
		expect_bounded(cf, &tn, BOP_SCAN, 0, DM_ERR_CORRUPT, "bad root checksum:");
		expect_bounded(cf, &tn, BOP_STATS, 0, DM_ERR_CORRUPT, "bad root checksum:");
		expect_bounded(cf, &tn, BOP_VERIFY, 0, DM_ERR_CORRUPT, "bad root checksum:");
		/* and from this process's handle too: the verify message is printed */
		rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
		CHECK(rc == DM_ERR_CORRUPT && msg[0], "corrupt %s: verify on the creating handle: %s: %s", cf->name,
			  dm_strerror(rc), msg);
		CHECK_STATUS(dm_write(c, rootaddr, root, ns), DM_OK, "corrupt %s: restore the root", cf->name);
		rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
		CHECK(rc == DM_OK && cnt == 2000, "corrupt %s: restored root verifies with 2000 entries (%s %s)", cf->name,
			  dm_strerror(rc), msg);
		expect_bounded(cf, &tn, BOP_INSERT, 5000, DM_OK, "healed:");
	}

	/* (c) even a corrupt tree can be destroyed (DROP INDEX must work) */
	CHECK_STATUS(dm_write(c, rootaddr + 8, garbage + 8, ns - 8), DM_OK, "corrupt %s: garbage over the root", cf->name);
	rc = dm_tree_destroy(t);
	t = NULL;
	CHECK_STATUS(rc, DM_OK, "corrupt %s: dm_tree_destroy of a tree with a garbage root", cf->name);
	CHECK(chunks_used(c) == c0, "corrupt %s: chunks_used back to %" PRIu64 " (now %" PRIu64 ")", cf->name, c0,
		  chunks_used(c));
out_tree:
	if (t)
		dm_tree_destroy(t);
out_client:
	dm_client_destroy(c);
}


/* ---- running out of memnode memory ------------------------------------------------ */

/*
 * A 16 MiB memnode fills up: inserts must then fail with DM_ERR_NOSPACE
 * (not crash, hang or corrupt), the tree must still verify and hold every
 * acknowledged entry (the one failed insert may or may not have landed:
 * its leaf split may have succeeded before the parent's failed), and
 * destroy must give every chunk back.
 */
static memnode_proc mn_small;

static void
run_nospace(const tcfg *cf)
{
	dm_client  *c = connect_client(cf, mn_small.addr);
	dm_tree    *t = NULL;
	dm_tree_name tn;
	dm_tree_opts opts;
	model		m = {0};
	dm_entry	failed_e = {0, 0};
	uint64_t	cnt = 0,
				n_ok = 0,
				c0 = 0;
	dm_node_stats nst;
	char		msg[512] = "";
	int			rc = DM_OK,
				existed;

	rng_seed_label(g_seed, "nospace", 0);
	failmsg[0] = '\0';
	if (!CHECK(c != NULL, "nospace %s: client connects to the 16 MiB memnode", cf->name))
		return;
	if (dm_node_stats_get(c, 2, &nst) == DM_OK)
		c0 = nst.chunks_used;
	dm_tree_name_named(&tn, "nospace");
	memset(&opts, 0, sizeof(opts));
	opts.node_size = 256;
	if (!CHECK_STATUS(dm_tree_create_new(c, 2, &tn, &opts, &t), DM_OK, "nospace %s: create on memnode 2", cf->name))
	{
		dm_client_destroy(c);
		return;
	}
	/* random keys: splits everywhere, at every level */
	for (uint64_t i = 0; i < 2000000; i++)
	{
		dm_entry	e = dm_entry_make(rnd() >> 8, rnd_below(4));

		rc = dm_tree_insert(t, e, &existed);
		if (rc != DM_OK)
		{
			failed_e = e;
			break;
		}
		n_ok += m_insert(&m, e);
	}
	CHECK_STATUS(rc, DM_ERR_NOSPACE, "nospace %s: inserts fail with NOSPACE once the memnode is full "
				 "(after %" PRIu64 " entries): %s", cf->name, n_ok, terr(t));
	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	CHECK_STATUS(rc, DM_OK, "nospace %s: the full tree verifies %s", cf->name, msg);
	if (cnt == m.n + 1 && !m_has(&m, failed_e))
		m_insert(&m, failed_e);	/* the failed insert landed: allowed */
	CHECK(cnt == m.n, "nospace %s: it holds the %zu acknowledged entries (verify counts %" PRIu64 ")", cf->name, m.n,
		  cnt);
	{
		dm_range	full = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, 0};

		check_range(t, &m, &full);
		full.backward = 1;
		check_range(t, &m, &full);
		for (int i = 0; i < 200 && m.n && !failmsg[0]; i++)
			op_contains(t, &m, m.e[rnd_below(m.n)]);
		check_nofail("nospace %s: full scans and contains equal the acknowledged entries", cf->name);
	}
	/* deleting still works on a full memnode (no allocation needed) */
	for (int i = 0; i < 500 && m.n && !failmsg[0]; i++)
		op_delete(t, &m, m.e[rnd_below(m.n)]);
	check_nofail("nospace %s: deletes work on the full memnode", cf->name);
	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_OK && cnt == m.n, "nospace %s: verify after the deletes (%s, %" PRIu64 " vs %zu) %s", cf->name,
		  dm_strerror(rc), cnt, m.n, msg);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "nospace %s: destroy", cf->name);
	CHECK(dm_node_stats_get(c, 2, &nst) == DM_OK && nst.chunks_used == c0,
		  "nospace %s: chunks_used back to %" PRIu64 " (now %" PRIu64 ")", cf->name, c0, nst.chunks_used);
	/* and the memory is usable again */
	t = NULL;
	rc = dm_tree_create_new(c, 2, &tn, &opts, &t);
	if (CHECK_STATUS(rc, DM_OK, "nospace %s: a new tree on the freed memnode", cf->name))
	{
		for (uint64_t i = 0; i < 20000 && rc == DM_OK; i++)
			rc = dm_tree_insert(t, dm_entry_make(rnd(), 1), NULL);
		CHECK_STATUS(rc, DM_OK, "nospace %s: 20000 inserts fit again", cf->name);
		dm_tree_destroy(t);
	}
	m_free(&m);
	dm_client_destroy(c);
}

/* ---- verify detects broken invariants (nodes with valid checksums) ------------- */

/*
 * Corruption that passes validation: a node edited locally, resealed with
 * dm_node_seal (dm_node.h, the tree's own checksum) and written back, so
 * readers accept it and only dm_tree_verify can notice.  Each case breaks
 * one invariant the header promises verify checks, then the original bytes
 * are restored and verify must pass again.
 */
static dm_client *vd_c;
static dm_tree *vd_t;
static const char *vd_name;

static void
vd_case(dm_gaddr addr, const uint8_t *orig, uint8_t *mod, uint32_t ns, const char *what)
{
	char		msg[512] = "";
	uint64_t	cnt = 0;
	int			rc;

	NODE_HDR(mod)->lock = 0;
	dm_node_seal(mod);
	if (!CHECK_STATUS(dm_write(vd_c, addr, mod, ns), DM_OK, "verify %s: write a node with %s", vd_name, what))
		return;
	rc = dm_tree_verify(vd_t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_ERR_CORRUPT && msg[0], "verify %s: detects %s (%s: %s)", vd_name, what, dm_strerror(rc), msg);
	/* restore (the version goes back too: nobody else writes this tree) */
	dm_write(vd_c, addr, orig, ns);
	rc = dm_tree_verify(vd_t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_OK && cnt == 2000, "verify %s: passes again once the node is restored (%s %s)", vd_name,
		  dm_strerror(rc), msg);
}

static void
run_verify_detects(const tcfg *cf)
{
	char		name[64];
	uint32_t	ns = 256;
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_tree_info ti;
	dm_entry	ents[2000];
	uint8_t		root[4096],
				p1[4096],
				l0[4096],
				l1[4096],
				mod[4096];
	dm_gaddr	rootw = 0,
				ra,
				pa,
				a0,
				a1;
	int			rc,
				changed = 0;

	vd_name = cf->name;
	vd_c = connect_client(cf, mn.addr);
	if (!CHECK(vd_c != NULL, "verify %s: client connects", cf->name))
		return;
	snprintf(name, sizeof(name), "vd-%s", cf->name);
	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = ns;
	vd_t = NULL;
	if (!CHECK_STATUS(dm_tree_create_new(vd_c, 1, &tn, &opts, &vd_t), DM_OK, "verify %s: create", cf->name))
	{
		dm_client_destroy(vd_c);
		return;
	}
	for (int i = 0; i < 2000; i++)
		ents[i] = dm_entry_make((uint64_t) i * 10, 1);
	rc = dm_tree_insert_sorted(vd_t, ents, 2000, &changed);
	CHECK(rc == DM_OK && changed == 2000, "verify %s: 2000 entries (keys 0, 10, .., 19990; tid 1)", cf->name);

	/* root -> a level-1 node (second child all the way down) -> its first two leaves */
	rc = dm_tree_open(vd_c, 1, &tn, &ti);
	if (rc == DM_OK)
		rc = dm_read(vd_c, ti.root_addr, &rootw, 8);
	ra = rootw & ~DM_GADDR_RESERVED_BIT;
	if (rc == DM_OK)
		rc = dm_read(vd_c, ra, root, ns);
	if (!CHECK(rc == DM_OK && NODE_HDR(root)->magic == DM_NODE_MAGIC && NODE_HDR(root)->level >= 2 &&
			   NODE_HDR(root)->count >= 2, "verify %s: root of height >= 3 found", cf->name))
		goto out;
	pa = ra;
	memcpy(p1, root, ns);
	while (NODE_HDR(p1)->level > 1)
	{
		pa = INNER_ENTS(p1)[NODE_HDR(p1)->count > 1 ? 1 : 0].child;
		if (dm_read(vd_c, pa, p1, ns) != DM_OK || NODE_HDR(p1)->magic != DM_NODE_MAGIC)
			break;
	}
	a0 = INNER_ENTS(p1)[0].child;
	a1 = INNER_ENTS(p1)[1].child;
	if (!CHECK(NODE_HDR(p1)->level == 1 && NODE_HDR(p1)->count >= 3 && dm_read(vd_c, a0, l0, ns) == DM_OK &&
			   dm_read(vd_c, a1, l1, ns) == DM_OK && NODE_HDR(l0)->level == 0 && NODE_HDR(l1)->count >= 2,
			   "verify %s: a level-1 node with >= 3 children and its first two leaves found", cf->name))
		goto out;

	memcpy(mod, l1, ns);
	{
		dm_entry	x = LEAF_ENTS(mod)[0];

		LEAF_ENTS(mod)[0] = LEAF_ENTS(mod)[1];
		LEAF_ENTS(mod)[1] = x;
	}
	vd_case(a1, l1, mod, ns, "two leaf entries out of order");

	memcpy(mod, l1, ns);
	LEAF_ENTS(mod)[NODE_HDR(mod)->count - 1] = NODE_HDR(mod)->high;
	vd_case(a1, l1, mod, ns, "a leaf entry equal to its high fence");

	memcpy(mod, l1, ns);
	LEAF_ENTS(mod)[0] = dm_entry_make(NODE_HDR(mod)->low.key - 1, 1);
	vd_case(a1, l1, mod, ns, "a leaf entry below its low fence");

	memcpy(mod, l1, ns);
	LEAF_ENTS(mod)[0].tid |= DM_TID_NULL;
	vd_case(a1, l1, mod, ns, "a NULL-flagged tid on a non-NULL key");

	memcpy(mod, l1, ns);
	NODE_HDR(mod)->left = 0;
	vd_case(a1, l1, mod, ns, "no left pointer on a leaf that has a left neighbour");

	memcpy(mod, l1, ns);
	NODE_HDR(mod)->flags |= DM_NODE_DEAD;
	vd_case(a1, l1, mod, ns, "a linked leaf marked dead");

	memcpy(mod, l0, ns);
	NODE_HDR(mod)->right = NODE_HDR(l1)->right;
	vd_case(a0, l0, mod, ns, "a sibling pointer that skips a leaf");

	/*
	 * Separators must equal their child's low fence.  One a little below
	 * it sends a search for an entry in between to a child whose low fence
	 * is above that entry (the search restarts forever); one a little above
	 * it is harmless to searches but still wrong.
	 */
	memcpy(mod, p1, ns);
	INNER_ENTS(mod)[1].sep.tid = 0;
	vd_case(pa, p1, mod, ns, "a separator below its child's low fence");

	memcpy(mod, p1, ns);
	INNER_ENTS(mod)[1].sep.tid = 2;
	vd_case(pa, p1, mod, ns, "a separator above its child's low fence");

	memcpy(mod, p1, ns);
	INNER_ENTS(mod)[1].child = INNER_ENTS(mod)[0].child;
	vd_case(pa, p1, mod, ns, "the same child listed twice");

	memcpy(mod, p1, ns);
	{
		dm_inner_ent x = INNER_ENTS(mod)[1];

		INNER_ENTS(mod)[1] = INNER_ENTS(mod)[2];
		INNER_ENTS(mod)[2] = x;
	}
	vd_case(pa, p1, mod, ns, "two separators out of order");

	memcpy(mod, root, ns);
	INNER_ENTS(mod)[0].child = a0;
	vd_case(ra, root, mod, ns, "a child pointer that skips a level");

	memcpy(mod, root, ns);
	NODE_HDR(mod)->high = dm_entry_make(1000000, 0);
	vd_case(ra, root, mod, ns, "a root that does not span the key space");

out:
	CHECK_STATUS(dm_tree_destroy(vd_t), DM_OK, "verify %s: destroy", cf->name);
	dm_client_destroy(vd_c);
}

/* ----------------------------------------------------------------------------------- */

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "512M", "--chunk-size", "1M",
	"--offload-threads", "2", NULL};
	const char *const args_small[] = {"--id", "2", "--shm", "--size", "16M", "--chunk-size", "1M",
	"--catalog-size", "16", NULL};
	uint64_t	t0 = now_ns();
	const char *only = getenv("TREE_BACKEND");	/* "tcp" or "shm": run only that one */

	tree_test_env(&g_seed, &g_scale);

	if (memnode_start(&mn, 0, args) != 0 || memnode_start(&mn_small, 0, args_small) != 0)
	{
		CHECK(0, "start memnodes (id 1, 512M; id 2, 16M; --shm)");
		return tap_done();
	}

	if (test_ucx())
	{
		/* the ucx variant: the model and bulk runs over ucx */
		for (int j = 0; j < 2; j++)
		{
			run_model(&cfg_ucx, j == 0 ? 256 : 1024);
			run_bulk(&cfg_ucx, j == 0 ? 256 : 1024, 90, 0);
			run_bulk(&cfg_ucx, j == 0 ? 256 : 1024, 90, 1);
		}
	}
	else
	{
		const tcfg *cfs[2] = {&cfg_tcp, &cfg_shm};
		const uint32_t sizes[2] = {256, 1024};

		run_errors(only && strcmp(only, "shm") == 0 ? &cfg_shm : &cfg_tcp);
		for (int i = 0; i < 2; i++)
			if (!only || strcmp(only, cfs[i]->name) == 0)
				run_corrupt(cfs[i]);
		run_verify_detects(only && strcmp(only, "tcp") == 0 ? &cfg_tcp : &cfg_shm);
		run_nospace(&cfg_shm);
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++)
				if (!only || strcmp(only, cfs[i]->name) == 0)
					run_model(cfs[i], sizes[j]);
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2 && (!only || strcmp(only, cfs[i]->name) == 0); j++)
			{
				const int	ffs[3] = {50, 90, 100};

				for (int f = 0; f < 3; f++)
				{
					run_bulk(cfs[i], sizes[j], ffs[f], 0);
					run_bulk(cfs[i], sizes[j], ffs[f], 1);
					run_bulk(cfs[i], sizes[j], ffs[f], sizes[j] == 256 ? 3000 : 20000);
				}
			}
	}

	CHECK(WIFEXITED(memnode_stop(&mn_small, SIGTERM)), "small memnode exits on SIGTERM");
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	tap_diag("total %.1f s", (now_ns() - t0) / 1e9);
	return tap_done();
}
