/*
 * dm_node.c — node initialisation, checksum, validation and search on a
 * local copy of a remote tree node (see dm_node.h, layout in dm_tree.h).
 */
#include <string.h>

#include "dm_node.h"

_Static_assert(sizeof(dm_node_hdr) == DM_NODE_HEADER, "node header is 88 bytes");
_Static_assert(sizeof(dm_rawinner) == 24, "inner entry is 24 bytes");

void
dm_node_init(void *buf, uint32_t node_size, int level, uint64_t tree_tag,
			 dm_entry low, dm_entry high)
{
	dm_node_hdr *h = buf;

	memset(buf, 0, node_size);
	h->magic = DM_NODE_MAGIC;
	h->level = (uint8_t) level;
	h->size_log2 = (uint8_t) __builtin_ctz(node_size);
	h->tree_tag = tree_tag;
	h->low = dm_raw_of(low);
	h->high = dm_raw_of(high);
}

static inline uint64_t
mix(uint64_t h, uint64_t w)
{
	h ^= w * UINT64_C(0x9E3779B97F4A7C15);
	h = (h << 27) | (h >> 37);
	return h * UINT64_C(0xC2B2AE3D27D4EB4F) + UINT64_C(0x165667B19E3779F9);
}

/*
 * A 64-bit hash over the version and everything from byte 24 to the end of
 * the used entries.  Not cryptographic: it only has to tell a torn copy
 * (words from two different writes) from a whole one, and word-wise mixing
 * with position-dependent state does that with overwhelming probability.
 */
uint64_t
dm_node_checksum(const void *buf)
{
	const uint8_t *p = buf;
	uint32_t	end = dm_node_used_bytes(buf);
	uint64_t	h = UINT64_C(0x243F6A8885A308D3);
	uint64_t	w;

	memcpy(&w, p + 8, 8);
	h = mix(h, w);
	for (uint32_t off = 24; off < end; off += 8)
	{
		memcpy(&w, p + off, 8);
		h = mix(h, w);
	}
	h ^= h >> 33;
	h *= UINT64_C(0xFF51AFD7ED558CCD);
	h ^= h >> 33;
	return h;
}

void
dm_node_seal(void *buf)
{
	dm_node_hdr *h = buf;

	h->version++;
	h->checksum = dm_node_checksum(buf);
}

int
dm_node_valid(const void *buf, uint32_t node_size, uint64_t tree_tag)
{
	const dm_node_hdr *h = buf;
	int			cap;

	if (h->magic != DM_NODE_MAGIC || h->tree_tag != tree_tag || (h->version & DM_VERSION_DIRTY) ||
		(1u << h->size_log2) != node_size || h->level > 15)
		return 0;
	cap = h->level == 0 ? dm_leaf_cap(node_size) : dm_inner_cap(node_size);
	if (h->count > cap)
		return 0;
	/* a hopscotch leaf (dm_hop.h) says its neighbourhood; no other node has one */
	if ((h->flags & DM_NODE_HOP) ?
		h->level != 0 || h->hop_h < 2 || h->hop_h > 16 || h->hop_h > cap : h->hop_h != 0)
		return 0;
	if (!(h->flags & DM_NODE_VAR))
		return dm_node_checksum(buf) == h->checksum;
	/* VAR: the layout first (the checksum's extent depends on it), then the order of what it says */
	return dm_var_valid_layout(buf, node_size) && dm_node_checksum(buf) == h->checksum &&
		dm_var_valid_order(buf);
}

/*
 * The in-node searches.  The FIXED8 search with an entry without suffix
 * (every search of a FIXED8 tree) is the hot path of every descent and
 * scan: two words per comparison, the entry by pointer, nothing else in
 * its frame; the rest (VAR nodes, entries with suffixes) goes out of line.
 */
static __attribute__((noinline)) int
leaf_lower_bound_any(const void *buf, const dm_entry *e)
{
	int			lo = 0, hi = NODE_HDR(buf)->count;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (dm_entry_cmp(dm_node_entry(buf, mid), *e) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int
dm_leaf_lower_bound(const void *buf, const dm_entry *e)
{
	const dm_rawent *ents = LEAF_ENTS(buf);
	int			lo = 0, hi = NODE_HDR(buf)->count;
	uint64_t	k = e->key,
				t = e->tid;

	if (dm_node_is_var(buf) || e->sfx_len != 0)
		return leaf_lower_bound_any(buf, e);
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (ents[mid].key < k || (ents[mid].key == k && ents[mid].tid < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static __attribute__((noinline)) int
inner_child_index_any(const void *buf, const dm_entry *e)
{
	int			lo = 0, hi = NODE_HDR(buf)->count;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (dm_entry_cmp(dm_node_sep(buf, mid), *e) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? lo - 1 : 0;
}

int
dm_inner_child_index(const void *buf, const dm_entry *e)
{
	const dm_rawinner *ents = INNER_ENTS(buf);
	int			lo = 0, hi = NODE_HDR(buf)->count;
	uint64_t	k = e->key,
				t = e->tid;

	if (dm_node_is_var(buf) || e->sfx_len != 0)
		return inner_child_index_any(buf, e);
	/* first sep > e, minus one; sep 0 is the low fence, <= e when covered */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (ents[mid].sep.key < k || (ents[mid].sep.key == k && ents[mid].sep.tid <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? lo - 1 : 0;
}

/* ---- changing a local copy ---------------------------------------------------- */

int
dm_node_fill(void *buf, const dm_item *items, int n)
{
	dm_node_hdr *h = buf;
	uint32_t	ns = 1u << h->size_log2;

	if (h->flags & DM_NODE_VAR)
		return dm_var_build(buf, dm_node_low(buf), dm_node_high(buf), items, n);
	if (n > (h->level == 0 ? dm_leaf_cap(ns) : dm_inner_cap(ns)))
		return DM_ERR_TOOBIG;
	for (int x = 0; x < n; x++)
	{
		if (h->level == 0)
			LEAF_ENTS(buf)[x] = dm_raw_of(items[x].sep);
		else
		{
			INNER_ENTS(buf)[x].sep = dm_raw_of(items[x].sep);
			INNER_ENTS(buf)[x].child = items[x].child;
		}
	}
	h->count = (uint16_t) n;
	return DM_OK;
}

int
dm_node_items(const void *buf, dm_item *out)
{
	int			n = NODE_HDR(buf)->count;

	for (int i = 0; i < n; i++)
		out[i] = dm_node_item(buf, i);
	return n;
}

int
dm_node_set_fences(void *buf, dm_entry low, dm_entry high)
{
	dm_node_hdr *h = buf;
	dm_item		items[DM_NODE_MAX / sizeof(dm_var_leaf)];

	if (!(h->flags & DM_NODE_VAR))
	{
		h->low = dm_raw_of(low);
		h->high = dm_raw_of(high);
		return DM_OK;
	}
	return dm_var_build(buf, low, high, items, dm_node_items(buf, items));
}

int
dm_node_append(void *buf, dm_item it)
{
	dm_node_hdr *h = buf;
	uint32_t	ns = 1u << h->size_log2;
	dm_item		items[DM_NODE_MAX / sizeof(dm_var_leaf) + 1];
	int			n;

	if (!(h->flags & DM_NODE_VAR))
	{
		if (h->count >= (h->level == 0 ? dm_leaf_cap(ns) : dm_inner_cap(ns)))
			return DM_ERR_TOOBIG;
		if (h->level == 0)
			LEAF_ENTS(buf)[h->count] = dm_raw_of(it.sep);
		else
		{
			INNER_ENTS(buf)[h->count].sep = dm_raw_of(it.sep);
			INNER_ENTS(buf)[h->count].child = it.child;
		}
		h->count++;
		return DM_OK;
	}
	n = dm_node_items(buf, items);
	items[n++] = it;
	return dm_var_build(buf, dm_node_low(buf), dm_node_high(buf), items, n);
}

void
dm_node_remove(void *buf, int i)
{
	dm_node_hdr *h = buf;
	dm_item		items[DM_NODE_MAX / sizeof(dm_var_leaf)];
	int			n;
	int			rc;

	if (!(h->flags & DM_NODE_VAR))
	{
		if (h->level == 0)
			memmove(&LEAF_ENTS(buf)[i], &LEAF_ENTS(buf)[i + 1],
					(size_t) (h->count - i - 1) * sizeof(dm_rawent));
		else
			memmove(&INNER_ENTS(buf)[i], &INNER_ENTS(buf)[i + 1],
					(size_t) (h->count - i - 1) * sizeof(dm_rawinner));
		h->count--;
		return;
	}
	n = dm_node_items(buf, items);
	memmove(&items[i], &items[i + 1], (size_t) (n - i - 1) * sizeof(dm_item));
	/* fewer bytes than a valid image it came from: fits */
	rc = dm_var_build(buf, dm_node_low(buf), dm_node_high(buf), items, n - 1);
	(void) rc;
}

void
dm_node_set_child(void *buf, int i, dm_gaddr child)
{
	if (dm_node_is_var(buf))
		VAR_INNER(buf)[i].child = child;
	else
		INNER_ENTS(buf)[i].child = child;
}
