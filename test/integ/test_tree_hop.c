/*
 * test_tree_hop.c — hopscotch leaves (docs/design.md §5.1, dm_hop.h) where
 * the parametrized tree tests (TREE_LEAF_FORMAT=hopscotch: the model,
 * concurrency and scale tests) do not look closely enough:
 *
 *   reads   a point lookup costs exactly the inner nodes of its descent plus
 *           one round trip of 8 + 72 + 16 H + 8 bytes at the leaf (the version,
 *           the header, the neighbourhood, the version again): counted on the transport,
 *           per lookup, over tcp and shm, with and without a cache of the
 *           inner nodes; the tids are right;
 *   dups    10,000 tids of one key (PostgreSQL: 10,000 rows of one value),
 *           inserted in random order, single and in batches: lookup, both
 *           scan directions, deletes, verify; the keys next to it are still
 *           answered from one neighbourhood;
 *   torn    the seqlock under torn reads and writes (DM_CLIENT_TEAR, tcp and
 *           shm): writer processes toggle their keys in the leaves of a few
 *           stable keys (so entries hop around them) while reader processes
 *           look the stable keys up without pause; every lookup must return
 *           exactly the stable tid, and over shm some neighbourhood reads
 *           must have failed the version check (so the check has work:
 *           without it that assertion fails; a wrong answer from a torn
 *           read was not provoked by hand in this workload, the window
 *           being a few words wide); the readers' hotspot buffers hold the
 *           stable keys, so speculative reads run against the writers too;
 *           once more with one cache for all processes, whose hotspot buffer
 *           (16 keys) they share, the readers looking up the writers' keys
 *           as well (absent or the writer's tid);
 *   spec    speculative reads (the hotspot buffer) that must be rejected:
 *           the entry deleted, another tid added, entries hopping around
 *           it, its leaf split, emptied, reclaimed and its node reused;
 *           each time the reader's answer is right, and an unchanged leaf
 *           answers with one 16-byte read.
 *
 * TREE_SEED=<n> changes the random streams, TREE_SCALE=<percent> the counts.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_cache.h"
#include "dm_client.h"
#include "dm_hop.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testutil.h"

#define NWRITERS 3
#define NREADERS 3
#define NSTABLE 8
#define WKEYS 6					/* keys each writer toggles */

typedef struct child_rep
{
	int			failed;
	char		msg[512];
	uint64_t	lookups;
	dm_tree_counters ctr;
} child_rep;

typedef struct shared
{
	int			stop;
	child_rep	rep[NWRITERS + NREADERS];
} shared;

static memnode_proc mn;
static shared *sh;
static dm_cache *torn_cache;	/* torn with a cache: every process's handle uses it, and its hotspot buffer */
static uint64_t g_seed = 1;
static int	g_scale = 100;

static int
scaled(int n)
{
	int			s = n * g_scale / 100;

	return s < 1 ? 1 : s;
}

static dm_tree *
make_tree(dm_client *c, const char *name, uint32_t ns, int H)
{
	dm_tree_name tn;
	dm_tree_opts o;
	dm_tree    *t = NULL;

	memset(&o, 0, sizeof(o));
	o.node_size = ns;
	o.leaf_format = DM_LEAF_HOPSCOTCH;
	o.neighborhood = H;
	dm_tree_name_named(&tn, name);
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &o, &t), DM_OK, "%s: create (%u-byte nodes, H = %d)", name, ns, H))
		return NULL;
	return t;
}

static int
bulk(dm_tree *t, const dm_entry *e, int n, int ff)
{
	dm_bulk    *b = NULL;
	int			rc = dm_tree_bulk_begin(t, ff, &b);

	if (rc == DM_OK && (rc = dm_bulk_add(b, e, n)) == DM_OK)
		return dm_bulk_finish(b);
	if (b)
		dm_bulk_abort(b);
	return rc;
}

/* ---- reads: bytes and round trips of one lookup ---------------------------------- */

static void
run_reads(int backend, const char *bname, int cached)
{
	char		name[64];
	dm_client  *c = test_client_connect(backend, 0, 30000, "test_tree_hop", mn.addr, NULL);
	dm_tree    *t;
	dm_entry   *e;
	int			n = scaled(30000),
				H = 8,
				height = 0,
				exact = 0,
				hops = 0,
				wrong = 0;
	uint64_t	inner = 0;
	void	   *mem = NULL;
	dm_cache   *cache = NULL;

	snprintf(name, sizeof(name), "hop-reads-%s%s", bname, cached ? "-cached" : "");
	if (!CHECK(c != NULL, "%s: client connects", name) || (t = make_tree(c, name, 1024, H)) == NULL)
		goto out_client;
	e = malloc(sizeof(dm_entry) * (size_t) n);
	for (int i = 0; i < n; i++)
		e[i] = dm_entry_make((uint64_t) i * 7 + 3, (uint64_t) i);
	CHECK_STATUS(bulk(t, e, n, 80), DM_OK, "%s: bulk-load %d single-tid keys", name, n);
	tree_node_count(t, &height, &inner);
	if (cached)
	{
		dm_cache_config cfg = {0};
		size_t		len;

		/* inner nodes only (Sherman's policy): every leaf is read remotely */
		cfg.frame_size = 1024;
		cfg.nframes = 4096;
		cfg.policy = DM_CACHE_INNER;
		len = (dm_cache_shmem_size(&cfg) + 63) / 64 * 64;
		mem = aligned_alloc(64, len);
		cache = mem ? dm_cache_init(mem, len, &cfg) : NULL;
		if (!CHECK(cache != NULL && dm_tree_use_cache(t, cache, 0) == DM_OK, "%s: a cache of inner nodes", name))
			goto out_tree;
	}
	for (int i = 0; i < 400; i++)
	{
		int			k = (int) rnd_below((uint64_t) n);
		uint64_t	tids[4];
		int			got = -1;
		dm_counters c0,
					c1;
		dm_tree_counters t0,
					t1;

		dm_client_counters(c, 1, &c0);
		dm_tree_get_counters(t, &t0);
		if (dm_tree_lookup(t, e[k].key, tids, 4, &got) != DM_OK || got != 1 || tids[0] != e[k].tid)
			wrong++;
		dm_client_counters(c, 1, &c1);
		dm_tree_get_counters(t, &t1);
		if (t1.hop_reads == t0.hop_reads + 1)
		{
			/* the inner nodes of the descent (none through the cache once warm), then one round trip */
			uint64_t	want_rt = cached ? 1 : (uint64_t) height;
			uint64_t	want_b = (cached ? 0 : (uint64_t) (height - 1) * 1024) + 80 + 16 * (uint64_t) H + 8;

			hops++;
			exact += c1.round_trips - c0.round_trips == want_rt && c1.bytes_read - c0.bytes_read == want_b;
			if (i >= 100 && !(c1.round_trips - c0.round_trips == want_rt && c1.bytes_read - c0.bytes_read == want_b) &&
				exact + 1 == hops)
				tap_diag("%s: lookup of %" PRIu64 ": %" PRIu64 " round trips, %" PRIu64 " bytes; want %" PRIu64 ", %" PRIu64,
						 name, e[k].key, c1.round_trips - c0.round_trips, c1.bytes_read - c0.bytes_read, want_rt, want_b);
		}
	}
	CHECK(wrong == 0, "%s: 400 lookups of single-tid keys return their tid (%d wrong)", name, wrong);
	/* a few homes overflow at 80% fill; a cold cache misses inner nodes at first */
	CHECK(hops >= 300, "%s: %d of 400 lookups read one neighbourhood", name, hops);
	CHECK(exact >= hops - (cached ? 40 : 0),
		  "%s: %d of them cost exactly %s one round trip of %d bytes at the leaf (height %d)", name, exact,
		  cached ? "(inner nodes cached)" : "the inner nodes and", 80 + 16 * H + 8, height);
out_tree:
	free(e);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", name);
out_client:
	free(mem);
	if (c)
		dm_client_destroy(c);
}

/*
 * ---- fill: a bulk-loaded hopscotch tree takes inserts without splitting at once ----
 * Loaded at fillfactor 90, the leaves hold 90% of what a hopscotch leaf
 * holds (dm_hop_usable_permille), not 90% of its buckets: then about one
 * insert in three split its leaf (a split at 90% of the buckets has ~35%
 * odds, dm_hop_usable_permille's comment), and YCSB e's scans read the
 * half-empty leaves that made.  Here ~1 new key for each leaf: fewer than
 * one insert in six may split.  Exact contents after.
 */
static void
run_fill(int backend, const char *bname)
{
	char		name[64],
				msg[256];
	dm_client  *c = test_client_connect(backend, 0, 30000, "test_tree_hop", mn.addr, NULL);
	dm_tree    *t;
	dm_tree_stats st;
	dm_tree_counters t0,
				t1;
	model		m = {0};
	int			n = 20000,		/* not scaled: ~435 inserts keep the split share off chance */
				ni = 0,
				rc = DM_OK;
	int			want_per_leaf = dm_hop_nb(1024) * 90 * dm_hop_usable_permille(1024, 8) / 100000;
	dm_entry   *e = malloc(sizeof(dm_entry) * (size_t) n);
	uint64_t	cnt = 0;

	snprintf(name, sizeof(name), "hop-fill-%s", bname);
	if (!CHECK(c != NULL, "%s: client connects", name) || (t = make_tree(c, name, 1024, 8)) == NULL)
		goto out_client;
	for (int i = 0; i < n; i++)
	{
		e[i] = dm_entry_make((uint64_t) i * 1000, (uint64_t) i + 1);
		m_insert(&m, e[i]);
	}
	CHECK_STATUS(bulk(t, e, n, 90), DM_OK, "%s: bulk-load %d keys at fillfactor 90", name, n);
	memset(&st, 0, sizeof(st));
	(void) dm_tree_stats_get(t, &st);
	CHECK(st.nodes[0] == (uint64_t) (n + want_per_leaf - 1) / want_per_leaf,
		  "%s: %" PRIu64 " leaves of %d entries (%d buckets, usable load %d per mille)", name, st.nodes[0],
		  want_per_leaf, dm_hop_nb(1024), dm_hop_usable_permille(1024, 8));
	dm_tree_get_counters(t, &t0);
	for (uint64_t l = 0; l < st.nodes[0]; l++)
	{
		/* a new key inside a random leaf's range */
		dm_entry	x = dm_entry_make(rnd_below((uint64_t) n) * 1000 + 1 + rnd_below(999), 7);

		if (m_has(&m, x))
			continue;
		if ((rc = dm_tree_insert(t, x, NULL)) != DM_OK)
			break;
		m_insert(&m, x);
		ni++;
	}
	CHECK_STATUS(rc, DM_OK, "%s: %d inserts, one into about every leaf", name, ni);
	dm_tree_get_counters(t, &t1);
	CHECK(ni > 0 && (t1.splits - t0.splits) * 6 < (uint64_t) ni, "%s: %" PRIu64 " of %d inserts split a leaf", name,
		  t1.splits - t0.splits, ni);
	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_OK && cnt == m.n, "%s: verify (%" PRIu64 " entries) %s", name, cnt, msg);
	tree_matches_model(t, &m, 1, name);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", name);
out_client:
	m_free(&m);
	free(e);
	if (c)
		dm_client_destroy(c);
}

/* ---- dups: 10,000 tids of one key ------------------------------------------------ */

static void
run_dups(int backend, const char *bname)
{
	char		name[64],
				msg[256];
	dm_client  *c = test_client_connect(backend, 0, 30000, "test_tree_hop", mn.addr, NULL);
	dm_tree    *t;
	model		m = {0};
	int			nd = scaled(10000);
	uint64_t	key = 500000,
				cnt = 0;

	snprintf(name, sizeof(name), "hop-dups-%s", bname);
	if (!CHECK(c != NULL, "%s: client connects", name) || (t = make_tree(c, name, 1024, 8)) == NULL)
		goto out_client;
	/* neighbours: single-tid keys around the big one */
	for (uint64_t k = key - 50; k <= key + 50; k += 10)
		if (k != key && CHECK_STATUS(dm_tree_insert(t, dm_entry_make(k, k), NULL), DM_OK, "%s: insert neighbour", name))
			m_insert(&m, dm_entry_make(k, k));
	while (m.n < (size_t) nd + 10)
	{
		dm_entry	b[100];
		int			n = 1 + (int) rnd_below(100),
					changed = 0;

		for (int i = 0; i < n; i++)
			b[i] = dm_entry_make(key, rnd_below(1u << 30));
		n = sort_unique(b, n);
		if (n > 1 ? dm_tree_insert_sorted(t, b, n, &changed) != DM_OK : dm_tree_insert(t, b[0], NULL) != DM_OK)
			break;
		for (int i = 0; i < n; i++)
			m_insert(&m, b[i]);
	}
	CHECK(tree_matches_model(t, &m, 0, "10,000 tids of one key"), "%s: %zu entries: scans both ways equal the model",
		  name, m.n);
	{
		size_t		from = m_lower(&m, dm_entry_make(key, 0)),
					to = m_upper(&m, dm_entry_make(key, DM_TID_MAX));
		uint64_t   *tids = malloc(sizeof(uint64_t) * (to - from + 8));
		int			got = -1,
					ok;
		dm_tree_counters t0,
					t1;

		dm_tree_get_counters(t, &t0);
		ok = dm_tree_lookup(t, key, tids, (int) (to - from + 8), &got) == DM_OK && got == (int) (to - from);
		for (size_t i = 0; ok && i < to - from; i++)
			ok = tids[i] == m.e[from + i].tid;
		dm_tree_get_counters(t, &t1);
		CHECK(ok, "%s: lookup returns all %zu tids in order (got %d)", name, to - from, got);
		CHECK(t1.hop_fallbacks == t0.hop_fallbacks + 1 && t1.hop_reads == t0.hop_reads,
			  "%s: ... reading whole leaves, not a neighbourhood", name);
		free(tids);
	}
	{
		int			ok = 1;
		dm_tree_counters t0,
					t1;

		dm_tree_get_counters(t, &t0);
		for (uint64_t k = key - 50; k <= key + 50; k += 10)
		{
			uint64_t	tid = 0;
			int			got = -1;

			if (k != key)
				ok &= dm_tree_lookup(t, k, &tid, 1, &got) == DM_OK && got == 1 && tid == k;
		}
		dm_tree_get_counters(t, &t1);
		CHECK(ok, "%s: the keys around it are found", name);
		tap_diag("%s: %" PRIu64 " of its 10 neighbours read one neighbourhood", name, t1.hop_reads - t0.hop_reads);
	}
	/* delete every other tid of the key, in batches */
	{
		size_t		from = m_lower(&m, dm_entry_make(key, 0)),
					to = m_upper(&m, dm_entry_make(key, DM_TID_MAX));
		model		d = {0};
		int			changed = 0,
					total = 0;

		for (size_t i = from; i < to; i += 2)
			m_insert(&d, m.e[i]);
		for (size_t i = 0; i < d.n; i += 64)
		{
			int			n = d.n - i < 64 ? (int) (d.n - i) : 64;

			if (dm_tree_delete_sorted(t, d.e + i, n, &changed) != DM_OK)
				break;
			total += changed;
		}
		CHECK((size_t) total == d.n, "%s: deleted %d of %zu tids", name, total, d.n);
		for (size_t i = 0; i < d.n; i++)
			m_delete(&m, d.e[i]);
		m_free(&d);
	}
	CHECK(tree_matches_model(t, &m, 50, "after deleting half"), "%s: after deleting half: scans and lookups match", name);
	CHECK(dm_tree_verify(t, &cnt, msg, sizeof(msg)) == DM_OK && cnt == m.n, "%s: verify (%" PRIu64 " entries) %s", name,
		  cnt, msg);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", name);
	m_free(&m);
out_client:
	if (c)
		dm_client_destroy(c);
}

/* ---- spec: speculative reads that must be rejected -------------------------------- */

/* What one lookup of a single-tid key returned and cost. */
typedef struct spec_obs
{
	int			rc;
	int			n;
	uint64_t	tids[4];
	uint64_t	bytes;
	uint64_t	rts;
	uint64_t	hits;			/* speculative reads that answered */
	uint64_t	stale;			/* speculative reads rejected */
	uint64_t	nbhd;			/* neighbourhood reads that answered */
} spec_obs;

static spec_obs
look(dm_client *c, dm_tree *t, uint64_t key)
{
	spec_obs	o;
	dm_counters c0,
				c1;
	dm_tree_counters t0,
				t1;

	memset(&o, 0, sizeof(o));
	dm_client_counters(c, 1, &c0);
	dm_tree_get_counters(t, &t0);
	o.rc = dm_tree_lookup(t, key, o.tids, 4, &o.n);
	dm_client_counters(c, 1, &c1);
	dm_tree_get_counters(t, &t1);
	o.bytes = c1.bytes_read - c0.bytes_read;
	o.rts = c1.round_trips - c0.round_trips;
	o.hits = t1.hop_spec_hits - t0.hop_spec_hits;
	o.stale = t1.hop_spec_stale - t0.hop_spec_stale;
	o.nbhd = t1.hop_reads - t0.hop_reads;
	return o;
}

/* The lookup returned exactly tid (want_n = 1) or nothing (want_n = 0). */
static int
got(const spec_obs *o, int want_n, uint64_t tid)
{
	return o->rc == DM_OK && o->n == want_n && (want_n == 0 || o->tids[0] == tid);
}

/* The fences [*lo, *hi) of the leaf holding key, as iterators' copies of it give them. */
static int
leaf_range(dm_tree *t, uint64_t key, dm_entry *lo, dm_entry *hi)
{
	dm_range	f = {dm_entry_make(key, 0), 1, DM_ENTRY_INF, 1, 0};
	dm_range	b = {DM_ENTRY_MIN, 1, dm_entry_make(key, DM_TID_MAX), 1, 1};
	dm_iter    *it = NULL;
	dm_entry	e;
	int			ok;

	if (dm_iter_open(t, &f, &it) != DM_OK)
		return 0;
	ok = dm_iter_next(it, &e) == 1 && e.key == key && dm_iter_copy_bound(it, hi);
	dm_iter_close(it);
	if (!ok || dm_iter_open(t, &b, &it) != DM_OK)
		return 0;
	ok = dm_iter_next(it, &e) == 1 && e.key == key && dm_iter_copy_bound(it, lo);
	dm_iter_close(it);
	return ok;
}

/* Every entry in [lo, hi) (at most max), ascending. */
static int
entries_in(dm_tree *t, dm_entry lo, dm_entry hi, dm_entry *out, int max)
{
	dm_range	r = {lo, 1, hi, 0, 0};
	dm_iter    *it = NULL;
	dm_entry	e;
	int			n = 0;

	if (dm_iter_open(t, &r, &it) != DM_OK)
		return -1;
	while (n < max && dm_iter_next(it, &e) == 1)
		out[n++] = e;
	dm_iter_close(it);
	return n;
}

/*
 * A reader handle remembers keys in its hotspot buffer while a writer
 * handle (another client) deletes the entry, adds one, makes entries hop
 * around it, splits its leaf, and empties, reclaims and reuses the leaf:
 * each time the reader's next lookup must be a rejected speculation
 * followed by the right answer, and an unchanged leaf must answer with one
 * 16-byte read.  (With the version/checksum comparison of spec_read
 * disabled, the answers after the delete, the insert, the splits and the
 * reuse come out wrong.)
 */
static void
run_spec(int backend, const char *bname)
{
	char		name[64],
				msg[256];
	dm_client  *cw = test_client_connect(backend, 0, 30000, "test_tree_hop", mn.addr, NULL);
	dm_client  *cr = test_client_connect(backend, 0, 30000, "test_tree_hop", mn.addr, NULL);
	dm_tree    *tw = NULL,
			   *tr = NULL;
	dm_tree_name tn;
	dm_entry   *e = NULL,
				lo,
				hi,
				buf[256];
	int			n = scaled(4000),
				H = 8,
				nb = dm_hop_nb(1024),
				ki = -1,
				bad = 0,
				rejected = 0,
				writes = 0,
				reclaimed = 0;
	uint64_t	k = 0,
				cnt = 0,
				tid = 0;
	spec_obs	o;
	dm_tree_counters wc;

	snprintf(name, sizeof(name), "hop-spec-%s", bname);
	if (!CHECK(cw != NULL && cr != NULL, "%s: clients connect", name) || (tw = make_tree(cw, name, 1024, H)) == NULL)
		goto out;
	e = malloc(sizeof(dm_entry) * (size_t) n);
	for (int i = 0; i < n; i++)
		e[i] = dm_entry_make((uint64_t) i * 7 + 3, (uint64_t) i);
	CHECK_STATUS(bulk(tw, e, n, 80), DM_OK, "%s: bulk-load %d single-tid keys", name, n);
	dm_tree_name_named(&tn, name);
	if (!CHECK_STATUS(dm_tree_open_existing(cr, 1, &tn, &tr), DM_OK, "%s: a reader handle on another client", name))
		goto out;

	/* a key in the middle whose lookup reads one neighbourhood (its home did not overflow) */
	for (int i = n / 2; i < n && ki < 0; i++)
	{
		o = look(cr, tr, e[i].key);
		if (got(&o, 1, e[i].tid) && o.nbhd == 1)
			ki = i;
	}
	if (!CHECK(ki >= 0, "%s: a key answered from its neighbourhood", name))
		goto out;
	k = e[ki].key;
	tid = e[ki].tid;
	o = look(cr, tr, k);
	CHECK(got(&o, 1, tid) && o.hits == 1 && o.bytes == 16 && o.rts == 1,
		  "%s: the same lookup again is one speculative read of 16 bytes (%d tids, %" PRIu64 " hits, "
		  "%" PRIu64 " bytes, %" PRIu64 " round trips)", name, o.n, o.hits, o.bytes, o.rts);

	/* the entry deleted: the leaf's version moved on */
	CHECK_STATUS(dm_tree_delete(tw, e[ki], NULL), DM_OK, "%s: the writer deletes the entry", name);
	o = look(cr, tr, k);
	CHECK(got(&o, 0, 0) && o.stale == 1, "%s: after the delete the speculation is rejected and the key "
		  "is gone (%d tids, %" PRIu64 " rejected)", name, o.n, o.stale);
	o = look(cr, tr, k);
	CHECK(got(&o, 0, 0) && o.hits == 1 && o.bytes == 16, "%s: its absence is remembered too (%" PRIu64 " hits)",
		  name, o.hits);

	/* another tid of the key */
	tid = 5000000;
	CHECK_STATUS(dm_tree_insert(tw, dm_entry_make(k, tid), NULL), DM_OK, "%s: the writer inserts (k, %" PRIu64 ")",
				 name, tid);
	o = look(cr, tr, k);
	CHECK(got(&o, 1, tid) && o.stale == 1, "%s: after the insert the speculation is rejected and the new tid "
		  "found (%d tids, first %" PRIu64 ")", name, o.n, o.n > 0 ? o.tids[0] : 0);

	/*
	 * Entries hopping around it: keys of its leaf whose homes are at or
	 * just before its home, until the leaf splits.  Before each write the
	 * reader has the key pinned; after it, its speculation must fail.
	 */
	if (!CHECK(leaf_range(tr, k, &lo, &hi), "%s: the key's leaf range", name))
		goto out;
	dm_tree_get_counters(tw, &wc);
	for (uint64_t x = lo.key + 1; x < k + 100000 && (hi.key == UINT64_MAX || x < hi.key); x++)
	{
		int			hx = dm_hop_home(x, nb, H),
					hk = dm_hop_home(k, nb, H);
		dm_tree_counters wc2;

		if (x % 7 == 3 || hx > hk || hx < hk - H + 1)
			continue;
		o = look(cr, tr, k);	/* pinned again (or a hit) */
		bad += !got(&o, 1, tid);
		if (dm_tree_insert(tw, dm_entry_make(x, 1), NULL) != DM_OK)
		{
			bad++;
			break;
		}
		writes++;
		o = look(cr, tr, k);
		bad += !got(&o, 1, tid);
		rejected += o.stale == 1;
		dm_tree_get_counters(tw, &wc2);
		if (wc2.splits > wc.splits)
			break;
	}
	CHECK(writes > 0 && bad == 0 && rejected == writes,
		  "%s: %d writes of keys hopping around it (up to its leaf's split): every lookup right (%d wrong), "
		  "every speculation after a write rejected (%d)", name, writes, bad, rejected);

	/*
	 * Its leaf emptied (the key's absence pinned), reclaimed and its node
	 * reused by a split elsewhere; then the key inserted again, into the
	 * left neighbour that took the range over.  A key the reader never
	 * looked up, so this part does not rest on the ones above.  Leaves
	 * that are first children are not reclaimed: try the leaves to the
	 * right.
	 */
	k = e[n / 4].key;
	for (int attempt = 0; attempt < 6 && !reclaimed; attempt++)
	{
		dm_reclaim_result res;
		int			m;

		if (!leaf_range(tr, k, &lo, &hi) || (m = entries_in(tr, lo, hi, buf, 256)) <= 0)
			break;
		CHECK_STATUS(dm_tree_delete_sorted(tw, buf, m, NULL), DM_OK, "%s: the writer empties a leaf (%d entries)",
					 name, m);
		o = look(cr, tr, k);
		o = look(cr, tr, k);
		if (!CHECK(got(&o, 0, 0) && o.hits == 1, "%s: the empty leaf's answer is pinned", name))
			break;
		memset(&res, 0, sizeof(res));
		CHECK_STATUS(dm_tree_reclaim(tw, &res), DM_OK, "%s: reclaim", name);
		if (res.leaves_reclaimed == 1)
			reclaimed = 1;
		else
		{
			/* a first child: its right neighbour next (the key is gone; put one there) */
			k = hi.key == UINT64_MAX ? k : hi.key;
			if (!CHECK(hi.key != UINT64_MAX, "%s: a leaf to the right", name))
				break;
			while (1)
			{
				uint64_t	ts[2];
				int			nt = 0;

				if (dm_tree_lookup(tr, k, ts, 2, &nt) != DM_OK || nt == 1)
					break;
				k++;
			}
		}
	}
	if (!CHECK(reclaimed, "%s: the key's emptied leaf was reclaimed", name))
		goto out;
	dm_tree_get_counters(tw, &wc);
	for (uint64_t x = 0; x < (uint64_t) scaled(20000); x++)
	{
		dm_tree_counters wc2;

		if (dm_tree_insert(tw, dm_entry_make(UINT64_C(1) << 40 | x, 2), NULL) != DM_OK)
			break;
		dm_tree_get_counters(tw, &wc2);
		if (wc2.nodes_reused > wc.nodes_reused)
			break;
	}
	{
		dm_tree_counters wc2;

		dm_tree_get_counters(tw, &wc2);
		CHECK(wc2.nodes_reused > wc.nodes_reused, "%s: a split elsewhere reused the reclaimed node", name);
	}
	tid = 6000000;
	CHECK_STATUS(dm_tree_insert(tw, dm_entry_make(k, tid), NULL), DM_OK, "%s: the key inserted again", name);
	o = look(cr, tr, k);
	CHECK(got(&o, 1, tid) && o.stale == 1, "%s: the speculation on the freed and reused leaf is rejected and the "
		  "key found in its new leaf (%d tids, %" PRIu64 " rejected)", name, o.n, o.stale);
	CHECK(dm_tree_verify(tw, &cnt, msg, sizeof(msg)) == DM_OK, "%s: verify %s", name, msg);
out:
	free(e);
	if (tr)
		dm_tree_close(tr);
	if (tw)
		CHECK_STATUS(dm_tree_destroy(tw), DM_OK, "%s: destroy", name);
	if (cr)
		dm_client_destroy(cr);
	if (cw)
		dm_client_destroy(cw);
}

/* ---- torn: lookups against writers hopping entries, in tear mode ------------------- */

#define TORN_BASE UINT64_C(4000000)

static uint64_t
stable_key(int i)
{
	return TORN_BASE + 1 + (uint64_t) i * 37;
}

/*
 * The i-th key writer w toggles: keys whose home bucket (512-byte leaves,
 * H = 4) is at or just before a stable key's, so inserting them makes the
 * stable entries hop (the moves a torn read could miss).
 */
static uint64_t
writer_key(int w, int i)
{
	int			want = w * WKEYS + i;
	int			nb = dm_hop_nb(512);

	for (uint64_t k = TORN_BASE + 2;; k += 3)
	{
		int			h = dm_hop_home(k, nb, 4);
		int			near = 0;

		for (int s = 0; s < NSTABLE; s++)
		{
			int			hs = dm_hop_home(stable_key(s), nb, 4);

			near |= k != stable_key(s) && h <= hs && h >= hs - 1;
		}
		if (near && want-- == 0)
			return k;
	}
}

/* Record the first failure of this child. */
#define cfail TEST_CHILD_FAIL

static int
torn_child(int backend, const char *name, int idx)
{
	child_rep  *rep = &sh->rep[idx];
	dm_client  *c = test_client_connect(backend, DM_CLIENT_TEAR, 30000, "test_tree_hop", mn.addr, NULL);
	dm_tree_name tn;
	dm_tree    *t = NULL;
	int			present[WKEYS] = {0};

	rng = g_seed * 7919 + (uint64_t) idx;
	dm_tree_name_named(&tn, name);
	if (c == NULL || dm_tree_open_existing(c, 1, &tn, &t) != DM_OK ||
		(torn_cache && dm_tree_use_cache(t, torn_cache, 0) != DM_OK))
	{
		cfail(rep, "child %d: cannot connect, open or use the cache", idx);
		return 1;
	}
	if (idx < NWRITERS)
	{
		for (int op = 0; op < scaled(1500) && !rep->failed; op++)
		{
			int			i = (int) rnd_below(WKEYS);
			dm_entry	e = dm_entry_make(writer_key(idx, i), 1000 + (uint64_t) idx);
			int			existed = -1;
			int			rc = present[i] ? dm_tree_delete(t, e, &existed) : dm_tree_insert(t, e, &existed);

			if (rc != DM_OK || existed != present[i])
				cfail(rep, "writer %d: %s %s: %s existed=%d %s", idx, present[i] ? "delete" : "insert", E(e),
					  dm_strerror(rc), existed, dm_tree_error(t));
			present[i] = !present[i];
		}
	}
	else
	{
		while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE) && !rep->failed)
		{
			int			i = (int) rnd_below(NSTABLE);
			uint64_t	tids[4];
			int			got = -1;
			int			rc = dm_tree_lookup(t, stable_key(i), tids, 4, &got);

			rep->lookups++;
			if (rc != DM_OK || got != 1 || tids[0] != (uint64_t) i)
				cfail(rep, "reader %d: lookup of stable key %" PRIu64 ": %s, %d tids (first %" PRIu64 "), want tid %d %s",
					  idx, stable_key(i), dm_strerror(rc), got, got > 0 ? tids[0] : 0, i, dm_tree_error(t));
			if (torn_cache)
			{
				/*
				 * the writers' keys too, pinned and hit by every reader in the
				 * shared buffer while they change: absent or the writer's tid
				 */
				int			w = (int) rnd_below(NWRITERS);
				uint64_t	wk = writer_key(w, (int) rnd_below(WKEYS));

				rc = dm_tree_lookup(t, wk, tids, 4, &got);
				if (rc != DM_OK || got > 1 || (got == 1 && tids[0] != 1000 + (uint64_t) w))
					cfail(rep, "reader %d: lookup of writer %d's key %" PRIu64 ": %s, %d tids (first %" PRIu64
						  "), want none or tid %d %s", idx, w, wk, dm_strerror(rc), got, got > 0 ? tids[0] : 0,
						  1000 + w, dm_tree_error(t));
			}
		}
	}
	dm_tree_get_counters(t, &rep->ctr);
	dm_tree_close(t);
	dm_client_destroy(c);
	return rep->failed;
}

/*
 * cached: every process uses one cache of inner nodes (DEX's leaves would
 * answer the hot keys from frames) whose hotspot buffer (16 keys for the
 * 8 stable and 18 writer keys: ways change hands all the time) they all
 * pin into and speculate from; the readers look the writers' keys up too.
 */
static void
run_torn(int backend, const char *bname, int cached)
{
	char		name[64],
				msg[256];
	dm_client  *c = test_client_connect(backend, 0, 30000, "test_tree_hop", mn.addr, NULL);
	dm_tree    *t;
	dm_entry	fill[64];
	pid_t		pids[NWRITERS + NREADERS];
	uint64_t	reads = 0,
				retries = 0,
				lookups = 0,
				hits = 0,
				stale = 0,
				cnt = 0;
	int			nf = 0,
				clean = 1;

	snprintf(name, sizeof(name), "hop-torn-%s%s", bname, cached ? "-shared" : "");
	/* 512-byte leaves (26 buckets), H = 4: entries hop and overflow within a few inserts */
	if (!CHECK(c != NULL, "%s: client connects", name) || (t = make_tree(c, name, 512, 4)) == NULL)
		goto out_client;
	/* two levels at least: the stable keys' leaf is reached through an inner node */
	for (uint64_t k = 0; k < 64; k++)
		fill[nf++] = dm_entry_make(k * 200000, 0);
	CHECK_STATUS(bulk(t, fill, nf, 10), DM_OK, "%s: bulk-load 64 keys two a leaf", name);
	for (int i = 0; i < NSTABLE; i++)
		CHECK_STATUS(dm_tree_insert(t, dm_entry_make(stable_key(i), (uint64_t) i), NULL), DM_OK,
					 "%s: stable key %d", name, i);
	memset(sh, 0, sizeof(*sh));
	torn_cache = NULL;
	if (cached)
	{
		dm_cache_config cfg = {512, 64, DM_CACHE_INNER, 0, 10, 16};
		size_t		len = dm_cache_shmem_size(&cfg);

		torn_cache = dm_cache_init(test_shared_map(len), len, &cfg);
		if (!CHECK(torn_cache != NULL, "%s: a shared cache with a 16-key hotspot buffer", name))
			goto out_tree;
	}
	for (int i = 0; i < NWRITERS + NREADERS; i++)
		if ((pids[i] = test_fork()) == 0)
			_exit(torn_child(backend, name, i));
	for (int i = 0; i < NWRITERS; i++)
	{
		int			st = 0;

		waitpid(pids[i], &st, 0);
		clean &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	for (int i = NWRITERS; i < NWRITERS + NREADERS; i++)
	{
		int			st = 0;

		waitpid(pids[i], &st, 0);
		clean &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	for (int i = 0; i < NWRITERS + NREADERS; i++)
	{
		if (sh->rep[i].failed)
			tap_diag("%s: %s", name, sh->rep[i].msg);
		reads += sh->rep[i].ctr.hop_reads;
		retries += sh->rep[i].ctr.hop_retries;
		lookups += sh->rep[i].lookups;
		hits += sh->rep[i].ctr.hop_spec_hits;
		stale += sh->rep[i].ctr.hop_spec_stale;
	}
	CHECK(clean, "%s: %d writers toggled keys among %d stable ones, %d readers looked them up: all exact", name,
		  NWRITERS, NSTABLE, NREADERS);
	tap_diag("%s: %" PRIu64 " lookups, %" PRIu64 " answered from one neighbourhood, %" PRIu64 " neighbourhood reads "
			 "failed validation and were redone", name, lookups, reads, retries);
	tap_diag("%s: %" PRIu64 " answered by a speculative read, %" PRIu64 " speculations rejected", name, hits, stale);
	CHECK(reads > 0, "%s: lookups read neighbourhoods while entries hopped (%" PRIu64 ")", name, reads);
	/* the readers' hotspot buffers hold the stable keys: speculation ran against the hopping writers */
	CHECK(hits > 0 && stale > 0, "%s: speculative reads answered (%" PRIu64 ") and were rejected after writes "
		  "(%" PRIu64 ")", name, hits, stale);
	/* over shm every process tears its own reads and writes: the version check must have had work */
	if (backend == DM_BACKEND_SHM)
		CHECK(retries > 0, "%s: torn neighbourhood reads were caught by the version check and redone (%" PRIu64 ")",
			  name, retries);
out_tree:
	CHECK(dm_tree_verify(t, &cnt, msg, sizeof(msg)) == DM_OK, "%s: verify %s", name, msg);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", name);
out_client:
	if (c)
		dm_client_destroy(c);
}

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "256M", "--chunk-size", "1M", NULL};

	tree_test_env(&g_seed, &g_scale);
	rng_seed_label(g_seed, "test_tree_hop", 0);
	sh = test_start_shared(sizeof(shared), &mn, args);
	if (sh == NULL)
		return tap_done();
	run_reads(DM_BACKEND_TCP, "tcp", 0);
	run_reads(DM_BACKEND_SHM, "shm", 0);
	run_reads(DM_BACKEND_TCP, "tcp", 1);
	run_fill(DM_BACKEND_TCP, "tcp");
	run_dups(DM_BACKEND_TCP, "tcp");
	run_dups(DM_BACKEND_SHM, "shm");
	run_spec(DM_BACKEND_TCP, "tcp");
	run_spec(DM_BACKEND_SHM, "shm");
	run_torn(DM_BACKEND_TCP, "tcp", 0);
	run_torn(DM_BACKEND_SHM, "shm", 0);
	run_torn(DM_BACKEND_TCP, "tcp", 1);
	run_torn(DM_BACKEND_SHM, "shm", 1);
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	return tap_done();
}
