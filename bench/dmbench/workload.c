/*
 * workload.c — the state the files of dmbench share (dmbench.h): the workload
 * table and DEX's published Table 2 rows, the settings, the shared mapping,
 * the cells, and the zipfian generator YCSB's ScrambledZipfian and "latest"
 * key choices draw from.
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

const paper_row dex_table2[] = {
	{"DEX (RO)", 'c', 0.33, 0, 0, 0.0002, 333.9},
	{"Sherman (RO)", 'c', 3.02, 0, 0, 0, 1064.69},
	{"SMART (RO)", 'c', 1.44, 0, 0, 0, 996.99},
	{"P-Sherman (RO)", 'c', 1, 0, 0, 0, 1025.04},
	{"P-SMART (RO)", 'c', 1.15, 0, 0, 0, 397.41},
	{"DEX (WI)", 'a', 0.33, 0.19, 0, 0.0001, 524.1},
	{"Sherman (WI)", 'a', 2.71, 0.99, 0.59, 0, 1078.95},
	{"SMART (WI)", 'a', 1.45, 0.11, 0.11, 0, 1002.88},
	{"P-Sherman (WI)", 'a', 1.02, 0.5, 0, 0, 1054.39},
	{"P-SMART (WI)", 'a', 1.16, 0.13, 0, 0, 404.207},
};

const char *const kind_names[K_COUNT] = {"read", "update", "insert", "scan"};

const workload workloads[] = {
	{'l', "load", {0, 0, 100, 0}, 0, 1},
	{'a', "a", {50, 50, 0, 0}, 0, 0},
	{'b', "b", {95, 5, 0, 0}, 0, 0},
	{'c', "c", {100, 0, 0, 0}, 0, 0},
	{'d', "d", {95, 0, 5, 0}, 1, 0},
	{'e', "e", {0, 0, 5, 95}, 0, 0},
	/* DEX's insert-intensive (Table 1): 50% lookup (uniform / zipf) / 50% insert of a new key */
	{'i', "i", {50, 0, 50, 0}, 0, 0},
};

/* DEX's Table 1 name of a workload, for the cache summary. */
const char *
dex_name(char id)
{
	switch (id)
	{
		case 'c':
			return "read-only";
		case 'b':
			return "read-intensive 95/5";
		case 'a':
			return "write-intensive 50/50";
		case 'i':
			return "insert-intensive 50/50";
		case 'l':
			return "insert-only (YCSB load)";
		case 'e':
			return "scan-intensive";
		default:
			return "YCSB latest";
	}
}

const char *const dist_names[] = {"-", "uniform", "zipf", "latest"};

const char *const transport_names[] = {"tcp", "shm", "ucx"};

shared_hdr *sh;

uint64_t *cur_tid;		/* [ord]: the row's current tid; 0 = not inserted yet */

uint64_t ord_cap;		/* capacity of cur_tid */

uint32_t *samples;		/* [client][kind][SAMPLE_CAP], ns */

const char *memnode_addrs[MAX_MEMNODES];

int	nmemnode_addrs;

int	transports[3];

int	ntransports;

int	nclients = 2;

uint64_t n_entries = 1000000;

double duration_s = 10.0;

double warmup_s = -1;	/* < 0: derived from the duration */

double warmup_max_s = -1;	/* with a cache: longest warm-up (< 0: derived) */

double warmup_stable = 0.005;	/* hit ratio change per second that counts as steady */

int	workload_list[NWORKLOADS];

int	nworkload_list;

int	dist_uniform = 1,
			dist_zipf = 1;

uint32_t node_size = 1024;

int	leaf_format = DM_LEAF_SORTED;
int	leaf_neighborhood = 0;

int	hotspot_entries = -1;
int	hop_admit = -1;

int	fillfactor = 90;

const char *region_size = "2G";

int	memnode_threads = 2;

const char *out_path;

int	do_verify = 1;

/* Cache cells (--cache-policy). */
int	cache_mode;

int	offload_mode = DM_OFFLOAD_OFF;	/* --offload: every client handle of the cell running now (dm_offload.h) */
int			offload_modes[3] = {DM_OFFLOAD_OFF};	/* --offload LIST: cache cells run each, back to back */
int			noffload_modes = 1;

int	cache_policies[3];	/* DM_CACHE_OFF / INNER / DEX, in the order given */

int	ncache_policies;

double cache_pcts[MAX_PCTS];

int	ncache_pcts;

uint32_t leaf_admit = 100;	/* DEX's default admission probability, 0.1 */

uint32_t cooling_pct;	/* 0 = dm_cache's default (10%, as DEX) */

int	warmup_given;

int	do_oracle;

uint64_t oracle_samples = 20000000;

/* Zipf over YCSB's 10^10 ranks (0) or over the keys present (1, as DEX's benchmark). */
int	zipf_over_keys;

const char *const policy_names[] = {"off", "inner", "dex"};

/* Set per cell: the cache the clients attach to (NULL = none), inherited by fork. */
dm_cache *cur_cache;

/* Set per transport: the tree every client opens. */
dm_tree_name tree_name;

uint16_t home_node;

/* --oracle: key-order position of each loaded ordinal (set by the first load). */
uint32_t *pos_of_ord;

cell cells[MAX_CELLS];

int	ncells;

oracle_row oracle_rows[2 * MAX_PCTS];

int	noracle;

int	oracle_height;

uint64_t oracle_nodes;

double
zeta_add(uint64_t from, uint64_t to, double theta, double sum)
{
	uint64_t	i;

	for (i = from; i < to; i++)
		sum += 1.0 / pow((double) (i + 1), theta);
	return sum;
}

void
zipf_set(zipf *z, uint64_t n, double theta, double zetan)
{
	z->n = n;
	z->theta = theta;
	z->alpha = 1.0 / (1.0 - theta);
	z->zeta2 = zeta_add(0, 2, theta, 0);
	z->zetan = zetan;
	z->eta = (1 - pow(2.0 / (double) n, 1 - theta)) / (1 - z->zeta2 / zetan);
	z->half_pow = pow(0.5, theta);
}

/* Grow to n items, extending zeta incrementally (as YCSB does for "latest"). */
void
zipf_grow(zipf *z, uint64_t n)
{
	if (n > z->n)
		zipf_set(z, n, z->theta, zeta_add(z->n, n, z->theta, z->zetan));
}

/* The rank generator of ScrambledZipfian: fixed, over 10^10 + 1 items. */
zipf scrambled_zipf;
/* "latest": zipfian over the inserted ordinals, most recent = rank 0. */
zipf latest_zipf;
