/*
 * test_tree_cache.c — the remote B-link tree read and written through the
 * compute-side node cache (dm_cache.h) and the key-ownership rules of
 * compute instances (dm_tree.h, "Compute-side cache and key ownership"),
 * against a real memnode over shm and tcp.
 *
 * Why: the cache changes who may write a node and how: owned nodes are
 * written under the cache frame's local lock only (no remote CAS), shared
 * ones under both locks, and every write goes through to remote memory
 * before it returns.  A mistake there does not crash anything; it loses or
 * resurrects entries, serves a stale copy, or lets two processes write one
 * node at once.  So every group compares results with a model (entrymodel.h)
 * and ends with dm_tree_verify (remote memory), dm_tree_verify_cache (every
 * cached owned node identical to remote memory, no shared leaf or foreign
 * node cached) and dm_cache_check (the cache's own structures).  256-byte
 * nodes (10 entries a leaf, 7 children an inner node) make trees of a few
 * thousand entries tall, and caches of a few dozen frames evict all the time.
 *
 * Groups:
 *   1 single   one process, one tiny cache (24, 32, 40 frames: 2-5% of the
 *              tree) per policy (DEX admitting every leaf, DEX admitting
 *              10%, INNER) and transport: random singles, batches, lookups,
 *              scans compared with the model; a second handle without a
 *              cache sees every write at once and exactly the model
 *              (write-through); cache statistics show the cache did its
 *              work (hits, evictions, coolings, local writes; no leaf under
 *              INNER);
 *   2 atomics  a warm cache holding the whole tree: inserts into owned
 *              leaves take no remote atomic and fewer round trips than the
 *              same inserts through a handle without a cache;
 *   3 multi    4 writer processes and 1 scanner share one DEX cache of
 *              ~1% of the tree (shm, tcp, shm with torn transfers); each
 *              writer owns the keys == its index mod 4, so its own results
 *              are exact while the others run;
 *   4 two      two instances (2 processes each, one cache each) own
 *              [0, K) and [K, max]; keys dense around K, so the root and
 *              inner nodes are shared; reads cross the whole key space;
 *              writes outside the instance's range fail with DM_ERR_NOTOWNER
 *              and change nothing;
 *   5 pmap     partition-map validation, epochs, and refresh dropping the
 *              tree's cached nodes and changing ownership;
 *   6 bulk     a bulk load into a tree whose empty root is cached: the old
 *              root must not be served afterwards.
 *
 * Reproduce: TREE_SEED=<n> (printed) changes every random stream;
 * TREE_SCALE=<percent> scales operation counts; TREE_GROUPS=1,3 runs only
 * those groups.  Failure messages name the process and operation number.
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

#define NODE_SIZE	256
#define NTIDS		4			/* tids 1..NTIDS per key for writers' entries; tid 0 = stable */
#define FOREIGN_TID	(NTIDS + 1)	/* only in writes that must be refused: never in the tree */
#define MAXCHILD	8
#define MAXFINAL	8192		/* a writer's final entries at most */
#define HOME		1			/* memnode id */

static memnode_proc mn;
static uint64_t g_seed = 1;
static int	g_scale = 100;

/* ---- small helpers ------------------------------------------------------------------ */

static int
scaled(int n)
{
	long		v = (long) n * g_scale / 100;

	return v < 1 ? 1 : (int) v;
}

static const char *
terr(const dm_tree *t)
{
	const char *s = dm_tree_error(t);

	return s ? s : "";
}

static uint64_t
sum_levels(const uint64_t *a)
{
	uint64_t	s = 0;

	for (int i = 0; i < DM_CACHE_LEVELS; i++)
		s += a[i];
	return s;
}

static uint64_t
atomics_of(const dm_counters *cc)
{
	return cc->ops[DM_OP_CAS] + cc->ops[DM_OP_FAA] + cc->ops[DM_OP_FETCH_OR];
}

/* ---- transports, clients, trees ------------------------------------------------------ */

typedef struct transport
{
	const char *name;
	int			backend;
	uint32_t	flags;
} transport;

static const transport TR_SHM = {"shm", DM_BACKEND_SHM, 0};
static const transport TR_TCP = {"tcp", DM_BACKEND_TCP, 0};
/* every READ/WRITE torn into 8-byte pieces with other ops interleaved (test mode) */
static const transport TR_SHM_TEAR = {"shm+tear", DM_BACKEND_SHM, DM_CLIENT_TEAR};

static dm_client *
client_new(const transport *tr, const char *who)
{
	return test_client_connect(tr->backend, tr->flags, 30000, who, mn.addr, NULL);
}

static dm_tree *
tree_new(dm_client *c, const dm_tree_name *tn)
{
	dm_tree_opts opts;
	dm_tree    *t = NULL;

	memset(&opts, 0, sizeof(opts));
	opts.node_size = NODE_SIZE;
	if (!CHECK_STATUS(dm_tree_create_new(c, HOME, tn, &opts, &t), DM_OK, "create tree %s (%d-byte nodes)",
					  tn->name, NODE_SIZE))
		return NULL;
	return t;
}

/* Open a handle; with inst >= 0 it joins that instance (cache may be NULL). */
static int
tree_open(dm_client *c, const dm_tree_name *tn, dm_cache *cache, int inst, dm_tree **out)
{
	int			rc = dm_tree_open_existing(c, HOME, tn, out);

	if (rc == DM_OK && inst >= 0 && (rc = dm_tree_use_cache(*out, cache, (uint32_t) inst)) != DM_OK)
	{
		dm_tree_close(*out);
		*out = NULL;
	}
	return rc;
}

static int
bulk_load(dm_tree *t, const model *m, int fillfactor)
{
	dm_bulk    *b = NULL;
	int			rc;

	if ((rc = dm_tree_bulk_begin(t, fillfactor, &b)) != DM_OK)
		return rc;
	if (m->n > 0 && (rc = dm_bulk_add(b, m->e, (int) m->n)) != DM_OK)
	{
		dm_bulk_abort(b);
		return rc;
	}
	return dm_bulk_finish(b);
}

/* Nodes of the tree (*inner, may be NULL: of them above the leaves). */
static uint64_t
tree_nodes(dm_tree *t, int *height, uint64_t *inner)
{
	dm_tree_stats st;
	uint64_t	n = 0;

	if (dm_tree_stats_get(t, &st) != DM_OK)
		return 0;
	for (int l = 0; l < 16; l++)
		n += st.nodes[l];
	if (height)
		*height = st.height;
	if (inner)
		*inner = n - st.nodes[0];
	return n;
}

/* ---- caches in memory shared with forked children -------------------------------------- */

typedef struct shcache
{
	dm_cache   *c;
	void	   *mem;
	size_t		len;
} shcache;

static int
shcache_new(shcache *sc, dm_cache_policy policy, uint32_t nframes, uint32_t permille)
{
	dm_cache_config cfg = {NODE_SIZE, nframes, policy, permille, 0};

	sc->c = NULL;
	sc->len = dm_cache_shmem_size(&cfg);
	sc->mem = sc->len ? mmap(NULL, sc->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
	if (sc->mem == MAP_FAILED)
	{
		sc->mem = NULL;
		return CHECK(0, "cache of %u frames: shared mapping of %zu bytes", nframes, sc->len);
	}
	sc->c = dm_cache_init(sc->mem, sc->len, &cfg);
	return CHECK(sc->c != NULL, "dm_cache_init: %u frames of %d bytes, policy %d, leaf admission %u/1000 (%zu bytes)",
				 nframes, NODE_SIZE, policy, permille, sc->len);
}

static void
shcache_free(shcache *sc)
{
	if (sc->mem)
		munmap(sc->mem, sc->len);
	sc->mem = NULL;
	sc->c = NULL;
}

static void
diag_cache(const char *label, shcache *sc)
{
	dm_cache_stats s;

	dm_cache_stats_get(sc->c, &s);
	tap_diag("%s: cache %" PRIu64 " frames: used by level %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64
			 "+, hits %" PRIu64 " (leaf %" PRIu64 ", via hint %" PRIu64 "), misses %" PRIu64 " (leaf %" PRIu64
			 "), admissions %" PRIu64 ", skipped %" PRIu64 ", evictions %" PRIu64 ", coolings %" PRIu64
			 ", promotions %" PRIu64 ", delegations %" PRIu64 ", io waits %" PRIu64 ", no frame %" PRIu64
			 ", invalidations %" PRIu64 ", local writes %" PRIu64, label, s.nframes,
			 s.frames_used[0], s.frames_used[1], s.frames_used[2], sum_levels(s.frames_used) - s.frames_used[0]
			 - s.frames_used[1] - s.frames_used[2], sum_levels(s.hits), s.hits[0], s.hint_hits,
			 sum_levels(s.misses), s.misses[0], s.admissions, s.admit_skipped, s.evictions, s.coolings,
			 s.promotions, s.delegations, s.io_waits, s.no_frame, s.invalidations, s.local_writes);
}

/* dm_tree_verify_cache through t (a handle using the cache) and dm_cache_check. */
static int
check_cache(const char *label, dm_tree *t, shcache *sc, uint64_t *checked_out)
{
	char		msg[512] = "";
	uint64_t	checked = 0;
	int			rc = dm_tree_verify_cache(t, &checked, msg, sizeof(msg));
	int			ok;

	ok = CHECK_STATUS(rc, DM_OK, "%s: dm_tree_verify_cache (%" PRIu64 " cached nodes compared with remote memory)",
					  label, checked);
	if (rc != DM_OK)
		tap_diag("  %s %s", msg, terr(t));
	msg[0] = '\0';
	rc = dm_cache_check(sc->c, msg, sizeof(msg));
	if (!CHECK(rc == 0, "%s: dm_cache_check", label))
	{
		tap_diag("  %s", msg);
		ok = 0;
	}
	if (checked_out)
		*checked_out = checked;
	return ok;
}

/* ---- key sets and expectations ------------------------------------------------------------ */

/*
 * The keys a writer owns: base .. base+span-1 with key % mod == rem (mod 0:
 * none), and the NULL entries if `nulls`.  Nobody else writes them, so
 * their entries are known exactly from this writer's model.
 */
typedef struct keyset
{
	uint64_t	base,
				span,
				mod,
				rem;
	int			nulls;
} keyset;

static int
ks_own(const keyset *ks, uint64_t key)
{
	if (ks == NULL || ks->mod == 0)
		return 0;
	if (key == UINT64_MAX)
		return ks->nulls;
	return key >= ks->base && key - ks->base < ks->span && key % ks->mod == ks->rem;
}

static dm_entry
ks_entry(const keyset *ks, uint64_t tid)
{
	uint64_t	first = ks->base + (ks->rem + ks->mod - ks->base % ks->mod) % ks->mod;
	uint64_t	count = (ks->base + ks->span - 1 - first) / ks->mod + 1;

	if (ks->nulls && rnd_below(100) < 3)
		return dm_entry_null(tid);
	return dm_entry_make(first + rnd_below(count) * ks->mod, tid);
}

/*
 * What a read may return: the union of a and b (disjoint; either NULL) is
 * known exactly for the stable entries (tid 0) and the keys of `own`; with
 * `strict` it is the whole tree.  Other entries are concurrent writers':
 * only their order and shape can be checked.
 */
typedef struct expect
{
	const model *a,
			   *b;
	const keyset *own;
	int			strict;
} expect;

static size_t
expect_count(const expect *x)
{
	return (x->a ? x->a->n : 0) + (x->b ? x->b->n : 0);
}

static int
known(const expect *x, dm_entry e)
{
	return x->strict || (e.tid & ~DM_TID_NULL) == 0 || ks_own(x->own, e.key);
}

/* A writer's entry: tid 1..NTIDS, the NULL flag exactly on key UINT64_MAX. */
static int
plausible(dm_entry e)
{
	uint64_t	tid = e.tid & ~DM_TID_NULL;

	return tid >= 1 && tid <= NTIDS && dm_entry_is_null(e) == (e.key == UINT64_MAX);
}

/*
 * Checks a sequence of entries returned for range r, one at a time: strictly
 * ordered in the scan direction, inside r, the known ones exactly the known
 * slice (so nothing known is missed, repeated or invented), the others
 * plausible.
 */
typedef struct seqcheck
{
	const expect *x;
	const dm_range *r;
	size_t		a_lo,
				a_hi,
				b_lo,
				b_hi;			/* known entries still due: [lo, hi) of a and b */
	dm_entry	prev;
	size_t		n;
	char	   *why;
	size_t		whylen;
} seqcheck;

static void
sc_begin(seqcheck *s, const expect *x, const dm_range *r, char *why, size_t whylen)
{
	memset(s, 0, sizeof(*s));
	s->x = x;
	s->r = r;
	s->why = why;
	s->whylen = whylen;
	if (x->a)
		m_range(x->a, r, &s->a_lo, &s->a_hi);
	if (x->b)
		m_range(x->b, r, &s->b_lo, &s->b_hi);
}

/* The next known entry due in scan order (NULL: none); *from_a tells where it is. */
static const dm_entry *
sc_due(const seqcheck *s, int *from_a)
{
	const dm_entry *ea = NULL,
			   *eb = NULL;

	if (s->a_lo < s->a_hi)
		ea = s->r->backward ? &s->x->a->e[s->a_hi - 1] : &s->x->a->e[s->a_lo];
	if (s->b_lo < s->b_hi)
		eb = s->r->backward ? &s->x->b->e[s->b_hi - 1] : &s->x->b->e[s->b_lo];
	if (ea && eb)
	{
		int			c = dm_entry_cmp(*ea, *eb);

		*from_a = s->r->backward ? c > 0 : c < 0;
	}
	else
		*from_a = ea != NULL;
	return *from_a ? ea : eb;
}

static int
sc_feed(seqcheck *s, dm_entry e)
{
	int			bw = s->r->backward,
				from_a;

	if (s->n > 0 && (bw ? dm_entry_cmp(e, s->prev) >= 0 : dm_entry_cmp(e, s->prev) <= 0))
	{
		snprintf(s->why, s->whylen, "%s: %s came after %s (not strictly %s)", R(s->r), E(e), E(s->prev),
				 bw ? "descending" : "ascending");
		return -1;
	}
	if (!in_range(s->r, e))
	{
		snprintf(s->why, s->whylen, "%s: returned %s, outside the range", R(s->r), E(e));
		return -1;
	}
	if (known(s->x, e))
	{
		const dm_entry *due = sc_due(s, &from_a);

		if (due == NULL || dm_entry_cmp(*due, e) != 0)
		{
			snprintf(s->why, s->whylen, "%s: entry #%zu is %s, but the next expected is %s", R(s->r), s->n, E(e),
					 due ? E(*due) : "the end");
			return -1;
		}
		if (from_a && bw)
			s->a_hi--;
		else if (from_a)
			s->a_lo++;
		else if (bw)
			s->b_hi--;
		else
			s->b_lo++;
	}
	else if (!plausible(e))
	{
		snprintf(s->why, s->whylen, "%s: returned %s, which no writer may have inserted", R(s->r), E(e));
		return -1;
	}
	s->prev = e;
	s->n++;
	return 0;
}

static int
sc_end(seqcheck *s)
{
	int			from_a;
	const dm_entry *due = sc_due(s, &from_a);

	if (due)
	{
		snprintf(s->why, s->whylen, "%s: ended after %zu entries, but %s (and %zu more) were due", R(s->r), s->n,
				 E(*due), s->a_hi - s->a_lo + s->b_hi - s->b_lo - 1);
		return -1;
	}
	return 0;
}

/* Scan r through t and check the result; *count (may be NULL) gets the entries returned. */
static int
scan_check(dm_tree *t, const dm_range *r, const expect *x, size_t *count, char *why, size_t whylen)
{
	dm_iter    *it = NULL;
	seqcheck	s;
	dm_entry	e;
	int			k,
				rc;

	sc_begin(&s, x, r, why, whylen);
	if ((rc = dm_iter_open(t, r, &it)) != DM_OK)
	{
		snprintf(why, whylen, "%s: dm_iter_open: %s: %s", R(r), dm_strerror(rc), terr(t));
		return -1;
	}
	while ((k = dm_iter_next(it, &e)) == 1)
		if (sc_feed(&s, e) != 0)
			break;
	dm_iter_close(it);
	if (count)
		*count = s.n;
	if (k < 0)
	{
		snprintf(why, whylen, "%s: dm_iter_next: %s: %s", R(r), dm_strerror(-k), terr(t));
		return -1;
	}
	return k == 1 ? -1 : sc_end(&s);
}

/* Look key up through t and check its tids like a forward scan of the key. */
static int
lookup_check(dm_tree *t, uint64_t key, const expect *x, char *why, size_t whylen)
{
	dm_range	r = {dm_key_lo(key, 1), 1, dm_key_hi(key, 1), 1, 0};
	uint64_t	tids[64];
	seqcheck	s;
	int			n = -1,
				rc = dm_tree_lookup(t, key, tids, 64, &n);

	if (rc != DM_OK || n < 0 || n > 64)
	{
		snprintf(why, whylen, "lookup %" PRIu64 ": %s, n = %d: %s", key, dm_strerror(rc), n, terr(t));
		return -1;
	}
	sc_begin(&s, x, &r, why, whylen);
	for (int i = 0; i < n; i++)
		if (sc_feed(&s, dm_entry_make(key, tids[i])) != 0)
			return -1;
	return sc_end(&s);
}

/*
 * Verify the tree (remote memory) and count its entries, then scan it whole
 * forward and backward through t.  x must be strict.
 */
static int
check_contents(const char *label, const char *who, dm_tree *t, const expect *x)
{
	char		msg[512] = "";
	uint64_t	cnt = 0;
	int			rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	int			ok = 1;

	if (!CHECK_STATUS(rc, DM_OK, "%s: dm_tree_verify", label))
	{
		tap_diag("  %s", msg);
		ok = 0;
	}
	ok &= CHECK(cnt == expect_count(x), "%s: verify counts %" PRIu64 " entries, expected %zu", label, cnt,
				expect_count(x));
	for (int bw = 0; bw < 2; bw++)
	{
		dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, bw};

		if (!CHECK(scan_check(t, &r, x, NULL, msg, sizeof(msg)) == 0, "%s: full %s scan through %s = expected",
				   label, bw ? "backward" : "forward", who))
		{
			tap_diag("  %s", msg);
			ok = 0;
		}
	}
	return ok;
}

/* Lookups of every step-th key of [lo, hi) through t. */
static int
check_lookups(const char *label, const char *who, dm_tree *t, const expect *x, uint64_t lo, uint64_t hi,
			  uint64_t step)
{
	char		msg[512] = "";
	uint64_t	n = 0;
	int			bad = 0;

	for (uint64_t k = lo; k < hi && !bad; k += step, n++)
		bad = lookup_check(t, k, x, msg, sizeof(msg)) != 0;
	if (!CHECK(!bad, "%s: %" PRIu64 " lookups through %s = expected", label, n, who))
		tap_diag("  %s", msg);
	return !bad;
}

/* ---- random operations ---------------------------------------------------------------- */

/* Cumulative percentages of the operation kinds. */
typedef struct opmix
{
	int			ins,
				del,
				batch,
				contains,
				lookup,
				scan,
				foreign;		/* writes outside the instance's keys: must fail */
} opmix;

static const opmix MIX_GROW = {60, 70, 78, 85, 92, 97, 100};
static const opmix MIX_MIXED = {35, 65, 73, 81, 90, 97, 100};
static const opmix MIX_SHRINK = {15, 70, 78, 85, 92, 97, 100};
static const opmix MIX_MULTI = {40, 65, 72, 80, 90, 95, 100};

typedef struct opctx
{
	dm_tree    *t;
	model	   *mine;			/* this writer's entries (the keys of own) */
	const keyset *own;
	const keyset *foreign;		/* keys this instance does not own (NULL: no such op) */
	const expect *x;
	uint64_t	read_lo,
				read_hi;		/* keys that lookups and scans aim at */
	dm_tree    *mirror;			/* a handle without cache (may be NULL): sees every write at once */
	uint64_t	notowner;		/* refused writes seen */
	uint64_t	scans;
} opctx;

static void
rand_range(dm_range *r, uint64_t lo, uint64_t hi)
{
	uint64_t	span = hi - lo;

	switch (rnd_below(64))
	{
		case 0:
			*r = (dm_range) {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, 0};
			break;
		case 1:
			*r = DM_RANGE_NULLS(0);
			break;
		default:
			{
				/* short ranges mostly: a scan costs a round trip per leaf */
				uint64_t	k1 = lo + rnd_below(span),
							k2 = k1 + rnd_below(rnd_below(4) ? span / 64 + 2 : span / 8 + 2);

				r->lo_incl = (int) rnd_below(2);
				r->hi_incl = (int) rnd_below(2);
				r->lo = rnd_below(4) ? dm_key_lo(k1, r->lo_incl) : dm_entry_make(k1, rnd_below(NTIDS + 1));
				r->hi = rnd_below(4) ? dm_key_hi(k2, r->hi_incl) : dm_entry_make(k2, rnd_below(NTIDS + 1));
				if (rnd_below(40) == 0)
					r->lo = DM_ENTRY_MIN;
				if (rnd_below(40) == 0)
					r->hi = DM_ENTRY_INF;
			}
	}
	r->backward = (int) rnd_below(2);
}

/* An own entry: usually one of the model's for deletes. */
static dm_entry
pick_own(const opctx *o, int present_pct)
{
	if (o->mine->n && (int) rnd_below(100) < present_pct)
		return o->mine->e[rnd_below(o->mine->n)];
	return ks_entry(o->own, 1 + rnd_below(NTIDS));
}

/* One random operation, its result compared with the model.  0 = fine. */
static int
one_op(opctx *o, const opmix *mx, int op, char *why, size_t whylen)
{
	dm_tree    *t = o->t;
	int			r = (int) rnd_below(100),
				rc;

	if (r < mx->del)
	{
		int			ins = r < mx->ins;
		dm_entry	e = ins ? pick_own(o, 10) : pick_own(o, 80);
		int			existed = -1,
					want = m_has(o->mine, e);

		rc = ins ? dm_tree_insert(t, e, &existed) : dm_tree_delete(t, e, &existed);
		if (rc != DM_OK || existed != want)
		{
			snprintf(why, whylen, "op %d: %s %s: %s, existed=%d, the model says %d: %s", op,
					 ins ? "insert" : "delete", E(e), dm_strerror(rc), existed, want, terr(t));
			return -1;
		}
		ins ? m_insert(o->mine, e) : m_delete(o->mine, e);
		if (o->mirror)
		{
			/* write-through: remote memory has the write when it returns */
			int			found = -1;

			rc = dm_tree_contains(o->mirror, e, &found);
			if (rc != DM_OK || found != ins)
			{
				snprintf(why, whylen, "op %d: after %s %s, the handle without cache: %s, found=%d", op,
						 ins ? "insert" : "delete", E(e), dm_strerror(rc), found);
				return -1;
			}
		}
	}
	else if (r < mx->batch)
	{
		dm_entry	b[24];
		int			ins = (int) rnd_below(2),
					n = 1 + (int) rnd_below(20),
					want = 0,
					changed = -1;
		dm_entry	first = pick_own(o, ins ? 0 : 60);

		/* clustered around one key, so a batch hits few leaves with several entries */
		for (int i = 0; i < n; i++)
			b[i] = rnd_below(3) || dm_entry_is_null(first) ? pick_own(o, ins ? 10 : 70)
				: dm_entry_make(first.key + o->own->mod * rnd_below(4), 1 + rnd_below(NTIDS));
		for (int i = 0; i < n; i++)
			if (!ks_own(o->own, b[i].key))
				b[i] = first;
		n = sort_unique(b, n);
		for (int i = 0; i < n; i++)
			want += ins ? !m_has(o->mine, b[i]) : m_has(o->mine, b[i]);
		rc = ins ? dm_tree_insert_sorted(t, b, n, &changed) : dm_tree_delete_sorted(t, b, n, &changed);
		if (rc != DM_OK || changed != want)
		{
			snprintf(why, whylen, "op %d: %s_sorted of %d (%s..%s): %s, changed=%d, the model says %d: %s", op,
					 ins ? "insert" : "delete", n, E(b[0]), E(b[n - 1]), dm_strerror(rc), changed, want, terr(t));
			return -1;
		}
		for (int i = 0; i < n; i++)
			ins ? m_insert(o->mine, b[i]) : m_delete(o->mine, b[i]);
	}
	else if (r < mx->contains)
	{
		dm_entry	e = pick_own(o, 50);
		int			found = -1,
					want = m_has(o->mine, e);

		rc = dm_tree_contains(t, e, &found);
		if (rc != DM_OK || found != want)
		{
			snprintf(why, whylen, "op %d: contains %s: %s, found=%d, the model says %d: %s", op, E(e),
					 dm_strerror(rc), found, want, terr(t));
			return -1;
		}
	}
	else if (r < mx->lookup)
	{
		/* anywhere in the key space: other writers' keys are read too */
		uint64_t	key = o->read_lo + rnd_below(o->read_hi - o->read_lo);

		if (lookup_check(t, key, o->x, why, whylen) != 0)
		{
			char		tmp[600];

			snprintf(tmp, sizeof(tmp), "op %d: %s", op, why);
			snprintf(why, whylen, "%s", tmp);
			return -1;
		}
	}
	else if (r < mx->scan || o->foreign == NULL)
	{
		dm_range	rg;

		rand_range(&rg, o->read_lo, o->read_hi);
		o->scans++;
		if (scan_check(t, &rg, o->x, NULL, why, whylen) != 0)
		{
			char		tmp[600];

			snprintf(tmp, sizeof(tmp), "op %d: scan %s", op, why);
			snprintf(why, whylen, "%s", tmp);
			return -1;
		}
	}
	else
	{
		/*
		 * A write of a key another instance owns: refused before anything is
		 * written, also when only one entry of a batch is foreign.  The
		 * foreign tid is one no writer uses, so a write that got through
		 * shows up in every later read and in the final contents.
		 */
		dm_entry	f = ks_entry(o->foreign, FOREIGN_TID);
		dm_entry	b[4];
		int			n = 0,
					kind = (int) rnd_below(3),
					existed = -1,
					changed = -1;

		if (kind == 0)
			rc = dm_tree_insert(t, f, &existed);
		else if (kind == 1)
			rc = dm_tree_delete(t, dm_entry_make(f.key, 0), &existed);	/* a stable entry, perhaps */
		else
		{
			b[n++] = f;
			for (int i = 0; i < 3; i++)
				b[n++] = pick_own(o, 0);
			n = sort_unique(b, n);
			rc = dm_tree_insert_sorted(t, b, n, &changed);
		}
		if (rc != DM_ERR_NOTOWNER)
		{
			snprintf(why, whylen, "op %d: %s of foreign key %" PRIu64 ": %s, want NOTOWNER (%s)", op,
					 kind == 0 ? "insert" : kind == 1 ? "delete" : "insert_sorted", f.key, dm_strerror(rc), terr(t));
			return -1;
		}
		o->notowner++;
		/* the batch's own entries were not inserted either */
		for (int i = 0; i < n; i++)
		{
			int			found = -1;

			if (!ks_own(o->own, b[i].key))
				continue;
			rc = dm_tree_contains(t, b[i], &found);
			if (rc != DM_OK || found != m_has(o->mine, b[i]))
			{
				snprintf(why, whylen, "op %d: after a refused batch, contains %s: %s found=%d, the model says %d",
						 op, E(b[i]), dm_strerror(rc), found, m_has(o->mine, b[i]));
				return -1;
			}
		}
	}
	return 0;
}

static int
run_ops(opctx *o, const opmix *mx, int first_op, int nops, char *why, size_t whylen)
{
	for (int op = first_op; op < first_op + nops; op++)
		if (one_op(o, mx, op, why, whylen) != 0)
			return -1;
	return 0;
}

/* ---- processes --------------------------------------------------------------------------- */

typedef struct child_rep
{
	int			failed;
	char		msg[1200];
	uint64_t	ops,
				scans,
				notowner,
				nfinal;
	dm_tree_counters ctr;
	dm_counters cc;
} child_rep;

typedef struct shared
{
	int			stop;			/* scanners stop when set */
	child_rep	rep[MAXCHILD];
	dm_entry	final[MAXCHILD][MAXFINAL];
} shared;

static shared *sh;
static int	g_ready_fd = -1,
			g_go_fd = -1;

static void cfail(child_rep *r, const char *fmt,...) __attribute__((format(printf, 2, 3)));
static void
cfail(child_rep *r, const char *fmt,...)
{
	va_list		ap;

	if (r->failed)
		return;
	r->failed = 1;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
}

/* In a child: check in, then wait until every child has (EOF on the go pipe). */
static int
start_barrier(void)
{
	char		x = 'r';

	return write(g_ready_fd, &x, 1) == 1 && read(g_go_fd, &x, 1) == 0 ? 0 : -1;
}

typedef int (*child_fn) (int idx, void *arg);

/*
 * Fork n children running fn(idx, arg); they start together once all have
 * connected (start_barrier).  The first nworkers are waited for, then
 * sh->stop tells the others (scanners) to finish.  Returns the seconds the
 * children ran; codes[i] = exit code.
 */
static double
run_children(const char *label, int n, int nworkers, child_fn fn, void *arg, int *codes)
{
	pid_t		pids[MAXCHILD];
	int			ready[2],
				go[2],
				nready = 0;
	uint64_t	t0,
				deadline;

	memset(sh, 0, sizeof(*sh));
	if (pipe(ready) != 0 || pipe(go) != 0)
	{
		perror("pipe");
		exit(2);
	}
	for (int i = 0; i < n; i++)
	{
		fflush(stdout);
		fflush(stderr);
		if ((pids[i] = fork()) < 0)
		{
			perror("fork");
			exit(2);
		}
		if (pids[i] == 0)
		{
			/* the child must not hold the go pipe's write end, or EOF never comes */
			close(go[1]);
			close(ready[0]);
			g_ready_fd = ready[1];
			g_go_fd = go[0];
			_exit(fn(i, arg));
		}
	}
	close(ready[1]);
	close(go[0]);
	deadline = now_ns() + UINT64_C(60000000000);
	while (nready < n && now_ns() < deadline)
	{
		struct pollfd p = {.fd = ready[0],.events = POLLIN};
		char		buf[MAXCHILD];
		ssize_t		k;

		if (poll(&p, 1, 1000) <= 0)
			continue;
		if ((k = read(ready[0], buf, sizeof(buf))) <= 0)
			break;				/* every child exited or closed its end */
		nready += (int) k;
	}
	CHECK(nready == n, "%s: %d processes connected and attached", label, n);
	t0 = now_ns();
	close(go[1]);
	close(ready[0]);
	deadline = now_ns() + UINT64_C(240000000000);
	for (int i = 0; i < nworkers; i++)
		codes[i] = wait_pid_deadline(pids[i], deadline);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	for (int i = nworkers; i < n; i++)
		codes[i] = wait_pid_deadline(pids[i], deadline);
	return (now_ns() - t0) / 1e9;
}

/* What the writer and scanner children of groups 3 and 4 do. */
typedef struct workcfg
{
	const char *label;
	const transport *tr;
	dm_tree_name tn;
	int			nwriters;		/* children 0..nwriters-1 write; the rest scan */
	int			nops;
	const opmix *mix;
	shcache    *cache[MAXCHILD];
	int			inst[MAXCHILD];
	keyset		own[MAXCHILD];
	keyset		foreign[MAXCHILD];	/* mod 0: no foreign writes */
	const model *stable;		/* entries with tid 0, never deleted */
	uint64_t	read_lo,
				read_hi;
} workcfg;

static dm_tree *
child_attach(const workcfg *w, int idx, dm_client **cout)
{
	child_rep  *rep = &sh->rep[idx];
	char		who[64];
	dm_tree    *t = NULL;
	int			rc;

	snprintf(who, sizeof(who), "%s child %d", w->label, idx);
	if ((*cout = client_new(w->tr, who)) == NULL)
	{
		cfail(rep, "%s: cannot connect", who);
		return NULL;
	}
	if ((rc = tree_open(*cout, &w->tn, w->cache[idx]->c, w->inst[idx], &t)) != DM_OK)
	{
		cfail(rep, "%s: open + use_cache(instance %d): %s", who, w->inst[idx], dm_strerror(rc));
		return NULL;
	}
	if (start_barrier() != 0)
	{
		cfail(rep, "%s: start barrier broken", who);
		return NULL;
	}
	return t;
}

static int
writer_child(const workcfg *w, int idx)
{
	child_rep  *rep = &sh->rep[idx];
	dm_client  *c = NULL;
	dm_tree    *t;
	model		mine = {0};
	expect		x = {w->stable, &mine, &w->own[idx], 0};
	opctx		o = {0};
	char		why[1024] = "";

	rng_seed_label(g_seed, w->label, idx);
	if ((t = child_attach(w, idx, &c)) == NULL)
		return 1;
	o.t = t;
	o.mine = &mine;
	o.own = &w->own[idx];
	o.foreign = w->foreign[idx].mod ? &w->foreign[idx] : NULL;
	o.x = &x;
	o.read_lo = w->read_lo;
	o.read_hi = w->read_hi;
	for (int op = 0; op < w->nops && !rep->failed; op++)
	{
		if (one_op(&o, w->mix, op, why, sizeof(why)) != 0)
			cfail(rep, "writer %d (instance %d): %s", idx, w->inst[idx], why);
		rep->ops++;
	}
	rep->scans = o.scans;
	rep->notowner = o.notowner;
	if (mine.n > MAXFINAL)
		cfail(rep, "writer %d: %zu final entries do not fit", idx, mine.n);
	else
	{
		memcpy(sh->final[idx], mine.e, mine.n * sizeof(dm_entry));
		rep->nfinal = mine.n;
	}
	dm_tree_get_counters(t, &rep->ctr);
	dm_client_counters(c, -1, &rep->cc);
	dm_tree_close(t);
	dm_client_destroy(c);
	m_free(&mine);
	return rep->failed;
}

/* Scans and lookups until the writers are done: only the stable entries are known. */
static int
scanner_child(const workcfg *w, int idx)
{
	child_rep  *rep = &sh->rep[idx];
	dm_client  *c = NULL;
	dm_tree    *t;
	expect		x = {w->stable, NULL, NULL, 0};
	char		why[1024] = "";

	rng_seed_label(g_seed, w->label, idx);
	if ((t = child_attach(w, idx, &c)) == NULL)
		return 1;
	while (!rep->failed && (rep->scans < 4 || !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)))
	{
		dm_range	r;

		rand_range(&r, w->read_lo, w->read_hi);
		if (rnd_below(8) == 0)
			r = (dm_range) {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, (int) rnd_below(2)};
		if (scan_check(t, &r, &x, NULL, why, sizeof(why)) != 0)
			cfail(rep, "scanner %d, scan %" PRIu64 ": %s", idx, rep->scans, why);
		rep->scans++;
		for (int i = 0; i < 4 && !rep->failed; i++)
			if (lookup_check(t, w->read_lo + rnd_below(w->read_hi - w->read_lo), &x, why, sizeof(why)) != 0)
				cfail(rep, "scanner %d: %s", idx, why);
		rep->ops += 5;
	}
	dm_tree_get_counters(t, &rep->ctr);
	dm_client_counters(c, -1, &rep->cc);
	dm_tree_close(t);
	dm_client_destroy(c);
	return rep->failed;
}

static int
work_child(int idx, void *arg)
{
	const workcfg *w = arg;

	return idx < w->nwriters ? writer_child(w, idx) : scanner_child(w, idx);
}

/*
 * Run the children of w, check each finished cleanly, and build the
 * expected final contents: the stable entries plus every writer's final set.
 */
static dm_tree_counters
run_work(workcfg *w, int nchildren, model *final)
{
	int			codes[MAXCHILD];
	double		secs = run_children(w->label, nchildren, w->nwriters, work_child, w, codes);
	dm_tree_counters tot = {0};
	uint64_t	ops = 0,
				rts = 0,
				atomics = 0;

	tap_diag("%s: %d processes ran %.1f s", w->label, nchildren, secs);
	for (int i = 0; i < nchildren; i++)
	{
		child_rep  *r = &sh->rep[i];

		if (!CHECK(codes[i] == 0 && !r->failed, "%s: %s %d finished cleanly (%" PRIu64 " ops, %" PRIu64 " scans, %"
				   PRIu64 " refused foreign writes)", w->label, i < w->nwriters ? "writer" : "scanner", i, r->ops,
				   r->scans, r->notowner))
			tap_diag("  exit code %d: %s", codes[i], r->msg[0] ? r->msg : "(no message)");
		tot.splits += r->ctr.splits;
		tot.read_retries += r->ctr.read_retries;
		tot.lock_retries += r->ctr.lock_retries;
		tot.lock_takeovers += r->ctr.lock_takeovers;
		tot.restarts += r->ctr.restarts;
		tot.root_grows += r->ctr.root_grows;
		ops += r->ops;
		rts += r->cc.round_trips;
		atomics += atomics_of(&r->cc);
	}
	tap_diag("%s: %" PRIu64 " ops, %" PRIu64 " round trips, %" PRIu64 " remote atomics, %" PRIu64 " splits, %"
			 PRIu64 " root grows, %" PRIu64 " read retries, %" PRIu64 " lock retries, %" PRIu64 " restarts",
			 w->label, ops, rts, atomics, tot.splits, tot.root_grows, tot.read_retries, tot.lock_retries,
			 tot.restarts);
	/* nobody died holding a lock: a takeover means one was leaked */
	CHECK(tot.lock_takeovers == 0, "%s: no lock was taken over (%" PRIu64 ")", w->label, tot.lock_takeovers);
	CHECK(tot.splits > 0, "%s: the writers split nodes (%" PRIu64 ")", w->label, tot.splits);
	for (size_t i = 0; i < w->stable->n; i++)
		m_insert(final, w->stable->e[i]);
	for (int i = 0; i < w->nwriters; i++)
		for (uint64_t k = 0; k < sh->rep[i].nfinal; k++)
			m_insert(final, sh->final[i][k]);
	return tot;
}

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
			nodes = tree_nodes(t, &height, &inner);
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

static void
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
		m_insert(m, dm_entry_make(i * 10, 1));
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
		dm_entry	e = dm_entry_make(i * 100 + 15, 1);	/* right of loaded key 10 * (10 i + 1) */
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
	nodes = tree_nodes(tc, NULL, NULL);
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

static void
group2(void)
{
	group2_one(&TR_SHM);
	group2_one(&TR_TCP);
}

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
		m_insert(&stable, dm_entry_make(k, 0));
	m_insert(&stable, dm_entry_null(0));
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
	nodes = tree_nodes(t, &height, NULL);
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

static void
group3(void)
{
	/* 4500 ops of MIX_MULTI: ~3000 inserts and deletes (singles and batches) each */
	group3_one(&TR_SHM, scaled(4500));
	group3_one(&TR_TCP, scaled(4500));
	group3_one(&TR_SHM_TEAR, scaled(4500));
}

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
		int			o = dm_tree_owns_key(t, keys[i]);

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
		m_insert(&stable, dm_entry_make(k, 0));
	for (uint64_t k = 0; k < 8; k++)
	{
		m_insert(&stable, dm_entry_make(k * 1000, 0));
		m_insert(&stable, dm_entry_make(UINT64_MAX - 1 - k * 1000, 0));
	}
	m_insert(&stable, dm_entry_null(0));
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
	m.lo[1] = G4_K;
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
	rc = dm_tree_insert(ta, dm_entry_make(G4_K, 2), &existed);
	CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: instance 1 inserting key K", label);
	rc = dm_tree_delete(ta, dm_entry_make(G4_K, 0), &existed);
	CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: instance 1 deleting stable (K, 0)", label);
	rc = dm_tree_delete(tb, dm_entry_make(G4_K - 8, 0), &existed);
	CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: instance 2 deleting stable (K-8, 0)", label);
	rc = dm_tree_insert(ta, dm_entry_null(3), &existed);
	CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: instance 1 inserting a NULL", label);
	{
		dm_entry	b[2] = {dm_entry_make(G4_K - 1, FOREIGN_TID + 1), dm_entry_make(G4_K, FOREIGN_TID + 1)};

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
			rc = dm_tree_insert(tn, dm_entry_make(G4_K + 1, 2), &existed);
			CHECK_STATUS(rc, DM_ERR_NOTOWNER, "%s: instance 1 without a cache inserting key K+1", label);
			dm_tree_close(tn);
		}
	}
	check_contents(label, "a handle without cache, after the refused writes", t, &x);
	/* the owners may */
	/* (a NULL with a tid no writer used: writer 3 owned the NULLs) */
	rc = dm_tree_insert(tb, dm_entry_null(FOREIGN_TID + 1), &existed);
	CHECK(rc == DM_OK && existed == 0, "%s: instance 2 inserts a NULL: %s", label, dm_strerror(rc));
	rc = dm_tree_delete(tb, dm_entry_null(FOREIGN_TID + 1), &existed);
	CHECK(rc == DM_OK && existed == 1, "%s: and deletes it: %s", label, dm_strerror(rc));
	rc = dm_tree_insert(ta, dm_entry_make(G4_K - 1, 3), &existed);
	CHECK(rc == DM_OK && existed == m_has(&final, dm_entry_make(G4_K - 1, 3)), "%s: instance 1 inserts key K-1: %s",
		  label, dm_strerror(rc));
	m_insert(&final, dm_entry_make(G4_K - 1, 3));
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

static void
group4(void)
{
	group4_one(&TR_SHM, scaled(5000));
	group4_one(&TR_TCP, scaled(3000));
	group4_one(&TR_SHM_TEAR, scaled(3000));
}

/* ---- group 5: partition-map errors, epochs, refresh --------------------------------------------- */

#define G5_KEYS 2000			/* keys 0..1999, two tids each */

static void
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
		m_insert(&m, dm_entry_make(i * 3, i % 5 + 1));
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
			dm_entry	e = dm_entry_make(i * 61 + 1, 9);
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

static void
group6(void)
{
	group6_one(&TR_SHM, 3);
	group6_one(&TR_TCP, 3 * 13);
}

/* ---- main ------------------------------------------------------------------------------------- */

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "256M", "--chunk-size", "1M", NULL};
	static const struct
	{
		char		id;
		const char *name;
		void		(*fn) (void);
	}			groups[] = {
		{'1', "single process, tiny caches", group1},
		{'2', "remote atomics avoided", group2},
		{'3', "4 writers + 1 scanner on one cache", group3},
		{'4', "two instances, partitioned", group4},
		{'5', "partition maps", group5},
		{'6', "bulk load with a cache", group6},
	};
	const char *only = getenv("TREE_GROUPS");
	uint64_t	t0 = now_ns();

	tree_test_env(&g_seed, &g_scale);

	sh = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
	{
		CHECK(0, "mmap the shared report area");
		return tap_done();
	}
	if (memnode_start(&mn, 0, args) != 0)
	{
		CHECK(0, "start a memnode (id 1, --shm)");
		return tap_done();
	}
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
	{
		uint64_t	g0 = now_ns();

		if (only && *only && strchr(only, groups[i].id) == NULL)
			continue;
		tap_diag("---- group %c: %s", groups[i].id, groups[i].name);
		groups[i].fn();
		tap_diag("group %c took %.1f s", groups[i].id, (now_ns() - g0) / 1e9);
	}
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	tap_diag("total %.1f s", (now_ns() - t0) / 1e9);
	return tap_done();
}
