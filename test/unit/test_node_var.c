/*
 * test_node_var.c — unit tests of the VAR node format (dm_node_var.c;
 * DESIGN.md §5.2), no memnode needed.  Keys are byte strings of 1 up to
 * dm_tree_key_max bytes, compared by a reference written here from the
 * spec (zero-padded first 8 bytes, then the rest by memcmp with the shorter
 * first, then the tid), not by the code under test.  Round trips of leaf
 * and inner images, in-node searches against a sorted reference array,
 * validation rejecting corrupted images (each corruption re-sealed, so the
 * layout checks and not the checksum catch it; torn copies separately),
 * truncated separators (l < sep <= r, shortest), splits by bytes, the
 * maximum key, and the generic accessors on VAR nodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_node.h"
#include "entrymodel.h"
#include "nodesearch.h"
#include "testutil.h"

#define MAXK 788				/* dm_tree_key_max(4096) */
#define BIG (4u << 20)			/* scratch for corrupted images: a bad count or heap_bytes reaches far */

typedef struct rkey
{
	uint8_t		k[MAXK + 1];
	uint32_t	len;
	uint64_t	tid;
} rkey;

static int
sgn(int c)
{
	return c < 0 ? -1 : c > 0;
}

/* §5.2's order, from the bytes. */
static int
ref_cmp(const rkey *a, const rkey *b)
{
	uint8_t		pa[8] = {0}, pb[8] = {0};
	uint32_t	sa = a->len > 8 ? a->len - 8 : 0, sb = b->len > 8 ? b->len - 8 : 0;
	int			c;

	memcpy(pa, a->k, a->len < 8 ? a->len : 8);
	memcpy(pb, b->k, b->len < 8 ? b->len : 8);
	if ((c = memcmp(pa, pb, 8)) != 0)
		return sgn(c);
	if ((c = memcmp(a->k + 8, b->k + 8, sa < sb ? sa : sb)) != 0)
		return sgn(c);
	if (sa != sb)
		return sa < sb ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static int
ref_qcmp(const void *a, const void *b)
{
	return ref_cmp(a, b);
}

static dm_entry
ent(const rkey *r)
{
	return dm_entry_from_bytes(r->k, r->len, r->tid);
}

/* An entry is r: same prefix word, suffix bytes and tid. */
static int
ent_is(dm_entry e, const rkey *r)
{
	dm_entry	x = ent(r);

	return e.key == x.key && e.tid == x.tid && e.sfx_len == x.sfx_len &&
		(x.sfx_len == 0 || memcmp(e.sfx, x.sfx, x.sfx_len) == 0);
}

/*
 * A random key of 1..kmax bytes, many sharing their first 8 bytes (three
 * prefixes), from a small alphabet (so keys often share longer prefixes),
 * some exactly 8 bytes, some shorter.
 */
static void
gen_key(rkey *r, uint32_t kmax)
{
	static const uint8_t alpha[] = {0x00, 0x01, 0x41, 0x42, 0x7F, 0xFF};
	static const char *pre[] = {"user@exa", "\xff\xff\xff\xff\xff\xff\xff\xff", "\x00\x00\x00\x01\x00\x00\x00\x00"};
	uint64_t	kind = rnd_below(8);

	if (kind == 0)
		r->len = 1 + (uint32_t) rnd_below(7);
	else if (kind == 1)
		r->len = 8;
	else if (kind == 2)
		r->len = kmax;
	else
		r->len = 9 + (uint32_t) rnd_below((kmax - 8) < 24 ? kmax - 8 : 24);
	if (r->len > kmax)
		r->len = kmax;
	for (uint32_t i = 0; i < r->len; i++)
		r->k[i] = rnd_below(4) == 0 ? (uint8_t) rnd() : alpha[rnd_below(sizeof(alpha))];
	if (r->len > 8 && rnd_below(2))
		memcpy(r->k, pre[rnd_below(3)], 8);
	r->tid = rnd_below(4);
}

/* n random distinct entries, sorted by the reference; duplicates of a key with other tids among them. */
static int
gen_sorted(rkey *a, int n, uint32_t kmax)
{
	int			m = 0;

	for (int i = 0; i < n; i++)
	{
		if (i > 0 && rnd_below(5) == 0)
		{
			a[i] = a[rnd_below((uint64_t) i)];
			a[i].tid = rnd_below(1000);
		}
		else
			gen_key(&a[i], kmax);
	}
	qsort(a, (size_t) n, sizeof(rkey), ref_qcmp);
	for (int i = 0; i < n; i++)
		if (m == 0 || ref_cmp(&a[m - 1], &a[i]) != 0)
			a[m++] = a[i];
	return m;
}

static uint8_t *
node(uint32_t ns, int level, dm_entry low, dm_entry high)
{
	uint8_t    *buf = aligned_alloc(8, BIG);

	memset(buf, 0xA5, BIG);
	if (dm_var_init(buf, ns, level, 99, low, high) != DM_OK)
	{
		free(buf);
		return NULL;
	}
	return buf;
}

/* Items of the entries a[from..to) (inner: children 4096 * (i + 1)). */
static int
items_of(const rkey *a, int from, int to, dm_item *it)
{
	for (int i = from; i < to; i++)
	{
		it[i - from].sep = ent(&a[i]);
		it[i - from].child = (dm_gaddr) 4096 * (dm_gaddr) (i + 1);
	}
	return to - from;
}

/* How many of the entries a[0..n) fit a node of ns bytes with these fences. */
static int
how_many_fit(uint32_t ns, int level, dm_entry low, dm_entry high, const rkey *a, int n)
{
	uint32_t	need = DM_VAR_HEADER + low.sfx_len + high.sfx_len;
	int			k = 0;

	while (k < n && need + dm_var_slot(level) + ent(&a[k]).sfx_len <= ns)
		need += dm_var_slot(level) + ent(&a[k++]).sfx_len;
	return k;
}

static rkey *A, *P;
static dm_item *IT;

/* ---- round trips and searches -------------------------------------------------- */

static void
round_trips(uint32_t ns, int level, int rounds)
{
	int			bad = 0, searches = 0, total = 0;
	char		why[200] = "";

	for (int r = 0; r < rounds && !bad; r++)
	{
		uint32_t	kmax = dm_tree_key_max(ns);
		int			n = gen_sorted(A, 200, kmax);
		dm_entry	low = rnd_below(2) ? DM_ENTRY_MIN : ent(&A[0]);
		dm_entry	high = rnd_below(2) ? DM_ENTRY_INF : dm_entry_make(UINT64_MAX, 0);
		uint8_t    *b;
		int			k;

		if (level > 0)
			low = ent(&A[0]);	/* sep 0 is the low fence */
		k = how_many_fit(ns, level, low, high, A, n);
		b = node(ns, level, DM_ENTRY_MIN, DM_ENTRY_INF);
		items_of(A, 0, k, IT);
		if (dm_var_build(b, low, high, IT, k) != DM_OK)
		{
			snprintf(why, sizeof(why), "round %d: %d entries that fit were refused", r, k);
			bad = 1;
		}
		else if (k < n && dm_var_build(b, low, high, IT, items_of(A, 0, k + 1, IT)) != DM_ERR_TOOBIG)
		{
			snprintf(why, sizeof(why), "round %d: %d entries that do not fit were taken", r, k + 1);
			bad = 1;
		}
		if (bad)
		{
			free(b);
			break;
		}
		dm_node_seal(b);
		total += k;
		if (!dm_node_valid(b, ns, 99) || NODE_HDR(b)->count != k ||
			dm_entry_cmp(dm_node_low(b), low) != 0 || dm_entry_cmp(dm_node_high(b), high) != 0)
		{
			snprintf(why, sizeof(why), "round %d: the image of %d entries does not validate or lost its fences", r, k);
			bad = 1;
		}
		for (int i = 0; i < k && !bad; i++)
			if (!ent_is(level == 0 ? dm_node_entry(b, i) : dm_node_sep(b, i), &A[i]) ||
				(level > 0 && dm_node_child(b, i) != (dm_gaddr) 4096 * (dm_gaddr) (i + 1)))
			{
				snprintf(why, sizeof(why), "round %d: entry %d read back differs", r, i);
				bad = 1;
			}
		{
			uint32_t	used = dm_node_used_bytes(b);
			uint32_t	exact = DM_VAR_HEADER + (uint32_t) k * dm_var_slot(level) + low.sfx_len + high.sfx_len;

			for (int i = 0; i < k; i++)
				exact += ent(&A[i]).sfx_len;
			if (!bad && (used != ((exact + 7) & ~7u) || used > ns))
			{
				snprintf(why, sizeof(why), "round %d: used bytes %u for %u", r, used, exact);
				bad = 1;
			}
			for (uint32_t i = exact; i < ns && !bad; i++)
				if (b[i] != 0)
				{
					snprintf(why, sizeof(why), "round %d: byte %u after the heap is not zero", r, i);
					bad = 1;
				}
		}
		/* searches against the reference: entries, their neighbours, random keys */
		for (int q = 0; q < 300 && !bad; q++)
		{
			rkey	   *p = &P[0];
			int			want = 0;

			if (q % 3 == 0 && k > 0)
			{
				*p = A[rnd_below((uint64_t) k)];
				p->tid += rnd_below(3);
				p->tid -= p->tid > 0 ? rnd_below(2) : 0;
			}
			else
				gen_key(p, kmax);
			if (level == 0)
			{
				while (want < k && ref_cmp(&A[want], p) < 0)
					want++;
				if (leaf_lb(b, ent(p)) != want)
				{
					snprintf(why, sizeof(why), "round %d: lower bound %d, reference %d", r, leaf_lb(b, ent(p)), want);
					bad = 1;
				}
			}
			else
			{
				while (want < k && ref_cmp(&A[want], p) <= 0)
					want++;
				want = want > 0 ? want - 1 : 0;
				if (child_ix(b, ent(p)) != want)
				{
					snprintf(why, sizeof(why), "round %d: child index %d, reference %d", r, child_ix(b, ent(p)), want);
					bad = 1;
				}
			}
			searches++;
		}
		free(b);
	}
	CHECK(!bad && total > rounds, "%u-byte %s nodes: %d rounds, %d entries round-trip, %d searches agree with the reference %s",
		  ns, level ? "inner" : "leaf", rounds, total, searches, why);
}

/* ---- validation ----------------------------------------------------------------- */

typedef void (*corrupt_fn) (uint8_t *b, int slot);

static uint32_t
heap_start(const uint8_t *b)
{
	return DM_VAR_HEADER + (uint32_t) NODE_HDR(b)->count * dm_var_slot(NODE_HDR(b)->level);
}

static uint16_t *
sfx_off(uint8_t *b, int i)
{
	return NODE_HDR(b)->level == 0 ? &VAR_LEAF(b)[i].sfx_off : &VAR_INNER(b)[i].sfx_off;
}

static uint16_t *
sfx_len(uint8_t *b, int i)
{
	return NODE_HDR(b)->level == 0 ? &VAR_LEAF(b)[i].sfx_len : &VAR_INNER(b)[i].sfx_len;
}

static void c_off_past_heap(uint8_t *b, int i) { *sfx_off(b, i) = (uint16_t) (heap_start(b) + VAR_EXT(b)->heap_bytes); }
static void c_off_in_fences(uint8_t *b, int i) { *sfx_off(b, i) = (uint16_t) heap_start(b); }
static void c_overlap(uint8_t *b, int i) { *sfx_off(b, i) = *sfx_off(b, i - 1); }
static void c_off_plus_one(uint8_t *b, int i) { *sfx_off(b, i) += 1; }
static void c_len_plus_one(uint8_t *b, int i) { *sfx_len(b, i) += 1; }
static void c_len_huge(uint8_t *b, int i) { *sfx_len(b, i) = 4000; }
static void c_heap_more(uint8_t *b, int i) { (void) i; VAR_EXT(b)->heap_bytes += 1; }
static void c_heap_less(uint8_t *b, int i) { (void) i; VAR_EXT(b)->heap_bytes -= 1; }
static void c_heap_huge(uint8_t *b, int i) { (void) i; VAR_EXT(b)->heap_bytes = 0xFFFF; }
static void c_low_len(uint8_t *b, int i) { (void) i; VAR_EXT(b)->low_sfx_len += 1; }
static void c_high_len(uint8_t *b, int i) { (void) i; VAR_EXT(b)->high_sfx_len = (uint16_t) (VAR_EXT(b)->heap_bytes + 1); }
static void c_fences_huge(uint8_t *b, int i) { (void) i; VAR_EXT(b)->low_sfx_len = 2000; VAR_EXT(b)->heap_bytes += 2000; }
static void c_ext_zero(uint8_t *b, int i) { (void) i; VAR_EXT(b)->zero = 1; }
static void c_slot_zero(uint8_t *b, int i)
{
	if (NODE_HDR(b)->level == 0)
		VAR_LEAF(b)[i].zero = 1;
	else
		VAR_INNER(b)[i].zero = 1;
}
static void c_count_plus(uint8_t *b, int i) { (void) i; NODE_HDR(b)->count += 1; }
static void c_count_cap(uint8_t *b, int i) { (void) i; NODE_HDR(b)->count = (uint16_t) ((1u << NODE_HDR(b)->size_log2) / 16); }
static void c_count_max(uint8_t *b, int i) { (void) i; NODE_HDR(b)->count = 0xFFFF; }
static void c_hop(uint8_t *b, int i) { (void) i; NODE_HDR(b)->flags |= DM_NODE_HOP; NODE_HDR(b)->hop_h = 4; }
/* slot i gets slot i-1's words (its suffix stays where it is): equal or descending */
static void
c_descend(uint8_t *b, int i)
{
	uint8_t    *s = b + DM_VAR_HEADER + (uint32_t) i * dm_var_slot(NODE_HDR(b)->level);
	uint8_t    *p = s - dm_var_slot(NODE_HDR(b)->level);
	uint64_t	w[2];

	memcpy(w, s, 16);
	memcpy(s, p, 16);
	memcpy(p, w, 16);
}
/* the suffix bytes of slots i-1 and i exchanged (layout intact): out of order unless equal */
static void
c_swap_sfx(uint8_t *b, int i)
{
	uint16_t	tmp = *sfx_len(b, i);

	c_descend(b, i);
	*sfx_len(b, i) = *sfx_len(b, i - 1);
	*sfx_len(b, i - 1) = tmp;
	*sfx_off(b, i) = (uint16_t) (*sfx_off(b, i - 1) + *sfx_len(b, i - 1));
}

static void
validation(uint32_t ns, int level)
{
	static const struct
	{
		const char *name;
		corrupt_fn	fn;
		int			needs_sfx;	/* slot i and i-1 must have suffixes */
	}			cases[] = {
		{"a suffix past the heap", c_off_past_heap, 1},
		{"a suffix among the fences' suffixes", c_off_in_fences, 1},
		{"two suffixes overlapping", c_overlap, 1},
		{"a suffix one byte off", c_off_plus_one, 1},
		{"a suffix one byte longer", c_len_plus_one, 1},
		{"a suffix longer than any key", c_len_huge, 0},
		{"heap_bytes one more", c_heap_more, 0},
		{"heap_bytes one less", c_heap_less, 1},
		{"heap_bytes past the node", c_heap_huge, 0},
		{"the low fence's suffix longer", c_low_len, 0},
		{"the high fence's suffix past the heap", c_high_len, 0},
		{"fences' suffixes longer than any key", c_fences_huge, 0},
		{"the header's zero word set", c_ext_zero, 0},
		{"a slot's zero word set", c_slot_zero, 0},
		{"one slot more than the heap says", c_count_plus, 0},
		{"a count too large for the node", c_count_cap, 0},
		{"count 65535", c_count_max, 0},
		{"a hopscotch flag on a VAR node", c_hop, 0},
		{"two slots descending", c_descend, 0},
		{"two suffixes exchanged", c_swap_sfx, 1},
	};
	uint32_t	kmax = dm_tree_key_max(ns);
	uint8_t    *b = NULL, *m = aligned_alloc(8, BIG), *v2 = aligned_alloc(8, BIG);
	int			n, k = 0, slot = -1, caught = 0, torn = 0, torn_caught = 0;
	dm_entry	low = DM_ENTRY_MIN, high = DM_ENTRY_INF;
	char		missed[400] = "";

	/* an image with suffixes on both sides of some slot, and distinct prefix words somewhere */
	for (int tries = 0; tries < 1000 && slot < 0; tries++)
	{
		n = gen_sorted(A, 60, kmax < 40 ? kmax : 40);
		low = level ? ent(&A[0]) : DM_ENTRY_MIN;
		high = dm_entry_from_bytes("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xfe", 10, 0);
		k = how_many_fit(ns, level, low, high, A, n);
		for (int i = 1; i < k && slot < 0; i++)
			if (A[i - 1].len > 8 && A[i].len > 8 && memcmp(A[i - 1].k, A[i].k, 8) != 0 && k >= 3)
				slot = i;
	}
	if (!CHECK(slot > 0, "%u-byte %s: a test image with suffixes found", ns, level ? "inner" : "leaf"))
		goto out;
	free(b);
	b = node(ns, level, DM_ENTRY_MIN, DM_ENTRY_INF);
	CHECK_STATUS(dm_var_build(b, low, high, IT, items_of(A, 0, k, IT)), DM_OK, "%u-byte: built", ns);
	dm_node_seal(b);
	CHECK(dm_node_valid(b, ns, 99), "%u-byte %s: the image validates", ns, level ? "inner" : "leaf");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		memset(m, 0, BIG);
		memcpy(m, b, ns);
		cases[c].fn(m, slot);
		dm_node_seal(m);		/* a consistent checksum: the layout checks must catch it */
		if (!dm_node_valid(m, ns, 99))
			caught++;
		else
			snprintf(missed + strlen(missed), sizeof(missed) - strlen(missed), " [%s]", cases[c].name);
	}
	CHECK(caught == (int) (sizeof(cases) / sizeof(cases[0])), "%u-byte %s: %d of %zu corruptions rejected%s",
		  ns, level ? "inner" : "leaf", caught, sizeof(cases) / sizeof(cases[0]), missed);

	/* torn: a bit of a suffix flipped without resealing, and mixes of two versions */
	memcpy(m, b, ns);
	m[heap_start(m) + VAR_EXT(m)->heap_bytes - 1] ^= 0x10;
	CHECK(!dm_node_valid(m, ns, 99), "%u-byte %s: a flipped suffix bit is caught by the checksum", ns,
		  level ? "inner" : "leaf");
	memcpy(v2, b, ns);
	{
		/* version 2: entry 1 removed, everything after it moves */
		int			n2 = dm_node_items(b, IT);

		memmove(&IT[1], &IT[2], (size_t) (n2 - 2) * sizeof(dm_item));
		CHECK_STATUS(dm_var_build(v2, dm_node_low(b), dm_node_high(b), IT, n2 - 1), DM_OK, "version 2 built");
	}
	dm_node_seal(v2);
	for (uint32_t cut = 8; cut < ns; cut += 8)
		for (int dir = 0; dir < 2; dir++)
		{
			const uint8_t *first = dir ? v2 : b, *second = dir ? b : v2;

			memcpy(m, first, cut);
			memcpy(m + cut, second + cut, ns - cut);
			/* whole as far as either version's used bytes go: a copy of it */
			if (memcmp(m, b, dm_node_used_bytes(b)) == 0 || memcmp(m, v2, dm_node_used_bytes(v2)) == 0)
				continue;
			torn++;
			torn_caught += !dm_node_valid(m, ns, 99);
		}
	CHECK(torn > 20 && torn_caught == torn, "%u-byte %s: all %d torn mixes of two versions rejected (%d)", ns,
		  level ? "inner" : "leaf", torn, torn_caught);
out:
	free(b);
	free(m);
	free(v2);
}

/* ---- separators ----------------------------------------------------------------- */

static void
separators(int rounds)
{
	int			bad = 0, truncated = 0, same = 0;
	char		why[300] = "";

	for (int r = 0; r < rounds && !bad; r++)
	{
		rkey	   *l = &P[0], *rr = &P[1], *s = &P[2];
		dm_entry	sep;
		int			keys_equal;

		gen_key(l, 200);
		if (rnd_below(6) == 0)
		{
			*rr = *l;
			rr->tid = l->tid + 1 + rnd_below(5);
		}
		else
			gen_key(rr, 200);
		if (ref_cmp(l, rr) == 0)
			continue;
		if (ref_cmp(l, rr) > 0)
		{
			rkey		t = *l;

			*l = *rr;
			*rr = t;
		}
		{
			rkey		a = *l, b = *rr;

			a.tid = b.tid = 0;
			keys_equal = ref_cmp(&a, &b) == 0;
		}
		sep = dm_var_separator(ent(l), ent(rr));
		/* sep as bytes: prefix word then suffix; its length n (trailing zero bytes of a short one dropped) */
		memset(s->k, 0, sizeof(s->k));
		for (int i = 0; i < 8; i++)
			s->k[i] = (uint8_t) (sep.key >> (56 - 8 * i));
		if (sep.sfx_len)
			memcpy(s->k + 8, sep.sfx, sep.sfx_len);
		s->len = sep.sfx_len ? 8 + sep.sfx_len : 8;
		while (s->len > 1 && sep.sfx_len == 0 && s->k[s->len - 1] == 0)
			s->len--;
		s->tid = sep.tid;
		if (!(ref_cmp(l, s) < 0 && ref_cmp(s, rr) <= 0) ||
			!(dm_entry_cmp(ent(l), sep) < 0 && dm_entry_cmp(sep, ent(rr)) <= 0))
		{
			snprintf(why, sizeof(why), "round %d: not l < sep <= r (l %u bytes, r %u bytes, sep %u)", r, l->len,
					 rr->len, s->len);
			bad = 1;
			break;
		}
		if (keys_equal)
		{
			same++;
			if (!ent_is(sep, rr))
			{
				snprintf(why, sizeof(why), "round %d: equal keys, but the separator is not r", r);
				bad = 1;
			}
			continue;
		}
		/* (p, 0), p a prefix of r's bytes, no shorter prefix above l */
		if (sep.tid != 0 || s->len > (rr->len > 8 ? rr->len : 8) || memcmp(s->k, rr->k, s->len < rr->len ? s->len : rr->len) != 0)
		{
			snprintf(why, sizeof(why), "round %d: the separator is not (a prefix of r, 0)", r);
			bad = 1;
			break;
		}
		if (s->len > 1)
		{
			rkey		shorter = *s;

			shorter.len--;
			shorter.k[shorter.len] = 0;
			if (ref_cmp(&shorter, l) > 0)
			{
				snprintf(why, sizeof(why), "round %d: a prefix of %u bytes would do, not %u", r, shorter.len, s->len);
				bad = 1;
				break;
			}
		}
		truncated += sep.sfx_len < ent(rr).sfx_len;
	}
	CHECK(!bad && truncated > rounds / 10 && same > 0,
		  "separators of %d random pairs: l < sep <= r, shortest (%d truncated, %d of equal keys) %s",
		  rounds, truncated, same, why);
}

/* On prefix-free keys (terminated), the entry order is plain byte order: what the access method relies on. */
static void
prefix_free_order(int rounds)
{
	int			bad = 0;

	for (int r = 0; r < rounds && !bad; r++)
	{
		rkey	   *a = &P[0], *b = &P[1];
		int			c, want;

		for (int x = 0; x < 2; x++)
		{
			rkey	   *k = x ? b : a;

			k->len = 1 + (uint32_t) rnd_below(20);
			for (uint32_t i = 0; i + 1 < k->len; i++)
				k->k[i] = (uint8_t) (1 + rnd_below(3));
			k->k[k->len - 1] = 0;	/* terminator: no key is a prefix of another */
			k->tid = 0;
		}
		c = dm_entry_cmp(ent(a), ent(b));
		want = sgn(memcmp(a->k, b->k, a->len < b->len ? a->len : b->len));
		if (want == 0)
			want = a->len < b->len ? -1 : a->len > b->len;
		bad = c != want;
	}
	CHECK(!bad, "prefix-free keys: the entry order is their byte order (%d pairs)", rounds);
}

/* ---- splits, maximum key ------------------------------------------------------------ */

static void
splits(uint32_t ns, int level, int rounds)
{
	uint32_t	kmax = dm_tree_key_max(ns);
	int			bad = 0, done = 0;
	char		why[200] = "";
	uint8_t    *lb = node(ns, level, DM_ENTRY_MIN, DM_ENTRY_INF), *rb = node(ns, level, DM_ENTRY_MIN, DM_ENTRY_INF);

	for (int r = 0; r < rounds && !bad; r++)
	{
		int			n = gen_sorted(A, 400, kmax);
		dm_entry	low = ent(&A[0]);
		dm_entry	high = DM_ENTRY_INF;
		int			m, h;
		dm_entry	sep;
		uint32_t	need;

		/* a node's worth and one more: what an overflowing node holds (maximum keys often) */
		m = how_many_fit(ns, level, low, high, A, n);
		if (m >= n || m < 2)
			continue;
		m++;
		items_of(A, 0, m, IT);
		need = dm_var_need(level, low, high, IT, m);
		if (need <= ns)
			continue;
		h = dm_var_split_point(level, ns, low, high, IT, m, &sep);
		if (h < 1 || h >= m)
		{
			snprintf(why, sizeof(why), "round %d: no split point for %d items", r, m);
			bad = 1;
			break;
		}
		if (dm_var_build(lb, low, sep, IT, h) != DM_OK || dm_var_build(rb, sep, high, IT + h, m - h) != DM_OK)
		{
			snprintf(why, sizeof(why), "round %d: a half of the split at %d of %d does not fit", r, h, m);
			bad = 1;
			break;
		}
		dm_node_seal(lb);
		dm_node_seal(rb);
		if (!dm_node_valid(lb, ns, 99) || !dm_node_valid(rb, ns, 99) ||
			dm_entry_cmp(IT[h - 1].sep, sep) >= 0 || dm_entry_cmp(sep, IT[h].sep) > 0 ||
			(level > 0 && dm_entry_cmp(sep, IT[h].sep) != 0))
		{
			snprintf(why, sizeof(why), "round %d: halves invalid or the separator out of place", r);
			bad = 1;
			break;
		}
		done++;
	}
	/* the worst case: fences and three items of the maximum size */
	if (!bad)
	{
		for (int i = 0; i < 5; i++)
		{
			A[i].len = kmax;
			memset(A[i].k, 'a', kmax);
			A[i].k[kmax - 1] = (uint8_t) ('a' + i);
			A[i].tid = 0;
		}
		items_of(A, 1, 4, IT);
		{
			int			h;
			dm_entry	sep;

			h = dm_var_split_point(level, ns, ent(&A[0]), ent(&A[4]), IT, 3, &sep);
			if (h < 1 || h > 2 || dm_var_build(lb, ent(&A[0]), sep, IT, h) != DM_OK ||
				dm_var_build(rb, sep, ent(&A[4]), IT + h, 3 - h) != DM_OK)
			{
				snprintf(why, sizeof(why), "three maximum keys with maximum fences: split at %d", h);
				bad = 1;
			}
		}
	}
	CHECK(!bad && done > rounds / 2, "%u-byte %s: %d overflowing nodes split by bytes into two that fit %s", ns,
		  level ? "inner" : "leaf", done, why);
	free(lb);
	free(rb);
}

static void
key_max(void)
{
	int			bad = 0;
	char		why[200] = "";

	CHECK(dm_tree_key_max(1024) == 174 && dm_tree_key_max(4096) == 788 && dm_tree_key_max(256) == 20 &&
		  dm_tree_key_max(1000) == 0 && dm_tree_key_max(128) == 0 && dm_tree_key_max(8192) == 0,
		  "dm_tree_key_max: 1 KiB 174, 4 KiB 788, 256 B 20; 0 for invalid sizes");
	for (uint32_t ns = DM_NODE_MIN; ns <= DM_NODE_MAX && !bad; ns *= 2)
		for (int level = 0; level < 2 && !bad; level++)
		{
			uint32_t	k = dm_tree_key_max(ns);
			uint8_t    *b = node(ns, level, DM_ENTRY_MIN, DM_ENTRY_INF);

			for (int size = 0; size < 2; size++)
			{
				uint32_t	len = k + (uint32_t) size;

				for (int i = 0; i < 5; i++)
				{
					A[i].len = len;
					memset(A[i].k, 'k', len);
					A[i].k[len - 1] = (uint8_t) ('a' + i);
					A[i].tid = 0;
				}
				items_of(A, 1, 4, IT);
				if (size == 0 && (dm_var_build(b, ent(&A[0]), ent(&A[4]), IT, 3) != DM_OK ||
								  (dm_node_seal(b), !dm_node_valid(b, ns, 99))))
				{
					snprintf(why, sizeof(why), "%u-byte %s: two fences and three entries of %u bytes refused", ns,
							 level ? "inner" : "leaf", len);
					bad = 1;
				}
				if (size == 1 && (dm_var_need(1, ent(&A[0]), ent(&A[4]), IT, 3) <= ns ||
								  dm_var_build(b, ent(&A[0]), ent(&A[4]), IT, 3) == DM_OK))
				{
					snprintf(why, sizeof(why), "%u-byte %s: three keys of %u bytes taken", ns, level ? "inner" : "leaf",
							 len);
					bad = 1;
				}
			}
			free(b);
		}
	CHECK(!bad, "every node size: fences and three entries of key_max bytes fit, key_max + 1 refused %s", why);
}

/* ---- entries, generic accessors -------------------------------------------------------- */

static void
entries_and_accessors(void)
{
	uint8_t		k9[9] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01};
	dm_entry	top = dm_entry_from_bytes(k9, 9, 5);
	dm_entry	e3 = dm_entry_from_bytes("abc", 3, 1);
	uint8_t    *b;
	int			ok = 1;

	CHECK(e3.key == UINT64_C(0x6162630000000000) && e3.sfx_len == 0 && top.sfx_len == 1 && top.sfx == k9 + 8,
		  "dm_entry_from_bytes: padded big-endian prefix word, suffix after the eighth byte");
	CHECK(dm_entry_cmp(top, DM_ENTRY_INF) < 0 && dm_entry_cmp(DM_ENTRY_INF, top) > 0 &&
		  dm_entry_cmp(dm_entry_make(UINT64_MAX, 5), top) < 0,
		  "+infinity stays above a key of eight 0xFF bytes and more");
	CHECK(dm_entry_cmp(dm_entry_from_bytes("abcdefghA", 9, 9), dm_entry_from_bytes("abcdefghAB", 10, 0)) < 0 &&
		  dm_entry_cmp(dm_entry_from_bytes("abcdefghB", 9, 0), dm_entry_from_bytes("abcdefghAB", 10, 9)) > 0 &&
		  dm_entry_cmp(dm_entry_from_bytes("abcdefghA", 9, 1), dm_entry_from_bytes("abcdefghA", 9, 2)) < 0 &&
		  dm_entry_same_key(dm_entry_from_bytes("abcdefghA", 9, 1), dm_entry_from_bytes("abcdefghA", 9, 2)) &&
		  !dm_entry_same_key(dm_entry_from_bytes("abcdefghA", 9, 1), dm_entry_from_bytes("abcdefghB", 9, 1)),
		  "suffixes: memcmp, the shorter first, then the tid");

	/* fill, append, remove, fences through the generic functions */
	if (!CHECK(gen_sorted(A, 40, 60) >= 26, "enough distinct entries"))
		return;
	b = node(4096, 0, DM_ENTRY_MIN, DM_ENTRY_INF);
	for (int i = 0; i < 20 && ok; i++)
		ok = dm_node_append(b, (dm_item) {ent(&A[i]), 0}) == DM_OK;
	dm_node_remove(b, 5);
	ok = ok && dm_node_set_fences(b, ent(&A[0]), ent(&A[25])) == DM_OK;
	dm_node_seal(b);
	ok = ok && dm_node_valid(b, 4096, 99) && NODE_HDR(b)->count == 19 && ent_is(dm_node_low(b), &A[0]) &&
		ent_is(dm_node_high(b), &A[25]);
	for (int i = 0; i < 19 && ok; i++)
		ok = ent_is(dm_node_entry(b, i), &A[i < 5 ? i : i + 1]);
	CHECK(ok, "VAR leaf: append, remove, set fences give the expected valid image");
	/* a fill whose entries point into the node itself */
	{
		dm_item		its[20];
		int			n = dm_node_items(b, its);

		ok = dm_node_fill(b, its + 2, n - 2) == DM_OK;
		dm_node_seal(b);
		ok = ok && dm_node_valid(b, 4096, 99) && NODE_HDR(b)->count == n - 2;
		/* a smaller image over a larger one: nothing of the old one after the heap */
		for (uint32_t i = dm_var_heap_off(b) + VAR_EXT(b)->heap_bytes; i < 4096 && ok; i++)
			ok = b[i] == 0;
		for (int i = 0; i < n - 2 && ok; i++)
			ok = ent_is(dm_node_entry(b, i), &A[i + 2 < 5 ? i + 2 : i + 3]);
		CHECK(ok, "VAR leaf: refilled from its own entries");
		CHECK(dm_node_fill(b, (dm_item[]) {{ent(&A[3]), 0}, {ent(&A[2]), 0}}, 2) == DM_ERR_INVALID,
			  "VAR leaf: entries out of order are refused");
	}
	free(b);
	b = node(4096, 1, ent(&A[0]), DM_ENTRY_INF);
	ok = dm_node_fill(b, IT, items_of(A, 0, 10, IT)) == DM_OK;
	dm_node_set_child(b, 3, 777);
	dm_node_seal(b);
	ok = ok && dm_node_valid(b, 4096, 99) && dm_node_child(b, 3) == 777 && dm_node_child(b, 4) == 4096 * 5 &&
		ent_is(dm_node_sep(b, 4), &A[4]);
	CHECK(ok, "VAR inner: fill and set child");
	free(b);
}

int
main(void)
{
	uint64_t	seed = 0;
	int			scale = 100;

	tree_test_env(&seed, &scale);
	rng = seed ? seed : 1;
	A = malloc(sizeof(rkey) * 400);
	P = malloc(sizeof(rkey) * 4);
	IT = malloc(sizeof(dm_item) * 400);

	entries_and_accessors();
	for (uint32_t ns = DM_NODE_MIN; ns <= DM_NODE_MAX; ns *= 2)
		for (int level = 0; level < 2; level++)
		{
			round_trips(ns, level, 40 * scale / 100 + 1);
			validation(ns, level);
			splits(ns, level, 60 * scale / 100 + 1);
		}
	separators(20000 * scale / 100 + 10);
	prefix_free_order(20000);
	key_max();
	free(A);
	free(P);
	free(IT);
	return tap_done();
}
