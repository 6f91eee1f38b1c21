/*
 * dmbench_transport.c — what one remote-memory operation costs on each
 * transport of src/dm/, and how much of that is our protocol rather than
 * the kernel's loopback TCP.
 *
 * Measured, for the tcp and shm backends and for 1 and 2 client processes
 * (each a forked process with its own dm_client, running at the same time):
 *   - READ 8 B           one dm_read of one word
 *   - READ 1 KiB         one dm_read of a node-sized block
 *   - CAS 8 B            one dm_cas (always succeeds: each client has its
 *                        own word, so the write path is exercised too)
 *   - batch 16xREAD 64 B one dm_post carrying 16 READs (= one round trip)
 * and, as the baseline, a plain loopback TCP ping-pong (blocking sockets,
 * TCP_NODELAY, 8 bytes each way) against a thread-per-connection echo
 * server, with 1 and 2 client processes.
 *
 * For every cell: median and p99 latency computed from per-operation
 * samples, aggregate throughput (sum over the client processes), round trips
 * and wire bytes per operation from dm_client_counters, and the ratio of the
 * median to the ping-pong median with the same number of clients (for tcp
 * rows that is the "protocol overhead ratio": 1.0 would mean the memnode
 * protocol costs nothing beyond the socket round trip itself).
 *
 * Output: a markdown table on stdout (and in --out FILE).
 * By default a memnode is started with --shm --size 256M --threads 2 via
 * memnode_start() from test/lib; --memnode HOST:PORT uses a running one.
 *
 * --auth runs the memnode with --auth-file (test/lib/testauth.c's file) and
 * every client authenticated as tenant-a, working in a chunk of a tree of
 * tenant-a: each op then also passes the memnode's ownership check
 * (dm_region_check_owner) and each batch its worker's batch lock, so the
 * same run without and with --auth shows what isolation costs per op
 * (bench/run-auth-bench.sh).
 *
 * --pin CPU puts every process (clients, echo server, and the memnode if
 * started here) on one CPU.  Why: on a VM, waking a process on an idle
 * other CPU can cost ~50 µs (an IPI and a halted vCPU), so with one client
 * the loopback round trip is ~6 µs or ~60 µs depending on where the
 * scheduler happened to put client and server.  Pinned, every round trip
 * is a same-CPU wakeup and the protocol's own cost is what varies.
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

#define MAX_CLIENTS		2
/*
 * Samples kept per client process.  A tcp cell makes at most a few hundred
 * thousand ops per client in 3 s, so every sample is kept; a shm op takes
 * ~0.1 µs, i.e. tens of millions of ops, and there a uniform random sample
 * of this size (reservoir sampling) is kept instead: 2^21 samples give
 * percentiles far more precise than run-to-run noise, in 8 MiB per client.
 */
#define SAMPLE_CAP		(1u << 21)
#define BATCH_OPS		16
#define BATCH_LEN		64
#define BATCH_STRIDE	1024	/* the 16 reads hit 16 distinct spots */
/*
 * Each client works in its own 32 KiB of the chunk: READ 8 B at +0, the CAS
 * word at +64 (so two clients' CAS words never share a cache line and the
 * CAS always succeeds), READ 1 KiB at +1024, the batch at +i*1024.
 */
#define CLIENT_AREA		(32u << 10)

typedef enum bench_op
{
	OP_PINGPONG = 0,
	OP_READ8,
	OP_READ1K,
	OP_CAS8,
	OP_BATCH16,
	OP_COUNT
} bench_op;

static const char *const op_names[OP_COUNT] = {
	"ping-pong 8 B",
	"READ 8 B",
	"READ 1 KiB",
	"CAS 8 B",
	"batch 16xREAD 64 B",
};

/* Backend column; BK_SOCKET is the ping-pong baseline. */
enum
{
	BK_SOCKET = 0, BK_TCP = 1, BK_SHM = 2, BK_UCX = 3
};
static const char *const backend_names[] = {"socket", "tcp", "shm", "ucx"};

/* What one client process reports back (lives in the shared mapping). */
typedef struct child_result
{
	int			status;			/* 0 = ok, else a dm_status or -1 */
	char		err[240];
	uint64_t	ops;			/* measured operations */
	uint64_t	elapsed_ns;		/* measured window */
	uint64_t	kept;			/* samples stored in samples[] */
	dm_counters ctr;			/* dm_client counters over the window */
} child_result;

/*
 * One MAP_SHARED|MAP_ANONYMOUS mapping created before any fork: children
 * write their samples straight into it, so there is no pipe protocol and no
 * copy of up to 16 MiB per cell.
 */
typedef struct shared_area
{
	child_result res[MAX_CLIENTS];
	uint32_t	samples[MAX_CLIENTS][SAMPLE_CAP];	/* ns, clamped to 2^32-1 */
} shared_area;

typedef struct cell
{
	int			op;
	int			backend;
	int			nclients;
	int			done;			/* measured successfully */
	char		note[256];		/* why not, if not */
	double		median_ns;
	double		p99_ns;
	double		ops_per_s;
	uint64_t	ops;
	uint64_t	samples;
	double		rt_per_op;
	double		sent_per_op;
	double		recv_per_op;
} cell;

/* ---- settings and global state -------------------------------------------- */

static double duration_s = 3.0;
static double warmup_s;
static const char *memnode_addr;	/* NULL: start our own */
static const char *out_path;
static shared_area *shm_area;
static int	echo_port;
static pid_t echo_pid;
static dm_gaddr chunk_base;		/* the chunk all cells read and CAS in */
static uint64_t chunk_size;
static uint64_t owner_id;
static int	with_auth;			/* --auth */
static int	with_ucx;			/* --transport ucx: ucx rows instead of shm, memnode with --ucx */
static dm_tree_name auth_tree;	/* with --auth: the chunk's owner */

/* With --auth, every client is tenant-a. */
static void
apply_auth(dm_client_opts *opts)
{
	if (with_auth)
		test_auth_opts(opts, "tenant-a");
}
static int	pin_cpu = -1;		/* --pin: every process on this CPU */

static inline uint64_t
mono_ns(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC goes through the vDSO: ~20 ns, no syscall. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static inline uint64_t
xorshift64(uint64_t *s)
{
	uint64_t	x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static int
writen(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0)
	{
		ssize_t		w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t) w;
	}
	return 0;
}

static int
readn(int fd, void *buf, size_t n)
{
	char	   *p = buf;

	while (n > 0)
	{
		ssize_t		r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t) r;
	}
	return 0;
}

/*
 * readn, but first poll (non-blocking reads with a yield in between) for up
 * to 50 us before sleeping: the same policy the dm client and the memnode
 * use (dm_client_opts.spin_us, --poll-us), so the baseline and the protocol
 * pay the same wake-up costs and their ratio is the protocol's own overhead.
 */
static int
readn_poll(int fd, void *buf, size_t n)
{
	char	   *p = buf;
	uint64_t	until = now_ns() + 50000;

	while (n > 0)
	{
		ssize_t		r = recv(fd, p, n, MSG_DONTWAIT);

		if (r > 0)
		{
			p += r;
			n -= (size_t) r;
			continue;
		}
		if (r == 0)
			return -1;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		if (now_ns() < until)
			sched_yield();
		else
			return readn(fd, p, n);
	}
	return 0;
}

/* ---- ping-pong baseline: the echo server ------------------------------------ */

static void
set_nodelay(int fd)
{
	int			one = 1;

	/* Without it Nagle + delayed ACK would add ~40 ms to some round trips. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void *
echo_conn(void *arg)
{
	int			fd = (int) (intptr_t) arg;
	char		buf[8];

	while (readn_poll(fd, buf, sizeof(buf)) == 0 && writen(fd, buf, sizeof(buf)) == 0)
		;
	close(fd);
	return NULL;
}

/*
 * Fork the echo server: blocking sockets, one thread per connection — the
 * simplest server that can answer two clients at once, so it is the floor
 * any request/response protocol over loopback TCP can reach.  Its port comes
 * back through a pipe.
 */
static int
start_echo_server(void)
{
	int			pfd[2];
	int			lfd;
	struct sockaddr_in sa;
	socklen_t	slen = sizeof(sa);

	if (pipe(pfd) != 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	echo_pid = fork();
	if (echo_pid < 0)
		return -1;
	if (echo_pid == 0)
	{
		int			port = -1;

		/* Never outlive the benchmark, however it ends. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		close(pfd[0]);
		lfd = socket(AF_INET, SOCK_STREAM, 0);
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa.sin_port = 0;
		if (lfd >= 0 && bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) == 0 &&
			listen(lfd, 16) == 0 &&
			getsockname(lfd, (struct sockaddr *) &sa, &slen) == 0)
			port = ntohs(sa.sin_port);
		writen(pfd[1], &port, sizeof(port));
		close(pfd[1]);
		if (port < 0)
			_exit(1);
		for (;;)
		{
			int			cfd = accept(lfd, NULL, NULL);
			pthread_t	th;

			if (cfd < 0)
			{
				if (errno == EINTR)
					continue;
				_exit(1);
			}
			set_nodelay(cfd);
			if (pthread_create(&th, NULL, echo_conn, (void *) (intptr_t) cfd) != 0)
				close(cfd);
			else
				pthread_detach(th);
		}
	}
	close(pfd[1]);
	if (readn(pfd[0], &echo_port, sizeof(echo_port)) != 0 || echo_port <= 0)
	{
		close(pfd[0]);
		return -1;
	}
	close(pfd[0]);
	return 0;
}

static void
stop_echo_server(void)
{
	if (echo_pid > 0)
	{
		kill(echo_pid, SIGKILL);
		waitpid(echo_pid, NULL, 0);
		echo_pid = 0;
	}
}

/* ---- the client process ---------------------------------------------------- */

typedef struct worker
{
	int			op;
	int			backend;
	int			idx;			/* client number: picks its part of the chunk */
	/* tcp/shm */
	dm_client  *c;
	dm_gaddr	base;
	dm_op		batch[BATCH_OPS];
	uint64_t	cas_expected;
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
			if (writen(w->fd, w->buf, 8) != 0 || readn_poll(w->fd, w->buf, 8) != 0)
				return -1;
			return 0;
		case OP_READ8:
			return dm_read(w->c, w->base, w->buf, 8);
		case OP_READ1K:
			return dm_read(w->c, w->base + 1024, w->buf, 1024);
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
	}
	return DM_ERR_INTERNAL;
}

/* The byte setup_chunk() wrote at offset off of a client's area. */
static inline uint8_t
pattern_byte(uint64_t off)
{
	return (uint8_t) ((off % 4096) * 31 + 7);
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
static void
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
	rng = UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t) getpid() << 16) ^ mono_ns();

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
	warm_end = mono_ns() + (uint64_t) (warmup_s * 1e9);
	do
	{
		st = do_op(w);
		if (st != 0)
		{
			child_fail(r, st, "warm-up op", w->c);
			_exit(1);
		}
	} while (mono_ns() < warm_end);
	if (w->c)
		dm_client_reset_counters(w->c);

	if (writen(ready_fd, "r", 1) != 0)
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
	 * shm ops that take well under a microsecond.
	 */
	t_start = t_prev = mono_ns();
	t_end = t_start + (uint64_t) (duration_s * 1e9);
	do
	{
		uint64_t	d;
		uint32_t	s;

		st = do_op(w);
		t_now = mono_ns();
		if (st != 0)
		{
			child_fail(r, st, "measured op", w->c);
			_exit(1);
		}
		d = t_now - t_prev;
		s = d > UINT32_MAX ? UINT32_MAX : (uint32_t) d;
		if (kept < SAMPLE_CAP)
			samples[kept++] = s;
		else
		{
			/* Algorithm R: every op ends up in the sample with equal probability. */
			uint64_t	j = xorshift64(&rng) % (n + 1);

			if (j < SAMPLE_CAP)
				samples[j] = s;
		}
		n++;
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

/* ---- statistics -------------------------------------------------------------- */

/* Quickselect (Hoare partition): the k-th smallest of a[0..n); permutes a. */
static uint32_t
select_kth(uint32_t *a, size_t n, size_t k)
{
	ptrdiff_t	lo = 0,
				hi = (ptrdiff_t) n - 1,
				kk = (ptrdiff_t) k;

	while (lo < hi)
	{
		uint32_t	pivot = a[lo + (hi - lo) / 2];
		ptrdiff_t	i = lo,
					j = hi;

		while (i <= j)
		{
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i <= j)
			{
				uint32_t	t = a[i];

				a[i] = a[j];
				a[j] = t;
				i++;
				j--;
			}
		}
		/* Now a[lo..j] <= pivot <= a[i..hi], and a[j+1..i-1] == pivot. */
		if (kk <= j)
			hi = j;
		else if (kk >= i)
			lo = i;
		else
			return a[kk];
	}
	return a[kk];
}

/* Nearest-rank percentile (p in (0,1]) of a[0..n); permutes a. */
static double
percentile(uint32_t *a, size_t n, double p)
{
	size_t		k = (size_t) ceil(p * (double) n);

	if (k == 0)
		k = 1;
	return (double) select_kth(a, n, k - 1);
}

/*
 * Merge the clients' samples into one array in which every measured op had
 * the same chance to be present.  A client whose samples were thinned by the
 * reservoir (more ops than SAMPLE_CAP) stands for more ops per sample than
 * one that kept all, so the others are thinned to the same ratio first.
 */
static uint32_t *
merge_samples(int nclients, size_t *out_n)
{
	double		ratio = 1.0;
	size_t		total = 0,
				pos = 0;
	uint32_t   *all;
	uint64_t	rng = UINT64_C(0x2545F4914F6CDD1D);
	int			i;
	size_t		keep[MAX_CLIENTS];

	for (i = 0; i < nclients; i++)
	{
		child_result *r = &shm_area->res[i];

		if (r->kept > 0 && (double) r->ops / (double) r->kept > ratio)
			ratio = (double) r->ops / (double) r->kept;
	}
	for (i = 0; i < nclients; i++)
	{
		child_result *r = &shm_area->res[i];

		keep[i] = (size_t) llround((double) r->ops / ratio);
		if (keep[i] > r->kept)
			keep[i] = r->kept;
		total += keep[i];
	}
	all = malloc((total ? total : 1) * sizeof(uint32_t));
	if (!all)
		return NULL;
	for (i = 0; i < nclients; i++)
	{
		uint32_t   *s = shm_area->samples[i];
		size_t		m = shm_area->res[i].kept,
					j;

		/* Partial Fisher-Yates: a uniform random subset of keep[i]. */
		for (j = 0; j < keep[i]; j++)
		{
			size_t		x = j + (size_t) (xorshift64(&rng) % (m - j));
			uint32_t	t = s[j];

			s[j] = s[x];
			s[x] = t;
			all[pos++] = s[j];
		}
	}
	*out_n = total;
	return all;
}

/* ---- running one cell -------------------------------------------------------- */

static void
kill_children(pid_t *pids, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		if (pids[i] > 0)
		{
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
}

static void
run_cell(cell *ce)
{
	int			ready[2],
				go[2];
	pid_t		pids[MAX_CLIENTS] = {0};
	int			i,
				nready = 0;
	uint64_t	deadline;
	uint64_t	ops = 0,
				rt = 0,
				sent = 0,
				recv = 0;
	double		ops_per_s = 0;
	uint32_t   *all;
	size_t		nall;

	if (pipe(ready) != 0 || pipe(go) != 0)
	{
		snprintf(ce->note, sizeof(ce->note), "pipe: %s", strerror(errno));
		return;
	}
	memset(shm_area->res, 0, sizeof(shm_area->res));
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < ce->nclients; i++)
	{
		pids[i] = fork();
		if (pids[i] < 0)
		{
			snprintf(ce->note, sizeof(ce->note), "fork: %s", strerror(errno));
			pids[i] = 0;
			kill_children(pids, ce->nclients);
			close(ready[0]);
			close(ready[1]);
			close(go[0]);
			close(go[1]);
			return;
		}
		if (pids[i] == 0)
		{
			close(ready[0]);
			close(go[1]);
			child_main(ce->op, ce->backend, i, ready[1], go[0]);
			_exit(1);			/* not reached */
		}
	}
	close(ready[1]);
	close(go[0]);

	/*
	 * Wait for every client to be connected and warm.  A client that fails
	 * closes its end without writing, so EOF means someone failed; the
	 * timeout catches a client stuck connecting.
	 */
	deadline = mono_ns() + (uint64_t) (warmup_s * 1e9) + UINT64_C(30000000000);
	while (nready < ce->nclients)
	{
		struct pollfd p = {.fd = ready[0],.events = POLLIN};
		uint64_t	now = mono_ns();
		char		buf[MAX_CLIENTS];
		ssize_t		n;

		if (now >= deadline)
			break;
		if (poll(&p, 1, (int) ((deadline - now) / 1000000) + 1) <= 0)
			continue;
		n = read(ready[0], buf, sizeof(buf));
		if (n <= 0)
			break;
		nready += (int) n;
	}
	close(ready[0]);
	if (nready < ce->nclients)
	{
		/* Give a failing child a moment to finish writing its error. */
		usleep(100000);
		close(go[1]);
		kill_children(pids, ce->nclients);
		for (i = 0; i < ce->nclients; i++)
			if (shm_area->res[i].status != 0)
			{
				snprintf(ce->note, sizeof(ce->note), "client %d: %s", i,
						 shm_area->res[i].err);
				return;
			}
		snprintf(ce->note, sizeof(ce->note), "client did not get ready");
		return;
	}

	/* Go: EOF on the go pipe releases all clients at once. */
	close(go[1]);

	/* Reap, never hanging on a client stuck on a dead memnode. */
	deadline = mono_ns() + (uint64_t) (duration_s * 1e9) + UINT64_C(30000000000);
	for (i = 0; i < ce->nclients; i++)
	{
		int			wst;

		for (;;)
		{
			pid_t		r = waitpid(pids[i], &wst, WNOHANG);

			if (r == pids[i])
			{
				pids[i] = 0;
				break;
			}
			if (r < 0 && errno != EINTR)
			{
				pids[i] = 0;
				wst = -1;
				break;
			}
			if (mono_ns() > deadline)
			{
				kill_children(pids, ce->nclients);
				snprintf(ce->note, sizeof(ce->note), "client %d hung (killed)", i);
				return;
			}
			usleep(5000);
		}
		if (wst != 0 || shm_area->res[i].status != 0)
		{
			kill_children(pids, ce->nclients);
			snprintf(ce->note, sizeof(ce->note), "client %d: %s", i,
					 shm_area->res[i].err[0] ? shm_area->res[i].err : "died");
			return;
		}
	}

	for (i = 0; i < ce->nclients; i++)
	{
		child_result *r = &shm_area->res[i];

		ops += r->ops;
		rt += r->ctr.round_trips;
		sent += r->ctr.wire_bytes_sent;
		recv += r->ctr.wire_bytes_recv;
		/* Aggregate throughput: each client over its own window, summed. */
		if (r->elapsed_ns > 0)
			ops_per_s += (double) r->ops * 1e9 / (double) r->elapsed_ns;
	}
	all = merge_samples(ce->nclients, &nall);
	if (!all || nall == 0 || ops == 0)
	{
		free(all);
		snprintf(ce->note, sizeof(ce->note), "no samples");
		return;
	}
	ce->median_ns = percentile(all, nall, 0.50);
	ce->p99_ns = percentile(all, nall, 0.99);
	free(all);
	ce->ops = ops;
	ce->samples = nall;
	ce->ops_per_s = ops_per_s;
	ce->rt_per_op = (double) rt / (double) ops;
	ce->sent_per_op = (double) sent / (double) ops;
	ce->recv_per_op = (double) recv / (double) ops;
	ce->done = 1;
}

/* ---- setup: the chunk, the shm probe ---------------------------------------- */

/*
 * Allocate the chunk every cell works in, and fill it with a pattern so
 * reads copy real data.  The owner id only has to be unique: it sits in
 * the tree-id space (node id << 48 | sequence) at node id 0x7FFE, which no
 * memnode in a benchmark uses, plus our pid.
 */
static int
setup_chunk(char *err, size_t errsz)
{
	dm_client_opts opts;
	dm_client  *c;
	uint16_t	node;
	int			st;
	uint8_t		pat[4096];
	uint64_t	off;
	size_t		i;

	memset(&opts, 0, sizeof(opts));
	opts.backend = DM_BACKEND_TCP;
	opts.name = "dmbench_transport-setup";
	apply_auth(&opts);
	c = dm_client_create(&opts);
	if (!c)
	{
		snprintf(err, errsz, "dm_client_create failed");
		return -1;
	}
	st = dm_client_connect(c, memnode_addr, &node);
	if (st != DM_OK)
	{
		snprintf(err, errsz, "connect %s: %s (%s)", memnode_addr, dm_strerror(st),
				 dm_client_error(c));
		dm_client_destroy(c);
		return -1;
	}
	owner_id = (UINT64_C(0x7FFE) << 48) | (uint64_t) getpid();
	if (with_auth)
	{
		/* with authentication a chunk's owner must be a tree of the caller */
		dm_tree_info ti;
		char		tn[64];

		snprintf(tn, sizeof(tn), "dmbench_transport-%d", (int) getpid());
		dm_tree_name_named(&auth_tree, tn);
		if ((st = dm_tree_create(c, node, &auth_tree, &ti)) != DM_OK)
		{
			snprintf(err, errsz, "dm_tree_create: %s (%s)", dm_strerror(st), dm_client_error(c));
			dm_client_destroy(c);
			return -1;
		}
		owner_id = ti.tree_id;
	}
	st = dm_chunk_alloc(c, node, owner_id, &chunk_base, &chunk_size);
	if (st != DM_OK)
	{
		snprintf(err, errsz, "dm_chunk_alloc: %s (%s)", dm_strerror(st), dm_client_error(c));
		dm_client_destroy(c);
		return -1;
	}
	if (chunk_size < (uint64_t) MAX_CLIENTS * CLIENT_AREA)
	{
		snprintf(err, errsz, "chunk of %" PRIu64 " B is smaller than the %u B needed",
				 chunk_size, MAX_CLIENTS * CLIENT_AREA);
		dm_chunk_free(c, chunk_base);
		dm_client_destroy(c);
		return -1;
	}
	for (i = 0; i < sizeof(pat); i++)
		pat[i] = pattern_byte(i);
	for (off = 0; off < (uint64_t) MAX_CLIENTS * CLIENT_AREA; off += sizeof(pat))
	{
		st = dm_write(c, chunk_base + off, pat, sizeof(pat));
		if (st != DM_OK)
		{
			snprintf(err, errsz, "dm_write: %s (%s)", dm_strerror(st), dm_client_error(c));
			dm_chunk_free(c, chunk_base);
			dm_client_destroy(c);
			return -1;
		}
	}
	/*
	 * Disconnect: an idle connection must not hold one of the memnode's
	 * threads (or its attention) while the cells run.
	 */
	dm_client_destroy(c);
	return 0;
}

static void
free_chunk(void)
{
	dm_client_opts opts;
	dm_client  *c;
	uint16_t	node;
	uint64_t	nfreed;

	memset(&opts, 0, sizeof(opts));
	opts.backend = DM_BACKEND_TCP;
	opts.name = "dmbench_transport-cleanup";
	apply_auth(&opts);
	c = dm_client_create(&opts);
	if (!c)
		return;
	if (dm_client_connect(c, memnode_addr, &node) == DM_OK)
	{
		dm_chunk_free_owner(c, node, owner_id, &nfreed);
		if (with_auth)
			dm_tree_drop(c, node, &auth_tree, &nfreed);
	}
	dm_client_destroy(c);
}

/* Can this process map the memnode's region?  Returns DM_OK or why not. */
static int
probe_shm(char *err, size_t errsz)
{
	dm_client_opts opts;
	dm_client  *c;
	uint16_t	node;
	int			st;

	memset(&opts, 0, sizeof(opts));
	opts.backend = DM_BACKEND_SHM;
	opts.name = "dmbench_transport-probe";
	apply_auth(&opts);
	c = dm_client_create(&opts);
	if (!c)
		return DM_ERR_NOMEM;
	st = dm_client_connect(c, memnode_addr, &node);
	if (st != DM_OK)
		snprintf(err, errsz, "%s", dm_client_error(c)[0] ? dm_client_error(c) : dm_strerror(st));
	dm_client_destroy(c);
	return st;
}

/* Mean cost of one clock_gettime(CLOCK_MONOTONIC), in ns. */
static double
clock_overhead_ns(void)
{
	const int	n = 1000000;
	uint64_t	t0 = mono_ns(),
				t1;
	volatile uint64_t sink = 0;
	int			i;

	for (i = 0; i < n; i++)
		sink += mono_ns();
	t1 = mono_ns();
	(void) sink;
	return (double) (t1 - t0) / n;
}

/* ---- output ------------------------------------------------------------------ */

static void
fmt_us(char *buf, size_t sz, double ns)
{
	double		us = ns / 1000.0;

	if (us < 1.0)
		snprintf(buf, sz, "%.3f", us);
	else if (us < 100.0)
		snprintf(buf, sz, "%.2f", us);
	else
		snprintf(buf, sz, "%.1f", us);
}

static void
print_table(FILE *f, cell *cells, int ncells, const char *notes)
{
	int			i;

	fprintf(f, "| op | backend | clients | median µs | p99 µs | ops/s | round trips/op | wire B/op | ratio to ping-pong median |\n");
	fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		char		med[32],
					p99[32],
					ratio[32];
		const cell *base = NULL;
		int			j;

		if (!ce->done)
		{
			fprintf(f, "| %s | %s | %d | — | — | — | — | — | — |\n",
					op_names[ce->op], backend_names[ce->backend], ce->nclients);
			continue;
		}
		for (j = 0; j < ncells; j++)
			if (cells[j].op == OP_PINGPONG && cells[j].nclients == ce->nclients &&
				cells[j].done)
				base = &cells[j];
		fmt_us(med, sizeof(med), ce->median_ns);
		fmt_us(p99, sizeof(p99), ce->p99_ns);
		if (base && base->median_ns > 0)
			snprintf(ratio, sizeof(ratio), "%.2f", ce->median_ns / base->median_ns);
		else
			snprintf(ratio, sizeof(ratio), "—");
		fprintf(f, "| %s | %s | %d | %s | %s | %.0f | %.2f | %.0f / %.0f | %s |\n",
				op_names[ce->op], backend_names[ce->backend], ce->nclients,
				med, p99, ce->ops_per_s, ce->rt_per_op,
				ce->sent_per_op, ce->recv_per_op, ratio);
	}
	fprintf(f, "\n%s", notes);
	for (i = 0; i < ncells; i++)
		if (!cells[i].done && cells[i].note[0])
			fprintf(f, "- %s / %s / %d client(s) not measured: %s\n",
					op_names[cells[i].op], backend_names[cells[i].backend],
					cells[i].nclients, cells[i].note);
	fflush(f);
}

static void
usage(FILE *f)
{
	fprintf(f,
			"usage: dmbench_transport [--memnode HOST:PORT] [--duration SEC] [--quick] [--out FILE]\n"
			"  --memnode HOST:PORT  use a running memnode (shm rows need it started with --shm)\n"
			"                       default: start build/dmindex-memnode --shm --size 256M --threads 2\n"
			"  --duration SEC       measured seconds per cell (default 3)\n"
			"  --quick              0.5 s per cell (CI smoke run)\n"
			"  --out FILE           also write the markdown table to FILE\n"
			"  --pin CPU            run every process (and a memnode started here) on CPU\n"
			"  --auth               memnode with --auth-file, clients authenticated (isolation checks on)\n"
			"  --transport ucx      ucx rows instead of shm: the memnode started here gets --ucx and no\n"
			"                       --shm (an anonymous region, allocated by ucp_mem_map); UCX_TLS picks\n"
			"                       UCX's transport (bench/run-transport-bench.sh runs tcp and posix)\n");
}

/*
 * memnode_start() runs $DM_MEMNODE or build/dmindex-memnode relative to the
 * current directory; if neither is set/there, look next to this binary
 * (build/bench/../dmindex-memnode) so the benchmark runs from any directory.
 */
static void
find_memnode_binary(void)
{
	char		exe[PATH_MAX],
				cand[PATH_MAX + 32];
	ssize_t		n;
	char	   *slash;
	struct stat st;

	if (getenv("DM_MEMNODE") || stat("build/dmindex-memnode", &st) == 0)
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	snprintf(cand, sizeof(cand), "%s/../dmindex-memnode", exe);
	if (stat(cand, &st) == 0)
		setenv("DM_MEMNODE", cand, 1);
}

int
main(int argc, char **argv)
{
	const char *memnode_args[] = {"--shm", "--size", "256M", "--threads", "2", NULL, NULL, NULL};
	memnode_proc mp;
	int			started_memnode = 0;
	int			shm_ok;
	char		shm_err[512] = "",
				err[512];
	cell		cells[OP_COUNT * 2 * MAX_CLIENTS];
	int			ncells = 0;
	int			op,
				bk,
				nc,
				i;
	char		notes[2048];
	size_t		nlen = 0;
	double		clk;
	uint64_t	t_begin = mono_ns();

	for (i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--memnode") == 0 && i + 1 < argc)
			memnode_addr = argv[++i];
		else if (strcmp(argv[i], "--duration") == 0 && i + 1 < argc)
		{
			char	   *end;

			duration_s = strtod(argv[++i], &end);
			if (*end || !(duration_s > 0) || duration_s > 3600)
			{
				fprintf(stderr, "dmbench_transport: bad --duration %s\n", argv[i]);
				return 2;
			}
		}
		else if (strcmp(argv[i], "--auth") == 0)
			with_auth = 1;
		else if (strcmp(argv[i], "--transport") == 0 && i + 1 < argc)
		{
			if (strcmp(argv[++i], "ucx") == 0)
				with_ucx = 1;
			else if (strcmp(argv[i], "shm") != 0)
			{
				fprintf(stderr, "dmbench_transport: bad --transport %s (shm or ucx)\n", argv[i]);
				return 2;
			}
		}
		else if (strcmp(argv[i], "--quick") == 0)
			duration_s = 0.5;
		else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
			out_path = argv[++i];
		else if (strcmp(argv[i], "--pin") == 0 && i + 1 < argc)
		{
			char	   *end;

			pin_cpu = (int) strtol(argv[++i], &end, 10);
			if (*end || pin_cpu < 0 || pin_cpu >= CPU_SETSIZE)
			{
				fprintf(stderr, "dmbench_transport: bad --pin %s\n", argv[i]);
				return 2;
			}
		}
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
		{
			usage(stdout);
			return 0;
		}
		else
		{
			usage(stderr);
			return 2;
		}
	}
	/* Warm-up: a tenth of the window, between 50 and 300 ms. */
	warmup_s = duration_s / 10;
	if (warmup_s < 0.05)
		warmup_s = 0.05;
	if (warmup_s > 0.3)
		warmup_s = 0.3;

	/*
	 * Pin before forking anything: the affinity mask is inherited by the
	 * echo server, the memnode (across exec) and every client process.
	 */
	if (pin_cpu >= 0)
	{
		cpu_set_t	set;

		CPU_ZERO(&set);
		CPU_SET(pin_cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0)
		{
			fprintf(stderr, "dmbench_transport: cannot pin to CPU %d: %s\n",
					pin_cpu, strerror(errno));
			return 2;
		}
	}

	/* A memnode or echo server that goes away must not kill us by SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);

	shm_area = mmap(NULL, sizeof(shared_area), PROT_READ | PROT_WRITE,
					MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm_area == MAP_FAILED)
	{
		fprintf(stderr, "dmbench_transport: mmap: %s\n", strerror(errno));
		return 1;
	}

	if (start_echo_server() != 0)
	{
		fprintf(stderr, "dmbench_transport: could not start the echo server\n");
		return 1;
	}

	if (!memnode_addr)
	{
		find_memnode_binary();
		if (with_auth)
		{
			memnode_args[5] = "--auth-file";
			memnode_args[6] = test_auth_file();
		}
		if (with_ucx)
			memnode_args[0] = "--ucx";	/* anonymous region: one-sided over UCX shared memory */
		if (memnode_start(&mp, 0, (const char *const *) memnode_args) != 0)
		{
			fprintf(stderr, "dmbench_transport: could not start a memnode "
					"(set DM_MEMNODE or build it with make standalone)\n");
			stop_echo_server();
			return 1;
		}
		started_memnode = 1;
		memnode_addr = mp.addr;
	}

	if (setup_chunk(err, sizeof(err)) != 0)
	{
		fprintf(stderr, "dmbench_transport: %s\n", err);
		if (started_memnode)
			memnode_stop(&mp, SIGTERM);
		stop_echo_server();
		return 1;
	}
	shm_ok = with_ucx || probe_shm(shm_err, sizeof(shm_err)) == DM_OK;
	clk = clock_overhead_ns();

	fprintf(stderr, "dmbench_transport: memnode %s%s, %.2f s per cell, warm-up %.2f s%s%s\n",
			memnode_addr, started_memnode ? " (started here)" : "",
			duration_s, warmup_s, shm_ok ? "" : ", shm rows skipped",
			pin_cpu >= 0 ? ", pinned" : "");

	/* The baseline first, then each backend; rows stay in this order. */
	for (nc = 1; nc <= MAX_CLIENTS; nc++)
	{
		cell	   *ce = &cells[ncells++];

		memset(ce, 0, sizeof(*ce));
		ce->op = OP_PINGPONG;
		ce->backend = BK_SOCKET;
		ce->nclients = nc;
	}
	for (op = OP_READ8; op < OP_COUNT; op++)
		for (bk = BK_TCP; bk <= BK_SHM; bk++)
			for (nc = 1; nc <= MAX_CLIENTS; nc++)
			{
				cell	   *ce = &cells[ncells++];

				memset(ce, 0, sizeof(*ce));
				ce->op = op;
				ce->backend = bk == BK_SHM && with_ucx ? BK_UCX : bk;
				ce->nclients = nc;
			}

	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];

		if (ce->backend == BK_SHM && !shm_ok)
			continue;			/* said once, in the notes */
		fprintf(stderr, "  %-20s %-6s %d client(s) ... ", op_names[ce->op],
				backend_names[ce->backend], ce->nclients);
		run_cell(ce);
		if (ce->done)
			fprintf(stderr, "median %.2f µs, %.0f ops/s\n", ce->median_ns / 1000,
					ce->ops_per_s);
		else
			fprintf(stderr, "FAILED: %s\n", ce->note);
	}

	free_chunk();
	if (started_memnode)
		memnode_stop(&mp, SIGTERM);
	stop_echo_server();

	nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
					 "- %.2f s measured per cell after %.2f s warm-up; memnode %s%s.\n",
					 duration_s, warmup_s, started_memnode ? "started with " : "at ",
					 started_memnode ? (with_auth ? "`--shm --size 256M --threads 2 --auth-file FILE`" :
										with_ucx ? "`--ucx --size 256M --threads 2`" :
										"`--shm --size 256M --threads 2`") : memnode_addr);
	if (with_ucx)
		nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
						 "- --transport ucx: ucx rows (UCX_TLS=%s) in place of shm rows.\n",
						 getenv("UCX_TLS") ? getenv("UCX_TLS") : "(all)");
	if (with_auth)
		nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
						 "- --auth: clients authenticated as tenant-a; every op is checked against its owner.\n");
	if (pin_cpu >= 0)
		nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
						 "- All processes pinned to CPU %d%s: no cross-CPU wakeups, "
						 "and 2 clients share that CPU with the server.\n",
						 pin_cpu, started_memnode ? "" : " (except the memnode, not started here)");
	else
		nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
						 "- Not pinned: the scheduler places clients and server.  On a VM a wakeup on another, "
						 "idle CPU can cost ~50 µs, so 1-client tcp and ping-pong medians land near either "
						 "~6 or ~60 µs by placement, and their ratio can be off by 10x; see --pin.\n");
	nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
					 "- Latency per op = time between consecutive CLOCK_MONOTONIC reads, so it includes one clock read (%.0f ns here; ops/s too). "
					 "Percentiles over every op, or over a uniform random sample of %u per client when a client did more.\n",
					 clk, SAMPLE_CAP);
	nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
					 "- ops/s is summed over the client processes; a batch counts as one op (16 remote READs).\n"
					 "- round trips/op and wire B/op (sent / received frame bytes) come from dm_client_counters; "
					 "for ping-pong they are its 8-byte payloads; shm counts each dm_post as a round trip "
					 "although no message is sent.\n"
					 "- ratio = this row's median / ping-pong median with the same number of clients "
					 "(for tcp rows: the protocol overhead ratio).\n");
	if (!shm_ok)
		nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
						 "- shm rows skipped: this process cannot map the memnode's region: %s.\n",
						 shm_err);
	nlen += snprintf(notes + nlen, sizeof(notes) - nlen, "- total run time %.0f s.\n",
					 (double) (mono_ns() - t_begin) / 1e9);

	print_table(stdout, cells, ncells, notes);
	if (out_path)
	{
		FILE	   *f = fopen(out_path, "w");

		if (!f)
		{
			fprintf(stderr, "dmbench_transport: %s: %s\n", out_path, strerror(errno));
			return 1;
		}
		print_table(f, cells, ncells, notes);
		fclose(f);
	}
	munmap(shm_area, sizeof(shared_area));

	for (i = 0; i < ncells; i++)
		if (!cells[i].done && !(cells[i].backend == BK_SHM && !shm_ok))
			return 1;
	return 0;
}
