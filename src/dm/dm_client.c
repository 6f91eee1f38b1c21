/*
 * dm_client.c — the transport client: creating it, connections to memnodes
 * (the handshake, authenticated or not, the incarnation check, the choice of
 * backend), checking and reconnecting them, and what the client says about
 * them.  Failing a connection (dm_fail) is in dm_conn_fail.c, batches of
 * one-sided operations (dm_post) in dm_client_batch.c,
 * RPCs in dm_client_rpc.c, socket details in dm_sock.c, the shm backend in
 * dm_shm.c, the ucx backend in dm_ucx.c.
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

dm_conn *
dm_conn_by_node(const dm_client *c, uint16_t node_id)
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
int
dm_conn_open(dm_client *c, dm_conn *cn)
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
		cn->release = dm_ucx_close;
		if ((rc = dm_ucx_attach(c, cn)) != DM_OK)
		{
			dm_conn_break(cn, rc);
			return rc;
		}
		cn->backend = DM_BACKEND_UCX;
	}
	else if (c->opts.backend != DM_BACKEND_TCP)
	{
		cn->release = dm_shm_unmap;
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
	if ((rc = dm_conn_open(c, cn)) != DM_OK)
	{
		conn_free(cn);
		return rc;
	}
	if (dm_conn_by_node(c, cn->node_id) != NULL)
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
	dm_conn    *cn = dm_conn_by_node(c, node_id);

	if (cn == NULL)
		return dm_fail(c, NULL, DM_ERR_NOTFOUND, "no connection to memnode id %u", node_id);
	return dm_conn_open(c, cn);
}

int
dm_client_accept_incarnation(dm_client *c, uint16_t node_id)
{
	dm_conn    *cn = dm_conn_by_node(c, node_id);

	if (cn == NULL)
		return dm_fail(c, NULL, DM_ERR_NOTFOUND, "no connection to memnode id %u", node_id);
	cn->incarnation = 0;		/* accept whatever the memnode has now */
	return dm_conn_open(c, cn);
}

int
dm_client_check(dm_client *c, uint16_t node_id)
{
	dm_conn    *cn = dm_conn_by_node(c, node_id);
	struct pollfd p;

	if (cn == NULL)
		return DM_ERR_NOTFOUND;
	if (cn->status != DM_OK)
		return cn->status;
	/*
	 * Over shared memory the region's superblock tells a restart or a
	 * shutdown without a system call (dm_shm_check); the socket poll below,
	 * a system call on every statement of the access method, then runs at
	 * most every DM_SHM_POLL_INTERVAL_MS, for a hang-up the superblock
	 * cannot show.
	 */
	if (cn->backend == DM_BACKEND_SHM)
	{
		int			rc = dm_shm_check(c, cn);

		if (rc != DM_OK || !dm_shm_poll_due(cn))
			return rc;
	}
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
	const dm_conn *cn = dm_conn_by_node(c, node_id);

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
		out->rpcs_ucx += k->rpcs_ucx;
		for (int j = 0; j <= DM_OP_KIND_MAX; j++)
			out->ops[j] += k->ops[j];
		out->bytes_read += k->bytes_read;
		out->bytes_written += k->bytes_written;
		out->wire_bytes_sent += k->wire_bytes_sent;
		out->wire_bytes_recv += k->wire_bytes_recv;
	}
}

uint64_t
dm_client_round_trips(const dm_client *c)
{
	uint64_t	n = 0;

	for (int i = 0; i < c->nconns; i++)
		n += c->conns[i]->ctr.round_trips;
	return n;
}

void
dm_client_reset_counters(dm_client *c)
{
	for (int i = 0; i < c->nconns; i++)
		memset(&c->conns[i]->ctr, 0, sizeof(c->conns[i]->ctr));
}

/* A usable connection for node_id, or NULL with the reason in *rc. */
dm_conn *
dm_conn_usable(dm_client *c, uint16_t node_id, int *rc)
{
	dm_conn    *cn = dm_conn_by_node(c, node_id);

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
