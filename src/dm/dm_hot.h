/*
 * dm_hot.h — the table behind the hotspot buffer (dm_tree_hot.c; docs/
 * design.md §5.1 "Speculative reads"): set-associative slots of (tree tag,
 * key, leaf address, leaf version, leaf checksum, answer), read and written
 * by many processes at once without a lock.  The table is either a
 * handle's own (process memory) or a compute instance's, inside the node
 * cache's shared memory (dm_cache_hotspot): the same code serves both.
 *
 * Why every slot is a seqlock: a speculative read believes the answer of a
 * slot whose leaf version and checksum still match, so a slot read half
 * from one write and half from another (key of one, leaf and version of
 * another key's unchanged leaf, tid of a third) would pass the leaf's check
 * and return a wrong tid.  Only whole tuples may be used: dm_hot_find
 * gives a copy read between two equal even sequence words or nothing.
 * The frequency word (replacement) is outside the tuple and racy on
 * purpose: a lost count costs hits, never an answer.
 */
#ifndef DM_HOT_H
#define DM_HOT_H

#include <stddef.h>
#include <stdint.h>

#include "dm_types.h"

#define DM_HOT_WAYS 4
#define DM_HOT_FREQ_MAX 15

/* One slot: a cache line.  All words are accessed with atomics only. */
typedef struct dm_hot_slot
{
	uint64_t	seq;			/* even: stable; odd: a writer is changing the tuple */
	uint64_t	tag;			/* the tree (dm_cache_tree_tag) */
	uint64_t	key;
	uint64_t	addr;			/* the leaf that answered; 0 = a free way */
	uint64_t	version;		/* its clean version then (DM_VERSION_DIRTY: do not speculate) */
	uint64_t	checksum;		/* its checksum word at that version */
	uint64_t	tid;			/* the key's tid when ntids = 1 */
	uint32_t	ntids;			/* 0 or 1 */
	uint32_t	freq;			/* hits, aged by newcomers: outside the seqlock */
} dm_hot_slot;

/* A consistent copy of a slot's tuple. */
typedef struct dm_hot_ent
{
	uint64_t	tag;
	uint64_t	key;
	dm_gaddr	addr;
	uint64_t	version;
	uint64_t	checksum;
	uint64_t	tid;
	uint32_t	ntids;
	uint32_t	way;			/* slot index in the table (for dm_hot_hit, dm_hot_unpin) */
} dm_hot_ent;

/* A table: nsets sets of DM_HOT_WAYS slots (private or in shared memory). */
typedef struct dm_hot_table
{
	dm_hot_slot *slots;
	uint32_t	nsets;
} dm_hot_table;

/* Sets for a table of `entries` keys (rounded up to whole sets). */
static inline uint32_t
dm_hot_sets_for(uint32_t entries)
{
	return (uint32_t) (((uint64_t) entries + DM_HOT_WAYS - 1) / DM_HOT_WAYS);
}

/*
 * The key's tuple of tree `tag` in *out (1), or 0: not there, or being
 * written (the reader does not wait: a miss costs one ordinary lookup).
 */
extern int	dm_hot_find(dm_hot_table *ht, uint64_t tag, uint64_t key, dm_hot_ent *out);
/* Count a hit of the slot out->way (racy). */
extern void dm_hot_hit(dm_hot_table *ht, const dm_hot_ent *e);
/*
 * Remember (tag, key) -> leaf addr at clean version/checksum, answer n
 * tids (n <= 1; tid when 1).  A slot another writer holds is left alone
 * (the pin is lost: only a performance matter).
 */
extern void dm_hot_store(dm_hot_table *ht, uint64_t tag, uint64_t key, dm_gaddr addr, uint64_t version,
						 uint64_t checksum, uint32_t n, uint64_t tid);
/*
 * Stop speculating on the slot of *e if it still holds e's tuple (its leaf
 * changed): its version becomes mark (a value no leaf version matches:
 * the tree's DM_VERSION_DIRTY), its way and count stay.
 */
extern void dm_hot_unpin(dm_hot_table *ht, const dm_hot_ent *e, uint64_t mark);
/* Forget (tag, key). */
extern void dm_hot_forget(dm_hot_table *ht, uint64_t tag, uint64_t key);

/*
 * Tests only: called by a writer after each word of a tuple it stores
 * (word 0..5: tag, key, addr, version, checksum, tid+ntids), with the slot;
 * NULL normally.  Lets a test stop a writer half way and look.
 */
extern void (*dm_hot_test_store_hook) (dm_hot_slot *s, int word);
/*
 * Tests only: called by a reader after each word of a tuple it copies
 * (word 0..4: tag, key, addr, version, checksum), before the sequence word
 * is read again; NULL normally.  Lets a test run a whole write in the
 * middle of a copy, which only that second sequence read can catch.
 */
extern void (*dm_hot_test_read_hook) (dm_hot_slot *s, int word);

#endif							/* DM_HOT_H */
