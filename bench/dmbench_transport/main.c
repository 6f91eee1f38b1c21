/*
 * dmbench_transport/main.c — what one remote-memory operation costs on each
 * transport of src/dm/, and how much of that is our protocol rather than
 * the kernel's loopback TCP.
 *
 * Measured, for the tcp and shm backends and for 1 and 2 client processes
 * (each a forked process with its own dm_client, running at the same time):
 *   - READ 8 B           one dm_read of one word
 *   - READ 1 KiB         one dm_read of a node-sized block
 *   - WRITE 8 B          one dm_write of one word (returns once it is in
 *                        the region: over ucx a put and a flush)
 *   - CAS 8 B            one dm_cas (always succeeds: each client has its
 *                        own word, so the write path is exercised too)
 *   - batch 16xREAD 64 B one dm_post carrying 16 READs (= one round trip)
 *   - RPC ping           one dm_ping, the cheapest existing RPC (the memnode
 *                        echoes a token): over tcp and shm a frame on the
 *                        socket, over ucx a UCX active message each way
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

#include "transport_bench.h"

static const char *const op_names[OP_COUNT] = {
	"ping-pong 8 B",
	"READ 8 B",
	"READ 1 KiB",
	"WRITE 8 B",
	"CAS 8 B",
	"batch 16xREAD 64 B",
	"RPC ping",
};

static const char *const backend_names[] = {"socket", "tcp", "shm", "ucx"};

double duration_s = 3.0;

uint32_t clock_every = 1;

double warmup_s;

const char *memnode_addr;	/* NULL: start our own */

static const char *out_path;

shared_area *shm_area;

int	echo_port;

pid_t echo_pid;

dm_gaddr chunk_base;		/* the chunk all cells read and CAS in */

uint64_t chunk_size;

uint64_t owner_id;

int	with_auth;			/* --auth */

static int	with_ucx;			/* --transport ucx: ucx rows instead of shm, memnode with --ucx */

dm_tree_name auth_tree;	/* with --auth: the chunk's owner */

/* With --auth, every client is tenant-a. */
void
apply_auth(dm_client_opts *opts)
{
	if (with_auth)
		test_auth_opts(opts, "tenant-a");
}

static int	pin_cpu = -1;		/* --pin: every process on this CPU */

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
			"                       UCX's transport (bench/run-transport-bench.sh runs tcp and posix)\n"
			"  --clock-every N      one clock read per N ops: a latency sample is a block of N ops / N\n"
			"                       (default 1; for sub-microsecond ops, where the clock read dominates)\n");
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
	char		notes[4096];
	size_t		nlen = 0;
	double		clk;
	uint64_t	t_begin = now_ns();

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
		else if (strcmp(argv[i], "--clock-every") == 0 && i + 1 < argc)
		{
			char	   *end;
			long		v = strtol(argv[++i], &end, 10);

			if (*end || v < 1 || v > 65536)
			{
				fprintf(stderr, "dmbench_transport: bad --clock-every %s\n", argv[i]);
				return 2;
			}
			clock_every = (uint32_t) v;
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
		memnode_find_binary();
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
	if (clock_every == 1)
		nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
						 "- Latency per op = time between consecutive CLOCK_MONOTONIC reads, so it includes one clock read (%.0f ns here; ops/s too). "
						 "Percentiles over every op, or over a uniform random sample of %u per client when a client did more.\n",
						 clk, SAMPLE_CAP);
	else
		nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
						 "- --clock-every %u: latency per op = time of a block of %u consecutive ops / %u, so it includes "
						 "1/%u of a clock read (%.0f ns here, %.1f ns per op; ops/s too). Percentiles over blocks "
						 "(a uniform random sample of %u per client when a client did more): p99 is a block's mean, "
						 "not one op's.\n",
						 clock_every, clock_every, clock_every, clock_every, clk, clk / clock_every, SAMPLE_CAP);
	nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
					 "- ops/s is summed over the client processes; a batch counts as one op (16 remote READs).\n"
					 "- round trips/op and wire B/op (sent / received frame bytes) come from dm_client_counters; "
					 "for ping-pong they are its 8-byte payloads; shm counts each dm_post as a round trip "
					 "although no message is sent; an RPC counts as one (over ucx its bytes go through UCX, "
					 "not counted; the shm backend's RPCs go over its socket).\n"
					 "- ratio = this row's median / ping-pong median with the same number of clients "
					 "(for tcp rows: the protocol overhead ratio).\n");
	if (!shm_ok)
		nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
						 "- shm rows skipped: this process cannot map the memnode's region: %s.\n",
						 shm_err);
	nlen += snprintf(notes + nlen, sizeof(notes) - nlen, "- total run time %.0f s.\n",
					 (double) (now_ns() - t_begin) / 1e9);

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
