/*
 * dmbench.h — what the files of the YCSB benchmark of the remote tree share
 * (bench/dmbench/, built into build/bench/dmbench; main.c says what it
 * measures and how): its limits and constants, the workload and distribution
 * tables, the shared mapping the forked clients report into, the settings
 * parsed from the command line, the cell record of one measured
 * (workload, distribution, transport[, cache]) run, and the inline helpers
 * (random numbers, key mixing, zipfian ranks) the client loop calls per
 * operation.
 */
#ifndef DM_DMBENCH_H
#define DM_DMBENCH_H

#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <sys/types.h>
#include <time.h>

#include "dm_cache.h"
#include "dm_client.h"
#include "dm_offload.h"
#include "dm_tree.h"

#define MAX_CLIENTS		64
#define MAX_MEMNODES	DM_TREE_MAX_MEMNODES
#define MAX_CELLS		256
#define MAX_PCTS		16
/*
 * Latency samples kept per (client, op kind).  Below that every op is kept;
 * above it a uniform random sample (reservoir sampling): 2^19 samples per
 * kind and client give percentiles far more precise than run-to-run noise.
 */
#define SAMPLE_CAP		(1u << 19)
#define LOOKUP_MAX		64		/* tids one read may return */
#define SCAN_MAX		100		/* YCSB maxscanlength */
#define BULK_BATCH		65536	/* entries per dm_bulk_add call */

/* Fresh tids: (client + 1) << TID_CLIENT_SHIFT | sequence; loaded tids are ordinal + 1. */
#define TID_CLIENT_SHIFT 40

/* ---- YCSB constants ------------------------------------------------------ */

#define ZIPF_THETA		0.99
/* ScrambledZipfianGenerator: ranks from a zipfian over 10^10 items ... */
#define YCSB_ITEM_COUNT UINT64_C(10000000000)
/* ... whose zeta(10^10, 0.99) YCSB precomputes as this constant. */
#define YCSB_ZETAN		26.46902820178302

/*
 * DEX (VLDB'24) Table 2: "RDMA statistics per index operation in skewed
 * read-only (RO)/write-intensive (WI) workloads under 144 threads"
 * (/work/shared/papers/dex-vldb24.txt).  RO = 100% lookup (our c, zipf);
 * WI = 50% lookup / 50% update (our a, zipf).  Columns: reads, writes,
 * atomics, two-sided operations, traffic in bytes, per index operation.
 * DEX caches tree nodes on the compute side and Sherman caches inner nodes;
 * without --cache-policy every operation of this tree descends from the
 * root remotely.
 */
typedef struct paper_row
{
	const char *name;
	char		workload;		/* 'c' = RO, 'a' = WI */
	double		reads,
				writes,
				atomics,
				two_sided,
				traffic;
} paper_row;

/* ---- workloads ------------------------------------------------------------- */

enum
{
	K_READ = 0, K_UPDATE, K_INSERT, K_SCAN, K_COUNT
};

typedef struct workload
{
	char		id;				/* 'l' = load, 'a'..'e' */
	const char *name;
	double		pct[K_COUNT];	/* percentages by op kind */
	int			latest;			/* reads pick recent keys (YCSB D) */
	int			keyless;		/* no key choice (load) */
} workload;

/* Entries of workloads[] and dex_table2[] (workload.c; a wrong count does not compile). */
#define NWORKLOADS 7
#define NPAPER_ROWS 10

enum
{
	DIST_NONE = 0, DIST_UNIFORM, DIST_ZIPF, DIST_LATEST
};

enum
{
	TR_TCP = 0, TR_SHM = 1, TR_UCX = 2
};

/* ---- shared state (one MAP_SHARED mapping made before any fork) ------------ */

/* Things a client may see go wrong that are not errors of the call itself. */
typedef struct anomalies
{
	uint64_t	read_miss;		/* a lookup of a published key found no entry ... */
	uint64_t	read_miss_again;	/* ... and a second lookup right after neither */
	uint64_t	insert_existed; /* a fresh (key, tid) was already there */
	uint64_t	delete_missing; /* the previous version of a row was not there */
} anomalies;

typedef struct child_result
{
	int			status;			/* 0 = ok */
	char		err[400];
	uint64_t	ops[K_COUNT];	/* measured operations by kind */
	uint64_t	kept[K_COUNT];	/* samples kept by kind */
	uint64_t	elapsed_ns;
	uint64_t	warm_ops;		/* operations of the warm-up */
	uint64_t	scanned;		/* entries returned by scans */
	dm_counters ctr;			/* client counters over the window */
	dm_tree_counters tctr;		/* tree counters over the window */
	dm_offload_counters octr;	/* offload counters over the window */
	anomalies	anom;
} child_result;

typedef struct shared_hdr
{
	uint64_t	next_ord;		/* next key ordinal to insert (FAA) */
	uint32_t	warm_stop;		/* set by the parent: warm-up may end (after warmup_s) */
	uint64_t	tid_seq[MAX_CLIENTS];	/* per client index: fresh-tid sequence */
	child_result res[MAX_CLIENTS];
} shared_hdr;

/* ---- small helpers ------------------------------------------------------------ */

static inline uint64_t
splitmix64(uint64_t *s)
{
	uint64_t	z = (*s += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static inline double
rand_double(uint64_t *s)
{
	return (double) (splitmix64(s) >> 11) * 0x1.0p-53;
}

/*
 * Key of an ordinal: a bijective 64-bit mix (xor-shift-multiply steps are
 * invertible), so distinct ordinals give distinct keys spread uniformly over
 * the key space, which is what makes inserts hit random leaves.
 */
static inline uint64_t
key_of(uint64_t ord)
{
	uint64_t	z = ord + UINT64_C(0x632BE59BD9B4E019);

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* YCSB's Utils.fnvhash64, including Math.abs on the signed result. */
static inline uint64_t
fnvhash64(uint64_t val)
{
	uint64_t	h = UINT64_C(0xCBF29CE484222325);
	int			i;
	int64_t		s;

	for (i = 0; i < 8; i++)
	{
		h ^= val & 0xff;
		val >>= 8;
		h *= UINT64_C(1099511628211);
	}
	s = (int64_t) h;
	return s < 0 ? (uint64_t) 0 - (uint64_t) s : (uint64_t) s;
}

/* ---- zipfian (YCSB ZipfianGenerator, Gray et al.'s method) -------------------- */

typedef struct zipf
{
	uint64_t	n;				/* items: ranks 0..n-1 */
	double		theta,
				alpha,
				zeta2,
				zetan,
				eta,
				half_pow;
} zipf;

/* Adds 1/i^theta for i = from+1 .. to to sum. */
/* ---- cells ------------------------------------------------------------------------ */

typedef struct load_info
{
	double		gen_s,
				load_s;
	dm_tree_stats st;
	int			have_stats;
	dm_counters ctr;
} load_info;

typedef struct end_info
{
	int			verified;		/* 1 ok, -1 failed, 0 not run */
	char		msg[768];
	uint64_t	entries;
	uint64_t	expected;
	double		verify_s;
	dm_tree_stats st;
	int			have_stats;
} end_info;

typedef struct cell
{
	const workload *wl;
	int			dist;
	int			transport;
	int			done;
	char		note[512];
	uint64_t	ops;
	uint64_t	kops[K_COUNT];
	double		ops_per_s;
	double		p50_ns,
				p99_ns;
	double		kp50_ns[K_COUNT],
				kp99_ns[K_COUNT];
	dm_counters ctr;			/* summed over clients */
	dm_tree_counters tctr;
	dm_offload_counters octr;
	anomalies	anom;
	uint64_t	scanned;
	uint64_t	nkeys;			/* ordinals at the start */
	double		others_cpu;		/* share of all CPUs other processes used, -1 unknown */
	uint64_t	warm_ops;		/* warm-up operations, all clients */
	double		warm_s;			/* warm-up length (from fork to all clients ready) */
	int			warm_steady;	/* the hit ratio settled before warmup_max_s */

	/* cache cells (cache_mode) */
	int			policy;			/* DM_CACHE_OFF / INNER / DEX */
	double		pct;			/* cache size, % of the tree's nodes after the load */
	uint32_t	nframes;
	size_t		cache_bytes;	/* shared memory of the cache */
	dm_cache_stats cs;			/* counter deltas over the measured window */
	dm_cache_stats cs_end;		/* frames in use etc. at the end */
	double		hit_half[2];	/* hit ratio over each half of the window, -1 unknown */
	load_info	li;				/* this cell's fresh load */
	end_info	ei;				/* and the tree after it */
	int			cache_verified; /* 1 ok, -1 failed, 0 not run */
	int			offload;		/* DM_OFFLOAD_* the clients used */
	uint64_t	cache_checked;	/* frames dm_tree_verify_cache compared */
	char		cache_msg[400];
} cell;

/* ---- --oracle: the best any cache of n frames could do for lookups --------------------- */

typedef struct oracle_row
{
	int			dist;
	double		pct;
	uint32_t	nframes;
	double		hit;			/* of all node visits of a lookup descent */
	double		reads;			/* remote node reads per lookup left over */
	double		leaf_hit;		/* of leaf visits, leaves getting the frames inner nodes leave */
} oracle_row;

/* ---- shared state (each explained where it is defined, in this folder's .c files) ---- */

extern char notes[1 << 17];
extern const paper_row dex_table2[NPAPER_ROWS];
extern const char *const kind_names[K_COUNT];
extern const workload workloads[NWORKLOADS];
extern const char *const dist_names[];
extern const char *const transport_names[];
extern shared_hdr *sh;
extern uint64_t *cur_tid;
extern uint64_t ord_cap;
extern uint32_t *samples;
extern const char *memnode_addrs[MAX_MEMNODES];
extern int nmemnode_addrs;
extern int transports[3];
extern int ntransports;
extern int nclients;
extern uint64_t n_entries;
extern double duration_s;
extern double warmup_s;
extern double warmup_max_s;
extern double warmup_stable;
extern int workload_list[NWORKLOADS];
extern int nworkload_list;
extern int dist_uniform;
extern int dist_zipf;
extern uint32_t node_size;
extern int	leaf_format;		/* --leaf-format: DM_LEAF_SORTED or DM_LEAF_HOPSCOTCH */
extern int	leaf_neighborhood;	/* --neighborhood (hopscotch; 0 = the tree's default) */
extern int	hop_admit;		/* --hop-admit (per mille; < 0 = the library's default) */
extern int	hotspot_entries;	/* --hotspot (hopscotch; < 0 = the library's default) */
extern int fillfactor;
extern const char *region_size;
extern int memnode_threads;
extern const char *out_path;
extern int do_verify;
extern int cache_mode;
extern int offload_mode;
extern int offload_modes[3];
extern int noffload_modes;
extern int cache_policies[3];
extern int ncache_policies;
extern double cache_pcts[MAX_PCTS];
extern int ncache_pcts;
extern uint32_t leaf_admit;
extern uint32_t cooling_pct;
extern int warmup_given;
extern int do_oracle;
extern uint64_t oracle_samples;
extern int zipf_over_keys;
extern const char *const policy_names[];
extern dm_cache *cur_cache;
extern dm_tree_name tree_name;
extern uint16_t home_node;
extern uint32_t *pos_of_ord;
extern cell cells[MAX_CELLS];
extern int ncells;
extern oracle_row oracle_rows[2 * MAX_PCTS];
extern int noracle;
extern int oracle_height;
extern uint64_t oracle_nodes;
extern zipf scrambled_zipf;
extern zipf latest_zipf;
extern pid_t memnode_pid;
extern long clk_tck;

/* ---- functions shared between the files of this folder ---- */

extern const char *dex_name(char id);
extern double zeta_add(uint64_t from, uint64_t to, double theta, double sum);
extern void zipf_set(zipf *z, uint64_t n, double theta, double zetan);
extern void zipf_grow(zipf *z, uint64_t n);
extern void child_main(const workload *wl, int dist, int transport, int idx, uint64_t nkeys, int ready_fd, int go_fd);
extern double hit_ratio(const dm_cache_stats *s, int level);
extern uint64_t cache_sum(const uint64_t *v);
extern void run_cell(cell *ce);
extern int create_and_load(int transport, load_info *li, char *err, size_t errsz);
extern void verify_and_drop(end_info *ei, cell *ce);
extern uint64_t tree_nodes(const dm_tree_stats *st);
extern void fmt_pct(char *buf, size_t n, double pct);
extern const char *cache_label(const cell *ce, char *buf, size_t n);
extern int run_cache_cell(int tr, const workload *wl, int dist, int policy, double pct);
extern void oracle_compute(const dm_tree_stats *st);
extern void fmt_us(char *buf, size_t sz, double ns);
extern double per(uint64_t x, uint64_t ops);
extern void print_all(FILE *f, const char *notes);
extern int workload_dists(const workload *wl, int *dists);
extern int parse_options(int argc, char **argv, int *quick);

static inline uint64_t
zipf_next(const zipf *z, double u)
{
	double		uz = u * z->zetan;
	uint64_t	r;

	if (uz < 1.0)
		return 0;
	if (uz < 1.0 + z->half_pow)
		return 1;
	r = (uint64_t) ((double) z->n * pow(z->eta * u - z->eta + 1, z->alpha));
	return r >= z->n ? z->n - 1 : r;
}

/* Where the samples of (client, op kind) are kept in the shared mapping. */
static inline uint32_t *
sample_slot(int client, int kind)
{
	return samples + ((size_t) client * K_COUNT + (size_t) kind) * SAMPLE_CAP;
}

#endif
