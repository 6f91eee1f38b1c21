/*
 * dm_proto.h — the memnode wire protocol: frame layout, request and reply
 * bodies, and the functions that encode and (strictly) decode them.
 *
 * Every frame starts with a 24-byte header.  A connection begins with HELLO
 * (versioned handshake; with AUTH after it when the memnode authenticates
 * its clients, dm_auth.h); after that the client sends BATCH frames (many
 * one-sided operations, one reply: "doorbell batching") and RPC frames.
 * Requests are answered in order, one reply per request, with the request's
 * seq echoed.  All integers are little-endian; all bodies are multiples of 8
 * bytes so that payloads stay 8-byte aligned.
 *
 * The decoders never trust a length: they are what stands between a hostile
 * or broken peer and the memnode, and the fuzz tests exercise them.
 */
#ifndef DM_PROTO_H
#define DM_PROTO_H

#include "dm_auth.h"
#include "dm_types.h"

#define DM_PROTO_MAGIC		0x58494D44u	/* "DMIX" */
/*
 * 2: dm_wire_op.flags (DM_OPF_GUARD: conditional batches).  A version-1
 * memnode would ignore the flag and apply a fenced-off write, so the
 * versions must not mix.
 * 3: authentication (identity and nonce in HELLO, the AUTH frame) and the
 * statistics auth_failures / access_denied.  A memnode answers a HELLO of
 * any other version with DM_ERR_VERSION, whatever its length, so an older
 * client reports "protocol version mismatch" rather than a closed socket.
 * 4: the fetch-and-max op (DM_OP_FETCH_MAX: a writer raises its tree's
 * high-water mark in the batch that writes the node, not in a round trip
 * of its own), and a statistics counter for it.
 * 5: offloaded requests carry a token, and DM_RPC_OFF_DRAIN cancels
 * tokens and tells whether they still run (a client that gave up on an
 * offloaded write learns when it can no longer land).
 * 6: an offloaded write carries the tree's high-water raise (the executor's
 * first write batch does the fetch-and-max, as a one-sided write's batch
 * does), so a one-row transaction's offloaded flush is one round trip, not
 * two; the reply says how far the word was raised.
 * 7: RPCs over UCX active messages: UCX_ATTACH carries the client's UCX
 * worker address and returns the connection's RPC token; the statistic
 * rpcs_ucx.
 */
#define DM_PROTO_VERSION	7

#define DM_FRAME_MAX		(16u << 20)	/* largest frame either way */
#define DM_BATCH_MAX_OPS	4096
#define DM_SHM_PATH_LEN		128

typedef enum dm_msg_type
{
	DM_MSG_HELLO = 1,
	DM_MSG_BATCH = 2,
	DM_MSG_RPC = 3,
	DM_MSG_AUTH = 4				/* the client's proof, when HELLO asked for it */
} dm_msg_type;

#define DM_MSG_REPLY 0x8000		/* or-ed into the type of a reply */

typedef struct dm_frame_hdr
{
	uint32_t	magic;			/* DM_PROTO_MAGIC */
	uint32_t	length;			/* whole frame, header included */
	uint16_t	type;			/* dm_msg_type, | DM_MSG_REPLY in replies */
	uint16_t	flags;			/* none defined yet: must be 0 */
	uint32_t	status;			/* replies: dm_status; requests: 0 */
	uint64_t	seq;			/* chosen by the client, echoed in the reply */
} dm_frame_hdr;

#define DM_HDR_SIZE ((uint32_t) sizeof(dm_frame_hdr))

/* HELLO */
#define DM_HELLO_TEAR 0x1		/* test mode: execute READ/WRITE in torn 8-byte pieces */

typedef struct dm_hello_req
{
	uint32_t	version;		/* DM_PROTO_VERSION */
	uint32_t	flags;			/* DM_HELLO_* */
	uint64_t	client_pid;
	char		client_name[32];
	/* version 3: "" = no credentials; else an identity of the memnode's auth file */
	char		identity[DM_AUTH_ID_LEN];
	uint8_t		client_nonce[DM_AUTH_NONCE_LEN];	/* fresh random bytes */
} dm_hello_req;

/*
 * The memnode answers a HELLO with a dm_hello_rep.  Without --auth-file that
 * is the whole handshake.  With it, the reply has DM_HELLO_REP_AUTH,
 * server_nonce and nothing else (version aside); the client then sends AUTH
 * (its proof, dm_auth.h) and the AUTH reply carries the real dm_hello_rep
 * and the memnode's proof.  A failed or missing proof is answered with
 * DM_ERR_AUTH and the connection is closed; no op has run on it.
 */
#define DM_HELLO_REP_SHM 0x1	/* region exported at shm_path */
#define DM_HELLO_REP_AUTH 0x2	/* authentication required: send AUTH */

typedef struct dm_hello_rep
{
	uint32_t	version;
	uint32_t	node_id;
	uint64_t	incarnation;
	uint64_t	region_size;
	uint64_t	chunk_size;
	uint64_t	data_offset;	/* first chunk's offset */
	uint32_t	flags;			/* DM_HELLO_REP_* */
	uint32_t	pad;
	char		shm_path[DM_SHM_PATH_LEN];
	uint8_t		server_nonce[DM_AUTH_NONCE_LEN];	/* with DM_HELLO_REP_AUTH */
} dm_hello_rep;

/* AUTH request body */
typedef struct dm_auth_req
{
	uint8_t		mac[DM_AUTH_MAC_LEN];	/* dm_auth_mac(DM_AUTH_ROLE_CLIENT) */
} dm_auth_req;

/* AUTH reply body (status DM_OK only; else empty) */
typedef struct dm_auth_rep
{
	dm_hello_rep hello;			/* what HELLO answers without authentication */
	uint8_t		mac[DM_AUTH_MAC_LEN];	/* dm_auth_mac(DM_AUTH_ROLE_SERVER) */
} dm_auth_rep;

/*
 * BATCH request body: dm_batch_hdr, nops dm_wire_op, then the payload of
 * every WRITE in op order, each padded to 8 bytes.
 * BATCH reply body: dm_batch_hdr (bad_index set on failure), then — on
 * success only — nops uint64 results (old value for atomics, 0 otherwise),
 * then the data of every READ in op order, each padded to 8 bytes.
 * The memnode validates the whole batch before executing any of it, so a
 * batch is either rejected whole or executed whole, in order — except that
 * a CAS flagged DM_OPF_GUARD that fails (old value != expected) ends the
 * batch: the ops after it are skipped (result 0, READ data zero), and the
 * guard's own result tells the client so.  This is how a writer makes a
 * write conditional on the node's version (dm_tree_io.c): a stale writer's
 * whole batch comes to nothing, whenever it arrives.
 */
typedef struct dm_batch_hdr
{
	uint32_t	nops;
	uint32_t	bad_index;		/* reply: index of the op that failed, else ~0 */
} dm_batch_hdr;

typedef struct dm_wire_op
{
	uint8_t		kind;			/* dm_op_kind */
	uint8_t		flags;			/* DM_OPF_* */
	uint8_t		pad[2];
	uint32_t	len;			/* READ/WRITE: bytes; atomics: 8 */
	uint64_t	addr;			/* global address */
	uint64_t	arg0;			/* CAS: expected; FAA: addend; FETCH_OR: mask */
	uint64_t	arg1;			/* CAS: desired */
} dm_wire_op;

/* Op flags.  GUARD: CAS only; if it fails, skip the rest of the batch. */
#define DM_OPF_GUARD	0x1
#define DM_OPF_ALL		DM_OPF_GUARD

/* RPC body: dm_rpc_hdr then the code's argument struct (request or reply). */
typedef enum dm_rpc_code
{
	DM_RPC_PING = 1,
	DM_RPC_CHUNK_ALLOC = 2,
	DM_RPC_CHUNK_FREE = 3,
	DM_RPC_CHUNK_FREE_OWNER = 4,
	DM_RPC_CAT_CREATE = 5,
	DM_RPC_CAT_OPEN = 6,
	DM_RPC_CAT_DROP = 7,
	DM_RPC_CAT_LIST = 8,
	DM_RPC_STATS = 9,
	DM_RPC_SLAB_ALLOC = 10,
	DM_RPC_SLAB_FREE = 11,
	/* the offload executor (memnode/offload.c, src/dm/dm_tree_exec.c) */
	DM_RPC_OFF_LOOKUP = 12,
	DM_RPC_OFF_SCAN = 13,
	DM_RPC_OFF_INSERT = 14,
	DM_RPC_OFF_DELETE = 15,
	DM_RPC_OFF_LOAD = 16,
	DM_RPC_OFF_DRAIN = 17,
	/*
	 * 20: the ucx transport's attach (dm_ucx.c): how to reach the region
	 * one-sidedly.  Only after the handshake, i.e. after authentication:
	 * the rkey it returns grants the whole region.  Kept apart from the
	 * numbers 12-19 (reserved for other RPCs); DM_RPC_CODE_MAX stays the
	 * end of the dense range.
	 */
	DM_RPC_UCX_ATTACH = 20
} dm_rpc_code;

#define DM_RPC_CODE_MAX DM_RPC_OFF_DRAIN

typedef struct dm_rpc_hdr
{
	uint32_t	code;			/* dm_rpc_code */
	uint32_t	pad;
} dm_rpc_hdr;

typedef struct dm_rpc_u64
{
	uint64_t	value;
} dm_rpc_u64;					/* PING token, CHUNK_FREE addr, FREE_OWNER owner / count */

typedef struct dm_rpc_ping_rep
{
	uint64_t	token;
	uint64_t	server_mono_ns;
} dm_rpc_ping_rep;

typedef struct dm_rpc_slab_req
{
	uint64_t	owner;
	uint64_t	size;
} dm_rpc_slab_req;

/* SLAB_FREE: give back [addr, addr + size) of a slab of owner (no reply args) */
typedef struct dm_rpc_slab_free_req
{
	uint64_t	owner;
	dm_gaddr	addr;
	uint64_t	size;
} dm_rpc_slab_free_req;

/*
 * UCX_ATTACH request: dm_rpc_ucx_attach_req, the client's UCX worker
 * address (the memnode's replies to RPCs over UCX go there).  Reply: this
 * header, then rkey_len bytes of packed rkey and addr_len bytes of the
 * memnode's UCX worker address.  base is the region's virtual address at
 * the memnode (what one-sided operations address: base + offset).  token
 * names this control connection in RPCs sent over UCX (below).
 * DM_ERR_NOSHM if the memnode does not export its region through UCX.
 */
#define DM_UCX_ADDR_MAX 4088	/* a client's worker address */
typedef struct dm_rpc_ucx_attach_req
{
	uint32_t	addr_len;
	uint32_t	flags;			/* DM_UCX_PEER_ERRORS */
	uint8_t		addr[DM_UCX_ADDR_MAX];
} dm_rpc_ucx_attach_req;

/*
 * The client's endpoint asks for peer failure reports (error handling mode
 * PEER): the memnode's endpoint to it must do the same, as UCX refuses a
 * pair of endpoints whose error handling differs.
 */
#define DM_UCX_PEER_ERRORS 0x1

typedef struct dm_rpc_ucx_rep
{
	uint64_t	base;
	uint32_t	rkey_len;
	uint32_t	addr_len;
	uint32_t	flags;			/* DM_UCX_ALLOCATED: region from ucp_mem_map(ALLOCATE) */
	uint32_t	pad;
	uint64_t	token[2];		/* this connection's RPC token (random; secret) */
} dm_rpc_ucx_rep;

#define DM_UCX_ALLOCATED 0x1
#define DM_UCX_BLOB_MAX 6144	/* rkey + worker address */

/*
 * RPCs over UCX (after UCX_ATTACH): an active message DM_UCX_AM_RPC to the
 * memnode's worker, its header a dm_ucx_am_hdr with the connection's token,
 * its data one RPC frame exactly as over tcp (header, seq, body); the reply
 * frame comes back as DM_UCX_AM_REPLY to the client's worker with the same
 * header.  The memnode runs it as a frame of the control connection the
 * token names (its identity, its worker thread, its hang-up check); an
 * unknown token is dropped unanswered.  Only DM_MSG_RPC frames travel so.
 */
#define DM_UCX_AM_RPC	1
#define DM_UCX_AM_REPLY	2
typedef struct dm_ucx_am_hdr
{
	uint64_t	token[2];
} dm_ucx_am_hdr;

typedef struct dm_rpc_alloc_rep
{
	dm_gaddr	chunk;
	uint64_t	size;
} dm_rpc_alloc_rep;				/* CHUNK_ALLOC and SLAB_ALLOC */

#define DM_LIST_MAX 64			/* catalog entries per CAT_LIST reply */

typedef struct dm_rpc_list_req
{
	uint32_t	start_slot;
	uint32_t	max;			/* 1..DM_LIST_MAX */
	uint32_t	kind;			/* 0 = any, else dm_tree_kind */
	uint32_t	dboid;			/* 0 = any (DM_TREE_PG only) */
	uint64_t	sysid;			/* 0 = any (DM_TREE_PG only) */
} dm_rpc_list_req;

typedef struct dm_rpc_list_rep
{
	uint32_t	count;
	uint32_t	next_slot;		/* where to continue; == capacity when done */
	/* followed by count dm_tree_info */
} dm_rpc_list_rep;

/*
 * Offloaded operations (DM_RPC_OFF_LOOKUP..DELETE): run the rest of an
 * operation on the memnode's CPU from node `start` (at `level`, on this
 * memnode) down to the leaves, with the tree parameters the client's handle
 * has (the memnode keeps no per-tree state).  LOOKUP and SCAN return the
 * entries in [lo, hi] (lo_incl / hi_incl; LOOKUP: of one key) from lo
 * upwards, at most max; INSERT and DELETE change the one entry lo.  Reply:
 * dm_rpc_off_rep, then `count` dm_entry_wire.  Status DM_ERR_FALLBACK: nothing
 * was changed; do the operation one-sided.
 */
typedef struct dm_entry_wire
{
	uint64_t	key;
	uint64_t	tid;
} dm_entry_wire;				/* a dm_tree.h dm_entry's prefix and tid words (no suffix: FIXED8 trees only) */

#define DM_OFF_MAX_ENTRIES 4096	/* entries per SCAN reply */
#define DM_OFF_MAX_CHANGED 4	/* nodes an offloaded write may change */

typedef struct dm_rpc_off_req
{
	uint64_t	tree_id;
	dm_gaddr	start;			/* the node to start from (a node of this memnode) */
	uint64_t	writer;			/* the client's writer word (writes are fenced by it) */
	dm_gaddr	fence;			/* the tree's fence word on this memnode (writes) */
	dm_entry_wire lo;			/* the entry (INSERT, DELETE) or the lower bound */
	dm_entry_wire hi;			/* upper bound (SCAN, LOOKUP) */
	uint32_t	level;			/* level of start */
	uint32_t	max;			/* SCAN/LOOKUP: entries at most (1..DM_OFF_MAX_ENTRIES) */
	uint32_t	node_size;
	uint32_t	lock_timeout_ms;
	uint32_t	flags;			/* DM_OFF_LO_INCL, DM_OFF_HI_INCL */
	uint32_t	pad;
	uint64_t	token;			/* the client's name for this request (DM_RPC_OFF_DRAIN); 0 = none */
	dm_gaddr	hw_word;		/* writes: the tree's high-water word when it is on this memnode, */
	uint64_t	hw_mark;		/* ... and the mark to raise it to first (0: none; dm_tree_writer.c) */
} dm_rpc_off_req;

#define DM_OFF_LO_INCL	0x1
#define DM_OFF_HI_INCL	0x2

typedef struct dm_rpc_off_rep
{
	uint32_t	count;			/* entries that follow */
	uint32_t	done;			/* SCAN/LOOKUP: 1 = nothing more in range; INSERT/DELETE: existed */
	dm_entry_wire resume;		/* SCAN/LOOKUP not done: continue with entries > resume */
	uint32_t	nchanged;		/* nodes this operation wrote (the client invalidates its copies) */
	uint32_t	inflight;		/* offloads running on the memnode when this one ended */
	uint32_t	slots;			/* offloads that may run at once there */
	uint32_t	start_level;	/* the start node's level as the executor found it */
	dm_gaddr	changed[DM_OFF_MAX_CHANGED];
	uint64_t	exec_ns;		/* time the executor spent on it */
	uint64_t	high_water;		/* the high-water word as the executor's write raised it (0: not raised) */
} dm_rpc_off_rep;

/* DM_RPC_OFF_LOAD: the executor's load (no request args). */
typedef struct dm_rpc_off_load_rep
{
	uint32_t	slots;			/* --offload-threads: offloads that may run at once (0 = none) */
	uint32_t	inflight;		/* running now */
	uint64_t	offloads;		/* executed since start */
	uint64_t	declined_busy;	/* answered DM_ERR_FALLBACK because every slot was taken */
	uint64_t	fallbacks;		/* answered DM_ERR_FALLBACK for a structural reason */
	uint64_t	busy_ns;		/* summed executor time */
	uint64_t	uptime_ns;
} dm_rpc_off_load_rep;

/*
 * DM_RPC_OFF_DRAIN: the client gave up waiting for the offloaded requests
 * named by these tokens (a timeout, a cancel: their outcome is unknown to
 * it).  From this request on none of them starts; the reply says how many
 * are still running.  Once that is 0, none of their writes can land any
 * more, and the client may trust a fresh read of what they might have
 * written (dm_offload.c, dm_tree_drain_settle).
 */
#define DM_OFF_DRAIN_MAX 30		/* the request fits an RPC's 256 bytes */

typedef struct dm_rpc_off_drain_req
{
	uint32_t	n;				/* tokens that follow (1..DM_OFF_DRAIN_MAX) */
	uint32_t	pad;
	uint64_t	tokens[DM_OFF_DRAIN_MAX];
} dm_rpc_off_drain_req;

typedef struct dm_rpc_off_drain_rep
{
	uint32_t	running;		/* of the named requests, executing now */
	uint32_t	pad;
} dm_rpc_off_drain_rep;

/* Memnode-wide statistics, as returned by DM_RPC_STATS. */
typedef struct dm_node_stats
{
	uint64_t	region_size;
	uint64_t	chunk_size;
	uint64_t	chunks_total;
	uint64_t	chunks_used;
	uint64_t	trees;
	uint64_t	catalog_capacity;
	uint64_t	incarnation;
	uint64_t	uptime_ms;
	uint64_t	connections;	/* currently open */
	uint64_t	connections_total;
	uint64_t	frames_bad;		/* malformed frames (connection closed) */
	uint64_t	requests_rejected;	/* well-formed but refused (bounds etc.) */
	uint64_t	batches;
	uint64_t	ops[DM_OP_KIND_MAX + 1];	/* by dm_op_kind */
	uint64_t	rpcs;
	uint64_t	bytes_in;
	uint64_t	bytes_out;
	uint32_t	node_id;
	uint32_t	threads;
	uint64_t	bytes_in_use;	/* handed out to clients, not returned (chunks_used is coarser) */
	uint64_t	auth_failures;	/* connections refused at authentication */
	uint64_t	access_denied;	/* requests refused: another identity's memory or tree */
	uint64_t	rpcs_ucx;		/* of rpcs, those that came over UCX active messages */
} dm_node_stats;

/* Fill in a header for a frame of the given type and total length. */
extern void dm_hdr_init(dm_frame_hdr *h, uint16_t type, uint32_t length, uint64_t seq);

/*
 * Validation of an incoming header: magic, flags, and a length in
 * [DM_HDR_SIZE, max_len] that is a multiple of 8 (the caller checks the
 * type).  Returns DM_OK or DM_ERR_PROTOCOL / DM_ERR_TOOBIG.
 */
extern int	dm_hdr_check(const dm_frame_hdr *h, uint32_t max_len);

/* Size of the whole request frame (header included) for a batch; 0 if too big. */
extern uint64_t dm_batch_request_size(const dm_wire_op *ops, uint32_t nops);
/* Size of the whole successful reply frame for that batch; 0 if too big. */
extern uint64_t dm_batch_reply_size(const dm_wire_op *ops, uint32_t nops);

/*
 * Structural decode of a BATCH request body (the memnode side): checks that
 * nops is in range, that every op has a known kind, a length that fits the
 * kind, and that the WRITE payloads account exactly for the rest of the body.
 * On success *ops points into body and *payload at the first WRITE payload.
 * Does not check addresses: that is the region's job.
 */
extern int	dm_batch_decode(const uint8_t *body, uint32_t body_len,
							const dm_wire_op **ops, uint32_t *nops,
							const uint8_t **payload, uint32_t *bad_index);

/* Size of an RPC request body for a code (after dm_rpc_hdr); -1 if unknown code. */
extern int	dm_rpc_request_size(uint32_t code);

static inline uint32_t
dm_pad8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

#endif							/* DM_PROTO_H */
