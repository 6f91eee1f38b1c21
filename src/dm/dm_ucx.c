/*
 * dm_ucx.c — the ucx backend: one-sided get, put and atomics on a
 * memnode's region through UCX (on InfiniBand/RoCE: rdma-core verbs; here
 * UCX's tcp and shared-memory transports), and RPCs as UCX active messages
 * on the same endpoint.  The tcp connection stays the control channel: the
 * handshake (and its authentication) runs on it first, and only then does
 * the UCX_ATTACH RPC hand out the rkey, the memnode's worker address and
 * the token that names this connection in RPCs over UCX; its hang-up is how
 * either side learns the other gave up (see dm_ucx_rpc).
 *
 * UCX is loaded with dlopen() at the first ucx connection, after setting
 * (unless the environment sets them) UCX_ERROR_SIGNALS empty and UCX's
 * malloc and mmap hooks off: UCX's library constructors read these, and a
 * PostgreSQL backend must keep its own signal handlers and allocator.  A
 * process that never uses ucx never loads UCX.  The context is per process
 * (a forked child makes its own: UCX objects do not survive fork), the
 * worker per client, the endpoint and rkey per connection.
 *
 * Batches keep the semantics of the other backends: validated whole first
 * (bounds and read-only areas, from a copy of the superblock), then the
 * ops in order (a fence between ops that are not both reads), a failed
 * guard CAS ends the batch (so a guarded batch waits for its guard), and
 * the call returns after a flush, i.e. when every write is in the region.
 * As over shm, a batch is not atomic at the memnode: a client that dies
 * in the middle leaves a prefix applied (the tree's redo slots repair it;
 * dm_client_is_local is true for ucx).  Where UCX maps the region into
 * this process (shared memory, a region UCX allocated: ucp_rkey_ptr), a
 * validated batch runs on that mapping as over shm (dm_shm_exec).
 *
 * Liveness: transport errors of the endpoint (memnode gone over tcp or
 * verbs) break the connection as DM_ERR_CLOSED.  A shared-memory segment
 * outlives a dead memnode, so at most every millisecond a batch first
 * reads the superblock's state and heartbeat (and polls the control
 * socket): a memnode that shut down, was replaced or stopped beating is
 * reported as over shm.  Timeouts break the connection like tcp's.
 */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#include "dm_client_int.h"
#include "dm_ucx.h"

static pthread_mutex_t ucx_lock = PTHREAD_MUTEX_INITIALIZER;
static ucp_context_h ucx_ctx;
static pid_t ucx_pid;			/* the process ucx_ctx belongs to */
static char ucx_ctx_err[256];
static int	no_peer_mode;		/* the transports cannot report peer failures */

#define LIVENESS_EVERY_NS 1000000u

/* Load UCX and create this process's context; NULL with a reason on failure. */
static ucp_context_h
ucx_context(void)
{
	ucp_context_h ctx;
	const char *why;

	pthread_mutex_lock(&ucx_lock);
	if (ucx_ctx != NULL && ucx_pid == getpid())
	{
		ctx = ucx_ctx;
		pthread_mutex_unlock(&ucx_lock);
		return ctx;
	}
	ucx_ctx = NULL;				/* a parent's context: abandoned, never touched */
	if ((why = dm_ucx_load()) != NULL)
		snprintf(ucx_ctx_err, sizeof(ucx_ctx_err), "%s", why);
	else
	{
		ucp_config_t *config;
		ucp_params_t params;
		ucs_status_t st;

		if ((st = U.ucp_config_read(NULL, NULL, &config)) == UCS_OK)
		{
			/* remote atomics must be atomic with the memnode CPU's (memnode/ucx.c) */
			if (getenv("UCX_ATOMIC_MODE") == NULL)
				U.ucp_config_modify(config, "ATOMIC_MODE", "cpu");
			memset(&params, 0, sizeof(params));
			params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
			params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
			params.mt_workers_shared = 1;	/* clients of different threads share it */
			st = U.ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &ucx_ctx);
			U.ucp_config_release(config);
		}
		if (st != UCS_OK)
		{
			ucx_ctx = NULL;
			snprintf(ucx_ctx_err, sizeof(ucx_ctx_err), "cannot initialise UCX: %s", U.ucs_status_string(st));
		}
		ucx_pid = getpid();
		no_peer_mode = dm_ucx_no_peer_errors();
	}
	ctx = ucx_ctx;
	pthread_mutex_unlock(&ucx_lock);
	return ctx;
}

static ucs_status_t
status_of(void *req)
{
	return U.ucp_request_check_status(req);
}

static int
ucx_status_to_dm(ucs_status_t st)
{
	switch (st)
	{
		case UCS_ERR_NO_MEMORY:
			return DM_ERR_NOMEM;
		case UCS_ERR_TIMED_OUT:
		case UCS_ERR_ENDPOINT_TIMEOUT:
			return DM_ERR_TIMEOUT;
		default:
			return DM_ERR_CLOSED;	/* reset, unreachable, canceled: the memnode is gone */
	}
}

/*
 * The status of a failed operation: a memnode that died is CLOSED as over
 * tcp, whichever error UCX saw first (reset, or an endpoint timeout).
 */
static int	control_closed(dm_conn *cn, int timeout_ms);

int
dm_ucx_op_error(dm_conn *cn, int st)
{
	if (control_closed(cn, 0) || control_closed(cn, 20))
		return DM_ERR_CLOSED;
	return ucx_status_to_dm(st);
}

static void
ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	dm_conn    *cn = arg;

	(void) ep;
	cn->ucx_ep_status = st;
}

/* Drop this connection's UCX objects (nothing of them if another process made them). */
void
dm_ucx_close(dm_conn *cn)
{
	if (cn->ucx_ep != NULL && cn->ucx_pid == getpid())
	{
		ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
		void	   *req;

		if (cn->ucx_rkey != NULL)
			U.ucp_rkey_destroy(cn->ucx_rkey);
		req = U.ucp_ep_close_nbx(cn->ucx_ep, &p);
		if (UCS_PTR_IS_PTR(req))
		{
			uint64_t	until = dm_mono_ns() + 1000000000u;

			while (status_of(req) == UCS_INPROGRESS && dm_mono_ns() < until)
				U.ucp_worker_progress(cn->ucx_worker);
			U.ucp_request_free(req);
		}
	}
	cn->ucx_ep = NULL;
	cn->ucx_rkey = NULL;
	cn->ucx_local = NULL;		/* UCX's mapping went with the rkey */
	/* a reply still on its way to a connection given up on matches nothing */
	memset(cn->ucx_token, 0, sizeof(cn->ucx_token));
	free(cn->ucx_sb);
	cn->ucx_sb = NULL;
}

void
dm_ucx_client_free(dm_client *c)
{
	if (c->ucx_worker != NULL && c->ucx_pid == getpid())
		U.ucp_worker_destroy(c->ucx_worker);
	c->ucx_worker = NULL;
}


static uint64_t
coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/*
 * Wait until the deadline for req to complete or, when flag is given, for
 * *flag to become non-zero (an RPC's reply; req is then its send, whose
 * failure ends the wait): poll the worker for spin_us (yielding the CPU
 * between polls), then sleep on its wake-up fd through the client's wait
 * callback.  req (may be NULL then)
 * is freed on every path.
 */
int
dm_ucx_wait(dm_client *c, dm_conn *cn, void *req, volatile int *flag, uint64_t deadline, const char *what)
{
	uint64_t	spin_until = dm_mono_ns() + (uint64_t) (c->opts.spin_us > 0 ? c->opts.spin_us : 0) * 1000u;
	ucs_status_t st = UCS_OK;
	int			rc = DM_OK;

	/* 0: from now (a batch whose ops all complete at once never reads the clock) */
	if (deadline == 0)
		deadline = spin_until + (uint64_t) c->opts.op_timeout_ms * 1000000u;

	for (;;)
	{
		uint64_t	now;

		while (U.ucp_worker_progress(c->ucx_worker) != 0)
			;
		if (flag == NULL ? (st = status_of(req)) != UCS_INPROGRESS : *flag != 0)
			break;
		if (flag != NULL && req != NULL && (st = status_of(req)) != UCS_INPROGRESS && st != UCS_OK)
			break;				/* the request could not be sent: no reply will come */
		st = UCS_OK;
		now = dm_mono_ns();
		if (now >= deadline)
		{
			rc = dm_fail(c, cn, DM_ERR_TIMEOUT, "no completion of %s within %d ms", what, c->opts.op_timeout_ms);
			break;
		}
		if (now < spin_until)
		{
			/*
			 * Yield, not spin (as dm_sock.c does): an RPC, and over UCX's
			 * tcp a get or an atomic, needs the memnode's CPU, which may be
			 * this one; its progress thread polls with sched_yield for a
			 * while after each message (memnode/ucx.c), so it is runnable,
			 * not woken, and a spinning client held it off for the whole
			 * spin: an RPC over UCX took spin_us + ~8 µs (58 µs, against
			 * ~8 with no spin).
			 */
			sched_yield();
			continue;
		}
		if (U.ucp_worker_arm(c->ucx_worker) == UCS_OK)
		{
			int			ms = (int) ((deadline - now + 999999) / 1000000);

			if (ms > 100)
				ms = 100;		/* the worker's fd may miss a completion of another transport */
			if (c->opts.wait)
			{
				if (c->opts.wait(c->opts.wait_arg, c->ucx_efd, 0, ms) < 0)
				{
					rc = dm_fail(c, cn, DM_ERR_INTERRUPTED, "wait for %s interrupted", what);
					break;
				}
			}
			else
			{
				/* the control socket too: it is how a dead memnode shows */
				struct pollfd p[2] = {{.fd = c->ucx_efd, .events = POLLIN}, {.fd = cn->fd, .events = POLLIN}};

				poll(p, cn->fd >= 0 ? 2 : 1, ms);
			}
		}
		else
			sched_yield();		/* events pending: progress again, but let others run */
		/* transports without (prompt) peer failure reports: the control socket tells */
		if (control_closed(cn, 0))
		{
			rc = dm_fail(c, cn, DM_ERR_CLOSED, "memnode closed the connection");
			break;
		}
	}
	if (req != NULL)
		U.ucp_request_free(req);	/* an unfinished send: released when UCX is done with it */
	if (rc == DM_OK && st != UCS_OK)
		rc = dm_fail(c, cn, dm_ucx_op_error(cn, st), "%s failed: %s", what, U.ucs_status_string(st));
	return rc;
}

static int
wait_req(dm_client *c, dm_conn *cn, void *req, uint64_t deadline, const char *what)
{
	return dm_ucx_wait(c, cn, req, NULL, deadline, what);
}

/* An nbx call's result: done, in progress (kept in reqs), or failed. */
static int
track(dm_client *c, dm_conn *cn, ucs_status_ptr_t r, void **reqs, int *nreq, const char *what)
{
	if (r == NULL)
		return DM_OK;
	if (UCS_PTR_IS_ERR(r))
		return dm_fail(c, cn, dm_ucx_op_error(cn, UCS_PTR_STATUS(r)), "%s failed: %s", what,
					   U.ucs_status_string(UCS_PTR_STATUS(r)));
	reqs[(*nreq)++] = r;
	return DM_OK;
}

/* Wait for every tracked request; on failure the rest are freed too. */
static int
wait_all(dm_client *c, dm_conn *cn, void **reqs, int *nreq, uint64_t deadline)
{
	int			rc = DM_OK;

	for (int i = 0; i < *nreq; i++)
	{
		if (rc == DM_OK)
			rc = wait_req(c, cn, reqs[i], deadline, "a one-sided operation");
		else
			U.ucp_request_free(reqs[i]);
	}
	*nreq = 0;
	if (rc == DM_OK && cn->ucx_ep_status != UCS_OK)
		rc = dm_fail(c, cn, DM_ERR_CLOSED, "UCX endpoint failed: %s", U.ucs_status_string(cn->ucx_ep_status));
	return rc;
}

static int
flush(dm_client *c, dm_conn *cn, uint64_t deadline)
{
	ucp_request_param_t p = {.op_attr_mask = 0};
	ucs_status_ptr_t r = U.ucp_ep_flush_nbx(cn->ucx_ep, &p);

	if (r == NULL)
		return DM_OK;
	if (UCS_PTR_IS_ERR(r))
		return dm_fail(c, cn, dm_ucx_op_error(cn, UCS_PTR_STATUS(r)), "flush failed: %s",
					   U.ucs_status_string(UCS_PTR_STATUS(r)));
	return wait_req(c, cn, r, deadline, "a flush");
}

static ucs_status_ptr_t
get(dm_conn *cn, void *dst, uint64_t off, uint32_t len)
{
	ucp_request_param_t p = {.op_attr_mask = 0};

	return U.ucp_get_nbx(cn->ucx_ep, dst, len, cn->ucx_base + off, cn->ucx_rkey, &p);
}

static ucs_status_ptr_t
put(dm_conn *cn, const void *src, uint64_t off, uint32_t len)
{
	ucp_request_param_t p = {.op_attr_mask = 0};

	return U.ucp_put_nbx(cn->ucx_ep, src, len, cn->ucx_base + off, cn->ucx_rkey, &p);
}

static ucs_status_ptr_t
atomic(dm_conn *cn, dm_op *op, uint64_t off)
{
	ucp_request_param_t p;

	memset(&p, 0, sizeof(p));
	p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
	p.datatype = ucp_dt_make_contig(8);
	p.reply_buffer = &op->result;
	switch (op->kind)
	{
		case DM_OP_CAS:
			/* UCX's CSWAP: compare value in buffer, swap value in (and old value out of) reply_buffer */
			op->result = op->arg1;
			return U.ucp_atomic_op_nbx(cn->ucx_ep, UCP_ATOMIC_OP_CSWAP, &op->arg0, 1,
									   cn->ucx_base + off, cn->ucx_rkey, &p);
		case DM_OP_FAA:
			return U.ucp_atomic_op_nbx(cn->ucx_ep, UCP_ATOMIC_OP_ADD, &op->arg0, 1,
									   cn->ucx_base + off, cn->ucx_rkey, &p);
		default:
			return U.ucp_atomic_op_nbx(cn->ucx_ep, UCP_ATOMIC_OP_OR, &op->arg0, 1,
									   cn->ucx_base + off, cn->ucx_rkey, &p);
	}
}

/* Has the memnode hung up the control connection?  (No request is outstanding on it.) */
static int
control_closed(dm_conn *cn, int timeout_ms)
{
	struct pollfd pfd = {.fd = cn->fd, .events = POLLIN};

	return cn->fd >= 0 && poll(&pfd, 1, timeout_ms) > 0 && pfd.revents != 0;
}

/* The superblock's words that change: state, heartbeat (adjacent), incarnation. */
static int
read_sb_words(dm_client *c, dm_conn *cn, uint64_t words[2], uint64_t *inc)
{
	void	   *reqs[2];
	int			nreq = 0, rc;

	if (cn->ucx_local != NULL)
	{
		const dm_superblock *sb = (const dm_superblock *) cn->ucx_local;

		words[0] = __atomic_load_n(&sb->state, __ATOMIC_ACQUIRE);
		words[1] = __atomic_load_n(&sb->heartbeat_ns, __ATOMIC_RELAXED);
		*inc = __atomic_load_n(&sb->incarnation, __ATOMIC_RELAXED);
		return DM_OK;
	}

	_Static_assert(offsetof(dm_superblock, heartbeat_ns) == offsetof(dm_superblock, state) + 8,
				   "state and heartbeat are adjacent");
	if ((rc = track(c, cn, get(cn, words, offsetof(dm_superblock, state), 16), reqs, &nreq, "a liveness read")) != DM_OK ||
		(rc = track(c, cn, get(cn, inc, offsetof(dm_superblock, incarnation), 8), reqs, &nreq, "a liveness read")) != DM_OK ||
		(rc = wait_all(c, cn, reqs, &nreq, dm_deadline(c->opts.op_timeout_ms))) != DM_OK)
	{
		for (int i = 0; i < nreq; i++)
			U.ucp_request_free(reqs[i]);
		return rc;
	}
	return DM_OK;
}

/*
 * Judge the memnode's liveness (at most every LIVENESS_EVERY_NS unless
 * forced).  The memnode beats every 50 ms; its clock is not ours (another
 * host), so we watch the value change (over shared memory it is ours: the
 * beat's age is read directly).  A heartbeat quiet for 150 ms is
 * waited for, up to op_timeout, as tcp waits for a reply: a stopped
 * memnode is a timeout, a dead one (control socket closed) CLOSED.
 */
static int
check_alive_now(dm_client *c, dm_conn *cn)
{
	uint64_t	now;
	uint64_t	words[2], inc, deadline = 0;
	int			rc;

	for (;;)
	{
		if (control_closed(cn, 0))
			return dm_fail(c, cn, DM_ERR_CLOSED, "memnode closed the connection");
		if ((rc = read_sb_words(c, cn, words, &inc)) != DM_OK)
			return rc;
		cn->ucx_checked_ns = coarse_ns();
		now = dm_mono_ns();
		if (words[0] == DM_SB_REPLACED || inc != cn->incarnation)
			return dm_fail(c, cn, DM_ERR_INCARNATION, "memnode was restarted: region contents are gone");
		if (words[0] == DM_SB_RECOVERING)
			return dm_fail(c, cn, DM_ERR_CLOSED, "memnode is reattaching to its region");
		if (words[0] != DM_SB_LIVE)
			return dm_fail(c, cn, DM_ERR_CLOSED, "memnode has shut down");
		if (cn->ucx_local != NULL)
		{
			/*
			 * Shared memory: the memnode is on this host, its heartbeat is
			 * our CLOCK_MONOTONIC (as over shm), so its age is known even
			 * after we were idle -- a changed value could be from long ago.
			 */
			if (words[1] > now || now - words[1] < 150000000u)
				return DM_OK;
		}
		else if (words[1] != cn->ucx_hb)
		{
			cn->ucx_hb = words[1];
			cn->ucx_hb_seen_ns = now;
			return DM_OK;
		}
		else if (now - cn->ucx_hb_seen_ns < 150000000u)
			return DM_OK;
		if (deadline == 0)
			deadline = now + (uint64_t) c->opts.op_timeout_ms * 1000000u;
		if (now >= deadline)
			return dm_fail(c, cn, DM_ERR_TIMEOUT, "memnode has not shown a heartbeat for %llu ms",
						   (unsigned long long) ((now - cn->ucx_hb_seen_ns) / 1000000u));
		if (control_closed(cn, 5))
			return dm_fail(c, cn, DM_ERR_CLOSED, "memnode closed the connection");
	}
}

/*
 * The check above when it is due (inline: on UCX's mapping an op costs
 * ~20 ns).  The coarse clock costs ~8 ns on the VMs here, a precise one
 * 30-90: per batch, that shows; but without a clock read a memnode that
 * died while we were idle would not be noticed (see check_alive_now).
 */
static inline int
check_alive(dm_client *c, dm_conn *cn, int force)
{
	if (!force && coarse_ns() - cn->ucx_checked_ns < LIVENESS_EVERY_NS)
		return DM_OK;
	return check_alive_now(c, cn);
}

int
dm_ucx_check(dm_client *c, dm_conn *cn)
{
	U.ucp_worker_progress(c->ucx_worker);
	if (cn->ucx_ep_status != UCS_OK)
		return dm_fail(c, cn, DM_ERR_CLOSED, "UCX endpoint failed: %s", U.ucs_status_string(cn->ucx_ep_status));
	return check_alive(c, cn, 1);
}

/*
 * The UCX_ATTACH RPC on the (handshaken) control connection, with our
 * worker's address (where the memnode sends replies to RPCs over UCX); the
 * reply lands in cn->rbuf.
 */
static int
attach_rpc(dm_client *c, dm_conn *cn, dm_rpc_ucx_rep *rep, const uint8_t **blob)
{
	struct
	{
		dm_frame_hdr h;
		dm_rpc_hdr	r;
		dm_rpc_ucx_attach_req a;
	}		   *req;
	dm_frame_hdr *rh;
	uint64_t	deadline = dm_deadline(c->opts.connect_timeout_ms);
	ucp_address_t *addr = NULL;
	size_t		addr_len = 0;
	ucs_status_t st;
	int			rc;

	if ((st = U.ucp_worker_get_address(c->ucx_worker, &addr, &addr_len)) != UCS_OK)
		return dm_fail(c, cn, DM_ERR_NOSHM, "cannot get our UCX worker address: %s", U.ucs_status_string(st));
	if (addr_len > DM_UCX_ADDR_MAX || (req = calloc(1, sizeof(*req))) == NULL)
	{
		U.ucp_worker_release_address(c->ucx_worker, addr);
		return dm_fail(c, cn, addr_len > DM_UCX_ADDR_MAX ? DM_ERR_NOSHM : DM_ERR_NOMEM,
					   "our UCX worker address takes %zu bytes, more than %d: restrict UCX_TLS",
					   addr_len, DM_UCX_ADDR_MAX);
	}
	req->a.addr_len = (uint32_t) addr_len;
	req->a.flags = no_peer_mode ? 0 : DM_UCX_PEER_ERRORS;	/* our endpoint's, mirrored by the memnode's */
	memcpy(req->a.addr, addr, addr_len);
	U.ucp_worker_release_address(c->ucx_worker, addr);
	dm_hdr_init(&req->h, DM_MSG_RPC, sizeof(*req), ++cn->seq);
	req->r.code = DM_RPC_UCX_ATTACH;
	rc = dm_sock_send(c, cn, req, sizeof(*req), deadline);
	free(req);
	if (rc != DM_OK || (rc = dm_sock_recv_frame(c, cn, DM_MSG_RPC, cn->seq, deadline, &rh)) != DM_OK)
		return rc == DM_ERR_TIMEOUT ? dm_fail(c, cn, DM_ERR_CONNECT, "UCX attach timed out") : rc;
	if (rh->status == DM_ERR_NOSHM || rh->status == DM_ERR_INVALID)
		return dm_fail(c, cn, DM_ERR_NOSHM, "memnode does not export its region through UCX (start it with --ucx)");
	if (rh->status != DM_OK)
		return dm_fail(c, cn, DM_ERR_CONNECT, "UCX attach refused: %s", dm_strerror((int) rh->status));
	if (rh->length < DM_HDR_SIZE + sizeof(dm_rpc_hdr) + sizeof(*rep))
		return dm_fail(c, cn, DM_ERR_PROTOCOL, "UCX attach reply too short");
	memcpy(rep, cn->rbuf + DM_HDR_SIZE + sizeof(dm_rpc_hdr), sizeof(*rep));
	if (rep->rkey_len == 0 || rep->addr_len == 0 || rep->rkey_len + rep->addr_len > DM_UCX_BLOB_MAX ||
		rh->length < DM_HDR_SIZE + sizeof(dm_rpc_hdr) + sizeof(*rep) + rep->rkey_len + rep->addr_len ||
		(rep->token[0] == 0 && rep->token[1] == 0))
		return dm_fail(c, cn, DM_ERR_PROTOCOL, "UCX attach reply is malformed");
	*blob = cn->rbuf + DM_HDR_SIZE + sizeof(dm_rpc_hdr) + sizeof(*rep);
	return DM_OK;
}

int
dm_ucx_attach(dm_client *c, dm_conn *cn)
{
	ucp_context_h ctx = ucx_context();
	dm_rpc_ucx_rep rep;
	const uint8_t *blob = NULL;
	ucp_ep_params_t ep;
	ucs_status_t st;
	void	   *reqs[1];
	int			nreq = 0, rc;

	if (ctx == NULL)
		return dm_fail(c, cn, DM_ERR_NOSHM, "%s", ucx_ctx_err);
	if (c->ucx_worker == NULL || c->ucx_pid != getpid())
	{
		ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_SINGLE};

		c->ucx_worker = NULL;
		if ((st = U.ucp_worker_create(ctx, &wp, (ucp_worker_h *) &c->ucx_worker)) != UCS_OK ||
			(st = U.ucp_worker_get_efd(c->ucx_worker, &c->ucx_efd)) != UCS_OK)
			return dm_fail(c, cn, DM_ERR_NOSHM, "cannot create a UCX worker: %s", U.ucs_status_string(st));
		c->ucx_pid = getpid();
		c->ucx_rpc_cn = NULL;
		c->ucx_rpc_ready = 0;	/* its reply handler: at its first RPC (dm_ucx_rpc.c) */
	}
	if ((rc = attach_rpc(c, cn, &rep, &blob)) != DM_OK)
		return rc;
	memset(&ep, 0, sizeof(ep));
	ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
		UCP_EP_PARAM_FIELD_ERR_HANDLER;
	ep.address = (const ucp_address_t *) (blob + rep.rkey_len);
	ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
	ep.err_handler.cb = ep_error_cb;
	ep.err_handler.arg = cn;
	cn->ucx_ep_status = UCS_OK;
	/*
	 * Peer failure handling where the transports have it (tcp, verbs);
	 * UCX 1.13's shared-memory transports do not, and there the liveness
	 * check (check_alive) is what notices a memnode gone.
	 */
	if (no_peer_mode)
		ep.field_mask &= ~(uint64_t) (UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER);
	if ((st = U.ucp_ep_create(c->ucx_worker, &ep, (ucp_ep_h *) &cn->ucx_ep)) != UCS_OK)
	{
		/*
		 * The attach told the memnode our endpoint's error handling, and
		 * its endpoint for our replies is made so; without it from now on
		 * (UCX has logged why), from the next connection on.
		 */
		cn->ucx_ep = NULL;
		if (!no_peer_mode)
		{
			no_peer_mode = 1;
			return dm_fail(c, cn, DM_ERR_CONNECT, "UCX cannot report peer failures over these transports (%s): "
						   "reconnect to use it without", U.ucs_status_string(st));
		}
		return dm_fail(c, cn, DM_ERR_CONNECT, "cannot create a UCX endpoint: %s", U.ucs_status_string(st));
	}
	cn->ucx_worker = c->ucx_worker;
	cn->ucx_pid = getpid();
	cn->ucx_base = rep.base;
	memcpy(cn->ucx_token, rep.token, sizeof(cn->ucx_token));
	cn->ucx_allocated = (rep.flags & DM_UCX_ALLOCATED) != 0;
	if ((st = U.ucp_ep_rkey_unpack(cn->ucx_ep, blob, (ucp_rkey_h *) &cn->ucx_rkey)) != UCS_OK)
		return dm_fail(c, cn, DM_ERR_PROTOCOL, "cannot unpack the memnode's rkey: %s", U.ucs_status_string(st));
	/*
	 * The superblock through the new path: proves base and rkey name this
	 * memnode's region (the incarnation of the handshake), and gives the
	 * layout that bounds every op.
	 */
	if ((cn->ucx_sb = malloc(sizeof(dm_superblock))) == NULL)
		return dm_fail(c, cn, DM_ERR_NOMEM, "out of memory");
	if ((rc = track(c, cn, get(cn, cn->ucx_sb, 0, sizeof(dm_superblock)), reqs, &nreq, "reading the superblock")) != DM_OK ||
		(rc = wait_all(c, cn, reqs, &nreq, dm_deadline(c->opts.connect_timeout_ms))) != DM_OK)
		return rc == DM_ERR_TIMEOUT ? dm_fail(c, cn, DM_ERR_CONNECT, "no UCX connection to the memnode") : rc;
	if (cn->ucx_sb->magic != DM_SB_MAGIC || cn->ucx_sb->incarnation != cn->seen_incarnation ||
		cn->ucx_sb->node_id != cn->node_id || cn->ucx_sb->region_size != cn->region_size)
		return dm_fail(c, cn, DM_ERR_NOSHM, "the region reached through UCX is not this memnode's");
	/*
	 * Over shared memory UCX can map the region here (posix or sysv, on a
	 * region it allocated): ucp_rkey_ptr gives a local pointer, and ops run
	 * on it directly (dm_shm_exec), as UCX's own get, put and atomics on
	 * that transport would (a copy, a locked instruction) but without their
	 * per-op request and protocol dispatch.  The mapping must cover the
	 * region contiguously; otherwise, and on RDMA or tcp, UCX's operations.
	 * DM_UCX_NO_RKEY_PTR in the environment keeps UCX's operations here
	 * too (bench/run-transport-bench.sh: the comparison with ucx_perftest).
	 */
	{
		void	   *lo = NULL,
				   *hi = NULL;

		cn->ucx_local = NULL;
		if (U.ucp_rkey_ptr(cn->ucx_rkey, cn->ucx_base, &lo) == UCS_OK &&
			U.ucp_rkey_ptr(cn->ucx_rkey, cn->ucx_base + cn->region_size - 8, &hi) == UCS_OK &&
			(uint8_t *) hi - (uint8_t *) lo == (ptrdiff_t) (cn->region_size - 8))
			cn->ucx_local = getenv("DM_UCX_NO_RKEY_PTR") ? NULL : lo;
	}
	memset(&cn->ucx_region, 0, sizeof(cn->ucx_region));
	cn->ucx_region.size = cn->region_size;
	cn->ucx_region.sb = cn->ucx_sb;
	cn->ucx_region.node_id = cn->node_id;
	cn->ucx_hb = cn->ucx_sb->heartbeat_ns;
	cn->ucx_hb_seen_ns = dm_mono_ns();
	cn->ucx_checked_ns = coarse_ns();
	return DM_OK;
}

/* One op's data movement; tear mode moves READ/WRITE in 8-byte pieces. */
static int
issue(dm_client *c, dm_conn *cn, dm_op *op, void **reqs, int *nreq)
{
	uint64_t	off = dm_gaddr_offset(op->addr);
	uint32_t	step = (c->opts.flags & DM_CLIENT_TEAR) ? 8 : op->len;
	int			rc = DM_OK;

	if (op->kind != DM_OP_READ && op->kind != DM_OP_WRITE)
		return track(c, cn, atomic(cn, op, off), reqs, nreq, "an atomic");
	for (uint32_t at = 0; at < op->len && rc == DM_OK; at += step)
	{
		uint32_t	n = op->len - at < step ? op->len - at : step;

		if (op->kind == DM_OP_READ)
			rc = track(c, cn, get(cn, (uint8_t *) op->buf + at, off + at, n), reqs, nreq, "a get");
		else
			rc = track(c, cn, put(cn, (const uint8_t *) op->buf + at, off + at, n), reqs, nreq, "a put");
	}
	return rc;
}

/* Fault injection: store the first kill_mid_words words of this write, then die. */
static void
kill_mid(dm_client *c, dm_conn *cn, dm_op *op, void **reqs, int *nreq)
{
	if (c->kill_mid_words > 0)
	{
		dm_op		part = *op;

		part.len = c->kill_mid_words * 8;
		if (issue(c, cn, &part, reqs, nreq) == DM_OK && wait_all(c, cn, reqs, nreq, dm_deadline(1000)) == DM_OK)
			flush(c, cn, dm_deadline(1000));
	}
	raise(SIGKILL);
}

int
dm_ucx_post(dm_client *c, dm_conn *cn, dm_op *ops, int *bad_index)
{
	uint64_t	deadline = 0;	/* from the first wait on (wait_req) */
	void	   *reqs_local[32];
	void	  **reqs = reqs_local;
	int			nreq = 0, wrote = 0, rc = DM_OK;
	int			maxreq = 0;

	/* validate everything first: a rejected batch applies nothing */
	for (int k = 0; k < cn->nidx; k++)
	{
		dm_op	   *op = &ops[cn->idx[k]];
		uint32_t	len = op->kind == DM_OP_READ || op->kind == DM_OP_WRITE ? op->len : 8;

		rc = dm_region_check_op(&cn->ucx_region, op->kind, dm_gaddr_offset(op->addr), len);
		/* UCX has no fetch-and-max atomic (dm_tree_writer.c raises its mark with a CAS instead) */
		if (rc == DM_OK && op->kind == DM_OP_FETCH_MAX)
			rc = DM_ERR_INVALID;
		if (rc != DM_OK)
		{
			if (bad_index)
				*bad_index = cn->idx[k];
			snprintf(c->err, sizeof(c->err), "memnode %s: operation %d (kind %d, address 0x%llx, length %u) rejected: %s",
					 cn->address, cn->idx[k], op->kind, (unsigned long long) op->addr, len, dm_strerror(rc));
			return rc;
		}
		maxreq += (c->opts.flags & DM_CLIENT_TEAR) && len > 8 ? (int) ((len + 7) / 8) : 1;
	}
	if ((rc = check_alive(c, cn, 0)) != DM_OK)
		return rc;
	/* on UCX's mapping the store is the completion: no request, no flush */
	if (cn->ucx_local != NULL)
		return dm_shm_exec(c, cn, cn->ucx_local, ops);
	if (maxreq > 32 && (reqs = malloc(sizeof(void *) * (size_t) maxreq)) == NULL)
		return dm_fail(c, cn, DM_ERR_NOMEM, "out of memory");
	for (int k = 0; k < cn->nidx && rc == DM_OK; k++)
	{
		dm_op	   *op = &ops[cn->idx[k]];

		/* ops run in order: only reads may overlap each other (unless told not to) */
		if (k > 0 && (!(op->kind == DM_OP_READ && ops[cn->idx[k - 1]].kind == DM_OP_READ) ||
					  (op->flags & DM_OPF_ORDERED)))
			U.ucp_worker_fence(c->ucx_worker);
		if (op->kind == DM_OP_WRITE)
		{
			wrote = 1;
			if (c->kill_mid_armed)
			{
				if ((uint64_t) c->kill_mid_words * 8 < op->len)
					kill_mid(c, cn, op, reqs, &nreq);
				c->kill_mid_words -= (op->len + 7) / 8;
			}
			cn->ctr.bytes_written += op->len;
		}
		else if (op->kind == DM_OP_READ)
			cn->ctr.bytes_read += op->len;
		cn->ctr.ops[op->kind]++;
		if ((rc = issue(c, cn, op, reqs, &nreq)) != DM_OK)
			break;
		if ((op->flags & DM_OPF_GUARD) && deadline == 0)
			deadline = dm_deadline(c->opts.op_timeout_ms);	/* one limit for the batch's waits */
		if ((op->flags & DM_OPF_GUARD) && (rc = wait_all(c, cn, reqs, &nreq, deadline)) == DM_OK &&
			op->result != op->arg0)
		{
			/* as the memnode does after a failed guard: nothing more */
			for (int j = k + 1; j < cn->nidx; j++)
				ops[cn->idx[j]].result = 0;
			break;
		}
	}
	if (rc == DM_OK)
		rc = wait_all(c, cn, reqs, &nreq, deadline);
	for (int i = 0; i < nreq; i++)
		U.ucp_request_free(reqs[i]);
	if (reqs != reqs_local)
		free(reqs);
	/* a put is complete locally before it is in the region: the batch ends with it there */
	if (rc == DM_OK && wrote)
		rc = flush(c, cn, deadline);
	if (c->kill_mid_armed)
		raise(SIGKILL);			/* the step stored fewer words than the fault wanted */
	if (rc == DM_OK)
		cn->ctr.round_trips++;
	return rc;
}
