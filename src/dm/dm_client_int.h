/*
 * dm_client_int.h — internals of the transport client shared by its files
 * (dm_client.c connections, dm_client_batch.c batches, dm_client_rpc.c RPCs,
 * dm_sock.c, dm_shm.c, dm_ucx.c, dm_client_local.c).  Not for users of the
 * client.
 */
#ifndef DM_CLIENT_INT_H
#define DM_CLIENT_INT_H

#include "dm_client.h"
#include "dm_region.h"

typedef struct dm_conn
{
	char		address[128];	/* "host:port" as given */
	uint16_t	node_id;
	int			fd;				/* -1 when closed */
	int			status;			/* DM_OK, or why the connection is unusable */
	int			backend;		/* DM_BACKEND_TCP, DM_BACKEND_SHM or DM_BACKEND_UCX */
	void		(*release) (struct dm_conn *cn);	/* the backend's teardown (dm_conn_break runs it) */
	uint64_t	incarnation;	/* accepted; 0 before the first handshake */
	uint64_t	seen_incarnation;
	uint64_t	region_size;
	uint64_t	chunk_size;
	char		shm_path[DM_SHM_PATH_LEN];
	int			shm_offered;	/* memnode exports its region */
	/* shm backend: the mapped region */
	uint8_t    *shm_base;
	dm_region	shm_region;
	uint64_t	shm_attach_count;	/* the superblock's attach_count when mapped */
	uint64_t	polled_ns;		/* dm_client_check's last poll of the socket (shm) */
	/* ucx backend (dm_ucx.c): opaque UCX handles, made by process ucx_pid */
	void	   *ucx_ep;
	void	   *ucx_rkey;
	void	   *ucx_worker;		/* the client's, for closing the endpoint */
	int			ucx_pid;
	int			ucx_ep_status;	/* ucs_status_t from the endpoint's error callback */
	int			ucx_allocated;	/* memnode region from ucp_mem_map(ALLOCATE) */
	uint64_t	ucx_base;		/* the region's address at the memnode */
	uint8_t    *ucx_local;		/* the region mapped here by UCX (ucp_rkey_ptr), or NULL */
	dm_superblock *ucx_sb;		/* copy read at attach: the layout that bounds ops */
	dm_region	ucx_region;		/* over ucx_sb, for dm_region_check_op */
	uint64_t	ucx_checked_ns;	/* last liveness check */
	uint64_t	ucx_hb;			/* last heartbeat value seen, and when it changed */
	uint64_t	ucx_hb_seen_ns;
	uint64_t	ucx_token[2];	/* names this connection in RPCs over UCX (0: none); their AM header */
	volatile int ucx_rpc_state;	/* the RPC reply awaited: 0 not yet, 1 in rbuf, -1 malformed */
	/* tcp frames */
	uint64_t	seq;
	uint8_t    *sbuf;
	uint32_t	scap;
	uint8_t    *rbuf;
	uint32_t	rcap;
	/*
	 * In-process connection (dm_client_local.c): frames go to this function
	 * instead of a socket, its reply waits in rbuf for the receive.
	 */
	dm_local_exec_fn local_exec;
	void	   *local_arg;
	int			local_ready;
	/*
	 * dm_post bookkeeping: indexes of this conn's ops in the caller's
	 * array, and the frame sizes (request, reply) they would take over tcp
	 */
	int		   *idx;
	int			nidx;
	int			idxcap;
	uint64_t	post_req;
	uint64_t	post_rep;
	dm_counters ctr;
} dm_conn;

struct dm_client
{
	dm_client_opts opts;
	dm_conn   **conns;
	int			nconns;
	char		name[32];		/* sent in the handshake, shown in the memnode's log */
	char		auth_identity[DM_AUTH_ID_LEN];	/* "" = no credentials */
	uint8_t		auth_secret[DM_AUTH_SECRET_MAX];
	uint32_t	auth_secret_len;
	uint64_t	steps;			/* dm_post calls and RPCs (fault injection counts these) */
	dm_fault	fault;			/* armed when action != NONE; at = absolute step */
	int			kill_mid_armed;	/* dm_shm_post: die after kill_mid_words stored words */
	uint32_t	kill_mid_words;
	void	   *ucx_worker;		/* dm_ucx.c: made at the first ucx connection */
	dm_conn    *ucx_rpc_cn;		/* the connection whose RPC reply over UCX is awaited */
	int			ucx_rpc_ready;	/* the worker's reply handler is installed (dm_ucx_rpc.c) */
	int			ucx_efd;
	int			ucx_pid;
	char		err[640];
};

/* dm_sock.c */
extern int	dm_sock_connect(dm_client *c, dm_conn *cn);
extern int	dm_sock_send(dm_client *c, dm_conn *cn, const void *buf, uint32_t len, uint64_t deadline);
/* Receive one frame into cn->rbuf (grown up to DM_FRAME_MAX); checks header and seq. */
extern int	dm_sock_recv_frame(dm_client *c, dm_conn *cn, uint16_t type, uint64_t seq,
							   uint64_t deadline, dm_frame_hdr **hdr);
extern uint64_t dm_deadline(int timeout_ms);
extern uint64_t dm_mono_ns(void);
extern int	dm_buf_reserve(uint8_t **buf, uint32_t *cap, uint32_t need);

/* dm_shm.c */
extern int	dm_shm_map(dm_client *c, dm_conn *cn);
extern void dm_shm_unmap(dm_conn *cn);
/* Validate then execute ops (indexes cn->idx) on the mapping. */
extern int	dm_shm_post(dm_client *c, dm_conn *cn, dm_op *ops, int *bad_index);
/* Is the memnode behind a mapped region alive and still the same?  Breaks cn if not. */
extern int	dm_shm_check(dm_client *c, dm_conn *cn);
/* Whether dm_client_check should poll cn's socket now (then it counts as polled). */
#define DM_SHM_POLL_INTERVAL_MS 1000
extern int	dm_shm_poll_due(dm_conn *cn);
/* Execute validated ops (cn->idx) on a local mapping of the region at base (shm, or ucx's). */
extern int	dm_shm_exec(dm_client *c, dm_conn *cn, uint8_t *base, dm_op *ops);

/* dm_ucx.c */
/* After the handshake: UCX_ATTACH, endpoint, rkey (DM_ERR_NOSHM if not offered). */
extern int	dm_ucx_attach(dm_client *c, dm_conn *cn);
extern void dm_ucx_close(dm_conn *cn);
extern void dm_ucx_client_free(dm_client *c);
extern int	dm_ucx_post(dm_client *c, dm_conn *cn, dm_op *ops, int *bad_index);
/*
 * Wait until the deadline for the UCX request req to complete or, with
 * flag, for *flag to become non-zero (req, its send, may then be NULL);
 * req is freed on every path.  The dm_status of a failed UCX operation.
 */
extern int	dm_ucx_wait(dm_client *c, dm_conn *cn, void *req, volatile int *flag, uint64_t deadline,
						const char *what);
extern int	dm_ucx_op_error(dm_conn *cn, int ucs_status);

/* dm_ucx_rpc.c: the RPC frame in cn->sbuf (size bytes) as a UCX active message; its reply lands in cn->rbuf. */
extern int	dm_ucx_rpc(dm_client *c, dm_conn *cn, uint32_t size, uint64_t deadline, dm_frame_hdr **hdr);
extern int	dm_ucx_check(dm_client *c, dm_conn *cn);

/* dm_client.c */
extern int	dm_fail(dm_client *c, dm_conn *cn, int status, const char *fmt,...)
			__attribute__((format(printf, 4, 5)));
extern void dm_conn_break(dm_conn *cn, int status);
extern dm_conn *dm_conn_by_node(const dm_client *c, uint16_t node_id);
/* A usable connection for node_id, or NULL with the reason in *rc. */
extern dm_conn *dm_conn_usable(dm_client *c, uint16_t node_id, int *rc);
/* Handshake, incarnation check, and backend choice. */
extern int	dm_conn_open(dm_client *c, dm_conn *cn);

/* dm_client_batch.c */
/*
 * The armed fault fires at this step.  DM_OK: go on executing it (SLEEP,
 * KILL_MID over shm); else the step's status.  ops == NULL for an RPC.
 */
extern int	dm_client_fire_fault(dm_client *c, dm_op *ops, dm_conn **touched, int ntouched);

#endif
