/*
 * cell.c — running one cell: forking the clients, the warm-up (until the cache's
 * hit ratio settles, with a cache), the measured window, reaping and summing
 * the clients' results, percentiles of the latency samples, and the CPU
 * accounting that tells how much of the machine other processes took
 * meanwhile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dm_cache.h"
#include "dm_client.h"
#include "dm_offload.h"
#include "dm_tree.h"
#include "testutil.h"

#include "dmbench.h"

/* ---- statistics ------------------------------------------------------------------ */

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a,
				y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

/*
 * p50 and p99 over the samples of the given kinds (mask) of all clients,
 * weighted so that every measured op had the same chance to count: a
 * (client, kind) whose reservoir was thinned stands for more ops per
 * sample, so the others are thinned to the same ratio first.
 */
static int
percentiles(int ncl, unsigned kind_mask, double *p50, double *p99)
{
	double		ratio = 1.0;
	size_t		total = 0,
				pos = 0,
				keep[MAX_CLIENTS][K_COUNT];
	uint32_t   *all;
	uint64_t	rng = UINT64_C(0x2545F4914F6CDD1D);
	int			i,
				k;

	for (i = 0; i < ncl; i++)
		for (k = 0; k < K_COUNT; k++)
		{
			child_result *r = &sh->res[i];

			if ((kind_mask & (1u << k)) && r->kept[k] > 0 &&
				(double) r->ops[k] / (double) r->kept[k] > ratio)
				ratio = (double) r->ops[k] / (double) r->kept[k];
		}
	for (i = 0; i < ncl; i++)
		for (k = 0; k < K_COUNT; k++)
		{
			child_result *r = &sh->res[i];

			keep[i][k] = 0;
			if (!(kind_mask & (1u << k)))
				continue;
			keep[i][k] = (size_t) llround((double) r->ops[k] / ratio);
			if (keep[i][k] > r->kept[k])
				keep[i][k] = r->kept[k];
			total += keep[i][k];
		}
	if (total == 0)
		return -1;
	all = malloc(total * sizeof(uint32_t));
	if (!all)
		return -1;
	for (i = 0; i < ncl; i++)
		for (k = 0; k < K_COUNT; k++)
		{
			uint32_t   *s = sample_slot(i, k);
			size_t		m = sh->res[i].kept[k],
						j;

			/* Partial Fisher-Yates: a uniform random subset of keep[i][k]. */
			for (j = 0; j < keep[i][k]; j++)
			{
				size_t		x = j + (size_t) (splitmix64(&rng) % (m - j));
				uint32_t	t = s[j];

				s[j] = s[x];
				s[x] = t;
				all[pos++] = s[j];
			}
		}
	qsort(all, total, sizeof(uint32_t), cmp_u32);
	/* Nearest rank. */
	*p50 = all[(size_t) ceil(0.50 * (double) total) - 1];
	*p99 = all[(size_t) ceil(0.99 * (double) total) - 1];
	free(all);
	return 0;
}

/*
 * CPU accounting, to tell how much of the machine other processes took
 * during a cell (this benchmark shares its 2 CPUs with test runs): busy
 * time of all CPUs from /proc/stat, minus what our clients (reaped
 * children) and the memnode started here used.
 */
pid_t memnode_pid;		/* started here, else 0 */
long clk_tck;

static double
machine_busy_s(void)
{
	FILE	   *f = fopen("/proc/stat", "r");
	unsigned long long v[8] = {0};
	int			n;

	if (!f)
		return -1;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 8)
		return -1;
	/* user nice system [idle iowait] irq softirq steal */
	return (double) (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double) clk_tck;
}

static double
children_cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_CHILDREN, &ru) != 0)
		return -1;
	return (double) ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		(double) ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* utime + stime of a running process (the memnode), from /proc/PID/stat. */
static double
proc_cpu_s(pid_t pid)
{
	char		path[64],
				buf[1024],
			   *p;
	FILE	   *f;
	unsigned long long ut,
				st;
	size_t		n;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Fields after the command (which may hold spaces) start after the last ')'. */
	if (!(p = strrchr(buf, ')')) ||
		sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double) (ut + st) / (double) clk_tck;
}

typedef struct cpu_mark
{
	double		wall,
				busy,
				ours;
} cpu_mark;

static void
cpu_mark_now(cpu_mark *m)
{
	double		c = children_cpu_s(),
				mn = proc_cpu_s(memnode_pid);

	m->wall = (double) now_ns() / 1e9;
	m->busy = machine_busy_s();
	m->ours = (c < 0 || mn < 0) ? -1 : c + mn;
}

/* Share of all CPUs that other processes used between a and b (-1 unknown). */
static double
others_share(const cpu_mark *a, const cpu_mark *b)
{
	long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double		x;

	if (a->busy < 0 || b->busy < 0 || a->ours < 0 || b->ours < 0 || ncpu <= 0 ||
		b->wall <= a->wall)
		return -1;
	x = ((b->busy - a->busy) - (b->ours - a->ours)) / ((b->wall - a->wall) * (double) ncpu);
	return x < 0 ? 0 : x;
}

/* a -= b for the counters of dm_cache_stats (the gauges of a are kept). */
static void
cache_stats_sub(dm_cache_stats *a, const dm_cache_stats *b)
{
	int			l;

	for (l = 0; l < DM_CACHE_LEVELS; l++)
	{
		a->hits[l] -= b->hits[l];
		a->misses[l] -= b->misses[l];
	}
	a->hint_hits -= b->hint_hits;
	a->admissions -= b->admissions;
	a->admit_skipped -= b->admit_skipped;
	a->evictions -= b->evictions;
	a->coolings -= b->coolings;
	a->delegations -= b->delegations;
	a->promotions -= b->promotions;
	a->io_waits -= b->io_waits;
	a->no_frame -= b->no_frame;
	a->invalidations -= b->invalidations;
	a->local_writes -= b->local_writes;
	a->round_trips_avoided -= b->round_trips_avoided;
	a->bytes_avoided -= b->bytes_avoided;
}

/* hits / (hits + misses) at one level (0 = leaves), all inner levels (-2) or all (-1); -1 if none. */
double
hit_ratio(const dm_cache_stats *s, int level)
{
	uint64_t	h = 0,
				m = 0;
	int			l;

	for (l = 0; l < DM_CACHE_LEVELS; l++)
		if (level == -1 || (level == -2 && l > 0) || level == l)
		{
			h += s->hits[l];
			m += s->misses[l];
		}
	return h + m ? (double) h / (double) (h + m) : -1;
}

uint64_t
cache_sum(const uint64_t *v)
{
	uint64_t	x = 0;
	int			l;

	for (l = 0; l < DM_CACHE_LEVELS; l++)
		x += v[l];
	return x;
}

void
run_cell(cell *ce)
{
	int			ready[2],
				go[2];
	pid_t		pids[MAX_CLIENTS] = {0};
	int			i,
				k,
				nready = 0;
	uint64_t	deadline,
				t_go;
	cpu_mark	m0,
				m1;
	dm_cache_stats cs0,
				csm,
				cs1,
				ws_prev;
	int			have_mid = 0;
	uint64_t	t_fork,
				t_sample;
	double		hr = -1,
				hr_prev = -1;

	ce->others_cpu = -1;
	ce->hit_half[0] = ce->hit_half[1] = -1;
	if (pipe(ready) != 0 || pipe(go) != 0)
	{
		snprintf(ce->note, sizeof(ce->note), "pipe: %s", strerror(errno));
		return;
	}
	ce->nkeys = __atomic_load_n(&sh->next_ord, __ATOMIC_ACQUIRE);
	/* "latest" starts from zeta over every ordinal so far; children extend it. */
	if (ce->dist == DIST_LATEST)
		zipf_grow(&latest_zipf, ce->nkeys);
	/* --zipf-items keys: ranks over the keys present (as DEX's benchmark), not 10^10 */
	if (ce->dist == DIST_ZIPF && zipf_over_keys && ce->nkeys >= 2 && scrambled_zipf.n != ce->nkeys)
		zipf_set(&scrambled_zipf, ce->nkeys, ZIPF_THETA, zeta_add(0, ce->nkeys, ZIPF_THETA, 0));
	memset(sh->res, 0, sizeof(sh->res));
	/* without a cache the warm-up is warmup_s; with one it may go on until steady */
	sh->warm_stop = cur_cache ? 0 : 1;
	if (cur_cache)
		dm_cache_stats_get(cur_cache, &ws_prev);
	fflush(stdout);
	fflush(stderr);
	t_fork = t_sample = now_ns();
	for (i = 0; i < nclients; i++)
	{
		pids[i] = fork();
		if (pids[i] < 0)
		{
			snprintf(ce->note, sizeof(ce->note), "fork: %s", strerror(errno));
			pids[i] = 0;
			kill_pids(pids, nclients);
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
			child_main(ce->wl, ce->dist, ce->transport, i, ce->nkeys, ready[1], go[0]);
			_exit(1);			/* not reached */
		}
	}
	close(ready[1]);
	close(go[0]);

	/*
	 * Wait for every client to be connected and warm.  A client that fails
	 * closes its end without writing, so EOF means someone failed.
	 */
	deadline = t_fork + (uint64_t) ((warmup_max_s > warmup_s ? warmup_max_s : warmup_s) * 1e9) +
		UINT64_C(60000000000);
	while (nready < nclients)
	{
		struct pollfd p = {.fd = ready[0],.events = POLLIN};
		uint64_t	now = now_ns();
		char		buf[MAX_CLIENTS];
		ssize_t		n;
		int			pr;

		if (now >= deadline)
			break;

		/*
		 * Steady state: with a cache, the warm-up goes on (past warmup_s)
		 * until the hit ratio of one second differs from that of the second
		 * before by less than warmup_stable (or warmup_max_s is reached).
		 */
		if (cur_cache && !sh->warm_stop && now >= t_sample + UINT64_C(1000000000))
		{
			dm_cache_stats cur,
						d;

			dm_cache_stats_get(cur_cache, &cur);
			d = cur;
			cache_stats_sub(&d, &ws_prev);
			hr = hit_ratio(&d, -1);
			if (now >= t_fork + (uint64_t) (warmup_s * 1e9) && hr >= 0 && hr_prev >= 0 &&
				fabs(hr - hr_prev) < warmup_stable)
			{
				__atomic_store_n(&sh->warm_stop, 1, __ATOMIC_RELEASE);
				ce->warm_steady = 1;
			}
			hr_prev = hr;
			ws_prev = cur;
			t_sample = now;
		}
		pr = poll(&p, 1, cur_cache && !sh->warm_stop ? 100 : (int) ((deadline - now) / 1000000) + 1);
		if (pr <= 0)
			continue;
		n = read(ready[0], buf, sizeof(buf));
		if (n <= 0)
			break;
		nready += (int) n;
	}
	close(ready[0]);
	ce->warm_s = (double) (now_ns() - t_fork) / 1e9;
	if (nready < nclients)
	{
		usleep(100000);			/* let a failing child finish its message */
		close(go[1]);
		kill_pids(pids, nclients);
		for (i = 0; i < nclients; i++)
			if (sh->res[i].status != 0)
			{
				snprintf(ce->note, sizeof(ce->note), "client %d (warm-up): %s", i, sh->res[i].err);
				return;
			}
		snprintf(ce->note, sizeof(ce->note), "a client did not get ready");
		return;
	}
	/* Every client is idle now (warm, waiting for go): the cache's counters stand still. */
	if (cur_cache)
		dm_cache_stats_get(cur_cache, &cs0);
	cpu_mark_now(&m0);
	t_go = now_ns();
	close(go[1]);

	/* Reap, never hanging on a client stuck on a dead memnode or a lost lock. */
	deadline = now_ns() + (uint64_t) (duration_s * 1e9) + UINT64_C(60000000000);
	for (i = 0; i < nclients; i++)
	{
		int			wst = 0;

		for (;;)
		{
			pid_t		r;

			if (cur_cache && !have_mid && now_ns() >= t_go + (uint64_t) (duration_s * 0.5e9))
			{
				dm_cache_stats_get(cur_cache, &csm);
				have_mid = 1;
			}
			r = waitpid(pids[i], &wst, WNOHANG);

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
				kill_pids(pids, nclients);
				snprintf(ce->note, sizeof(ce->note), "client %d hung (killed)", i);
				return;
			}
			usleep(5000);
		}
		if (wst != 0 || sh->res[i].status != 0)
		{
			kill_pids(pids, nclients);
			snprintf(ce->note, sizeof(ce->note), "client %d: %s", i,
					 sh->res[i].err[0] ? sh->res[i].err :
					 (WIFSIGNALED(wst) ? strsignal(WTERMSIG(wst)) : "died"));
			return;
		}
	}

	/* From go to the last client reaped: the measured window (plus exit). */
	cpu_mark_now(&m1);
	ce->others_cpu = others_share(&m0, &m1);
	if (cur_cache)
	{
		dm_cache_stats_get(cur_cache, &cs1);
		ce->cs_end = cs1;
		ce->cs = cs1;
		cache_stats_sub(&ce->cs, &cs0);
		if (have_mid)
		{
			dm_cache_stats a = csm,
						b = cs1;

			cache_stats_sub(&a, &cs0);
			cache_stats_sub(&b, &csm);
			ce->hit_half[0] = hit_ratio(&a, -1);
			ce->hit_half[1] = hit_ratio(&b, -1);
		}
	}
	memset(&ce->ctr, 0, sizeof(ce->ctr));
	memset(&ce->tctr, 0, sizeof(ce->tctr));
	memset(&ce->octr, 0, sizeof(ce->octr));
	for (i = 0; i < nclients; i++)
	{
		child_result *r = &sh->res[i];
		uint64_t	n = 0;

		for (k = 0; k < K_COUNT; k++)
		{
			ce->kops[k] += r->ops[k];
			n += r->ops[k];
		}
		ce->ops += n;
		/* Aggregate throughput: each client over its own window, summed. */
		if (r->elapsed_ns > 0)
			ce->ops_per_s += (double) n * 1e9 / (double) r->elapsed_ns;
		ce->ctr.round_trips += r->ctr.round_trips;
		ce->ctr.rpcs += r->ctr.rpcs;
		ce->ctr.rpcs_ucx += r->ctr.rpcs_ucx;
		for (k = 0; k <= DM_OP_KIND_MAX; k++)
			ce->ctr.ops[k] += r->ctr.ops[k];
		ce->ctr.bytes_read += r->ctr.bytes_read;
		ce->ctr.bytes_written += r->ctr.bytes_written;
		ce->ctr.wire_bytes_sent += r->ctr.wire_bytes_sent;
		ce->ctr.wire_bytes_recv += r->ctr.wire_bytes_recv;
		ce->tctr.node_reads += r->tctr.node_reads;
		ce->tctr.read_retries += r->tctr.read_retries;
		ce->tctr.lock_retries += r->tctr.lock_retries;
		ce->tctr.lock_takeovers += r->tctr.lock_takeovers;
		ce->tctr.splits += r->tctr.splits;
		ce->tctr.root_grows += r->tctr.root_grows;
		ce->tctr.restarts += r->tctr.restarts;
		ce->tctr.hop_reads += r->tctr.hop_reads;
		ce->tctr.hop_retries += r->tctr.hop_retries;
		ce->tctr.hop_whole += r->tctr.hop_whole;
		ce->tctr.hop_fallbacks += r->tctr.hop_fallbacks;
		ce->tctr.hop_spec_hits += r->tctr.hop_spec_hits;
		ce->tctr.hop_spec_stale += r->tctr.hop_spec_stale;
		ce->octr.offloads += r->octr.offloads;
		ce->octr.fallbacks += r->octr.fallbacks;
		ce->octr.decided_offload += r->octr.decided_offload;
		ce->octr.decided_local += r->octr.decided_local;
		ce->octr.explored += r->octr.explored;
		/* the estimates: averaged over clients */
		ce->octr.rpc_ns_avg += r->octr.rpc_ns_avg / (uint64_t) nclients;
		ce->octr.read_ns_avg += r->octr.read_ns_avg / (uint64_t) nclients;
		if (r->octr.memnode_busy_pct > ce->octr.memnode_busy_pct)
			ce->octr.memnode_busy_pct = r->octr.memnode_busy_pct;
		ce->anom.read_miss += r->anom.read_miss;
		ce->anom.read_miss_again += r->anom.read_miss_again;
		ce->anom.insert_existed += r->anom.insert_existed;
		ce->anom.delete_missing += r->anom.delete_missing;
		ce->scanned += r->scanned;
		ce->warm_ops += r->warm_ops;
	}
	if (ce->ops == 0 || percentiles(nclients, (1u << K_COUNT) - 1, &ce->p50_ns, &ce->p99_ns) != 0)
	{
		snprintf(ce->note, sizeof(ce->note), "no operations measured");
		return;
	}
	for (k = 0; k < K_COUNT; k++)
		if (ce->kops[k] > 0)
			percentiles(nclients, 1u << k, &ce->kp50_ns[k], &ce->kp99_ns[k]);
	ce->done = 1;
}
