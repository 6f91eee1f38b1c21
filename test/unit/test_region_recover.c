/*
 * test_region_recover.c — unit tests of dm_region_recover
 * (src/dm/dm_region_recover.c): the states a memnode killed between two of
 * its stores can leave the allocator and catalog in — a drop cut after
 * unpublishing, a chunk allocation cut after the owner store, a release
 * cut after clearing the owner, a damaged list of returned ranges, stale
 * counters — are each put into a region by hand, and after recovery the
 * region must be consistent: counters exact, orphaned chunks free, no
 * range handed out twice (every later allocation is checked against the
 * live ones), other memnodes' and raw owners' chunks untouched, and a
 * consistent region left exactly as it was.  A catalog entry no memnode
 * could have written makes the region unusable.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_region.h"
#include "testutil.h"

#define REGION_SIZE (UINT64_C(32) << 20)
#define CHUNK (UINT64_C(1) << 20)
#define NODE_ID 9

static uint8_t *base;
static uint8_t *snapshot;

static int
fresh(dm_region *r)
{
	memset(base, 0xCC, REGION_SIZE);
	return dm_region_format(r, base, REGION_SIZE, NODE_ID, CHUNK, 16, 0, 1234, 1);
}

static int
counters_exact(dm_region *r)
{
	uint64_t	used = 0,
				trees = 0;

	for (uint64_t i = 0; i < r->sb->nchunks; i++)
		used += r->chunks[i].owner != 0;
	for (uint64_t s = 0; s < r->sb->catalog_capacity; s++)
		if (r->catalog[s].tree_id)
		{
			uint64_t	n = 0;

			trees++;
			for (uint64_t i = 0; i < r->sb->nchunks; i++)
				n += r->chunks[i].owner == r->catalog[s].tree_id;
			if (n != r->catalog[s].chunks)
				return 0;
		}
	return used == r->sb->chunks_used && trees == r->sb->trees;
}

static dm_tree_info
mktree(dm_region *r, const char *name)
{
	dm_tree_name n;
	dm_tree_info ti;

	dm_tree_name_named(&n, name);
	memset(&ti, 0, sizeof(ti));
	if (dm_region_cat_create(r, &n, 1, 1, &ti) != DM_OK)
		tap_diag("cat_create %s failed", name);
	return ti;
}

static void
test_consistent_untouched(void)
{
	dm_region	r;
	dm_region_recovery rec;
	dm_tree_info a = {0};
	uint64_t	off;

	fresh(&r);
	a = mktree(&r, "a");
	for (int i = 0; i < 10; i++)
		dm_region_slab_alloc(&r, a.tree_id, 1024, 1, &off);
	dm_region_slab_free(&r, a.tree_id, off - 2048, 1024);	/* a returned range in the middle */
	dm_region_chunk_alloc(&r, 0x5555, 1, &off);	/* a raw owner, not a tree id */
	dm_region_chunk_alloc(&r, dm_gaddr_make(NODE_ID + 1, (UINT64_C(3) << 20) | 2), 1, &off);	/* another memnode's tree */
	memcpy(snapshot, base, r.sb->data_off);
	CHECK_STATUS(dm_region_recover(&r, &rec), DM_OK, "recover a consistent region");
	CHECK(rec.chunks_orphaned + rec.chunks_unused + rec.chunks_cleared + rec.lists_dropped +
		  rec.counters_fixed == 0, "it finds nothing to repair");
	CHECK(memcmp(snapshot, base, r.sb->data_off) == 0, "and changes no byte of the metadata");
}

static void
test_drop_cut(void)
{
	dm_region	r;
	dm_region_recovery rec;
	dm_tree_info a,
				b;
	uint64_t	off,
				free_before;
	dm_tree_name na;

	fresh(&r);
	a = mktree(&r, "a");
	b = mktree(&r, "b");
	for (int i = 0; i < 3; i++)
		dm_region_chunk_alloc(&r, a.tree_id, 1, &off);
	dm_region_chunk_alloc(&r, b.tree_id, 1, &off);
	dm_region_chunk_alloc(&r, 0x5555, 1, &off);
	free_before = r.sb->nchunks - r.sb->chunks_used;
	/* cat_drop killed right after unpublishing: the entry is gone, its chunks are not */
	__atomic_store_n(&r.catalog[a.slot].tree_id, 0, __ATOMIC_RELEASE);
	CHECK_STATUS(dm_region_recover(&r, &rec), DM_OK, "recover after a drop cut short");
	CHECK(rec.chunks_orphaned == 3, "the dropped tree's 3 chunks are freed (%llu)",
		  (unsigned long long) rec.chunks_orphaned);
	CHECK(r.sb->nchunks - r.sb->chunks_used == free_before + 3 && counters_exact(&r),
		  "chunks_used, trees and per-tree counts exact");
	CHECK(r.catalog[b.slot].chunks == 1 && r.catalog[b.slot].tree_id == b.tree_id, "the other tree keeps its chunk");
	dm_tree_name_named(&na, "a");
	{
		dm_tree_info ti;

		CHECK_STATUS(dm_region_cat_open(&r, &na, &ti), DM_ERR_NOTFOUND, "the dropped tree stays dropped");
	}
	{
		int			raw = 0;

		for (uint64_t i = 0; i < r.sb->nchunks; i++)
			raw += r.chunks[i].owner == 0x5555;
		CHECK(raw == 1, "a raw owner's chunk is left alone");
	}
}

static void
test_alloc_release_cut(void)
{
	dm_region	r;
	dm_region_recovery rec;
	dm_tree_info a;
	uint64_t	off;

	fresh(&r);
	a = mktree(&r, "a");
	dm_region_chunk_alloc(&r, a.tree_id, 1, &off);
	/* chunk_alloc killed after storing the owner, before the bump pointer */
	r.chunks[5].owner = a.tree_id;
	r.chunks[5].used = 0;
	/* release killed after clearing the owner */
	r.chunks[7].owner = 0;
	r.chunks[7].used = 4096;
	r.chunks[7].free_head = r.sb->data_off + 7 * CHUNK + 512;
	r.chunks[7].alloc_unix_ns = 99;
	CHECK_STATUS(dm_region_recover(&r, &rec), DM_OK, "recover after cut-short allocation and release");
	CHECK(rec.chunks_unused == 1 && r.chunks[5].owner == 0, "the cut-short allocation is undone");
	CHECK(rec.chunks_cleared == 1 && r.chunks[7].used == 0 && r.chunks[7].free_head == 0,
		  "the cut-short release's stale fields are cleared");
	CHECK(counters_exact(&r) && r.catalog[a.slot].chunks == 1, "counters exact");
}

/* Allocate slabs until none is left; every one must miss every live range. */
static int
no_double_handout(dm_region *r, uint64_t owner, const uint64_t *live, int nlive, uint32_t size)
{
	uint64_t	got[4096];
	int			n = 0;

	while (n < 4096 && dm_region_slab_alloc(r, owner, size, 1, &got[n]) == DM_OK)
	{
		for (int k = 0; k < nlive; k++)
			if (got[n] < live[k] + size && live[k] < got[n] + size)
				return 0;
		for (int k = 0; k < n; k++)
			if (got[n] < got[k] + size && got[k] < got[n] + size)
				return 0;
		n++;
	}
	return n > 0;
}

static void
test_damaged_list(void)
{
	dm_region	r;
	dm_region_recovery rec;
	dm_tree_info a;
	uint64_t	offs[64],
				live[64];
	int			nlive = 0;
	dm_free_range *f;

	fresh(&r);
	a = mktree(&r, "a");
	for (int i = 0; i < 64; i++)
		dm_region_slab_alloc(&r, a.tree_id, 1024, 1, &offs[i]);
	/* return every other node: a list of 31 ranges (the last one lowers the bump) */
	for (int i = 0; i < 64; i++)
		if (i % 2 == 0)
			dm_region_slab_free(&r, a.tree_id, offs[i], 1024);
		else
			live[nlive++] = offs[i];
	/* a merge killed between its two stores, done the wrong way round: size grown over the next range */
	f = (dm_free_range *) (base + offs[10]);
	f->size += 2048;
	CHECK_STATUS(dm_region_recover(&r, &rec), DM_OK, "recover with a damaged free list");
	CHECK(rec.lists_dropped == 1, "the damaged list is dropped");
	CHECK(no_double_handout(&r, a.tree_id, live, nlive, 1024),
		  "no later allocation overlaps a live node or another allocation");
}

static void
test_counters_and_ids(void)
{
	dm_region	r;
	dm_region_recovery rec;
	dm_tree_info a,
				b,
				c;

	fresh(&r);
	a = mktree(&r, "a");
	b = mktree(&r, "b");
	r.sb->trees = 7;
	r.sb->chunks_used = 3;
	r.catalog[a.slot].chunks = 5;
	r.sb->next_tree_seq = 1;	/* as if the ++ before a publish was lost */
	CHECK_STATUS(dm_region_recover(&r, &rec), DM_OK, "recover stale counters");
	CHECK(counters_exact(&r) && rec.counters_fixed >= 3, "counters recomputed (%llu fixes)",
		  (unsigned long long) rec.counters_fixed);
	c = mktree(&r, "c");
	CHECK(c.tree_id != a.tree_id && c.tree_id != b.tree_id && c.tree_id != 0,
		  "a tree created afterwards gets an id never handed out before");
	(void) b;
}

static void
test_bad_entry(void)
{
	dm_region	r;
	dm_region_recovery rec;
	dm_tree_info a;

	fresh(&r);
	a = mktree(&r, "a");
	r.catalog[a.slot + 1].tree_id = a.tree_id;	/* an id that names another slot */
	strcpy(r.catalog[a.slot + 1].name.name, "x");
	r.catalog[a.slot + 1].name.kind = DM_TREE_NAMED;
	CHECK_STATUS(dm_region_recover(&r, &rec), DM_ERR_CORRUPT, "a catalog entry no memnode wrote -> CORRUPT");
	CHECK(rec.entries_bad == 1, "one bad entry reported");
}

int
main(void)
{
	base = aligned_alloc(DM_REGION_ALIGN, REGION_SIZE);
	snapshot = malloc(REGION_SIZE);
	if (!base || !snapshot)
		return 1;
	test_consistent_untouched();
	test_drop_cut();
	test_alloc_release_cut();
	test_damaged_list();
	test_counters_and_ids();
	test_bad_entry();
	free(base);
	free(snapshot);
	return tap_done();
}
