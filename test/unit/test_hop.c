/*
 * test_hop.c — unit tests of the hopscotch leaf table (dm_hop.c), no
 * memnode needed: random inserts and deletes on one leaf against a sorted
 * model, with every neighbourhood size and leaf size, keys that collide on
 * one home and keys with more entries than a neighbourhood holds.  After
 * every change: the table passes dm_hop_check (entries outside their
 * neighbourhood only under a flagged home, count right, empty buckets
 * empty), its entries in order are exactly the model's, every entry is
 * found, and the buckets reported changed are the only ones that differ
 * from before (what the partial write stores).  A hopscotch leaf validates
 * and its checksum covers every bucket; the sorted view equals the model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_hop.h"
#include "entrymodel.h"
#include "testutil.h"

/* The raw entries of a sorted leaf are the model's entries. */
static int
raw_equal(const dm_rawent *r, const dm_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].key != e[i].key || r[i].tid != e[i].tid)
			return 0;
	return 1;
}

static int
run_case(uint32_t ns, int H, uint64_t nkeys, int rounds)
{
	uint8_t    *buf = aligned_alloc(8, ns),
			   *before = aligned_alloc(8, ns);
	dm_entry	got[DM_NODE_MAX / sizeof(dm_rawent)];
	model		m = {0};
	int			nb = dm_hop_nb(ns),
				bad = 0,
				ovf = 0;
	char		why[200] = "";

	dm_node_init(buf, ns, 0, 77, DM_ENTRY_MIN, DM_ENTRY_INF);
	dm_hop_init(buf, H);
	for (int r = 0; r < rounds && !bad; r++)
	{
		int			ins = m.n == 0 || (m.n < (size_t) nb && rnd_below(100) < 60);
		dm_entry	e = dm_entry_make(rnd_below(nkeys), rnd_below(1u << 20));
		dm_hop_range rg = DM_HOP_RANGE_NONE;
		int			res = 0;

		memcpy(before, buf, ns);
		if (ins)
		{
			if (m_has(&m, e))
				continue;
			res = dm_hop_place(buf, e, 0, &rg);
			if (res == DM_HOP_FULL)
			{
				bad = 1;
				snprintf(why, sizeof(why), "full with %zu of %d", m.n, nb);
				break;
			}
			ovf += res == DM_HOP_OVERFLOWED;
			m_insert(&m, e);
		}
		else
		{
			int			b;

			e = m.e[rnd_below(m.n)];
			b = dm_hop_find(buf, e);
			if (b < 0)
			{
				bad = 1;
				snprintf(why, sizeof(why), "entry (%llu, %llu) not found", (unsigned long long) e.key,
						 (unsigned long long) e.tid);
				break;
			}
			dm_hop_remove(buf, b, &rg);
			m_delete(&m, e);
		}
		/* nothing changed outside the reported range (the header's count aside) */
		for (int i = 0; i < nb && !bad; i++)
			if ((i < rg.lo || i >= rg.hi) &&
				memcmp(&HOP_BUCKETS(buf)[i], &HOP_BUCKETS(before)[i], sizeof(dm_rawent)) != 0)
			{
				bad = 1;
				snprintf(why, sizeof(why), "bucket %d changed outside the reported range [%d, %d)", i, rg.lo, rg.hi);
			}
		if (!bad && dm_hop_check(buf, why, sizeof(why)) != 0)
			bad = 1;
		if (!bad && (dm_hop_entries(buf, got) != (int) m.n || memcmp(got, m.e, m.n * sizeof(dm_entry)) != 0))
		{
			bad = 1;
			snprintf(why, sizeof(why), "entries differ from the model (%zu)", m.n);
		}
		for (size_t i = 0; i < m.n && !bad; i++)
			if (dm_hop_find(buf, m.e[i]) < 0)
			{
				bad = 1;
				snprintf(why, sizeof(why), "model entry %zu not found", i);
			}
	}
	CHECK(!bad, "%u-byte leaf, H = %d, %llu keys: %d random changes keep the table sound (%d overflowed) %s", ns, H,
		  (unsigned long long) nkeys, rounds, ovf, why);
	if (!bad)
	{
		uint8_t    *v = aligned_alloc(8, ns);

		dm_node_seal(buf);
		CHECK(dm_node_valid(buf, ns, 77), "%u-byte leaf, H = %d: validates", ns, H);
		/* a change in any bucket, used or not, breaks the checksum */
		memcpy(v, buf, ns);
		HOP_BUCKETS(v)[nb - 1].tid ^= 2;
		CHECK(!dm_node_valid(v, ns, 77), "%u-byte leaf, H = %d: the checksum covers the last bucket", ns, H);
		memcpy(v, buf, ns);
		dm_hop_sorted_view(v);
		CHECK(!dm_hop_is(v) && NODE_HDR(v)->count == m.n && raw_equal(LEAF_ENTS(v), m.e, m.n),
			  "%u-byte leaf, H = %d: the sorted view is the model", ns, H);
		/* the view from an entry (a forward scan's start): the model's entries at or after it */
		for (int k = 0; k < 8 && m.n > 0; k++)
		{
			dm_entry	from = m.e[rnd_below(m.n)];
			size_t		at;

			if (k & 1)
				from.tid++;		/* between two entries, or past a key's last tid */
			if (k == 6)
				from = DM_ENTRY_MIN;
			at = m_lower(&m, from);
			memcpy(v, buf, ns);
			dm_hop_sorted_view_from(v, &from);
			CHECK(!dm_hop_is(v) && NODE_HDR(v)->count == m.n - at && raw_equal(LEAF_ENTS(v), m.e + at, m.n - at),
				  "%u-byte leaf, H = %d: the sorted view from %s is the model's %zu entries from there", ns, H,
				  E(from), m.n - at);
		}
		/* rebuilt from the sorted entries: the same set, flags recomputed */
		memcpy(v, buf, ns);
		dm_hop_build(v, m.e, (int) m.n);
		CHECK(dm_hop_check(v, why, sizeof(why)) == 0 && dm_hop_entries(v, got) == (int) m.n &&
			  memcmp(got, m.e, m.n * sizeof(dm_entry)) == 0,
			  "%u-byte leaf, H = %d: rebuilt, the same entries %s", ns, H, why);
		free(v);
	}
	m_free(&m);
	free(buf);
	free(before);
	return !bad;
}

int
main(void)
{
	rng = 12345;
	for (uint32_t ns = 256; ns <= 4096; ns *= 2)
	{
		int			Hs[3] = {2, 4, 8};

		for (int i = 0; i < 3; i++)
		{
			/* many distinct keys, then few keys with many tids each (more than H) */
			run_case(ns, Hs[i], UINT64_C(1) << 40, 4000);
			run_case(ns, Hs[i], 3, 4000);
		}
	}
	run_case(4096, 16, 5, 4000);

	/* the split policy: a leaf at its usable load whose neighbourhood is full asks for a split, unless all one key */
	{
		uint8_t    *buf = aligned_alloc(8, 1024);
		dm_hop_range rg = DM_HOP_RANGE_NONE;
		int			nb = dm_hop_nb(1024),
					placed = 0,
					split = 0;

		dm_node_init(buf, 1024, 0, 1, DM_ENTRY_MIN, DM_ENTRY_INF);
		dm_hop_init(buf, 4);
		for (uint64_t tid = 0; placed < nb; tid++)
		{
			int			r = dm_hop_place(buf, dm_entry_make(42, tid), 1, &rg);

			split += r == DM_HOP_SPLIT;
			placed += r == DM_HOP_PLACED || r == DM_HOP_OVERFLOWED;
			if (r == DM_HOP_FULL || r == DM_HOP_SPLIT)
				break;
		}
		CHECK(placed == nb && split == 0, "one key fills a leaf by overflowing, never asks for a split (%d of %d)",
			  placed, nb);
		dm_hop_init(buf, 4);
		placed = split = 0;
		for (uint64_t k = 0; k < 100000 && !split; k++)
		{
			int			r = dm_hop_place(buf, dm_entry_make(k * 7919, 1), 1, &rg);

			split += r == DM_HOP_SPLIT;
			placed += r != DM_HOP_SPLIT;
		}
		CHECK(split == 1 && placed >= nb * dm_hop_usable_permille(1024, 4) / 1000,
			  "distinct keys: a split is asked for only at the usable load (%d placed of %d, usable %d per mille)",
			  placed, nb, dm_hop_usable_permille(1024, 4));
		free(buf);
	}

	/*
	 * A delete clears its home's overflow flag once no entry of that home
	 * is outside the neighbourhood (in the same range it reports), and not
	 * before.
	 */
	{
		uint8_t    *buf = aligned_alloc(8, 1024);
		dm_hop_range rg = DM_HOP_RANGE_NONE;
		int			nb = dm_hop_nb(1024),
					home = dm_hop_home(42, nb, 8),
					outside[16],
					nout = 0,
					early = 0,
					ok = 1;
		char		why[128] = "";

		dm_node_init(buf, 1024, 0, 1, DM_ENTRY_MIN, DM_ENTRY_INF);
		dm_hop_init(buf, 8);
		for (uint64_t tid = 1; tid <= 11; tid++)
			(void) dm_hop_place(buf, dm_entry_make(42, tid), 1, &rg);
		for (int i = 0; i < nb; i++)
			if (dm_hop_used(&HOP_BUCKETS(buf)[i]) && (i < home || i >= home + 8))
				outside[nout++] = i;
		for (int k = 0; k < nout; k++)
		{
			rg = DM_HOP_RANGE_NONE;
			dm_hop_remove(buf, outside[k], &rg);
			ok &= dm_hop_check(buf, why, sizeof(why)) == 0;
			if (k + 1 < nout)
				early |= !(HOP_BUCKETS(buf)[home].tid & DM_HOP_OVF);
		}
		CHECK(nout == 3 && ok && !early && !(HOP_BUCKETS(buf)[home].tid & DM_HOP_OVF) && rg.lo <= home &&
			  home < rg.hi,
			  "a key with 11 tids: %d outside its neighbourhood; the flag stays until the last of them is "
			  "deleted, then goes in that write's range %s", nout, why);
		/* a delete inside the neighbourhood of a flagged home keeps the flag */
		for (uint64_t tid = 12; tid <= 14; tid++)
			(void) dm_hop_place(buf, dm_entry_make(42, tid), 1, &rg);
		rg = DM_HOP_RANGE_NONE;
		dm_hop_remove(buf, home, &rg);	/* the neighbourhood is all key 42: its first bucket is one */
		CHECK((HOP_BUCKETS(buf)[home].tid & DM_HOP_OVF) && dm_hop_check(buf, why, sizeof(why)) == 0,
			  "a delete inside the neighbourhood keeps the flag of a home with entries outside it %s", why);
		free(buf);
	}

	/*
	 * The usable load the bulk loader scales fillfactor by: CHIME's maximum
	 * load factor (about 0.9 at H = 8), rising with H, deterministic; and
	 * what it means: a leaf built at it takes, over leaves of other keys,
	 * about as many inserts before asking for a split as one built at 90%
	 * of its buckets takes far fewer.
	 */
	{
		int			u8 = dm_hop_usable_permille(1024, 8),
					u4 = dm_hop_usable_permille(1024, 4),
					u16 = dm_hop_usable_permille(1024, 16);
		uint8_t    *buf = aligned_alloc(8, 1024);
		int			nb = dm_hop_nb(1024);
		long		before[2] = {0, 0};

		CHECK(u8 >= 800 && u8 <= 950 && u4 < u8 && u8 < u16 && u16 <= 1000 && dm_hop_usable_permille(1024, 8) == u8,
			  "usable load of a 1 KiB leaf: H = 4 %d, H = 8 %d, H = 16 %d per mille (rises with H, repeatable)", u4,
			  u8, u16);
		for (int which = 0; which < 2; which++)
			for (int trial = 0; trial < 200; trial++)
			{
				/* built at 90% of the usable load, or at 90% of the buckets */
				int			n = which == 0 ? nb * 9 * u8 / 10000 : nb * 9 / 10;
				dm_entry	e[DM_NODE_MAX / sizeof(dm_rawent)];
				dm_hop_range rg = DM_HOP_RANGE_NONE;

				for (int i = 0; i < n; i++)
					e[i] = dm_entry_make(((uint64_t) trial << 32) + (uint64_t) i * 1000003, 1);
				dm_node_init(buf, 1024, 0, 1, DM_ENTRY_MIN, DM_ENTRY_INF);
				dm_hop_init(buf, 8);
				dm_hop_build(buf, e, n);
				for (uint64_t k = 1;; k++)
				{
					int			r = dm_hop_place(buf, dm_entry_make(((uint64_t) trial << 32) + k * 1000003 + 17, 1), 1,
												 &rg);

					if (r == DM_HOP_SPLIT || r == DM_HOP_FULL)
						break;
					before[which]++;
				}
			}
		CHECK(before[0] >= 200 * 4 && before[0] > 3 * before[1],
			  "a 1 KiB leaf built at 90%% of its usable load takes %.1f inserts before a split, at 90%% of its "
			  "buckets %.1f", before[0] / 200.0, before[1] / 200.0);
		free(buf);
	}
	return tap_done();
}
