/*
 * dm_hop.h — hopscotch leaves (CHIME §3–4; docs/design.md §5.1): the
 * bucket table of a leaf flagged DM_NODE_HOP, as pure functions on a local
 * copy (like dm_node.h; remote I/O is elsewhere).  The header is every
 * node's (dm_tree.h); H, the neighbourhood, is in its byte 31.  Buckets
 * are 16 bytes from byte 88 on: (key, tid word).  The tid word is the
 * entry's tid, bit 63 the NULL marker as everywhere, and bit 62
 * (DM_HOP_OVF), which no stored tid uses, the overflow flag of the bucket
 * *as a home*: some entry whose home is this bucket lies outside
 * [home, home + H).  Buckets are FIXED8 leaf entries (dm_rawent): a
 * hopscotch leaf hashes the 64-bit key, so its tree has key format FIXED8
 * (DESIGN.md §5.2).  An empty bucket is (0, DM_TID_NULL) plus its flag
 * (a NULL-key entry always has key UINT64_MAX, so no entry looks empty).
 */
#ifndef DM_HOP_H
#define DM_HOP_H

#include <stddef.h>

#include "dm_node.h"

#define DM_HOP_OVF		(UINT64_C(1) << 62)
#define DM_HOP_H_MIN	2
#define DM_HOP_H_MAX	16
#define DM_HOP_H_DEFAULT 8

#define HOP_BUCKETS(buf) LEAF_ENTS(buf)

/* Buckets of a hopscotch leaf of node_size bytes: as many as a sorted leaf has entries. */
static inline int
dm_hop_nb(uint32_t node_size)
{
	return dm_leaf_cap(node_size);
}

/* Whether the node image at buf is a hopscotch leaf. */
static inline int
dm_hop_is(const void *buf)
{
	return NODE_HDR(buf)->level == 0 && (NODE_HDR(buf)->flags & DM_NODE_HOP) != 0;
}

static inline int
dm_hop_used(const dm_rawent *b)
{
	return !(b->tid & DM_TID_NULL) || b->key == UINT64_MAX;
}

/* The entry in a used bucket (its flag stripped). */
static inline dm_entry
dm_hop_entry(const dm_rawent *b)
{
	return dm_entry_make(b->key, b->tid & ~DM_HOP_OVF);
}

/* The home bucket of key in a leaf of nb buckets with neighbourhood H: in [0, nb - H]. */
static inline int
dm_hop_home(uint64_t key, int nb, int H)
{
	uint64_t	x = key;

	/* a full-avalanche mix (splitmix64's finalizer): neighbouring keys land far apart */
	x ^= x >> 30;
	x *= UINT64_C(0xBF58476D1CE4E5B9);
	x ^= x >> 27;
	x *= UINT64_C(0x94D049BB133111EB);
	x ^= x >> 31;
	return (int) ((x >> 32) * (uint64_t) (nb - H + 1) >> 32);
}

/* Buckets changed by the functions below: [lo, hi); lo >= hi when none. */
typedef struct dm_hop_range
{
	int			lo;
	int			hi;
} dm_hop_range;

#define DM_HOP_RANGE_NONE ((dm_hop_range) {1 << 30, 0})

/* Results of dm_hop_place */
#define DM_HOP_PLACED		0	/* within its neighbourhood */
#define DM_HOP_OVERFLOWED	1	/* elsewhere in the leaf, its home flagged */
#define DM_HOP_SPLIT		2	/* better split the leaf (split_ok only); not placed */
#define DM_HOP_FULL			3	/* no free bucket; not placed */

/* Make the leaf initialised by dm_node_init (no entries) a hopscotch leaf with neighbourhood H. */
extern void dm_hop_init(void *buf, int H);
/* The bucket holding e, or -1. */
extern int	dm_hop_find(const void *buf, dm_entry e);
/*
 * Place e (not present).  split_ok: answer DM_HOP_SPLIT instead of
 * overflowing when the leaf holds its usable load (dm_hop_usable_permille)
 * and e's neighbourhood is not all entries of e's key (a split makes room;
 * it cannot for one key); below that load e overflows.
 * Entries may have hopped (within their neighbourhoods) whatever the result.
 */
extern int	dm_hop_place(void *buf, dm_entry e, int split_ok, dm_hop_range *r);
/*
 * The mean load at which such a leaf first refuses a key (DM_HOP_SPLIT),
 * in thousandths of its buckets (CHIME's maximum load factor).
 */
extern int	dm_hop_usable_permille(uint32_t node_size, int H);
/* The entries from which a failed placement splits rather than overflows (dm_hop_place); cached. */
extern int	dm_hop_split_at(uint32_t node_size, int H);
/* Empty bucket b (used). */
extern void dm_hop_remove(void *buf, int b, dm_hop_range *r);
/* Make the n entries (ascending) the leaf's whole content, flags recomputed. */
extern void dm_hop_build(void *buf, const dm_entry *ents, int n);
/* The leaf's entries in ascending order into out (room for dm_hop_nb); returns how many. */
extern int	dm_hop_entries(const void *buf, dm_entry *out);
/*
 * Turn a private copy of a hopscotch leaf into the sorted leaf image of the
 * same entries (DM_NODE_HOP cleared), for code that reads sorted leaves:
 * scans, lookups through the iterator, verify.  Never written back.  A
 * sorted leaf is left as it is.
 */
extern void dm_hop_sorted_view(void *buf);
/*
 * The same, of the entries at or after *from only (a forward scan's start:
 * it skips the others anyway, and sorting half as many costs a quarter).
 */
extern void dm_hop_sorted_view_from(void *buf, const dm_entry *from);
/* Structural check of a hopscotch leaf (validated); 0 if sound, else -1 and why in msg. */
extern int	dm_hop_check(const void *buf, char *msg, size_t msglen);
/* Buckets whose home's flag is set (statistics). */
extern int	dm_hop_overflowed_homes(const void *buf);

#endif							/* DM_HOP_H */
