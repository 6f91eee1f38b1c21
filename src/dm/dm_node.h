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

/*
 * A FIXED8 node's in-node leaf entry, and the (prefix, tid) words of every
 * node's fences: 16 bytes.  dm_entry (dm_tree.h) is the entry as the tree's
 * algorithms see it, with its suffix; only the accessors below turn one
 * into the other.
 */
typedef struct dm_rawent
{
	uint64_t	key;
	uint64_t	tid;
} dm_rawent;

/* A FIXED8 node's in-node inner entry: separator words and child, 24 bytes. */
typedef struct dm_rawinner
{
	dm_rawent	sep;
	dm_gaddr	child;
} dm_rawinner;

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
	dm_rawent	low;			/* prefix and tid words; a VAR node's suffixes are in its heap */
	dm_rawent	high;
} dm_node_hdr;

/*
 * An item of the tree's algorithms: an entry (leaf) or a separator and its
 * child (inner node), whatever the node format; what node images are built
 * from (dm_node_fill).
 */
typedef struct dm_item
{
	dm_entry	sep;
	dm_gaddr	child;
} dm_item;

/*
 * Set in the version word while a write of the node is under way (from its
 * guard CAS to its last store, dm_tree_io.c): no checksum matches it, so
 * such a node never validates.
 */
#define DM_VERSION_DIRTY (UINT64_C(1) << 63)

/* flags */
#define DM_NODE_DEAD 0x1		/* retired: a superseded empty root, a reclaimed leaf (dm_tree_reclaim.c) */
#define DM_NODE_HOP 0x2			/* a hopscotch leaf (dm_hop.h): buckets, not sorted entries */
#define DM_NODE_VAR 0x4			/* VAR node format (dm_node_var.h): slots and a suffix heap */

/* dm_node_fmt.h tells code outside the tree (the cache) the same layout */
_Static_assert(offsetof(dm_node_hdr, magic) == DM_NODE_OFF_MAGIC, "node magic offset");
_Static_assert(offsetof(dm_node_hdr, level) == DM_NODE_OFF_LEVEL, "node level offset");
_Static_assert(offsetof(dm_node_hdr, low) == 56 && offsetof(dm_node_hdr, high) == 72, "fence offsets");
_Static_assert(sizeof(dm_rawent) == 16, "FIXED8 leaf entry size");
_Static_assert(sizeof(dm_rawinner) == DM_NODE_INNER_ENTRY, "FIXED8 inner entry size");

#define NODE_HDR(buf) ((dm_node_hdr *) (buf))
/* The raw entries of a FIXED8 node (and a hopscotch leaf's buckets); others use the accessors below. */
#define LEAF_ENTS(buf) ((dm_rawent *) ((uint8_t *) (buf) + DM_NODE_HEADER))
#define INNER_ENTS(buf) ((dm_rawinner *) ((uint8_t *) (buf) + DM_NODE_HEADER))

static inline dm_entry
dm_raw_entry(dm_rawent r)
{
	return dm_entry_make(r.key, r.tid);
}

static inline dm_rawent
dm_raw_of(dm_entry e)
{
	dm_rawent	r = {e.key, e.tid};

	return r;
}

static inline int
dm_leaf_cap(uint32_t node_size)
{
	return (int) ((node_size - DM_NODE_HEADER) / sizeof(dm_rawent));
}

static inline int
dm_inner_cap(uint32_t node_size)
{
	return dm_node_fmt_fanout(node_size);
}

static inline int
dm_node_is_var(const void *buf)
{
	return (NODE_HDR(buf)->flags & DM_NODE_VAR) != 0;
}

#include "dm_node_var.h"

/*
 * Bytes of a node that carry data (header + used entries; a VAR node's
 * slots and heap, rounded up to whole words; a hopscotch leaf's buckets
 * lie anywhere: all of it).  What a write stores and the checksum covers.
 */
static inline uint32_t
dm_node_used_bytes(const void *buf)
{
	const dm_node_hdr *h = buf;

	if (h->flags & DM_NODE_VAR)
		return dm_var_used_bytes(buf);
	if (h->level == 0 && (h->flags & DM_NODE_HOP))
		return h->size_log2 >= 8 && h->size_log2 <= 12 ? 1u << h->size_log2 : DM_NODE_HEADER;
	return DM_NODE_HEADER + (uint32_t) h->count *
		(h->level == 0 ? (uint32_t) sizeof(dm_rawent) : (uint32_t) sizeof(dm_rawinner));
}

/*
 * Accessors: what the tree's algorithms read of a node, whatever its
 * format.  Suffixes of the entries they return point into buf: valid while
 * buf holds this image.
 */
static inline dm_entry
dm_node_low(const void *buf)
{
	if (dm_node_is_var(buf))
		return dm_var_low(buf);
	return dm_raw_entry(NODE_HDR(buf)->low);
}

static inline dm_entry
dm_node_high(const void *buf)
{
	if (dm_node_is_var(buf))
		return dm_var_high(buf);
	return dm_raw_entry(NODE_HDR(buf)->high);
}

/* Entry i of a (sorted) leaf. */
static inline dm_entry
dm_node_entry(const void *buf, int i)
{
	if (dm_node_is_var(buf))
		return dm_var_entry(buf, i);
	return dm_raw_entry(LEAF_ENTS(buf)[i]);
}

/* Separator i of an inner node (sep 0 = the node's low fence). */
static inline dm_entry
dm_node_sep(const void *buf, int i)
{
	if (dm_node_is_var(buf))
		return dm_var_sep(buf, i);
	return dm_raw_entry(INNER_ENTS(buf)[i].sep);
}

/* Child i of an inner node (the child word is at byte 16 of a slot in both formats). */
static inline dm_gaddr
dm_node_child(const void *buf, int i)
{
	if (dm_node_is_var(buf))
		return dm_var_child(buf, i);
	return INNER_ENTS(buf)[i].child;
}

/* Entry i as an item: separator and child of an inner node, entry and 0 of a leaf. */
static inline dm_item
dm_node_item(const void *buf, int i)
{
	dm_item		it;

	if (NODE_HDR(buf)->level == 0)
		it.sep = dm_node_entry(buf, i), it.child = 0;
	else
		it.sep = dm_node_sep(buf, i), it.child = dm_node_child(buf, i);
	return it;
}

/* e is inside the node's fences; INF counts as inside the rightmost node. */
static inline int
dm_node_covers(const void *buf, dm_entry e)
{
	dm_entry	high;

	if (dm_entry_cmp(e, dm_node_low(buf)) < 0)
		return 0;
	high = dm_node_high(buf);
	return dm_entry_cmp(e, high) < 0 || dm_entry_cmp(high, DM_ENTRY_INF) == 0;
}

/*
 * An empty FIXED8 node (its fences must have no suffixes: FIXED8 fences are
 * two words).  dm_var_init (dm_node_var.h) makes an empty VAR node.
 */
extern void dm_node_init(void *buf, uint32_t node_size, int level, uint64_t tree_tag,
						 dm_entry low, dm_entry high);
extern uint64_t dm_node_checksum(const void *buf);
/* Set version+1 and the checksum, ready to be written. */
extern void dm_node_seal(void *buf);
/* 1 if buf holds a consistent node of this tree and size, else 0. */
extern int	dm_node_valid(const void *buf, uint32_t node_size, uint64_t tree_tag);

/* Leaf: index of the first entry >= e (count if none). */
extern int	dm_leaf_lower_bound(const void *buf, const dm_entry *e);
/* Inner: index of the child whose range holds e (last sep <= e). */
extern int	dm_inner_child_index(const void *buf, const dm_entry *e);

/*
 * Changing a local copy, whatever its format.  A FIXED8 node is changed in
 * place; a VAR node is rebuilt as a compact image (dm_node_var.c), which
 * may not fit: then DM_ERR_TOOBIG and buf is unchanged.  Entries given may
 * point into buf itself.
 */
/* Make items[0..n) the node's entries (leaf: their sep), fences and the rest of the header kept. */
extern int	dm_node_fill(void *buf, const dm_item *items, int n);
/* Set both fences (entries kept). */
extern int	dm_node_set_fences(void *buf, dm_entry low, dm_entry high);
/* Append an item after the last entry (bulk load: items come in order). */
extern int	dm_node_append(void *buf, dm_item it);
/* Remove entry i (never grows a node: cannot fail). */
extern void dm_node_remove(void *buf, int i);
/* Set child i of an inner node (in place in both formats). */
extern void dm_node_set_child(void *buf, int i, dm_gaddr child);
/* The node's entries as items (room for count of them); returns count. */
extern int	dm_node_items(const void *buf, dm_item *out);

#endif
