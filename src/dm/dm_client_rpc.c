/*
 * dm_client_rpc.c — requests to a memnode other than one-sided operations:
 * one frame each way on the memnode's connection (dm_client_raw), with the
 * RPCs built on it: ping, chunk and slab allocation and freeing, the tree
 * catalog (create, open, drop, list), statistics (dm_proto.h describes each
 * message).  An RPC always travels as a frame: on the socket (dm_sock.c),
 * or over ucx as a UCX active message on the data path's endpoint
 * (dm_ucx_rpc), the same frame with the same seq, timeout and errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dm_client_int.h"

/* Send the frame in cn->sbuf and receive its reply, on the connection's path. */
static int
exchange(dm_client *c, dm_conn *cn, uint16_t type, uint32_t size, uint64_t deadline, dm_frame_hdr **h)
{
	int			rc;

	if (cn->backend == DM_BACKEND_UCX && type == DM_MSG_RPC)
		return dm_ucx_rpc(c, cn, size, deadline, h);
	if ((rc = dm_sock_send(c, cn, cn->sbuf, size, deadline)) != DM_OK)
		return rc;
	return dm_sock_recv_frame(c, cn, type, cn->seq, deadline, h);
}

/*
 * Fault injection (DM_FAULT_LATE) for a request frame already in
 * cn->sbuf: the caller sees a timeout at once and its connection broken,
 * while a forked child, holding the socket open, sends the frame ms later
 * and reads the reply -- a request the memnode runs after its client gave
 * up on it.  Over ucx too the child sends it on the abandoned control
 * socket, where the memnode takes RPC frames as well: UCX does not
 * survive fork (its objects, and over UCX tcp its connection thread, are
 * the parent's), and the request lands on its own connection, as a late
 * one would.
 */
static int
send_late(dm_client *c, dm_conn *cn, uint16_t type, uint32_t size, int ms)
{
	pid_t		pid = fork();

	if (pid == 0)
	{
		struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000L};
		dm_frame_hdr *h;
		uint64_t	deadline;

		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		deadline = dm_deadline(c->opts.op_timeout_ms);
		if (dm_sock_send(c, cn, cn->sbuf, size, deadline) == DM_OK)
			(void) dm_sock_recv_frame(c, cn, type, cn->seq, deadline, &h);
		_exit(0);
	}
	if (pid < 0)
		return dm_fail(c, NULL, DM_ERR_INTERNAL, "fault injection: fork failed");
	dm_conn_break(cn, DM_ERR_TIMEOUT);
	return dm_fail(c, NULL, DM_ERR_TIMEOUT, "fault injection: the request goes late");
}

int
dm_client_raw(dm_client *c, uint16_t node_id, uint16_t type, const void *body, uint32_t len,
			  dm_frame_hdr *rep_hdr, void *rep_body, uint32_t rep_cap)
{
	dm_conn    *cn;
	dm_frame_hdr *h;
	uint64_t	deadline;
	uint32_t	size = DM_HDR_SIZE + dm_pad8(len);
	uint32_t	blen;
	int			rc,
				late = -1;

	if ((cn = dm_conn_usable(c, node_id, &rc)) == NULL)
		return rc;
	if (len > DM_FRAME_MAX - DM_HDR_SIZE)
		return dm_fail(c, cn, DM_ERR_TOOBIG, "request too large");
	if (++c->steps == c->fault.at && c->fault.action == DM_FAULT_LATE_RPC)
		late = c->fault.ms;
	else if (c->steps == c->fault.at && c->fault.action != DM_FAULT_NONE &&
			 (rc = dm_client_fire_fault(c, NULL, &cn, 1)) != DM_OK)
		return rc;
	if ((rc = dm_buf_reserve(&cn->sbuf, &cn->scap, size)) != DM_OK)
		return dm_fail(c, cn, rc, "cannot allocate send buffer");
	dm_hdr_init((dm_frame_hdr *) cn->sbuf, type, size, ++cn->seq);
	memcpy(cn->sbuf + DM_HDR_SIZE, body, len);
	memset(cn->sbuf + DM_HDR_SIZE + len, 0, size - DM_HDR_SIZE - len);
	if (late >= 0)
	{
		memset(&c->fault, 0, sizeof(c->fault));
		return send_late(c, cn, type, size, late);
	}
	deadline = dm_deadline(c->opts.op_timeout_ms);
	if ((rc = exchange(c, cn, type, size, deadline, &h)) != DM_OK)
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
	if (reqlen > 0)				/* req may be NULL then (memcpy wants a pointer even for 0 bytes) */
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
			dm_conn    *cn = dm_conn_by_node(c, node_id);

			snprintf(c->err, sizeof(c->err), "memnode %s: request failed: %s",
					 cn ? cn->address : "?", dm_strerror(rc));
		}
		else if (blen < sizeof(dm_rpc_hdr) + min_replen || ((dm_rpc_hdr *) rbody)->code != code)
			rc = dm_fail(c, dm_conn_by_node(c, node_id), DM_ERR_PROTOCOL, "malformed reply to request %u", code);
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
		return dm_fail(c, dm_conn_by_node(c, node_id), DM_ERR_PROTOCOL, "ping answered with the wrong token");
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
		return dm_fail(c, dm_conn_by_node(c, node_id), DM_ERR_PROTOCOL, "chunk address from the wrong memnode");
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
		return dm_fail(c, dm_conn_by_node(c, node_id), DM_ERR_PROTOCOL, "slab from the wrong memnode");
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
			rc = dm_fail(c, dm_conn_by_node(c, node_id), DM_ERR_PROTOCOL, "malformed catalog listing");
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
