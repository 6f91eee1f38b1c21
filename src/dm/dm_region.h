/*
 * dm_region.h — layout of a memory node's region and the operations the
 * memnode performs on it: formatting, the chunk allocator, the tree
 * catalog, and bounds checks for one-sided operations.
 *
 * Layout (all offsets from the region start, region size a multiple of
 * DM_REGION_ALIGN):
 *
 *   0                 superblock (dm_superblock), one 4 KiB page
 *   chunk_table_off   nchunks dm_chunk_desc (owner tree id per chunk)
 *   catalog_off       catalog_capacity dm_cat_entry (512 B each)
 *   journal_off       journal_slots batch journal slots (dm_journal.h),
 *                     DM_JOURNAL_SLOT_SIZE each; 0 slots for a region that
 *                     cannot outlive its memnode (anonymous memory)
 *   data_off          nchunks chunks of chunk_size bytes, 2 MiB aligned
 *
 * A region kept in a file outlives its memnode process; a memnode started
 * again on that file reattaches to it (memnode/region_mem.c) when the
 * superblock is intact: magic, format version and sb_checksum, which covers
 * every word that fixes the layout and the incarnation.  Everything else
 * in the superblock is either recomputed on reattach (chunks_used, trees,
 * next_tree_seq: dm_region_recover.c) or only a hint.  Why each piece of
 * memnode metadata is safe against the memnode being killed between any
 * two of its stores is in dm_region_recover.c.
 *
 * Clients may READ anywhere in the region; they may WRITE and use atomics
 * only on the data area and on the first 128 bytes of each catalog entry
 * (the CAS-able root word and the user metadata words).  Everything else is
 * changed only by the memnode under its lock, through these functions.
 *
 * The functions here are not thread-safe: the memnode serialises them with
 * one mutex (they are rare, chunk-granular operations).  They do not call
 * malloc, so a unit test can run them on any suitably aligned buffer.
 */
#ifndef DM_REGION_H
#define DM_REGION_H

#include "dm_types.h"

#define DM_SB_MAGIC			UINT64_C(0x31584544494D4444)	/* "DDMIDEX1" */
#define DM_FORMAT_VERSION	4	/* 2: journal, superblock checksum, clean flag; 3: 88 client bytes per
								 * catalog entry; 4: 512-byte catalog entries, 15 meta words */
#define DM_REGION_ALIGN		(UINT64_C(2) << 20)
#define DM_CHUNK_MIN		(UINT64_C(64) << 10)
#define DM_CAT_ENTRY_SIZE	512
#define DM_CAT_USER_BYTES	128	/* root word + meta words: client-writable */

#define DM_SB_LIVE			UINT64_C(0x4C495645)	/* "LIVE" */
#define DM_SB_DEAD			UINT64_C(0x44454144)	/* "DEAD": memnode shut down */
#define DM_SB_REPLACED		UINT64_C(0x5245504C)	/* "REPL": a new memnode took over */
#define DM_SB_RECOVERING	UINT64_C(0x52435652)	/* "RCVR": a memnode is reattaching */

#define DM_SB_CLEAN			UINT64_C(0x4E41454C43)	/* "CLEAN": shut down cleanly */

typedef struct dm_superblock
{
	uint64_t	magic;
	uint32_t	format_version;
	uint32_t	node_id;
	uint64_t	region_size;
	uint64_t	incarnation;	/* random, new whenever contents start fresh */
	uint64_t	chunk_size;
	uint64_t	chunk_table_off;
	uint64_t	nchunks;
	uint64_t	catalog_off;
	uint64_t	catalog_capacity;
	uint64_t	data_off;
	uint64_t	created_unix_ns;
	/* words the memnode keeps changing (shm clients watch them) */
	uint64_t	state;			/* DM_SB_LIVE, or DM_SB_DEAD once the memnode is gone */
	uint64_t	heartbeat_ns;	/* CLOCK_MONOTONIC of the memnode's last heartbeat */
	uint64_t	chunks_used;
	uint64_t	trees;
	uint64_t	next_tree_seq;
	uint64_t	next_free_hint;	/* where the chunk allocator starts looking */
	/* format 2: fixed at format time, covered by sb_checksum */
	uint64_t	journal_off;
	uint64_t	journal_slots;
	uint64_t	journal_slot_size;
	uint64_t	sb_checksum;	/* dm_region_sb_checksum() */
	/* format 2: kept by the memnode across its restarts */
	uint64_t	clean;			/* DM_SB_CLEAN after a clean shutdown, 0 while a memnode runs */
	uint64_t	boot_id[2];		/* the machine's boot the region was last attached in */
	uint64_t	attach_count;	/* memnode starts on this region (1 = the one that formatted it) */
	uint64_t	attach_unix_ns;	/* when the last one started */
} dm_superblock;

typedef struct dm_chunk_desc
{
	uint64_t	owner;			/* tree id, 0 = free */
	uint64_t	alloc_unix_ns;
	uint64_t	used;			/* bump pointer: bytes from the chunk start ever carved (chunk_size for whole chunks) */
	uint64_t	free_head;		/* region offset of the chunk's first returned range, 0 = none */
} dm_chunk_desc;

/*
 * A range returned inside a chunk (below its bump pointer) starts with this
 * header, written by the memnode; the ranges of one chunk form a list sorted
 * by offset, adjacent ranges merged.  It lives in the data area, which
 * clients may write, so every link is validated before it is followed and a
 * damaged list is dropped (its bytes stay allocated) rather than trusted.
 * Word 0 (a node's lock word) is non-zero, so a stray lock CAS on freed
 * memory fails, and word 3 (a node's magic) is zero, so a stray read of it
 * never validates as a node.
 */
#define DM_FREE_MAGIC UINT64_C(0x45455246444D4444)	/* "DDMDFREE" */
typedef struct dm_free_range
{
	uint64_t	magic;			/* DM_FREE_MAGIC */
	uint64_t	next;			/* region offset of the next range of the chunk, 0 = last */
	uint64_t	size;			/* bytes, a multiple of DM_SLAB_ALIGN */
	uint64_t	zero;
} dm_free_range;

typedef struct dm_cat_entry
{
	/* client-writable part (DM_CAT_USER_BYTES) */
	uint64_t	root;			/* CAS-able root word */
	uint64_t	meta[DM_TREE_META_WORDS];
	/* memnode-owned part */
	uint64_t	tree_id;		/* 0 = free slot */
	uint64_t	state;
	uint64_t	created_unix_ns;
	uint64_t	owner_pid;		/* low 32 bits: creating client's pid; high 32: its identity (below) */
	uint64_t	chunks;
	dm_tree_name name;
	uint64_t	pad[27];		/* to DM_CAT_ENTRY_SIZE */
} dm_cat_entry;

/*
 * The identity that owns a tree (memnodes with --auth-file): the high 32
 * bits of owner_pid hold dm_auth_ident_tag of the creating identity, 0 if
 * it was created without authentication (then nobody may use it once
 * authentication is on).  A pid fits in the low 32 bits.
 */
#define DM_CAT_PID_MASK UINT64_C(0xFFFFFFFF)
static inline uint64_t
dm_cat_owner_ident(const dm_cat_entry *e)
{
	return __atomic_load_n(&e->owner_pid, __ATOMIC_RELAXED) >> 32;
}

typedef struct dm_region
{
	uint8_t    *base;
	uint64_t	size;
	dm_superblock *sb;
	dm_chunk_desc *chunks;
	dm_cat_entry *catalog;
	uint8_t    *journal;		/* journal_slots slots, or NULL */
	uint16_t	node_id;
} dm_region;

#define DM_JOURNAL_SLOT_SIZE	(UINT64_C(1) << 20)
#define DM_JOURNAL_MAX_SLOTS	256

/*
 * Lay out a fresh region over base[0..size): superblock, empty chunk table,
 * catalog and journal_slots empty journal slots (0: none).  size and
 * chunk_size are rounded as the layout requires; DM_ERR_INVALID if no chunk
 * fits.
 */
extern int	dm_region_format(dm_region *r, void *base, uint64_t size,
							 uint16_t node_id, uint64_t chunk_size,
							 uint32_t catalog_capacity, uint32_t journal_slots,
							 uint64_t incarnation, uint64_t now_unix_ns);

/*
 * Attach to an already formatted region, validating its superblock: magic
 * (else DM_ERR_CORRUPT), format version (DM_ERR_VERSION), checksum, size
 * and layout (DM_ERR_CORRUPT).
 */
extern int	dm_region_attach(dm_region *r, void *base, uint64_t size);

/* The checksum of the superblock's fixed words (layout and incarnation). */
extern uint64_t dm_region_sb_checksum(const dm_superblock *sb);

/*
 * Make the memnode-owned metadata of a region a memnode was killed on
 * consistent again (dm_region_recover.c says why each fix is enough):
 * counters recomputed, free lists checked, chunks no live tree owns freed.
 * Runs on every reattach, before any client is served.  What it changed is
 * counted in *out (may be NULL).
 */
typedef struct dm_region_recovery
{
	uint64_t	chunks_orphaned;	/* owned by a tree id no catalog entry has: freed */
	uint64_t	chunks_unused;	/* owned with nothing carved (alloc cut short): freed */
	uint64_t	chunks_cleared;	/* free descriptors with stale fields: zeroed */
	uint64_t	lists_dropped;	/* damaged returned-range lists (their bytes leak to the owner) */
	uint64_t	counters_fixed;	/* chunks_used, trees, per-tree chunk counts, next_tree_seq */
	uint64_t	entries_bad;	/* catalog entries that cannot be valid: region not usable */
} dm_region_recovery;
extern int	dm_region_recover(dm_region *r, dm_region_recovery *out);

/* Chunk allocator: chunks are zeroed when handed out. */
extern int	dm_region_chunk_alloc(dm_region *r, uint64_t owner, uint64_t now_unix_ns,
								  uint64_t *offset);
extern int	dm_region_chunk_free(dm_region *r, uint64_t offset);
extern uint64_t dm_region_chunk_free_owner(dm_region *r, uint64_t owner);

/*
 * Slab allocation: size bytes (a multiple of DM_SLAB_ALIGN, at most a
 * chunk), zeroed, for the owner: first fit among the ranges returned to the
 * owner's chunks, else carved at the bump pointer of a chunk the owner
 * already has, else from a new chunk.  Lets many clients (every PostgreSQL
 * backend) allocate tree nodes in small grants without stranding chunks.
 * DM_SLAB_ALIGN is the smallest node size, so a grant can be one node.
 */
#define DM_SLAB_ALIGN 256
extern int	dm_region_slab_alloc(dm_region *r, uint64_t owner, uint64_t size,
								 uint64_t now_unix_ns, uint64_t *offset);

/*
 * Return [offset, offset + size) — inside one chunk of owner, carved and
 * not already returned — for reuse by the owner's later slab allocations.
 * A range that ends at the chunk's bump pointer lowers it instead; a chunk
 * left with nothing carved goes back to the free chunks.  DM_ERR_INVALID
 * for a range that is misaligned, not the owner's, or (partly) free already.
 */
extern int	dm_region_slab_free(dm_region *r, uint64_t owner, uint64_t offset, uint64_t size);

/* Bytes handed out to clients and not returned (whole chunks count whole). */
extern uint64_t dm_region_bytes_in_use(dm_region *r);

/* Tree catalog. */
extern int	dm_region_cat_create(dm_region *r, const dm_tree_name *name,
								 uint64_t owner_pid, uint64_t now_unix_ns,
								 dm_tree_info *out);
/* The same, recording the identity (dm_auth_ident_tag) that owns the tree. */
extern int	dm_region_cat_create_owned(dm_region *r, const dm_tree_name *name,
									   uint64_t owner_pid, uint64_t owner_ident,
									   uint64_t now_unix_ns, dm_tree_info *out);
extern int	dm_region_cat_open(dm_region *r, const dm_tree_name *name, dm_tree_info *out);
/*
 * The owning identity of a live tree: by name (slot of the entry in *slot,
 * may be NULL) or by tree id.  DM_ERR_NOTFOUND if there is no such tree.
 */
extern int	dm_region_cat_owner(const dm_region *r, const dm_tree_name *name,
								uint64_t *owner_ident, uint32_t *slot);
extern int	dm_region_tree_owner(const dm_region *r, uint64_t tree_id, uint64_t *owner_ident);
extern int	dm_region_cat_drop(dm_region *r, const dm_tree_name *name, uint64_t *chunks_freed);
/*
 * List live trees from start_slot that match the filter (kind 0 = any;
 * dboid/sysid 0 = any).  Fills at most max entries; *next_slot is where the
 * next call should start (catalog_capacity when the end was reached).
 */
extern uint32_t dm_region_cat_list(dm_region *r, uint32_t start_slot, uint32_t max,
								   uint32_t kind, uint32_t dboid, uint64_t sysid,
								   dm_tree_info *out, uint32_t *next_slot);
/* The same, listing only the trees of one identity (memnodes with --auth-file). */
extern uint32_t dm_region_cat_list_owned(dm_region *r, uint32_t start_slot, uint32_t max,
										 uint32_t kind, uint32_t dboid, uint64_t sysid,
										 const uint64_t *owner_ident,
										 dm_tree_info *out, uint32_t *next_slot);

/* Live named entries whose name starts with prefix (under the region lock). */
extern uint64_t dm_region_cat_count_named(const dm_region *r, const char *prefix);

/*
 * Bounds checks for a one-sided op on this region (offset = local offset).
 * READ: anywhere inside the region.  WRITE and atomics: data area or the
 * client-writable 128 bytes of one catalog entry.  Atomics must be 8-byte
 * aligned.  Returns DM_OK, DM_ERR_RANGE, DM_ERR_READONLY or DM_ERR_ALIGN.
 */
extern int	dm_region_check_op(const dm_region *r, int kind, uint64_t offset, uint64_t len);

/*
 * Tenant isolation (memnodes with --auth-file), on top of dm_region_check_op:
 * may the identity with tag `ident` do this op on [offset, offset + len)?
 * Yes for READs of the superblock page; for the catalog entries of its own
 * live trees; for chunks owned by its own live trees.  No (DM_ERR_PERMISSION)
 * for anything else: the chunk table, other identities' entries and chunks,
 * free chunks, chunks whose owner is not a live tree.  Reads the chunk table
 * and catalog without a lock (8-byte loads): the memnode makes sure no freed
 * chunk is handed out again while a batch checked against its old owner
 * still runs (memnode/auth.c).
 */
extern int	dm_region_check_owner(const dm_region *r, uint64_t offset, uint64_t len, uint64_t ident);

#endif							/* DM_REGION_H */
