/*
 * cell.c — running one cell: forking the clients and starting them together,
 * reaping them, and the statistics over their samples (median and p99 by
 * selection over the merged samples, ops/s, round trips and bytes per
 * operation).
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

void
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
			kill_pids(pids, ce->nclients);
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
	deadline = now_ns() + (uint64_t) (warmup_s * 1e9) + UINT64_C(30000000000);
	while (nready < ce->nclients)
	{
		struct pollfd p = {.fd = ready[0],.events = POLLIN};
		uint64_t	now = now_ns();
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
		kill_pids(pids, ce->nclients);
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
	deadline = now_ns() + (uint64_t) (duration_s * 1e9) + UINT64_C(30000000000);
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
			if (now_ns() > deadline)
			{
				kill_pids(pids, ce->nclients);
				snprintf(ce->note, sizeof(ce->note), "client %d hung (killed)", i);
				return;
			}
			usleep(5000);
		}
		if (wst != 0 || shm_area->res[i].status != 0)
		{
			kill_pids(pids, ce->nclients);
			snprintf(ce->note, sizeof(ce->note), "client %d: %s", i,
					 shm_area->res[i].err[0] ? shm_area->res[i].err : "died");
			return;
		}
	}

	for (i = 0; i < ce->nclients; i++)
	{
		child_result *r = &shm_area->res[i];

		ops += r->ops;
		rt += r->ctr.round_trips + r->ctr.rpcs;	/* an RPC is a round trip too */
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
