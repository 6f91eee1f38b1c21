/*
 * test_region.c — unit tests of a memory node's region (src/dm/dm_region.c)
 * on a plain aligned buffer: layout/format and attach validation, the chunk
 * allocator, slabs and the reuse of returned ranges (checked against a
 * model under random use), the tree catalog, tree ids and addresses, and
 * the bounds checks that decide which one-sided ops a client may perform where.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_region.h"
#include "testutil.h"

#define REGION_SIZE (UINT64_C(64) << 20)
#define CHUNK_SIZE (UINT64_C(1) << 20)
#define CAT_CAP 16
#define NODE_ID 5
#define INCARNATION UINT64_C(0x0123456789ABCDEF)

static uint8_t *base;

static int
all_bytes(const uint8_t *p, uint64_t n, uint8_t v)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static int
fresh(dm_region *r)
{
	/*
	 * Garbage first: format must not rely on zeroed memory (a reused
	 * hugepage or shm file is not), and alloc must zero what it hands out.
	 */
	memset(base, 0xCC, REGION_SIZE);
	return dm_region_format(r, base, REGION_SIZE, NODE_ID, CHUNK_SIZE, CAT_CAP, 0,
							INCARNATION, 1000);
}

static void
test_format_attach(void)
{
	dm_region	r,
				r2;
	dm_superblock *sb;
	uint64_t	saved;

	CHECK_STATUS(fresh(&r), DM_OK, "format 64 MiB, 1 MiB chunks, 16 catalog entries");
	sb = r.sb;
	CHECK(sb == (dm_superblock *) base && r.base == base, "superblock at offset 0");
	CHECK(sb->magic == DM_SB_MAGIC && sb->format_version == DM_FORMAT_VERSION,
		  "magic and format version set");
	CHECK(sb->node_id == NODE_ID && r.node_id == NODE_ID, "node id set");
	CHECK(sb->region_size == REGION_SIZE && r.size == REGION_SIZE, "region size set");
	CHECK(sb->incarnation == INCARNATION, "incarnation set");
	CHECK(sb->chunk_size == CHUNK_SIZE, "chunk size kept");
	CHECK(sb->catalog_capacity == CAT_CAP, "catalog capacity kept");
	CHECK(sb->created_unix_ns == 1000, "created time set");
	CHECK(sb->state == DM_SB_LIVE, "state LIVE");
	CHECK(sb->chunks_used == 0 && sb->trees == 0, "no chunks used, no trees");
	CHECK(sb->chunk_table_off >= sizeof(dm_superblock) &&
		  sb->catalog_off >= sb->chunk_table_off + sb->nchunks * sizeof(dm_chunk_desc) &&
		  sb->data_off >= sb->catalog_off + CAT_CAP * DM_CAT_ENTRY_SIZE,
		  "superblock, chunk table, catalog, data area do not overlap");
	CHECK(sb->data_off % DM_REGION_ALIGN == 0, "data area 2 MiB aligned (data_off %llu)",
		  (unsigned long long) sb->data_off);
	CHECK(sb->nchunks > 0 && sb->data_off + sb->nchunks * sb->chunk_size <= REGION_SIZE &&
		  sb->data_off + (sb->nchunks + 1) * sb->chunk_size > REGION_SIZE,
		  "nchunks (%llu) fills the data area", (unsigned long long) sb->nchunks);
	CHECK(r.chunks == (dm_chunk_desc *) (base + sb->chunk_table_off) &&
		  r.catalog == (dm_cat_entry *) (base + sb->catalog_off), "region pointers bound");
	CHECK(all_bytes((uint8_t *) r.chunks, sb->nchunks * sizeof(dm_chunk_desc), 0),
		  "chunk table zeroed over garbage");
	CHECK(all_bytes((uint8_t *) r.catalog, CAT_CAP * DM_CAT_ENTRY_SIZE, 0),
		  "catalog zeroed over garbage");
	tap_diag("layout: chunk_table_off=%llu catalog_off=%llu data_off=%llu nchunks=%llu",
			 (unsigned long long) sb->chunk_table_off, (unsigned long long) sb->catalog_off,
			 (unsigned long long) sb->data_off, (unsigned long long) sb->nchunks);

	/* Invalid format arguments. */
	CHECK_STATUS(dm_region_format(&r2, base, REGION_SIZE, NODE_ID, 4096, CAT_CAP, 0, 1, 0),
				 DM_ERR_INVALID, "chunk size below DM_CHUNK_MIN refused");
	CHECK_STATUS(dm_region_format(&r2, base, REGION_SIZE, NODE_ID, CHUNK_SIZE, 0, 0, 1, 0),
				 DM_ERR_INVALID, "catalog capacity 0 refused");
	CHECK_STATUS(dm_region_format(&r2, base, REGION_SIZE, DM_NODE_ID_MAX + 1, CHUNK_SIZE, CAT_CAP, 0, 1, 0),
				 DM_ERR_INVALID, "node id > 15 bits refused");
	CHECK_STATUS(dm_region_format(&r2, base, REGION_SIZE, NODE_ID, REGION_SIZE, CAT_CAP, 0, 1, 0),
				 DM_ERR_INVALID, "chunk size = region size (no chunk fits) refused");
	CHECK_STATUS(dm_region_format(&r2, base + 8, REGION_SIZE - 4096, NODE_ID, CHUNK_SIZE, CAT_CAP, 0, 1, 0),
				 DM_ERR_INVALID, "misaligned base refused");
	/* The refused formats must not have touched the formatted region. */
	CHECK(sb->magic == DM_SB_MAGIC && sb->incarnation == INCARNATION, "refused format left region intact");

	/* Attach to what we formatted. */
	memset(&r2, 0, sizeof(r2));
	CHECK_STATUS(dm_region_attach(&r2, base, REGION_SIZE), DM_OK, "attach to formatted region");
	CHECK(r2.sb == sb && r2.catalog == r.catalog && r2.chunks == r.chunks && r2.node_id == NODE_ID &&
		  r2.size == REGION_SIZE, "attach binds the same layout");

	saved = sb->magic;
	sb->magic ^= 0x100;
	CHECK_STATUS(dm_region_attach(&r2, base, REGION_SIZE), DM_ERR_CORRUPT, "attach: bad magic -> CORRUPT");
	sb->magic = saved;
	sb->format_version++;
	CHECK_STATUS(dm_region_attach(&r2, base, REGION_SIZE), DM_ERR_VERSION, "attach: other format version -> VERSION");
	sb->format_version--;
	CHECK_STATUS(dm_region_attach(&r2, base, REGION_SIZE / 2), DM_ERR_CORRUPT,
				 "attach: size differs from superblock -> CORRUPT");
	saved = sb->data_off;
	sb->data_off += DM_REGION_ALIGN;
	CHECK_STATUS(dm_region_attach(&r2, base, REGION_SIZE), DM_ERR_CORRUPT, "attach: inconsistent data_off -> CORRUPT");
	sb->data_off = saved;
	saved = sb->nchunks;
	sb->nchunks = UINT64_C(1) << 40;
	CHECK_STATUS(dm_region_attach(&r2, base, REGION_SIZE), DM_ERR_CORRUPT, "attach: huge nchunks -> CORRUPT");
	sb->nchunks = saved;
	saved = sb->catalog_capacity;
	sb->catalog_capacity = UINT64_C(1) << 40;
	CHECK_STATUS(dm_region_attach(&r2, base, REGION_SIZE), DM_ERR_CORRUPT, "attach: huge catalog -> CORRUPT");
	sb->catalog_capacity = saved;
	saved = sb->chunk_size;
	sb->chunk_size = 0;
	CHECK_STATUS(dm_region_attach(&r2, base, REGION_SIZE), DM_ERR_CORRUPT, "attach: chunk size 0 -> CORRUPT");
	sb->chunk_size = saved;
	CHECK_STATUS(dm_region_attach(&r2, base, REGION_SIZE), DM_OK, "attach works again once repaired");

	/* Size not a multiple of 2 MiB is rounded down. */
	CHECK_STATUS(dm_region_format(&r2, base, REGION_SIZE - 12345, NODE_ID, CHUNK_SIZE, CAT_CAP, 0, 1, 0),
				 DM_OK, "format of an unaligned size");
	CHECK(r2.size == REGION_SIZE - DM_REGION_ALIGN && r2.sb->region_size == r2.size,
		  "size rounded down to 2 MiB (%llu)", (unsigned long long) r2.size);
	/* Chunk size is rounded up to a multiple of DM_CHUNK_MIN. */
	CHECK_STATUS(dm_region_format(&r2, base, REGION_SIZE, NODE_ID, DM_CHUNK_MIN + 1, CAT_CAP, 0, 1, 0),
				 DM_OK, "format with chunk size 64 KiB + 1");
	CHECK(r2.sb->chunk_size == 2 * DM_CHUNK_MIN, "chunk size rounded up to 128 KiB");
}

static void
test_alloc(void)
{
	dm_region	r;
	uint64_t	n,
				off,
				offs[128],
				i,
				j;
	int			ok_range = 1,
				ok_distinct = 1,
				ok_zero = 1,
				rc = DM_OK;

	CHECK_STATUS(fresh(&r), DM_OK, "format for allocator tests");
	n = r.sb->nchunks;
	if (n > 128)
	{
		CHECK(0, "test assumes <= 128 chunks");
		return;
	}

	CHECK_STATUS(dm_region_chunk_alloc(&r, 0, 1, &off), DM_ERR_INVALID, "owner 0 refused");

	for (i = 0; i < n; i++)
	{
		rc = dm_region_chunk_alloc(&r, 100 + i % 3, 42, &offs[i]);
		if (rc != DM_OK)
			break;
		if (offs[i] < r.sb->data_off || offs[i] + CHUNK_SIZE > REGION_SIZE ||
			(offs[i] - r.sb->data_off) % CHUNK_SIZE != 0)
			ok_range = 0;
		for (j = 0; j < i; j++)
			if (offs[j] == offs[i])
				ok_distinct = 0;
		if (!all_bytes(base + offs[i], CHUNK_SIZE, 0))
			ok_zero = 0;
		/* dirty it, so reuse must zero again */
		memset(base + offs[i], 0xEE, CHUNK_SIZE);
	}
	CHECK_STATUS(rc, DM_OK, "all %llu chunks allocated", (unsigned long long) n);
	CHECK(ok_range, "chunks are in the data area and chunk aligned");
	CHECK(ok_distinct, "chunks are distinct");
	CHECK(ok_zero, "chunks are zeroed when handed out (buffer was garbage)");
	CHECK(r.sb->chunks_used == n, "chunks_used = %llu", (unsigned long long) r.sb->chunks_used);
	CHECK(r.chunks[(offs[0] - r.sb->data_off) / CHUNK_SIZE].owner == 100 &&
		  r.chunks[(offs[0] - r.sb->data_off) / CHUNK_SIZE].alloc_unix_ns == 42,
		  "chunk table records owner and time");
	CHECK_STATUS(dm_region_chunk_alloc(&r, 7, 1, &off), DM_ERR_NOSPACE, "exhausted region -> NOSPACE");

	/* free + realloc reuses the freed chunk, zeroed again */
	CHECK_STATUS(dm_region_chunk_free(&r, offs[3]), DM_OK, "free one chunk");
	CHECK(r.sb->chunks_used == n - 1, "chunks_used decremented");
	CHECK_STATUS(dm_region_chunk_alloc(&r, 9, 1, &off), DM_OK, "alloc after free");
	CHECK(off == offs[3], "the freed chunk is reused");
	CHECK(all_bytes(base + off, CHUNK_SIZE, 0), "reused chunk zeroed again");
	CHECK_STATUS(dm_region_chunk_alloc(&r, 9, 1, &off), DM_ERR_NOSPACE, "full again");

	/* bad frees */
	CHECK_STATUS(dm_region_chunk_free(&r, offs[3] + 8), DM_ERR_INVALID, "free of a non-chunk offset refused");
	CHECK_STATUS(dm_region_chunk_free(&r, 0), DM_ERR_INVALID, "free of offset 0 refused");
	CHECK_STATUS(dm_region_chunk_free(&r, r.sb->catalog_off), DM_ERR_INVALID, "free inside the catalog refused");
	CHECK_STATUS(dm_region_chunk_free(&r, r.sb->data_off + n * CHUNK_SIZE), DM_ERR_RANGE,
				 "free past the last chunk -> RANGE");
	CHECK_STATUS(dm_region_chunk_free(&r, r.sb->data_off + (UINT64_C(1) << 40)), DM_ERR_RANGE,
				 "free far past the region -> RANGE");
	CHECK_STATUS(dm_region_chunk_free(&r, offs[5]), DM_OK, "free chunk 5");
	CHECK_STATUS(dm_region_chunk_free(&r, offs[5]), DM_ERR_NOTFOUND, "double free -> NOTFOUND");
	CHECK(r.sb->chunks_used == n - 1, "double free did not change chunks_used");

	/* free_owner frees exactly that owner's chunks */
	{
		uint64_t	own101 = 0,
					freed,
					left_other = 0;

		for (i = 0; i < r.sb->nchunks; i++)
			if (r.chunks[i].owner == 101)
				own101++;
		freed = dm_region_chunk_free_owner(&r, 101);
		CHECK(freed == own101 && freed > 0, "free_owner(101) freed %llu (owned %llu)",
			  (unsigned long long) freed, (unsigned long long) own101);
		for (i = 0; i < r.sb->nchunks; i++)
		{
			if (r.chunks[i].owner == 101)
				own101 = 9999;
			if (r.chunks[i].owner == 100 || r.chunks[i].owner == 102 || r.chunks[i].owner == 9)
				left_other++;
		}
		CHECK(own101 != 9999, "no chunk of 101 left");
		CHECK(left_other + freed + 1 == n, "other owners' chunks untouched (%llu left)",
			  (unsigned long long) left_other);
		CHECK(r.sb->chunks_used == left_other, "chunks_used consistent");
		CHECK(dm_region_chunk_free_owner(&r, 101) == 0, "second free_owner frees nothing");
		CHECK(dm_region_chunk_free_owner(&r, 0) == 0, "free_owner(0) frees nothing (0 = free marker)");
		CHECK(dm_region_chunk_free_owner(&r, 12345) == 0, "free_owner(unknown) frees nothing");
	}
}

static void
test_slab(void)
{
	dm_region	r;
	uint64_t	cs,
				a,
				b,
				c2,
				d,
				e,
				chunk_off,
				used0;

	CHECK_STATUS(fresh(&r), DM_OK, "format for slab tests");
	cs = r.sb->chunk_size;
	used0 = r.sb->chunks_used;
	CHECK_STATUS(dm_region_slab_alloc(&r, 0, 4096, 1, &a), DM_ERR_INVALID, "slab: owner 0 -> INVALID");
	CHECK_STATUS(dm_region_slab_alloc(&r, 50, 0, 1, &a), DM_ERR_INVALID, "slab: size 0 -> INVALID");
	CHECK_STATUS(dm_region_slab_alloc(&r, 50, 4000, 1, &a), DM_ERR_INVALID, "slab: size not a multiple of DM_SLAB_ALIGN -> INVALID");
	CHECK_STATUS(dm_region_slab_alloc(&r, 50, cs + DM_SLAB_ALIGN, 1, &a), DM_ERR_INVALID, "slab: larger than a chunk -> INVALID");
	CHECK(r.sb->chunks_used == used0, "slab: refused requests allocate nothing");

	CHECK_STATUS(dm_region_slab_alloc(&r, 50, 8192, 1, &a), DM_OK, "slab: first 8 KiB slab");
	CHECK((a - r.sb->data_off) % cs == 0, "slab: first slab starts a fresh chunk");
	CHECK(r.sb->chunks_used == used0 + 1, "slab: one chunk taken");
	CHECK(all_bytes(base + a, 8192, 0), "slab: zeroed (garbage before format)");
	chunk_off = a;
	CHECK_STATUS(dm_region_slab_alloc(&r, 50, 4096, 1, &b), DM_OK, "slab: second slab, same owner");
	CHECK(b == a + 8192, "slab: carved right after the first, in the same chunk");
	CHECK(r.sb->chunks_used == used0 + 1, "slab: still one chunk");
	CHECK_STATUS(dm_region_slab_alloc(&r, 51, 4096, 1, &c2), DM_OK, "slab: another owner");
	CHECK((c2 - r.sb->data_off) % cs == 0 && c2 != chunk_off, "slab: another owner gets its own chunk");
	/* fill owner 50's chunk exactly, then the next slab needs a new chunk */
	CHECK_STATUS(dm_region_slab_alloc(&r, 50, cs - 8192 - 4096, 1, &d), DM_OK, "slab: fill the rest of the chunk");
	CHECK(d == b + 4096 && d + (cs - 8192 - 4096) == chunk_off + cs, "slab: up to the chunk's end exactly");
	CHECK_STATUS(dm_region_slab_alloc(&r, 50, 4096, 1, &e), DM_OK, "slab: one more");
	CHECK((e - r.sb->data_off) % cs == 0 && e != chunk_off && e != c2, "slab: comes from a new chunk");
	CHECK_STATUS(dm_region_slab_alloc(&r, 50, cs, 1, &a), DM_OK, "slab: a whole-chunk slab");
	CHECK((a - r.sb->data_off) % cs == 0 && a != e, "slab: whole-chunk slab is a new chunk");
	/* whole chunks from chunk_alloc are never carved into */
	{
		uint64_t	whole,
					s2;

		CHECK_STATUS(dm_region_chunk_alloc(&r, 52, 1, &whole), DM_OK, "slab: owner 52 takes a whole chunk");
		CHECK_STATUS(dm_region_slab_alloc(&r, 52, 4096, 1, &s2), DM_OK, "slab: owner 52 slab");
		CHECK(s2 < whole || s2 >= whole + cs, "slab: not carved from the whole chunk");
	}
	CHECK(dm_region_chunk_free_owner(&r, 50) == 3, "slab: free_owner(50) frees its 3 chunks");
	CHECK(dm_region_chunk_free_owner(&r, 51) == 1 && dm_region_chunk_free_owner(&r, 52) == 2,
		  "slab: other owners' chunks freed separately");
	CHECK(r.sb->chunks_used == used0, "slab: everything freed");
	/* a freed slab chunk starts from zero use again */
	CHECK_STATUS(dm_region_slab_alloc(&r, 53, 4096, 1, &a), DM_OK, "slab: after free");
	CHECK((a - r.sb->data_off) % cs == 0, "slab: new owner starts at a chunk boundary");
	dm_region_chunk_free_owner(&r, 53);
}

/* Returned ranges: reuse, merging, the bump pointer, chunks given back, refusals. */
static void
test_slab_free(void)
{
	dm_region	r;
	uint64_t	cs,
				a[6],
				x,
				y,
				used0;
	const uint64_t n = 1024;	/* a 1 KiB node */

	CHECK_STATUS(fresh(&r), DM_OK, "format for slab free tests");
	cs = r.sb->chunk_size;
	used0 = r.sb->chunks_used;
	CHECK(dm_region_bytes_in_use(&r) == 0, "free: nothing in use after format");
	for (int i = 0; i < 6; i++)
		CHECK_STATUS(dm_region_slab_alloc(&r, 70, n, 1, &a[i]), DM_OK, "free: one-node slab %d", i);
	CHECK(a[5] == a[0] + 5 * n, "free: one-node slabs carved one after another");
	CHECK(dm_region_bytes_in_use(&r) == 6 * n, "free: 6 KiB in use");
	memset(base + a[0], 0xAB, 6 * n);	/* the client wrote nodes there */

	/* refusals: nothing may be handed out twice */
	CHECK_STATUS(dm_region_slab_free(&r, 71, a[1], n), DM_ERR_INVALID, "free: by another owner -> INVALID");
	CHECK_STATUS(dm_region_slab_free(&r, 0, a[1], n), DM_ERR_INVALID, "free: owner 0 -> INVALID");
	CHECK_STATUS(dm_region_slab_free(&r, 70, a[1] + 8, n), DM_ERR_INVALID, "free: misaligned -> INVALID");
	CHECK_STATUS(dm_region_slab_free(&r, 70, a[1], 1000), DM_ERR_INVALID, "free: odd size -> INVALID");
	CHECK_STATUS(dm_region_slab_free(&r, 70, a[5] + n, n), DM_ERR_INVALID, "free: beyond what was carved -> INVALID");
	CHECK_STATUS(dm_region_slab_free(&r, 70, r.sb->data_off - n, n), DM_ERR_INVALID, "free: below the data area -> INVALID");
	CHECK_STATUS(dm_region_slab_free(&r, 70, r.sb->data_off + r.sb->nchunks * cs, n), DM_ERR_RANGE,
				 "free: past the last chunk -> RANGE");

	CHECK_STATUS(dm_region_slab_free(&r, 70, a[1], n), DM_OK, "free: node 1 returned");
	CHECK_STATUS(dm_region_slab_free(&r, 70, a[1], n), DM_ERR_INVALID, "free: node 1 again -> INVALID (double free)");
	CHECK_STATUS(dm_region_slab_free(&r, 70, a[0], 2 * n), DM_ERR_INVALID, "free: a range overlapping a free one -> INVALID");
	CHECK(dm_region_bytes_in_use(&r) == 5 * n, "free: 5 KiB in use");
	{
		const dm_free_range *f = (const dm_free_range *) (base + a[1]);

		CHECK(f->magic == DM_FREE_MAGIC && f->zero == 0 && *(const uint64_t *) (base + a[1]) != 0,
			  "free: the returned node is no node any more (lock word set, magic word cleared)");
	}
	CHECK_STATUS(dm_region_slab_free(&r, 70, a[3], n), DM_OK, "free: node 3 returned");
	CHECK_STATUS(dm_region_slab_free(&r, 70, a[2], n), DM_OK, "free: node 2 returned (merges 1..3)");
	CHECK(r.chunks[(a[0] - r.sb->data_off) / cs].free_head == a[1] &&
		  ((dm_free_range *) (base + a[1]))->size == 3 * n && ((dm_free_range *) (base + a[1]))->next == 0,
		  "free: nodes 1, 2, 3 merged into one range");
	/* reuse: first fit, split, zeroed */
	CHECK_STATUS(dm_region_slab_alloc(&r, 70, 2 * n, 1, &x), DM_OK, "free: 2-node slab");
	CHECK(x == a[1] && all_bytes(base + x, 2 * n, 0), "free: comes from the returned range, zeroed");
	CHECK_STATUS(dm_region_slab_alloc(&r, 70, n, 1, &y), DM_OK, "free: 1-node slab");
	CHECK(y == a[3] && all_bytes(base + y, n, 0), "free: takes the rest of the returned range");
	CHECK_STATUS(dm_region_slab_alloc(&r, 70, n, 1, &y), DM_OK, "free: another 1-node slab");
	CHECK(y == a[5] + n, "free: nothing returned left: carved at the bump pointer");
	CHECK(dm_region_bytes_in_use(&r) == 7 * n, "free: 7 KiB in use");

	/* the bump pointer: a returned tail lowers it, merged ranges too */
	{
		dm_chunk_desc *d = &r.chunks[(a[0] - r.sb->data_off) / cs];

		CHECK_STATUS(dm_region_slab_free(&r, 70, a[4], n), DM_OK, "free: node 4");
		CHECK(d->used == 7 * n, "free: a range in the middle keeps the bump pointer");
		CHECK_STATUS(dm_region_slab_free(&r, 70, y, n), DM_OK, "free: the last node");
		CHECK(d->used == 6 * n, "free: the tail lowers the bump pointer");
		CHECK_STATUS(dm_region_slab_free(&r, 70, a[5], n), DM_OK, "free: node 5 (joins node 4 at the tail)");
		CHECK(d->used == 4 * n && d->free_head == 0, "free: bump pointer lowered past both, list empty");
		CHECK_STATUS(dm_region_slab_alloc(&r, 70, n, 1, &y), DM_OK, "free: carve again");
		CHECK(y == a[4] && all_bytes(base + y, n, 0), "free: carving over old contents zeroes them");
		CHECK_STATUS(dm_region_slab_free(&r, 70, y, n), DM_OK, "free: and back");
	}
	/* everything returned: the chunk goes back */
	CHECK_STATUS(dm_region_slab_free(&r, 70, a[0], 4 * n), DM_OK, "free: the first four nodes in one range");
	CHECK(r.sb->chunks_used == used0 && dm_region_bytes_in_use(&r) == 0,
		  "free: a chunk with nothing carved goes back to the free chunks");
	CHECK_STATUS(dm_region_slab_free(&r, 70, a[0], n), DM_ERR_INVALID, "free: in a chunk no longer ours -> INVALID");

	/* a damaged list (clients can write there) is dropped, not followed */
	for (int i = 0; i < 4; i++)
		CHECK_STATUS(dm_region_slab_alloc(&r, 72, n, 1, &a[i]), DM_OK, "damage: slab %d", i);
	CHECK_STATUS(dm_region_slab_free(&r, 72, a[0], n), DM_OK, "damage: free node 0");
	CHECK_STATUS(dm_region_slab_free(&r, 72, a[2], n), DM_OK, "damage: free node 2");
	((dm_free_range *) (base + a[0]))->next = UINT64_C(0xFFFFFFFFFF00);	/* a client scribbles */
	CHECK(dm_region_bytes_in_use(&r) == 4 * n, "damage: the list's bytes count as in use");
	CHECK_STATUS(dm_region_slab_alloc(&r, 72, n, 1, &x), DM_OK, "damage: allocation still works");
	CHECK(x == a[3] + n, "damage: the damaged list was not followed (carved new space)");
	((dm_free_range *) (base + a[2]))->magic = 0;
	CHECK_STATUS(dm_region_slab_free(&r, 72, a[1], n), DM_OK, "damage: freeing next to a stale header works");
	CHECK(dm_region_bytes_in_use(&r) == 4 * n, "damage: accounting consistent (5 carved, 1 returned)");
	{
		/* a size that reaches past the chunk: never used to compute an address */
		uint64_t	ch = a[0] - (a[0] - r.sb->data_off) % cs;

		CHECK_STATUS(dm_region_slab_free(&r, 72, a[3], n), DM_OK, "damage: free node 3");
		((dm_free_range *) (base + a[3]))->size = UINT64_C(1) << 40;
		CHECK_STATUS(dm_region_slab_alloc(&r, 72, 2 * n, 1, &y), DM_OK, "damage: allocation after a huge size");
		CHECK(y >= ch && y + 2 * n <= ch + cs && y != a[3], "damage: the grant is inside the chunk, not the damaged range");
		CHECK(dm_region_bytes_in_use(&r) <= cs, "damage: the count stays within the chunk");
	}
	dm_region_chunk_free_owner(&r, 72);
	CHECK(r.sb->chunks_used == used0, "damage: the owner's chunk freed with it");
}

/*
 * Random slab allocations and returns by three owners, against a model of
 * which 256-byte units are granted to whom: nothing is handed out twice,
 * grants are zeroed and inside their owner's chunks, the byte count agrees,
 * and once everything is returned every chunk is free again.
 */
#define MODEL_UNITS (REGION_SIZE / DM_SLAB_ALIGN)
static void
test_slab_model(void)
{
	dm_region	r;
	static uint8_t owner_of[MODEL_UNITS];	/* 0 = not granted, else owner - 100 + 1 */
	struct grant
	{
		uint64_t	off, size;
		uint8_t		owner;
	}		   *g = calloc(4096, sizeof(*g));
	int			ng = 0, bad = 0, steps = 20000;
	uint64_t	granted = 0, used0;
	uint64_t	seed = 12345;

	CHECK_STATUS(fresh(&r), DM_OK, "format for the allocator model");
	used0 = r.sb->chunks_used;
	memset(owner_of, 0, sizeof(owner_of));
	for (int step = 0; step < steps && !bad; step++)
	{
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		uint64_t	rnd = seed >> 24;

		if (ng < 4000 && (ng == 0 || rnd % 100 < 52))
		{
			uint8_t		o = (uint8_t) (rnd % 3);
			uint64_t	units = 1 + (rnd >> 8) % ((rnd >> 20) % 4 == 0 ? 256 : 8);
			uint64_t	off;
			int			rc = dm_region_slab_alloc(&r, 100 + o, units * DM_SLAB_ALIGN, 1, &off);

			if (rc == DM_ERR_NOSPACE)
				continue;
			if (rc != DM_OK)
			{
				bad = CHECK(0, "model: step %d: alloc failed: %s", step, dm_strerror(rc)) || 1;
				break;
			}
			if (r.chunks[(off - r.sb->data_off) / r.sb->chunk_size].owner != (uint64_t) (100 + o) ||
				(off - r.sb->data_off) / r.sb->chunk_size != (off + units * DM_SLAB_ALIGN - 1 - r.sb->data_off) / r.sb->chunk_size ||
				!all_bytes(base + off, units * DM_SLAB_ALIGN, 0))
				bad = !CHECK(0, "model: step %d: grant at %llu not zeroed or not in one chunk of its owner",
							 step, (unsigned long long) off);
			for (uint64_t u = off / DM_SLAB_ALIGN; u < off / DM_SLAB_ALIGN + units; u++)
			{
				if (owner_of[u] != 0)
				{
					bad = !CHECK(0, "model: step %d: unit %llu handed out twice", step, (unsigned long long) u);
					break;
				}
				owner_of[u] = o + 1;
			}
			memset(base + off, 0xA0 + o, units * DM_SLAB_ALIGN);	/* nodes written */
			g[ng].off = off;
			g[ng].size = units * DM_SLAB_ALIGN;
			g[ng].owner = o;
			ng++;
			granted += units * DM_SLAB_ALIGN;
		}
		else
		{
			int			k = (int) (rnd % (uint64_t) ng);
			uint64_t	units = g[k].size / DM_SLAB_ALIGN;
			/* return all of a grant, or (like a handle's unused rest) its tail */
			uint64_t	keep = (rnd >> 16) % 3 == 0 ? (rnd >> 24) % units : 0;
			uint64_t	off = g[k].off + keep * DM_SLAB_ALIGN;
			uint64_t	size = g[k].size - keep * DM_SLAB_ALIGN;
			int			rc;

			/* a wrong owner or a second return is refused */
			if ((rnd >> 40) % 8 == 0 &&
				dm_region_slab_free(&r, 100 + (g[k].owner + 1) % 3, off, size) != DM_ERR_INVALID)
				bad = !CHECK(0, "model: step %d: return by the wrong owner accepted", step);
			rc = dm_region_slab_free(&r, 100 + g[k].owner, off, size);
			if (rc != DM_OK)
			{
				bad = !CHECK(0, "model: step %d: return failed: %s", step, dm_strerror(rc));
				break;
			}
			if ((rnd >> 44) % 8 == 0 && dm_region_slab_free(&r, 100 + g[k].owner, off, size) != DM_ERR_INVALID)
				bad = !CHECK(0, "model: step %d: double return accepted", step);
			for (uint64_t u = off / DM_SLAB_ALIGN; u < (off + size) / DM_SLAB_ALIGN; u++)
				owner_of[u] = 0;
			granted -= size;
			if (keep > 0)
				g[k].size = keep * DM_SLAB_ALIGN;
			else
				g[k] = g[--ng];
		}
		if (step % 97 == 0 && dm_region_bytes_in_use(&r) != granted)
			bad = !CHECK(0, "model: step %d: %llu bytes in use, model says %llu", step,
						 (unsigned long long) dm_region_bytes_in_use(&r), (unsigned long long) granted);
	}
	CHECK(!bad, "model: %d random allocations and returns agree with the model", steps);
	CHECK(dm_region_bytes_in_use(&r) == granted, "model: bytes in use = granted (%llu)", (unsigned long long) granted);
	while (ng > 0)
	{
		ng--;
		if (dm_region_slab_free(&r, 100 + g[ng].owner, g[ng].off, g[ng].size) != DM_OK)
			bad = 1;
	}
	CHECK(!bad && dm_region_bytes_in_use(&r) == 0 && r.sb->chunks_used == used0,
		  "model: everything returned: no bytes in use, every chunk free again (%llu used)",
		  (unsigned long long) r.sb->chunks_used);
	free(g);
}

static void
name_named(dm_tree_name *n, const char *s)
{
	if (dm_tree_name_named(n, s) != DM_OK)
		CHECK(0, "dm_tree_name_named(%s)", s);
}

static void
test_names(void)
{
	dm_tree_name n,
				m;
	char		longname[DM_TREE_NAME_LEN + 1];

	CHECK_STATUS(dm_tree_name_named(&n, "t1"), DM_OK, "named name built");
	CHECK(n.kind == DM_TREE_NAMED && strcmp(n.name, "t1") == 0, "named name content");
	CHECK(dm_tree_name_valid(&n), "named name valid");
	CHECK_STATUS(dm_tree_name_named(&m, ""), DM_ERR_INVALID, "empty name refused");
	memset(longname, 'x', DM_TREE_NAME_LEN);
	longname[DM_TREE_NAME_LEN] = '\0';
	CHECK_STATUS(dm_tree_name_named(&m, longname), DM_ERR_INVALID, "name of 104 chars refused (no room for NUL)");
	longname[DM_TREE_NAME_LEN - 1] = '\0';
	CHECK_STATUS(dm_tree_name_named(&m, longname), DM_OK, "name of 103 chars accepted");
	CHECK(dm_tree_name_valid(&m), "103-char name valid");

	m = n;
	memset(m.name, 'y', DM_TREE_NAME_LEN);
	CHECK(!dm_tree_name_valid(&m), "non-terminated name invalid");
	m = n;
	m.name[0] = '\0';
	CHECK(!dm_tree_name_valid(&m), "empty named name invalid");
	m = n;
	m.kind = 0;
	CHECK(!dm_tree_name_valid(&m), "kind 0 invalid");
	m.kind = 3;
	CHECK(!dm_tree_name_valid(&m), "kind 3 invalid");
	m.kind = 0xFFFFFFFF;
	CHECK(!dm_tree_name_valid(&m), "kind 2^32-1 invalid");

	dm_tree_name_pg(&n, 777, 16384, 24576, 0);
	CHECK(n.kind == DM_TREE_PG && n.sysid == 777 && n.dboid == 16384 && n.relfilenode == 24576 &&
		  n.generation == 0, "pg name built");
	CHECK(dm_tree_name_valid(&n), "pg name valid");
	dm_tree_name_pg(&m, 777, 16384, 24576, 1);
	CHECK(!dm_tree_name_equal(&n, &m), "pg names differing in generation differ");
	dm_tree_name_pg(&m, 777, 16384, 24576, 0);
	CHECK(dm_tree_name_equal(&n, &m), "equal pg names compare equal");
	name_named(&m, "t1");
	CHECK(!dm_tree_name_equal(&n, &m), "pg and named names differ");
}

static void
test_catalog(void)
{
	dm_region	r;
	dm_tree_name names[CAT_CAP + 1],
				nm;
	dm_tree_info info[CAT_CAP],
				ti,
				list[CAT_CAP];
	uint64_t	freed,
				off,
				cat_user0;
	uint32_t	cnt,
				next;
	int			rc,
				i;

	CHECK_STATUS(fresh(&r), DM_OK, "format for catalog tests");

	/* 8 named + 8 pg trees (two databases, two clusters) fill the catalog */
	for (i = 0; i < CAT_CAP; i++)
	{
		if (i < 8)
		{
			char		s[32];

			snprintf(s, sizeof(s), "tree-%d", i);
			name_named(&names[i], s);
		}
		else
			dm_tree_name_pg(&names[i], i < 12 ? 1111 : 2222, i % 2 ? 5 : 6, 1000 + i, 0);
	}
	for (i = 0; i < CAT_CAP; i++)
	{
		rc = dm_region_cat_create(&r, &names[i], 4000 + i, 5000 + i, &info[i]);
		if (rc != DM_OK)
			break;
	}
	CHECK_STATUS(rc, DM_OK, "created %d trees (named and pg)", CAT_CAP);
	CHECK(r.sb->trees == CAT_CAP, "superblock counts %d trees", CAT_CAP);

	{
		int			ids_ok = 1,
					addr_ok = 1,
					fields_ok = 1;

		for (i = 0; i < CAT_CAP; i++)
		{
			uint64_t	entry_off = r.sb->catalog_off + (uint64_t) info[i].slot * DM_CAT_ENTRY_SIZE;

			if (info[i].tree_id == 0 || dm_gaddr_node(info[i].tree_id) != NODE_ID ||
				(info[i].tree_id & DM_GADDR_RESERVED_BIT))
				ids_ok = 0;
			for (int j = 0; j < i; j++)
				if (info[j].tree_id == info[i].tree_id || info[j].slot == info[i].slot)
					ids_ok = 0;
			if (info[i].root_addr != dm_gaddr_make(NODE_ID, entry_off) ||
				info[i].meta_addr != dm_gaddr_make(NODE_ID, entry_off + 8))
				addr_ok = 0;
			if (!dm_tree_name_equal(&info[i].name, &names[i]) || info[i].owner_pid != 4000 + (uint64_t) i ||
				info[i].created_unix_ns != 5000 + (uint64_t) i || info[i].chunks != 0 ||
				info[i].state != DM_TREE_STATE_LIVE || info[i].slot >= CAT_CAP)
				fields_ok = 0;
		}
		CHECK(ids_ok, "tree ids unique, non-zero, node id %d in bits 48..62, slots distinct", NODE_ID);
		CHECK(addr_ok, "root_addr/meta_addr = global address of the entry's root / meta words");
		CHECK(fields_ok, "info: name, owner pid, created time, chunks 0, LIVE, slot in range");
	}

	CHECK_STATUS(dm_region_cat_create(&r, &names[3], 1, 1, &ti), DM_ERR_EXISTS, "create named twice -> EXISTS");
	CHECK_STATUS(dm_region_cat_create(&r, &names[10], 1, 1, &ti), DM_ERR_EXISTS, "create pg twice -> EXISTS");
	name_named(&names[CAT_CAP], "one-too-many");
	CHECK_STATUS(dm_region_cat_create(&r, &names[CAT_CAP], 1, 1, &ti), DM_ERR_CATALOG_FULL,
				 "17th tree -> CATALOG_FULL");
	nm = names[0];
	nm.kind = 9;
	CHECK_STATUS(dm_region_cat_create(&r, &nm, 1, 1, &ti), DM_ERR_INVALID, "create with invalid name -> INVALID");
	CHECK_STATUS(dm_region_cat_open(&r, &nm, &ti), DM_ERR_INVALID, "open with invalid name -> INVALID");

	/* open */
	CHECK_STATUS(dm_region_cat_open(&r, &names[12], &ti), DM_OK, "open pg tree");
	CHECK(ti.tree_id == info[12].tree_id && ti.root_addr == info[12].root_addr && ti.slot == info[12].slot,
		  "open returns the created tree");
	CHECK_STATUS(dm_region_cat_open(&r, &names[CAT_CAP], &ti), DM_ERR_NOTFOUND, "open missing named -> NOTFOUND");
	dm_tree_name_pg(&nm, 1111, 5, 1009, 1);	/* names[9] with generation 1 */
	CHECK_STATUS(dm_region_cat_open(&r, &nm, &ti), DM_ERR_NOTFOUND, "open pg with other generation -> NOTFOUND");

	/* Chunks owned by a tree are counted in its entry. */
	for (i = 0; i < 3; i++)
		CHECK_STATUS(dm_region_chunk_alloc(&r, info[2].tree_id, 1, &off), DM_OK, "alloc chunk %d for tree 2", i);
	CHECK_STATUS(dm_region_chunk_alloc(&r, info[4].tree_id, 1, &off), DM_OK, "alloc chunk for tree 4");
	CHECK_STATUS(dm_region_cat_open(&r, &names[2], &ti), DM_OK, "reopen tree 2");
	CHECK(ti.chunks == 3, "tree 2 owns 3 chunks (info says %llu)", (unsigned long long) ti.chunks);

	/* The user words survive and belong to the tree; drop clears them. */
	cat_user0 = r.sb->catalog_off + (uint64_t) info[2].slot * DM_CAT_ENTRY_SIZE;
	memset(base + cat_user0, 0x5A, DM_CAT_USER_BYTES);

	/* drop frees the tree's chunks, and only those */
	CHECK_STATUS(dm_region_cat_drop(&r, &names[2], &freed), DM_OK, "drop tree 2");
	CHECK(freed == 3, "drop freed 3 chunks (got %llu)", (unsigned long long) freed);
	CHECK(r.sb->chunks_used == 1, "tree 4's chunk still used");
	CHECK(r.sb->trees == CAT_CAP - 1, "tree count decremented");
	CHECK_STATUS(dm_region_cat_open(&r, &names[2], &ti), DM_ERR_NOTFOUND, "dropped tree not found");
	CHECK_STATUS(dm_region_cat_drop(&r, &names[2], &freed), DM_ERR_NOTFOUND, "drop twice -> NOTFOUND");
	CHECK(all_bytes(base + cat_user0, DM_CAT_USER_BYTES, 0), "dropped entry's root/meta words cleared");

	/* the slot is reused, with a new tree id */
	name_named(&nm, "reuser");
	CHECK_STATUS(dm_region_cat_create(&r, &nm, 1, 1, &ti), DM_OK, "create after drop");
	CHECK(ti.slot == info[2].slot, "freed slot %u reused (got %u)", info[2].slot, ti.slot);
	CHECK(ti.tree_id != info[2].tree_id, "reused slot gets a new tree id");
	CHECK(ti.root_addr == info[2].root_addr, "same slot, same root address");
	CHECK(ti.chunks == 0, "new tree owns no chunks");
	/* A stale chunk of the old id must not count for the new tree. */
	CHECK_STATUS(dm_region_chunk_alloc(&r, info[2].tree_id, 1, &off), DM_OK, "alloc with the dropped tree's id");
	CHECK_STATUS(dm_region_cat_open(&r, &nm, &ti), DM_OK, "open reuser");
	CHECK(ti.chunks == 0, "chunk of the old id not counted for the new tree");
	CHECK(dm_region_chunk_free_owner(&r, info[2].tree_id) == 1, "old id's chunk freed by owner");

	/* list: everything */
	cnt = dm_region_cat_list(&r, 0, CAT_CAP, 0, 0, 0, list, &next);
	CHECK(cnt == CAT_CAP && next == CAT_CAP, "list all: %u entries, next_slot %u", cnt, next);
	/* by kind */
	cnt = dm_region_cat_list(&r, 0, CAT_CAP, DM_TREE_NAMED, 0, 0, list, &next);
	{
		int			ok = cnt == 8;

		for (uint32_t k = 0; k < cnt; k++)
			ok = ok && list[k].name.kind == DM_TREE_NAMED;
		CHECK(ok, "list kind NAMED: 8 named trees (got %u)", cnt);
	}
	cnt = dm_region_cat_list(&r, 0, CAT_CAP, DM_TREE_PG, 0, 0, list, &next);
	CHECK(cnt == 8, "list kind PG: 8 (got %u)", cnt);
	/* by dboid: odd i (9, 11, 13, 15) have dboid 5 */
	cnt = dm_region_cat_list(&r, 0, CAT_CAP, DM_TREE_PG, 5, 0, list, &next);
	{
		int			ok = cnt == 4;

		for (uint32_t k = 0; k < cnt; k++)
			ok = ok && list[k].name.dboid == 5;
		CHECK(ok, "list dboid 5: 4 trees (got %u)", cnt);
	}
	/* by sysid: i 8..11 sysid 1111 */
	cnt = dm_region_cat_list(&r, 0, CAT_CAP, DM_TREE_PG, 0, 1111, list, &next);
	CHECK(cnt == 4, "list sysid 1111: 4 trees (got %u)", cnt);
	cnt = dm_region_cat_list(&r, 0, CAT_CAP, DM_TREE_PG, 6, 2222, list, &next);
	CHECK(cnt == 2 && list[0].name.sysid == 2222 && list[0].name.dboid == 6 &&
		  list[1].name.sysid == 2222 && list[1].name.dboid == 6,
		  "list sysid 2222 dboid 6: 2 trees (got %u)", cnt);
	cnt = dm_region_cat_list(&r, 0, CAT_CAP, DM_TREE_PG, 0, 3333, list, &next);
	CHECK(cnt == 0 && next == CAT_CAP, "list unknown sysid: none, next_slot = capacity");

	/* pagination: pages of 3 visit every live tree exactly once */
	{
		uint32_t	start = 0,
					total = 0,
					pages = 0;
		uint64_t	seen_ids[CAT_CAP];
		int			ok = 1;

		for (;;)
		{
			dm_tree_info page[3];

			cnt = dm_region_cat_list(&r, start, 3, 0, 0, 0, page, &next);
			if (cnt > 3 || next <= start || next > CAT_CAP)
			{
				ok = 0;
				break;
			}
			for (uint32_t k = 0; k < cnt; k++)
			{
				if (page[k].slot < start || page[k].slot >= next || total >= CAT_CAP)
					ok = 0;
				for (uint32_t q = 0; q < total && q < CAT_CAP; q++)
					if (seen_ids[q] == page[k].tree_id)
						ok = 0;
				if (total < CAT_CAP)
					seen_ids[total] = page[k].tree_id;
				total++;
			}
			pages++;
			start = next;
			if (next == CAT_CAP || pages > 20)
				break;
		}
		CHECK(ok && total == CAT_CAP, "paginated list saw %u trees in %u pages, each once", total, pages);
	}
	/* start past the end */
	cnt = dm_region_cat_list(&r, CAT_CAP + 5, 3, 0, 0, 0, list, &next);
	CHECK(cnt == 0, "list from beyond capacity returns nothing");

	/* drop a pg tree, then lists skip its slot */
	CHECK_STATUS(dm_region_cat_drop(&r, &names[9], &freed), DM_OK, "drop pg tree 9");
	CHECK(freed == 0, "it owned no chunks");
	cnt = dm_region_cat_list(&r, 0, CAT_CAP, DM_TREE_PG, 5, 0, list, &next);
	CHECK(cnt == 3, "list dboid 5 after drop: 3");
	/* attach sees the same catalog (it lives in the region) */
	{
		dm_region	r2;

		CHECK_STATUS(dm_region_attach(&r2, base, REGION_SIZE), DM_OK, "re-attach");
		CHECK_STATUS(dm_region_cat_open(&r2, &names[12], &ti), DM_OK, "catalog persists in the region");
		CHECK(ti.tree_id == info[12].tree_id, "same tree id after attach");
	}
}

static void
test_check_op(void)
{
	dm_region	r;
	uint64_t	data,
				cat,
				size,
				cat_end;

	CHECK_STATUS(fresh(&r), DM_OK, "format for bounds tests");
	data = r.sb->data_off;
	cat = r.sb->catalog_off;
	size = r.size;
	cat_end = cat + CAT_CAP * DM_CAT_ENTRY_SIZE;

	/* READ anywhere inside */
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, 0, 64), DM_OK, "READ superblock ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, r.sb->chunk_table_off, 16), DM_OK, "READ chunk table ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, cat + 100, 100), DM_OK, "READ catalog private part ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, 0, size), DM_OK, "READ whole region ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, size - 1, 1), DM_OK, "READ last byte ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, 3, 5), DM_OK, "READ unaligned ok");
	/* out of range */
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, size, 1), DM_ERR_RANGE, "READ at size -> RANGE");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, size - 1, 2), DM_ERR_RANGE, "READ across the end -> RANGE");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, 0, size + 1), DM_ERR_RANGE, "READ size+1 -> RANGE");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, DM_OFFSET_MASK - 7, 8), DM_ERR_RANGE, "READ near 2^48 -> RANGE");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, 64, UINT64_MAX - 32), DM_ERR_RANGE,
				 "READ offset+len overflowing 64 bits -> RANGE");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, DM_OFFSET_MASK - 7, UINT64_MAX - DM_OFFSET_MASK + 16),
				 DM_ERR_RANGE, "WRITE offset near 2^48 with len wrapping to small -> RANGE");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, data, UINT64_MAX), DM_ERR_RANGE, "WRITE len 2^64-1 -> RANGE");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_CAS, size, 8), DM_ERR_RANGE, "CAS at size -> RANGE");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_FAA, UINT64_MAX - 7, 8), DM_ERR_RANGE, "FAA at 2^64-8 -> RANGE");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_READ, 0, 0), DM_ERR_RANGE, "len 0 -> RANGE");

	/* writes into memnode-owned parts */
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, 0, 8), DM_ERR_READONLY, "WRITE superblock magic -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, 8, 8), DM_ERR_READONLY, "WRITE superblock word 1 -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_CAS, 0, 8), DM_ERR_READONLY, "CAS superblock -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_FAA, 4088, 8), DM_ERR_READONLY, "FAA end of superblock page -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, r.sb->chunk_table_off, 16), DM_ERR_READONLY,
				 "WRITE chunk table -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_FETCH_OR, r.sb->chunk_table_off + 16, 8), DM_ERR_READONLY,
				 "FETCH_OR chunk table -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, cat + DM_CAT_USER_BYTES, 8), DM_ERR_READONLY,
				 "WRITE catalog entry tree_id -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_CAS, cat + DM_CAT_ENTRY_SIZE + DM_CAT_USER_BYTES, 8), DM_ERR_READONLY,
				 "CAS entry 1 tree_id -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, cat + offsetof(dm_cat_entry, name), 16), DM_ERR_READONLY,
				 "WRITE catalog entry name -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, cat + DM_CAT_ENTRY_SIZE - 8, 8), DM_ERR_READONLY,
				 "WRITE catalog entry last word -> READONLY");
	if (data > cat_end)
		CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, cat_end, 8), DM_ERR_READONLY,
					 "WRITE gap between catalog and data -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, data - 8, 8), DM_ERR_READONLY,
				 "WRITE just below the data area -> READONLY");

	/* allowed writes */
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, data, 8), DM_OK, "WRITE data start ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, data + 3, 1000), DM_OK, "unaligned WRITE in data ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, data, r.sb->nchunks * r.sb->chunk_size), DM_OK,
				 "WRITE the whole data area ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_CAS, size - 8, 8), DM_OK, "CAS last word ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_FAA, data + 64, 8), DM_OK, "FAA in data ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_FETCH_OR, data + 128, 8), DM_OK, "FETCH_OR in data ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, cat, DM_CAT_USER_BYTES), DM_OK,
				 "WRITE entry 0's user bytes ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_CAS, cat + 5 * DM_CAT_ENTRY_SIZE, 8), DM_OK, "CAS entry 5 root ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_FAA, cat + 15 * DM_CAT_ENTRY_SIZE + DM_CAT_USER_BYTES - 8, 8), DM_OK,
				 "FAA last meta word of the last entry ok");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, cat + 3 * DM_CAT_ENTRY_SIZE + 20, 10), DM_OK,
				 "unaligned WRITE inside user bytes ok");

	/* spans from writable into memnode-owned bytes */
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, cat, DM_CAT_USER_BYTES + 1), DM_ERR_READONLY,
				 "WRITE one byte more than the user bytes from entry start -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, cat + DM_CAT_USER_BYTES - 8, 16), DM_ERR_READONLY,
				 "WRITE from last meta word into tree_id -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, cat + 8, DM_CAT_ENTRY_SIZE + 8), DM_ERR_READONLY,
				 "WRITE from entry 0 user bytes through entry 1 -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, cat + 15 * DM_CAT_ENTRY_SIZE, DM_CAT_ENTRY_SIZE + 8),
				 DM_ERR_READONLY, "WRITE from last entry past the catalog end -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, data - 8, 16), DM_ERR_READONLY,
				 "WRITE spanning into the data area from below -> READONLY");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_WRITE, size - 8, 16), DM_ERR_RANGE, "WRITE past the end -> RANGE");

	/* alignment of atomics */
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_CAS, data + 4, 8), DM_ERR_ALIGN, "misaligned CAS -> ALIGN");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_FAA, data + 1, 8), DM_ERR_ALIGN, "misaligned FAA -> ALIGN");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_FETCH_OR, data + 7, 8), DM_ERR_ALIGN, "misaligned FETCH_OR -> ALIGN");
	CHECK_STATUS(dm_region_check_op(&r, DM_OP_CAS, cat + 4, 8), DM_ERR_ALIGN, "misaligned CAS on root word -> ALIGN");
}

int
main(void)
{
	base = aligned_alloc(DM_REGION_ALIGN, REGION_SIZE);
	if (!base)
	{
		CHECK(0, "aligned_alloc of %llu bytes", (unsigned long long) REGION_SIZE);
		return tap_done();
	}
	test_format_attach();
	test_alloc();
	test_slab();
	test_slab_free();
	test_slab_model();
	test_names();
	test_catalog();
	test_check_op();
	free(base);
	return tap_done();
}
