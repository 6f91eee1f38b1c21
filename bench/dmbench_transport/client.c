/*
 * client.c — one forked client process of a cell: its own dm_client (or a
 * plain socket for the ping-pong rows), the measured loop of one operation
 * (READ, WRITE, CAS, a batch of READs, an RPC), a check that what it read is the
 * pattern written at setup (or that the last write landed), and its latency samples and counters into the shared
 * area.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_region.h"
#include "testauth.h"
#include "testutil.h"

#include "transport_bench.h"

/* ---- the client process ---------------------------------------------------- */

typedef struct worker
{
	int			op;
	int			backend;
	int			idx;			/* client number: picks its part of the chunk */
	/* tcp/shm */
	dm_client  *c;
	uint16_t	node;			/* the memnode's id (RPC ping) */
	dm_gaddr	base;
	dm_op		batch[BATCH_OPS];
	uint64_t	cas_expected;
	uint64_t	write_val;		/* the last value written (WRITE 8 B) */
	/* ping-pong */
	int			fd;
	/* buffers */
	uint8_t		buf[BATCH_OPS * BATCH_LEN > 1024 ? BATCH_OPS * BATCH_LEN : 1024];
} worker;

static void
child_fail(child_result *r, int status, const char *what, dm_client *c)
{
	r->status = status ? status : -1;
	snprintf(r->err, sizeof(r->err), "%s: %s%s%s", what,
			 status > 0 ? dm_strerror(status) : strerror(errno),
			 c ? " — " : "", c ? dm_client_error(c) : "");
}

/* One operation of the cell; returns a dm_status (or -1 for socket errors). */
static inline int
do_op(worker *w)
{
	switch (w->op)
	{
		case OP_PINGPONG:
			if (fd_write_all(w->fd, w->buf, 8) != 0 || readn_poll(w->fd, w->buf, 8) != 0)
				return -1;
			return 0;
		case OP_READ8:
			return dm_read(w->c, w->base, w->buf, 8);
		case OP_READ1K:
			return dm_read(w->c, w->base + 1024, w->buf, 1024);
		case OP_WRITE8:
			w->write_val++;
			return dm_write(w->c, w->base + 128, &w->write_val, 8);
		case OP_CAS8:
			{
				uint64_t	old = 0;
				int			st;

				st = dm_cas(w->c, w->base + 64, w->cas_expected,
							w->cas_expected + 1, &old);
				/* Track the word so that the next CAS succeeds again. */
				w->cas_expected = (old == w->cas_expected) ? old + 1 : old;
				return st;
			}
		case OP_BATCH16:
			{
				int			i;

				/* dm_post writes result fields: re-arm the ops each time. */
				for (i = 0; i < BATCH_OPS; i++)
					dm_op_read(&w->batch[i], w->base + (uint64_t) i * BATCH_STRIDE,
							   w->buf + i * BATCH_LEN, BATCH_LEN);
				return dm_post(w->c, w->batch, BATCH_OPS, NULL);
			}
		case OP_RPC_PING:
			/* the cheapest existing RPC (the memnode echoes a token); checks the echo */
			return dm_ping(w->c, w->node);
	}
	return DM_ERR_INTERNAL;
}

/*
 * Check what the last op read: a transport that returned without copying
 * (or copied the wrong place) would otherwise look wonderfully fast.
 */
static int
check_data(const worker *w)
{
	uint64_t	start[BATCH_OPS];
	uint32_t	len;
	int			n = 1,
				i;

	switch (w->op)
	{
		case OP_READ8:
			start[0] = 0;
			len = 8;
			break;
		case OP_READ1K:
			start[0] = 1024;
			len = 1024;
			break;
		case OP_BATCH16:
			n = BATCH_OPS;
			for (i = 0; i < n; i++)
				start[i] = (uint64_t) i * BATCH_STRIDE;
			len = BATCH_LEN;
			break;
		case OP_WRITE8:
			{
				uint64_t	v = 0;

				/* the word holds the last value written: every write landed */
				return dm_read(w->c, w->base + 128, &v, 8) == DM_OK && v == w->write_val ? 0 : -1;
			}
		default:
			return 0;
	}
	for (i = 0; i < n; i++)
		for (uint32_t j = 0; j < len; j++)
			if (w->buf[i * (w->op == OP_BATCH16 ? BATCH_LEN : 0) + j] !=
				pattern_byte(start[i] + j))
				return -1;
	return 0;
}

/*
 * Body of one client process.  ready_fd: write one byte once connected and
 * warmed up; go_fd: EOF on it (the parent closes its end) starts the
 * measured window, so that in 2-client cells both run at the same time.
 */
void
child_main(int op, int backend, int idx, int ready_fd, int go_fd)
{
	child_result *r = &shm_area->res[idx];
	uint32_t   *samples = shm_area->samples[idx];
	worker	   *w;
	uint64_t	t_prev,
				t_now,
				t_start,
				t_end,
				warm_end,
				n = 0,
				nsamples = 0,
				kept = 0,
				rng;
	char		c;
	int			st;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	memset(r, 0, sizeof(*r));
	w = calloc(1, sizeof(*w));
	if (!w)
	{
		child_fail(r, -1, "calloc", NULL);
		_exit(1);
	}
	w->op = op;
	w->backend = backend;
	w->idx = idx;
	w->fd = -1;
	rng = UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t) getpid() << 16) ^ now_ns();

	if (op == OP_PINGPONG)
	{
		struct sockaddr_in sa;

		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa.sin_port = htons((uint16_t) echo_port);
		w->fd = socket(AF_INET, SOCK_STREAM, 0);
		if (w->fd < 0 || connect(w->fd, (struct sockaddr *) &sa, sizeof(sa)) != 0)
		{
			child_fail(r, -1, "ping-pong connect", NULL);
			_exit(1);
		}
		set_nodelay(w->fd);
	}
	else
	{
		dm_client_opts opts;
		uint16_t	node;

		memset(&opts, 0, sizeof(opts));
		opts.backend = backend == BK_SHM ? DM_BACKEND_SHM :
			backend == BK_UCX ? DM_BACKEND_UCX : DM_BACKEND_TCP;
		opts.name = "dmbench_transport";
		apply_auth(&opts);
		w->c = dm_client_create(&opts);
		if (!w->c)
		{
			child_fail(r, DM_ERR_NOMEM, "dm_client_create", NULL);
			_exit(1);
		}
		st = dm_client_connect(w->c, memnode_addr, &node);
		if (st != DM_OK)
		{
			child_fail(r, st, "dm_client_connect", w->c);
			_exit(1);
		}
		w->node = node;
		/* Own 32 KiB of the chunk: CAS words of two clients never share a line. */
		w->base = chunk_base + (uint64_t) idx * CLIENT_AREA;
		/* Start the CAS chain from whatever the word holds now. */
		st = dm_read(w->c, w->base + 64, &w->cas_expected, 8);
		if (st != DM_OK)
		{
			child_fail(r, st, "initial dm_read", w->c);
			_exit(1);
		}
	}

	/*
	 * Warm up: first-touch page faults of the shm mapping and of the memnode,
	 * the memnode thread's and the socket's first wakeups, the CPU caches.
	 */
	warm_end = now_ns() + (uint64_t) (warmup_s * 1e9);
	do
	{
		st = do_op(w);
		if (st != 0)
		{
			child_fail(r, st, "warm-up op", w->c);
			_exit(1);
		}
	} while (now_ns() < warm_end);
	if (w->c)
		dm_client_reset_counters(w->c);

	if (fd_write_all(ready_fd, "r", 1) != 0)
		_exit(1);
	close(ready_fd);
	while (read(go_fd, &c, 1) < 0 && errno == EINTR)
		;
	close(go_fd);

	/*
	 * Measured window.  One clock read per op, not two: the latency of op i
	 * is the time between the reads that follow op i-1 and op i.  That
	 * includes one clock read and the sample store (~20-30 ns, reported by
	 * the main program), but halves the timing overhead, which matters for
	 * shm ops that take well under a microsecond.  With --clock-every N a
	 * sample is a block of N ops divided by N: the clock's cost (~70-90 ns
	 * on the VMs here, more than a shared-memory op) shrinks N-fold, as in
	 * ucx_perftest, which times with the TSC.
	 */
	t_start = t_prev = now_ns();
	t_end = t_start + (uint64_t) (duration_s * 1e9);
	do
	{
		uint64_t	d;
		uint32_t	s;

		for (uint32_t k = 0; k < clock_every; k++)
			if ((st = do_op(w)) != 0)
			{
				child_fail(r, st, "measured op", w->c);
				_exit(1);
			}
		t_now = now_ns();
		d = (t_now - t_prev) / clock_every;
		s = d > UINT32_MAX ? UINT32_MAX : (uint32_t) d;
		if (kept < SAMPLE_CAP)
			samples[kept++] = s;
		else
		{
			/* Algorithm R: every sample ends up in the reservoir with equal probability. */
			uint64_t	j = xorshift64(&rng) % (nsamples + 1);

			if (j < SAMPLE_CAP)
				samples[j] = s;
		}
		nsamples++;
		n += clock_every;
		t_prev = t_now;
	} while (t_now < t_end);

	if (check_data(w) != 0)
	{
		r->status = DM_ERR_CORRUPT;
		snprintf(r->err, sizeof(r->err), "data read does not match what was written");
		_exit(1);
	}
	r->ops = n;
	r->elapsed_ns = t_now - t_start;
	r->kept = kept;
	if (w->c)
	{
		dm_client_counters(w->c, -1, &r->ctr);
		dm_client_destroy(w->c);
	}
	else
	{
		/* The baseline's "wire bytes" are its payload: 8 each way per op. */
		r->ctr.round_trips = n;
		r->ctr.wire_bytes_sent = 8 * n;
		r->ctr.wire_bytes_recv = 8 * n;
		close(w->fd);
	}
	r->status = 0;
	_exit(0);
}
