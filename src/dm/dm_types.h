/*
 * dm_types.h — basic types shared by every layer of dmindex's remote-memory
 * core: global addresses, status codes and the fixed limits of the design.
 *
 * This header (like everything under src/dm/) includes no PostgreSQL header,
 * so the memnode, the benchmarks and the unit tests use exactly this code.
 */
#ifndef DM_TYPES_H
#define DM_TYPES_H

#include <stddef.h>
#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "dmindex's wire format and region layout assume a little-endian host"
#endif

/*
 * Global address (DESIGN.md §3, DEX §3): bit 63 is reserved (never set in a
 * valid address; the cache keeps swizzle hints beside nodes instead of
 * marking pointers), bits 48..62 hold the memory-node
 * id, bits 0..47 the byte offset inside that node's region.  Address 0 is
 * null; offset 0 of every region holds the superblock, so no real datum has
 * address 0.
 */
typedef uint64_t dm_gaddr;

#define DM_GADDR_NULL		((dm_gaddr) 0)
#define DM_OFFSET_BITS		48
#define DM_OFFSET_MASK		((UINT64_C(1) << DM_OFFSET_BITS) - 1)
#define DM_NODE_ID_MAX		0x7FFF	/* 15 bits: bit 63 is the swizzle bit */
#define DM_GADDR_RESERVED_BIT	(UINT64_C(1) << 63)

static inline dm_gaddr
dm_gaddr_make(uint16_t node_id, uint64_t offset)
{
	return ((uint64_t) (node_id & DM_NODE_ID_MAX) << DM_OFFSET_BITS) |
		(offset & DM_OFFSET_MASK);
}

static inline uint16_t
dm_gaddr_node(dm_gaddr a)
{
	return (uint16_t) ((a >> DM_OFFSET_BITS) & DM_NODE_ID_MAX);
}

static inline uint64_t
dm_gaddr_offset(dm_gaddr a)
{
	return a & DM_OFFSET_MASK;
}

/*
 * Status codes.  Every function of src/dm/ that can fail returns one of
 * these (0 is success); the access method maps them to SQLSTATEs.  The
 * values travel on the wire in reply headers, so never renumber them.
 */
typedef enum dm_status
{
	DM_OK = 0,
	DM_ERR_CONNECT = 1,			/* could not connect / handshake failed */
	DM_ERR_TIMEOUT = 2,			/* no answer within the timeout */
	DM_ERR_CLOSED = 3,			/* peer closed the connection / memnode gone */
	DM_ERR_INCARNATION = 4,		/* memnode restarted: region contents are new */
	DM_ERR_PROTOCOL = 5,		/* malformed frame or reply */
	DM_ERR_VERSION = 6,			/* protocol or format version mismatch */
	DM_ERR_RANGE = 7,			/* address/length outside the region */
	DM_ERR_ALIGN = 8,			/* atomic on an address not 8-byte aligned */
	DM_ERR_NOSPACE = 9,			/* region has no free chunk */
	DM_ERR_NOTFOUND = 10,		/* no such tree / chunk / memnode */
	DM_ERR_EXISTS = 11,			/* tree already exists */
	DM_ERR_INVALID = 12,		/* invalid argument */
	DM_ERR_INTERRUPTED = 13,	/* the wait callback asked to stop waiting */
	DM_ERR_NOMEM = 14,			/* local allocation failed */
	DM_ERR_CATALOG_FULL = 15,	/* no free catalog slot */
	DM_ERR_READONLY = 16,		/* write to a part of the region clients may not write */
	DM_ERR_NOSHM = 17,			/* shm transport requested but not available */
	DM_ERR_TOOBIG = 18,			/* request or reply would exceed the frame limit */
	DM_ERR_CORRUPT = 19,		/* data failed validation (e.g. superblock) */
	DM_ERR_INTERNAL = 20,		/* bug: should never happen */
	DM_ERR_NOTOWNER = 21,		/* key outside this instance's partition of the tree */
	DM_ERR_REPLICA = 22,		/* a write through a read-only (replica) tree handle */
	DM_ERR_FENCED = 23,			/* another writer took the tree over (dm_tree_writer.c) */
	DM_ERR_AUTH = 24,			/* authentication failed (either side) */
	DM_ERR_PERMISSION = 25,		/* memory or tree of another identity */
	DM_ERR_FALLBACK = 26		/* offload declined (split needed, busy...): do it one-sided */
} dm_status;

#define DM_STATUS_MAX DM_ERR_FALLBACK

extern const char *dm_strerror(int status);

/* Kinds of one-sided operation. Values are on the wire. */
typedef enum dm_op_kind
{
	DM_OP_READ = 1,
	DM_OP_WRITE = 2,
	DM_OP_CAS = 3,				/* compare-and-swap 8 bytes; result = old value */
	DM_OP_FAA = 4,				/* fetch-and-add 8 bytes; result = old value */
	DM_OP_FETCH_OR = 5,			/* fetch-and-or 8 bytes; result = old value */
	DM_OP_FETCH_MAX = 6			/* word = max(word, arg0), unsigned; result = old value */
} dm_op_kind;

#define DM_OP_KIND_MAX DM_OP_FETCH_MAX

/*
 * Tree names (DESIGN.md §3: tree catalog).  A tree is named either by the
 * PostgreSQL identity of an index's storage or by a free-form name for
 * standalone use (benchmarks, tests).  Fixed size: it is stored in the
 * catalog and sent on the wire as is.
 */
#define DM_TREE_NAME_LEN 104

typedef enum dm_tree_kind
{
	DM_TREE_NAMED = 1,
	DM_TREE_PG = 2
} dm_tree_kind;

typedef struct dm_tree_name
{
	uint32_t	kind;			/* dm_tree_kind */
	uint32_t	dboid;			/* DM_TREE_PG: database OID */
	uint64_t	sysid;			/* DM_TREE_PG: cluster system identifier */
	uint32_t	relfilenode;	/* DM_TREE_PG: index relfilenode */
	uint32_t	generation;		/* DM_TREE_PG: the creating transaction's xid */
	char		name[DM_TREE_NAME_LEN];	/* DM_TREE_NAMED: NUL-terminated */
} dm_tree_name;

/* Tree names (dm_tree_name.c).  A name is well formed: known kind, NUL-terminated name, ... */
extern int	dm_tree_name_valid(const dm_tree_name *name);
extern int	dm_tree_name_equal(const dm_tree_name *a, const dm_tree_name *b);
/* Convenience constructors. */
extern int	dm_tree_name_named(dm_tree_name *n, const char *name);
extern void dm_tree_name_pg(dm_tree_name *n, uint64_t sysid, uint32_t dboid,
							uint32_t relfilenode, uint32_t generation);

/* What the catalog tells about a tree. */
#define DM_TREE_META_WORDS 15

typedef struct dm_tree_info
{
	dm_tree_name name;
	uint64_t	tree_id;		/* unique owner id: (node id << 48) | sequence */
	dm_gaddr	root_addr;		/* the 8-byte CAS-able root word */
	dm_gaddr	meta_addr;		/* DM_TREE_META_WORDS words the tree's user may write */
	uint64_t	created_unix_ns;
	uint64_t	chunks;			/* chunks this tree owns on this memnode */
	uint64_t	owner_pid;		/* pid of the client that created it */
	uint32_t	slot;			/* catalog slot */
	uint32_t	state;			/* DM_TREE_STATE_* */
} dm_tree_info;

#define DM_TREE_STATE_FREE 0
#define DM_TREE_STATE_LIVE 1

#endif							/* DM_TYPES_H */
