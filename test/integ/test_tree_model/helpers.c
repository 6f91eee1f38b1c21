/*
 * helpers.c — the support every section of the model test uses: the memnodes
 * and run settings, the op log printed on a failure, random entries, keys
 * and ranges (edge keys, a hot key with many tids), a client per
 * configuration, and the checks of the tree against the model: ranges both
 * ways, lookups of single keys, and the whole-tree comparison with
 * dm_tree_verify.
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

#include "tree_model.h"

const tcfg cfg_tcp = {"tcp", DM_BACKEND_TCP, 0};
const tcfg cfg_shm = {"shm", DM_BACKEND_SHM, 0};
const tcfg cfg_ucx = {"ucx", DM_BACKEND_UCX, 0};

memnode_proc mn;
uint64_t g_seed = 1;
int	g_scale = 100;		/* percent */

int
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
unsigned oplog_n;

void
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
char failmsg[2048];

void
failf(const char *fmt,...)
{
	va_list		ap;

	if (failmsg[0])
		return;
	va_start(ap, fmt);
	vsnprintf(failmsg, sizeof(failmsg), fmt, ap);
	va_end(ap);
}

int
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

uint64_t g_nkeys = 3000;
uint64_t g_ntids = 4;

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

dm_entry
rand_entry(void)
{
	uint64_t	r = rnd_below(1000);

	if (r < 10)
		return tk(rnd_below(2), rand_tid());	/* keys 0 and 1 */
	if (r < 20)
		return tk(UINT64_MAX - rnd_below(2), rand_tid());	/* MAX-1, non-NULL MAX */
	if (r < 45 && test_key_var())
		return tk(UINT64_MAX - 3 + rnd_below(2), rnd_below(40) == 0 ? rnd() & TID_MASK : rnd_below(64));
	if (r < 45)
		return dm_entry_null(rnd_below(40) == 0 ? rnd() & TID_MASK : rnd_below(64));
	if (r < 90)
		return tk(HOT_KEY, rnd_below(400) * 3);
	return tk(KEY_BASE + rnd_below(g_nkeys) * KEY_STRIDE, rand_tid());
}

/* A random key for bounds and lookups: on keys, between keys, at the edges. */
uint64_t
rand_key(const model *m)
{
	uint64_t	r = rnd_below(100);

	if (r < 40 && m->n)
		return tk_key(m->e[rnd_below(m->n)]);
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

				*b = is_hi ? tk_hi(k, *incl) : tk_lo(k, *incl);
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

dm_range
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

dm_client *
connect_client(const tcfg *cf, const char *addr)
{
	return test_client_connect(cf->backend, cf->flags, 30000, "test_tree_model", addr, NULL);
}

uint64_t
chunks_used(dm_client *c)
{
	dm_node_stats st;

	if (dm_node_stats_get(c, 1, &st) != DM_OK)
		return UINT64_MAX;
	return st.chunks_used;
}

const char *
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
		/* e's suffix is the iterator's until the next call: keep the interned one */
		if (!tk_own(e, &(*out)[*n]))
		{
			failf("iterator returned %s for %s, whose key bytes are no test key's (%s is)",
				  E(e), R(r), E((*out)[*n]));
			rc = DM_ERR_INTERNAL;
			break;
		}
		(*n)++;
	}
	dm_iter_close(it);
	return rc;
}

/* Compare a range scan with the model's slice; record the first difference. */
int
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
int
check_lookup(dm_tree *t, const model *m, uint64_t key)
{
	size_t		from = m_lower(m, tk(key, 0)),
				to = m_upper(m, tk(key, DM_TID_MAX));
	int			want = (int) (to - from),
				max = want + 8,
				n = -1,
				rc;
	uint64_t   *tids = malloc(sizeof(uint64_t) * (size_t) max);

	rc = tk_lookup(t, key, tids, max, &n);
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
void
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
