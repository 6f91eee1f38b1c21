/*
 * dm_region.c — a memory node's region: layout, chunk and slab allocator
 * and the bounds checks of one-sided operations (see dm_region.h).  The
 * tree catalog is in dm_region_catalog.c; what a reattaching memnode
 * repairs is in dm_region_recover.c.
 */
#include <stddef.h>
#include <string.h>

#include "dm_region.h"
#include "dm_region_int.h"

_Static_assert(sizeof(dm_superblock) <= 4096, "superblock fits its page");
_Static_assert(sizeof(dm_cat_entry) == DM_CAT_ENTRY_SIZE, "catalog entry size");
_Static_assert(sizeof(dm_chunk_desc) == 32, "chunk descriptor size");

static uint64_t
round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static void
compute_layout(dm_superblock *sb, uint64_t size, uint64_t chunk_size, uint32_t catalog_capacity,
			   uint32_t journal_slots)
{
	uint64_t	guess = size / chunk_size;

	sb->chunk_table_off = 4096;
	sb->catalog_off = round_up(sb->chunk_table_off + guess * sizeof(dm_chunk_desc), 4096);
	sb->catalog_capacity = catalog_capacity;
	sb->journal_off = round_up(sb->catalog_off + (uint64_t) catalog_capacity * DM_CAT_ENTRY_SIZE, 4096);
	sb->journal_slots = journal_slots;
	sb->journal_slot_size = DM_JOURNAL_SLOT_SIZE;
	sb->data_off = round_up(sb->journal_off + journal_slots * DM_JOURNAL_SLOT_SIZE, DM_REGION_ALIGN);
	sb->nchunks = sb->data_off < size ? (size - sb->data_off) / chunk_size : 0;
}

static void
region_bind(dm_region *r, void *base, uint64_t size)
{
	r->base = base;
	r->size = size;
	r->sb = (dm_superblock *) base;
	r->chunks = (dm_chunk_desc *) (r->base + r->sb->chunk_table_off);
	r->catalog = (dm_cat_entry *) (r->base + r->sb->catalog_off);
	r->journal = r->sb->journal_slots ? r->base + r->sb->journal_off : NULL;
	r->node_id = (uint16_t) r->sb->node_id;
}

/* FNV-1a over bytes [from, to) of the superblock, continuing from h. */
static uint64_t
hash_range(uint64_t h, const dm_superblock *sb, size_t from, size_t to)
{
	const uint8_t *p = (const uint8_t *) sb;

	for (size_t i = from; i < to; i++)
	{
		h ^= p[i];
		h *= UINT64_C(0x100000001B3);
	}
	return h;
}

/*
 * The words that never change after format: identity, layout, incarnation.
 * A flipped bit there would make a memnode serve the wrong layout or claim
 * an incarnation it does not hold, so a mismatch means "not intact".
 */
uint64_t
dm_region_sb_checksum(const dm_superblock *sb)
{
	uint64_t	h = UINT64_C(0xCBF29CE484222325);

	h = hash_range(h, sb, 0, offsetof(dm_superblock, state));
	h = hash_range(h, sb, offsetof(dm_superblock, journal_off), offsetof(dm_superblock, sb_checksum));
	return h;
}

int
dm_region_format(dm_region *r, void *base, uint64_t size, uint16_t node_id,
				 uint64_t chunk_size, uint32_t catalog_capacity, uint32_t journal_slots,
				 uint64_t incarnation, uint64_t now_unix_ns)
{
	dm_superblock sb;

	if (base == NULL || ((uintptr_t) base & 4095) != 0 || node_id > DM_NODE_ID_MAX)
		return DM_ERR_INVALID;
	if (catalog_capacity == 0 || catalog_capacity > CATALOG_MAX || journal_slots > DM_JOURNAL_MAX_SLOTS)
		return DM_ERR_INVALID;
	if (chunk_size < DM_CHUNK_MIN || size > DM_OFFSET_MASK)
		return DM_ERR_INVALID;
	chunk_size = round_up(chunk_size, DM_CHUNK_MIN);
	size -= size % DM_REGION_ALIGN;

	memset(&sb, 0, sizeof(sb));
	compute_layout(&sb, size, chunk_size, catalog_capacity, journal_slots);
	if (sb.nchunks == 0)
		return DM_ERR_INVALID;
	sb.magic = DM_SB_MAGIC;
	sb.format_version = DM_FORMAT_VERSION;
	sb.node_id = node_id;
	sb.region_size = size;
	sb.incarnation = incarnation;
	sb.chunk_size = chunk_size;
	sb.created_unix_ns = now_unix_ns;
	sb.state = DM_SB_LIVE;
	sb.next_tree_seq = 1;
	sb.attach_count = 1;
	sb.attach_unix_ns = now_unix_ns;
	sb.sb_checksum = dm_region_sb_checksum(&sb);

	/* metadata only: the data area is zeroed chunk by chunk on allocation */
	memset(base, 0, sb.data_off);
	memcpy(base, &sb, sizeof(sb));
	region_bind(r, base, size);
	return DM_OK;
}

int
dm_region_attach(dm_region *r, void *base, uint64_t size)
{
	const dm_superblock *sb = base;
	dm_superblock expect;

	if (base == NULL || size < 4096)
		return DM_ERR_INVALID;
	if (sb->magic != DM_SB_MAGIC)
		return DM_ERR_CORRUPT;
	if (sb->format_version != DM_FORMAT_VERSION)
		return DM_ERR_VERSION;
	if (sb->region_size != size || sb->node_id > DM_NODE_ID_MAX ||
		sb->chunk_size < DM_CHUNK_MIN || sb->chunk_size % DM_CHUNK_MIN != 0 ||
		sb->catalog_capacity == 0 || sb->catalog_capacity > CATALOG_MAX ||
		sb->journal_slots > DM_JOURNAL_MAX_SLOTS || sb->journal_slot_size != DM_JOURNAL_SLOT_SIZE)
		return DM_ERR_CORRUPT;
	if (sb->sb_checksum != dm_region_sb_checksum(sb))
		return DM_ERR_CORRUPT;
	/* the layout is a function of these fields: recompute, don't trust */
	memset(&expect, 0, sizeof(expect));
	compute_layout(&expect, sb->region_size, sb->chunk_size, (uint32_t) sb->catalog_capacity,
				   (uint32_t) sb->journal_slots);
	if (expect.chunk_table_off != sb->chunk_table_off || expect.catalog_off != sb->catalog_off ||
		expect.journal_off != sb->journal_off ||
		expect.data_off != sb->data_off || expect.nchunks != sb->nchunks || sb->nchunks == 0)
		return DM_ERR_CORRUPT;
	region_bind(r, base, size);
	return DM_OK;
}

/* The live catalog entry of a tree id, or NULL (id from another memnode, dropped...). */
dm_cat_entry *
dm_region_entry_of_tree(dm_region *r, uint64_t tree_id)
{
	uint64_t	slot = tree_id & SLOT_MASK;

	if (tree_id == 0 || dm_gaddr_node(tree_id) != r->node_id || slot >= r->sb->catalog_capacity)
		return NULL;
	if (r->catalog[slot].tree_id != tree_id)
		return NULL;
	return &r->catalog[slot];
}

int
dm_region_chunk_alloc(dm_region *r, uint64_t owner, uint64_t now_unix_ns, uint64_t *offset)
{
	uint64_t	n = r->sb->nchunks;
	uint64_t	start = r->sb->next_free_hint % n;
	dm_cat_entry *e;

	if (owner == 0)
		return DM_ERR_INVALID;
	for (uint64_t k = 0; k < n; k++)
	{
		uint64_t	i = (start + k) % n;
		uint64_t	off;

		if (r->chunks[i].owner != 0)
			continue;
		off = r->sb->data_off + i * r->sb->chunk_size;
		/*
		 * Zero before handing out: a chunk freed by one tree must not show
		 * its old nodes to the next (a stale node could pass validation).
		 */
		memset(r->base + off, 0, r->sb->chunk_size);
		r->chunks[i].owner = owner;
		r->chunks[i].alloc_unix_ns = now_unix_ns;
		r->chunks[i].used = r->sb->chunk_size;
		r->chunks[i].free_head = 0;
		r->sb->chunks_used++;
		r->sb->next_free_hint = i + 1;
		if ((e = dm_region_entry_of_tree(r, owner)) != NULL)
			e->chunks++;
		*offset = off;
		return DM_OK;
	}
	return DM_ERR_NOSPACE;
}

void
dm_region_release_chunk(dm_region *r, uint64_t i)
{
	dm_cat_entry *e = dm_region_entry_of_tree(r, r->chunks[i].owner);

	if (e != NULL && e->chunks > 0)
		e->chunks--;
	r->chunks[i].owner = 0;
	r->chunks[i].alloc_unix_ns = 0;
	r->chunks[i].used = 0;
	r->chunks[i].free_head = 0;
	r->sb->chunks_used--;
	if (i < r->sb->next_free_hint)
		r->sb->next_free_hint = i;
}

/* ---- slabs and returned ranges ------------------------------------------------ */

static uint64_t
chunk_start(const dm_region *r, uint64_t i)
{
	return r->sb->data_off + i * r->sb->chunk_size;
}

static dm_free_range *
range_at(dm_region *r, uint64_t off)
{
	return (dm_free_range *) (r->base + off);
}

/* The word that links to the range after `prev` (0: the chunk's list head). */
static uint64_t *
link_after(dm_region *r, uint64_t i, uint64_t prev)
{
	return prev == 0 ? &r->chunks[i].free_head : &range_at(r, prev)->next;
}

/*
 * The headers of returned ranges live in client-writable memory: each one
 * is copied out and checked before use (inside the carved part of chunk i,
 * at or above min, aligned, ours, its next link ahead of it), and only the
 * copy is used, so whatever a client writes there, every address the
 * memnode computes from it stays inside the chunk.
 */
static int
load_range(dm_region *r, uint64_t i, uint64_t off, uint64_t min, dm_free_range *f)
{
	uint64_t	start = chunk_start(r, i);
	uint64_t	end = start + r->chunks[i].used;

	if (off < min || off < start || off >= end || (off - start) % DM_SLAB_ALIGN != 0)
		return 0;
	memcpy(f, r->base + off, sizeof(*f));
	if (f->magic != DM_FREE_MAGIC || f->size == 0 || f->size % DM_SLAB_ALIGN != 0 ||
		f->size > end - off)
		return 0;
	return f->next == 0 || f->next >= off + f->size;
}

/*
 * Walk chunk i's list; *free_bytes gets its total, *last and *before_last
 * (may be NULL) its last range and the one before (0 if none).  A damaged
 * list is dropped if `repair` (its bytes stay allocated to the owner) and
 * reported as 0; ranges are at least DM_SLAB_ALIGN apart, which bounds it.
 */
int
dm_region_walk_list(dm_region *r, uint64_t i, int repair, uint64_t *free_bytes, uint64_t *last,
		  uint64_t *before_last)
{
	uint64_t	off = r->chunks[i].free_head,
				min = 0,
				prev = 0,
				pprev = 0,
				total = 0;
	dm_free_range f;

	for (uint64_t n = 0; off != 0; n++)
	{
		if (n > r->sb->chunk_size / DM_SLAB_ALIGN || !load_range(r, i, off, min, &f))
		{
			if (repair)
				r->chunks[i].free_head = 0;
			if (free_bytes)
				*free_bytes = 0;
			return 0;
		}
		total += f.size;
		min = off + f.size;
		pprev = prev;
		prev = off;
		off = f.next;
	}
	if (free_bytes)
		*free_bytes = total;
	if (last)
		*last = prev;
	if (before_last)
		*before_last = pprev;
	return 1;
}

static void
put_header(dm_region *r, uint64_t off, uint64_t next, uint64_t size)
{
	dm_free_range *f = range_at(r, off);

	f->magic = DM_FREE_MAGIC;
	f->next = next;
	f->size = size;
	f->zero = 0;
}

/* First fit in chunk i's returned ranges; 1 and *offset if one fits. */
static int
take_returned(dm_region *r, uint64_t i, uint64_t size, uint64_t *offset)
{
	uint64_t	prev = 0,
				min = 0;
	dm_free_range f;

	if (!dm_region_walk_list(r, i, 1, NULL, NULL, NULL))
		return 0;
	for (uint64_t off = r->chunks[i].free_head; off != 0; prev = off, min = off + f.size, off = f.next)
	{
		if (!load_range(r, i, off, min, &f))
		{
			r->chunks[i].free_head = 0;	/* changed under us: drop it */
			return 0;
		}
		if (f.size < size)
			continue;
		if (f.size == size)
			*link_after(r, i, prev) = f.next;
		else
		{
			put_header(r, off + size, f.next, f.size - size);
			*link_after(r, i, prev) = off + size;
		}
		*offset = off;
		return 1;
	}
	return 0;
}

int
dm_region_slab_alloc(dm_region *r, uint64_t owner, uint64_t size, uint64_t now_unix_ns,
					 uint64_t *offset)
{
	uint64_t	cs = r->sb->chunk_size;
	uint64_t	off;
	int			rc;

	if (owner == 0 || size == 0 || size % DM_SLAB_ALIGN != 0 || size > cs)
		return DM_ERR_INVALID;
	/* returned ranges first, then the bump pointers (an RPC path: scans are fine) */
	for (uint64_t i = 0; i < r->sb->nchunks; i++)
		if (r->chunks[i].owner == owner && r->chunks[i].free_head != 0 &&
			take_returned(r, i, size, offset))
		{
			/* returned memory holds old nodes: hand it out zeroed, like a new chunk */
			memset(r->base + *offset, 0, size);
			return DM_OK;
		}
	for (uint64_t i = 0; i < r->sb->nchunks; i++)
	{
		dm_chunk_desc *d = &r->chunks[i];

		if (d->owner == owner && d->used + size <= cs)
		{
			*offset = chunk_start(r, i) + d->used;
			d->used += size;
			/* a bump pointer lowered by a return may pass over old contents */
			memset(r->base + *offset, 0, size);
			return DM_OK;
		}
	}
	if ((rc = dm_region_chunk_alloc(r, owner, now_unix_ns, &off)) != DM_OK)
		return rc;
	r->chunks[(off - r->sb->data_off) / cs].used = size;
	*offset = off;
	return DM_OK;
}

int
dm_region_slab_free(dm_region *r, uint64_t owner, uint64_t offset, uint64_t size)
{
	uint64_t	cs = r->sb->chunk_size;
	uint64_t	i, start, prev = 0, next, min = 0, cur, last, before_last;
	dm_free_range pf = {0}, nf = {0};
	dm_chunk_desc *d;

	if (owner == 0 || size == 0 || size % DM_SLAB_ALIGN != 0 || size > cs ||
		offset < r->sb->data_off || (offset - r->sb->data_off) % DM_SLAB_ALIGN != 0)
		return DM_ERR_INVALID;
	i = (offset - r->sb->data_off) / cs;
	if (i >= r->sb->nchunks)
		return DM_ERR_RANGE;
	d = &r->chunks[i];
	start = chunk_start(r, i);
	if (d->owner != owner || offset + size > start + d->used)
		return DM_ERR_INVALID;
	(void) dm_region_walk_list(r, i, 1, NULL, NULL, NULL);

	/* prev: the last range below offset; next: the first one at or above */
	for (next = d->free_head; next != 0;)
	{
		if (!load_range(r, i, next, min, &nf))
		{
			d->free_head = 0;	/* changed under us: drop it, start a new list */
			prev = next = 0;
			break;
		}
		if (next >= offset)
			break;
		prev = next;
		pf = nf;
		min = next + nf.size;
		next = nf.next;
	}
	/* a range (partly) returned already: refuse, so nothing is handed out twice */
	if ((prev != 0 && prev + pf.size > offset) || (next != 0 && offset + size > next))
		return DM_ERR_INVALID;

	/* insert, merging with the neighbours it touches */
	if (prev != 0 && prev + pf.size == offset)
	{
		cur = prev;
		size += pf.size;
		range_at(r, cur)->size = size;
	}
	else
	{
		cur = offset;
		put_header(r, cur, next, size);
		*link_after(r, i, prev) = cur;
	}
	if (next != 0 && cur + size == next)
	{
		/*
		 * Link past the next range before growing over it: killed in
		 * between, the memnode leaves a valid list that merely leaks that
		 * range, not one whose link points inside a range (dropped whole).
		 */
		range_at(r, cur)->next = nf.next;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		range_at(r, cur)->size = size + nf.size;
	}

	/* the last range, if it ends at the bump pointer, lowers it instead */
	if (dm_region_walk_list(r, i, 1, NULL, &last, &before_last) && last != 0 &&
		last + range_at(r, last)->size == start + d->used)
	{
		*link_after(r, i, before_last) = 0;
		d->used = last - start;
	}
	if (d->used == 0)
		dm_region_release_chunk(r, i);
	return DM_OK;
}

uint64_t
dm_region_bytes_in_use(dm_region *r)
{
	uint64_t	total = 0;

	for (uint64_t i = 0; i < r->sb->nchunks; i++)
		if (r->chunks[i].owner != 0)
		{
			uint64_t	free_bytes;

			(void) dm_region_walk_list(r, i, 0, &free_bytes, NULL, NULL);
			total += r->chunks[i].used - free_bytes;
		}
	return total;
}

int
dm_region_chunk_free(dm_region *r, uint64_t offset)
{
	uint64_t	i;

	if (offset < r->sb->data_off || (offset - r->sb->data_off) % r->sb->chunk_size != 0)
		return DM_ERR_INVALID;
	i = (offset - r->sb->data_off) / r->sb->chunk_size;
	if (i >= r->sb->nchunks)
		return DM_ERR_RANGE;
	if (r->chunks[i].owner == 0)
		return DM_ERR_NOTFOUND;
	dm_region_release_chunk(r, i);
	return DM_OK;
}

uint64_t
dm_region_chunk_free_owner(dm_region *r, uint64_t owner)
{
	uint64_t	freed = 0;

	if (owner == 0)
		return 0;
	for (uint64_t i = 0; i < r->sb->nchunks; i++)
		if (r->chunks[i].owner == owner)
		{
			dm_region_release_chunk(r, i);
			freed++;
		}
	return freed;
}

int
dm_region_check_op(const dm_region *r, int kind, uint64_t offset, uint64_t len)
{
	uint64_t	cat_end;

	if (len == 0 || offset >= r->size || len > r->size - offset)
		return DM_ERR_RANGE;
	if (kind == DM_OP_READ)
		return DM_OK;
	if (kind != DM_OP_WRITE && (offset & 7) != 0)
		return DM_ERR_ALIGN;
	if (offset >= r->sb->data_off)
		return DM_OK;
	cat_end = r->sb->catalog_off + r->sb->catalog_capacity * DM_CAT_ENTRY_SIZE;
	if (offset >= r->sb->catalog_off && offset < cat_end)
	{
		uint64_t	within = (offset - r->sb->catalog_off) % DM_CAT_ENTRY_SIZE;

		if (within + len <= DM_CAT_USER_BYTES)
			return DM_OK;
	}
	return DM_ERR_READONLY;
}

/* Owner tag of the live tree that owns chunk i, 0 if none (free, or not a tree). */
static uint64_t
chunk_ident(const dm_region *r, uint64_t i)
{
	uint64_t	owner = __atomic_load_n(&r->chunks[i].owner, __ATOMIC_ACQUIRE);
	uint64_t	slot = owner & SLOT_MASK;
	const dm_cat_entry *e;

	if (owner == 0 || dm_gaddr_node(owner) != r->node_id || slot >= r->sb->catalog_capacity)
		return 0;
	e = &r->catalog[slot];
	if (__atomic_load_n(&e->tree_id, __ATOMIC_ACQUIRE) != owner)
		return 0;
	return dm_cat_owner_ident(e);
}

int
dm_region_check_owner(const dm_region *r, uint64_t offset, uint64_t len, uint64_t ident)
{
	const dm_superblock *sb = r->sb;
	uint64_t	last = offset + len - 1;	/* len > 0 and in the region: dm_region_check_op */
	uint64_t	cat_end = sb->catalog_off + sb->catalog_capacity * DM_CAT_ENTRY_SIZE;

	if (ident == 0 || len == 0)
		return DM_ERR_PERMISSION;
	if (last < sb->chunk_table_off)
		return DM_OK;			/* the superblock: sizes, incarnation, heartbeat */
	if (offset >= sb->data_off)
	{
		uint64_t	first_chunk = (offset - sb->data_off) / sb->chunk_size;
		uint64_t	last_chunk = (last - sb->data_off) / sb->chunk_size;

		if (last_chunk >= sb->nchunks)
			return DM_ERR_PERMISSION;
		for (uint64_t i = first_chunk; i <= last_chunk; i++)
			if (chunk_ident(r, i) != ident)
				return DM_ERR_PERMISSION;
		return DM_OK;
	}
	if (offset >= sb->catalog_off && last < cat_end)
	{
		uint64_t	first_slot = (offset - sb->catalog_off) / DM_CAT_ENTRY_SIZE;
		uint64_t	last_slot = (last - sb->catalog_off) / DM_CAT_ENTRY_SIZE;

		for (uint64_t s = first_slot; s <= last_slot; s++)
		{
			const dm_cat_entry *e = &r->catalog[s];

			if (__atomic_load_n(&e->tree_id, __ATOMIC_ACQUIRE) == 0 ||
				dm_cat_owner_ident(e) != ident)
				return DM_ERR_PERMISSION;
		}
		return DM_OK;
	}
	return DM_ERR_PERMISSION;	/* chunk table, padding, or a range across areas */
}
