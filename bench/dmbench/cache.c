/*
 * cache.c — the cache cells (--cache-policy): a fresh tree and a fresh shared
 * dm_cache per (workload, distribution, policy, size), and the --oracle
 * bound: the best hit ratio any cache of that many frames could reach for
 * lookups, from samples of the same key generator.
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

/* ---- cache cells (--cache-policy) -------------------------------------------------- */

/* Forget every row: the next load starts the ordinals from 0 again. */
static void
reset_rows(void)
{
	uint64_t	n = sh->next_ord > ord_cap ? ord_cap : sh->next_ord;

	memset(cur_tid, 0, (size_t) n * sizeof(uint64_t));
	sh->next_ord = 0;
	memset(&latest_zipf, 0, sizeof(latest_zipf));
	zipf_set(&latest_zipf, 1, ZIPF_THETA, 1.0);
}

uint64_t
tree_nodes(const dm_tree_stats *st)
{
	uint64_t	n = 0;
	int			l;

	for (l = 0; l < 16; l++)
		n += st->nodes[l];
	return n;
}

static uint32_t
frames_for_pct(uint64_t nodes, double pct)
{
	double		f = floor((double) nodes * pct / 100.0 + 0.5);

	if (f < 16)
		f = 16;
	if (f > (double) (DM_FRAME_NONE / 2 - 1))
		f = (double) (DM_FRAME_NONE / 2 - 1);
	return (uint32_t) f;
}

void
fmt_pct(char *buf, size_t n, double pct)
{
	if (pct == floor(pct))
		snprintf(buf, n, "%.0f%%", pct);
	else
		snprintf(buf, n, "%g%%", pct);
}

/* "off", "inner 8%", "dex 8%" (cache mode; " · offload auto" with several modes), or "" */
const char *
cache_label(const cell *ce, char *buf, size_t n)
{
	char		p[32];

	if (!cache_mode)
		return "";
	if (ce->policy == DM_CACHE_OFF)
		snprintf(buf, n, "off");
	else
	{
		fmt_pct(p, sizeof(p), ce->pct);
		snprintf(buf, n, "%s %s", policy_names[ce->policy], p);
	}
	/* several --offload modes: each is a row of its own */
	if (noffload_modes > 1)
		snprintf(buf + strlen(buf), n - strlen(buf), " · offload %s", dm_offload_mode_name(ce->offload));
	return buf;
}

/* The stderr line of a measured cell: throughput, latency, reads, the cache. */
static int
report_cell(const cell *ce, int policy)
{
	char		p50[32],
				p99[32];
	int			bad = 0;

	if (ce->done)
	{
		fmt_us(p50, sizeof(p50), ce->p50_ns);
		fmt_us(p99, sizeof(p99), ce->p99_ns);
		fprintf(stderr, "%.0f ops/s, p50 %s µs, p99 %s µs, %.3f reads/op, %.0f B/op",
				ce->ops_per_s, p50, p99, per(ce->ctr.ops[DM_OP_READ], ce->ops),
				per(ce->ctr.bytes_read + ce->ctr.bytes_written, ce->ops));
		if (policy != DM_CACHE_OFF)
			fprintf(stderr, ", hit ratio %.3f (halves %.3f / %.3f), %u frames, warm-up %.1f s%s",
					hit_ratio(&ce->cs, -1), ce->hit_half[0], ce->hit_half[1], ce->nframes,
					ce->warm_s, ce->warm_steady ? "" : " (max)");
	}
	else
	{
		fprintf(stderr, "FAILED: %s", ce->note);
		bad = 1;
	}
	return bad;
}

/* The cell's tree, loaded afresh, and a fresh cache of pct% of its nodes: 0, or -1 (note in ce). */
static int
load_tree_and_cache(int tr, const workload *wl, int dist, cell *ce, int policy, double pct, void **mem, size_t *len)
{
	char		err[480];

	*mem = NULL;
	*len = 0;
	if (create_and_load(tr, &ce->li, err, sizeof(err)) != DM_OK)
	{
		snprintf(ce->note, sizeof(ce->note), "bulk load: %s", err);
		fprintf(stderr, "[%s] %-4s %-7s FAILED: %s\n", transport_names[tr], wl->name, dist_names[dist], ce->note);
		return -1;
	}
	if (policy != DM_CACHE_OFF)
	{
		dm_cache_config cfg;

		memset(&cfg, 0, sizeof(cfg));
		cfg.frame_size = node_size;
		cfg.nframes = frames_for_pct(ce->li.have_stats ? tree_nodes(&ce->li.st) : 0, pct);
		cfg.policy = (dm_cache_policy) policy;
		cfg.leaf_admit_permille = leaf_admit;
		cfg.hop_admit_permille = hop_admit < 0 ? 0 : hop_admit == 0 ? DM_CACHE_HOP_ADMIT_NEVER : (uint32_t) hop_admit;
		cfg.cooling_percent = cooling_pct;
		/* the instance's hotspot buffer, which every client shares (dm_tree_hot.c) */
		cfg.hotspot_entries = hotspot_entries < 0 ? 0 : hotspot_entries == 0 ? DM_CACHE_HOTSPOT_NONE :
			(uint32_t) hotspot_entries;
		*len = dm_cache_shmem_size(&cfg);
		if (*len == 0)
			snprintf(ce->note, sizeof(ce->note), "dm_cache_shmem_size refused %u frames", cfg.nframes);
		else if ((*mem = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		{
			*mem = NULL;
			snprintf(ce->note, sizeof(ce->note), "mmap of a %zu-byte cache: %s", *len, strerror(errno));
		}
		else if ((cur_cache = dm_cache_init(*mem, *len, &cfg)) == NULL)
			snprintf(ce->note, sizeof(ce->note), "dm_cache_init refused %u frames", cfg.nframes);
		ce->nframes = cfg.nframes;
		ce->cache_bytes = *len;
	}
	return 0;
}

/* Verify the tree and the cache of ce's run, drop the tree, unmap the cache: 0 = fine. */
static int
verify_tree_and_cache(int tr, const workload *wl, int dist, cell *ce, void *mem, size_t len)
{
	int			bad = 0;

	verify_and_drop(&ce->ei, ce);
	if (ce->ei.verified < 0)
	{
		fprintf(stderr, "[%s] %-4s %-7s VERIFY FAILED: %s\n", transport_names[tr], wl->name, dist_names[dist],
				ce->ei.msg);
		bad = 1;
	}
	if (ce->cache_verified < 0)
	{
		fprintf(stderr, "[%s] %-4s %-7s CACHE VERIFY FAILED: %s\n", transport_names[tr], wl->name,
				dist_names[dist], ce->cache_msg);
		bad = 1;
	}
	if (mem)
		munmap(mem, len);
	cur_cache = NULL;
	return bad;
}

/*
 * One cache cell: a fresh tree loaded with the same keys, a fresh cache of
 * pct% of its nodes (none for off), the workload, then verification of the
 * tree and of the cache, and the tree dropped.  With several --offload
 * modes the workload runs once per mode, one after the other (each with
 * its own warm-up), so the modes' ratios are taken within a minute of each
 * other: on a shared machine the load swings over minutes.  A read-only
 * workload runs every mode on the same tree and cache; one that writes
 * gets a tree and cache of its own per mode, since it changes what the
 * next mode would find: YCSB e's 5% inserts split the bulk-loaded 90%-full
 * leaves, and the mode after it read 19% more leaves per scan (the order
 * auto,off reversed which of the two looked slower).  0 = fine.
 */
int
run_cache_cell(int tr, const workload *wl, int dist, int policy, double pct)
{
	cell	   *group[3];
	int			ng = noffload_modes;
	int			fresh = wl->pct[K_UPDATE] > 0 || wl->pct[K_INSERT] > 0;
	char		lbl[48];
	void	   *mem = NULL;
	size_t		len = 0;
	int			bad = 0;

	if (ncells + ng > MAX_CELLS)
	{
		fprintf(stderr, "dmbench: more than %d cells; the rest are skipped\n", MAX_CELLS);
		return -1;
	}
	for (int m = 0; m < ng; m++)
	{
		cell	   *ce = group[m] = &cells[ncells++];

		memset(ce, 0, sizeof(*ce));
		ce->wl = wl;
		ce->dist = dist;
		ce->transport = tr;
		ce->policy = policy;
		ce->pct = policy == DM_CACHE_OFF ? 0 : pct;
		ce->offload = offload_modes[m];
	}
	for (int m = 0; m < ng; m++)
	{
		cell	   *ce = group[m];

		if (m == 0 || fresh)
		{
			reset_rows();
			if (load_tree_and_cache(tr, wl, dist, ce, policy, pct, &mem, &len) < 0)
				return -1;
		}
		else
		{
			ce->li = group[0]->li;
			ce->nframes = group[0]->nframes;
			ce->cache_bytes = group[0]->cache_bytes;
		}
		fprintf(stderr, "[%s] %-4s %-7s %-10s ... ", transport_names[tr], wl->name, dist_names[dist],
				cache_label(ce, lbl, sizeof(lbl)));
		if (policy == DM_CACHE_OFF || cur_cache)
		{
			offload_mode = ce->offload;
			run_cell(ce);
		}
		else if (m > 0 && !fresh)
			snprintf(ce->note, sizeof(ce->note), "%s", group[0]->note);
		bad |= report_cell(ce, policy);
		fprintf(stderr, "\n");
		if (fresh)
			bad |= verify_tree_and_cache(tr, wl, dist, ce, mem, len);
	}
	offload_mode = offload_modes[0];
	if (!fresh)
	{
		bad |= verify_tree_and_cache(tr, wl, dist, group[0], mem, len);
		for (int m = 1; m < ng; m++)
		{
			group[m]->ei = group[0]->ei;
			group[m]->cache_verified = group[0]->cache_verified;
			group[m]->cache_checked = group[0]->cache_checked;
			memcpy(group[m]->cache_msg, group[0]->cache_msg, sizeof(group[m]->cache_msg));
		}
	}
	return bad ? -1 : 0;
}

static int
cmp_u64_desc(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x > y ? -1 : x < y;
}

/*
 * Sample lookups of the key generator, count visits per node of an ideal
 * bulk-loaded tree of the loaded shape (leaf = key-order position * leaves
 * / keys; node j of level l-1 under node j * n(l) / n(l-1) of level l), and
 * keep the n most visited nodes: no cache of n frames can serve more
 * visits of independent, identically distributed lookups than that.
 */
void
oracle_compute(const dm_tree_stats *st)
{
	uint64_t   *cnt[16] = {0},
			   *all;
	uint64_t	total = 0,
				leaves = st->nodes[0],
				rng = UINT64_C(0x9E3779B97F4A7C15);
	int			h = st->height,
				d,
				l;

	if (!pos_of_ord || h < 1 || h > 16 || leaves == 0)
		return;
	oracle_height = h;
	oracle_nodes = tree_nodes(st);
	for (l = 0; l < h; l++)
		total += st->nodes[l];
	all = malloc(total * sizeof(uint64_t));
	for (l = 0; l < h; l++)
		cnt[l] = calloc(st->nodes[l] ? st->nodes[l] : 1, sizeof(uint64_t));
	for (d = 0; d < 2 && all; d++)
	{
		int			dist = d == 0 ? DIST_UNIFORM : DIST_ZIPF;
		uint64_t	s,
					k,
					m = 0,
					visits = oracle_samples * (uint64_t) h;
		int			pi;

		if ((dist == DIST_UNIFORM && !dist_uniform) || (dist == DIST_ZIPF && !dist_zipf))
			continue;
		if (dist == DIST_ZIPF && zipf_over_keys && scrambled_zipf.n != n_entries)
			zipf_set(&scrambled_zipf, n_entries, ZIPF_THETA, zeta_add(0, n_entries, ZIPF_THETA, 0));
		for (l = 0; l < h; l++)
			memset(cnt[l], 0, st->nodes[l] * sizeof(uint64_t));
		for (s = 0; s < oracle_samples; s++)
		{
			uint64_t	ord = dist == DIST_ZIPF ?
				fnvhash64(zipf_next(&scrambled_zipf, rand_double(&rng))) % n_entries :
				splitmix64(&rng) % n_entries;

			cnt[0][(uint64_t) pos_of_ord[ord] * leaves / n_entries]++;
		}
		for (l = 1; l < h; l++)
			for (k = 0; k < st->nodes[l - 1]; k++)
				cnt[l][k * st->nodes[l] / st->nodes[l - 1]] += cnt[l - 1][k];
		for (l = 0; l < h; l++)
			for (k = 0; k < st->nodes[l]; k++)
				all[m++] = cnt[l][k];
		qsort(all, m, sizeof(uint64_t), cmp_u64_desc);
		qsort(cnt[0], leaves, sizeof(uint64_t), cmp_u64_desc);
		for (pi = 0; pi < ncache_pcts && noracle < 2 * MAX_PCTS; pi++)
		{
			oracle_row *o = &oracle_rows[noracle++];
			uint64_t	nf = frames_for_pct(oracle_nodes, cache_pcts[pi]),
						hits = 0,
						lh = 0,
						inner = oracle_nodes - leaves;

			o->dist = dist;
			o->pct = cache_pcts[pi];
			o->nframes = (uint32_t) nf;
			for (k = 0; k < nf && k < m; k++)
				hits += all[k];
			for (k = 0; nf > inner && k < nf - inner && k < leaves; k++)
				lh += cnt[0][k];
			o->hit = (double) hits / (double) visits;
			o->reads = (double) (visits - hits) / (double) oracle_samples;
			o->leaf_hit = nf > inner ? (double) lh / (double) oracle_samples : -1;
		}
	}
	for (l = 0; l < h; l++)
		free(cnt[l]);
	free(all);
}
