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
 */
#define _GNU_SOURCE
#include <errno.h>
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

#include "dm_client.h"
#include "dm_tree.h"
#include "testutil.h"

#define MAX_CLIENTS		64
#define MAX_MEMNODES	DM_TREE_MAX_MEMNODES
#define MAX_CELLS		64
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
 * this tree has no cache yet, so every operation descends from the root.
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
};
#define NWORKLOADS ((int) (sizeof(workloads) / sizeof(workloads[0])))

enum
{
	DIST_NONE = 0, DIST_UNIFORM, DIST_ZIPF, DIST_LATEST
};
static const char *const dist_names[] = {"-", "uniform", "zipf", "latest"};

enum
{
	TR_TCP = 0, TR_SHM = 1
};
static const char *const transport_names[] = {"tcp", "shm"};

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
	uint64_t	scanned;		/* entries returned by scans */
	dm_counters ctr;			/* client counters over the window */
	dm_tree_counters tctr;		/* tree counters over the window */
	anomalies	anom;
} child_result;

typedef struct shared_hdr
{
	uint64_t	next_ord;		/* next key ordinal to insert (FAA) */
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
static int	transports[2];
static int	ntransports;
static int	nclients = 2;
static uint64_t n_entries = 1000000;
static double duration_s = 10.0;
static double warmup_s = -1;	/* < 0: derived from the duration */
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
	uint64_t	t_start,
				t_end,
				t_now,
				warm_end,
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
	opts.backend = transport == TR_SHM ? DM_BACKEND_SHM : DM_BACKEND_TCP;
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

	/*
	 * Warm-up with the cell's own mix: page faults of the shm mapping, the
	 * memnode threads' first wakeups, CPU caches, allocator state.
	 */
	warm_end = mono_ns() + (uint64_t) (warmup_s * 1e9);
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
	} while (mono_ns() < warm_end);
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
	anomalies	anom;
	uint64_t	scanned;
	uint64_t	nkeys;			/* ordinals at the start */
	double		others_cpu;		/* share of all CPUs other processes used, -1 unknown */
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

static void
run_cell(cell *ce)
{
	int			ready[2],
				go[2];
	pid_t		pids[MAX_CLIENTS] = {0};
	int			i,
				k,
				nready = 0;
	uint64_t	deadline;
	cpu_mark	m0,
				m1;

	ce->others_cpu = -1;
	if (pipe(ready) != 0 || pipe(go) != 0)
	{
		snprintf(ce->note, sizeof(ce->note), "pipe: %s", strerror(errno));
		return;
	}
	ce->nkeys = __atomic_load_n(&sh->next_ord, __ATOMIC_ACQUIRE);
	/* "latest" starts from zeta over every ordinal so far; children extend it. */
	if (ce->dist == DIST_LATEST)
		zipf_grow(&latest_zipf, ce->nkeys);
	memset(sh->res, 0, sizeof(sh->res));
	fflush(stdout);
	fflush(stderr);
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
	deadline = mono_ns() + (uint64_t) (warmup_s * 1e9) + UINT64_C(60000000000);
	while (nready < nclients)
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
	cpu_mark_now(&m0);
	close(go[1]);

	/* Reap, never hanging on a client stuck on a dead memnode or a lost lock. */
	deadline = mono_ns() + (uint64_t) (duration_s * 1e9) + UINT64_C(60000000000);
	for (i = 0; i < nclients; i++)
	{
		int			wst = 0;

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
	memset(&ce->ctr, 0, sizeof(ce->ctr));
	memset(&ce->tctr, 0, sizeof(ce->tctr));
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
		ce->anom.read_miss += r->anom.read_miss;
		ce->anom.read_miss_again += r->anom.read_miss_again;
		ce->anom.insert_existed += r->anom.insert_existed;
		ce->anom.delete_missing += r->anom.delete_missing;
		ce->scanned += r->scanned;
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

typedef struct load_info
{
	double		gen_s,
				load_s;
	dm_tree_stats st;
	int			have_stats;
	dm_counters ctr;
} load_info;

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

/* Verify the tree (and that each row has exactly one entry), then drop it. */
static void
verify_and_drop(end_info *ei)
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

static void
print_main_table(FILE *f)
{
	int			i;

	fprintf(f, "| workload | dist | transport | ops/s | p50 µs | p99 µs | round trips/op | "
			"reads/op | writes/op | atomics/op | RPCs/op | B read/op | B written/op | wire B/op | "
			"read retries/op | lock retries/op | splits/op | CPU used by others |\n");
	fprintf(f, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		char		p50[32],
					p99[32],
					oth[32] = "?";
		uint64_t	n = ce->ops;

		if (!ce->done)
		{
			fprintf(f, "| %s | %s | %s | FAILED | | | | | | | | | | | | | | |\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport]);
			continue;
		}
		fmt_us(p50, sizeof(p50), ce->p50_ns);
		fmt_us(p99, sizeof(p99), ce->p99_ns);
		if (ce->others_cpu >= 0)
			snprintf(oth, sizeof(oth), "%.0f%%", 100 * ce->others_cpu);
		fprintf(f, "| %s | %s | %s | %.0f | %s | %s | %.2f | %.2f | %.2f | %.2f | %.4f | %.0f | %.0f | %.0f | %.4f | %.4f | %.4f | %s |\n",
				ce->wl->name, dist_names[ce->dist], transport_names[ce->transport],
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

	fprintf(f, "| workload | dist | transport | op | ops | share | p50 µs | p99 µs |\n");
	fprintf(f, "|---|---|---|---|---:|---:|---:|---:|\n");
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];

		if (!ce->done)
			continue;
		for (k = 0; k < K_COUNT; k++)
		{
			char		p50[32],
						p99[32];

			if (ce->kops[k] == 0)
				continue;
			fmt_us(p50, sizeof(p50), ce->kp50_ns[k]);
			fmt_us(p99, sizeof(p99), ce->kp99_ns[k]);
			fprintf(f, "| %s | %s | %s | %s | %" PRIu64 " | %.1f%% | %s | %s |\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport],
					kind_names[k], ce->kops[k], 100.0 * (double) ce->kops[k] / (double) ce->ops,
					p50, p99);
		}
	}
}

static void
print_tree_table(FILE *f)
{
	int			i;

	fprintf(f, "| workload | dist | transport | ops | node reads/op | read retries/op | "
			"lock retries/op | lock takeovers | splits/op | root grows | restarts/op | entries/scan |\n");
	fprintf(f, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		uint64_t	n = ce->ops;
		char		scan[32] = "—";

		if (!ce->done)
			continue;
		if (ce->kops[K_SCAN])
			snprintf(scan, sizeof(scan), "%.1f", per(ce->scanned, ce->kops[K_SCAN]));
		fprintf(f, "| %s | %s | %s | %" PRIu64 " | %.2f | %.4f | %.4f | %" PRIu64 " | %.4f | %" PRIu64 " | %.4f | %s |\n",
				ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], n,
				per(ce->tctr.node_reads, n), per(ce->tctr.read_retries, n),
				per(ce->tctr.lock_retries, n), ce->tctr.lock_takeovers,
				per(ce->tctr.splits, n), ce->tctr.root_grows,
				per(ce->tctr.restarts, n), scan);
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

			if (!ce->done || ce->dist != DIST_ZIPF || ce->wl->id != wid)
				continue;
			fprintf(f, "| **dmindex, %s** (YCSB %c, zipf, %d clients) | %s | %.2f | %.2f | %.2f | %.4f | %.1f |\n",
					transport_names[ce->transport], wid, nclients, wid == 'c' ? "RO" : "WI",
					per(ce->ctr.ops[DM_OP_READ], n), per(ce->ctr.ops[DM_OP_WRITE], n),
					per(atomics_of(&ce->ctr), n), per(ce->ctr.rpcs, n),
					per(ce->ctr.bytes_read + ce->ctr.bytes_written + 8 * atomics_of(&ce->ctr), n));
		}
	}
}

static void
print_all(FILE *f, const char *notes)
{
	fprintf(f, "Throughput, latency and remote operations per YCSB operation:\n\n");
	print_main_table(f);
	print_paper_table(f);
	fprintf(f, "\nLatency by operation kind:\n\n");
	print_kind_table(f);
	fprintf(f, "\nTree counters (dm_tree_get_counters) over the measured window:\n\n");
	print_tree_table(f);
	fprintf(f, "\n%s", notes);
	fflush(f);
}

/* ---- main -------------------------------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f,
			"usage: dmbench [OPTION]...\n"
			"  --memnode HOST:PORT   use a running memnode (repeatable; shm needs --shm there)\n"
			"                        default: start build/dmindex-memnode --shm here\n"
			"  --region-size SIZE    region of the memnode started here (default 2G)\n"
			"  --memnode-threads N   its worker threads (default 2)\n"
			"  --transport LIST      tcp, shm or tcp,shm (default shm); each gets a fresh tree\n"
			"  --clients N           client processes (default 2, at most %d)\n"
			"  --entries N           keys bulk-loaded before the workloads (default 1000000; K/M suffixes)\n"
			"  --fillfactor P        bulk-load fill factor, 10..100 (default 90, as btree leaves)\n"
			"  --node-size N         tree node size, 256..4096 (default 1024)\n"
			"  --duration SEC        measured seconds per cell (default 10)\n"
			"  --warmup SEC          warm-up per cell (default duration/10, 0.2..2 s)\n"
			"  --workloads LIST      of load,a,b,c,d,e (default all, in that order)\n"
			"  --dist uniform|zipf|both   key choice of a, b, c, e (default both)\n"
			"  --no-verify           skip dm_tree_verify at the end of each transport\n"
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
	else
		return -1;
	if (ntransports >= 2)
		return -1;
	transports[ntransports++] = tr;
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
	char		notes[16384],
				err[512],
				threads_buf[16];
	size_t		nlen = 0;
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
				fprintf(stderr, "dmbench: bad --transport %s (tcp, shm or tcp,shm)\n", v);
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
			warmup_s = parse_seconds(a, argv[++i]);
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
		for (i = 0; i < NWORKLOADS; i++)
			workload_list[nworkload_list++] = i;
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

	for (ti = 0; ti < ntransports; ti++)
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
			nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
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
						nd = 0,
						di;

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
		verify_and_drop(&ei[ti]);
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
		nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
						 "Setup: %" PRIu64 " keys bulk-loaded (fill factor %d%%, %u-byte nodes), "
						 "%d client process(es), %.1f s measured per cell after %.1f s warm-up%s; memnode %s.\n\n",
						 n_entries, fillfactor, node_size, nclients, duration_s, warmup_s,
						 quick ? " (--quick)" : "", mn);
	}
	for (ti = 0; ti < ntransports; ti++)
	{
		if (li[ti].load_s > 0)
		{
			nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
							 "- %s: bulk load of %" PRIu64 " entries took %.2f s (%.2f M entries/s; "
							 "%.0f round trips, %.1f MB written) after %.2f s to generate and sort the keys",
							 transport_names[transports[ti]], n_entries, li[ti].load_s,
							 (double) n_entries / li[ti].load_s / 1e6,
							 (double) li[ti].ctr.round_trips,
							 (double) li[ti].ctr.bytes_written / 1e6, li[ti].gen_s);
			if (li[ti].have_stats)
				nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
								 "; tree after load: height %d, %" PRIu64 " leaves, leaf fill %.2f, %.1f MB",
								 li[ti].st.height, li[ti].st.nodes[0], li[ti].st.leaf_fill,
								 (double) li[ti].st.remote_bytes / 1e6);
			nlen += snprintf(notes + nlen, sizeof(notes) - nlen, ".\n");
		}
		if (have_end[ti])
		{
			end_info   *e = &ei[ti];

			nlen += snprintf(notes + nlen, sizeof(notes) - nlen, "- %s: at the end ",
							 transport_names[transports[ti]]);
			if (e->have_stats)
				nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
								 "height %d, %" PRIu64 " leaves, leaf fill %.2f, %.1f MB; ",
								 e->st.height, e->st.nodes[0], e->st.leaf_fill,
								 (double) e->st.remote_bytes / 1e6);
			if (e->have_stats && nmemnode_addrs > 1)
			{
				int			m;

				nlen += snprintf(notes + nlen, sizeof(notes) - nlen, "nodes by memnode:");
				for (m = 0; m < nmemnode_addrs; m++)
					nlen += snprintf(notes + nlen, sizeof(notes) - nlen, " %" PRIu64,
									 e->st.nodes_by_memnode[m]);
				nlen += snprintf(notes + nlen, sizeof(notes) - nlen, "; ");
			}
			if (e->verified > 0)
				nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
								 "dm_tree_verify ok in %.1f s, %" PRIu64 " entries = one per row.\n",
								 e->verify_s, e->entries);
			else if (e->verified < 0)
				nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
								 "**verification FAILED**: %s.\n", e->msg);
			else
				nlen += snprintf(notes + nlen, sizeof(notes) - nlen, "not verified.\n");
		}
	}
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];

		if (!ce->done)
			nlen += snprintf(notes + nlen, sizeof(notes) - nlen, "- **%s / %s / %s failed**: %s\n",
							 ce->wl->name, dist_names[ce->dist], transport_names[ce->transport],
							 ce->note);
		else
		{
			if (ce->anom.read_miss_again || ce->anom.insert_existed || ce->anom.delete_missing)
				nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
								 "- **%s / %s / %s anomalies**: %" PRIu64 " reads found no entry twice in a row, "
								 "%" PRIu64 " inserts of a new entry said it existed, %" PRIu64
								 " deletes of a row's previous entry found nothing.\n",
								 ce->wl->name, dist_names[ce->dist], transport_names[ce->transport],
								 ce->anom.read_miss_again, ce->anom.insert_existed, ce->anom.delete_missing);
			if (ce->anom.read_miss > ce->anom.read_miss_again)
				nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
								 "- %s / %s / %s: %" PRIu64 " of %" PRIu64 " reads found no entry at first and "
								 "found it when repeated (expected under concurrent updates, see below).\n",
								 ce->wl->name, dist_names[ce->dist], transport_names[ce->transport],
								 ce->anom.read_miss - ce->anom.read_miss_again, ce->kops[K_READ]);
		}
	}
	nlen += snprintf(notes + nlen, sizeof(notes) - nlen,
					 "- Workloads: load = 100%% insert of new keys into the loaded tree; a = 50%% read / 50%% update; "
					 "b = 95/5; c = 100%% read; d = 95%% read of recent keys (YCSB latest) / 5%% insert; "
					 "e = 95%% scan of 1..100 entries / 5%% insert. Cells run in this order on one tree per transport, "
					 "so later cells see the keys earlier ones inserted.\n"
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
					 "- The tree has no compute-side cache yet: every operation descends from the root.\n",
					 SAMPLE_CAP,
					 started_memnode ? " and the memnode" : " (a memnode given with --memnode counts as other)",
					 nclients);
	nlen += snprintf(notes + nlen, sizeof(notes) - nlen, "- Total run time %.0f s.\n",
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
