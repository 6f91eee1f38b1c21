/*
 * ops.c — the model scenario's building blocks: inserts, deletes, contains and
 * batches applied to tree and model alike and checked one by one, and the
 * phases that drive them (random mixes, one hot key across many leaves,
 * batches, scans interleaved with writes, draining the tree).
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

/* ---- operations checked against the model --------------------------------- */

/* A NULL entry; in VAR trees (no NULLs) test key MAX-3 or MAX-2 instead (tree_model.h). */
static dm_entry
null_or_top(uint64_t tid)
{
	return test_key_var() ? tk(UINT64_MAX - 3 + (tid & 1), tid) : dm_entry_null(tid);
}

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

int
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

int
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
			b[i] = tk(k, t0 + (uint64_t) i);
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
int
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
void
phase_hot(dm_tree *t, model *m)
{
	uint64_t	tids[600],
				canary = UINT64_C(0xDEADBEEFCAFEF00D);
	int			n;

	/* 450 tids of the hot key in random order */
	for (int i = 0; i < 450 && !failmsg[0]; i++)
		op_insert(t, m, tk(HOT_KEY, rnd_below(1200) * 3));
	for (int i = 0; i < 120 && !failmsg[0]; i++)
		op_insert(t, m, null_or_top(rnd_below(300)));
	for (int i = 0; i < 40 && !failmsg[0]; i++)
	{
		op_insert(t, m, tk(0, rnd_below(100)));
		op_insert(t, m, tk(UINT64_MAX, rnd_below(100)));
	}
	/* the largest tid of a non-NULL entry, and of a NULL one */
	op_insert(t, m, tk(HOT_KEY, TID_MASK));
	op_insert(t, m, null_or_top(TID_MASK));
	op_insert(t, m, tk(0, 0));	/* FIXED8: == DM_ENTRY_MIN; VAR: the smallest test key */
	check_lookup(t, m, HOT_KEY);
	check_lookup(t, m, 0);
	check_lookup(t, m, UINT64_MAX);
	for (int i = 0; i < 50 && !failmsg[0]; i++)
		op_contains(t, m, rnd_below(2) ? null_or_top(rnd_below(300)) : tk(HOT_KEY, rnd_below(1200) * 3));
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
		int			rc = tk_lookup(t, HOT_KEY, tids, 5, &n);
		int			inkey = 1;

		for (int i = 0; i < 5 && i < n; i++)
			inkey &= m_has(m, tk(HOT_KEY, tids[i]));
		CHECK(rc == DM_OK && n >= 5 && inkey && tids[5] == canary && tids[6] == canary,
			  "hot: lookup with max=5 of a key with %zu tids writes at most 5 (rc %s, n=%d)",
			  m_upper(m, tk(HOT_KEY, DM_TID_MAX)) - m_lower(m, tk(HOT_KEY, 0)),
			  dm_strerror(rc), n);
	}

	/* delete every other hot tid: leaves inside the run get sparse */
	{
		size_t		from = m_lower(m, tk(HOT_KEY, 0)),
					to = m_upper(m, tk(HOT_KEY, DM_TID_MAX));
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

/*
 * Duplicates as PostgreSQL makes them (docs/design.md §5.1): one key with
 * thousands of tids (spanning many leaves), and many keys each with more
 * tids than a hopscotch neighbourhood holds (8), all in random order, some
 * in sorted batches; lookups, contains and scans of the keys against the
 * model, then every third entry deleted and the same again.  On a tree of
 * hopscotch leaves the lookups must have taken both paths: one
 * neighbourhood read (keys of few tids, checked first) and whole leaves.
 */
void
phase_dups(dm_tree *t, model *m)
{
	int			nbig = scaled(4000);
	int			nkeys = scaled(150) < 20 ? 20 : scaled(150);
	uint64_t	big = DUP_KEY,
				base = DUP_KEY + 16;
	dm_tree_counters c0,
				c1;
	int			hop = dm_tree_leaf_format(t, NULL) == DM_LEAF_HOPSCOTCH;

	dm_tree_get_counters(t, &c0);
	/* keys of a single tid first: their lookups read one neighbourhood */
	for (int k = 0; k < 40 && !failmsg[0]; k++)
		op_insert(t, m, tk(base - 12 + (uint64_t) k * 100000, 7));
	for (int k = 0; k < 40 && !failmsg[0]; k++)
		check_lookup(t, m, base - 12 + (uint64_t) k * 100000);
	dm_tree_get_counters(t, &c1);
	if (hop)
		CHECK(c1.hop_reads > c0.hop_reads, "dups: lookups of single-tid keys read neighbourhoods (%" PRIu64 " of 40)",
			  c1.hop_reads - c0.hop_reads);

	for (int i = 0; i < nbig && !failmsg[0]; i++)
	{
		if (i % 500 == 250)
		{
			/* a sorted batch of the big key's tids now and then */
			dm_entry	b[64];
			uint64_t	tid = rnd_below(1u << 20) * 64;

			for (int j = 0; j < 64; j++)
				b[j] = tk(big, tid + (uint64_t) j);
			op_batch(t, m, b, 64, 1);
		}
		else
			op_insert(t, m, tk(big, rnd_below(1u << 26)));
	}
	for (int i = 0; i < nkeys * 20 && !failmsg[0]; i++)
		op_insert(t, m, tk(base + rnd_below((uint64_t) nkeys) * 3, rnd_below(1u << 20)));
	check_lookup(t, m, big);
	for (int k = 0; k < nkeys && !failmsg[0]; k++)
		check_lookup(t, m, base + (uint64_t) k * 3);
	for (int i = 0; i < 200 && !failmsg[0]; i++)
		op_contains(t, m, tk(rnd_below(2) ? big : base + rnd_below((uint64_t) nkeys) * 3, rnd_below(1u << 20)));
	for (int i = 0; i < 3 && !failmsg[0]; i++)
	{
		dm_range	r = {tk(big, 0), 1, tk(base + (uint64_t) nkeys * 3, DM_TID_MAX), 1, i == 1};

		if (i == 2)
			r = (dm_range) {tk_lo(big, 1), 1, tk_hi(big, 1), 1, 1};
		check_range(t, m, &r);
	}
	check_nofail("dups: %d tids of one key, %d keys of ~20 tids: inserts, lookups, contains, scans match", nbig, nkeys);

	/* delete every third entry of those keys */
	{
		size_t		from = m_lower(m, tk(big, 0)),
					to = m_lower(m, tk(base + (uint64_t) nkeys * 3, 0));
		model		d = {0};

		for (size_t i = from; i < to; i += 3)
			m_insert(&d, m->e[i]);
		for (size_t i = 0; i < d.n && !failmsg[0]; i++)
			op_delete(t, m, d.e[i]);
		m_free(&d);
	}
	check_lookup(t, m, big);
	for (int k = 0; k < nkeys && !failmsg[0]; k++)
		check_lookup(t, m, base + (uint64_t) k * 3);
	check_nofail("dups: every third entry deleted: lookups match");
	dm_tree_get_counters(t, &c1);
	if (hop)
		CHECK(c1.hop_fallbacks + c1.hop_whole > c0.hop_fallbacks + c0.hop_whole,
			  "dups: lookups of keys past a neighbourhood read whole leaves (%" PRIu64 " through the iterator, "
			  "%" PRIu64 " one leaf)", c1.hop_fallbacks - c0.hop_fallbacks, c1.hop_whole - c0.hop_whole);
}

/* Sorted batches of all shapes, including empty and single-entry ones. */
void
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
void
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
				dm_entry	own;

				/* e's suffix is the iterator's until the next call: prev and ret keep interned ones */
				if (!tk_own(e, &own))
				{
					failf("interleaved scan %s: returned %s, whose key bytes are no test key's (%s is)",
						  R(&r), E(e), E(own));
					break;
				}
				e = own;
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
								tk(tk_key(e), e.tid + 1 + rnd_below(3));

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
void
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
