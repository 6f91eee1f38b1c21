/*
 * dm_region_int.h — internals shared by dm_region.c (allocator),
 * dm_region_catalog.c (catalog) and dm_region_recover.c (what a
 * reattaching memnode repairs): the layout
 * of tree ids and the few allocator helpers the repair reuses, so both
 * follow exactly the same rules.  Not for use outside those files.
 */
#ifndef DM_REGION_INT_H
#define DM_REGION_INT_H

#include "dm_region.h"

/*
 * Tree ids carry the catalog slot in their low bits so chunk bookkeeping
 * finds the owning entry without scanning, the memnode id in bits 48..62 so
 * ids are unique across memnodes (a tree's chunks may live on several), and
 * a sequence in between so a reused slot never reuses an id.
 */
#define SLOT_BITS 20
#define SLOT_MASK ((UINT64_C(1) << SLOT_BITS) - 1)
#define SEQ_MASK ((UINT64_C(1) << (DM_OFFSET_BITS - SLOT_BITS)) - 1)
#define CATALOG_MAX ((uint32_t) SLOT_MASK)

/* The live catalog entry of a tree id, or NULL. */
extern dm_cat_entry *dm_region_entry_of_tree(dm_region *r, uint64_t tree_id);
/* Give chunk i back to the free pool (its owner's entry counts one less). */
extern void dm_region_release_chunk(dm_region *r, uint64_t i);
/*
 * Walk chunk i's list of returned ranges: 1 if it is sound (*free_bytes,
 * *last, *before_last filled when not NULL), 0 if damaged — then dropped
 * when repair is set (its bytes stay allocated to the owner).
 */
extern int	dm_region_walk_list(dm_region *r, uint64_t i, int repair, uint64_t *free_bytes,
								uint64_t *last, uint64_t *before_last);

#endif							/* DM_REGION_INT_H */
