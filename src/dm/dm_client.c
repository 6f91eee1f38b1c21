/*
 * dm_client.c — the transport client: connections to memnodes, handshake,
 * routing of one-sided operations by global address, batches (one frame per
 * memnode per dm_post) and RPCs.  Socket details are in dm_sock.c, the shm
 * backend in dm_shm.c, the ucx backend in dm_ucx.c.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dm_client_int.h"

#define DEFAULT_CONNECT_TIMEOUT_MS 5000
#define DEFAULT_OP_TIMEOUT_MS 10000

/* Errors after which the byte stream (or mapping) can no longer be trusted. */
static int
breaks_connection(int status)
{
	switch (status)
	{
		case DM_ERR_CONNECT:
		case DM_ERR_TIMEOUT:
		case DM_ERR_CLOSED:
		case DM_ERR_INCARNATION:
		case DM_ERR_PROTOCOL:
		case DM_ERR_VERSION:
		case DM_ERR_INTERRUPTED:
		case DM_ERR_AUTH:
			return 1;
		default:
			return 0;
	}
}

void
dm_conn_break(dm_conn *cn, int status)
{
	if (cn->fd >= 0)
		close(cn->fd);
	cn->fd = -1;
	dm_shm_unmap(cn);
	dm_ucx_close(cn);
	cn->status = status;
}

int
dm_fail(dm_client *c, dm_conn *cn, int status, const char *fmt,...)
{
	char		detail[400];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (cn != NULL)
	{
		snprintf(c->err, sizeof(c->err), "memnode %s: %s", cn->address, detail);
		if (breaks_connection(status))
			dm_conn_break(cn, status);
	}
	else
		snprintf(c->err, sizeof(c->err), "%s", detail);
	return status;
}

dm_client *
dm_client_create(const dm_client_opts *opts)
{
	dm_client  *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	if (opts)
		c->opts = *opts;
	if (c->opts.connect_timeout_ms <= 0)
		c->opts.connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
	if (c->opts.op_timeout_ms <= 0)
		c->opts.op_timeout_ms = DEFAULT_OP_TIMEOUT_MS;
	if (c->opts.spin_us == 0)
		c->opts.spin_us = 50;
	/* copied: the caller's string may not outlive us */
	snprintf(c->name, sizeof(c->name), "%s", opts && opts->name ? opts->name : "");
	c->opts.name = NULL;
	if (opts && opts->auth_identity && opts->auth_identity[0])
	{
		/* checked at connect (dm_fail needs a client to report on) */
		snprintf(c->auth_identity, sizeof(c->auth_identity), "%s", opts->auth_identity);
		c->auth_secret_len = opts->auth_secret_len <= sizeof(c->auth_secret) ? opts->auth_secret_len : 0;
		if (opts->auth_secret)
			memcpy(c->auth_secret, opts->auth_secret, c->auth_secret_len);
	}
	c->opts.auth_identity = NULL;
	c->opts.auth_secret = NULL;
	return c;
}

static void
conn_free(dm_conn *cn)
{
	dm_conn_break(cn, DM_ERR_CLOSED);
	free(cn->sbuf);
	free(cn->rbuf);
	free(cn->idx);
	free(cn);
}

void
dm_client_destroy(dm_client *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < c->nconns; i++)
		conn_free(c->conns[i]);
	free(c->conns);
	dm_ucx_client_free(c);
	dm_auth_wipe(c->auth_secret, sizeof(c->auth_secret));
	free(c);
}

const char *
dm_client_error(const dm_client *c)
{
	return c->err;
}

static dm_conn *
conn_by_node(const dm_client *c, uint16_t node_id)
{
	for (int i = 0; i < c->nconns; i++)
		if (c->conns[i]->node_id == node_id)
			return c->conns[i];
	return NULL;
}

/*
 * The second half of an authenticated handshake (dm_auth.h): send our proof
 * for the memnode's challenge, check its proof, and leave the real HELLO
 * reply in *rep.
 */
static int
authenticate(dm_client *c, dm_conn *cn, const dm_hello_req *hr, const uint8_t *server_nonce,
			 uint64_t deadline, dm_hello_rep *rep)
{
	struct
	{
		dm_frame_hdr h;
		dm_auth_req r;
	}			req;
	dm_frame_hdr *rh;
	dm_auth_rep ar;
	uint8_t		want[DM_AUTH_MAC_LEN];
	int			rc;

	memset(&req, 0, sizeof(req));
	dm_hdr_init(&req.h, DM_MSG_AUTH, sizeof(req), ++cn->seq);
	if (dm_auth_mac(c->auth_secret, c->auth_secret_len, DM_AUTH_ROLE_CLIENT, hr->identity,
					hr->client_nonce, server_nonce, req.r.mac) != DM_OK)
		return dm_fail(c, cn, DM_ERR_AUTH, "cannot compute the authentication proof");
	if ((rc = dm_sock_send(c, cn, &req, sizeof(req), deadline)) != DM_OK)
		return rc == DM_ERR_TIMEOUT ? dm_fail(c, cn, DM_ERR_CONNECT, "handshake timed out") : rc;
	if ((rc = dm_sock_recv_frame(c, cn, DM_MSG_AUTH, cn->seq, deadline, &rh)) != DM_OK)
	{
		if (rc == DM_ERR_TIMEOUT || rc == DM_ERR_CLOSED)
			return dm_fail(c, cn, DM_ERR_CONNECT, "no authentication reply (%s)", dm_strerror(rc));
		return rc;
	}
	if (rh->status == DM_ERR_AUTH)
		return dm_fail(c, cn, DM_ERR_AUTH, "authentication as \"%s\" refused (wrong secret or unknown identity)",
					   c->auth_identity);
	if (rh->status != DM_OK)
		return dm_fail(c, cn, DM_ERR_CONNECT, "authentication refused: %s", dm_strerror((int) rh->status));
	if (rh->length != DM_HDR_SIZE + sizeof(ar))
		return dm_fail(c, cn, DM_ERR_PROTOCOL, "authentication reply has length %u", rh->length);
	memcpy(&ar, cn->rbuf + DM_HDR_SIZE, sizeof(ar));
	if (dm_auth_mac(c->auth_secret, c->auth_secret_len, DM_AUTH_ROLE_SERVER, hr->identity,
					hr->client_nonce, server_nonce, want) != DM_OK ||
		!dm_auth_mac_equal(want, ar.mac))
		return dm_fail(c, cn, DM_ERR_AUTH, "the memnode could not prove it knows the secret of \"%s\"",
					   c->auth_identity);
	*rep = ar.hello;
	return DM_OK;
}

/* Open the socket and shake hands; fills the memnode's identity into cn. */
static int
handshake(dm_client *c, dm_conn *cn)
{
	struct
	{
		dm_frame_hdr h;
		dm_hello_req r;
	}			req;
	dm_frame_hdr *rh;
	dm_hello_rep rep;
	uint64_t	deadline;
	int			rc;

	if (c->auth_identity[0] && (!dm_auth_identity_valid(c->auth_identity) ||
								c->auth_secret_len < DM_AUTH_SECRET_MIN))
		return dm_fail(c, cn, DM_ERR_AUTH, "invalid credentials: identity \"%s\" or a secret shorter than %d bytes",
					   c->auth_identity, DM_AUTH_SECRET_MIN);
	if ((rc = dm_sock_connect(c, cn)) != DM_OK)
		return rc;
	deadline = dm_deadline(c->opts.connect_timeout_ms);
	memset(&req, 0, sizeof(req));
	dm_hdr_init(&req.h, DM_MSG_HELLO, sizeof(req), ++cn->seq);
	req.r.version = DM_PROTO_VERSION;
	req.r.flags = (c->opts.flags & DM_CLIENT_TEAR) ? DM_HELLO_TEAR : 0;
	req.r.client_pid = (uint64_t) getpid();
	if (c->name[0])
		snprintf(req.r.client_name, sizeof(req.r.client_name), "%s", c->name);
	else
		snprintf(req.r.client_name, sizeof(req.r.client_name), "pid %d", (int) getpid());
	if (c->auth_identity[0])
	{
		memcpy(req.r.identity, c->auth_identity, sizeof(req.r.identity));
		if (dm_auth_random(req.r.client_nonce, sizeof(req.r.client_nonce)) != DM_OK)
			return dm_fail(c, cn, DM_ERR_AUTH, "no random bytes for the authentication nonce");
	}
	if ((rc = dm_sock_send(c, cn, &req, sizeof(req), deadline)) != DM_OK)
		return rc == DM_ERR_TIMEOUT ? dm_fail(c, cn, DM_ERR_CONNECT, "handshake timed out") : rc;
	if ((rc = dm_sock_recv_frame(c, cn, DM_MSG_HELLO, cn->seq, deadline, &rh)) != DM_OK)
	{
		if (rc == DM_ERR_TIMEOUT || rc == DM_ERR_CLOSED)
			return dm_fail(c, cn, DM_ERR_CONNECT, "no handshake reply (%s)", dm_strerror(rc));
		return rc;
	}
	if (rh->status == DM_ERR_AUTH)
		return dm_fail(c, cn, DM_ERR_AUTH, "the memnode requires authentication%s",
					   c->auth_identity[0] ? "" : " (no credentials configured)");
	if (rh->status != DM_OK)
		return dm_fail(c, cn, rh->status == DM_ERR_VERSION ? DM_ERR_VERSION : DM_ERR_CONNECT,
					   "handshake refused: %s", dm_strerror((int) rh->status));
	if (rh->length != DM_HDR_SIZE + sizeof(rep))
		return dm_fail(c, cn, DM_ERR_PROTOCOL, "handshake reply has length %u", rh->length);
	memcpy(&rep, cn->rbuf + DM_HDR_SIZE, sizeof(rep));
	if (rep.version != DM_PROTO_VERSION)
		return dm_fail(c, cn, DM_ERR_VERSION, "memnode speaks protocol version %u, we speak %u",
					   rep.version, DM_PROTO_VERSION);
	if (rep.flags & DM_HELLO_REP_AUTH)
	{
		uint8_t		server_nonce[DM_AUTH_NONCE_LEN];

		if (!c->auth_identity[0])
			return dm_fail(c, cn, DM_ERR_AUTH, "the memnode requires authentication (no credentials configured)");
		memcpy(server_nonce, rep.server_nonce, sizeof(server_nonce));
		if ((rc = authenticate(c, cn, &req.r, server_nonce, deadline, &rep)) != DM_OK)
			return rc;
		if (rep.version != DM_PROTO_VERSION || (rep.flags & DM_HELLO_REP_AUTH))
			return dm_fail(c, cn, DM_ERR_PROTOCOL, "authentication reply is malformed");
	}
	else if (c->auth_identity[0])
		return dm_fail(c, cn, DM_ERR_AUTH,
					   "the memnode does not require authentication, so it cannot prove it is the one configured (start it with --auth-file)");
	if (rep.node_id > DM_NODE_ID_MAX || rep.incarnation == 0 || rep.region_size == 0 ||
		rep.region_size > DM_OFFSET_MASK || memchr(rep.shm_path, '\0', sizeof(rep.shm_path)) == NULL)
		return dm_fail(c, cn, DM_ERR_PROTOCOL, "handshake reply is malformed");
	cn->node_id = (uint16_t) rep.node_id;
	cn->seen_incarnation = rep.incarnation;
	cn->region_size = rep.region_size;
	cn->chunk_size = rep.chunk_size;
	cn->shm_offered = (rep.flags & DM_HELLO_REP_SHM) != 0;
	memcpy(cn->shm_path, rep.shm_path, sizeof(cn->shm_path));
	return DM_OK;
}

/* Handshake, incarnation check, and backend choice. */
static int
conn_open(dm_client *c, dm_conn *cn)
{
	int			rc;

	dm_conn_break(cn, DM_ERR_CLOSED);
	if ((rc = handshake(c, cn)) != DM_OK)
	{
		dm_conn_break(cn, rc);
		return rc;
	}
	if (cn->incarnation != 0 && cn->seen_incarnation != cn->incarnation)
	{
		rc = dm_fail(c, cn, DM_ERR_INCARNATION,
					 "memnode restarted: incarnation is now %016llx, was %016llx",
					 (unsigned long long) cn->seen_incarnation, (unsigned long long) cn->incarnation);
		return rc;
	}
	cn->incarnation = cn->seen_incarnation;
	cn->backend = DM_BACKEND_TCP;
	if (c->opts.backend == DM_BACKEND_UCX)
	{
		if ((rc = dm_ucx_attach(c, cn)) != DM_OK)
		{
			dm_conn_break(cn, rc);
			return rc;
		}
		cn->backend = DM_BACKEND_UCX;
	}
	else if (c->opts.backend != DM_BACKEND_TCP)
	{
		rc = cn->shm_offered ? dm_shm_map(c, cn) : DM_ERR_NOSHM;
		if (rc == DM_OK)
			cn->backend = DM_BACKEND_SHM;
		else if (c->opts.backend == DM_BACKEND_SHM)
		{
			if (!cn->shm_offered)
				dm_fail(c, cn, rc, "memnode does not export its region (start it with --shm)");
			dm_conn_break(cn, rc);
			return rc;
		}
	}
	cn->status = DM_OK;
	return DM_OK;
}

int
dm_client_connect(dm_client *c, const char *hostport, uint16_t *node_id)
{
	dm_conn    *cn;
	dm_conn   **nc;
	int			rc;

	for (int i = 0; i < c->nconns; i++)
		if (strcmp(c->conns[i]->address, hostport) == 0)
		{
			if (node_id)
				*node_id = c->conns[i]->node_id;
			return c->conns[i]->status;
		}
	if (strlen(hostport) >= sizeof(cn->address))
		return dm_fail(c, NULL, DM_ERR_INVALID, "memnode address too long");
	if ((cn = calloc(1, sizeof(*cn))) == NULL)
		return dm_fail(c, NULL, DM_ERR_NOMEM, "out of memory");
	cn->fd = -1;
	strcpy(cn->address, hostport);
	if ((rc = conn_open(c, cn)) != DM_OK)
	{
		conn_free(cn);
		return rc;
	}
	if (conn_by_node(c, cn->node_id) != NULL)
	{
		rc = dm_fail(c, cn, DM_ERR_EXISTS, "memnode id %u is already used by another connected memnode",
					 cn->node_id);
		conn_free(cn);
		return rc;
	}
	if ((nc = realloc(c->conns, sizeof(*nc) * (c->nconns + 1))) == NULL)
	{
		conn_free(cn);
		return dm_fail(c, NULL, DM_ERR_NOMEM, "out of memory");
	}
	c->conns = nc;
	c->conns[c->nconns++] = cn;
	if (node_id)
		*node_id = cn->node_id;
	return DM_OK;
}

int
dm_client_reconnect(dm_client *c, uint16_t node_id)
{
	dm_conn    *cn = conn_by_node(c, node_id);

	if (cn == NULL)
		return dm_fail(c, NULL, DM_ERR_NOTFOUND, "no connection to memnode id %u", node_id);
	return conn_open(c, cn);
}

int
dm_client_accept_incarnation(dm_client *c, uint16_t node_id)
{
	dm_conn    *cn = conn_by_node(c, node_id);

	if (cn == NULL)
		return dm_fail(c, NULL, DM_ERR_NOTFOUND, "no connection to memnode id %u", node_id);
	cn->incarnation = 0;		/* accept whatever the memnode has now */
	return conn_open(c, cn);
}

int
dm_client_check(dm_client *c, uint16_t node_id)
{
	dm_conn    *cn = conn_by_node(c, node_id);
	struct pollfd p;

	if (cn == NULL)
		return DM_ERR_NOTFOUND;
	if (cn->status != DM_OK)
		return cn->status;
	/*
	 * No request is outstanding between operations (a caller that gave up
	 * on a reply broke the connection), so anything readable is the
	 * memnode hanging up.
	 */
	p.fd = cn->fd;
	p.events = POLLIN;	/* EOF reads as readable; POLLHUP and POLLERR always count */
	p.revents = 0;
	if (cn->fd >= 0 && poll(&p, 1, 0) > 0 && p.revents != 0)
		return dm_fail(c, cn, DM_ERR_CLOSED, "memnode closed the connection");
	if (cn->backend == DM_BACKEND_SHM)
		return dm_shm_check(c, cn);
	if (cn->backend == DM_BACKEND_UCX)
		return dm_ucx_check(c, cn);
	return DM_OK;
}

int
dm_client_nnodes(const dm_client *c)
{
	return c->nconns;
}

int
dm_client_is_local(const dm_client *c, uint16_t node_id)
{
	const dm_conn *cn = conn_by_node(c, node_id);

	return cn != NULL && cn->status == DM_OK &&
		(cn->backend == DM_BACKEND_SHM || cn->backend == DM_BACKEND_UCX);
}

int
dm_client_node_info(const dm_client *c, int idx, dm_node_info *out)
{
	const dm_conn *cn;

	if (idx < 0 || idx >= c->nconns)
		return DM_ERR_NOTFOUND;
	cn = c->conns[idx];
	memset(out, 0, sizeof(*out));
	snprintf(out->address, sizeof(out->address), "%s", cn->address);
	out->node_id = cn->node_id;
	out->backend = cn->backend;
	out->status = cn->status;
	out->incarnation = cn->incarnation;
	out->seen_incarnation = cn->seen_incarnation;
	out->region_size = cn->region_size;
	out->chunk_size = cn->chunk_size;
	return DM_OK;
}

int
dm_client_op_timeout(const dm_client *c)
{
	return c->opts.op_timeout_ms;
}

void
dm_client_counters(const dm_client *c, int node_id, dm_counters *out)
{
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < c->nconns; i++)
	{
		const dm_counters *k = &c->conns[i]->ctr;

		if (node_id >= 0 && c->conns[i]->node_id != node_id)
			continue;
		out->round_trips += k->round_trips;
		out->rpcs += k->rpcs;
		for (int j = 0; j <= DM_OP_KIND_MAX; j++)
			out->ops[j] += k->ops[j];
		out->bytes_read += k->bytes_read;
		out->bytes_written += k->bytes_written;
		out->wire_bytes_sent += k->wire_bytes_sent;
		out->wire_bytes_recv += k->wire_bytes_recv;
	}
}

void
dm_client_reset_counters(dm_client *c)
{
	for (int i = 0; i < c->nconns; i++)
		memset(&c->conns[i]->ctr, 0, sizeof(c->conns[i]->ctr));
}

/* A usable connection for node_id, or NULL with the reason in *rc. */
static dm_conn *
usable_conn(dm_client *c, uint16_t node_id, int *rc)
{
	dm_conn    *cn = conn_by_node(c, node_id);

	if (cn == NULL)
	{
		*rc = dm_fail(c, NULL, DM_ERR_NOTFOUND, "no connection to memnode id %u", node_id);
		return NULL;
	}
	if (cn->status != DM_OK)
	{
		*rc = cn->status;
		snprintf(c->err, sizeof(c->err), "memnode %s: connection unusable: %s",
				 cn->address, dm_strerror(cn->status));
		return NULL;
	}
	return cn;
}

/* ---- batches over tcp ------------------------------------------------------ */

static int
tcp_send_batch(dm_client *c, dm_conn *cn, dm_op *ops, uint64_t deadline, uint32_t *reply_len)
{
	uint64_t	size = DM_HDR_SIZE + sizeof(dm_batch_hdr) + (uint64_t) cn->nidx * sizeof(dm_wire_op);
	uint64_t	rsize = DM_HDR_SIZE + sizeof(dm_batch_hdr) + (uint64_t) cn->nidx * sizeof(uint64_t);
	dm_batch_hdr *bh;
	dm_wire_op *w;
	uint8_t    *payload;
	int			rc;

	for (int k = 0; k < cn->nidx; k++)
	{
		dm_op	   *op = &ops[cn->idx[k]];

		if (op->kind == DM_OP_WRITE)
			size += dm_pad8(op->len);
		else if (op->kind == DM_OP_READ)
			rsize += dm_pad8(op->len);
	}
	if (cn->nidx > DM_BATCH_MAX_OPS || size > DM_FRAME_MAX || rsize > DM_FRAME_MAX)
		return dm_fail(c, cn, DM_ERR_TOOBIG, "batch of %d operations exceeds the frame limit", cn->nidx);
	if ((rc = dm_buf_reserve(&cn->sbuf, &cn->scap, (uint32_t) size)) != DM_OK)
		return dm_fail(c, cn, rc, "cannot allocate send buffer");

	dm_hdr_init((dm_frame_hdr *) cn->sbuf, DM_MSG_BATCH, (uint32_t) size, ++cn->seq);
	bh = (dm_batch_hdr *) (cn->sbuf + DM_HDR_SIZE);
	bh->nops = (uint32_t) cn->nidx;
	bh->bad_index = 0;
	w = (dm_wire_op *) (bh + 1);
	payload = (uint8_t *) (w + cn->nidx);
	for (int k = 0; k < cn->nidx; k++)
	{
		dm_op	   *op = &ops[cn->idx[k]];

		memset(&w[k], 0, sizeof(w[k]));
		w[k].kind = op->kind;
		w[k].len = (op->kind == DM_OP_READ || op->kind == DM_OP_WRITE) ? op->len : 8;
		w[k].addr = op->addr;
		w[k].arg0 = op->arg0;
		w[k].arg1 = op->arg1;
		w[k].flags = op->flags;
		if (op->kind == DM_OP_WRITE)
		{
			uint32_t	p = dm_pad8(op->len);

			memcpy(payload, op->buf, op->len);
			memset(payload + op->len, 0, p - op->len);
			payload += p;
		}
	}
	*reply_len = (uint32_t) rsize;
	return dm_sock_send(c, cn, cn->sbuf, (uint32_t) size, deadline);
}

static int
tcp_recv_batch(dm_client *c, dm_conn *cn, dm_op *ops, uint64_t deadline,
			   uint32_t reply_len, int *bad_index)
{
	dm_frame_hdr *h;
	dm_batch_hdr bh;
	const uint64_t *results;
	const uint8_t *data;
	int			rc;

	if ((rc = dm_sock_recv_frame(c, cn, DM_MSG_BATCH, cn->seq, deadline, &h)) != DM_OK)
		return rc;
	if (h->length < DM_HDR_SIZE + sizeof(bh))
		return dm_fail(c, cn, DM_ERR_PROTOCOL, "batch reply too short");
	memcpy(&bh, cn->rbuf + DM_HDR_SIZE, sizeof(bh));
	if (h->status != DM_OK)
	{
		/* the memnode applied nothing; the connection stays good */
		if (bad_index && bh.bad_index < (uint32_t) cn->nidx)
			*bad_index = cn->idx[bh.bad_index];
		return dm_fail(c, cn, (int) h->status, "batch rejected at operation %d: %s",
					   bh.bad_index < (uint32_t) cn->nidx ? cn->idx[bh.bad_index] : -1,
					   dm_strerror((int) h->status));
	}
	if (h->length != reply_len || bh.nops != (uint32_t) cn->nidx)
		return dm_fail(c, cn, DM_ERR_PROTOCOL, "batch reply has length %u, expected %u",
					   h->length, reply_len);
	results = (const uint64_t *) (cn->rbuf + DM_HDR_SIZE + sizeof(bh));
	data = (const uint8_t *) (results + cn->nidx);
	for (int k = 0, skip = 0; k < cn->nidx; k++)
	{
		dm_op	   *op = &ops[cn->idx[k]];

		op->result = results[k];
		if (skip)
		{
			/* the memnode stopped at a failed guard: leave READ buffers alone */
			if (op->kind == DM_OP_READ)
				data += dm_pad8(op->len);
			continue;
		}
		skip = (op->flags & DM_OPF_GUARD) && op->result != op->arg0;
		if (op->kind == DM_OP_READ)
		{
			memcpy(op->buf, data, op->len);
			data += dm_pad8(op->len);
			cn->ctr.bytes_read += op->len;
		}
		else if (op->kind == DM_OP_WRITE)
			cn->ctr.bytes_written += op->len;
		cn->ctr.ops[op->kind]++;
	}
	cn->ctr.round_trips++;
	return DM_OK;
}

static int
idx_push(dm_conn *cn, int i)
{
	if (cn->nidx == cn->idxcap)
	{
		int			ncap = cn->idxcap ? cn->idxcap * 2 : 64;
		int		   *n = realloc(cn->idx, sizeof(int) * ncap);

		if (n == NULL)
			return DM_ERR_NOMEM;
		cn->idx = n;
		cn->idxcap = ncap;
	}
	cn->idx[cn->nidx++] = i;
	return DM_OK;
}

/* ---- fault injection (dm_client_set_fault) ------------------------------------ */

void
dm_client_set_fault(dm_client *c, const dm_fault *f)
{
	c->kill_mid_armed = 0;
	if (f == NULL || f->action == DM_FAULT_NONE || f->at == 0)
	{
		memset(&c->fault, 0, sizeof(c->fault));
		return;
	}
	c->fault = *f;
	c->fault.at = c->steps + f->at;
}

uint64_t
dm_client_steps(const dm_client *c)
{
	return c->steps;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/*
 * The armed fault fires at this step.  DM_OK: go on executing it (SLEEP,
 * KILL_MID over shm); else the step's status.  ops == NULL for an RPC.
 */
static int
fire_fault(dm_client *c, dm_op *ops, dm_conn **touched, int ntouched)
{
	dm_fault	f = c->fault;

	memset(&c->fault, 0, sizeof(c->fault));
	if (ops == NULL && f.action == DM_FAULT_LATE)
		f.action = DM_FAULT_FAIL;
	if (ops == NULL && f.action == DM_FAULT_KILL_MID)
		f.action = DM_FAULT_KILL;
	switch (f.action)
	{
		case DM_FAULT_NONE:
			return DM_OK;
		case DM_FAULT_SLEEP:
			sleep_ms(f.ms);
			return DM_OK;
		case DM_FAULT_KILL_MID:
			for (int t = 0; t < ntouched; t++)
				if (touched[t]->backend == DM_BACKEND_SHM || touched[t]->backend == DM_BACKEND_UCX)
				{
					c->kill_mid_words = f.words;
					c->kill_mid_armed = 1;
					return DM_OK;
				}
			/* a tcp batch executes whole at the memnode: die before it */
			__attribute__((fallthrough));
		case DM_FAULT_KILL:
			raise(SIGKILL);
			return DM_ERR_INTERNAL;
		case DM_FAULT_LATE:
			{
				pid_t		pid = fork();

				if (pid == 0)
				{
					uint32_t	rlen;

					/* the abandoned request, arriving late */
					sleep_ms(f.ms);
					for (int t = 0; t < ntouched; t++)
					{
						dm_conn    *cn = touched[t];

						if (cn->backend == DM_BACKEND_SHM)
							dm_shm_post(c, cn, ops, NULL);
						else if (cn->backend == DM_BACKEND_UCX)
						{
							/* UCX objects do not survive fork: a connection of our own */
							if (conn_open(c, cn) == DM_OK)
								dm_ucx_post(c, cn, ops, NULL);
						}
						else if (tcp_send_batch(c, cn, ops, dm_deadline(c->opts.op_timeout_ms), &rlen) == DM_OK)
							tcp_recv_batch(c, cn, ops, dm_deadline(c->opts.op_timeout_ms), rlen, NULL);
					}
					_exit(0);
				}
				if (pid < 0)
					return dm_fail(c, NULL, DM_ERR_INTERNAL, "fault injection: fork failed");
			}
			__attribute__((fallthrough));
		case DM_FAULT_FAIL:
			for (int t = 0; t < ntouched; t++)
				dm_conn_break(touched[t], DM_ERR_TIMEOUT);
			return dm_fail(c, NULL, DM_ERR_TIMEOUT, "fault injection: step %llu failed",
						   (unsigned long long) f.at);
	}
	return DM_OK;
}

int
dm_post(dm_client *c, dm_op *ops, int nops, int *bad_index)
{
	uint64_t	deadline;
	int			rc = DM_OK;
	uint32_t	reply_len[64];
	int			sent[64];
	int			ntouched = 0;
	dm_conn    *touched[64];

	if (bad_index)
		*bad_index = -1;
	if (nops <= 0)
		return nops == 0 ? DM_OK : DM_ERR_INVALID;
	for (int i = 0; i < c->nconns; i++)
		c->conns[i]->nidx = 0;
	/* route each op to its memnode's connection */
	for (int i = 0; i < nops; i++)
	{
		dm_conn    *cn;

		if (ops[i].kind < DM_OP_READ || ops[i].kind > DM_OP_KIND_MAX ||
			(ops[i].addr & DM_GADDR_RESERVED_BIT) != 0 || (ops[i].flags & ~DM_OPF_ALL) != 0 ||
			((ops[i].flags & DM_OPF_GUARD) && ops[i].kind != DM_OP_CAS) ||
			((ops[i].kind == DM_OP_READ || ops[i].kind == DM_OP_WRITE) &&
			 (ops[i].len == 0 || ops[i].buf == NULL)))
		{
			if (bad_index)
				*bad_index = i;
			return dm_fail(c, NULL, DM_ERR_INVALID, "operation %d is malformed", i);
		}
		if ((cn = usable_conn(c, dm_gaddr_node(ops[i].addr), &rc)) == NULL)
		{
			if (bad_index)
				*bad_index = i;
			return rc;
		}
		if (cn->nidx == 0)
		{
			if (ntouched == 64)
				return dm_fail(c, NULL, DM_ERR_TOOBIG, "batch touches more than 64 memnodes");
			touched[ntouched++] = cn;
		}
		if (idx_push(cn, i) != DM_OK)
			return dm_fail(c, NULL, DM_ERR_NOMEM, "out of memory");
	}

	/*
	 * The same limits on every backend, so a batch that works over shm
	 * cannot fail when the same code runs over tcp.
	 */
	for (int t = 0; t < ntouched; t++)
	{
		dm_conn    *cn = touched[t];
		uint64_t	req = DM_HDR_SIZE + sizeof(dm_batch_hdr) + (uint64_t) cn->nidx * sizeof(dm_wire_op);
		uint64_t	rep = DM_HDR_SIZE + sizeof(dm_batch_hdr) + (uint64_t) cn->nidx * sizeof(uint64_t);

		for (int k = 0; k < cn->nidx; k++)
		{
			const dm_op *op = &ops[cn->idx[k]];

			if (op->kind == DM_OP_WRITE)
				req += dm_pad8(op->len);
			else if (op->kind == DM_OP_READ)
				rep += dm_pad8(op->len);
		}
		if (cn->nidx > DM_BATCH_MAX_OPS || req > DM_FRAME_MAX || rep > DM_FRAME_MAX)
			return dm_fail(c, cn, DM_ERR_TOOBIG,
						   "batch of %d operations exceeds the limits (%d operations, %u bytes each way)",
						   cn->nidx, DM_BATCH_MAX_OPS, DM_FRAME_MAX);
	}

	if (++c->steps == c->fault.at && c->fault.action != DM_FAULT_NONE &&
		(rc = fire_fault(c, ops, touched, ntouched)) != DM_OK)
		return rc;

	/* send every tcp frame first, so the memnodes work in parallel */
	deadline = 0;
	for (int t = 0; t < ntouched && deadline == 0; t++)
		if (touched[t]->backend == DM_BACKEND_TCP)
			deadline = dm_deadline(c->opts.op_timeout_ms);	/* only tcp waits here */
	for (int t = 0; t < ntouched; t++)
		sent[t] = 0;			/* all of them: the loop below may stop early */
	for (int t = 0; t < ntouched; t++)
	{
		if (touched[t]->backend == DM_BACKEND_TCP)
		{
			int			r = tcp_send_batch(c, touched[t], ops, deadline, &reply_len[t]);

			if (r != DM_OK)
			{
				rc = rc != DM_OK ? rc : r;
				break;
			}
			sent[t] = 1;
		}
	}
	for (int t = 0; t < ntouched; t++)
	{
		dm_conn    *cn = touched[t];
		int			r;

		if (cn->backend == DM_BACKEND_SHM)
		{
			if (rc != DM_OK)
				continue;		/* a tcp send failed: don't start more work */
			r = dm_shm_post(c, cn, ops, bad_index);
		}
		else if (cn->backend == DM_BACKEND_UCX)
		{
			if (rc != DM_OK)
				continue;
			r = dm_ucx_post(c, cn, ops, bad_index);
		}
		else if (sent[t])
			r = tcp_recv_batch(c, cn, ops, deadline, reply_len[t], bad_index);
		else
			continue;
		if (rc == DM_OK)
			rc = r;
	}
	return rc;
}

static int
single(dm_client *c, dm_op *op)
{
	return dm_post(c, op, 1, NULL);
}

int
dm_read(dm_client *c, dm_gaddr addr, void *buf, uint32_t len)
{
	dm_op		op;

	dm_op_read(&op, addr, buf, len);
	return single(c, &op);
}

int
dm_write(dm_client *c, dm_gaddr addr, const void *buf, uint32_t len)
{
	dm_op		op;

	dm_op_write(&op, addr, buf, len);
	return single(c, &op);
}

static int
atomic1(dm_client *c, int kind, dm_gaddr addr, uint64_t a0, uint64_t a1, uint64_t *old)
{
	dm_op		op;
	int			rc;

	dm_op_atomic(&op, kind, addr, a0, a1);
	rc = single(c, &op);
	if (rc == DM_OK && old)
		*old = op.result;
	return rc;
}

int
dm_cas(dm_client *c, dm_gaddr addr, uint64_t expected, uint64_t desired, uint64_t *old)
{
	return atomic1(c, DM_OP_CAS, addr, expected, desired, old);
}

int
dm_faa(dm_client *c, dm_gaddr addr, uint64_t add, uint64_t *old)
{
	return atomic1(c, DM_OP_FAA, addr, add, 0, old);
}

int
dm_fetch_or(dm_client *c, dm_gaddr addr, uint64_t mask, uint64_t *old)
{
	return atomic1(c, DM_OP_FETCH_OR, addr, mask, 0, old);
}

int
dm_fetch_max(dm_client *c, dm_gaddr addr, uint64_t value, uint64_t *old)
{
	return atomic1(c, DM_OP_FETCH_MAX, addr, value, 0, old);
}

/* ---- RPCs ------------------------------------------------------------------ */

int
dm_client_raw(dm_client *c, uint16_t node_id, uint16_t type, const void *body, uint32_t len,
			  dm_frame_hdr *rep_hdr, void *rep_body, uint32_t rep_cap)
{
	dm_conn    *cn;
	dm_frame_hdr *h;
	uint64_t	deadline;
	uint32_t	size = DM_HDR_SIZE + dm_pad8(len);
	uint32_t	blen;
	int			rc;

	if ((cn = usable_conn(c, node_id, &rc)) == NULL)
		return rc;
	if (len > DM_FRAME_MAX - DM_HDR_SIZE)
		return dm_fail(c, cn, DM_ERR_TOOBIG, "request too large");
	if (++c->steps == c->fault.at && c->fault.action != DM_FAULT_NONE &&
		(rc = fire_fault(c, NULL, &cn, 1)) != DM_OK)
		return rc;
	if ((rc = dm_buf_reserve(&cn->sbuf, &cn->scap, size)) != DM_OK)
		return dm_fail(c, cn, rc, "cannot allocate send buffer");
	dm_hdr_init((dm_frame_hdr *) cn->sbuf, type, size, ++cn->seq);
	memcpy(cn->sbuf + DM_HDR_SIZE, body, len);
	memset(cn->sbuf + DM_HDR_SIZE + len, 0, size - DM_HDR_SIZE - len);
	deadline = dm_deadline(c->opts.op_timeout_ms);
	if ((rc = dm_sock_send(c, cn, cn->sbuf, size, deadline)) != DM_OK)
		return rc;
	if ((rc = dm_sock_recv_frame(c, cn, type, cn->seq, deadline, &h)) != DM_OK)
		return rc;
	blen = h->length - DM_HDR_SIZE;
	*rep_hdr = *h;
	if (blen > rep_cap)
		return dm_fail(c, cn, DM_ERR_PROTOCOL, "reply of %u bytes exceeds the expected %u", blen, rep_cap);
	memcpy(rep_body, cn->rbuf + DM_HDR_SIZE, blen);
	if (type == DM_MSG_RPC)
		cn->ctr.rpcs++;
	return DM_OK;
}

/*
 * One RPC: request args (after dm_rpc_hdr) in req/reqlen; on success the
 * reply's args must be exactly replen bytes (or at least min_replen and at
 * most replen when replen_var) and land in rep.
 */
static int
rpc(dm_client *c, uint16_t node_id, uint32_t code, const void *req, uint32_t reqlen,
	void *rep, uint32_t min_replen, uint32_t replen, uint32_t *got_len)
{
	uint8_t		body[sizeof(dm_rpc_hdr) + 256];
	uint8_t    *rbody;
	dm_frame_hdr rh;
	dm_rpc_hdr	hdr = {.code = code};
	int			rc;
	uint32_t	blen;

	if (reqlen > 256)
		return DM_ERR_INTERNAL;
	memcpy(body, &hdr, sizeof(hdr));
	if (reqlen > 0)				/* an RPC without arguments may pass req = NULL */
		memcpy(body + sizeof(hdr), req, reqlen);
	if ((rbody = malloc(sizeof(dm_rpc_hdr) + replen)) == NULL)
		return dm_fail(c, NULL, DM_ERR_NOMEM, "out of memory");
	rc = dm_client_raw(c, node_id, DM_MSG_RPC, body, sizeof(hdr) + reqlen, &rh, rbody,
					   sizeof(dm_rpc_hdr) + replen);
	if (rc == DM_OK)
	{
		blen = rh.length - DM_HDR_SIZE;
		if (rh.status != DM_OK)
		{
			rc = (int) rh.status;
			dm_conn    *cn = conn_by_node(c, node_id);

			snprintf(c->err, sizeof(c->err), "memnode %s: request failed: %s",
					 cn ? cn->address : "?", dm_strerror(rc));
		}
		else if (blen < sizeof(dm_rpc_hdr) + min_replen || ((dm_rpc_hdr *) rbody)->code != code)
			rc = dm_fail(c, conn_by_node(c, node_id), DM_ERR_PROTOCOL, "malformed reply to request %u", code);
		else
		{
			if (blen > sizeof(dm_rpc_hdr))
				memcpy(rep, rbody + sizeof(dm_rpc_hdr), blen - sizeof(dm_rpc_hdr));
			if (got_len)
				*got_len = blen - (uint32_t) sizeof(dm_rpc_hdr);
		}
	}
	free(rbody);
	return rc;
}

int
dm_ping(dm_client *c, uint16_t node_id)
{
	dm_rpc_u64	req = {.value = dm_mono_ns()};
	dm_rpc_ping_rep rep;
	int			rc = rpc(c, node_id, DM_RPC_PING, &req, sizeof(req), &rep, sizeof(rep), sizeof(rep), NULL);

	if (rc == DM_OK && rep.token != req.value)
		return dm_fail(c, conn_by_node(c, node_id), DM_ERR_PROTOCOL, "ping answered with the wrong token");
	return rc;
}

int
dm_chunk_alloc(dm_client *c, uint16_t node_id, uint64_t owner, dm_gaddr *chunk, uint64_t *size)
{
	dm_rpc_u64	req = {.value = owner};
	dm_rpc_alloc_rep rep;
	int			rc = rpc(c, node_id, DM_RPC_CHUNK_ALLOC, &req, sizeof(req), &rep, sizeof(rep), sizeof(rep), NULL);

	if (rc != DM_OK)
		return rc;
	if (dm_gaddr_node(rep.chunk) != node_id || dm_gaddr_offset(rep.chunk) == 0)
		return dm_fail(c, conn_by_node(c, node_id), DM_ERR_PROTOCOL, "chunk address from the wrong memnode");
	*chunk = rep.chunk;
	if (size)
		*size = rep.size;
	return DM_OK;
}

int
dm_slab_alloc(dm_client *c, uint16_t node_id, uint64_t owner, uint64_t size, dm_gaddr *slab)
{
	dm_rpc_slab_req req = {.owner = owner, .size = size};
	dm_rpc_alloc_rep rep;
	int			rc = rpc(c, node_id, DM_RPC_SLAB_ALLOC, &req, sizeof(req), &rep, sizeof(rep), sizeof(rep), NULL);

	if (rc != DM_OK)
		return rc;
	if (dm_gaddr_node(rep.chunk) != node_id || dm_gaddr_offset(rep.chunk) == 0 || rep.size != size)
		return dm_fail(c, conn_by_node(c, node_id), DM_ERR_PROTOCOL, "slab from the wrong memnode");
	*slab = rep.chunk;
	return DM_OK;
}

int
dm_slab_free(dm_client *c, uint64_t owner, dm_gaddr slab, uint64_t size)
{
	dm_rpc_slab_free_req req = {.owner = owner, .addr = slab, .size = size};

	return rpc(c, dm_gaddr_node(slab), DM_RPC_SLAB_FREE, &req, sizeof(req), NULL, 0, 0, NULL);
}

int
dm_chunk_free(dm_client *c, dm_gaddr chunk)
{
	dm_rpc_u64	req = {.value = chunk};

	return rpc(c, dm_gaddr_node(chunk), DM_RPC_CHUNK_FREE, &req, sizeof(req), NULL, 0, 0, NULL);
}

int
dm_chunk_free_owner(dm_client *c, uint16_t node_id, uint64_t owner, uint64_t *nfreed)
{
	dm_rpc_u64	req = {.value = owner}, rep;
	int			rc = rpc(c, node_id, DM_RPC_CHUNK_FREE_OWNER, &req, sizeof(req), &rep, sizeof(rep), sizeof(rep), NULL);

	if (rc == DM_OK && nfreed)
		*nfreed = rep.value;
	return rc;
}

static int
tree_rpc(dm_client *c, uint16_t node_id, uint32_t code, const dm_tree_name *name, dm_tree_info *out)
{
	dm_tree_info info;
	int			rc;

	if (!dm_tree_name_valid(name))
		return dm_fail(c, NULL, DM_ERR_INVALID, "invalid tree name");
	rc = rpc(c, node_id, code, name, sizeof(*name), &info, sizeof(info), sizeof(info), NULL);
	if (rc == DM_OK && out)
		*out = info;
	return rc;
}

int
dm_tree_create(dm_client *c, uint16_t node_id, const dm_tree_name *name, dm_tree_info *out)
{
	return tree_rpc(c, node_id, DM_RPC_CAT_CREATE, name, out);
}

int
dm_tree_open(dm_client *c, uint16_t node_id, const dm_tree_name *name, dm_tree_info *out)
{
	return tree_rpc(c, node_id, DM_RPC_CAT_OPEN, name, out);
}

int
dm_tree_drop(dm_client *c, uint16_t node_id, const dm_tree_name *name, uint64_t *chunks_freed)
{
	dm_rpc_u64	rep;
	int			rc;

	if (!dm_tree_name_valid(name))
		return dm_fail(c, NULL, DM_ERR_INVALID, "invalid tree name");
	rc = rpc(c, node_id, DM_RPC_CAT_DROP, name, sizeof(*name), &rep, sizeof(rep), sizeof(rep), NULL);
	if (rc == DM_OK && chunks_freed)
		*chunks_freed = rep.value;
	return rc;
}

int
dm_tree_list(dm_client *c, uint16_t node_id, const dm_rpc_list_req *req,
			 dm_tree_info *out, uint32_t *count, uint32_t *next_slot)
{
	uint32_t	replen = sizeof(dm_rpc_list_rep) + DM_LIST_MAX * sizeof(dm_tree_info);
	uint8_t    *rep = malloc(replen);
	dm_rpc_list_rep lr;
	uint32_t	got = 0;
	int			rc;

	if (rep == NULL)
		return dm_fail(c, NULL, DM_ERR_NOMEM, "out of memory");
	if (req->max == 0 || req->max > DM_LIST_MAX)
	{
		free(rep);
		return dm_fail(c, NULL, DM_ERR_INVALID, "list page size must be 1..%d", DM_LIST_MAX);
	}
	rc = rpc(c, node_id, DM_RPC_CAT_LIST, req, sizeof(*req), rep, sizeof(lr), replen, &got);
	if (rc == DM_OK)
	{
		memcpy(&lr, rep, sizeof(lr));
		if (lr.count > req->max || got != sizeof(lr) + lr.count * sizeof(dm_tree_info))
			rc = dm_fail(c, conn_by_node(c, node_id), DM_ERR_PROTOCOL, "malformed catalog listing");
		else
		{
			memcpy(out, rep + sizeof(lr), lr.count * sizeof(dm_tree_info));
			*count = lr.count;
			*next_slot = lr.next_slot;
		}
	}
	free(rep);
	return rc;
}

int
dm_client_rpc(dm_client *c, uint16_t node_id, uint32_t code, const void *req, uint32_t reqlen,
			  void *rep, uint32_t min_replen, uint32_t replen, uint32_t *got_len)
{
	return rpc(c, node_id, code, req, reqlen, rep, min_replen, replen, got_len);
}

int
dm_node_stats_get(dm_client *c, uint16_t node_id, dm_node_stats *out)
{
	return rpc(c, node_id, DM_RPC_STATS, NULL, 0, out, sizeof(*out), sizeof(*out), NULL);
}
