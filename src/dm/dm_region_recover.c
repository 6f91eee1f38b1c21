/*
 * dm_region_recover.c — what a memnode reattaching to a region (its file
 * outlived the previous memnode process) does to the memnode-owned
 * metadata before it serves anyone, and why that is enough.
 *
 * The previous memnode may have been killed (kill -9, the OOM killer, a
 * crash) between any two of its stores; all stores it made before that are
 * in the file (page cache or DAX), none after.  Batches of one-sided ops it
 * was executing are finished from its journal first (dm_journal.c).  Then,
 * structure by structure:
 *
 * - Superblock.  The fixed words (identity, layout, incarnation) are
 *   written once, at format, and covered by sb_checksum (dm_region_attach
 *   refuses a mismatch).  chunks_used and trees are derived counters:
 *   recomputed here.  next_tree_seq is raised above the sequence of every
 *   live tree id, so no id is ever handed out twice.  next_free_hint is a
 *   hint (used modulo nchunks).
 * - Chunk table.  A descriptor's owner word decides whether a chunk is
 *   taken.  Allocation zeroes the chunk, then stores the owner, then the
 *   bump pointer: killed after the owner store, the chunk belongs to a tree
 *   that never got the reply — it leaks to that tree until it is dropped —
 *   unless the bump pointer is still 0, which only such a cut-short
 *   allocation leaves (a chunk whose last range comes back is released at
 *   once): freed here.  Release clears the owner before the other fields:
 *   killed in between, the chunk is free with stale fields, zeroed here.
 * - Returned ranges (slab free lists).  Their headers live in the data
 *   area, so every header is validated before use and a damaged list is
 *   dropped (its bytes stay allocated to the owner: leaked, never handed
 *   out twice).  The allocator orders its stores so that a kill leaves a
 *   valid list that at worst leaks one range: a split writes the
 *   remainder's header before linking it, a merge links past the next
 *   range before growing over it (dm_region_slab_free), lowering the bump
 *   pointer unlinks the last range first.  Here every owned chunk's list
 *   is walked with repair, so a damaged one is dropped now rather than at
 *   its next use.
 * - Catalog.  An entry is published by storing its tree id last and
 *   unpublished by clearing it first.  A tree created but never
 *   acknowledged is an orphan like any other (the access method's
 *   collector frees it).  A drop unpublishes before it frees the tree's
 *   chunks: killed in between, chunks remain owned by a tree id of this
 *   memnode that no entry holds — freed here (owners that are not tree ids
 *   of this memnode, such as chunks of a tree homed on another memnode or
 *   raw test owners, are never touched).  The per-tree chunk counts are
 *   recomputed.  A published entry whose id does not name its own slot and
 *   memnode, or whose name is malformed, cannot come from a kill: that
 *   region is reported unusable (DM_ERR_CORRUPT) and gets a fresh start.
 * - Data area (tree nodes) is the clients' business: locks of dead
 *   clients are taken over, torn nodes repaired from redo slots
 *   (dm_tree_redo.c), unfinished root splits finished (dm_tree_descend.c).
 *
 * This runs on every reattach, clean or not: it is one pass over the chunk
 * table and the catalog, and on a cleanly shut down region it finds
 * nothing to change (the memnode logs a warning if it does).
 */
#include <string.h>

#include "dm_region.h"
#include "dm_region_int.h"

/* Could owner be a tree id handed out by this memnode's catalog? */
static int
is_local_tree_id(const dm_region *r, uint64_t owner)
{
	uint64_t	off = dm_gaddr_offset(owner);

	return (owner & DM_GADDR_RESERVED_BIT) == 0 && dm_gaddr_node(owner) == r->node_id &&
		(off & SLOT_MASK) < r->sb->catalog_capacity && ((off >> SLOT_BITS) & SEQ_MASK) != 0;
}

int
dm_region_recover(dm_region *r, dm_region_recovery *out)
{
	dm_region_recovery rep;
	uint64_t	cs = r->sb->chunk_size;
	uint64_t	used_chunks = 0,
				trees = 0,
				max_seq = 0;

	memset(&rep, 0, sizeof(rep));

	/* the catalog first: which tree ids exist */
	for (uint64_t s = 0; s < r->sb->catalog_capacity; s++)
	{
		dm_cat_entry *e = &r->catalog[s];
		uint64_t	id = e->tree_id;

		if (id == 0)
			continue;
		if (!is_local_tree_id(r, id) || (dm_gaddr_offset(id) & SLOT_MASK) != s ||
			!dm_tree_name_valid(&e->name))
		{
			rep.entries_bad++;
			continue;
		}
		trees++;
		if (((dm_gaddr_offset(id) >> SLOT_BITS) & SEQ_MASK) > max_seq)
			max_seq = (dm_gaddr_offset(id) >> SLOT_BITS) & SEQ_MASK;
	}
	if (rep.entries_bad)
	{
		if (out)
			*out = rep;
		return DM_ERR_CORRUPT;
	}

	for (uint64_t i = 0; i < r->sb->nchunks; i++)
	{
		dm_chunk_desc *d = &r->chunks[i];

		if (d->owner == 0)
		{
			if (d->used != 0 || d->free_head != 0 || d->alloc_unix_ns != 0)
			{
				memset(d, 0, sizeof(*d));
				rep.chunks_cleared++;
			}
			continue;
		}
		if (is_local_tree_id(r, d->owner) && dm_region_entry_of_tree(r, d->owner) == NULL)
		{
			dm_region_release_chunk(r, i);
			rep.chunks_orphaned++;
			continue;
		}
		if (d->used == 0)
		{
			dm_region_release_chunk(r, i);
			rep.chunks_unused++;
			continue;
		}
		if (d->used > cs || d->used % DM_SLAB_ALIGN != 0)
		{
			/* no store of ours makes this: treat the whole chunk as carved */
			d->used = cs;
			d->free_head = 0;
			rep.lists_dropped++;
			continue;
		}
		if (d->free_head != 0 && !dm_region_walk_list(r, i, 1, NULL, NULL, NULL))
			rep.lists_dropped++;
	}

	/* derived counters, after the releases above */
	{
		uint64_t	before = 0,
					after = 0;

		for (uint64_t s = 0; s < r->sb->catalog_capacity; s++)
		{
			before += r->catalog[s].chunks * (s + 1);
			r->catalog[s].chunks = 0;
		}
		for (uint64_t i = 0; i < r->sb->nchunks; i++)
		{
			dm_cat_entry *e;

			if (r->chunks[i].owner == 0)
				continue;
			used_chunks++;
			if ((e = dm_region_entry_of_tree(r, r->chunks[i].owner)) != NULL)
				e->chunks++;
		}
		for (uint64_t s = 0; s < r->sb->catalog_capacity; s++)
			after += r->catalog[s].chunks * (s + 1);
		if (before != after)
			rep.counters_fixed++;
	}
	if (r->sb->chunks_used != used_chunks)
	{
		r->sb->chunks_used = used_chunks;
		rep.counters_fixed++;
	}
	if (r->sb->trees != trees)
	{
		r->sb->trees = trees;
		rep.counters_fixed++;
	}
	if ((r->sb->next_tree_seq & SEQ_MASK) <= max_seq)
	{
		r->sb->next_tree_seq = max_seq + 1;
		rep.counters_fixed++;
	}
	if (out)
		*out = rep;
	return DM_OK;
}
