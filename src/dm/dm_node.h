/*
 * dm_node.h — the in-memory view of a remote tree node (layout documented
 * in dm_tree.h): accessors, checksum, validation and in-node search.  Pure
 * functions on a local copy; all remote I/O is in dm_tree_io.c.
 */
#ifndef DM_NODE_H
#define DM_NODE_H

#include <stddef.h>

#include "dm_node_fmt.h"
#include "dm_tree.h"

typedef struct dm_node_hdr
{
	uint64_t	lock;
	uint64_t	version;
	uint64_t	checksum;
	uint16_t	magic;
	uint8_t		level;
	uint8_t		flags;
	uint16_t	count;
	uint8_t		size_log2;
	uint8_t		hop_h;			/* hopscotch leaf: its neighbourhood H (dm_hop.h); else 0 */
	uint64_t	tree_tag;
	dm_gaddr	right;
	dm_gaddr	left;
	dm_entry	low;
	dm_entry	high;
} dm_node_hdr;

typedef struct dm_inner_ent
{
	dm_entry	sep;
	dm_gaddr	child;
} dm_inner_ent;

/*
 * Set in the version word while a write of the node is under way (from its
 * guard CAS to its last store, dm_tree_io.c): no checksum matches it, so
 * such a node never validates.
 */
#define DM_VERSION_DIRTY (UINT64_C(1) << 63)

/* flags */
#define DM_NODE_DEAD 0x1		/* retired: a superseded empty root, a reclaimed leaf (dm_tree_reclaim.c) */
#define DM_NODE_HOP 0x2			/* a hopscotch leaf (dm_hop.h): buckets, not sorted entries */

/* dm_node_fmt.h tells code outside the tree (the cache) the same layout */
_Static_assert(offsetof(dm_node_hdr, magic) == DM_NODE_OFF_MAGIC, "node magic offset");
_Static_assert(offsetof(dm_node_hdr, level) == DM_NODE_OFF_LEVEL, "node level offset");
_Static_assert(sizeof(dm_inner_ent) == DM_NODE_INNER_ENTRY, "inner entry size");

#define NODE_HDR(buf) ((dm_node_hdr *) (buf))
#define LEAF_ENTS(buf) ((dm_entry *) ((uint8_t *) (buf) + DM_NODE_HEADER))
#define INNER_ENTS(buf) ((dm_inner_ent *) ((uint8_t *) (buf) + DM_NODE_HEADER))

static inline int
dm_leaf_cap(uint32_t node_size)
{
	return (int) ((node_size - DM_NODE_HEADER) / sizeof(dm_entry));
}

static inline int
dm_inner_cap(uint32_t node_size)
{
	return dm_node_fmt_fanout(node_size);
}

/*
 * Bytes of a node that carry data (header + used entries; a hopscotch
 * leaf's buckets lie anywhere: all of it).
 */
static inline uint32_t
dm_node_used_bytes(const void *buf)
{
	const dm_node_hdr *h = buf;

	if (h->level == 0 && (h->flags & DM_NODE_HOP))
		return h->size_log2 >= 8 && h->size_log2 <= 12 ? 1u << h->size_log2 : DM_NODE_HEADER;
	return DM_NODE_HEADER + (uint32_t) h->count *
		(h->level == 0 ? (uint32_t) sizeof(dm_entry) : (uint32_t) sizeof(dm_inner_ent));
}

/* e is inside the node's fences; INF counts as inside the rightmost node. */
static inline int
dm_node_covers(const void *buf, dm_entry e)
{
	const dm_node_hdr *h = buf;

	if (dm_entry_cmp(e, h->low) < 0)
		return 0;
	return dm_entry_cmp(e, h->high) < 0 || dm_entry_cmp(h->high, DM_ENTRY_INF) == 0;
}

extern void dm_node_init(void *buf, uint32_t node_size, int level, uint64_t tree_tag,
						 dm_entry low, dm_entry high);
extern uint64_t dm_node_checksum(const void *buf);
/* Set version+1 and the checksum, ready to be written. */
extern void dm_node_seal(void *buf);
/* 1 if buf holds a consistent node of this tree and size, else 0. */
extern int	dm_node_valid(const void *buf, uint32_t node_size, uint64_t tree_tag);

/* Leaf: index of the first entry >= e (count if none). */
extern int	dm_leaf_lower_bound(const void *buf, dm_entry e);
/* Inner: index of the child whose range holds e (last sep <= e). */
extern int	dm_inner_child_index(const void *buf, dm_entry e);

#endif
