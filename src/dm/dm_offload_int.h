/*
 * dm_offload_int.h — what the client's offloading files share
 * (dm_offload.c: where and the RPC; dm_offload_policy.c: whether, DEX §6.1):
 * the per-handle state, the memnodes' load as last reported, and the
 * cost model's constants.  Not for other modules: dm_offload.h is the API.
 */
#ifndef DM_OFFLOAD_INT_H
#define DM_OFFLOAD_INT_H

#include <time.h>

#include "dm_offload.h"
#include "dm_tree_int.h"

#define LOCAL_SEARCH_NS 300		/* l_s */
#define COST_C_NUM 6			/* c = 6/5, on the RPC's side (dm_offload.c says why) */
#define COST_C_DEN 5
/*
 * Round trips a one-sided write pays beyond reading its leaf: taking the
 * leaf's lock and writing the leaf with the unlock (YCSB a over tcp,
 * offloading off: 2.07 round trips per operation at 1.07 node reads, half
 * the operations writes; bench/results/offload-cells-2026-11-27.md).
 */
#define WRITE_EXTRA_ROUNDS 2
/*
 * A scan's further leaves: entries per leaf counted as 3/4 of a leaf's
 * capacity (bulk loads fill 90%, splits leave halves).
 */
#define SCAN_LEAF_FILL_NUM 3
#define SCAN_LEAF_FILL_DEN 4
#define EXPLORE_MASK 127		/* contrary choice with probability 1/128 (DEX: ~1%) */
#define EXPLORE_RARE_MASK 1023	/* ... 1/1024 when it loses by more than 2x everywhere */
/*
 * ... and then at most once a second per handle: over shm such an
 * exploration is a socket RPC (plus, now and then, a load report) that
 * waits for a memnode thread on the clients' own cores; at 1/1024 of
 * ~40k point queries a second per backend it cost 2-client pgbench up to
 * ~15% on a loaded machine
 * (the bisect of issue 10's "nothing slower", bench/results/sql-2026-11-27-ab-shm.md).
 */
#define EXPLORE_FAR_INTERVAL_NS UINT64_C(1000000000)
#define EWMA_SHIFT 4			/* moving average over ~16 samples */
#define EWMA_CLAMP 3			/* a sample counts as at most 3x the average */
#define WARM_SAMPLES 3			/* samples of each path before the model decides */
#define LOAD_INTERVAL_NS 100000000ull
#define BUSY_LIMIT_PCT 85
#define LOOKUP_MAX 64			/* tids one offloaded lookup returns (more: one-sided) */

typedef struct mn_load
{
	uint16_t	memnode;
	uint64_t	last_ns;		/* when last reported */
	uint64_t	busy_ns;
	uint64_t	uptime_ns;
	uint32_t	slots;
	uint32_t	inflight;		/* from the last reply */
	uint32_t	busy_pct;
} mn_load;

struct dm_offload
{
	int			mode;
	int			local;			/* running the one-sided path for it: no offload */
	uint64_t	rng;
	uint64_t	far_explored_ns;	/* last exploration while an RPC loses by far (at most one a second) */
	uint32_t	sample_skip;	/* one-sided operations not timed while an RPC loses by far */
	uint64_t	tok_rng;		/* names of this handle's requests (DM_RPC_OFF_DRAIN) */
	uint64_t	rpc_ns;			/* l_p */
	uint64_t	read_ns;		/* l_o */
	uint32_t	rpc_samples;	/* samples of each so far (counted up to WARM_SAMPLES) */
	uint32_t	read_samples;
	uint8_t    *walk_buf;		/* find_start's copy of a cached node (walk_len bytes) */
	uint32_t	walk_len;
	uint32_t	load_skip;		/* decisions since the clock was last read for a load report */
	int			root_level;		/* level of the node at root_addr; -1 unknown */
	dm_gaddr	root_addr;
	mn_load		load[DM_TREE_MAX_MEMNODES];
	dm_offload_counters ctr;
};

static inline uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/*
 * The moving average of a latency, each sample counted as at most
 * EWMA_CLAMP times the average.  On a shared machine one descheduled
 * process turns a 20 us round trip into milliseconds; unclamped, such
 * samples moved the averages to 5 ms where the medians were tens of
 * microseconds, and steered the policy for hundreds of decisions
 * (bench/results/offload-cells-2026-11-26.md).  A real rise still shows:
 * the average can grow by (EWMA_CLAMP - 1) / 2^EWMA_SHIFT per sample,
 * doubling within ~6 samples.
 */
static inline void
ewma(uint64_t *avg, uint64_t sample)
{
	if (*avg == 0)
		*avg = sample ? sample : 1;
	else
	{
		if (sample / EWMA_CLAMP > *avg)
			sample = *avg * EWMA_CLAMP;
		*avg = *avg - (*avg >> EWMA_SHIFT) + (sample >> EWMA_SHIFT);
	}
}


/*
 * A latency sample into an estimate: the smallest of the first
 * WARM_SAMPLES, then the moving average.  A handle's first one-sided
 * operation pays for cold state (its first touches of the mapped region,
 * of the node buffers): 21 us where the next ones take 1.5 us over shm.
 * Taken as the average, that sample made a 57 us RPC look cheaper than a
 * descent for the ~2,500 operations exploration needed to wash it out,
 * and one-row INSERTs over shm went to the executor (issue 10's insert
 * gap: 15% of throughput).
 */
static inline void
estimate_add(uint64_t *avg, uint32_t *n, uint64_t sample)
{
	if (*n < WARM_SAMPLES)
	{
		if (*n == 0 || sample < *avg)
			*avg = sample ? sample : 1;
		(*n)++;
	}
	else
		ewma(avg, sample);
}

/* Both estimates are past their warm-up: the model may decide. */
static inline int
estimates_warm(const struct dm_offload *o)
{
	return o->rpc_samples >= WARM_SAMPLES && o->read_samples >= WARM_SAMPLES;
}

/* dm_offload_policy.c */
/* The load entry of memnode mn in t's list; NULL if the tree does not use it. */
extern mn_load *dm_offload_load_of(dm_tree *t, uint16_t memnode);
/* The contrary choice now?  rare: with probability 1/1024 instead of 1/128. */
extern int	dm_offload_explore_now(struct dm_offload *o, int rare);
/*
 * auto: whether an offload could beat the one-sided path from any level
 * (*far: by far not), for an operation that pays `extra` round trips
 * beyond its descent one-sided (dm_offload_extra_rounds).
 */
extern int	dm_offload_could_win(const struct dm_offload *o, int extra, int *far);
/* Those extra round trips of an operation (DM_RPC_OFF_*) asking for max entries, leaves of leaf_cap. */
extern int	dm_offload_extra_rounds(uint32_t code, uint32_t max, int leaf_cap);
/*
 * The model (DEX §6.1 with the changes dm_offload.c describes): 1 when an
 * offload from a miss at level (>= 0) beats the one-sided path, given the
 * estimates and the memnode's queue (offloads in flight per slot).
 */
extern int	dm_offload_model(const struct dm_offload *o, int level, int extra, uint32_t inflight,
							 uint32_t slots);
/* Offload from a miss at level (-1 unknown) on memnode?  explore: the contrary choice was drawn. */
extern int	dm_offload_decide(dm_tree *t, int level, int extra, uint16_t memnode, int explore);
/* The one-sided path's sample for l_o, taken around an operation (not always: see there). */
typedef struct dm_offload_sample
{
	int			on;				/* this operation is timed */
	uint64_t	t0;
	uint64_t	rt0;			/* the client's round trips before it */
} dm_offload_sample;
extern void dm_offload_sample_begin(dm_tree *t, dm_offload_sample *s);
extern void dm_offload_sample_end(dm_tree *t, const dm_offload_sample *s);

#endif							/* DM_OFFLOAD_INT_H */
