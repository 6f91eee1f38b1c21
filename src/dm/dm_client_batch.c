/*
 * dm_client_batch.c — batches of one-sided operations: dm_post routes each
 * op by its global address to its memnode's connection and runs one frame
 * per memnode over tcp (built and parsed here), or the ops directly on a
 * shm mapping (dm_shm.c) or through UCX (dm_ucx.c); the single-op helpers
 * (dm_read, dm_write, dm_cas, ...); and the fault injection of the tests
 * (dm_client_set_fault), which fires at a step of a batch or an RPC.
 * Connections are made in dm_client.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dm_client_int.h"

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
		w[k].flags = op->flags & DM_OPF_ALL;	/* DM_OPF_ORDERED is the client's */
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

int
dm_client_fire_fault(dm_client *c, dm_op *ops, dm_conn **touched, int ntouched)
{
	dm_fault	f = c->fault;

	memset(&c->fault, 0, sizeof(c->fault));
	if (f.action == DM_FAULT_LATE_RPC)
		f.action = DM_FAULT_LATE;	/* a batch (an RPC is dm_client_raw's) */
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

						/*
						 * Over ucx as over tcp: a frame on the abandoned
						 * control socket, which the memnode serves too.  UCX
						 * does not survive fork (over UCX tcp a child's new
						 * context has no connection thread, and a memnode
						 * whose endpoint to it then fails can trip on UCX
						 * 1.13's error path).
						 */
						if (cn->backend == DM_BACKEND_SHM)
							dm_shm_post(c, cn, ops, NULL);
						else if (tcp_send_batch(c, cn, ops, dm_deadline(c->opts.op_timeout_ms), &rlen) == DM_OK)
							tcp_recv_batch(c, cn, ops, dm_deadline(c->opts.op_timeout_ms), rlen, NULL);
					}
					_exit(0);
				}
				if (pid < 0)
					return dm_fail(c, NULL, DM_ERR_INTERNAL, "fault injection: fork failed");
			}
			__attribute__((fallthrough));
		case DM_FAULT_LATE_RPC:	/* (made LATE above) */
		case DM_FAULT_FAIL:
			for (int t = 0; t < ntouched; t++)
				dm_conn_break(touched[t], DM_ERR_TIMEOUT);
			return dm_fail(c, NULL, DM_ERR_TIMEOUT, "fault injection: step %llu failed",
						   (unsigned long long) f.at);
	}
	return DM_OK;
}

/* A connection's ops where the client executes them: shm, or ucx */
static inline int
post_direct(dm_client *c, dm_conn *cn, dm_op *ops, int *bad_index)
{
	return cn->backend == DM_BACKEND_SHM ? dm_shm_post(c, cn, ops, bad_index) :
		dm_ucx_post(c, cn, ops, bad_index);
}

int
dm_post(dm_client *c, dm_op *ops, int nops, int *bad_index)
{
	uint64_t	deadline;
	int			rc = DM_OK;
	uint32_t	reply_len[64];
	int			sent[64];
	int			ntouched = 0,
				ntcp = 0;
	dm_conn    *touched[64];

	if (bad_index)
		*bad_index = -1;
	if (nops <= 0)
		return nops == 0 ? DM_OK : DM_ERR_INVALID;
	for (int i = 0; i < c->nconns; i++)
		c->conns[i]->nidx = 0;

	/*
	 * Route each op to its memnode's connection, adding up the frame sizes
	 * as we go: the same limits on every backend, so a batch that works
	 * over shm cannot fail when the same code runs over tcp.  (One pass
	 * over the ops: on a mapped region the whole op costs ~20 ns, and a
	 * second pass through the index showed in profiles.)
	 */
	for (int i = 0; i < nops; i++)
	{
		dm_op	   *op = &ops[i];
		dm_conn    *cn;

		if (op->kind < DM_OP_READ || op->kind > DM_OP_KIND_MAX ||
			(op->addr & DM_GADDR_RESERVED_BIT) != 0 || (op->flags & ~(DM_OPF_ALL | DM_OPF_ORDERED)) != 0 ||
			((op->flags & DM_OPF_GUARD) && op->kind != DM_OP_CAS) ||
			((op->kind == DM_OP_READ || op->kind == DM_OP_WRITE) &&
			 (op->len == 0 || op->buf == NULL)))
		{
			if (bad_index)
				*bad_index = i;
			return dm_fail(c, NULL, DM_ERR_INVALID, "operation %d is malformed", i);
		}
		if ((cn = dm_conn_usable(c, dm_gaddr_node(op->addr), &rc)) == NULL)
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
			ntcp += cn->backend == DM_BACKEND_TCP;
			cn->post_req = cn->post_rep = DM_HDR_SIZE + sizeof(dm_batch_hdr);
		}
		if (idx_push(cn, i) != DM_OK)
			return dm_fail(c, NULL, DM_ERR_NOMEM, "out of memory");
		cn->post_req += sizeof(dm_wire_op);
		cn->post_rep += sizeof(uint64_t);
		if (op->kind == DM_OP_WRITE)
			cn->post_req += dm_pad8(op->len);
		else if (op->kind == DM_OP_READ)
			cn->post_rep += dm_pad8(op->len);
	}
	for (int t = 0; t < ntouched; t++)
	{
		dm_conn    *cn = touched[t];

		if (cn->nidx > DM_BATCH_MAX_OPS || cn->post_req > DM_FRAME_MAX || cn->post_rep > DM_FRAME_MAX)
			return dm_fail(c, cn, DM_ERR_TOOBIG,
						   "batch of %d operations exceeds the limits (%d operations, %u bytes each way)",
						   cn->nidx, DM_BATCH_MAX_OPS, DM_FRAME_MAX);
	}

	if (++c->steps == c->fault.at && c->fault.action != DM_FAULT_NONE &&
		(rc = dm_client_fire_fault(c, ops, touched, ntouched)) != DM_OK)
		return rc;

	/* the common single-memnode case over shm or ucx: nothing to send first */
	if (ntouched == 1 && ntcp == 0)
		return post_direct(c, touched[0], ops, bad_index);

	/* send every tcp frame first, so the memnodes work in parallel */
	deadline = ntcp > 0 ? dm_deadline(c->opts.op_timeout_ms) : 0;	/* only tcp waits here */
	for (int t = 0; t < ntouched; t++)
		sent[t] = 0;			/* all of them: the loop below may stop early */
	for (int t = 0; t < ntouched && ntcp > 0; t++)
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

		if (cn->backend != DM_BACKEND_TCP)
		{
			if (rc != DM_OK)
				continue;		/* a tcp send failed: don't start more work */
			r = post_direct(c, cn, ops, bad_index);
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
