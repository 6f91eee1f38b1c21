/*
 * ucx_rpc.c — RPCs over UCX active messages (--ucx), the memnode's half
 * (docs/design.md §4, "RPCs over UCX").
 *
 * A control connection binds itself here with its UCX_ATTACH RPC (exec.c,
 * after the handshake and its authentication): it gets a random 128-bit
 * token, and an endpoint to the client's worker (made at the first reply,
 * reply_ep) carries its replies.  An
 * active message DM_UCX_AM_RPC whose header holds a bound token is copied
 * and handed to the worker thread that serves that connection (server.c),
 * which runs it as a frame of the connection: its identity, its hang-up
 * check, its offload slot.  So an RPC over UCX is authorised exactly as on
 * the socket, and the progress thread (ucx.c) never runs one: it goes on
 * progressing UCX while an RPC (an offload, an allocation waiting for the
 * region lock) runs, which UCX's tcp emulation of get and atomics needs.
 * A message with any other token is dropped unanswered (its connection
 * closed, so its sender gave up; or a forgery): frames_bad counts it.
 * The connection's close unbinds it, so a request that arrives after its
 * sender gave up (and hung up) is not run, as over tcp.
 *
 * The token is the only thing that ties a message to a connection: UCX
 * tells a receiver nothing of who sent it, and the worker address is not
 * secret.  A client's worker address is given to UCX as it came: a client
 * that passed the handshake could hand a malformed one, but such a client
 * already holds the rkey of the whole region (§4, ucx: no isolation at op
 * level).
 *
 * Threads: the UCX worker is made with UCS_THREAD_MODE_MULTI (ucx.c), as
 * the server's workers make reply endpoints, reply and unbind from their
 * own threads.
 * UCX holds its worker lock while it progresses, and so while it runs the
 * receive callback, which takes the table's mutex: nothing here calls UCX
 * while it holds that mutex.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dm_ucx.h"
#include "memnode.h"

struct mn_ucx_binding
{
	uint64_t	token[2];
	int			worker;			/* the server worker serving the connection */
	mn_conn_info *ci;
	ucp_ep_h	ep;				/* to the client's worker: replies (made at the first) */
	int			peer_errors;	/* the client's endpoint asks for peer failure reports */
	uint32_t	addr_len;
	uint8_t    *addr;			/* the client's worker address */
	struct mn_ucx_binding *next;	/* hash chain */
};

#define NBUCKETS 256

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static mn_ucx_binding *tab[NBUCKETS];
static ucp_worker_h rpc_worker;
static mn_ucx_post_fn post_fn;
static mn_state *rpc_mns;

/* The binding of a token (the caller holds tab_lock). */
static mn_ucx_binding *
lookup(const uint64_t token[2])
{
	for (mn_ucx_binding *b = tab[token[0] % NBUCKETS]; b; b = b->next)
		if (b->token[0] == token[0] && b->token[1] == token[1])
			return b;
	return NULL;
}

static void
dropped(const char *why, size_t header_length, size_t length)
{
	__atomic_fetch_add(&rpc_mns->ucx_dropped, 1, __ATOMIC_RELAXED);
	mn_log_limited("dropped an RPC message over UCX: %s (%zu-byte header, %zu bytes)", why, header_length, length);
}

/*
 * The receive callback (the progress thread, under UCX's worker lock):
 * check the message's shape and token, copy it, queue it for the
 * connection's worker.  Never blocks beyond two short mutexes.
 */
static ucs_status_t
rpc_recv(void *arg, const void *header, size_t header_length, void *data, size_t length,
		 const ucp_am_recv_param_t *param)
{
	dm_ucx_am_hdr ah;
	mn_ucx_binding *b;
	mn_ucx_req *r;
	int			worker = -1;

	(void) arg;
	/* rendezvous data would need a receive of its own: our clients send eagerly */
	if (header_length != sizeof(ah) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
		length < DM_HDR_SIZE || length > DM_FRAME_MAX)
	{
		dropped("malformed message", header_length, length);
		return UCS_OK;
	}
	memcpy(&ah, header, sizeof(ah));
	pthread_mutex_lock(&tab_lock);
	if ((b = lookup(ah.token)) != NULL)
		worker = b->worker;
	pthread_mutex_unlock(&tab_lock);
	if (worker < 0)
	{
		dropped("unknown token (a closed connection's, or forged)", header_length, length);
		return UCS_OK;
	}
	/* frames are parsed in place as structs: an 8-aligned copy */
	if ((r = malloc(sizeof(*r))) == NULL || (r->frame = aligned_alloc(8, dm_pad8((uint32_t) length))) == NULL)
	{
		free(r);
		dropped("out of memory", header_length, length);
		return UCS_OK;
	}
	memcpy(r->token, ah.token, sizeof(r->token));
	memcpy(r->frame, data, length);
	r->len = (uint32_t) length;
	r->next = NULL;
	post_fn(worker, r);
	return UCS_OK;
}

int
mn_ucx_rpc_init(mn_state *mns, void *worker, mn_ucx_post_fn post)
{
	ucp_am_handler_param_t hp;
	ucs_status_t st;

	rpc_worker = worker;
	rpc_mns = mns;
	post_fn = post;
	memset(&hp, 0, sizeof(hp));
	hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
		UCP_AM_HANDLER_PARAM_FIELD_CB;
	hp.id = DM_UCX_AM_RPC;
	hp.flags = UCP_AM_FLAG_WHOLE_MSG;
	hp.cb = rpc_recv;
	if ((st = U.ucp_worker_set_am_recv_handler(rpc_worker, &hp)) != UCS_OK)
	{
		mn_log(LOG_ERROR, "cannot receive RPCs over UCX: %s", U.ucs_status_string(st));
		return -1;
	}
	return 0;
}

void
mn_ucx_req_free(mn_ucx_req *r)
{
	free(r->frame);
	free(r);
}

/* A reply endpoint failed (the client died): its sends fail from now on; the connection's close unbinds it. */
static void
ep_failed(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	(void) arg;
	(void) ep;
	mn_log(LOG_DEBUG, "UCX reply endpoint failed: %s", U.ucs_status_string(st));
}

int
mn_ucx_bind(mn_conn_info *ci, const dm_rpc_ucx_attach_req *req, uint64_t token[2])
{
	mn_ucx_binding *b;

	if (ci->ucx != NULL)
		return DM_ERR_INVALID;	/* one attach per connection */
	if (req->addr_len == 0 || req->addr_len > DM_UCX_ADDR_MAX)
		return DM_ERR_INVALID;
	if ((b = calloc(1, sizeof(*b))) == NULL || (b->addr = malloc(req->addr_len)) == NULL)
	{
		free(b);
		return DM_ERR_NOMEM;
	}
	if (dm_auth_random((uint8_t *) b->token, sizeof(b->token)) != DM_OK)
	{
		free(b->addr);
		free(b);
		return DM_ERR_INTERNAL;
	}
	memcpy(b->addr, req->addr, req->addr_len);
	b->addr_len = req->addr_len;
	b->peer_errors = (req->flags & DM_UCX_PEER_ERRORS) != 0;
	b->ci = ci;
	b->worker = ci->worker;
	ci->ucx = b;
	pthread_mutex_lock(&tab_lock);
	b->next = tab[b->token[0] % NBUCKETS];
	tab[b->token[0] % NBUCKETS] = b;
	pthread_mutex_unlock(&tab_lock);
	token[0] = b->token[0];
	token[1] = b->token[1];
	return DM_OK;
}

/*
 * The endpoint for a connection's replies, made at its first reply: by
 * then the client's endpoint has connected to us, and UCX pairs ours with
 * it (the same connection, the same error handling) instead of opening
 * one of its own to the client's worker -- which a client forked from a
 * process that had loaded UCX could never accept over UCX tcp, as UCX's
 * connection thread did not survive the fork.  No table lock held: UCX
 * takes its worker lock (see the top).
 */
static ucp_ep_h
reply_ep(mn_ucx_binding *b)
{
	ucp_ep_params_t ep;
	ucs_status_t st;

	if (b->ep != NULL)
		return b->ep;
	memset(&ep, 0, sizeof(ep));
	ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
	ep.address = (const ucp_address_t *) b->addr;
	if (b->peer_errors)
	{
		/* as the client's endpoint: UCX refuses a pair whose error handling differs */
		ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
		ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
		ep.err_handler.cb = ep_failed;
	}
	if ((st = U.ucp_ep_create(rpc_worker, &ep, &b->ep)) != UCS_OK)
	{
		mn_log_limited("client %s: no UCX endpoint to its worker: %s", b->ci->peer, U.ucs_status_string(st));
		b->ep = NULL;
	}
	return b->ep;
}

mn_conn_info *
mn_ucx_conn_of(const mn_ucx_req *r, int worker)
{
	mn_ucx_binding *b;
	mn_conn_info *ci = NULL;

	pthread_mutex_lock(&tab_lock);
	/* only the connection's own worker unbinds it: valid while this worker runs */
	if ((b = lookup(r->token)) != NULL && b->worker == worker)
		ci = b->ci;
	pthread_mutex_unlock(&tab_lock);
	return ci;
}

/* Completion of a reply or a close: the request (and a reply's buffer) go. */
static void
sent(void *request, ucs_status_t st, void *user_data)
{
	(void) st;
	free(user_data);
	U.ucp_request_free(request);
}

void
mn_ucx_reply(mn_conn_info *ci, const uint8_t *frame, uint32_t len)
{
	mn_ucx_binding *b = ci->ucx;
	ucp_request_param_t p;
	ucs_status_ptr_t r;
	uint8_t    *buf;

	/* the header and the frame in one buffer, kept until the send completes */
	if (b == NULL || reply_ep(b) == NULL || (buf = malloc(sizeof(dm_ucx_am_hdr) + len)) == NULL)
		return;					/* the client times out, as for a lost tcp reply */
	memcpy(buf, b->token, sizeof(dm_ucx_am_hdr));
	memcpy(buf + sizeof(dm_ucx_am_hdr), frame, len);
	memset(&p, 0, sizeof(p));
	p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
	p.flags = UCP_AM_SEND_FLAG_EAGER;
	p.cb.send = sent;
	p.user_data = buf;
	r = U.ucp_am_send_nbx(b->ep, DM_UCX_AM_REPLY, buf, sizeof(dm_ucx_am_hdr), buf + sizeof(dm_ucx_am_hdr), len, &p);
	if (r == NULL)
		free(buf);
	else if (UCS_PTR_IS_ERR(r))
	{
		free(buf);
		mn_log_limited("client %s: cannot send an RPC reply over UCX: %s", ci->peer,
					   U.ucs_status_string(UCS_PTR_STATUS(r)));
	}
	else
		U.ucp_worker_signal(rpc_worker);	/* the progress thread may sleep: it completes the send */
}

void
mn_ucx_unbind(mn_conn_info *ci)
{
	mn_ucx_binding *b = ci->ucx;
	mn_ucx_binding **pp;
	ucp_request_param_t p;
	ucs_status_ptr_t r;

	if (b == NULL)
		return;
	ci->ucx = NULL;
	pthread_mutex_lock(&tab_lock);
	for (pp = &tab[b->token[0] % NBUCKETS]; *pp; pp = &(*pp)->next)
		if (*pp == b)
		{
			*pp = b->next;
			break;
		}
	pthread_mutex_unlock(&tab_lock);
	/* replies still queued on it are cancelled (their callbacks free them) */
	if (b->ep != NULL)
	{
		memset(&p, 0, sizeof(p));
		p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
		p.flags = UCP_EP_CLOSE_FLAG_FORCE;
		p.cb.send = sent;
		p.user_data = NULL;
		r = U.ucp_ep_close_nbx(b->ep, &p);
		if (UCS_PTR_IS_PTR(r))
			U.ucp_worker_signal(rpc_worker);
	}
	free(b->addr);
	free(b);
}
