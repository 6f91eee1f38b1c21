/*
 * dm_node_var.c — the VAR node format (DESIGN.md §5.2, layout in dm_tree.h,
 * structures in dm_node_var.h): building compact images from entries,
 * validating them, the truncated separator between two leaf entries, and
 * where to split a node by bytes, the comparison of suffixes
 * (dm_sfx_cmp, dm_tree.h).  Pure functions on local copies.
 */
#include <string.h>

#include "dm_node.h"

int
dm_sfx_cmp(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen)
{
	uint32_t	n = alen < blen ? alen : blen;
	int			c;

	if (n > 0 && (c = memcmp(a, b, n)) != 0)
		return c < 0 ? -1 : 1;
	if (alen != blen)
		return alen < blen ? -1 : 1;
	return 0;
}

/* The longest suffix an entry of a node of this size may have. */
static uint32_t
sfx_max(uint32_t node_size)
{
	uint32_t	k = dm_tree_key_max(node_size);

	return k > 8 ? k - 8 : 0;
}

/*
 * The largest key (bytes) of which a node holds both fences and two
 * entries: 96 + 2 * 32 (inner slots, the larger) + 4 * (k - 8) suffix bytes
 * <= node_size.  Below that a node that overflows splits in two that fit;
 * inner nodes keep a fan-out of at least two.
 */
uint32_t
dm_tree_key_max(uint32_t node_size)
{
	if (node_size < DM_NODE_MIN || node_size > DM_NODE_MAX || (node_size & (node_size - 1)) != 0)
		return 0;
	return (node_size - DM_VAR_HEADER - 3 * (uint32_t) sizeof(dm_var_inner)) / 5 + 8;
}

uint32_t
dm_var_need(int level, dm_entry low, dm_entry high, const dm_item *items, int n)
{
	uint32_t	need = DM_VAR_HEADER + (uint32_t) n * dm_var_slot(level) + low.sfx_len + high.sfx_len;

	for (int i = 0; i < n; i++)
		need += items[i].sep.sfx_len;
	return need;
}

int
dm_var_build(void *buf, dm_entry low, dm_entry high, const dm_item *items, int n)
{
	dm_node_hdr *h = NODE_HDR(buf);
	uint32_t	ns = 1u << h->size_log2;
	uint32_t	smax = sfx_max(ns);
	int			level = h->level;
	_Alignas(8) uint8_t tmp[DM_NODE_MAX];
	dm_node_hdr *th = NODE_HDR(tmp);
	dm_var_ext *x = VAR_EXT(tmp);
	uint32_t	off,
				used;

	if (n < 0 || n > 0xFFFF || low.sfx_len > smax || high.sfx_len > smax)
		return DM_ERR_INVALID;
	for (int i = 0; i < n; i++)
	{
		if (items[i].sep.sfx_len > smax)
			return DM_ERR_INVALID;
		if (i > 0 && dm_entry_cmp(items[i - 1].sep, items[i].sep) >= 0)
			return DM_ERR_INVALID;
	}
	used = dm_var_need(level, low, high, items, n);
	if (used > ns)
		return DM_ERR_TOOBIG;
	/* built aside: the entries may point into buf */
	memcpy(tmp, buf, DM_NODE_HEADER);
	th->count = (uint16_t) n;
	th->low = dm_raw_of(low);
	th->high = dm_raw_of(high);
	x->low_sfx_len = (uint16_t) low.sfx_len;
	x->high_sfx_len = (uint16_t) high.sfx_len;
	x->heap_bytes = (uint16_t) (used - DM_VAR_HEADER - (uint32_t) n * dm_var_slot(level));
	x->zero = 0;
	off = DM_VAR_HEADER + (uint32_t) n * dm_var_slot(level);
	if (low.sfx_len)
		memcpy(tmp + off, low.sfx, low.sfx_len);
	off += low.sfx_len;
	if (high.sfx_len)
		memcpy(tmp + off, high.sfx, high.sfx_len);
	off += high.sfx_len;
	for (int i = 0; i < n; i++)
	{
		dm_entry	e = items[i].sep;

		if (level == 0)
		{
			dm_var_leaf *s = &VAR_LEAF(tmp)[i];

			s->key = e.key;
			s->tid = e.tid;
			s->sfx_off = (uint16_t) off;
			s->sfx_len = (uint16_t) e.sfx_len;
			s->zero = 0;
		}
		else
		{
			dm_var_inner *s = &VAR_INNER(tmp)[i];

			s->key = e.key;
			s->tid = e.tid;
			s->child = items[i].child;
			s->sfx_off = (uint16_t) off;
			s->sfx_len = (uint16_t) e.sfx_len;
			s->zero = 0;
		}
		if (e.sfx_len)
			memcpy(tmp + off, e.sfx, e.sfx_len);
		off += e.sfx_len;
	}
	/* compact: nothing after the heap but zeros (the last word is checksummed whole) */
	memcpy(buf, tmp, used);
	memset((uint8_t *) buf + used, 0, ns - used);
	return DM_OK;
}

int
dm_var_init(void *buf, uint32_t node_size, int level, uint64_t tree_tag, dm_entry low, dm_entry high)
{
	dm_node_hdr *h = buf;

	memset(buf, 0, node_size);
	h->magic = DM_NODE_MAGIC;
	h->level = (uint8_t) level;
	h->flags = DM_NODE_VAR;
	h->size_log2 = (uint8_t) __builtin_ctz(node_size);
	h->tree_tag = tree_tag;
	return dm_var_build(buf, low, high, NULL, 0);
}

/*
 * Everything the checksum and the accessors rely on: the slots and the heap
 * inside the node, fences' suffixes first, then every slot's suffix right
 * after the previous one (so none overlaps another or leaves the heap),
 * and heap_bytes exactly their sum.  Checked before the checksum, which
 * covers dm_var_used_bytes.
 */
int
dm_var_valid_layout(const void *buf, uint32_t node_size)
{
	const dm_node_hdr *h = buf;
	const dm_var_ext *x = VAR_EXT(buf);
	uint32_t	smax = sfx_max(node_size);
	uint32_t	heap = DM_VAR_HEADER + (uint32_t) h->count * dm_var_slot(h->level);
	uint32_t	off;

	if ((h->flags & DM_NODE_HOP) || x->zero != 0 || heap > node_size ||
		x->heap_bytes > node_size - heap ||
		x->low_sfx_len > smax || x->high_sfx_len > smax ||
		(uint32_t) x->low_sfx_len + x->high_sfx_len > x->heap_bytes)
		return 0;
	off = heap + x->low_sfx_len + x->high_sfx_len;
	for (int i = 0; i < h->count; i++)
	{
		uint32_t	so,
					sl,
					zero;

		if (h->level == 0)
			so = VAR_LEAF(buf)[i].sfx_off, sl = VAR_LEAF(buf)[i].sfx_len, zero = VAR_LEAF(buf)[i].zero;
		else
			so = VAR_INNER(buf)[i].sfx_off, sl = VAR_INNER(buf)[i].sfx_len, zero = VAR_INNER(buf)[i].zero;
		if (zero != 0 || sl > smax || so != off)
			return 0;
		off += sl;
	}
	return off == heap + x->heap_bytes;
}

/* Entries (leaf) or separators (inner) strictly ascending. */
int
dm_var_valid_order(const void *buf)
{
	const dm_node_hdr *h = buf;

	for (int i = 1; i < h->count; i++)
	{
		dm_entry	a = h->level == 0 ? dm_var_entry(buf, i - 1) : dm_var_sep(buf, i - 1);
		dm_entry	b = h->level == 0 ? dm_var_entry(buf, i) : dm_var_sep(buf, i);

		if (dm_entry_cmp(a, b) >= 0)
			return 0;
	}
	return 1;
}

dm_entry
dm_var_separator(dm_entry l, dm_entry r)
{
	dm_entry	sep = {0, 0};
	uint32_t	d,
				n;

	if (dm_entry_same_key(l, r))
		return r;
	/*
	 * d: the first byte where the keys differ, reading each as its prefix
	 * word's 8 bytes then its suffix (a key shorter than 8 bytes as
	 * zero-padded, which is how entries compare); the whole of l when l's
	 * bytes are a prefix of r's.
	 */
	if (l.key != r.key)
		d = (uint32_t) __builtin_clzll(l.key ^ r.key) / 8;
	else
	{
		uint32_t	m = l.sfx_len < r.sfx_len ? l.sfx_len : r.sfx_len;
		uint32_t	j = 0;

		while (j < m && l.sfx[j] == r.sfx[j])
			j++;
		d = 8 + j;
	}
	n = d + 1;					/* r's first n bytes: above l, and no shorter prefix is */
	if (n > 8 + r.sfx_len)
		return r;				/* r's bytes a prefix of l's: not l < r; keep the order anyway */
	if (n <= 8)
		sep.key = n == 8 ? r.key : r.key & ~(UINT64_MAX >> (8 * n));
	else
	{
		sep.key = r.key;
		sep.sfx = r.sfx;
		sep.sfx_len = n - 8;
	}
	return sep;
}

int
dm_var_split_point(int level, uint32_t node_size, dm_entry low, dm_entry high,
				   const dm_item *items, int m, dm_entry *sep)
{
	uint32_t	slot = dm_var_slot(level);
	uint32_t	total = 0,
				left = 0;
	int64_t		best_score = INT64_MAX;
	int			best = -1;

	for (int i = 0; i < m; i++)
		total += slot + items[i].sep.sfx_len;
	for (int h = 1; h < m; h++)
	{
		dm_entry	s;
		uint32_t	lneed,
					rneed;
		int64_t		score;

		left += slot + items[h - 1].sep.sfx_len;
		/*
		 * An inner node keeps at least two children on each side when it
		 * has four: a side of one child adds a level without adding room,
		 * and repeated, such splits grew a tree of 2,500 leaves to 16
		 * levels.  dm_tree_key_max leaves room for three maximum entries,
		 * so an overflowing inner node has four and such a cut fits
		 * (DESIGN.md §5.2).
		 */
		if (level > 0 && m >= 4 && (h < 2 || m - h < 2))
			continue;
		s = level == 0 ? dm_var_separator(items[h - 1].sep, items[h].sep) : items[h].sep;
		lneed = DM_VAR_HEADER + low.sfx_len + s.sfx_len + left;
		rneed = DM_VAR_HEADER + s.sfx_len + high.sfx_len + (total - left);
		if (lneed > node_size || rneed > node_size)
			continue;
		score = lneed > rneed ? (int64_t) (lneed - rneed) : (int64_t) (rneed - lneed);
		/*
		 * A leaf prefers a cut between two keys (as the FIXED8 split does):
		 * a key's entries then stay in one leaf where they fit.
		 */
		if (level == 0 && dm_entry_same_key(items[h - 1].sep, items[h].sep))
			score += node_size / 2;
		if (score < best_score)
		{
			best_score = score;
			best = h;
			*sep = s;
		}
	}
	return best;
}
