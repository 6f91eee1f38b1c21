/*
 * dm_node.c — node initialisation, checksum, validation and search on a
 * local copy of a remote tree node (see dm_node.h, layout in dm_tree.h).
 */
#include <string.h>

#include "dm_node.h"

_Static_assert(sizeof(dm_node_hdr) == DM_NODE_HEADER, "node header is 88 bytes");
_Static_assert(sizeof(dm_inner_ent) == 24, "inner entry is 24 bytes");

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
	h->low = low;
	h->high = high;
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
	return dm_node_checksum(buf) == h->checksum;
}

int
dm_leaf_lower_bound(const void *buf, dm_entry e)
{
	const dm_entry *ents = LEAF_ENTS(buf);
	int			lo = 0, hi = NODE_HDR(buf)->count;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (dm_entry_cmp(ents[mid], e) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int
dm_inner_child_index(const void *buf, dm_entry e)
{
	const dm_inner_ent *ents = INNER_ENTS(buf);
	int			lo = 0, hi = NODE_HDR(buf)->count;

	/* first sep > e, minus one; sep 0 is the low fence, <= e when covered */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (dm_entry_cmp(ents[mid].sep, e) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? lo - 1 : 0;
}
