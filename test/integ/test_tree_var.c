/*
 * test_tree_var.c — trees of key format VAR (DESIGN.md §5.2, issue 16 step
 * 2) against a model: the key format as a tree option (kept in the catalog,
 * refused with hopscotch leaves), the entries each format accepts, and
 * random inserts, re-inserts, deletes, point checks and range scans in both
 * directions on trees whose nodes split by bytes with truncated separators,
 * compared entry by entry with a sorted model, dm_tree_verify after each
 * phase; dm_tree_lookup_key against the model; and bulk loads (run_bulk)
 * of such keys over two memnodes at several fill factors, checked the same
 * way and for their shape (fill by bytes, truncated leaf fences, fan-out,
 * placement), then changed by inserts and deletes.
 *
 * Keys are prefix-free byte strings, as the access method's encoding makes
 * them: bytes 1..255 then a terminating 0, 2 to key_max bytes; a third of
 * them share one of four 8-byte prefixes (so their order is decided by the
 * suffix), some are shorter than 8 bytes (no suffix), some exactly
 * key_max.  Some keys get several tids.  Node sizes 256 (key_max 20: many
 * levels) and 1024.  TREE_SEED picks the stream (default 1).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_client.h"
#include "dm_tree.h"
#include "testutil.h"

#define KEY_CAP 1024
/* The VAR node format's header and leaf slot (DESIGN.md §5.2), for fill checks. */
#define VAR_HEADER 96
#define VAR_LEAF_SLOT 24

typedef struct ment
{
	uint8_t		k[KEY_CAP];
	uint32_t	len;
	uint64_t	tid;
	int			present;
} ment;

static uint64_t rng;
static memnode_proc mn,
			mn2;

static uint64_t
rnd_below(uint64_t n)
{
	return xorshift64s(&rng) % n;
}

static dm_entry
ment_entry(const ment *m)
{
	return dm_entry_from_bytes(m->k, m->len, m->tid);
}

static int
cmp_ment(const void *a, const void *b)
{
	return dm_entry_cmp(ment_entry(a), ment_entry(b));
}

/* A prefix-free key of 2..kmax bytes: bytes 1..255, then 0. */
static void
make_key(ment *m, uint32_t kmax)
{
	static const uint8_t shared[4][8] = {
		{'a', 'l', 'i', 'c', 'e', '@', 'e', 'x'},
		{'a', 'l', 'i', 'c', 'e', '@', 'e', 'y'},
		{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF},
		{1, 1, 1, 1, 1, 1, 1, 1},
	};
	uint32_t	len,
				i = 0;
	uint64_t	shape = rnd_below(10);

	if (shape < 3)
	{
		/* a shared 8-byte prefix, the rest decides */
		memcpy(m->k, shared[rnd_below(4)], 8);
		i = 8;
		len = 9 + (uint32_t) rnd_below(kmax - 8);
	}
	else if (shape < 5)
		len = 2 + (uint32_t) rnd_below(7);	/* at most 8 bytes: no suffix */
	else if (shape < 6)
		len = kmax;
	else
		len = 2 + (uint32_t) rnd_below(kmax - 1);
	for (; i + 1 < len; i++)
		m->k[i] = (uint8_t) (1 + rnd_below(shape == 9 ? 3 : 255));
	m->k[len - 1] = 0;
	m->len = len;
}

/*
 * nkeys random keys (room for 3 * nkeys entries in model), a fifth of them
 * with 2..3 tids; sorted, without duplicates.  Returns the entry count.
 */
static int
gen_model(ment *model, int nkeys, uint32_t kmax)
{
	int			nm = 0,
				w = 0;

	for (int i = 0; i < nkeys; i++)
	{
		int			ntid = rnd_below(5) == 0 ? 1 + (int) rnd_below(3) : 1;

		make_key(&model[nm], kmax);
		for (int j = 0; j < ntid; j++)
		{
			if (j > 0)
				model[nm] = model[nm - 1];
			model[nm].tid = 1 + rnd_below(1u << 30);
			model[nm].present = 1;
			nm++;
		}
	}
	/* a key drawn twice with one tid is one entry: drop the later copy */
	qsort(model, (size_t) nm, sizeof(ment), cmp_ment);
	for (int i = 0; i < nm; i++)
		if (w == 0 || cmp_ment(&model[w - 1], &model[i]) != 0)
			model[w++] = model[i];
	return w;
}

static dm_client *
connect_client(void)
{
	return test_client_connect(DM_BACKEND_SHM, 0, 30000, "test_tree_var", mn.addr, mn2.addr);
}

/* The model's present entries in order, count in *n. */
static ment **
present_sorted(ment *model, int nm, int *n)
{
	ment	  **out = malloc(sizeof(ment *) * (size_t) (nm ? nm : 1));
	int			k = 0;

	qsort(model, (size_t) nm, sizeof(ment), cmp_ment);
	for (int i = 0; i < nm; i++)
		if (model[i].present)
			out[k++] = &model[i];
	*n = k;
	return out;
}

/*
 * Scan r and compare with the model's entries in range, in the scan's
 * direction.  Returns 1 if equal, else 0 with why.
 */
static int
scan_matches(dm_tree *t, const dm_range *r, ment **p, int np, char *why, size_t whylen)
{
	dm_iter    *it = NULL;
	dm_entry	e;
	int			st,
				got = 0,
				want = 0,
				ok = 1;
	int			idx[np ? np : 1];

	for (int i = 0; i < np; i++)
	{
		dm_entry	m = ment_entry(p[i]);
		int			c1 = dm_entry_cmp(m, r->lo),
					c2 = dm_entry_cmp(m, r->hi);

		if ((c1 > 0 || (c1 == 0 && r->lo_incl)) && (c2 < 0 || (c2 == 0 && r->hi_incl)))
			idx[want++] = i;
	}
	if ((st = dm_iter_open(t, r, &it)) != DM_OK)
	{
		snprintf(why, whylen, "dm_iter_open: %s", dm_strerror(st));
		return 0;
	}
	while ((st = dm_iter_next(it, &e)) == 1)
	{
		if (got >= want)
		{
			snprintf(why, whylen, "more entries than the model's %d", want);
			ok = 0;
			break;
		}
		{
			const ment *m = p[idx[r->backward ? want - 1 - got : got]];

			if (dm_entry_cmp(e, ment_entry(m)) != 0 || e.tid != m->tid)
			{
				snprintf(why, whylen, "entry %d differs from the model's (tid %" PRIu64 " vs %" PRIu64 ", %u vs %u bytes)",
						 got, e.tid, m->tid, 8 + e.sfx_len, m->len);
				ok = 0;
				break;
			}
		}
		got++;
	}
	if (ok && st != 0)
	{
		snprintf(why, whylen, "dm_iter_next: %s", dm_strerror(-st));
		ok = 0;
	}
	if (ok && got != want)
	{
		snprintf(why, whylen, "%d entries, model %d", got, want);
		ok = 0;
	}
	dm_iter_close(it);
	return ok;
}

/* Verify, full scans both ways, 100 random ranges, 200 point checks. */
static void
check_all(dm_tree *t, ment *model, int nm, const char *phase)
{
	int			np;
	ment	  **p = present_sorted(model, nm, &np);
	uint64_t	entries = 0;
	char		msg[400] = "";
	int			st,
				bad = 0;

	st = dm_tree_verify(t, &entries, msg, sizeof(msg));
	CHECK(st == DM_OK && entries == (uint64_t) np, "%s: verify (%s), %" PRIu64 " entries, model %d",
		  phase, st == DM_OK ? "ok" : msg, entries, np);
	for (int dir = 0; dir < 2; dir++)
	{
		dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, dir};

		int			same = scan_matches(t, &r, p, np, msg, sizeof(msg));

		CHECK(same, "%s: full scan %s equals the model%s%s", phase, dir ? "backward" : "forward",
			  same ? "" : ": ", same ? "" : msg);
	}
	for (int i = 0; i < 100 && np > 0; i++)
	{
		const ment *a = p[rnd_below((uint64_t) np)],
				   *b = p[rnd_below((uint64_t) np)];
		dm_range	r;

		if (cmp_ment(a, b) > 0)
		{
			const ment *x = a;

			a = b;
			b = x;
		}
		r.lo = ment_entry(a);
		r.hi = ment_entry(b);
		/* by key (all tids) or by entry, bounds in or out */
		if (rnd_below(2))
		{
			r.lo.tid = 0;
			r.hi.tid = DM_TID_MAX;
		}
		r.lo_incl = (int) rnd_below(2);
		r.hi_incl = (int) rnd_below(2);
		r.backward = (int) rnd_below(2);
		if (!scan_matches(t, &r, p, np, msg, sizeof(msg)) && bad++ == 0)
			tap_diag("%s: range %d: %s", phase, i, msg);
	}
	CHECK(bad == 0, "%s: 100 random ranges, both directions, equal the model (%d differ)", phase, bad);
	bad = 0;
	for (int i = 0; i < 200 && nm > 0; i++)
	{
		const ment *m = &model[rnd_below((uint64_t) nm)];
		int			found = -1;

		if (dm_tree_contains(t, ment_entry(m), &found) != DM_OK || found != m->present)
			bad++;
	}
	CHECK(bad == 0, "%s: contains agrees with the model for 200 entries (%d differ)", phase, bad);

	/* dm_tree_lookup_key: a key's tids in order (a key's entries are adjacent in p) */
	bad = 0;
	for (int i = 0; i < 200 && nm > 0; i++)
	{
		const ment *m = &model[rnd_below((uint64_t) nm)];
		uint64_t	tids[8],
					want[8];
		int			n = -1,
					nw = 0,
					rc = dm_tree_lookup_key(t, dm_entry_from_bytes(m->k, m->len, DM_TID_MAX), tids, 8, &n);

		for (int j = 0; j < np; j++)
			if (p[j]->len == m->len && memcmp(p[j]->k, m->k, m->len) == 0 && nw++ < 8)
				want[nw - 1] = p[j]->tid;
		if ((rc != DM_OK || n != nw || memcmp(tids, want, sizeof(uint64_t) * (size_t) (nw < 8 ? nw : 8)) != 0) &&
			bad++ == 0)
			tap_diag("%s: lookup of a %u-byte key: %s, %d tids, model %d", phase, m->len, dm_strerror(rc), n, nw);
	}
	CHECK(bad == 0, "%s: dm_tree_lookup_key agrees with the model for 200 keys (%d differ)", phase, bad);
	free(p);
}

static void
run_size(dm_client *c, uint32_t ns, int nkeys)
{
	uint32_t	kmax = dm_tree_key_max(ns);
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_tree    *t = NULL,
			   *t2 = NULL;
	dm_tree_stats st;
	int			nm = 0,
				bad = 0,
				existed;
	ment	   *model = calloc((size_t) nkeys * 3, sizeof(ment));
	char		name[64];

	snprintf(name, sizeof(name), "var-%u", ns);
	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = ns;
	opts.key_format = DM_KEY_VAR;
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "ns=%u: create a VAR tree", ns))
		return;
	CHECK(dm_tree_key_format(t) == DM_KEY_VAR, "ns=%u: its key format is VAR", ns);

	/* entries a VAR tree refuses */
	{
		uint8_t		k[KEY_CAP];

		memset(k, 7, sizeof(k));
		CHECK_STATUS(dm_tree_insert(t, dm_entry_from_bytes(k, kmax + 1, 1), &existed), DM_ERR_INVALID,
					 "ns=%u: a key of key_max + 1 = %u bytes is refused", ns, kmax + 1);
		CHECK_STATUS(dm_tree_insert(t, dm_entry_null(1), &existed), DM_ERR_INVALID,
					 "ns=%u: a NULL-marked entry is refused (VAR trees get NULLs as bytes)", ns);
		{
			uint64_t	tids[1];
			int			n = -1;

			CHECK_STATUS(dm_tree_lookup_key(t, dm_entry_from_bytes(k, kmax + 1, 0), tids, 1, &n), DM_ERR_INVALID,
						 "ns=%u: dm_tree_lookup_key of a key of key_max + 1 bytes is refused", ns);
			CHECK(dm_tree_lookup_key(t, dm_entry_from_bytes(k, kmax, 0), tids, 1, &n) == DM_OK && n == 0,
				  "ns=%u: dm_tree_lookup_key of a key of key_max bytes in an empty tree finds nothing", ns);
		}
	}

	/* random inserts: keys with 1..3 tids, a tenth inserted twice */
	nm = gen_model(model, nkeys, kmax);
	/* insert in a random order */
	{
		int		   *ord = malloc(sizeof(int) * (size_t) nm);

		for (int i = 0; i < nm; i++)
			ord[i] = i;
		for (int i = nm - 1; i > 0; i--)
		{
			int			j = (int) rnd_below((uint64_t) i + 1),
						x = ord[i];

			ord[i] = ord[j];
			ord[j] = x;
		}
		for (int i = 0; i < nm; i++)
		{
			int			rc = dm_tree_insert(t, ment_entry(&model[ord[i]]), &existed);

			if ((rc != DM_OK || existed) && bad++ == 0)
				tap_diag("insert %d: %s, existed %d (%s)", i, dm_strerror(rc), existed, dm_tree_error(t));
			if (i % 10 == 0)
			{
				rc = dm_tree_insert(t, ment_entry(&model[ord[i / 2]]), &existed);
				if ((rc != DM_OK || !existed) && bad++ == 0)
					tap_diag("re-insert %d: %s, existed %d", i / 2, dm_strerror(rc), existed);
			}
		}
		free(ord);
	}
	CHECK(bad == 0, "ns=%u: %d entries inserted in random order, re-inserts report existed (%d wrong)", ns, nm, bad);
	{
		int			rc = dm_tree_stats_get(t, &st);

		CHECK(rc == DM_OK && st.height >= (ns == 256 ? 3 : 2), "ns=%u: the tree grew by splits (height %d, %s)",
			  ns, st.height, dm_strerror(rc));
	}
	check_all(t, model, nm, ns == 256 ? "ns=256 after inserts" : "ns=1024 after inserts");

	/* delete about a third, and some absent entries */
	bad = 0;
	for (int i = 0; i < nm; i++)
	{
		if (rnd_below(3) != 0)
			continue;
		{
			int			rc = dm_tree_delete(t, ment_entry(&model[i]), &existed);

			if ((rc != DM_OK || !existed) && bad++ == 0)
				tap_diag("delete %d: %s, existed %d", i, dm_strerror(rc), existed);
			model[i].present = 0;
			rc = dm_tree_delete(t, ment_entry(&model[i]), &existed);
			if ((rc != DM_OK || existed) && bad++ == 0)
				tap_diag("delete %d again: %s, existed %d", i, dm_strerror(rc), existed);
		}
	}
	CHECK(bad == 0, "ns=%u: deletes report existed once (%d wrong)", ns, bad);
	check_all(t, model, nm, ns == 256 ? "ns=256 after deletes" : "ns=1024 after deletes");

	/*
	 * One sorted batch of new entries (the access method's flushes and
	 * builds): many land in one leaf, more bytes than one split of it
	 * holds, so the batch must be applied in steps a split can take.
	 */
	{
		int			start = nm,
					w,
					changed = 0,
					rc;
		dm_entry   *batch;

		for (int i = 0; i < nkeys; i++)
		{
			make_key(&model[nm], kmax);
			model[nm].tid = 1 + rnd_below(1u << 30);
			model[nm].present = 1;
			nm++;
		}
		qsort(model + start, (size_t) (nm - start), sizeof(ment), cmp_ment);
		w = start;
		for (int i = start; i < nm; i++)
			if (w == start || cmp_ment(&model[w - 1], &model[i]) != 0)
				model[w++] = model[i];
		nm = w;
		batch = malloc(sizeof(dm_entry) * (size_t) (nm - start));
		for (int i = start; i < nm; i++)
			batch[i - start] = ment_entry(&model[i]);
		rc = dm_tree_insert_sorted(t, batch, nm - start, &changed);
		CHECK(rc == DM_OK && changed == nm - start, "ns=%u: one sorted batch of %d entries inserted (%d, %s: %s)",
			  ns, nm - start, changed, dm_strerror(rc), rc == DM_OK ? "" : dm_tree_error(t));
		free(batch);
	}
	check_all(t, model, nm, ns == 256 ? "ns=256 after a sorted batch" : "ns=1024 after a sorted batch");

	/* the catalog keeps the format */
	if (CHECK_STATUS(dm_tree_open_existing(c, 1, &tn, &t2), DM_OK, "ns=%u: reopen", ns))
	{
		dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, 0};
		int			np;
		ment	  **p = present_sorted(model, nm, &np);
		char		msg[300] = "";

		CHECK(dm_tree_key_format(t2) == DM_KEY_VAR, "ns=%u: the reopened tree is VAR", ns);
		int			same = scan_matches(t2, &r, p, np, msg, sizeof(msg));

		CHECK(same, "ns=%u: the reopened tree scans as the model%s%s", ns, same ? "" : ": ", same ? "" : msg);
		free(p);
		dm_tree_close(t2);
	}
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "ns=%u: destroy", ns);
	free(model);
}

/*
 * Bulk load of a VAR tree (dm_tree_bulk.c): nkeys random keys (several tids
 * for some) loaded at this fillfactor over memnodes 1 and 2 with level-M
 * subtrees spread (placement level M), given in batches of random sizes
 * from a buffer that is scribbled over after each call (the loader may keep
 * no pointer into its input); then verify, scans and point checks against
 * the model, every leaf fence the truncated separator an insert's split
 * would make, and random inserts and deletes on the loaded tree.
 */
static void
run_bulk(dm_client *c, uint32_t ns, int nkeys, int fillfactor, int placement)
{
	uint32_t	kmax = dm_tree_key_max(ns);
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_tree    *t = NULL;
	dm_tree_stats st;
	dm_bulk    *b = NULL;
	ment	   *model = calloc((size_t) nkeys * 6, sizeof(ment));
	uint8_t    *scratch = malloc((size_t) 64 * KEY_CAP);
	dm_entry	batch[64];
	int			nm,
				rc = DM_OK,
				bad = 0,
				existed;
	char		name[64],
				phase[96];

	snprintf(name, sizeof(name), "var-bulk-%u-%d", ns, fillfactor);
	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = ns;
	opts.key_format = DM_KEY_VAR;
	opts.placement_level = placement;
	opts.nmemnodes = 2;
	opts.memnodes[0] = 1;
	opts.memnodes[1] = 2;
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "%s: create", name))
		goto done;
	nm = gen_model(model, nkeys, kmax);

	/* input the loader refuses: out of order, not prefix-free, too long */
	{
		uint8_t		k[KEY_CAP];
		dm_entry	e[2];

		memset(k, 'k', sizeof(k));
		k[kmax] = 0;
		e[0] = dm_entry_from_bytes(k, 12, 1);
		e[1] = dm_entry_from_bytes(k, 11, 1);
		if (dm_tree_bulk_begin(t, fillfactor, &b) == DM_OK)
		{
			CHECK_STATUS(dm_bulk_add(b, e, 2), DM_ERR_INVALID, "%s: descending input is refused", name);
			dm_bulk_abort(b);
		}
		e[0] = dm_entry_from_bytes(k, 11, 1);
		e[1] = dm_entry_from_bytes(k, 12, 1);
		if (dm_tree_bulk_begin(t, fillfactor, &b) == DM_OK)
		{
			CHECK_STATUS(dm_bulk_add(b, e, 2), DM_ERR_INVALID,
						 "%s: a key followed by its extension (not prefix-free) is refused", name);
			dm_bulk_abort(b);
		}
		e[0] = dm_entry_from_bytes(k, kmax + 1, 1);
		if (dm_tree_bulk_begin(t, fillfactor, &b) == DM_OK)
		{
			CHECK_STATUS(dm_bulk_add(b, e, 1), DM_ERR_INVALID, "%s: a key of key_max + 1 bytes is refused", name);
			dm_bulk_abort(b);
		}
	}

	if (!CHECK_STATUS(dm_tree_bulk_begin(t, fillfactor, &b), DM_OK, "%s: begin", name))
		goto done;
	for (int i = 0; i < nm && rc == DM_OK;)
	{
		int			n = 1 + (int) rnd_below(64);

		if (n > nm - i)
			n = nm - i;
		for (int j = 0; j < n; j++)
		{
			memcpy(scratch + (size_t) j * KEY_CAP, model[i + j].k, model[i + j].len);
			batch[j] = dm_entry_from_bytes(scratch + (size_t) j * KEY_CAP, model[i + j].len, model[i + j].tid);
		}
		rc = dm_bulk_add(b, batch, n);
		memset(scratch, 0xA5, (size_t) 64 * KEY_CAP);
		i += n;
	}
	if (rc != DM_OK)
		tap_diag("%s: %s", name, dm_tree_error(t));
	if (!CHECK_STATUS(rc, DM_OK, "%s: %d entries added in batches of 1..64", name, nm))
	{
		dm_bulk_abort(b);
		goto done;
	}
	if ((rc = dm_bulk_finish(b)) != DM_OK)
		tap_diag("%s: %s", name, dm_tree_error(t));
	if (!CHECK_STATUS(rc, DM_OK, "%s: finish", name))
		goto done;
	snprintf(phase, sizeof(phase), "%s after the load", name);
	check_all(t, model, nm, phase);
	if (CHECK_STATUS(dm_tree_stats_get(t, &st), DM_OK, "%s: stats", name))
	{
		double		leaf_bytes = 0,
					sfx = 0;

		for (int i = 0; i < nm; i++)
			sfx += model[i].len > 8 ? model[i].len - 8 : 0;
		leaf_bytes = sfx + (double) VAR_LEAF_SLOT * nm;
		sfx /= nm;
		for (int l = 0; l < st.height; l++)
			tap_diag("%s: level %d: %" PRIu64 " nodes", name, l, st.nodes[l]);
		tap_diag("%s: height %d, %" PRIu64 " leaves, %" PRIu64 " separators, %" PRIu64
				 " used bytes, %" PRIu64 " separator suffix bytes, %" PRIu64 "/%" PRIu64 " nodes on memnodes 1/2",
				 name, st.height, st.nodes[0], st.inner_entries,
				 st.used_bytes, st.sep_sfx_bytes, st.nodes_by_memnode[0], st.nodes_by_memnode[1]);
		CHECK(st.loose_leaf_fences == 0, "%s: every leaf fence is the truncated separator of the entries around it (%" PRIu64 " are not)",
			  name, st.loose_leaf_fences);
		/*
		 * Filled by bytes: no leaf holds more slots and suffixes than a node
		 * has room for after its header, and a leaf is closed before the
		 * fill target only by the entry that did not fit (at most a slot
		 * and key_max - 8 bytes), the room its high fence needs (one
		 * suffix) and its low fence (one suffix; both about the mean).
		 */
		if ((uint32_t) fillfactor * ns / 100 < VAR_HEADER + VAR_LEAF_SLOT)
		{
			/*
			 * A target below one entry: a leaf per key, a key's tids together
			 * where they fit (three of a long key do not fit 256 bytes).
			 */
			uint64_t	keys = 0;

			for (int i = 0; i < nm; i++)
				keys += i == 0 || !dm_entry_same_key(ment_entry(&model[i - 1]), ment_entry(&model[i]));
			CHECK(st.nodes[0] >= keys && st.nodes[0] < keys + ((uint64_t) nm - keys) / 2,
				  "%s: %" PRIu64 " leaves for %" PRIu64 " keys, %d entries", name, st.nodes[0], keys, nm);
		}
		else
		{
			double		per = (double) ns * fillfactor / 100 - VAR_HEADER - (VAR_LEAF_SLOT + kmax - 8) - 2 * sfx;
			uint64_t	least = (uint64_t) (leaf_bytes / (ns - VAR_HEADER)),
						most = (uint64_t) (leaf_bytes / per) + 2;

			CHECK(st.nodes[0] >= least && st.nodes[0] <= most,
				  "%s: %" PRIu64 " leaves for %.0f bytes of slots and suffixes (between %" PRIu64 " and %" PRIu64 ")",
				  name, st.nodes[0], leaf_bytes, least, most);
		}
		/*
		 * Inner nodes of 1 KiB hold about ten separators of these keys; a
		 * loader that closed a node at the separator that did not fit would
		 * send the long ones up, and the fan-out would shrink level by level.
		 */
		if (ns >= 1024)
		{
			int			thin = 0;

			for (int l = 1; l < st.height; l++)
				thin += st.nodes[l] * 4 > st.nodes[l - 1] + 3;
			CHECK(thin == 0, "%s: every inner level has a fan-out of at least 4 (%d do not)", name, thin);
		}
		CHECK(st.height >= 3 && st.nodes_by_memnode[0] > 0 && st.nodes_by_memnode[1] > 0,
			  "%s: a tree of height %d spread over both memnodes", name, st.height);
	}

	/* the loaded tree under inserts and deletes */
	{
		int			nnew = gen_model(model + nm, nkeys / 2, kmax),
					nall,
					w = nm;

		/* new entries only (a key may repeat one of the load's with another tid) */
		for (int i = nm; i < nm + nnew; i++)
		{
			int			dup = 0;

			for (int j = 0; j < nm && !dup; j++)
				dup = cmp_ment(&model[j], &model[i]) == 0;
			if (!dup)
				model[w++] = model[i];
		}
		nall = w;
		for (int i = nm; i < nall; i++)
		{
			rc = dm_tree_insert(t, ment_entry(&model[i]), &existed);
			if ((rc != DM_OK || existed) && bad++ == 0)
				tap_diag("insert %d: %s, existed %d", i, dm_strerror(rc), existed);
		}
		for (int i = 0; i < nall; i++)
		{
			if (rnd_below(3) != 0)
				continue;
			rc = dm_tree_delete(t, ment_entry(&model[i]), &existed);
			if ((rc != DM_OK || !existed) && bad++ == 0)
				tap_diag("delete %d: %s, existed %d", i, dm_strerror(rc), existed);
			model[i].present = 0;
		}
		CHECK(bad == 0, "%s: %d inserts and about a third deleted on the loaded tree (%d wrong)", name, nall - nm, bad);
		snprintf(phase, sizeof(phase), "%s after inserts and deletes", name);
		check_all(t, model, nall, phase);
	}
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", name);
	t = NULL;
done:
	if (t)
		dm_tree_close(t);
	free(scratch);
	free(model);
}

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "256M", NULL};
	const char *const args2[] = {"--id", "2", "--shm", "--size", "256M", NULL};
	const char *s;
	dm_client  *c;
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_tree    *t = NULL;
	int			existed;
	uint8_t		k[16] = "0123456789abcde";

	rng = (s = getenv("TREE_SEED")) && *s ? strtoull(s, NULL, 10) | 1 : 1;
	tap_diag("TREE_SEED=%" PRIu64, rng);
	if (memnode_start(&mn, 0, args) != 0 || memnode_start(&mn2, 0, args2) != 0)
	{
		CHECK(0, "start memnodes 1 and 2");
		return tap_done();
	}
	c = connect_client();
	if (!CHECK(c != NULL, "client connected over shm"))
		return tap_done();

	/* the option: VAR refuses hopscotch leaves, unknown formats are refused */
	dm_tree_name_named(&tn, "var-opts");
	memset(&opts, 0, sizeof(opts));
	opts.key_format = DM_KEY_VAR;
	opts.leaf_format = DM_LEAF_HOPSCOTCH;
	CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_ERR_INVALID, "VAR keys with hopscotch leaves are refused");
	opts.leaf_format = DM_LEAF_SORTED;
	opts.key_format = 2;
	CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_ERR_INVALID, "an unknown key format is refused");

	/* a FIXED8 tree refuses entries with suffixes */
	opts.key_format = DM_KEY_FIXED8;
	if (CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "create a FIXED8 tree"))
	{
		CHECK(dm_tree_key_format(t) == DM_KEY_FIXED8, "its key format is FIXED8");
		CHECK_STATUS(dm_tree_insert(t, dm_entry_from_bytes(k, 15, 1), &existed), DM_ERR_INVALID,
					 "a FIXED8 tree refuses an entry with a suffix");
		CHECK_STATUS(dm_tree_insert(t, dm_entry_from_bytes(k, 8, 1), &existed), DM_OK,
					 "and takes the 8-byte key");
		{
			uint64_t	tids[2];
			int			n = -1;

			CHECK_STATUS(dm_tree_lookup_key(t, dm_entry_from_bytes(k, 15, 0), tids, 2, &n), DM_ERR_INVALID,
						 "a FIXED8 tree refuses dm_tree_lookup_key of a key with a suffix");
			CHECK(dm_tree_lookup_key(t, dm_entry_from_bytes(k, 8, 0), tids, 2, &n) == DM_OK && n == 1 && tids[0] == 1,
				  "dm_tree_lookup_key of its 8-byte key finds its tid (%d)", n);
		}
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "destroy it");
	}

	/* verify holds VAR trees to prefix-free keys: a key and its extension are reported */
	dm_tree_name_named(&tn, "var-prefix");
	opts.key_format = DM_KEY_VAR;
	if (CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "create a VAR tree for the prefix check"))
	{
		const uint8_t a[] = "abcdefghij",
					b[] = "abcdefghijk";
		char		msg[300] = "";
		uint64_t	n = 0;

		CHECK_STATUS(dm_tree_insert(t, dm_entry_from_bytes(a, 10, 1), &existed), DM_OK, "insert a 10-byte key");
		CHECK_STATUS(dm_tree_verify(t, &n, msg, sizeof(msg)), DM_OK, "verify: one key is prefix-free");
		CHECK_STATUS(dm_tree_insert(t, dm_entry_from_bytes(b, 11, 1), &existed), DM_OK,
					 "insert its 11-byte extension (the core does not check this at insert)");
		CHECK(dm_tree_verify(t, &n, msg, sizeof(msg)) == DM_ERR_CORRUPT && strstr(msg, "proper prefix") != NULL,
			  "verify reports a key that is a proper prefix of the next (%s)", msg);
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "destroy it");
	}

	run_size(c, 256, 3000);
	run_size(c, 1024, 6000);
	run_bulk(c, 256, 4000, 100, 1);
	run_bulk(c, 256, 3000, 10, 2);
	run_bulk(c, 1024, 8000, 90, 1);
	run_bulk(c, 1024, 8000, 70, 0);

	dm_client_destroy(c);
	memnode_stop(&mn, 15);
	memnode_stop(&mn2, 15);
	return tap_done();
}
