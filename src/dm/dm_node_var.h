/*
 * dm_node_var.h — the VAR node format (DESIGN.md §5.2; layout at the top of
 * dm_tree.h): nodes of trees whose keys have 1..dm_tree_key_max bytes.
 * Slots of fixed size hold an entry's prefix and tid words (and an inner
 * node's child) and where its suffix is; the suffixes are packed in a heap
 * after the slots, after the two fences' suffixes.  Every image is compact
 * (built whole from entries by dm_var_build), so there is no free space to
 * manage.  Included by dm_node.h, after the header it extends; pure
 * functions on a local copy like the rest of it.
 */
#ifndef DM_NODE_VAR_H
#define DM_NODE_VAR_H

#define DM_VAR_HEADER	96		/* the 88-byte header, then dm_var_ext */
/* The longest suffix of any node size: dm_tree_key_max(DM_NODE_MAX) - 8 (780). */
#define DM_VAR_SFX_MAX	((DM_NODE_MAX - DM_VAR_HEADER - 3 * 32) / 5)

/* Bytes 88..96 of a VAR node. */
typedef struct dm_var_ext
{
	uint16_t	low_sfx_len;	/* suffix bytes of the low fence: first in the heap */
	uint16_t	high_sfx_len;	/* of the high fence: next */
	uint16_t	heap_bytes;		/* all suffix bytes, fences' included */
	uint16_t	zero;
} dm_var_ext;

/* A leaf slot: 24 bytes. */
typedef struct dm_var_leaf
{
	uint64_t	key;			/* prefix word */
	uint64_t	tid;
	uint16_t	sfx_off;		/* from the node's start, inside the heap */
	uint16_t	sfx_len;
	uint32_t	zero;
} dm_var_leaf;

/* An inner slot: 32 bytes; child i holds [sep i, sep i+1), sep 0 = the low fence. */
typedef struct dm_var_inner
{
	uint64_t	key;
	uint64_t	tid;
	dm_gaddr	child;			/* at byte 16, as in a FIXED8 inner entry */
	uint16_t	sfx_off;
	uint16_t	sfx_len;
	uint32_t	zero;
} dm_var_inner;

_Static_assert(sizeof(dm_node_hdr) + sizeof(dm_var_ext) == DM_VAR_HEADER, "VAR header is 96 bytes");
_Static_assert(sizeof(dm_var_leaf) == 24, "VAR leaf slot is 24 bytes");
_Static_assert(sizeof(dm_var_inner) == 32, "VAR inner slot is 32 bytes");
_Static_assert(offsetof(dm_var_inner, child) == offsetof(dm_rawinner, child), "child word at byte 16");
_Static_assert(DM_NODE_MAX < 65536, "offsets and heap_bytes are u16");

#define VAR_EXT(buf) ((dm_var_ext *) ((uint8_t *) (buf) + DM_NODE_HEADER))
#define VAR_LEAF(buf) ((dm_var_leaf *) ((uint8_t *) (buf) + DM_VAR_HEADER))
#define VAR_INNER(buf) ((dm_var_inner *) ((uint8_t *) (buf) + DM_VAR_HEADER))

/* Slot bytes of a VAR node of this level. */
static inline uint32_t
dm_var_slot(int level)
{
	return level == 0 ? (uint32_t) sizeof(dm_var_leaf) : (uint32_t) sizeof(dm_var_inner);
}

/* Where the heap starts (the low fence's suffix). */
static inline uint32_t
dm_var_heap_off(const void *buf)
{
	return DM_VAR_HEADER + (uint32_t) NODE_HDR(buf)->count * dm_var_slot(NODE_HDR(buf)->level);
}

/*
 * 96 + count * slot + heap_bytes, rounded up to whole words: a write
 * stores and the checksum covers whole words, and the image's bytes after
 * the heap are zero (dm_var_build).
 */
static inline uint32_t
dm_var_used_bytes(const void *buf)
{
	return (dm_var_heap_off(buf) + VAR_EXT(buf)->heap_bytes + 7) & ~7u;
}

static inline dm_entry
dm_var_make(const void *buf, uint64_t key, uint64_t tid, uint32_t off, uint32_t len)
{
	dm_entry	e = {key, tid};

	if (len > 0)
	{
		e.sfx = (const uint8_t *) buf + off;
		e.sfx_len = len;
	}
	return e;
}

static inline dm_entry
dm_var_low(const void *buf)
{
	return dm_var_make(buf, NODE_HDR(buf)->low.key, NODE_HDR(buf)->low.tid,
					   dm_var_heap_off(buf), VAR_EXT(buf)->low_sfx_len);
}

static inline dm_entry
dm_var_high(const void *buf)
{
	return dm_var_make(buf, NODE_HDR(buf)->high.key, NODE_HDR(buf)->high.tid,
					   dm_var_heap_off(buf) + VAR_EXT(buf)->low_sfx_len, VAR_EXT(buf)->high_sfx_len);
}

static inline dm_entry
dm_var_entry(const void *buf, int i)
{
	const dm_var_leaf *s = &VAR_LEAF(buf)[i];

	return dm_var_make(buf, s->key, s->tid, s->sfx_off, s->sfx_len);
}

static inline dm_entry
dm_var_sep(const void *buf, int i)
{
	const dm_var_inner *s = &VAR_INNER(buf)[i];

	return dm_var_make(buf, s->key, s->tid, s->sfx_off, s->sfx_len);
}

static inline dm_gaddr
dm_var_child(const void *buf, int i)
{
	return VAR_INNER(buf)[i].child;
}

/* Suffix bytes an entry takes in a heap (its key's bytes after the eighth). */
static inline uint32_t
dm_var_sfx_bytes(dm_entry e)
{
	return e.sfx_len;
}

/*
 * Bytes a VAR image of this level with these fences and items needs
 * (before rounding: compare with the node size).
 */
extern uint32_t dm_var_need(int level, dm_entry low, dm_entry high, const dm_item *items, int n);
/*
 * An empty VAR node (count 0) with these fences; DM_ERR_TOOBIG if the
 * fences' suffixes do not fit.
 */
extern int	dm_var_init(void *buf, uint32_t node_size, int level, uint64_t tree_tag,
						dm_entry low, dm_entry high);
/*
 * Rebuild the VAR node in buf (its header kept: lock, version, level,
 * flags, siblings...) as the compact image of these fences and items
 * (leaf: their sep; inner: sep and child).  The entries may point into buf.
 * DM_ERR_TOOBIG (buf unchanged) if they do not fit its size; DM_ERR_INVALID
 * if an item is not in the order a node needs (strictly ascending) or a
 * suffix is longer than any key of the node size can have.
 */
extern int	dm_var_build(void *buf, dm_entry low, dm_entry high, const dm_item *items, int n);
/* The checks dm_node_valid adds for a VAR node (after the common ones): 1 = sound. */
extern int	dm_var_valid_layout(const void *buf, uint32_t node_size);
extern int	dm_var_valid_order(const void *buf);
/*
 * The separator between neighbouring leaf entries l < r (DESIGN.md §5.2,
 * suffix truncation): r itself when the keys are equal, else (p, 0) with p
 * the shortest prefix of r's key above l's key, so l < sep <= r.  Its
 * suffix points into r's.
 */
extern dm_entry dm_var_separator(dm_entry l, dm_entry r);
/*
 * Where to split m items (ascending) of a VAR node of this level and size
 * whose fences are low and high: the index h (1 <= h < m) such that
 * items[0..h) with fences (low, sep) and items[h..m) with fences (sep,
 * high) both fit (sep: dm_var_separator of the two items around the cut
 * for a leaf, items[h].sep for an inner node), as near as possible to half
 * of the bytes each; *sep receives the separator.  -1 if no cut fits.
 */
extern int	dm_var_split_point(int level, uint32_t node_size, dm_entry low, dm_entry high,
							   const dm_item *items, int m, dm_entry *sep);

#endif							/* DM_NODE_VAR_H */
