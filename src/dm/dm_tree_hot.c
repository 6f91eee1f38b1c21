/*
 * dm_tree_hot.c — the hotspot buffer of hopscotch lookups (docs/design.md
 * §5.1 "Speculative reads"; CHIME §4.3): the keys looked up often, each
 * with the leaf that answered it, the leaf's version and checksum words as
 * they were when it answered, and its answer (no tid or one).  A lookup of
 * such a key reads only those two words (16 bytes, one READ; before the
 * descent when no cache holds leaves, else in place of the neighbourhood
 * read); if the version is the same clean value and the checksum too, the
 * leaf is byte for byte the image that gave the answer, so the answer
 * stands (dm_tree_hop.c says why).  Anything else falls back to the
 * neighbourhood read, which pins the key again.
 *
 * Whose buffer: a handle that uses a node cache speculates with the
 * cache's buffer (dm_cache_hotspot), one per compute instance as in CHIME
 * (per compute node there): what one PostgreSQL backend or benchmark
 * process pinned, every other process of the instance hits, and the
 * instance pays the memory once.  Entries carry the tree's cache tag, so
 * trees (and a tree's incarnations) sharing it never answer for each
 * other.  A handle without a cache keeps its own buffer, sized by
 * dm_tree_set_hotspot.  Either way the table is dm_hot.c's: per-slot
 * seqlocks, so a tuple is used whole or not at all.
 *
 * Why the answer and not a bucket position, as CHIME keeps: our entries
 * are (key, tid) pairs that never change in place, and a lookup must
 * return every tid of the key, so reading one bucket could not prove there
 * is no second tid; the unchanged version proves it, and then the bucket
 * holds nothing the buffer does not already know.
 */
#include <stdlib.h>
#include <string.h>

#include "dm_tree_int.h"

int
dm_tree_set_hotspot(dm_tree *t, int entries)
{
	if (entries < 0 || entries > (1 << 24))
		return dm_tree_fail(t, DM_ERR_INVALID, "hotspot buffer of %d entries: 0..16777216", entries);
	free(t->hot.slots);
	t->hot.slots = NULL;
	t->hot.nsets = dm_hot_sets_for((uint32_t) entries);
	return DM_OK;
}

size_t
dm_tree_hotspot_bytes(const dm_tree *t)
{
	return (size_t) t->hot.nsets * DM_HOT_WAYS * sizeof(dm_hot_slot);
}

void
dm_hot_free(dm_tree *t)
{
	free(t->hot.slots);
	t->hot.slots = NULL;
}

dm_hot_table *
dm_tree_hot_table(dm_tree *t, int create, uint64_t *tag)
{
	if (t->cache)
	{
		/* the instance's buffer (possibly none): a handle with a cache never keeps its own */
		t->hot_shared.slots = dm_cache_hotspot(t->cache, &t->hot_shared.nsets);
		*tag = t->ctag;
		return t->hot_shared.nsets ? &t->hot_shared : NULL;
	}
	*tag = t->info.tree_id;
	if (t->hot.nsets == 0)
		return NULL;
	if (t->hot.slots == NULL &&
		(!create || (t->hot.slots = calloc((size_t) t->hot.nsets * DM_HOT_WAYS, sizeof(dm_hot_slot))) == NULL))
		return NULL;			/* not used yet, or no memory: no speculation, nothing else changes */
	return &t->hot;
}

void
dm_tree_hot_put(dm_tree *t, uint64_t key, dm_gaddr addr, uint64_t version, uint64_t checksum,
				const uint64_t *tids, int n)
{
	uint64_t	tag;
	dm_hot_table *ht = dm_tree_hot_table(t, 1, &tag);

	if (ht == NULL)
		return;
	/* only a clean version can pin an image; more than one tid is not kept */
	if (n > 1 || (version & DM_VERSION_DIRTY))
		dm_hot_forget(ht, tag, key);
	else
		dm_hot_store(ht, tag, key, addr, version, checksum, (uint32_t) n, n == 1 ? tids[0] : 0);
}
