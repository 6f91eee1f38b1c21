/*
 * dmbench.c — YCSB-style benchmark of the remote B-link tree (src/dm/dm_tree.h)
 * with no PostgreSQL: what one index operation costs in throughput, latency
 * and remote operations, measured the way DEX (VLDB'24, §8 and Table 2) and
 * CHIME (SOSP'24, §5) measure their trees.
 *
 * Setup.  A tree is created on the first memnode and bulk-loaded with
 * --entries keys (fill factor --fillfactor); then each (workload,
 * distribution) cell runs for --duration seconds on --clients forked client
 * processes, each with its own dm_client (tcp or shm backend) and its own
 * dm_tree_open_existing() handle.  All cells of one transport share that
 * tree, in the order given (as YCSB runs its workloads one after another on
 * one loaded database); each transport starts from a freshly loaded tree.
 *
 * Workloads (YCSB core workloads, as used by CHIME; DEX's Table 1 names in
 * brackets):
 *   load  100% insert of fresh keys into the loaded tree
 *   a     50% read / 50% update                         [write-intensive]
 *   b     95% read / 5% update                          [read-intensive]
 *   c     100% read                                     [read-only]
 *   d     95% read of recently inserted keys / 5% insert  (YCSB "latest")
 *   e     95% scan of 1..100 entries (uniform) / 5% insert [scan-intensive]
 *   i     50% read / 50% insert                         [insert-intensive]
 *         (not YCSB; DEX's Table 1 row, whose reads do choose keys)
 * Key choice: uniform, or YCSB's ScrambledZipfian (θ = 0.99 over 10^10
 * ranks, FNV-hashed onto the key space so that hot keys are spread over the
 * tree rather than packed into a few leaves).  load has no key choice (every
 * key is new) and d always uses "latest", so those run once per transport.
 *
 * Mapping onto an index of (key, tid) entries:
 *   read    dm_tree_lookup(key): every tid of the key.
 *   update  what PostgreSQL does to an index when a row gets a new version
 *           (non-HOT UPDATE, then VACUUM): dm_tree_insert(key, fresh tid),
 *           then dm_tree_delete(key, previous tid).  The insert comes first
 *           and the row's current tid is swapped atomically in a table
 *           shared by all clients, so a key is never absent from the tree,
 *           and at rest it has exactly one entry (checked at the end).  One
 *           update is therefore two tree operations, where DEX's and
 *           Sherman's "update" rewrites a value in place: keep that in mind
 *           when comparing rows.
 *   insert  a new key: the next ordinal of a counter shared by the clients.
 *   scan    dm_iter over [key, +inf) taking up to N entries.
 * Keys are ordinals run through a 64-bit bijective mixer, so inserts land
 * all over the tree (as with YCSB's hashed keys) and keys never collide.
 *
 * Reported per cell: throughput (sum over clients), p50/p99 latency (µs,
 * from per-op samples of all clients; per op kind in a second table), and
 * per operation the deltas of dm_client_counters over the measured window:
 * round trips, remote READs, WRITEs, atomics (CAS + FAA + fetch-or), RPCs,
 * payload bytes read / written and socket bytes; and the tree's own
 * counters (node reads, read retries, lock retries, splits, restarts).
 * Those are the columns of DEX's Table 2, whose published rows are printed
 * next to ours.  Each cell also reports the share of the machine's CPUs
 * that other processes took meanwhile: on a small shared machine that,
 * more than anything in the tree, is what moves throughput between runs.
 * At the end of each transport, dm_tree_verify must pass and the tree must
 * hold exactly one entry per row (no update or insert lost or duplicated).
 *
 * By default one memnode is started here (build/dmindex-memnode --shm
 * --size REGION --threads 2 on 127.0.0.1) and stopped at the end.
 *
 * Cache cells (--cache-policy LIST; DEX §5 and §8, dm_cache.h).  With that
 * option every cell measures the compute-side node cache: for each
 * transport, workload and distribution, in this order,
 *     off, then for each --cache-pct P (in the order given):
 *         each listed policy other than off (inner, then dex),
 * and every one of those cells starts from a FRESHLY LOADED tree (the same
 * --entries keys, so the same shape) and, unless it is off, a fresh cache:
 * a MAP_SHARED | MAP_ANONYMOUS mapping made and dm_cache_init()ed in the
 * parent before the clients fork, of
 *     nframes = max(16, (tree nodes after the load) * P / 100)
 * frames of node size, i.e. P% of the tree's remote bytes right after the
 * load (the tree grows during insert and update workloads; the cache does
 * not).  Every client calls dm_tree_use_cache(handle, cache, 0): one
 * compute instance, which owns the whole key space (no partition map is
 * stored), so leaves are cacheable and written under the frame's local
 * lock.  Policy off does NOT call dm_tree_use_cache at all: it is the plain
 * path of the cells above, run once per (workload, distribution) since the
 * cache size does not matter to it.  A fresh load per cell makes the cells
 * comparable although update and insert workloads grow the tree, and keeps
 * one cell's cache-warmth or tree growth from leaking into the next.
 *
 * Each cache cell warms up with its own workload for --warmup seconds
 * (default in this mode: 3 s; not measured; the clients' warm-up ops are
 * reported) so that the measured window sees the cache in steady state;
 * the hit ratio is reported over the whole window and over each half of
 * it, which shows whether it was still moving.  Per cell: throughput,
 * p50/p99, the per-op transport counters as above, and from dm_cache_stats
 * deltas over the window (all clients share the cache): hit ratio = hits
 * / (hits + misses) of node reads that went through the cache (also by
 * leaf / inner level), hits, evictions and admissions per op, and the
 * frames in use at the end.  At the end of each cache cell dm_tree_verify
 * (one entry per row) and dm_tree_verify_cache (every cached owned node
 * identical to remote memory) must pass.  A summary per workload puts the
 * policies side by side with ratios to off from the same run, next to
 * DEX's published Table 2 (DEX: 4 compute servers, 256 MB cache each =
 * ~8% of the whole tree, but each server only touches the quarter of the
 * keys it owns).  --oracle adds the best hit ratio any cache of that many
 * frames could have for lookups (the hottest nodes, counted from samples
 * of the same key generator), a floor for reads/op of workload c.
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

static const paper_row dex_table2[] = {
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

/* ---- workloads ------------------------------------------------------------- */

enum
{
	K_READ = 0, K_UPDATE, K_INSERT, K_SCAN, K_COUNT
};
static const char *const kind_names[K_COUNT] = {"read", "update", "insert", "scan"};

typedef struct workload
{
	char		id;				/* 'l' = load, 'a'..'e' */
	const char *name;
	double		pct[K_COUNT];	/* percentages by op kind */
	int			latest;			/* reads pick recent keys (YCSB D) */
	int			keyless;		/* no key choice (load) */
} workload;

static const workload workloads[] = {
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
static const char *
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
#define NWORKLOADS ((int) (sizeof(workloads) / sizeof(workloads[0])))

enum
{
	DIST_NONE = 0, DIST_UNIFORM, DIST_ZIPF, DIST_LATEST
};
static const char *const dist_names[] = {"-", "uniform", "zipf", "latest"};

enum
{
	TR_TCP = 0, TR_SHM = 1, TR_UCX = 2
};
static const char *const transport_names[] = {"tcp", "shm", "ucx"};

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

static shared_hdr *sh;
static uint64_t *cur_tid;		/* [ord]: the row's current tid; 0 = not inserted yet */
static uint64_t ord_cap;		/* capacity of cur_tid */
static uint32_t *samples;		/* [client][kind][SAMPLE_CAP], ns */

static inline uint32_t *
sample_slot(int client, int kind)
{
	return samples + ((size_t) client * K_COUNT + (size_t) kind) * SAMPLE_CAP;
}

/* ---- settings --------------------------------------------------------------- */

static const char *memnode_addrs[MAX_MEMNODES];
static int	nmemnode_addrs;
static int	transports[3];
static int	ntransports;
static int	nclients = 2;
static uint64_t n_entries = 1000000;
static double duration_s = 10.0;
static double warmup_s = -1;	/* < 0: derived from the duration */
static double warmup_max_s = -1;	/* with a cache: longest warm-up (< 0: derived) */
static double warmup_stable = 0.005;	/* hit ratio change per second that counts as steady */
static int	workload_list[NWORKLOADS];
static int	nworkload_list;
static int	dist_uniform = 1,
			dist_zipf = 1;
static uint32_t node_size = 1024;
static int	fillfactor = 90;
static const char *region_size = "2G";
static int	memnode_threads = 2;
static const char *out_path;
static int	do_verify = 1;

/* Cache cells (--cache-policy). */
static int	cache_mode;
static int	offload_mode = DM_OFFLOAD_OFF;	/* --offload: every client handle (dm_offload.h) */
static int	cache_policies[3];	/* DM_CACHE_OFF / INNER / DEX, in the order given */
static int	ncache_policies;
static double cache_pcts[MAX_PCTS];
static int	ncache_pcts;
static uint32_t leaf_admit = 100;	/* DEX's default admission probability, 0.1 */
static uint32_t cooling_pct;	/* 0 = dm_cache's default (10%, as DEX) */
static int	warmup_given;
static int	do_oracle;
static uint64_t oracle_samples = 20000000;
/* Zipf over YCSB's 10^10 ranks (0) or over the keys present (1, as DEX's benchmark). */
static int	zipf_over_keys;
static const char *const policy_names[] = {"off", "inner", "dex"};

/* Set per cell: the cache the clients attach to (NULL = none), inherited by fork. */
static dm_cache *cur_cache;

/* Set per transport: the tree every client opens. */
static dm_tree_name tree_name;
static uint16_t home_node;

/* ---- small helpers ------------------------------------------------------------ */

static inline uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

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
static double
zeta_add(uint64_t from, uint64_t to, double theta, double sum)
{
	uint64_t	i;

	for (i = from; i < to; i++)
		sum += 1.0 / pow((double) (i + 1), theta);
	return sum;
}

static void
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
static void
zipf_grow(zipf *z, uint64_t n)
{
	if (n > z->n)
		zipf_set(z, n, z->theta, zeta_add(z->n, n, z->theta, z->zetan));
}

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

/* The rank generator of ScrambledZipfian: fixed, over 10^10 + 1 items. */
static zipf scrambled_zipf;
/* "latest": zipfian over the inserted ordinals, most recent = rank 0. */
static zipf latest_zipf;

/* ---- the client process --------------------------------------------------------- */

typedef struct worker
{
	int			idx;
	const workload *wl;
	int			dist;
	dm_client  *c;
	dm_tree    *t;
	uint64_t	rng;
	uint64_t	nkeys;			/* key space for uniform / zipf: ordinals at cell start */
	uint64_t	tids[LOOKUP_MAX];
	child_result *r;
	anomalies	anom;
	uint64_t	scanned;
} worker;

static void
child_fail(child_result *r, int status, const char *what, worker *w)
{
	r->status = status ? status : -1;
	snprintf(r->err, sizeof(r->err), "%s: %s%s%s%s%s", what,
			 status > 0 ? dm_strerror(status) : (status < 0 ? dm_strerror(-status) : "failed"),
			 w && w->t ? " — tree: " : "", w && w->t ? dm_tree_error(w->t) : "",
			 w && w->c ? " — client: " : "", w && w->c ? dm_client_error(w->c) : "");
}

static inline uint64_t
fresh_tid(worker *w)
{
	/* Only client idx touches its slot: no atomics needed. */
	return ((uint64_t) (w->idx + 1) << TID_CLIENT_SHIFT) | ++sh->tid_seq[w->idx];
}

/*
 * An ordinal to read / update / scan from.  Uniform and zipf choose among
 * the ordinals that existed when the cell started (YCSB fixes its key
 * chooser's range the same way); latest among all inserted so far.  An
 * ordinal whose insert is still in flight (claimed, not yet published) is
 * replaced by the next older one, as YCSB's acknowledged counter would.
 */
static inline uint64_t
choose_ord(worker *w)
{
	uint64_t	ord;

	switch (w->dist)
	{
		case DIST_ZIPF:
			ord = fnvhash64(zipf_next(&scrambled_zipf, rand_double(&w->rng))) % w->nkeys;
			break;
		case DIST_LATEST:
			{
				uint64_t	n = __atomic_load_n(&sh->next_ord, __ATOMIC_ACQUIRE);

				zipf_grow(&latest_zipf, n);
				ord = n - 1 - zipf_next(&latest_zipf, rand_double(&w->rng));
				break;
			}
		default:
			ord = splitmix64(&w->rng) % w->nkeys;
			break;
	}
	while (ord > 0 && __atomic_load_n(&cur_tid[ord], __ATOMIC_ACQUIRE) == 0)
		ord--;
	return ord;
}

static inline int
pick_kind(worker *w)
{
	double		u = rand_double(&w->rng) * 100.0,
				acc = 0;
	int			k;

	for (k = 0; k < K_COUNT - 1; k++)
	{
		acc += w->wl->pct[k];
		if (u < acc && w->wl->pct[k] > 0)
			return k;
	}
	return K_SCAN;
}

/*
 * One operation of kind k.  The ordinal is chosen by the caller before the
 * clock starts, so latency covers only the tree operation(s).  Returns
 * DM_OK or a status; *what names the call that failed.
 */
static int
do_op(worker *w, int k, uint64_t ord, const char **what)
{
	int			st,
				existed = 0;
	uint64_t	key = key_of(ord);

	switch (k)
	{
		case K_READ:
			{
				int			n = 0;

				*what = "dm_tree_lookup";
				st = dm_tree_lookup(w->t, key, w->tids, LOOKUP_MAX, &n);
				if (st == DM_OK && n == 0)
				{
					/*
					 * Every published key has an entry at every instant, but
					 * a lookup reads one leaf after the other, and it is only
					 * guaranteed to see entries present for its whole
					 * duration.  When a key's versions straddle a leaf
					 * boundary, concurrent updates can move its one entry
					 * from the leaf not yet read to the one already read.
					 * Look again: a second miss would be a real loss.
					 */
					w->anom.read_miss++;
					st = dm_tree_lookup(w->t, key, w->tids, LOOKUP_MAX, &n);
					if (st == DM_OK && n == 0)
						w->anom.read_miss_again++;
				}
				return st;
			}
		case K_UPDATE:
			{
				uint64_t	tid = fresh_tid(w),
							old;

				*what = "dm_tree_insert (update)";
				st = dm_tree_insert(w->t, dm_entry_make(key, tid), &existed);
				if (st != DM_OK)
					return st;
				if (existed)
					w->anom.insert_existed++;
				/* Publish, and take over the job of deleting the version it replaces. */
				old = __atomic_exchange_n(&cur_tid[ord], tid, __ATOMIC_ACQ_REL);
				*what = "dm_tree_delete (update)";
				existed = 0;
				st = dm_tree_delete(w->t, dm_entry_make(key, old), &existed);
				if (st == DM_OK && !existed)
					w->anom.delete_missing++;
				return st;
			}
		case K_INSERT:
			{
				uint64_t	tid = fresh_tid(w);

				*what = "dm_tree_insert";
				st = dm_tree_insert(w->t, dm_entry_make(key, tid), &existed);
				if (st != DM_OK)
					return st;
				if (existed)
					w->anom.insert_existed++;
				__atomic_store_n(&cur_tid[ord], tid, __ATOMIC_RELEASE);
				return DM_OK;
			}
		case K_SCAN:
			{
				dm_range	rg;
				dm_iter    *it = NULL;
				dm_entry	e;
				int			len = 1 + (int) (splitmix64(&w->rng) % SCAN_MAX),
							i,
							rc = 1;

				rg.lo = dm_key_lo(key, 1);
				rg.lo_incl = 1;
				rg.hi = DM_ENTRY_INF;
				rg.hi_incl = 0;
				rg.backward = 0;
				if (offload_mode != DM_OFFLOAD_OFF)
				{
					/* up to len entries in one offload where the policy says so */
					dm_entry	out[SCAN_MAX],
								resume;
					int			n = 0,
								more = 0;

					*what = "dm_tree_offload_scan";
					st = dm_tree_offload_scan(w->t, rg.lo, 1, DM_ENTRY_INF, 0, out, len, &n, &more, &resume);
					w->scanned += (uint64_t) n;
					return st;
				}
				*what = "dm_iter_open";
				st = dm_iter_open(w->t, &rg, &it);
				if (st != DM_OK)
					return st;
				*what = "dm_iter_next";
				for (i = 0; i < len && (rc = dm_iter_next(it, &e)) == 1; i++)
					w->scanned++;
				dm_iter_close(it);
				return rc < 0 ? -rc : DM_OK;
			}
	}
	return DM_ERR_INTERNAL;
}

/* Claims the ordinal of an insert (before the clock starts, like a key choice). */
static inline int
prepare(worker *w, int k, uint64_t *ord)
{
	if (k == K_INSERT)
	{
		*ord = __atomic_fetch_add(&sh->next_ord, 1, __ATOMIC_ACQ_REL);
		if (*ord >= ord_cap)
			return DM_ERR_NOSPACE;
	}
	else
		*ord = choose_ord(w);
	return DM_OK;
}

static int
writen(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0)
	{
		ssize_t		wr = write(fd, p, n);

		if (wr < 0 && errno == EINTR)
			continue;
		if (wr <= 0)
			return -1;
		p += wr;
		n -= (size_t) wr;
	}
	return 0;
}

static void
counters_sub(dm_counters *a, const dm_counters *b)
{
	int			i;

	a->round_trips -= b->round_trips;
	a->rpcs -= b->rpcs;
	for (i = 0; i <= DM_OP_KIND_MAX; i++)
		a->ops[i] -= b->ops[i];
	a->bytes_read -= b->bytes_read;
	a->bytes_written -= b->bytes_written;
	a->wire_bytes_sent -= b->wire_bytes_sent;
	a->wire_bytes_recv -= b->wire_bytes_recv;
}

static void
tcounters_sub(dm_tree_counters *a, const dm_tree_counters *b)
{
	a->node_reads -= b->node_reads;
	a->read_retries -= b->read_retries;
	a->lock_retries -= b->lock_retries;
	a->lock_takeovers -= b->lock_takeovers;
	a->splits -= b->splits;
	a->root_grows -= b->root_grows;
	a->restarts -= b->restarts;
}

/*
 * Body of one client process.  ready_fd: one byte once connected and warmed
 * up; EOF on go_fd starts the measured window in all clients at once.
 */
static void
child_main(const workload *wl, int dist, int transport, int idx, uint64_t nkeys,
		   int ready_fd, int go_fd)
{
	child_result *r = &sh->res[idx];
	worker		w;
	dm_client_opts opts;
	dm_counters c0;
	dm_tree_counters t0;
	dm_offload_counters o0;
	uint64_t	t_start,
				t_end,
				t_now,
				warm_min,
				warm_max,
				nseen[K_COUNT] = {0};
	const char *what = "";
	char		ch;
	int			st,
				i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	memset(r, 0, sizeof(*r));
	memset(&w, 0, sizeof(w));
	w.idx = idx;
	w.wl = wl;
	w.dist = dist;
	w.nkeys = nkeys ? nkeys : 1;
	w.r = r;
	w.rng = UINT64_C(0x243F6A8885A308D3) ^ ((uint64_t) getpid() << 20) ^ mono_ns();

	memset(&opts, 0, sizeof(opts));
	opts.backend = transport == TR_SHM ? DM_BACKEND_SHM :
		transport == TR_UCX ? DM_BACKEND_UCX : DM_BACKEND_TCP;
	opts.name = "dmbench";
	w.c = dm_client_create(&opts);
	if (!w.c)
	{
		child_fail(r, DM_ERR_NOMEM, "dm_client_create", NULL);
		_exit(1);
	}
	for (i = 0; i < nmemnode_addrs; i++)
	{
		uint16_t	id;

		st = dm_client_connect(w.c, memnode_addrs[i], &id);
		if (st != DM_OK)
		{
			child_fail(r, st, "dm_client_connect", &w);
			_exit(1);
		}
	}
	st = dm_tree_open_existing(w.c, home_node, &tree_name, &w.t);
	if (st != DM_OK)
	{
		w.t = NULL;
		child_fail(r, st, "dm_tree_open_existing", &w);
		_exit(1);
	}
	/* Cache cells: join compute instance 0 with the parent's cache (off: no call at all). */
	if ((st = dm_tree_set_offload(w.t, offload_mode)) != DM_OK)
	{
		child_fail(r, st, "dm_tree_set_offload", &w);
		_exit(1);
	}
	if (cur_cache && (st = dm_tree_use_cache(w.t, cur_cache, 0)) != DM_OK)
	{
		child_fail(r, st, "dm_tree_use_cache", &w);
		_exit(1);
	}

	/*
	 * Warm-up with the cell's own mix: page faults of the shm mapping, the
	 * memnode threads' first wakeups, CPU caches, allocator state.
	 */
	/* at least warmup_s; then until the parent says the cache is steady, or warmup_max_s */
	warm_min = mono_ns() + (uint64_t) (warmup_s * 1e9);
	warm_max = mono_ns() + (uint64_t) ((warmup_max_s > warmup_s ? warmup_max_s : warmup_s) * 1e9);
	do
	{
		int			k = pick_kind(&w);
		uint64_t	ord;

		st = prepare(&w, k, &ord);
		if (st == DM_OK)
			st = do_op(&w, k, ord, &what);
		else
			what = "ordinal table full (raise capacity)";
		if (st != DM_OK)
		{
			child_fail(r, st, what, &w);
			_exit(1);
		}
		r->warm_ops++;
		t_now = mono_ns();
	} while (t_now < warm_min ||
			 (t_now < warm_max && !__atomic_load_n(&sh->warm_stop, __ATOMIC_ACQUIRE)));
	memset(&w.anom, 0, sizeof(w.anom));
	w.scanned = 0;

	if (writen(ready_fd, "r", 1) != 0)
		_exit(1);
	close(ready_fd);
	while (read(go_fd, &ch, 1) < 0 && errno == EINTR)
		;
	close(go_fd);

	/* Counters are snapshotted, not reset: the window is the difference. */
	dm_client_counters(w.c, -1, &c0);
	dm_tree_get_counters(w.t, &t0);
	dm_tree_offload_counters(w.t, &o0);
	t_start = mono_ns();
	t_end = t_start + (uint64_t) (duration_s * 1e9);
	do
	{
		int			k = pick_kind(&w);
		uint64_t	ord,
					t_op,
					d;
		uint32_t	s;

		st = prepare(&w, k, &ord);
		if (st != DM_OK)
		{
			child_fail(r, st, "ordinal table full (raise capacity)", &w);
			_exit(1);
		}
		t_op = mono_ns();
		st = do_op(&w, k, ord, &what);
		t_now = mono_ns();
		if (st != DM_OK)
		{
			child_fail(r, st, what, &w);
			_exit(1);
		}
		d = t_now - t_op;
		s = d > UINT32_MAX ? UINT32_MAX : (uint32_t) d;
		if (nseen[k] < SAMPLE_CAP)
			sample_slot(idx, k)[nseen[k]] = s;
		else
		{
			/* Algorithm R: every op ends up in the sample with equal probability. */
			uint64_t	j = splitmix64(&w.rng) % (nseen[k] + 1);

			if (j < SAMPLE_CAP)
				sample_slot(idx, k)[j] = s;
		}
		nseen[k]++;
	} while (t_now < t_end);

	r->elapsed_ns = t_now - t_start;
	dm_client_counters(w.c, -1, &r->ctr);
	counters_sub(&r->ctr, &c0);
	dm_tree_get_counters(w.t, &r->tctr);
	tcounters_sub(&r->tctr, &t0);
	{
		dm_offload_counters o1;

		dm_tree_offload_counters(w.t, &o1);
		r->octr.offloads = o1.offloads - o0.offloads;
		r->octr.fallbacks = o1.fallbacks - o0.fallbacks;
		r->octr.decided_offload = o1.decided_offload - o0.decided_offload;
		r->octr.decided_local = o1.decided_local - o0.decided_local;
		r->octr.explored = o1.explored - o0.explored;
		r->octr.rpc_ns_avg = o1.rpc_ns_avg;
		r->octr.read_ns_avg = o1.read_ns_avg;
		r->octr.memnode_busy_pct = o1.memnode_busy_pct;
	}
	for (i = 0; i < K_COUNT; i++)
	{
		r->ops[i] = nseen[i];
		r->kept[i] = nseen[i] < SAMPLE_CAP ? nseen[i] : SAMPLE_CAP;
	}
	r->anom = w.anom;
	r->scanned = w.scanned;
	dm_tree_close(w.t);
	dm_client_destroy(w.c);
	r->status = 0;
	_exit(0);
}

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

/* ---- cells ------------------------------------------------------------------------ */

/* --oracle: key-order position of each loaded ordinal (set by the first load). */
static uint32_t *pos_of_ord;

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
	uint64_t	cache_checked;	/* frames dm_tree_verify_cache compared */
	char		cache_msg[400];
} cell;

static cell cells[MAX_CELLS];
static int	ncells;

/*
 * CPU accounting, to tell how much of the machine other processes took
 * during a cell (this benchmark shares its 2 CPUs with test runs): busy
 * time of all CPUs from /proc/stat, minus what our clients (reaped
 * children) and the memnode started here used.
 */
static pid_t memnode_pid;		/* started here, else 0 */
static long clk_tck;

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

	m->wall = (double) mono_ns() / 1e9;
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
static double
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

static uint64_t
cache_sum(const uint64_t *v)
{
	uint64_t	x = 0;
	int			l;

	for (l = 0; l < DM_CACHE_LEVELS; l++)
		x += v[l];
	return x;
}

static void
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
	t_fork = t_sample = mono_ns();
	for (i = 0; i < nclients; i++)
	{
		pids[i] = fork();
		if (pids[i] < 0)
		{
			snprintf(ce->note, sizeof(ce->note), "fork: %s", strerror(errno));
			pids[i] = 0;
			kill_children(pids, nclients);
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
		uint64_t	now = mono_ns();
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
	ce->warm_s = (double) (mono_ns() - t_fork) / 1e9;
	if (nready < nclients)
	{
		usleep(100000);			/* let a failing child finish its message */
		close(go[1]);
		kill_children(pids, nclients);
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
	t_go = mono_ns();
	close(go[1]);

	/* Reap, never hanging on a client stuck on a dead memnode or a lost lock. */
	deadline = mono_ns() + (uint64_t) (duration_s * 1e9) + UINT64_C(60000000000);
	for (i = 0; i < nclients; i++)
	{
		int			wst = 0;

		for (;;)
		{
			pid_t		r;

			if (cur_cache && !have_mid && mono_ns() >= t_go + (uint64_t) (duration_s * 0.5e9))
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
			if (mono_ns() > deadline)
			{
				kill_children(pids, nclients);
				snprintf(ce->note, sizeof(ce->note), "client %d hung (killed)", i);
				return;
			}
			usleep(5000);
		}
		if (wst != 0 || sh->res[i].status != 0)
		{
			kill_children(pids, nclients);
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

/* ---- setup and teardown of the tree (parent) ------------------------------------- */

static int
connect_all(dm_client **out, uint16_t *ids, char *err, size_t errsz)
{
	dm_client_opts opts;
	dm_client  *c;
	int			i,
				st;

	memset(&opts, 0, sizeof(opts));
	/* Setup and verify are not measured: whatever is fastest. */
	opts.backend = DM_BACKEND_AUTO;
	opts.name = "dmbench-setup";
	/* Verify walks the whole tree; give the memnode time on tcp. */
	opts.op_timeout_ms = 60000;
	c = dm_client_create(&opts);
	if (!c)
	{
		snprintf(err, errsz, "dm_client_create failed");
		return DM_ERR_NOMEM;
	}
	for (i = 0; i < nmemnode_addrs; i++)
	{
		st = dm_client_connect(c, memnode_addrs[i], &ids[i]);
		if (st != DM_OK)
		{
			snprintf(err, errsz, "connect %s: %s (%s)", memnode_addrs[i],
					 dm_strerror(st), dm_client_error(c));
			dm_client_destroy(c);
			return st;
		}
	}
	*out = c;
	return DM_OK;
}

static int
cmp_entry(const void *a, const void *b)
{
	return dm_entry_cmp(*(const dm_entry *) a, *(const dm_entry *) b);
}

/* LSD radix sort by key (keys are distinct), 16 bits per pass; falls back to qsort. */
static void
sort_entries(dm_entry *e, uint64_t n)
{
	dm_entry   *tmp = malloc(n * sizeof(dm_entry));
	size_t	   *cnt;
	int			pass;

	cnt = malloc(65536 * sizeof(size_t));
	if (!tmp || !cnt)
	{
		free(tmp);
		free(cnt);
		qsort(e, n, sizeof(dm_entry), cmp_entry);
		return;
	}
	for (pass = 0; pass < 4; pass++)
	{
		int			shift = pass * 16;
		size_t		sum = 0;
		uint64_t	i;
		dm_entry   *src = (pass % 2 == 0) ? e : tmp,
				   *dst = (pass % 2 == 0) ? tmp : e;

		memset(cnt, 0, 65536 * sizeof(size_t));
		for (i = 0; i < n; i++)
			cnt[(src[i].key >> shift) & 0xFFFF]++;
		for (i = 0; i < 65536; i++)
		{
			size_t		c = cnt[i];

			cnt[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[cnt[(src[i].key >> shift) & 0xFFFF]++] = src[i];
	}
	/* Four passes: the result is back in e. */
	free(tmp);
	free(cnt);
}

/* Create the tree for this transport and bulk-load n_entries keys into it. */
static int
create_and_load(int transport, load_info *li, char *err, size_t errsz)
{
	dm_client  *c = NULL;
	uint16_t	ids[MAX_MEMNODES];
	dm_tree_opts topts;
	dm_tree    *t = NULL;
	dm_bulk    *b = NULL;
	dm_entry   *e;
	uint64_t	i,
				t0;
	int			st;

	memset(li, 0, sizeof(*li));
	st = connect_all(&c, ids, err, errsz);
	if (st != DM_OK)
		return st;
	home_node = ids[0];
	memset(&tree_name, 0, sizeof(tree_name));
	tree_name.kind = DM_TREE_NAMED;
	snprintf(tree_name.name, sizeof(tree_name.name), "dmbench-%d-%s",
			 (int) getpid(), transport_names[transport]);

	memset(&topts, 0, sizeof(topts));
	topts.node_size = node_size;
	if (nmemnode_addrs > 1)
	{
		topts.nmemnodes = nmemnode_addrs;
		for (i = 0; i < (uint64_t) nmemnode_addrs; i++)
			topts.memnodes[i] = ids[i];
	}
	st = dm_tree_create_new(c, home_node, &tree_name, &topts, &t);
	if (st != DM_OK)
	{
		snprintf(err, errsz, "dm_tree_create_new: %s (%s)", dm_strerror(st), dm_client_error(c));
		dm_client_destroy(c);
		return st;
	}

	/* Ordinals 0..n-1 with tid ordinal+1, sorted by key for the bulk load. */
	t0 = mono_ns();
	e = malloc((n_entries ? n_entries : 1) * sizeof(dm_entry));
	if (!e)
	{
		snprintf(err, errsz, "out of memory for %" PRIu64 " entries", n_entries);
		dm_tree_destroy(t);
		dm_client_destroy(c);
		return DM_ERR_NOMEM;
	}
	for (i = 0; i < n_entries; i++)
	{
		e[i] = dm_entry_make(key_of(i), i + 1);
		cur_tid[i] = i + 1;
	}
	sort_entries(e, n_entries);
	li->gen_s = (double) (mono_ns() - t0) / 1e9;
	/* --oracle: where each loaded key sits in key order (hence in which leaf) */
	if (do_oracle && pos_of_ord == NULL && n_entries < UINT32_MAX &&
		(pos_of_ord = malloc(n_entries * sizeof(uint32_t))) != NULL)
		for (i = 0; i < n_entries; i++)
			pos_of_ord[e[i].tid - 1] = (uint32_t) i;

	dm_client_reset_counters(c);
	t0 = mono_ns();
	st = dm_tree_bulk_begin(t, fillfactor, &b);
	for (i = 0; st == DM_OK && i < n_entries; i += BULK_BATCH)
	{
		uint64_t	m = n_entries - i < BULK_BATCH ? n_entries - i : BULK_BATCH;

		st = dm_bulk_add(b, e + i, (int) m);
	}
	if (st == DM_OK)
	{
		st = dm_bulk_finish(b);
		b = NULL;
	}
	li->load_s = (double) (mono_ns() - t0) / 1e9;
	dm_client_counters(c, -1, &li->ctr);
	free(e);
	if (st != DM_OK)
	{
		snprintf(err, errsz, "bulk load: %s (%s; %s)", dm_strerror(st), dm_tree_error(t),
				 dm_client_error(c));
		if (b)
			dm_bulk_abort(b);
		dm_tree_destroy(t);
		dm_client_destroy(c);
		return st;
	}
	sh->next_ord = n_entries;
	if (dm_tree_stats_get(t, &li->st) == DM_OK)
		li->have_stats = 1;
	/* Disconnect: an idle connection should not hold a memnode thread's attention. */
	dm_tree_close(t);
	dm_client_destroy(c);
	return DM_OK;
}

/* Verify the tree (and that each row has exactly one entry), then drop it. */
static void
verify_and_drop(end_info *ei, cell *ce)
{
	dm_client  *c = NULL;
	uint16_t	ids[MAX_MEMNODES];
	dm_tree    *t = NULL;
	char		err[512];
	int			st;
	uint64_t	t0;

	memset(ei, 0, sizeof(*ei));
	if (connect_all(&c, ids, err, sizeof(err)) != DM_OK)
	{
		ei->verified = -1;
		snprintf(ei->msg, sizeof(ei->msg), "%s", err);
		return;
	}
	st = dm_tree_open_existing(c, home_node, &tree_name, &t);
	if (st != DM_OK)
	{
		ei->verified = -1;
		snprintf(ei->msg, sizeof(ei->msg), "dm_tree_open_existing: %s", dm_strerror(st));
		dm_client_destroy(c);
		return;
	}
	if (dm_tree_stats_get(t, &ei->st) == DM_OK)
		ei->have_stats = 1;
	if (do_verify)
	{
		t0 = mono_ns();
		st = dm_tree_verify(t, &ei->entries, err, sizeof(err));
		ei->verify_s = (double) (mono_ns() - t0) / 1e9;
		ei->expected = sh->next_ord;
		if (st != DM_OK)
		{
			ei->verified = -1;
			snprintf(ei->msg, sizeof(ei->msg), "dm_tree_verify: %s: %s", dm_strerror(st), err);
		}
		else if (ei->entries != ei->expected)
		{
			ei->verified = -1;
			snprintf(ei->msg, sizeof(ei->msg),
					 "tree has %" PRIu64 " entries, expected %" PRIu64 " (one per row)",
					 ei->entries, ei->expected);
		}
		else
			ei->verified = 1;
	}
	/* Every cached node of an owned range must be identical to remote memory. */
	if (ce && cur_cache && do_verify)
	{
		char		msg[400] = "";

		st = dm_tree_use_cache(t, cur_cache, 0);
		if (st == DM_OK)
			st = dm_tree_verify_cache(t, &ce->cache_checked, msg, sizeof(msg));
		ce->cache_verified = st == DM_OK ? 1 : -1;
		if (st != DM_OK)
			snprintf(ce->cache_msg, sizeof(ce->cache_msg), "dm_tree_verify_cache: %s: %s",
					 dm_strerror(st), msg[0] ? msg : dm_tree_error(t));
	}
	st = dm_tree_destroy(t);
	if (st != DM_OK)
		fprintf(stderr, "dmbench: dm_tree_destroy: %s\n", dm_strerror(st));
	dm_client_destroy(c);
}

/* ---- output ------------------------------------------------------------------------ */

static void
fmt_us(char *buf, size_t sz, double ns)
{
	double		us = ns / 1000.0;

	if (us < 10.0)
		snprintf(buf, sz, "%.2f", us);
	else if (us < 1000.0)
		snprintf(buf, sz, "%.1f", us);
	else
		snprintf(buf, sz, "%.0f", us);
}

static double
per(uint64_t x, uint64_t ops)
{
	return ops ? (double) x / (double) ops : 0;
}

static uint64_t
atomics_of(const dm_counters *c)
{
	return c->ops[DM_OP_CAS] + c->ops[DM_OP_FAA] + c->ops[DM_OP_FETCH_OR];
}

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

static uint64_t
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

static void
fmt_pct(char *buf, size_t n, double pct)
{
	if (pct == floor(pct))
		snprintf(buf, n, "%.0f%%", pct);
	else
		snprintf(buf, n, "%g%%", pct);
}

/* "off", "inner 8%", "dex 8%" (cache mode), or "" */
static const char *
cache_label(const cell *ce, char *buf, size_t n)
{
	char		p[32];

	if (!cache_mode)
		return "";
	if (ce->policy == DM_CACHE_OFF)
		return "off";
	fmt_pct(p, sizeof(p), ce->pct);
	snprintf(buf, n, "%s %s", policy_names[ce->policy], p);
	return buf;
}

/*
 * One cache cell: a fresh tree loaded with the same keys, a fresh cache of
 * pct% of its nodes (none for off), the workload, then verification of the
 * tree and of the cache, and the tree dropped.  0 = fine.
 */
static int
run_cache_cell(int tr, const workload *wl, int dist, int policy, double pct)
{
	cell	   *ce;
	char		err[480],
				lbl[48],
				p50[32],
				p99[32];
	void	   *mem = NULL;
	size_t		len = 0;
	int			bad = 0;

	if (ncells >= MAX_CELLS)
	{
		fprintf(stderr, "dmbench: more than %d cells; the rest are skipped\n", MAX_CELLS);
		return -1;
	}
	ce = &cells[ncells++];
	memset(ce, 0, sizeof(*ce));
	ce->wl = wl;
	ce->dist = dist;
	ce->transport = tr;
	ce->policy = policy;
	ce->pct = policy == DM_CACHE_OFF ? 0 : pct;
	fprintf(stderr, "[%s] %-4s %-7s %-10s ... ", transport_names[tr], wl->name, dist_names[dist],
			cache_label(ce, lbl, sizeof(lbl)));

	reset_rows();
	if (create_and_load(tr, &ce->li, err, sizeof(err)) != DM_OK)
	{
		snprintf(ce->note, sizeof(ce->note), "bulk load: %s", err);
		fprintf(stderr, "FAILED: %s\n", ce->note);
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
		cfg.cooling_percent = cooling_pct;
		len = dm_cache_shmem_size(&cfg);
		if (len == 0)
			snprintf(ce->note, sizeof(ce->note), "dm_cache_shmem_size refused %u frames", cfg.nframes);
		else if ((mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		{
			mem = NULL;
			snprintf(ce->note, sizeof(ce->note), "mmap of a %zu-byte cache: %s", len, strerror(errno));
		}
		else if ((cur_cache = dm_cache_init(mem, len, &cfg)) == NULL)
			snprintf(ce->note, sizeof(ce->note), "dm_cache_init refused %u frames", cfg.nframes);
		ce->nframes = cfg.nframes;
		ce->cache_bytes = len;
	}
	if (policy == DM_CACHE_OFF || cur_cache)
		run_cell(ce);
	verify_and_drop(&ce->ei, ce);
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
	if (ce->ei.verified < 0)
	{
		fprintf(stderr, "; VERIFY FAILED: %s", ce->ei.msg);
		bad = 1;
	}
	if (ce->cache_verified < 0)
	{
		fprintf(stderr, "; CACHE VERIFY FAILED: %s", ce->cache_msg);
		bad = 1;
	}
	fprintf(stderr, "\n");
	if (mem)
		munmap(mem, len);
	cur_cache = NULL;
	return bad ? -1 : 0;
}

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

static oracle_row oracle_rows[2 * MAX_PCTS];
static int	noracle;
static int	oracle_height;
static uint64_t oracle_nodes;

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
static void
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


static void
print_main_table(FILE *f)
{
	int			i;

	fprintf(f, "| workload | dist | transport |%s ops/s | p50 µs | p99 µs | round trips/op | "
			"reads/op | writes/op | atomics/op | RPCs/op | B read/op | B written/op | wire B/op | "
			"read retries/op | lock retries/op | splits/op | CPU used by others |\n",
			cache_mode ? " cache |" : "");
	fprintf(f, "|---|---|---|%s---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
			cache_mode ? "---|" : "");
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		char		p50[32],
					p99[32],
					oth[32] = "?",
					lbl[48],
					cc[64] = "";
		uint64_t	n = ce->ops;

		if (cache_mode)
			snprintf(cc, sizeof(cc), " %s |", cache_label(ce, lbl, sizeof(lbl)));
		if (!ce->done)
		{
			fprintf(f, "| %s | %s | %s |%s FAILED | | | | | | | | | | | | | | |\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], cc);
			continue;
		}
		fmt_us(p50, sizeof(p50), ce->p50_ns);
		fmt_us(p99, sizeof(p99), ce->p99_ns);
		if (ce->others_cpu >= 0)
			snprintf(oth, sizeof(oth), "%.0f%%", 100 * ce->others_cpu);
		fprintf(f, "| %s | %s | %s |%s %.0f | %s | %s | %.2f | %.2f | %.2f | %.2f | %.4f | %.0f | %.0f | %.0f | %.4f | %.4f | %.4f | %s |\n",
				ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], cc,
				ce->ops_per_s, p50, p99,
				per(ce->ctr.round_trips, n),
				per(ce->ctr.ops[DM_OP_READ], n),
				per(ce->ctr.ops[DM_OP_WRITE], n),
				per(atomics_of(&ce->ctr), n),
				per(ce->ctr.rpcs, n),
				per(ce->ctr.bytes_read, n),
				per(ce->ctr.bytes_written, n),
				per(ce->ctr.wire_bytes_sent + ce->ctr.wire_bytes_recv, n),
				per(ce->tctr.read_retries, n),
				per(ce->tctr.lock_retries, n),
				per(ce->tctr.splits, n), oth);
	}
}

static void
print_kind_table(FILE *f)
{
	int			i,
				k;

	fprintf(f, "| workload | dist | transport |%s op | ops | share | p50 µs | p99 µs |\n",
			cache_mode ? " cache |" : "");
	fprintf(f, "|---|---|---|%s---|---:|---:|---:|---:|\n", cache_mode ? "---|" : "");
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		char		lbl[48],
					cc[64] = "";

		if (!ce->done)
			continue;
		if (cache_mode)
			snprintf(cc, sizeof(cc), " %s |", cache_label(ce, lbl, sizeof(lbl)));
		for (k = 0; k < K_COUNT; k++)
		{
			char		p50[32],
						p99[32];

			if (ce->kops[k] == 0)
				continue;
			fmt_us(p50, sizeof(p50), ce->kp50_ns[k]);
			fmt_us(p99, sizeof(p99), ce->kp99_ns[k]);
			fprintf(f, "| %s | %s | %s |%s %s | %" PRIu64 " | %.1f%% | %s | %s |\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], cc,
					kind_names[k], ce->kops[k], 100.0 * (double) ce->kops[k] / (double) ce->ops,
					p50, p99);
		}
	}
}

static void
print_tree_table(FILE *f)
{
	int			i;

	fprintf(f, "| workload | dist | transport |%s ops | node reads/op | read retries/op | "
			"lock retries/op | lock takeovers | splits/op | root grows | restarts/op | entries/scan |\n",
			cache_mode ? " cache |" : "");
	fprintf(f, "|---|---|---|%s---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", cache_mode ? "---|" : "");
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		uint64_t	n = ce->ops;
		char		scan[32] = "—",
					lbl[48],
					cc[64] = "";

		if (!ce->done)
			continue;
		if (cache_mode)
			snprintf(cc, sizeof(cc), " %s |", cache_label(ce, lbl, sizeof(lbl)));
		if (ce->kops[K_SCAN])
			snprintf(scan, sizeof(scan), "%.1f", per(ce->scanned, ce->kops[K_SCAN]));
		fprintf(f, "| %s | %s | %s |%s %" PRIu64 " | %.2f | %.4f | %.4f | %" PRIu64 " | %.4f | %" PRIu64 " | %.4f | %s |\n",
				ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], cc, n,
				per(ce->tctr.node_reads, n), per(ce->tctr.read_retries, n),
				per(ce->tctr.lock_retries, n), ce->tctr.lock_takeovers,
				per(ce->tctr.splits, n), ce->tctr.root_grows,
				per(ce->tctr.restarts, n), scan);
	}
}

/* Offload counters per cell (--offload). */
static void
print_offload_table(FILE *f)
{
	fprintf(f, "| workload | dist | transport |%s ops | offloads/op | fallbacks/op | decided offload | "
			"decided one-sided | explored | RPCs/op | round trips/op | RPC µs (avg) | read µs (avg) | memnode busy |\n",
			cache_mode ? " cache |" : "");
	fprintf(f, "|---|---|---|%s---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", cache_mode ? "---|" : "");
	for (int i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		uint64_t	n = ce->ops;
		char		lbl[48],
					cc[64] = "";

		if (!ce->done)
			continue;
		if (cache_mode)
			snprintf(cc, sizeof(cc), " %s |", cache_label(ce, lbl, sizeof(lbl)));
		fprintf(f, "| %s | %s | %s |%s %" PRIu64 " | %.3f | %.3f | %" PRIu64 " | %" PRIu64 " | %" PRIu64
				" | %.3f | %.3f | %.1f | %.1f | %" PRIu64 "%% |\n",
				ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], cc, n,
				per(ce->octr.offloads, n), per(ce->octr.fallbacks, n), ce->octr.decided_offload,
				ce->octr.decided_local, ce->octr.explored, per(ce->ctr.rpcs, n), per(ce->ctr.round_trips, n),
				ce->octr.rpc_ns_avg / 1e3, ce->octr.read_ns_avg / 1e3, ce->octr.memnode_busy_pct);
	}
}

/*
 * Our zipf rows of c (RO) and a (WI) next to DEX's Table 2.  Traffic: READ +
 * WRITE payload plus 8 B per atomic (what an RDMA NIC would move; the
 * paper does not spell out its definition).  Two-sided = our RPCs.
 */
static void
print_paper_table(FILE *f)
{
	int			i,
				j,
				any = 0;

	for (i = 0; i < ncells; i++)
		if (cells[i].done && cells[i].dist == DIST_ZIPF &&
			(cells[i].wl->id == 'a' || cells[i].wl->id == 'c'))
			any = 1;
	if (!any)
		return;
	fprintf(f, "\nPer index operation, next to DEX (VLDB'24) Table 2 (skewed, 144 threads, RDMA; "
			"published numbers quoted as they are):\n\n");
	fprintf(f, "| index | workload | reads | writes | atomics | two-sided (RPCs) | traffic B |\n");
	fprintf(f, "|---|---|---:|---:|---:|---:|---:|\n");
	for (j = 0; j < 2; j++)
	{
		char		wid = j == 0 ? 'c' : 'a';
		size_t		p;

		for (p = 0; p < sizeof(dex_table2) / sizeof(dex_table2[0]); p++)
			if (dex_table2[p].workload == wid)
				fprintf(f, "| %s (paper) | %s | %.2f | %.2f | %.2f | %.4f | %.1f |\n",
						dex_table2[p].name, wid == 'c' ? "RO" : "WI",
						dex_table2[p].reads, dex_table2[p].writes, dex_table2[p].atomics,
						dex_table2[p].two_sided, dex_table2[p].traffic);
		for (i = 0; i < ncells; i++)
		{
			cell	   *ce = &cells[i];
			uint64_t	n = ce->ops;
			char		lbl[48],
						cc[64] = "";

			if (!ce->done || ce->dist != DIST_ZIPF || ce->wl->id != wid)
				continue;
			if (cache_mode)
				snprintf(cc, sizeof(cc), ", cache %s", cache_label(ce, lbl, sizeof(lbl)));
			fprintf(f, "| **dmindex, %s%s** (YCSB %c, zipf, %d clients) | %s | %.2f | %.2f | %.2f | %.4f | %.1f |\n",
					transport_names[ce->transport], cc, wid, nclients, wid == 'c' ? "RO" : "WI",
					per(ce->ctr.ops[DM_OP_READ], n), per(ce->ctr.ops[DM_OP_WRITE], n),
					per(atomics_of(&ce->ctr), n), per(ce->ctr.rpcs, n),
					per(ce->ctr.bytes_read + ce->ctr.bytes_written + 8 * atomics_of(&ce->ctr), n));
		}
	}
}

/* The off cell of the same transport, workload and distribution (ratios are taken to it). */
static const cell *
off_cell_of(const cell *ce)
{
	int			i;

	for (i = 0; i < ncells; i++)
	{
		const cell *o = &cells[i];

		if (o->done && o->policy == DM_CACHE_OFF && o->transport == ce->transport &&
			o->wl == ce->wl && o->dist == ce->dist)
			return o;
	}
	return NULL;
}

static void
fmt_ratio(char *buf, size_t n, double a, double b, const char *fmt)
{
	if (b > 0)
		snprintf(buf, n, fmt, a / b);
	else
		snprintf(buf, n, "—");
}

static void
fmt_hit(char *buf, size_t n, double r)
{
	if (r < 0)
		snprintf(buf, n, "—");
	else
		snprintf(buf, n, "%.3f", r);
}

/*
 * Per (transport, workload): the policies side by side, with ratios to the
 * off cell of the same run, and DEX's Table 2 rows for c (RO) and a (WI).
 */
static void
print_cache_summary(FILE *f)
{
	int			i,
				j;

	for (i = 0; i < ncells; i++)
	{
		const cell *first = &cells[i];
		int			seen = 0;
		size_t		p;

		for (j = 0; j < i; j++)
			if (cells[j].transport == first->transport && cells[j].wl == first->wl)
				seen = 1;
		if (seen)
			continue;
		fprintf(f, "\n**%s — %s** (%s, %d clients, %" PRIu64 " keys loaded per cell):\n\n",
				first->wl->name, dex_name(first->wl->id), transport_names[first->transport],
				nclients, n_entries);
		fprintf(f, "| dist | policy | cache | frames | ops/s | ops/s ÷ off | reads/op | reads ÷ off | "
				"B/op (read + written) | B ÷ off | atomics/op | hit ratio | leaf hit ratio |\n");
		fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
		for (j = i; j < ncells; j++)
		{
			const cell *ce = &cells[j];
			const cell *off;
			char		pc[32] = "—",
						fr[32] = "—",
						r1[32],
						r2[32],
						r3[32],
						h[32],
						lh[32];
			uint64_t	n = ce->ops;
			double		bytes;

			if (ce->transport != first->transport || ce->wl != first->wl)
				continue;
			if (!ce->done)
			{
				fprintf(f, "| %s | %s | | | FAILED | | | | | | | | |\n", dist_names[ce->dist],
						policy_names[ce->policy]);
				continue;
			}
			off = off_cell_of(ce);
			bytes = per(ce->ctr.bytes_read + ce->ctr.bytes_written, n);
			if (ce->policy != DM_CACHE_OFF)
			{
				fmt_pct(pc, sizeof(pc), ce->pct);
				snprintf(fr, sizeof(fr), "%u", ce->nframes);
			}
			if (off)
			{
				fmt_ratio(r1, sizeof(r1), ce->ops_per_s, off->ops_per_s, "%.2f");
				fmt_ratio(r2, sizeof(r2), per(ce->ctr.ops[DM_OP_READ], n),
						  per(off->ctr.ops[DM_OP_READ], off->ops), "%.3f");
				fmt_ratio(r3, sizeof(r3), bytes,
						  per(off->ctr.bytes_read + off->ctr.bytes_written, off->ops), "%.3f");
			}
			else
			{
				snprintf(r1, sizeof(r1), "—");
				snprintf(r2, sizeof(r2), "—");
				snprintf(r3, sizeof(r3), "—");
			}
			fmt_hit(h, sizeof(h), ce->policy == DM_CACHE_OFF ? -1 : hit_ratio(&ce->cs, -1));
			fmt_hit(lh, sizeof(lh), ce->policy == DM_CACHE_OFF ? -1 : hit_ratio(&ce->cs, 0));
			fprintf(f, "| %s | %s | %s | %s | %.0f | %s | %.3f | %s | %.0f | %s | %.3f | %s | %s |\n",
					dist_names[ce->dist], ce->policy == DM_CACHE_DEX ? "**dex**" : policy_names[ce->policy],
					pc, fr, ce->ops_per_s, r1, per(ce->ctr.ops[DM_OP_READ], n), r2, bytes, r3,
					per(atomics_of(&ce->ctr), n), h, lh);
		}
		for (p = 0; p < sizeof(dex_table2) / sizeof(dex_table2[0]); p++)
			if (dex_table2[p].workload == first->wl->id)
				fprintf(f, "| zipf | %s (paper, Table 2) | %s | | | | %.2f | | %.1f¹ | | %.2f | | |\n",
						dex_table2[p].name,
						strncmp(dex_table2[p].name, "DEX", 3) == 0 ? "256 MB ≈ 8%" : "",
						dex_table2[p].reads, dex_table2[p].traffic, dex_table2[p].atomics);
	}
	fprintf(f, "\n¹ DEX's \"traffic\" per operation; ours is READ + WRITE payload (atomics move 8 B more each).\n");
}

static void
print_cache_table(FILE *f)
{
	int			i;

	fprintf(f, "| workload | dist | transport | cache | frames | cache MB | ops/s | p50 µs | p99 µs | "
			"round trips/op | reads/op | writes/op | atomics/op | B read/op | B written/op | "
			"cache hits/op | hit ratio | 1st / 2nd half | leaf hit ratio | inner hit ratio | "
			"admissions/op | leaf admissions skipped/op | evictions/op | no frame/op | "
			"frames used at end (inner + leaf) | warm-up | tree MB load → end | checks | CPU used by others |\n");
	fprintf(f, "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
			"---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
	for (i = 0; i < ncells; i++)
	{
		const cell *ce = &cells[i];
		uint64_t	n = ce->ops;
		char		lbl[48],
					p50[32],
					p99[32],
					oth[32] = "?",
					h[32],
					h1[32],
					h2[32],
					lh[32],
					ih[32],
					chk[160],
					tmb[64] = "?",
					wu[64];
		int			cached = ce->policy != DM_CACHE_OFF;
		uint64_t	inner_used = 0;
		int			l;

		if (!ce->done)
		{
			fprintf(f, "| %s | %s | %s | %s | FAILED: %s |||||||||||||||||||||||||\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport],
					cache_label(ce, lbl, sizeof(lbl)), ce->note);
			continue;
		}
		fmt_us(p50, sizeof(p50), ce->p50_ns);
		fmt_us(p99, sizeof(p99), ce->p99_ns);
		if (ce->others_cpu >= 0)
			snprintf(oth, sizeof(oth), "%.0f%%", 100 * ce->others_cpu);
		snprintf(wu, sizeof(wu), "%.1f s%s, %.2fM ops", ce->warm_s,
				 cached && !ce->warm_steady ? " (max)" : "", (double) ce->warm_ops / 1e6);
		fmt_hit(h, sizeof(h), cached ? hit_ratio(&ce->cs, -1) : -1);
		fmt_hit(h1, sizeof(h1), cached ? ce->hit_half[0] : -1);
		fmt_hit(h2, sizeof(h2), cached ? ce->hit_half[1] : -1);
		fmt_hit(lh, sizeof(lh), cached ? hit_ratio(&ce->cs, 0) : -1);
		fmt_hit(ih, sizeof(ih), cached ? hit_ratio(&ce->cs, -2) : -1);
		for (l = 1; l < DM_CACHE_LEVELS; l++)
			inner_used += ce->cs_end.frames_used[l];
		if (ce->ei.verified > 0)
			snprintf(chk, sizeof(chk), "tree ok%s", "");
		else if (ce->ei.verified < 0)
			snprintf(chk, sizeof(chk), "**tree FAILED**");
		else
			snprintf(chk, sizeof(chk), "tree not verified");
		if (cached && ce->cache_verified > 0)
			snprintf(chk + strlen(chk), sizeof(chk) - strlen(chk), ", cache ok (%" PRIu64 " frames)",
					 ce->cache_checked);
		else if (cached && ce->cache_verified < 0)
			snprintf(chk + strlen(chk), sizeof(chk) - strlen(chk), ", **cache FAILED**");
		if (ce->li.have_stats && ce->ei.have_stats)
			snprintf(tmb, sizeof(tmb), "%.1f → %.1f", (double) ce->li.st.remote_bytes / 1e6,
					 (double) ce->ei.st.remote_bytes / 1e6);
		if (cached)
			fprintf(f, "| %s | %s | %s | %s | %u | %.1f | %.0f | %s | %s | %.2f | %.3f | %.3f | %.3f | %.0f | %.0f | "
					"%.3f | %s | %s / %s | %s | %s | %.4f | %.4f | %.4f | %.4f | %" PRIu64 " + %" PRIu64 " | %s | %s | %s | %s |\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport],
					cache_label(ce, lbl, sizeof(lbl)), ce->nframes, (double) ce->cache_bytes / 1048576.0,
					ce->ops_per_s, p50, p99, per(ce->ctr.round_trips, n),
					per(ce->ctr.ops[DM_OP_READ], n), per(ce->ctr.ops[DM_OP_WRITE], n),
					per(atomics_of(&ce->ctr), n), per(ce->ctr.bytes_read, n), per(ce->ctr.bytes_written, n),
					per(cache_sum(ce->cs.hits), n), h, h1, h2, lh, ih,
					per(ce->cs.admissions, n), per(ce->cs.admit_skipped, n), per(ce->cs.evictions, n),
					per(ce->cs.no_frame, n), inner_used, ce->cs_end.frames_used[0], wu,
					tmb, chk, oth);
		else
			fprintf(f, "| %s | %s | %s | off | — | — | %.0f | %s | %s | %.2f | %.3f | %.3f | %.3f | %.0f | %.0f | "
					"— | — | — | — | — | — | — | — | — | — | %s | %s | %s | %s |\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport],
					ce->ops_per_s, p50, p99, per(ce->ctr.round_trips, n),
					per(ce->ctr.ops[DM_OP_READ], n), per(ce->ctr.ops[DM_OP_WRITE], n),
					per(atomics_of(&ce->ctr), n), per(ce->ctr.bytes_read, n), per(ce->ctr.bytes_written, n),
					wu, tmb, chk, oth);
	}
}

static void
print_oracle_table(FILE *f)
{
	int			i,
				j;

	if (noracle == 0)
		return;
	fprintf(f, "\nThe best any cache of that many frames could do for lookups (--oracle: %" PRIu64
			" sampled lookups of the same key generator on an ideal tree of the loaded shape, height %d, %"
			PRIu64 " nodes; the most visited nodes cached), next to what workload c measured:\n\n",
			oracle_samples, oracle_height, oracle_nodes);
	fprintf(f, "| dist | cache | frames | best hit ratio (node visits) | best reads/op | "
			"leaf hit ratio if all inner nodes are cached | measured reads/op (c, dex) | measured hit ratio (c, dex) |\n");
	fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < noracle; i++)
	{
		const oracle_row *o = &oracle_rows[i];
		char		pc[32],
					lh[32],
					mr[32] = "—",
					mh[32] = "—";

		fmt_pct(pc, sizeof(pc), o->pct);
		fmt_hit(lh, sizeof(lh), o->leaf_hit);
		for (j = 0; j < ncells; j++)
		{
			const cell *ce = &cells[j];

			if (ce->done && ce->wl->id == 'c' && ce->dist == o->dist && ce->policy == DM_CACHE_DEX &&
				ce->pct == o->pct)
			{
				snprintf(mr, sizeof(mr), "%.3f", per(ce->ctr.ops[DM_OP_READ], ce->ops));
				fmt_hit(mh, sizeof(mh), hit_ratio(&ce->cs, -1));
				break;
			}
		}
		fprintf(f, "| %s | %s | %u | %.3f | %.3f | %s | %s | %s |\n", dist_names[o->dist], pc, o->nframes,
				o->hit, o->reads, lh, mr, mh);
	}
}

static void
print_all(FILE *f, const char *notes)
{
	if (cache_mode)
	{
		fprintf(f, "Compute-side node cache: policies side by side (off = no cache; inner = inner nodes only, "
				"Sherman's policy; dex = inner nodes + leaves admitted with probability %.3f, DEX's policy), "
				"cache size as %% of the tree's nodes right after the load:\n",
				leaf_admit / 1000.0);
		print_cache_summary(f);
		print_oracle_table(f);
		fprintf(f, "\nCache cells in detail (counters over the measured window; hit ratio = cache hits / "
				"(hits + misses) of node reads through the cache):\n\n");
		print_cache_table(f);
		fprintf(f, "\n");
	}
	fprintf(f, "Throughput, latency and remote operations per YCSB operation:\n\n");
	print_main_table(f);
	print_paper_table(f);
	fprintf(f, "\nLatency by operation kind:\n\n");
	print_kind_table(f);
	fprintf(f, "\nTree counters (dm_tree_get_counters) over the measured window:\n\n");
	print_tree_table(f);
	if (offload_mode != DM_OFFLOAD_OFF)
	{
		fprintf(f, "\nOffloading (--offload %s; dm_offload.h counters over the measured window):\n\n",
				dm_offload_mode_name(offload_mode));
		print_offload_table(f);
	}
	fprintf(f, "\n%s", notes);
	fflush(f);
}

/* ---- main -------------------------------------------------------------------------- */

/* The notes under the tables (bounded: never written past the end). */
static char notes[1 << 17];
static size_t nlen;

static void note_add(const char *fmt,...) __attribute__((format(printf, 1, 2)));

static void
note_add(const char *fmt,...)
{
	va_list		ap;
	int			n;

	if (nlen + 1 >= sizeof(notes))
		return;
	va_start(ap, fmt);
	n = vsnprintf(notes + nlen, sizeof(notes) - nlen, fmt, ap);
	va_end(ap);
	if (n > 0)
		nlen = nlen + (size_t) n < sizeof(notes) ? nlen + (size_t) n : sizeof(notes) - 1;
}

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
			"  --duration SEC        measured seconds per cell (default 10)\n"
			"  --warmup SEC          warm-up per cell (default duration/10, 0.2..2 s; 3 s with --cache-policy)\n"
			"  --warmup-max SEC      with a cache, warm up past --warmup until the hit ratio of a second moves\n"
			"                        less than --warmup-stable from the second before, but at most this (default 15)\n"
			"  --warmup-stable PP    that threshold in percentage points (default 0.5)\n"
			"  --workloads LIST      of load,a,b,c,d,e,i (default load,a,b,c,d,e, in that order;\n"
			"                        i = 50%% read / 50%% insert, DEX's insert-intensive)\n"
			"  --dist uniform|zipf|both   key choice of a, b, c, e (default both)\n"
			"  --no-verify           skip dm_tree_verify at the end of each transport (and cell)\n"
			"  --offload MODE        off (default), always or auto: clients offload the rest of an\n"
			"                        operation to the memnode at a cache miss (DEX §6; dm_offload.h)\n"
			"  --cache-policy LIST   cache cells: of off,inner,dex (e.g. off,inner,dex); each cell on a\n"
			"                        fresh tree; off = without dm_tree_use_cache; default workloads c,b,a,i,e\n"
			"  --cache-pct LIST      cache sizes, %% of the tree's nodes after the load (default 1,8,100)\n"
			"  --leaf-admit PERMILLE dex: chance that a leaf read is admitted, 0..1000 (default 100 = DEX's 0.1)\n"
			"  --cooling-pct P       cooling map capacity, %% of the frames, 1..50 (default 10, as DEX)\n"
			"  --zipf-items ycsb|keys  zipf ranks over 10^10 items (YCSB, default) or over the keys (DEX's bench)\n"
			"  --oracle              also report the best hit ratio any cache of that size could have\n"
			"  --oracle-samples N    lookups sampled for it (default 20M)\n"
			"  --quick               small smoke run: 20000 entries, 1 s per cell, 256M region\n"
			"  --out FILE            also write the markdown tables to FILE\n",
			MAX_CLIENTS);
}

/* Look for the memnode binary next to this one when not run from the repository root. */
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
static int
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

int
main(int argc, char **argv)
{
	const char *memnode_args[16];
	memnode_proc mp;
	int			started_memnode = 0,
				quick = 0,
				i,
				ti,
				failed = 0;
	char		err[512],
				threads_buf[16];
	size_t		shared_len,
				samples_len,
				tids_len;
	uint64_t	t_begin = mono_ns();
	load_info	li[2];
	end_info	ei[2];
	int			have_end[2] = {0, 0};

	memset(li, 0, sizeof(li));
	memset(ei, 0, sizeof(ei));
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
			if ((offload_mode = dm_offload_mode_parse(argv[++i])) < 0)
			{
				fprintf(stderr, "dmbench: bad --offload %s (off, always or auto)\n", v);
				return 2;
			}
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
			quick = 1;
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

	signal(SIGPIPE, SIG_IGN);
	clk_tck = sysconf(_SC_CLK_TCK);
	if (clk_tck <= 0)
		clk_tck = 100;

	/*
	 * The shared mapping: header, latency samples, and the table of current
	 * tids by ordinal.  The tid table has room for the loaded keys plus 2^27
	 * inserts; pages are only allocated when touched (MAP_NORESERVE).
	 */
	ord_cap = n_entries + (UINT64_C(1) << 27);
	shared_len = (sizeof(shared_hdr) + 4095) & ~(size_t) 4095;
	samples_len = (size_t) nclients * K_COUNT * SAMPLE_CAP * sizeof(uint32_t);
	tids_len = (size_t) ord_cap * sizeof(uint64_t);
	sh = mmap(NULL, shared_len + samples_len + tids_len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sh == MAP_FAILED)
	{
		fprintf(stderr, "dmbench: mmap of %zu bytes: %s\n",
				shared_len + samples_len + tids_len, strerror(errno));
		return 1;
	}
	samples = (uint32_t *) ((char *) sh + shared_len);
	cur_tid = (uint64_t *) ((char *) sh + shared_len + samples_len);

	zipf_set(&scrambled_zipf, YCSB_ITEM_COUNT + 1, ZIPF_THETA, YCSB_ZETAN);

	if (nmemnode_addrs == 0)
	{
		int			na = 0;

		find_memnode_binary();
		snprintf(threads_buf, sizeof(threads_buf), "%d", memnode_threads);
		memnode_args[na++] = "--shm";
		for (int t = 0; t < ntransports; t++)
			if (transports[t] == TR_UCX)
			{
				memnode_args[na++] = "--ucx";
				break;
			}
		memnode_args[na++] = "--size";
		memnode_args[na++] = region_size;
		memnode_args[na++] = "--threads";
		memnode_args[na++] = threads_buf;
		memnode_args[na] = NULL;
		if (memnode_start(&mp, 0, memnode_args) != 0)
		{
			fprintf(stderr, "dmbench: could not start a memnode "
					"(set DM_MEMNODE or build it with make standalone)\n");
			return 1;
		}
		started_memnode = 1;
		memnode_pid = mp.pid;
		memnode_addrs[nmemnode_addrs++] = mp.addr;
	}

	fprintf(stderr, "dmbench: %" PRIu64 " entries, %d client(s), %.1f s per cell (+%.1f s warm-up), node %u B, fill %d%%%s\n",
			n_entries, nclients, duration_s, warmup_s, node_size, fillfactor,
			started_memnode ? ", memnode started here" : "");

	if (cache_mode)
	{
		char		pl[64] = "",
					pp[256] = "";

		for (i = 0; i < ncache_policies; i++)
			snprintf(pl + strlen(pl), sizeof(pl) - strlen(pl), "%s%s", i ? "," : "", policy_names[cache_policies[i]]);
		for (i = 0; i < ncache_pcts; i++)
		{
			char		b[32];

			fmt_pct(b, sizeof(b), cache_pcts[i]);
			snprintf(pp + strlen(pp), sizeof(pp) - strlen(pp), "%s%s", i ? "," : "", b);
		}
		fprintf(stderr, "dmbench: cache cells: policies %s, sizes %s of the loaded tree, leaf admission %u‰, "
				"cooling map %u%% of the frames; a fresh load per cell\n",
				pl, pp, leaf_admit, cooling_pct ? cooling_pct : 10);
	}
	for (ti = 0; ti < ntransports && cache_mode; ti++)
	{
		int			tr = transports[ti];
		int			wi;

		for (wi = 0; wi < nworkload_list; wi++)
		{
			const workload *wl = &workloads[workload_list[wi]];
			int			dists[2],
						nd = workload_dists(wl, dists),
						di;

			for (di = 0; di < nd; di++)
			{
				int			pi,
							k;

				for (k = 0; k < ncache_policies; k++)
					if (cache_policies[k] == DM_CACHE_OFF &&
						run_cache_cell(tr, wl, dists[di], DM_CACHE_OFF, 0) != 0)
						failed = 1;
				for (pi = 0; pi < ncache_pcts; pi++)
					for (k = 0; k < ncache_policies; k++)
						if (cache_policies[k] != DM_CACHE_OFF &&
							run_cache_cell(tr, wl, dists[di], cache_policies[k], cache_pcts[pi]) != 0)
							failed = 1;
				/* after the first load: the ideal-cache bound (the shape is the same for every cell) */
				if (do_oracle && noracle == 0 && ncells > 0 && cells[0].li.have_stats)
				{
					fprintf(stderr, "[%s] oracle: sampling %" PRIu64 " lookups per distribution ... ",
							transport_names[tr], oracle_samples);
					oracle_compute(&cells[0].li.st);
					fprintf(stderr, "done\n");
				}
			}
		}
	}

	for (ti = 0; ti < ntransports && !cache_mode; ti++)
	{
		int			tr = transports[ti];
		int			wi;

		/* A fresh tree (and fresh row table) per transport. */
		memset(cur_tid, 0, (size_t) (sh->next_ord > ord_cap ? ord_cap : sh->next_ord) * sizeof(uint64_t));
		sh->next_ord = 0;
		memset(&latest_zipf, 0, sizeof(latest_zipf));
		zipf_set(&latest_zipf, 1, ZIPF_THETA, 1.0);

		fprintf(stderr, "[%s] bulk-loading %" PRIu64 " entries ... ", transport_names[tr], n_entries);
		if (create_and_load(tr, &li[ti], err, sizeof(err)) != DM_OK)
		{
			fprintf(stderr, "FAILED: %s\n", err);
			note_add(
							 "- %s: bulk load failed: %s\n", transport_names[tr], err);
			failed = 1;
			continue;
		}
		fprintf(stderr, "%.2f s (keys generated and sorted in %.2f s), height %d\n",
				li[ti].load_s, li[ti].gen_s, li[ti].have_stats ? li[ti].st.height : -1);

		for (wi = 0; wi < nworkload_list; wi++)
		{
			const workload *wl = &workloads[workload_list[wi]];
			int			dists[2],
						nd = workload_dists(wl, dists),
						di;

			for (di = 0; di < nd; di++)
			{
				cell	   *ce;

				if (ncells >= MAX_CELLS)
					break;
				ce = &cells[ncells++];
				memset(ce, 0, sizeof(*ce));
				ce->wl = wl;
				ce->dist = dists[di];
				ce->transport = tr;
				fprintf(stderr, "[%s] %-4s %-7s ... ", transport_names[tr], wl->name,
						dist_names[ce->dist]);
				run_cell(ce);
				if (ce->done)
				{
					char		p50[32],
								p99[32];

					fmt_us(p50, sizeof(p50), ce->p50_ns);
					fmt_us(p99, sizeof(p99), ce->p99_ns);
					fprintf(stderr, "%.0f ops/s, p50 %s µs, p99 %s µs, %.2f round trips/op\n",
							ce->ops_per_s, p50, p99, per(ce->ctr.round_trips, ce->ops));
				}
				else
				{
					fprintf(stderr, "FAILED: %s\n", ce->note);
					failed = 1;
				}
			}
		}

		fprintf(stderr, "[%s] %s and dropping the tree ... ", transport_names[tr],
				do_verify ? "verifying" : "measuring");
		verify_and_drop(&ei[ti], NULL);
		have_end[ti] = 1;
		if (ei[ti].verified < 0)
		{
			fprintf(stderr, "FAILED: %s\n", ei[ti].msg);
			failed = 1;
		}
		else
			fprintf(stderr, "ok%s\n", do_verify ? "" : " (not verified)");
	}

	if (started_memnode)
		memnode_stop(&mp, SIGTERM);
	memnode_pid = 0;

	/* ---- notes ---- */
	{
		char		mn[128];

		if (started_memnode)
			snprintf(mn, sizeof(mn), "started here with `--shm --size %s --threads %d` on 127.0.0.1",
					 region_size, memnode_threads);
		else
			snprintf(mn, sizeof(mn), "%d given with --memnode", nmemnode_addrs);
		note_add(
						 "Setup: %" PRIu64 " keys bulk-loaded (fill factor %d%%, %u-byte nodes), "
						 "%d client process(es), %.1f s measured per cell after %.1f s warm-up%s; memnode %s.\n\n",
						 n_entries, fillfactor, node_size, nclients, duration_s, warmup_s,
						 quick ? " (--quick)" : "", mn);
	}
	for (ti = 0; ti < ntransports; ti++)
	{
		if (li[ti].load_s > 0)
		{
			note_add(
							 "- %s: bulk load of %" PRIu64 " entries took %.2f s (%.2f M entries/s; "
							 "%.0f round trips, %.1f MB written) after %.2f s to generate and sort the keys",
							 transport_names[transports[ti]], n_entries, li[ti].load_s,
							 (double) n_entries / li[ti].load_s / 1e6,
							 (double) li[ti].ctr.round_trips,
							 (double) li[ti].ctr.bytes_written / 1e6, li[ti].gen_s);
			if (li[ti].have_stats)
				note_add(
								 "; tree after load: height %d, %" PRIu64 " leaves, leaf fill %.2f, %.1f MB",
								 li[ti].st.height, li[ti].st.nodes[0], li[ti].st.leaf_fill,
								 (double) li[ti].st.remote_bytes / 1e6);
			note_add(".\n");
		}
		if (have_end[ti])
		{
			end_info   *e = &ei[ti];

			note_add("- %s: at the end ",
							 transport_names[transports[ti]]);
			if (e->have_stats)
				note_add(
								 "height %d, %" PRIu64 " leaves, leaf fill %.2f, %.1f MB; ",
								 e->st.height, e->st.nodes[0], e->st.leaf_fill,
								 (double) e->st.remote_bytes / 1e6);
			if (e->have_stats && nmemnode_addrs > 1)
			{
				int			m;

				note_add("nodes by memnode:");
				for (m = 0; m < nmemnode_addrs; m++)
					note_add(" %" PRIu64,
									 e->st.nodes_by_memnode[m]);
				note_add("; ");
			}
			if (e->verified > 0)
				note_add(
								 "dm_tree_verify ok in %.1f s, %" PRIu64 " entries = one per row.\n",
								 e->verify_s, e->entries);
			else if (e->verified < 0)
				note_add(
								 "**verification FAILED**: %s.\n", e->msg);
			else
				note_add("not verified.\n");
		}
	}
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		char		name[128],
					lbl[48];

		snprintf(name, sizeof(name), "%s / %s / %s%s%s", ce->wl->name, dist_names[ce->dist],
				 transport_names[ce->transport], cache_mode ? " / " : "", cache_label(ce, lbl, sizeof(lbl)));
		if (!ce->done)
			note_add("- **%s failed**: %s\n", name, ce->note);
		else
		{
			if (ce->anom.read_miss_again || ce->anom.insert_existed || ce->anom.delete_missing)
				note_add("- **%s anomalies**: %" PRIu64 " reads found no entry twice in a row, "
						 "%" PRIu64 " inserts of a new entry said it existed, %" PRIu64
						 " deletes of a row's previous entry found nothing.\n",
						 name, ce->anom.read_miss_again, ce->anom.insert_existed, ce->anom.delete_missing);
			if (ce->anom.read_miss > ce->anom.read_miss_again)
				note_add("- %s: %" PRIu64 " of %" PRIu64 " reads found no entry at first and "
						 "found it when repeated (expected under concurrent updates, see below).\n",
						 name, ce->anom.read_miss - ce->anom.read_miss_again, ce->kops[K_READ]);
		}
		if (cache_mode && ce->ei.verified < 0)
			note_add("- **%s: tree verification FAILED**: %s\n", name, ce->ei.msg);
		if (cache_mode && ce->cache_verified < 0)
			note_add("- **%s: cache verification FAILED**: %s\n", name, ce->cache_msg);
		if (cache_mode && ce->done && ce->policy != DM_CACHE_OFF && (ce->cs.no_frame || ce->cs.io_waits))
			note_add("- %s: %" PRIu64 " admissions found no frame to free, %" PRIu64
					 " lookups found a fetch in progress (read remotely meanwhile).\n",
					 name, ce->cs.no_frame, ce->cs.io_waits);
	}
	if (cache_mode)
	{
		const cell *c0 = NULL,
				   *cc = NULL;

		for (i = 0; i < ncells; i++)
		{
			if (!c0 && cells[i].li.have_stats)
				c0 = &cells[i];
			if ((!cc || cells[i].nframes > cc->nframes) && cells[i].nframes > 0)
				cc = &cells[i];
		}
		if (c0)
			note_add("- Every cell starts from a fresh bulk load of the same %" PRIu64 " keys: height %d, %" PRIu64
					 " nodes (%" PRIu64 " leaves, %" PRIu64 " inner), %.1f MB; cache sizes are %% of those nodes, "
					 "in frames of %u B of node (%.0f B of shared memory per frame with its header, child hints "
					 "and share of the mapping table and cooling map).\n",
					 n_entries, c0->li.st.height, tree_nodes(&c0->li.st), c0->li.st.nodes[0],
					 tree_nodes(&c0->li.st) - c0->li.st.nodes[0], (double) c0->li.st.remote_bytes / 1e6,
					 node_size, cc ? (double) cc->cache_bytes / cc->nframes : 0.0);
		note_add("- Cache cells: per transport, workload and distribution, off first (run once: its cache size is moot), "
				 "then for each cache size inner and dex, each on a fresh tree and a fresh, empty cache made in the parent "
				 "before the clients fork (MAP_SHARED | MAP_ANONYMOUS, dm_cache_init); each client calls "
				 "dm_tree_use_cache(handle, cache, 0) — one compute instance owning every key — except for off, "
				 "which does not call it. Leaf admission probability %.3f (--leaf-admit %u), cooling map %u%% of the "
				 "frames. Warm-up with the cell's own workload (not measured): %.1f s, and with a cache on until the hit ratio "
				 "of one second differs by less than %.1f percentage points from the second before, at most %.1f s "
				 "('warm-up' gives its length, '(max)' when it never settled, and the clients' operations); then %.1f s "
				 "measured; '1st / 2nd half' is the hit ratio over each half of that window.\n"
				 "- Hit ratio = dm_cache_stats hits / (hits + misses) over the window: node reads that went through the "
				 "cache (descents, scans). A writer locking a node of a cached level counts a miss when it has to admit "
				 "the node (admitted always, whatever --leaf-admit says) but no hit when the node is in a frame "
				 "(dm_cache_lock counts nothing), so for workloads with writes under dex the ratio is a lower bound. "
				 "reads/op, B/op and atomics/op come from the transport (dm_client_counters), as in the tables below.\n"
				 "- After each cache cell dm_tree_verify (one entry per row) and dm_tree_verify_cache (every cached node "
				 "of an owned range identical to remote memory) ran on the tree ('checks').\n"
				 "- zipf keys: %s.\n",
				 leaf_admit / 1000.0, leaf_admit, cooling_pct ? cooling_pct : 10, warmup_s,
				 100 * warmup_stable, warmup_max_s, duration_s,
				 zipf_over_keys ?
				 "--zipf-items keys: Gray's zipfian (θ = 0.99) over as many ranks as keys present, FNV-hashed onto "
				 "them, like DEX's benchmark (mehcached_zipf over its key space, CityHash'ed onto keys)" :
				 "YCSB's ScrambledZipfian (θ = 0.99 over 10^10 ranks, FNV-hashed onto the keys present); "
				 "DEX's benchmark draws ranks over its key space instead (--zipf-items keys), which is more skewed");
	}
	note_add(
					 "- Workloads: load = 100%% insert of new keys into the loaded tree; a = 50%% read / 50%% update; "
					 "b = 95/5; c = 100%% read; d = 95%% read of recent keys (YCSB latest) / 5%% insert; "
					 "e = 95%% scan of 1..100 entries / 5%% insert; i = 50%% read / 50%% insert (DEX's insert-intensive). %s\n"
					 "- read = dm_tree_lookup; update = dm_tree_insert(key, new tid) + dm_tree_delete(key, old tid) "
					 "(a PostgreSQL row update followed by VACUUM: two tree operations, where DEX/Sherman update a value in place); "
					 "insert = dm_tree_insert of a new key; scan = dm_iter from the key.\n"
					 "- zipf = YCSB ScrambledZipfian (θ = 0.99 over 10^10 ranks, FNV-hashed onto the keys present at the cell's start); "
					 "keys are ordinals through a bijective 64-bit mixer.\n"
					 "- ops/s is summed over the clients; latency is per YCSB operation (an update's two tree calls together), "
					 "percentiles over all operations or a uniform sample of %u per client and kind.\n"
					 "- Per-op columns are dm_client_counters deltas over the measured window divided by operations: "
					 "reads/writes/atomics are one-sided ops (atomics = CAS + FAA + fetch-or), B read/written their payload, "
					 "wire B the socket bytes both ways (on shm only RPCs use the socket); shm counts each dm_post as a round trip "
					 "although no message is sent.\n"
					 "- A lookup reads one leaf after another and sees for sure only entries present for its whole duration "
					 "(dm_tree.h). When the versions of a row straddle a leaf boundary, two concurrent updates of that row "
					 "can move its single entry from the unread leaf to the already-read one, and the lookup finds nothing; "
					 "dmbench then repeats it (counted in its latency). PostgreSQL never sees this: a version's entry is "
					 "removed only by VACUUM, once no snapshot can need it; here the old version goes at once.\n"
					 "- CPU used by others: busy time of all CPUs (/proc/stat) during the cell minus that of the clients%s, "
					 "as a share of all CPUs. The clients (and on tcp the memnode) want about %d CPU(s); what others take "
					 "comes out of that, so compare throughput between cells only where this share is small.\n"
					 "%s",
					 cache_mode ? "Each cell runs on its own freshly loaded tree." :
					 "Cells run in this order on one tree per transport, so later cells see the keys earlier ones inserted.",
					 SAMPLE_CAP,
					 started_memnode ? " and the memnode" : " (a memnode given with --memnode counts as other)",
					 nclients,
					 cache_mode ? "" : "- No compute-side cache (see --cache-policy): every operation descends from the root.\n");
	note_add("- Total run time %.0f s.\n",
					 (double) (mono_ns() - t_begin) / 1e9);

	print_all(stdout, notes);
	if (out_path)
	{
		FILE	   *f = fopen(out_path, "w");

		if (!f)
		{
			fprintf(stderr, "dmbench: %s: %s\n", out_path, strerror(errno));
			return 1;
		}
		print_all(f, notes);
		fclose(f);
	}
	munmap(sh, shared_len + samples_len + tids_len);
	return failed ? 1 : 0;
}
