/*
 * dm_hop.c — the bucket table of a hopscotch leaf (dm_hop.h; docs/design.md
 * §5.1) on a local copy: placement with bounded displacement (hopscotch
 * hashing), overflow of a neighbourhood that cannot take an entry,
 * removal, rebuilding, the sorted view scans read, and the structural
 * check verify makes.  The writer of a leaf always holds the whole copy
 * (it was read under the lock), so an entry's home is recomputed from its
 * key whenever needed: no hop bitmaps are stored.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_hop.h"

static inline int
hop_nb(const void *buf)
{
	return dm_hop_nb(1u << NODE_HDR(buf)->size_log2);
}

static inline void
range_add(dm_hop_range *r, int b)
{
	if (b < r->lo)
		r->lo = b;
	if (b + 1 > r->hi)
		r->hi = b + 1;
}

/* Bucket b empty, keeping its own flag (the flag belongs to the bucket as a home). */
static inline void
set_empty(dm_rawent *b)
{
	b->key = 0;
	b->tid = DM_TID_NULL | (b->tid & DM_HOP_OVF);
}

static inline void
set_entry(dm_rawent *b, dm_entry e)
{
	b->key = e.key;
	b->tid = e.tid | (b->tid & DM_HOP_OVF);
}

void
dm_hop_init(void *buf, int H)
{
	dm_node_hdr *h = NODE_HDR(buf);
	dm_rawent  *B = HOP_BUCKETS(buf);
	int			nb = hop_nb(buf);

	h->flags |= DM_NODE_HOP;
	h->hop_h = (uint8_t) H;
	h->count = 0;
	for (int i = 0; i < nb; i++)
	{
		B[i].key = 0;
		B[i].tid = DM_TID_NULL;
	}
}

int
dm_hop_find(const void *buf, dm_entry e)
{
	const dm_rawent *B = HOP_BUCKETS(buf);
	int			nb = hop_nb(buf);
	int			H = NODE_HDR(buf)->hop_h;
	int			home = dm_hop_home(e.key, nb, H);
	int			from = home, to = home + H;

	/* an overflowed home: its entries may be anywhere */
	if (B[home].tid & DM_HOP_OVF)
		from = 0, to = nb;
	for (int i = from; i < to; i++)
		if (dm_hop_used(&B[i]) && B[i].key == e.key && (B[i].tid & ~DM_HOP_OVF) == e.tid)
			return i;
	return -1;
}

/* Whether every bucket of the neighbourhood at home holds an entry of key. */
static int
nbhd_all_key(const dm_rawent *B, int home, int H, uint64_t key)
{
	for (int i = home; i < home + H; i++)
		if (!dm_hop_used(&B[i]) || B[i].key != key)
			return 0;
	return 1;
}

/*
 * Place e; when it does not fit its neighbourhood and the leaf holds at
 * least split_at entries (and e's neighbourhood is not all e's key), answer
 * DM_HOP_SPLIT, else overflow.
 */
static int
place(void *buf, dm_entry e, int split_at, dm_hop_range *r)
{
	dm_node_hdr *h = NODE_HDR(buf);
	dm_rawent  *B = HOP_BUCKETS(buf);
	int			nb = hop_nb(buf);
	int			H = h->hop_h;
	int			home = dm_hop_home(e.key, nb, H);
	int			f = home;

	/* the first free bucket at or after home, then hop it back towards home */
	while (f < nb && dm_hop_used(&B[f]))
		f++;
	while (f < nb && f - home >= H)
	{
		int			moved = 0;

		/* the farthest-back entry that may move into f: it stays in its neighbourhood */
		for (int j = f - H + 1; j < f; j++)
		{
			int			hj;

			if (!dm_hop_used(&B[j]))
				continue;
			hj = dm_hop_home(B[j].key, nb, H);
			if (hj <= j && j < hj + H && f < hj + H)
			{
				set_entry(&B[f], dm_hop_entry(&B[j]));
				set_empty(&B[j]);
				range_add(r, f);
				range_add(r, j);
				f = j;
				moved = 1;
				break;
			}
		}
		if (!moved)
			break;
	}
	if (f < nb && f - home < H)
	{
		set_entry(&B[f], e);
		range_add(r, f);
		h->count++;
		return DM_HOP_PLACED;
	}
	if (h->count >= nb)
		return DM_HOP_FULL;
	if (h->count >= split_at && !nbhd_all_key(B, home, H, e.key))
		return DM_HOP_SPLIT;

	/* overflow: the nearest free bucket, and the home says so */
	for (int d = 1; d < nb; d++)
	{
		int			g = -1;

		if (home + d < nb && !dm_hop_used(&B[home + d]))
			g = home + d;
		else if (home - d >= 0 && !dm_hop_used(&B[home - d]))
			g = home - d;
		if (g < 0)
			continue;
		set_entry(&B[g], e);
		B[home].tid |= DM_HOP_OVF;
		range_add(r, g);
		range_add(r, home);
		h->count++;
		return DM_HOP_OVERFLOWED;
	}
	return DM_HOP_FULL;			/* not reached: count < nb means a free bucket */
}

/*
 * The number of entries from which a leaf whose neighbourhood cannot take
 * a key splits rather than overflows: its usable load (below).  Below it a
 * failed placement overflows (the home's lookups then read the whole leaf
 * until the next split or rebuild clears the flag): splitting there would
 * leave two leaves under half full where a sorted leaf would still take
 * entries.  Cached by node size and H (deterministic, so a race only
 * computes the same value twice); tree handles ask for it when they are
 * made (~0.1 ms for 1 KiB leaves, ~1 ms for 4 KiB), so that no writer
 * computes it while it holds a leaf's lock.
 */
int
dm_hop_split_at(uint32_t node_size, int H)
{
	static int	cache[13][DM_HOP_H_MAX + 1];
	int			lg = __builtin_ctz(node_size);
	int			v;

	if (lg > 12 || H > DM_HOP_H_MAX)
		return dm_hop_nb(node_size) / 2;
	if ((v = __atomic_load_n(&cache[lg][H], __ATOMIC_RELAXED)) == 0)
	{
		v = dm_hop_nb(node_size) * dm_hop_usable_permille(node_size, H) / 1000;
		if (v < 1)
			v = 1;
		__atomic_store_n(&cache[lg][H], v, __ATOMIC_RELAXED);
	}
	return v;
}

int
dm_hop_place(void *buf, dm_entry e, int split_ok, dm_hop_range *r)
{
	return place(buf, e, split_ok ? dm_hop_split_at(1u << NODE_HDR(buf)->size_log2, NODE_HDR(buf)->hop_h) : INT_MAX, r);
}

/*
 * The load at which a leaf of node_size bytes with neighbourhood H first
 * answers DM_HOP_SPLIT, in thousandths of its buckets: the mean over a fixed
 * set of fillings with pseudo-random keys (the homes are a hash, so any
 * distinct keys behave alike).  CHIME's "maximum load factor" (its Figure
 * 3d: about 0.9 for H = 8).  A sorted leaf splits only when full; a
 * hopscotch leaf loaded past this splits on its next insert or so.  The
 * bulk loader scales the fillfactor by it (dm_tree_bulk.c), which leaves a
 * loaded hopscotch leaf about as many inserts before its first split as a
 * sorted leaf loaded at the same fillfactor.  Deterministic: the same
 * answer on every instance and run.
 */
int
dm_hop_usable_permille(uint32_t node_size, int H)
{
	enum
	{
		TRIALS = 32
	};
	uint64_t	img[DM_NODE_MAX / sizeof(uint64_t)];
	uint64_t	x = UINT64_C(0x9E3779B97F4A7C15);
	int			nb = dm_hop_nb(node_size);
	long		sum = 0;

	for (int t = 0; t < TRIALS; t++)
	{
		dm_node_init(img, node_size, 0, 0, DM_ENTRY_MIN, DM_ENTRY_INF);
		dm_hop_init(img, H);
		for (;;)
		{
			dm_hop_range r = DM_HOP_RANGE_NONE;
			dm_entry	e;

			/* xorshift64: keys below the NULL key's UINT64_MAX */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			e = dm_entry_make(x >> 1, 1);
			if (dm_hop_find(img, e) >= 0)
				continue;
			/* a split asked for past half full: the rule before usable loads were known */
			if (place(img, e, dm_hop_nb(node_size) / 2, &r) >= DM_HOP_SPLIT)
				break;
		}
		sum += NODE_HDR(img)->count;
	}
	return (int) (sum * 1000 / ((long) TRIALS * nb));
}

void
dm_hop_remove(void *buf, int b, dm_hop_range *r)
{
	dm_rawent  *B = HOP_BUCKETS(buf);
	int			nb = hop_nb(buf);
	int			H = NODE_HDR(buf)->hop_h;
	int			home = dm_hop_home(B[b].key, nb, H);

	set_empty(&B[b]);
	range_add(r, b);
	NODE_HDR(buf)->count--;

	/*
	 * The entry's home overflowed: if none of its entries is outside its
	 * neighbourhood any more, clear the flag in the same write, so that
	 * its keys' lookups read one neighbourhood again.  (Leaves split only
	 * at their usable load and overflow below it, so without this an
	 * update-heavy leaf would gather flags until its next split.)
	 */
	if (B[home].tid & DM_HOP_OVF)
	{
		for (int i = 0; i < nb; i++)
			if ((i < home || i >= home + H) && dm_hop_used(&B[i]) && dm_hop_home(B[i].key, nb, H) == home)
				return;
		B[home].tid &= ~DM_HOP_OVF;
		range_add(r, home);
	}
}

/*
 * Building a whole table places entries by home, lowest home first, each
 * in the first free bucket at or after its home: with neighbourhoods all
 * of one length, this earliest-deadline-first assignment places as many
 * entries within their neighbourhoods as any placement can (a home's
 * deadline, home + H, grows with the home), so fewer homes overflow than
 * when the entries are placed one by one in key order, whose hops only
 * approximate it.  A bulk-loaded or split leaf is read whole for every
 * overflowed home's lookups, so this is bytes saved on every later read.
 */
typedef struct hop_slot
{
	int			home;
	int			i;
} hop_slot;

static int
cmp_slot(const void *a, const void *b)
{
	const hop_slot *x = a,
			   *y = b;

	if (x->home != y->home)
		return x->home < y->home ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

void
dm_hop_build(void *buf, const dm_entry *ents, int n)
{
	dm_hop_range r = DM_HOP_RANGE_NONE;
	hop_slot	order[DM_NODE_MAX / sizeof(dm_rawent)];
	int			left[DM_NODE_MAX / sizeof(dm_rawent)];
	dm_rawent  *B = HOP_BUCKETS(buf);
	int			nb = hop_nb(buf);
	int			H = NODE_HDR(buf)->hop_h;
	int			next = 0,
				nleft = 0;

	dm_hop_init(buf, H);
	if (n > nb)
		n = nb;					/* never asked for: a leaf holds at most nb */
	for (int i = 0; i < n; i++)
	{
		order[i].home = dm_hop_home(ents[i].key, nb, H);
		order[i].i = i;
	}
	qsort(order, (size_t) n, sizeof(hop_slot), cmp_slot);
	for (int k = 0; k < n; k++)
	{
		int			b = next > order[k].home ? next : order[k].home;

		if (b < order[k].home + H && b < nb)
		{
			set_entry(&B[b], ents[order[k].i]);
			NODE_HDR(buf)->count++;
			next = b + 1;
		}
		else
			left[nleft++] = order[k].i;
	}
	/* what no placement fits into its neighbourhood overflows, as an insert would */
	for (int k = 0; k < nleft; k++)
		(void) dm_hop_place(buf, ents[left[k]], 0, &r);
}

/*
 * Sorting a leaf's entries.  Every scan step over a hopscotch leaf
 * (dm_hop_sorted_view) sorts it, so this is a fifth to a tenth of a scan's
 * CPU: qsort through dm_entry_cmp took ~3 µs for a 1 KiB leaf of 46
 * entries (random keys: its branches mispredict), a merge sort ~1.5 µs.
 * sorted_raw tries spread_sort first (~0.65 µs); where keys bunch, up to
 * RANK_MAX entries each one's rank is counted without a branch: n^2
 * comparisons, which the compiler vectorizes (~0.8 µs with AVX2, chosen
 * at load time where the CPU has it); larger leaves are merge-sorted.
 * Equal entries (none in a sound leaf) share a rank and are placed one
 * after the other.
 */
#define RANK_MAX 64

/* target_clones needs ifunc: GCC on x86-64 with glibc */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__)
#define RANK_CLONES __attribute__((target_clones("avx2", "default"), optimize("tree-vectorize")))
#else
#define RANK_CLONES
#endif

RANK_CLONES
static void
rank_sort(const dm_rawent *in, int n, dm_rawent *out)
{
	int64_t		k[RANK_MAX],
				t[RANK_MAX];
	uint8_t		rk[RANK_MAX],
				taken[RANK_MAX];

	if (n > RANK_MAX)
		n = RANK_MAX;			/* never: the caller sorts larger leaves otherwise */
	/* signed compares of the words with their top bit flipped = unsigned order */
	for (int i = 0; i < n; i++)
	{
		k[i] = (int64_t) (in[i].key ^ (UINT64_C(1) << 63));
		t[i] = (int64_t) (in[i].tid ^ (UINT64_C(1) << 63));
	}
	for (int i = 0; i < n; i++)
	{
		int64_t		x = k[i],
					y = t[i],
					r = 0;

		for (int j = 0; j < n; j++)
			r += (k[j] < x) | ((k[j] == x) & (t[j] < y));
		rk[i] = (uint8_t) r;
	}
	/* equal entries share a rank: the later ones take the next free places */
	memset(taken, 0, (size_t) n);
	for (int i = 0; i < n; i++)
	{
		int			r = rk[i];

		while (taken[r])
			r++;
		taken[r] = 1;
		out[r] = in[i];
	}
}

/* FIXED8 order (dm_entry_cmp without suffixes): key, then tid. */
static inline int
raw_less(const dm_rawent *a, const dm_rawent *b)
{
	return a->key < b->key || (a->key == b->key && a->tid < b->tid);
}

/* Bigger leaves: runs of 8 by insertion, then bottom-up merges through tmp. */
static void
merge_sort(dm_rawent *out, int n)
{
	dm_rawent	tmp[DM_NODE_MAX / sizeof(dm_rawent)];
	dm_rawent  *src = out,
			   *dst = tmp;

	for (int lo = 0; lo < n; lo += 8)
	{
		int			hi = lo + 8 < n ? lo + 8 : n;

		for (int i = lo + 1; i < hi; i++)
		{
			dm_rawent	x = out[i];
			int			j = i;

			while (j > lo && raw_less(&x, &out[j - 1]))
			{
				out[j] = out[j - 1];
				j--;
			}
			out[j] = x;
		}
	}
	for (int w = 8; w < n; w *= 2)
	{
		dm_rawent  *swap;

		for (int lo = 0; lo < n; lo += 2 * w)
		{
			int			mid = lo + w < n ? lo + w : n,
						hi = lo + 2 * w < n ? lo + 2 * w : n,
						a = lo,
						b = mid,
						k = lo;

			while (a < mid && b < hi)
				dst[k++] = raw_less(&src[b], &src[a]) ? src[b++] : src[a++];
			while (a < mid)
				dst[k++] = src[a++];
			while (b < hi)
				dst[k++] = src[b++];
		}
		swap = src;
		src = dst;
		dst = swap;
	}
	if (src != out)
		memcpy(out, src, sizeof(dm_rawent) * (size_t) n);
}

/*
 * The usual case first: a leaf's keys spread over its key range, so their
 * high bits nearly order them.  Entries go to 2^bits slots (bits: about
 * log2 n) by the top bits of key - the smallest key (a counting sort, no
 * data-dependent branch), and an insertion pass orders each slot's few.
 * Declines (0) when some slot would get more than 8 entries (keys bunched
 * in a small part of the range, or one key's many tids): the caller sorts
 * otherwise.
 */
static int
spread_sort(const dm_rawent *in, int n, dm_rawent *out)
{
	uint16_t	cnt[257];
	uint8_t		slot[DM_NODE_MAX / sizeof(dm_rawent)];
	uint64_t	kmin = UINT64_MAX,
				kmax = 0,
				span;
	int			bits = 3,
				shift,
				most = 0;

	for (int i = 0; i < n; i++)
	{
		kmin = in[i].key < kmin ? in[i].key : kmin;
		kmax = in[i].key > kmax ? in[i].key : kmax;
	}
	if (n < 2 || (span = kmax - kmin) == 0)
		return 0;
	while ((1 << bits) < n && bits < 8)
		bits++;
	shift = 64 - __builtin_clzll(span) - bits;
	if (shift < 0)
		shift = 0;
	memset(cnt, 0, sizeof(uint16_t) * (size_t) ((1 << bits) + 1));
	for (int i = 0; i < n; i++)
	{
		slot[i] = (uint8_t) ((in[i].key - kmin) >> shift);
		cnt[slot[i] + 1]++;
	}
	for (int b = 1; b <= (1 << bits); b++)
	{
		most = cnt[b] > most ? cnt[b] : most;
		cnt[b] += cnt[b - 1];
	}
	if (most > 8)
		return 0;
	for (int i = 0; i < n; i++)
		out[cnt[slot[i]]++] = in[i];
	for (int i = 1; i < n; i++)
	{
		dm_rawent	x = out[i];
		int			j = i;

		while (j > 0 && raw_less(&x, &out[j - 1]))
		{
			out[j] = out[j - 1];
			j--;
		}
		out[j] = x;
	}
	return 1;
}

/*
 * The used buckets of a leaf, flags stripped, in ascending order into out
 * (room for nb); returns how many.  from: only the entries at or after it
 * (NULL: all).
 */
static int
sorted_raw(const void *buf, dm_rawent *out, const dm_entry *from)
{
	const dm_rawent *B = HOP_BUCKETS(buf);
	dm_rawent	used[DM_NODE_MAX / sizeof(dm_rawent)];
	dm_rawent	lo = {0, 0};
	int			nb = hop_nb(buf);
	int			n = 0;

	if (from)
		lo = dm_raw_of(*from);
	/*
	 * Without a branch: which buckets are used, and which entries come
	 * before lo (about half in a scan's first leaf), is random.  Every
	 * bucket is copied; n moves past those kept.
	 */
	for (int i = 0; i < nb; i++)
	{
		uint64_t	key = B[i].key,
					tid = B[i].tid & ~DM_HOP_OVF;
		int			use = (int) ((~tid >> 63) | (key == UINT64_MAX));	/* dm_hop_used */

		used[n].key = key;
		used[n].tid = tid;
		n += use & ((key > lo.key) | ((key == lo.key) & (tid >= lo.tid)));
	}
	if (spread_sort(used, n, out))
		;
	else if (n <= RANK_MAX)
		rank_sort(used, n, out);
	else
	{
		memcpy(out, used, sizeof(dm_rawent) * (size_t) n);
		merge_sort(out, n);
	}
	return n;
}

int
dm_hop_entries(const void *buf, dm_entry *out)
{
	dm_rawent	r[DM_NODE_MAX / sizeof(dm_rawent)];
	int			n = sorted_raw(buf, r, NULL);

	for (int i = 0; i < n; i++)
		out[i] = dm_entry_make(r[i].key, r[i].tid);
	return n;
}

void
dm_hop_sorted_view(void *buf)
{
	dm_hop_sorted_view_from(buf, NULL);
}

void
dm_hop_sorted_view_from(void *buf, const dm_entry *from)
{
	int			n;

	if (!dm_hop_is(buf))
		return;
	{
		dm_rawent	r[DM_NODE_MAX / sizeof(dm_rawent)];

		/* the sorted entries replace the buckets they were read from */
		n = sorted_raw(buf, r, from);
		memcpy(LEAF_ENTS(buf), r, sizeof(dm_rawent) * (size_t) n);
	}
	NODE_HDR(buf)->count = (uint16_t) n;
	NODE_HDR(buf)->flags &= (uint8_t) ~DM_NODE_HOP;
	NODE_HDR(buf)->hop_h = 0;
}

int
dm_hop_check(const void *buf, char *msg, size_t msglen)
{
	const dm_rawent *B = HOP_BUCKETS(buf);
	int			nb = hop_nb(buf);
	int			H = NODE_HDR(buf)->hop_h;
	int			used = 0;

	if (H < DM_HOP_H_MIN || H > DM_HOP_H_MAX || H > nb)
	{
		snprintf(msg, msglen, "neighbourhood %d out of range", H);
		return -1;
	}
	for (int i = 0; i < nb; i++)
	{
		int			home;

		if (!dm_hop_used(&B[i]))
		{
			if (B[i].key != 0 || (B[i].tid & ~DM_HOP_OVF) != DM_TID_NULL)
			{
				snprintf(msg, msglen, "empty bucket %d holds (%llu, %llx)", i,
						 (unsigned long long) B[i].key, (unsigned long long) B[i].tid);
				return -1;
			}
			continue;
		}
		used++;
		home = dm_hop_home(B[i].key, nb, H);
		if ((i < home || i >= home + H) && !(B[home].tid & DM_HOP_OVF))
		{
			snprintf(msg, msglen, "bucket %d holds key %llu of home %d outside its neighbourhood, "
					 "and the home is not flagged", i, (unsigned long long) B[i].key, home);
			return -1;
		}
	}
	if (used != NODE_HDR(buf)->count)
	{
		snprintf(msg, msglen, "count %d but %d buckets used", NODE_HDR(buf)->count, used);
		return -1;
	}
	return 0;
}

int
dm_hop_overflowed_homes(const void *buf)
{
	const dm_rawent *B = HOP_BUCKETS(buf);
	int			nb = hop_nb(buf);
	int			n = 0;

	for (int i = 0; i < nb; i++)
		n += (B[i].tid & DM_HOP_OVF) != 0;
	return n;
}
