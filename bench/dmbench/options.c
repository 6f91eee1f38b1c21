/*
 * options.c — dmbench's command line: usage, the list parsers (workloads,
 * transports, policies, sizes) and parse_options, which fills the settings
 * of dmbench.h and derives the defaults that depend on other options.
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

static void
usage(FILE *f)
{
	fprintf(f,
			"usage: dmbench [OPTION]...\n"
			"  --memnode HOST:PORT   use a running memnode (repeatable; shm needs --shm there)\n"
			"                        default: start build/dmindex-memnode --shm here\n"
			"  --region-size SIZE    region of the memnode started here (default 2G)\n"
			"  --memnode-threads N   its worker threads (default 2)\n"
			"  --transport LIST      tcp, shm, ucx or a list (tcp,shm); each gets a fresh tree;\n"
			"                        ucx: the memnode started here also gets --ucx (UCX_TLS picks UCX's transport)\n"
			"  --clients N           client processes (default 2, at most %d)\n"
			"  --entries N           keys bulk-loaded before the workloads (default 1000000; K/M suffixes)\n"
			"  --fillfactor P        bulk-load fill factor, 10..100 (default 90, as btree leaves)\n"
			"  --node-size N         tree node size, 256..4096 (default 1024)\n"
			"  --leaf-format F       sorted (default) or hopscotch (docs/design.md 5.1)\n"
			"  --neighborhood H      hopscotch leaves: the neighbourhood, 2..16 (default 8)\n"
			"  --hotspot N           hopscotch leaves: keys the hotspot buffer remembers (speculative\n"
			"                        reads, 64 B each; 0 = off; default the library's): with a cache\n"
			"                        one buffer in the cache's shared memory for all clients, else\n"
			"                        one per client\n"
			"  --duration SEC        measured seconds per cell (default 10)\n"
			"  --warmup SEC          warm-up per cell (default duration/10, 0.2..2 s; 3 s with --cache-policy)\n"
			"  --warmup-max SEC      with a cache, warm up past --warmup until the hit ratio of a second moves\n"
			"                        less than --warmup-stable from the second before, but at most this (default 15)\n"
			"  --warmup-stable PP    that threshold in percentage points (default 0.5)\n"
			"  --workloads LIST      of load,a,b,c,d,e,i (default load,a,b,c,d,e, in that order;\n"
			"                        i = 50%% read / 50%% insert, DEX's insert-intensive)\n"
			"  --dist uniform|zipf|both   key choice of a, b, c, e (default both)\n"
			"  --no-verify           skip dm_tree_verify at the end of each transport (and cell)\n"
			"  --offload LIST        of off (default), always, auto: clients offload the rest of an\n"
			"                        operation to the memnode at a cache miss (DEX §6; dm_offload.h);\n"
			"                        with several, each cache cell runs them one after the other on the\n"
			"                        same tree and cache, so their ratios come from the same minute\n"
			"  --cache-policy LIST   cache cells: of off,inner,dex (e.g. off,inner,dex); each cell on a\n"
			"                        fresh tree; off = without dm_tree_use_cache; default workloads c,b,a,i,e\n"
			"  --cache-pct LIST      cache sizes, %% of the tree's nodes after the load (default 1,8,100)\n"
			"  --leaf-admit PERMILLE dex: chance that a leaf read is admitted, 0..1000 (default 100 = DEX's 0.1)\n"
			"  --hop-admit PERMILLE  dex: the same for a leaf a hopscotch point lookup missed (it read only a\n"
			"                        neighbourhood), 0..1000 (default the library's)\n"
			"  --cooling-pct P       cooling map capacity, %% of the frames, 1..50 (default 10, as DEX)\n"
			"  --zipf-items ycsb|keys  zipf ranks over 10^10 items (YCSB, default) or over the keys (DEX's bench)\n"
			"  --oracle              also report the best hit ratio any cache of that size could have\n"
			"  --oracle-samples N    lookups sampled for it (default 20M)\n"
			"  --quick               small smoke run: 20000 entries, 1 s per cell, 256M region\n"
			"  --out FILE            also write the markdown tables to FILE\n",
			MAX_CLIENTS);
}

static int
parse_count(const char *s, uint64_t *out)
{
	char	   *end;
	double		v = strtod(s, &end);

	if (end == s || !(v >= 0))
		return -1;
	if (*end == 'k' || *end == 'K')
		v *= 1e3, end++;
	else if (*end == 'm' || *end == 'M')
		v *= 1e6, end++;
	else if (*end == 'g' || *end == 'G')
		v *= 1e9, end++;
	if (*end || v >= (double) (UINT64_C(1) << TID_CLIENT_SHIFT))
		return -1;
	*out = (uint64_t) v;
	return 0;
}

static int
parse_list(const char *s, int (*one) (const char *, size_t))
{
	while (*s)
	{
		size_t		n = strcspn(s, ",");

		if (n == 0 || one(s, n) != 0)
			return -1;
		s += n;
		if (*s == ',')
			s++;
	}
	return 0;
}

static int
add_workload(const char *s, size_t n)
{
	int			i;

	for (i = 0; i < NWORKLOADS; i++)
		if (strlen(workloads[i].name) == n && strncasecmp(s, workloads[i].name, n) == 0)
		{
			if (nworkload_list >= NWORKLOADS)
				return -1;
			workload_list[nworkload_list++] = i;
			return 0;
		}
	return -1;
}

static int
add_transport(const char *s, size_t n)
{
	int			tr;

	if (n == 3 && strncmp(s, "tcp", 3) == 0)
		tr = TR_TCP;
	else if (n == 3 && strncmp(s, "shm", 3) == 0)
		tr = TR_SHM;
	else if (n == 3 && strncmp(s, "ucx", 3) == 0)
		tr = TR_UCX;
	else
		return -1;
	if (ntransports >= 3)
		return -1;
	transports[ntransports++] = tr;
	return 0;
}

static int
add_offload(const char *s, size_t n)
{
	char		w[16];
	int			m;

	if (n >= sizeof(w))
		return -1;
	memcpy(w, s, n);
	w[n] = '\0';
	if ((m = dm_offload_mode_parse(w)) < 0)
		return -1;
	for (int i = 0; i < noffload_modes; i++)
		if (offload_modes[i] == m)
			return -1;
	offload_modes[noffload_modes++] = m;
	return 0;
}

static int
add_policy(const char *s, size_t n)
{
	int			p,
				i;

	for (p = 0; p < 3; p++)
		if (strlen(policy_names[p]) == n && strncasecmp(s, policy_names[p], n) == 0)
			break;
	if (p == 3)
		return -1;
	for (i = 0; i < ncache_policies; i++)
		if (cache_policies[i] == p)
			return -1;
	cache_policies[ncache_policies++] = p;
	return 0;
}

static int
add_pct(const char *s, size_t n)
{
	char		buf[32],
			   *end;
	double		v;

	if (n >= sizeof(buf) || ncache_pcts >= MAX_PCTS)
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '%')
		buf[n - 1] = '\0';
	v = strtod(buf, &end);
	if (*end || !(v > 0) || v > 1000)
		return -1;
	cache_pcts[ncache_pcts++] = v;
	return 0;
}

static double
parse_seconds(const char *opt, const char *s)
{
	char	   *end;
	double		v = strtod(s, &end);

	if (*end || !(v >= 0) || v > 3600)
	{
		fprintf(stderr, "dmbench: bad %s %s\n", opt, s);
		exit(2);
	}
	return v;
}

/* The key distributions a workload runs with: none (load), latest (d), or those asked for. */
int
workload_dists(const workload *wl, int *dists)
{
	int			nd = 0;

	if (wl->keyless)
		dists[nd++] = DIST_NONE;
	else if (wl->latest)
		dists[nd++] = DIST_LATEST;
	else
	{
		if (dist_uniform)
			dists[nd++] = DIST_UNIFORM;
		if (dist_zipf)
			dists[nd++] = DIST_ZIPF;
	}
	return nd;
}

/*
 * The command line into the settings, then the defaults that depend on
 * other options.  Returns -1 to go on, else the exit status (usage shown).
 */
int
parse_options(int argc, char **argv, int *quick)
{
	int			i;

	for (i = 1; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--memnode") == 0 && v)
		{
			if (nmemnode_addrs >= MAX_MEMNODES)
			{
				fprintf(stderr, "dmbench: at most %d memnodes\n", MAX_MEMNODES);
				return 2;
			}
			memnode_addrs[nmemnode_addrs++] = v;
			i++;
		}
		else if (strcmp(a, "--region-size") == 0 && v)
			region_size = argv[++i];
		else if (strcmp(a, "--memnode-threads") == 0 && v)
		{
			memnode_threads = atoi(argv[++i]);
			if (memnode_threads < 1 || memnode_threads > 256)
			{
				fprintf(stderr, "dmbench: bad --memnode-threads\n");
				return 2;
			}
		}
		else if (strcmp(a, "--transport") == 0 && v)
		{
			ntransports = 0;
			if (parse_list(argv[++i], add_transport) != 0)
			{
				fprintf(stderr, "dmbench: bad --transport %s (tcp, shm, ucx or a list)\n", v);
				return 2;
			}
		}
		else if (strcmp(a, "--clients") == 0 && v)
		{
			nclients = atoi(argv[++i]);
			if (nclients < 1 || nclients > MAX_CLIENTS)
			{
				fprintf(stderr, "dmbench: bad --clients (1..%d)\n", MAX_CLIENTS);
				return 2;
			}
		}
		else if (strcmp(a, "--entries") == 0 && v)
		{
			if (parse_count(argv[++i], &n_entries) != 0 || n_entries < 1)
			{
				fprintf(stderr, "dmbench: bad --entries %s\n", v);
				return 2;
			}
		}
		else if (strcmp(a, "--fillfactor") == 0 && v)
		{
			fillfactor = atoi(argv[++i]);
			if (fillfactor < 10 || fillfactor > 100)
			{
				fprintf(stderr, "dmbench: bad --fillfactor (10..100)\n");
				return 2;
			}
		}
		else if (strcmp(a, "--node-size") == 0 && v)
		{
			node_size = (uint32_t) atoi(argv[++i]);
			if (node_size < DM_NODE_MIN || node_size > DM_NODE_MAX ||
				(node_size & (node_size - 1)) != 0)
			{
				fprintf(stderr, "dmbench: bad --node-size (a power of two, %d..%d)\n",
						DM_NODE_MIN, DM_NODE_MAX);
				return 2;
			}
		}
		else if (strcmp(a, "--leaf-format") == 0 && v)
		{
			const char *f = argv[++i];

			if (strcmp(f, "sorted") == 0)
				leaf_format = DM_LEAF_SORTED;
			else if (strcmp(f, "hopscotch") == 0)
				leaf_format = DM_LEAF_HOPSCOTCH;
			else
			{
				fprintf(stderr, "dmbench: bad --leaf-format (sorted or hopscotch)\n");
				return 2;
			}
		}
		else if (strcmp(a, "--hotspot") == 0 && v)
		{
			hotspot_entries = atoi(argv[++i]);
			if (hotspot_entries < 0)
			{
				fprintf(stderr, "dmbench: bad --hotspot (0 or more keys)\n");
				return 2;
			}
		}
		else if (strcmp(a, "--neighborhood") == 0 && v)
		{
			leaf_neighborhood = atoi(argv[++i]);
			if (leaf_neighborhood < 2 || leaf_neighborhood > 16)
			{
				fprintf(stderr, "dmbench: bad --neighborhood (2..16)\n");
				return 2;
			}
		}
		else if (strcmp(a, "--duration") == 0 && v)
		{
			duration_s = parse_seconds(a, argv[++i]);
			if (duration_s <= 0)
			{
				fprintf(stderr, "dmbench: --duration must be > 0\n");
				return 2;
			}
		}
		else if (strcmp(a, "--warmup") == 0 && v)
		{
			warmup_s = parse_seconds(a, argv[++i]);
			warmup_given = 1;
		}
		else if (strcmp(a, "--warmup-max") == 0 && v)
			warmup_max_s = parse_seconds(a, argv[++i]);
		else if (strcmp(a, "--warmup-stable") == 0 && v)
		{
			char	   *end;

			warmup_stable = strtod(argv[++i], &end) / 100.0;
			if (*end || !(warmup_stable > 0) || warmup_stable > 1)
			{
				fprintf(stderr, "dmbench: bad --warmup-stable %s (percentage points, > 0)\n", v);
				return 2;
			}
		}
		else if (strcmp(a, "--offload") == 0 && v)
		{
			noffload_modes = 0;
			if (parse_list(argv[++i], add_offload) != 0 || noffload_modes == 0)
			{
				fprintf(stderr, "dmbench: bad --offload %s (a list of off, always, auto)\n", v);
				return 2;
			}
			offload_mode = offload_modes[0];
		}
		else if (strcmp(a, "--cache-policy") == 0 && v)
		{
			ncache_policies = 0;
			if (parse_list(argv[++i], add_policy) != 0 || ncache_policies == 0)
			{
				fprintf(stderr, "dmbench: bad --cache-policy %s (a list of off, inner, dex)\n", v);
				return 2;
			}
			cache_mode = 1;
		}
		else if (strcmp(a, "--cache-pct") == 0 && v)
		{
			ncache_pcts = 0;
			if (parse_list(argv[++i], add_pct) != 0 || ncache_pcts == 0)
			{
				fprintf(stderr, "dmbench: bad --cache-pct %s (a list of percentages, 0 < P <= 1000)\n", v);
				return 2;
			}
		}
		else if (strcmp(a, "--hop-admit") == 0 && v)
		{
			char	   *end;
			long		x = strtol(argv[++i], &end, 10);

			if (*end || x < 0 || x > 1000)
			{
				fprintf(stderr, "dmbench: bad --hop-admit %s (per mille, 0..1000)\n", v);
				return 2;
			}
			hop_admit = (int) x;
		}
		else if (strcmp(a, "--leaf-admit") == 0 && v)
		{
			char	   *end;
			long		x = strtol(argv[++i], &end, 10);

			if (*end || x < 0 || x > 1000)
			{
				fprintf(stderr, "dmbench: bad --leaf-admit %s (per mille, 0..1000)\n", v);
				return 2;
			}
			leaf_admit = (uint32_t) x;
		}
		else if (strcmp(a, "--cooling-pct") == 0 && v)
		{
			char	   *end;
			long		x = strtol(argv[++i], &end, 10);

			if (*end || x < 1 || x > 50)
			{
				fprintf(stderr, "dmbench: bad --cooling-pct %s (1..50)\n", v);
				return 2;
			}
			cooling_pct = (uint32_t) x;
		}
		else if (strcmp(a, "--zipf-items") == 0 && v)
		{
			i++;
			if (strcmp(v, "keys") == 0)
				zipf_over_keys = 1;
			else if (strcmp(v, "ycsb") == 0)
				zipf_over_keys = 0;
			else
			{
				fprintf(stderr, "dmbench: bad --zipf-items %s (ycsb or keys)\n", v);
				return 2;
			}
		}
		else if (strcmp(a, "--oracle") == 0)
			do_oracle = 1;
		else if (strcmp(a, "--oracle-samples") == 0 && v)
		{
			if (parse_count(argv[++i], &oracle_samples) != 0 || oracle_samples < 1000)
			{
				fprintf(stderr, "dmbench: bad --oracle-samples %s\n", v);
				return 2;
			}
			do_oracle = 1;
		}
		else if (strcmp(a, "--workloads") == 0 && v)
		{
			nworkload_list = 0;
			if (parse_list(argv[++i], add_workload) != 0)
			{
				fprintf(stderr, "dmbench: bad --workloads %s (of load,a,b,c,d,e)\n", v);
				return 2;
			}
		}
		else if (strcmp(a, "--dist") == 0 && v)
		{
			i++;
			dist_uniform = strcmp(v, "uniform") == 0 || strcmp(v, "both") == 0;
			dist_zipf = strcmp(v, "zipf") == 0 || strcmp(v, "both") == 0;
			if (!dist_uniform && !dist_zipf)
			{
				fprintf(stderr, "dmbench: bad --dist %s\n", v);
				return 2;
			}
		}
		else if (strcmp(a, "--no-verify") == 0)
			do_verify = 0;
		else if (strcmp(a, "--quick") == 0)
		{
			*quick = 1;
			n_entries = 20000;
			duration_s = 1.0;
			region_size = "256M";
		}
		else if (strcmp(a, "--out") == 0 && v)
			out_path = argv[++i];
		else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
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
	if (ntransports == 0)
		transports[ntransports++] = TR_SHM;
	if (nworkload_list == 0)
	{
		if (cache_mode)
			/* DEX's Table 1, in its order */
			parse_list("c,b,a,i,e", add_workload);
		else
			parse_list("load,a,b,c,d,e", add_workload);
	}
	if (cache_mode && ncache_pcts == 0)
	{
		cache_pcts[ncache_pcts++] = 1;
		cache_pcts[ncache_pcts++] = 8;
		cache_pcts[ncache_pcts++] = 100;
	}
	if (cache_mode && !warmup_given)
		warmup_s = 3;
	if (warmup_max_s < 0)
		warmup_max_s = cache_mode ? 15 : 0;
	if (warmup_s < 0)
	{
		warmup_s = duration_s / 10;
		if (warmup_s < 0.2)
			warmup_s = 0.2;
		if (warmup_s > 2)
			warmup_s = 2;
	}
	return -1;
}
