/*
 * dm_tree_hot.c — the hotspot buffer of a handle on a tree of hopscotch
 * leaves (docs/design.md §5.1 "Speculative reads"; CHIME §4.3): a small
 * set-associative table of the keys this handle looked up often, each with
 * the leaf that answered it, the leaf's version and checksum words as they
 * were when it answered, and its answer (no tid or one).  A lookup of such
 * a key reads only those two words (16 bytes, one READ; before the descent
 * when no cache holds leaves, else in place of the neighbourhood read); if
 * the version is the same clean value and the checksum too, the leaf is
 * byte for byte the image that gave the answer, so the answer stands
 * (dm_tree_hop.c says why).  Anything else falls back to the neighbourhood
 * read, which pins the key again.
 *
 * Why the answer and not a bucket position, as CHIME keeps: our entries
 * are (key, tid) pairs that never change in place, and a lookup must
 * return every tid of the key, so reading one bucket could not prove there
 * is no second tid; the unchanged version proves it, and then the bucket
 * holds nothing the buffer does not already know.
 *
 * Replacement is frequency-based (CHIME uses LFU): a hit counts up (to
 * HOT_FREQ_MAX); a key that wants a way in a full set ages the set's
 * counts by one and takes the way of a key whose count reached zero, so a
 * one-off lookup cannot push out a hot key.  The table is the handle's own
 * (no locking); its memory is allocated on the first pin.
 */
#include <stdlib.h>
#include <string.h>

#include "dm_tree_int.h"

#define HOT_WAYS 4
#define HOT_FREQ_MAX 15

static uint32_t
hot_set(const dm_tree *t, uint64_t key)
{
	uint64_t	x = key * UINT64_C(0x9E3779B97F4A7C15);

	return (uint32_t) (((x >> 32) * t->hot_sets) >> 32);
}

int
dm_tree_set_hotspot(dm_tree *t, int entries)
{
	if (entries < 0 || entries > (1 << 24))
		return dm_tree_fail(t, DM_ERR_INVALID, "hotspot buffer of %d entries: 0..16777216", entries);
	free(t->hot);
	t->hot = NULL;
	t->hot_sets = 0;
	if (entries == 0)
		return DM_OK;
	t->hot_sets = (uint32_t) (entries + HOT_WAYS - 1) / HOT_WAYS;
	return DM_OK;
}

size_t
dm_tree_hotspot_bytes(const dm_tree *t)
{
	return (size_t) t->hot_sets * HOT_WAYS * sizeof(dm_hot_ent);
}

void
dm_hot_free(dm_tree *t)
{
	free(t->hot);
	t->hot = NULL;
}

dm_hot_ent *
dm_hot_get(dm_tree *t, uint64_t key)
{
	dm_hot_ent *s;

	if (t->hot == NULL)
		return NULL;
	s = &t->hot[(size_t) hot_set(t, key) * HOT_WAYS];
	for (int w = 0; w < HOT_WAYS; w++)
		if (s[w].addr != 0 && s[w].key == key)
			return &s[w];
	return NULL;
}

void
dm_hot_hit(dm_hot_ent *he)
{
	if (he->freq < HOT_FREQ_MAX)
		he->freq++;
}

void
dm_hot_drop(dm_tree *t, uint64_t key)
{
	dm_hot_ent *he = dm_hot_get(t, key);

	if (he)
		he->addr = 0;
}

void
dm_hot_put(dm_tree *t, uint64_t key, dm_gaddr addr, uint64_t version, uint64_t checksum,
		   const uint64_t *tids, int n)
{
	dm_hot_ent *s,
			   *he;

	if (t->hot_sets == 0)
		return;
	/* only a clean version can pin an image; more than one tid is not kept */
	if (n > 1 || (version & DM_VERSION_DIRTY))
	{
		dm_hot_drop(t, key);
		return;
	}
	if (t->hot == NULL &&
		(t->hot = calloc((size_t) t->hot_sets * HOT_WAYS, sizeof(dm_hot_ent))) == NULL)
		return;					/* no memory: no speculation, nothing else changes */
	s = &t->hot[(size_t) hot_set(t, key) * HOT_WAYS];
	he = NULL;
	for (int w = 0; w < HOT_WAYS && he == NULL; w++)
		if (s[w].addr != 0 && s[w].key == key)
			he = &s[w];
	for (int w = 0; w < HOT_WAYS && he == NULL; w++)
		if (s[w].addr == 0)
		{
			he = &s[w];
			he->freq = 0;
		}
	if (he == NULL)
	{
		/* a full set: age it; a way whose count is spent goes to the newcomer */
		for (int w = 0; w < HOT_WAYS; w++)
		{
			if (s[w].freq > 0)
				s[w].freq--;
			else if (he == NULL)
				he = &s[w];
		}
		if (he == NULL)
			return;
		he->freq = 0;
	}
	he->key = key;
	he->addr = addr;
	he->version = version;
	he->checksum = checksum;
	he->ntids = (uint16_t) n;
	he->tid = n == 1 ? tids[0] : 0;
	dm_hot_hit(he);
}
