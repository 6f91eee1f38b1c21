/*
 * memnode.h — shared declarations of the dmindex-memnode daemon: its
 * configuration, its state (owned by main.c and passed to the other files),
 * and the functions of its files (main.c flags and lifecycle, region_mem.c
 * region memory, region_attach.c reattaching a region file on restart,
 * server.c connections, exec.c request execution, auth.c authentication,
 * offload.c the offload executor, ucx.c the UCX export, ucx_rpc.c RPCs
 * over UCX active messages, log.c logging,
 * clock.c clocks).
 */
#ifndef MEMNODE_H
#define MEMNODE_H

#include <pthread.h>
#include <stdint.h>

#include "dm_proto.h"
#include "dm_region.h"

typedef struct mn_config
{
	char		listen_host[128];
	int			listen_port;
	uint64_t	size;
	uint64_t	chunk_size;
	uint32_t	catalog_capacity;
	int			node_id;
	int			numa_node;		/* -1 = no binding */
	int			hugepages;
	int			threads;
	int			offload_threads;	/* workers that may run the offload executor at once; -1 = default */
	int			shm;
	char		shm_path[DM_SHM_PATH_LEN];	/* "" = default */
	char		region_file[DM_SHM_PATH_LEN];	/* "" = none (or the --shm file) */
	int			fresh_region;	/* never reattach: retire an existing region file */
	int			max_connections;
	int			handshake_timeout_ms;	/* also: a frame must complete within this */
	int			poll_us;		/* keep polling this long after activity before sleeping */
	int			log_level;
	char		auth_file[1024];	/* --auth-file; "" = no authentication (trusted-local only) */
	int			ucx;			/* --ucx: export the region through UCX (ucx.c) */
} mn_config;

enum
{
	LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3
};

/* Counters of one worker (summed for DM_RPC_STATS). */
typedef struct mn_counters
{
	uint64_t	connections_total;
	uint64_t	frames_bad;
	uint64_t	requests_rejected;
	uint64_t	batches;
	uint64_t	ops[DM_OP_KIND_MAX + 1];
	uint64_t	rpcs;
	uint64_t	rpcs_ucx;		/* of rpcs, those that came over UCX (ucx_rpc.c) */
	uint64_t	bytes_in;
	uint64_t	bytes_out;
	uint64_t	auth_failures;
	uint64_t	access_denied;
} mn_counters;

struct mn_conn_info;

typedef struct mn_state
{
	mn_config	cfg;
	dm_region	region;
	void	   *base;			/* region mapping */
	char		shm_path[DM_SHM_PATH_LEN];	/* "" unless exported */
	char		region_path[DM_SHM_PATH_LEN];	/* the file the region lives in, "" = anonymous */
	int			reattached;		/* this start kept the file's region and incarnation */
	pthread_mutex_t *journal_locks;	/* one per journal slot, when threads share slots */
	pthread_mutex_t region_lock;	/* catalog and allocator */
	volatile int stop;
	int			connections;	/* open now (atomic) */
	uint64_t	start_mono_ns;
	mn_counters *worker_counters;	/* one per worker */
	/* --ucx: the UCX_ATTACH reply (dm_rpc_ucx_rep, rkey, worker address); NULL = not exported */
	const uint8_t *ucx_blob;
	uint32_t	ucx_blob_len;
	int			ucx_allocated;	/* the region came from ucp_mem_map(ALLOCATE) */
	/* --ucx: bind a connection for RPCs over UCX (ucx_rpc.c mn_ucx_bind); NULL = not exported */
	int			(*ucx_bind) (struct mn_conn_info *ci, const dm_rpc_ucx_attach_req *req, uint64_t token[2]);
	uint64_t	ucx_dropped;	/* RPC messages over UCX dropped unrun (atomic; counted in frames_bad) */
} mn_state;

/*
 * The memnode's state.  main.c owns the one instance and hands it to the
 * other files: to the server (mn_server_*), the region (mn_region_*,
 * mn_ucx_*), the request executor through each connection's mn_conn_info,
 * and its configuration to the log (mn_log_init).  No other file reads the
 * instance; the fuzz targets, which replace main.c, define their own.
 */
extern mn_state mn;

/* log.c: lines carry cfg's node id; levels above cfg's log_level are dropped */
extern void mn_log_init(const mn_config *cfg);
extern void mn_log(int level, const char *fmt,...) __attribute__((format(printf, 2, 3)));
/* Like mn_log(LOG_WARN) but at most a few lines per second (hostile input). */
extern void mn_log_limited(const char *fmt,...) __attribute__((format(printf, 1, 2)));

/* region_mem.c: obtain (reattach or format) and release the region */
extern int	mn_region_create(mn_state *mns);
/* clean: a shutdown after every batch finished (the next start trusts the journal is idle) */
extern void mn_region_close(mn_state *mns, int clean);

/*
 * ucx.c: the UCX export (--ucx).  mn_ucx_init before the region exists;
 * mn_ucx_alloc gives anonymous region memory from ucp_mem_map(ALLOCATE)
 * (NULL: use mmap); mn_ucx_export registers the region (if not allocated
 * by mn_ucx_alloc), packs the rkey and starts the progress thread.
 */
typedef struct mn_ucx_req mn_ucx_req;
typedef void (*mn_ucx_post_fn) (int worker, mn_ucx_req *r);
extern int	mn_ucx_init(mn_state *mns, mn_ucx_post_fn post);
extern void *mn_ucx_alloc(mn_state *mns, uint64_t size);
extern int	mn_ucx_export(mn_state *mns, void *base, uint64_t size);
extern void mn_ucx_stop(void);

/*
 * ucx_rpc.c: RPCs over UCX active messages.  mn_ucx_rpc_init (ucx.c, on the
 * new worker) installs the receive callback, which hands each RPC frame to
 * post (server.c: the worker thread of the connection its token names).
 * A connection binds at its UCX_ATTACH (exec.c through mns->ucx_bind) and
 * unbinds at its close (server.c); mn_ucx_conn_of finds the connection of
 * a queued frame (NULL: closed meanwhile, or not this worker's);
 * mn_ucx_reply sends a reply frame back to its client's worker.
 */
typedef struct mn_ucx_binding mn_ucx_binding;
struct mn_ucx_req
{
	struct mn_ucx_req *next;
	uint64_t	token[2];
	uint32_t	len;
	uint8_t    *frame;			/* 8-aligned copy of the RPC frame */
};
extern int	mn_ucx_rpc_init(mn_state *mns, void *worker, mn_ucx_post_fn post);
extern int	mn_ucx_bind(struct mn_conn_info *ci, const dm_rpc_ucx_attach_req *req, uint64_t token[2]);
extern void mn_ucx_unbind(struct mn_conn_info *ci);
extern struct mn_conn_info *mn_ucx_conn_of(const mn_ucx_req *r, int worker);
extern void mn_ucx_reply(struct mn_conn_info *ci, const uint8_t *frame, uint32_t len);
extern void mn_ucx_req_free(mn_ucx_req *r);

/* region_attach.c: deciding whether a region file can be reattached, and doing it */
extern const char *mn_region_not_intact(const mn_state *mns, void *base, uint64_t file_size, uint64_t want_size);
extern int	mn_region_reattach(mn_state *mns, void *base, uint64_t size);
extern void mn_boot_id(uint64_t out[2]);

/* exec.c runs on worker threads; each has an id (server.c) that picks its journal slot */
extern __thread int mn_worker_id;

/* server.c */
extern int	mn_server_listen(mn_state *mns);
extern int	mn_server_start(mn_state *mns);
extern void mn_server_stop(mn_state *mns);
/* Queue an RPC frame that came over UCX for worker's connection (ucx_rpc.c's post). */
extern void mn_server_post_ucx(int worker, mn_ucx_req *r);

/* exec.c: handle one complete request frame; append the reply to *out. */
typedef struct mn_conn_info
{
	mn_state   *mns;			/* the memnode serving it (server.c sets it) */
	mn_ucx_binding *ucx;		/* bound for RPCs over UCX (ucx_rpc.c); NULL = not */
	int			handshaken;
	int			tear;
	int			close_after_reply;
	uint64_t	client_pid;		/* from the handshake: recorded as a tree's owner */
	char		peer[64];
	int			worker;			/* index of the worker thread serving it */
	/* authentication (auth.c): between HELLO and AUTH, and after */
	int			auth_pending;	/* HELLO answered with a challenge, AUTH expected */
	uint64_t	ident;			/* tag of the authenticated identity, 0 = none */
	char		identity[DM_AUTH_ID_LEN];
	uint8_t		client_nonce[DM_AUTH_NONCE_LEN];
	uint8_t		server_nonce[DM_AUTH_NONCE_LEN];
} mn_conn_info;

/* Returns 0, or -1 if the frame was malformed (connection must close). */
extern int	mn_exec_frame(mn_conn_info *ci, mn_counters *ctr, const uint8_t *frame,
						  uint8_t **out, uint32_t *out_len, uint32_t *out_cap);

/* auth.c: authentication and tenant isolation (memnodes with --auth-file) */
extern int	mn_auth_load(const char *path);
extern int	mn_auth_enabled(void);
extern int	mn_auth_start_workers(int nworkers);
/* HELLO of a v3 client: fill in rep (challenge) or refuse; see auth.c. */
extern int	mn_auth_hello(mn_conn_info *ci, mn_counters *ctr, const dm_hello_req *req, dm_hello_rep *rep);
/* AUTH frame: DM_OK (rep->mac set, ci authenticated) or DM_ERR_AUTH. */
extern int	mn_auth_verify(mn_conn_info *ci, mn_counters *ctr, const dm_auth_req *req, dm_auth_rep *rep);
extern void mn_auth_failed(mn_conn_info *ci, mn_counters *ctr, const char *why);
/* Around the validation and execution of one batch (no-ops without auth). */
extern void mn_auth_batch_begin(const mn_conn_info *ci);
extern void mn_auth_batch_end(const mn_conn_info *ci);
/* After memory went back to the free pool: wait out batches checked before. */
extern void mn_auth_quiesce(void);

/* offload.c: the offload executor (DM_RPC_OFF_*) */
typedef int (*mn_frame_exec) (mn_conn_info *ci, mn_counters *ctr, const uint8_t *frame,
							  uint8_t **out, uint32_t *out_len, uint32_t *out_cap);
/*
 * nslots executors at once; each runs its tree operation's batches through
 * exec (main.c passes mn_exec_frame: the executor's batches are checked
 * and journaled as a client's).  Passed, not called by name, so that the
 * request executor (exec.c), which dispatches offload RPCs here, and this
 * file do not depend on each other.
 */
extern void mn_offload_init(int nslots, mn_frame_exec exec);
extern int	mn_offload_slots(void);
/* Run one; the reply args are at *rep (thread-local), *replen bytes. */
extern int	mn_offload_rpc(const mn_conn_info *ci, mn_counters *ctr, uint32_t code, const uint8_t *args,
						   const uint8_t **rep, uint32_t *replen);

/* clock.c */
extern uint64_t mn_mono_ns(void);
extern uint64_t mn_unix_ns(void);

#endif
