/*
 * dm_hop.c — the bucket table of a hopscotch leaf (dm_hop.h; docs/design.md
 * §5.1) on a local copy: placement with bounded displacement (hopscotch
 * hashing), overflow of a neighbourhood that cannot take an entry,
 * removal, rebuilding, the sorted view scans read, and the structural
 * check verify makes.  The writer of a leaf always holds the whole copy
 * (it was read under the lock), so an entry's home is recomputed from its
 * key whenever needed: no hop bitmaps are stored.
 */
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

int
dm_hop_place(void *buf, dm_entry e, int split_ok, dm_hop_range *r)
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
	if (split_ok && (h->count + 1) * 2 > nb && !nbhd_all_key(B, home, H, e.key))
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

void
dm_hop_remove(void *buf, int b, dm_hop_range *r)
{
	set_empty(&HOP_BUCKETS(buf)[b]);
	range_add(r, b);
	NODE_HDR(buf)->count--;
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

static int
cmp_entry(const void *a, const void *b)
{
	return dm_entry_cmp(*(const dm_entry *) a, *(const dm_entry *) b);
}

int
dm_hop_entries(const void *buf, dm_entry *out)
{
	const dm_rawent *B = HOP_BUCKETS(buf);
	int			nb = hop_nb(buf);
	int			n = 0;

	for (int i = 0; i < nb; i++)
		if (dm_hop_used(&B[i]))
			out[n++] = dm_hop_entry(&B[i]);
	qsort(out, (size_t) n, sizeof(dm_entry), cmp_entry);
	return n;
}

void
dm_hop_sorted_view(void *buf)
{
	dm_entry	tmp[DM_NODE_MAX / sizeof(dm_rawent)];
	int			n;

	if (!dm_hop_is(buf))
		return;
	n = dm_hop_entries(buf, tmp);
	for (int i = 0; i < n; i++)
		LEAF_ENTS(buf)[i] = dm_raw_of(tmp[i]);
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
