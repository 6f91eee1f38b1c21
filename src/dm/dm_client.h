/*
 * dm_client.h — the transport interface: one client (one per process or
 * backend, not thread-safe) holding connections to several memnodes and
 * routing one-sided operations by global address.
 *
 * Backends:
 *   tcp  the memnode CPU executes each batch (own protocol, any host);
 *   shm  the memnode exports its region as a shared-memory file; the client
 *        maps it and executes ops itself with __atomic operations.  The TCP
 *        connection stays open for the handshake and RPCs.
 *   ucx  one-sided get/put/atomics through UCX (RDMA verbs, or UCX's tcp or
 *        shared memory) on the region the memnode exports with --ucx; the
 *        TCP connection carries the handshake and the rkey, RPCs travel as
 *        UCX active messages on the same endpoint as the data.
 *
 * Every wait has a timeout.  Errors are dm_status codes; dm_client_error()
 * gives a one-line detail (which memnode, what happened) for messages.
 * After a transport error a connection is "broken": its ops fail at once
 * with the same code until dm_client_reconnect().  A memnode that comes back
 * with the same incarnation (it reattached to its region file, which kept
 * every tree) is simply reconnected to.  One that comes back with another
 * incarnation is reported as DM_ERR_INCARNATION and stays so: the data that
 * was there is gone, and only the caller can decide what that means (the
 * access method tells the user to REINDEX).
 */
#ifndef DM_CLIENT_H
#define DM_CLIENT_H

#include "dm_types.h"
#include "dm_proto.h"

typedef struct dm_client dm_client;

/*
 * Wait callback: wait until fd is readable (want_write = 0) or writable,
 * at most timeout_ms.  Returns 1 when ready, 0 on timeout, -1 to abort the
 * wait (e.g. PostgreSQL has an interrupt pending): the operation then fails
 * with DM_ERR_INTERRUPTED and the connection is broken (its reply may still
 * be in flight).  NULL means poll().
 */
typedef int (*dm_wait_fn) (void *arg, int fd, int want_write, int timeout_ms);

typedef enum dm_backend
{
	DM_BACKEND_AUTO = 0,		/* shm when the memnode exports it and we can map it, else tcp */
	DM_BACKEND_TCP = 1,
	DM_BACKEND_SHM = 2,			/* shm or fail with DM_ERR_NOSHM */
	DM_BACKEND_UCX = 3			/* one-sided through UCX (dm_ucx.c) or fail with DM_ERR_NOSHM */
} dm_backend;

#define DM_CLIENT_TEAR 0x1		/* test mode: torn 8-byte-piece READ/WRITE */

typedef struct dm_client_opts
{
	dm_backend	backend;
	uint32_t	flags;			/* DM_CLIENT_* */
	int			connect_timeout_ms;	/* 0 = default (5000) */
	int			op_timeout_ms;	/* 0 = default (10000) */
	/*
	 * Poll for a reply this long before sleeping (microseconds; 0 = default
	 * 50, negative = never).  A sleeping thread's wake-up can cost more than
	 * the round trip itself (tens of microseconds on a VM), so a short poll
	 * makes single-client latency what the network allows.
	 */
	int			spin_us;
	dm_wait_fn	wait;
	void	   *wait_arg;
	const char *name;			/* shown in the memnode's log */
	/*
	 * Credentials (dm_auth.h; both or neither, copied): authenticate every
	 * connection as auth_identity, and accept only memnodes that prove they
	 * know auth_secret too.  With credentials, a memnode that does not ask
	 * for authentication is refused (DM_ERR_AUTH): it could be anyone.
	 */
	const char *auth_identity;
	const uint8_t *auth_secret;
	uint32_t	auth_secret_len;
} dm_client_opts;

/* Per-connection counters: the numbers the papers report. */
typedef struct dm_counters
{
	uint64_t	round_trips;	/* batches posted (one per memnode touched) */
	uint64_t	rpcs;
	uint64_t	rpcs_ucx;		/* of rpcs, those sent as UCX active messages (ucx backend) */
	uint64_t	ops[DM_OP_KIND_MAX + 1];	/* by dm_op_kind */
	uint64_t	bytes_read;		/* READ payload bytes */
	uint64_t	bytes_written;	/* WRITE payload bytes */
	uint64_t	wire_bytes_sent;	/* socket bytes (frames), both backends */
	uint64_t	wire_bytes_recv;
} dm_counters;

typedef struct dm_node_info
{
	char		address[128];	/* as given: host:port */
	uint16_t	node_id;
	int			backend;		/* DM_BACKEND_TCP, DM_BACKEND_SHM or DM_BACKEND_UCX */
	int			status;			/* DM_OK if usable, else why not */
	uint64_t	incarnation;	/* the one this client accepted */
	uint64_t	seen_incarnation;	/* the memnode's latest, if it differs */
	uint64_t	region_size;
	uint64_t	chunk_size;
} dm_node_info;

extern dm_client *dm_client_create(const dm_client_opts *opts);
extern void dm_client_destroy(dm_client *c);
extern const char *dm_client_error(const dm_client *c);

/*
 * Connect to a memnode ("host:port"), handshake, and (shm backend) map its
 * region.  On success *node_id is the memnode's id.  For an address already
 * connected it only returns that connection's id and status (which may be
 * an error: use dm_client_reconnect).  Two memnodes with the same id are
 * refused (DM_ERR_EXISTS).  Host names are resolved with getaddrinfo(),
 * which may block beyond the timeouts: prefer IP addresses.
 */
extern int	dm_client_connect(dm_client *c, const char *hostport, uint16_t *node_id);

/*
 * Re-establish a broken connection.  DM_ERR_INCARNATION if the memnode now
 * has a different incarnation (its new one is in dm_node_info).
 * dm_client_accept_incarnation() makes the client use the new one.
 */
extern int	dm_client_reconnect(dm_client *c, uint16_t node_id);
extern int	dm_client_accept_incarnation(dm_client *c, uint16_t node_id);

/*
 * Between operations: is the connection to memnode node_id still sound?
 * Notices a memnode that went away since the last operation — its socket
 * hung up (it was restarted), or over shm its region says it shut down or
 * shows no heartbeat — and breaks the connection, so that the caller
 * reconnects before its next operation instead of failing it.  Costs a
 * zero-timeout poll(), no round trip.  Returns the connection's status
 * (DM_ERR_NOTFOUND if there is none).
 */
extern int	dm_client_check(dm_client *c, uint16_t node_id);

extern int	dm_client_nnodes(const dm_client *c);
/*
 * 1 if ops on memnode node_id are executed one-sidedly by this process (shm
 * and ucx backends: a batch is not applied whole by the memnode, so one cut
 * short by this process's death leaves a prefix), else 0.
 */
extern int	dm_client_is_local(const dm_client *c, uint16_t node_id);
/* Info about the idx-th connection (0 <= idx < nnodes). */
extern int	dm_client_node_info(const dm_client *c, int idx, dm_node_info *out);
/* Counters of one memnode's connection, or of all (node_id < 0). */
extern void dm_client_counters(const dm_client *c, int node_id, dm_counters *out);
/* Of those, the round trips to every memnode (cheaper: timing code calls it per operation). */
extern uint64_t dm_client_round_trips(const dm_client *c);
/* The op timeout in effect (ms). */
extern int	dm_client_op_timeout(const dm_client *c);
extern void dm_client_reset_counters(dm_client *c);

/*
 * One-sided operations.  A batch is an array of dm_op that may address
 * several memnodes: one frame goes to each (all sent before any reply is
 * awaited), and the call returns when all are done.  Ops to one memnode
 * execute in array order; there is no order between memnodes.  On error
 * the failed op's index is in *bad_index (if not NULL) and nothing to
 * that memnode was executed.
 *
 * A guard (dm_op_guard: a CAS flagged DM_OPF_GUARD) that fails ends its
 * memnode's part of the batch: the later ops to that memnode are not
 * executed (result 0, READ buffers untouched), on every backend.  dm_post
 * still returns DM_OK; dm_op_guard_failed() tells.
 *
 * "In array order" holds for every op's effects except that over ucx two
 * consecutive reads may overlap; a read flagged DM_OPF_ORDERED (client
 * side only, never on the wire) starts after the op before it completed,
 * on every backend (tcp, shm and the local client execute in order
 * anyway).  A seqlock-style read (dm_tree_hop.c) needs it.
 */
#define DM_OPF_ORDERED	0x80
typedef struct dm_op
{
	uint8_t		kind;			/* dm_op_kind */
	uint8_t		flags;			/* DM_OPF_* (dm_proto.h) */
	uint32_t	len;			/* READ/WRITE length; atomics: ignored (8) */
	dm_gaddr	addr;
	uint64_t	arg0;			/* CAS expected, FAA addend, FETCH_OR mask */
	uint64_t	arg1;			/* CAS desired */
	void	   *buf;			/* READ destination, WRITE source */
	uint64_t	result;			/* out: old value of atomics */
} dm_op;

extern int	dm_post(dm_client *c, dm_op *ops, int nops, int *bad_index);

static inline void
dm_op_read(dm_op *op, dm_gaddr addr, void *buf, uint32_t len)
{
	op->kind = DM_OP_READ; op->flags = 0; op->addr = addr; op->buf = buf; op->len = len;
	op->arg0 = op->arg1 = op->result = 0;
}
static inline void
dm_op_write(dm_op *op, dm_gaddr addr, const void *buf, uint32_t len)
{
	op->kind = DM_OP_WRITE; op->flags = 0; op->addr = addr; op->buf = (void *) buf; op->len = len;
	op->arg0 = op->arg1 = op->result = 0;
}
static inline void
dm_op_atomic(dm_op *op, int kind, dm_gaddr addr, uint64_t arg0, uint64_t arg1)
{
	op->kind = (uint8_t) kind; op->flags = 0; op->addr = addr; op->buf = NULL; op->len = 8;
	op->arg0 = arg0; op->arg1 = arg1; op->result = 0;
}
/* CAS expected -> desired; if it fails, this memnode's later ops are skipped. */
static inline void
dm_op_guard(dm_op *op, dm_gaddr addr, uint64_t expected, uint64_t desired)
{
	dm_op_atomic(op, DM_OP_CAS, addr, expected, desired);
	op->flags = DM_OPF_GUARD;
}
static inline int
dm_op_guard_failed(const dm_op *op)
{
	return op->result != op->arg0;
}

/* Single-op conveniences (one round trip each). */
extern int	dm_read(dm_client *c, dm_gaddr addr, void *buf, uint32_t len);
extern int	dm_write(dm_client *c, dm_gaddr addr, const void *buf, uint32_t len);
extern int	dm_cas(dm_client *c, dm_gaddr addr, uint64_t expected, uint64_t desired, uint64_t *old);
extern int	dm_faa(dm_client *c, dm_gaddr addr, uint64_t add, uint64_t *old);
extern int	dm_fetch_or(dm_client *c, dm_gaddr addr, uint64_t mask, uint64_t *old);
/* word = max(word, value) (unsigned); not over ucx, which has no such atomic (DM_ERR_INVALID) */
extern int	dm_fetch_max(dm_client *c, dm_gaddr addr, uint64_t value, uint64_t *old);

/* RPCs (over the socket; over ucx as UCX active messages). */
extern int	dm_ping(dm_client *c, uint16_t node_id);
extern int	dm_chunk_alloc(dm_client *c, uint16_t node_id, uint64_t owner_tree_id,
						   dm_gaddr *chunk, uint64_t *size);
extern int	dm_slab_alloc(dm_client *c, uint16_t node_id, uint64_t owner_tree_id,
						  uint64_t size, dm_gaddr *slab);
/* Give back [slab, slab + size) (part of a slab of owner) for reuse. */
extern int	dm_slab_free(dm_client *c, uint64_t owner_tree_id, dm_gaddr slab, uint64_t size);
extern int	dm_chunk_free(dm_client *c, dm_gaddr chunk);
extern int	dm_chunk_free_owner(dm_client *c, uint16_t node_id, uint64_t owner_tree_id,
								uint64_t *nfreed);
extern int	dm_tree_create(dm_client *c, uint16_t node_id, const dm_tree_name *name,
						   dm_tree_info *out);
extern int	dm_tree_open(dm_client *c, uint16_t node_id, const dm_tree_name *name,
						 dm_tree_info *out);
extern int	dm_tree_drop(dm_client *c, uint16_t node_id, const dm_tree_name *name,
						 uint64_t *chunks_freed);
/* One page of the catalog listing; see dm_rpc_list_req for the filter. */
extern int	dm_tree_list(dm_client *c, uint16_t node_id, const dm_rpc_list_req *req,
						 dm_tree_info *out, uint32_t *count, uint32_t *next_slot);
extern int	dm_node_stats_get(dm_client *c, uint16_t node_id, dm_node_stats *out);

/*
 * Fault injection, for tests of what survives a client that fails, stalls
 * or dies at a given step.  Steps are remote operations of this client:
 * every dm_post and every RPC counts one, from the dm_client_set_fault call
 * on (1 = the next one).  The fault fires once, at step `at`:
 *   FAIL      the step fails with DM_ERR_TIMEOUT before anything is sent,
 *             and the connections it would use are broken (as by a timeout);
 *   SLEEP     the step waits ms milliseconds first, then runs normally (a
 *             stalled process, e.g. one holding a lock past lock_timeout);
 *   KILL      the process gets SIGKILL before the step (a killed backend);
 *   LATE      the step fails with DM_ERR_TIMEOUT at once and its connections
 *             are broken, but a forked child executes it ms later — over tcp
 *             it sends the frame on the abandoned socket, as a request that
 *             sat in the network past op_timeout would arrive (over ucx
 *             too: UCX does not survive fork); the caller
 *             reaps the child (wait()).  RPCs: like FAIL;
 *   LATE_RPC  as LATE, and for an RPC too: the child sends the frame on the
 *             abandoned socket and reads the reply (an offload the memnode
 *             still runs after its client gave up);
 *   KILL_MID  over shm, the step runs until `words` 8-byte words of its
 *             WRITEs (counted across them, in op order) are stored, then
 *             the process gets SIGKILL (a backend killed between two
 *             stores; at the end of the step if it stores fewer); over tcp
 *             (the memnode executes a batch whole) and for RPCs like KILL.
 * A NULL or NONE fault disarms.  dm_client_steps() counts steps so far.
 */
typedef enum dm_fault_action
{
	DM_FAULT_NONE = 0,
	DM_FAULT_FAIL,
	DM_FAULT_SLEEP,
	DM_FAULT_KILL,
	DM_FAULT_LATE,
	DM_FAULT_KILL_MID,
	DM_FAULT_LATE_RPC
} dm_fault_action;

typedef struct dm_fault
{
	dm_fault_action action;
	uint64_t	at;
	int			ms;
	uint32_t	words;
} dm_fault;

extern void dm_client_set_fault(dm_client *c, const dm_fault *f);
extern uint64_t dm_client_steps(const dm_client *c);

/*
 * One RPC (codes of dm_proto.h): request args req/reqlen (at most 256
 * bytes); the reply's args, between min_replen and replen bytes, land in
 * rep and their length in *got_len (may be NULL).  The typed wrappers above
 * use it; the offload client (dm_offload.c) too.
 */
extern int	dm_client_rpc(dm_client *c, uint16_t node_id, uint32_t code, const void *req,
						  uint32_t reqlen, void *rep, uint32_t min_replen, uint32_t replen,
						  uint32_t *got_len);

/*
 * An in-process client (dm_client_local.c) for the memnode's offload
 * executor: its one connection, to memnode node_id, hands every frame to
 * exec (the memnode's own request executor, which writes the reply frame
 * to *out, growing it with free/aligned_alloc; 0, or -1 for a malformed
 * frame) instead of a socket.  So the tree code runs in the memnode
 * unchanged, and every batch it sends is validated, isolated and journaled
 * like a tcp client's.
 */
typedef int (*dm_local_exec_fn) (void *arg, const uint8_t *frame, uint8_t **out,
								 uint32_t *out_len, uint32_t *out_cap);
extern dm_client *dm_client_create_local(uint16_t node_id, uint64_t region_size, uint64_t chunk_size,
										 dm_local_exec_fn exec, void *arg);

/*
 * Lower-level: send a raw frame and read the raw reply (tests of the
 * protocol use this).  body/len is the request body; the reply header and
 * body land in rep_hdr and rep_body (capacity rep_cap).
 */
extern int	dm_client_raw(dm_client *c, uint16_t node_id, uint16_t type,
						  const void *body, uint32_t len,
						  dm_frame_hdr *rep_hdr, void *rep_body, uint32_t rep_cap);

#endif							/* DM_CLIENT_H */
