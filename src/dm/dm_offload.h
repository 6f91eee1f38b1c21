/*
 * dm_offload.h — offloading tree operations to the memory nodes (DEX §6):
 * the executor the memnode runs (dm_tree_exec.c, called by
 * memnode/offload.c) and the client's side (dm_offload.c: when to offload,
 * the RPCs, and coherence with the compute-side cache).
 */
#ifndef DM_OFFLOAD_H
#define DM_OFFLOAD_H

#include "dm_tree.h"

/* ---- executor (memnode side) ------------------------------------------------ */

/* rep->done of a scan that stopped at a memnode boundary: go on with entries >= resume */
#define DM_OFF_RESUME_INCL 2

/*
 * A handle in executor mode for one request, on an in-process client of
 * memnode `memnode` (dm_client_create_local).  DM_ERR_INVALID for a request
 * whose parameters cannot be right.  Free it with dm_tree_close().
 */
extern int	dm_tree_exec_open(dm_client *c, uint16_t memnode, const dm_rpc_off_req *req, dm_tree **out);
/*
 * Run the request (code DM_RPC_OFF_*): fills rep and, for LOOKUP/SCAN,
 * rep->count entries of ents (room for req->max).  DM_ERR_FALLBACK: nothing
 * was changed, the client must do it itself (dm_tree_exec_error says why).
 */
extern int	dm_tree_exec_run(dm_tree *t, uint32_t code, const dm_rpc_off_req *req,
							 dm_rpc_off_rep *rep, dm_entry_wire *ents);
extern const char *dm_tree_exec_error(const dm_tree *t);

/* ---- client side -------------------------------------------------------------- */

typedef enum dm_offload_mode
{
	DM_OFFLOAD_OFF = 0,			/* never */
	DM_OFFLOAD_ALWAYS = 1,		/* at every miss (tests; DEX's "offload-only") */
	DM_OFFLOAD_AUTO = 2			/* when the cost model says it is faster (DEX §6.1) */
} dm_offload_mode;

/* Parse "off" / "always" / "auto"; -1 if none of them. */
extern int	dm_offload_mode_parse(const char *s);
extern const char *dm_offload_mode_name(int mode);

/*
 * Make the handle's lookups, scans (dm_tree_offload_scan), inserts and
 * deletes offload (or not).  Reads the memnodes' load now and then
 * (DM_RPC_OFF_LOAD).  A handle in replica mode never offloads writes.
 */
extern int	dm_tree_set_offload(dm_tree *t, int mode);
extern int	dm_tree_get_offload(const dm_tree *t);

typedef struct dm_offload_counters
{
	uint64_t	offloads;		/* operations the executor did */
	uint64_t	fallbacks;		/* offloads answered "fall back" (then done one-sided) */
	uint64_t	decided_offload;	/* misses where the policy chose to offload */
	uint64_t	decided_local;	/* ... chose one-sided reads */
	uint64_t	explored;		/* of those, the contrary choice taken to refresh estimates */
	uint64_t	unwalked;		/* of decided_local, those made without the cache walk: no level could win */
	uint64_t	load_reports;	/* DM_RPC_OFF_LOAD calls */
	uint64_t	invalidated;	/* cached nodes dropped because the executor wrote them */
	uint64_t	lost_writes;	/* offloaded writes whose outcome is unknown (RPC failed) */
	uint64_t	rpc_ns_total;	/* time spent in offload RPCs, */
	uint64_t	rpcs;			/* ... over this many of them */
	uint64_t	read_ns_total;	/* time spent in timed one-sided paths (a sample of them */
	uint64_t	reads;			/* where an RPC loses by far), over this many round trips */
	uint64_t	rpc_ns_avg;		/* moving average of an offload's latency */
	uint64_t	read_ns_avg;	/* ... of one remote node read (one-sided) */
	uint64_t	memnode_busy_pct;	/* the memnode's executor busy ratio last seen */
} dm_offload_counters;
extern void dm_tree_offload_counters(const dm_tree *t, dm_offload_counters *out);
/*
 * The same, then zero the counts (not the averages, the busy ratio or the
 * estimates the policy uses): for callers that add every handle's counts
 * into one total (PostgreSQL's shared counters, src/pg/dmoffload.c).
 */
extern void dm_tree_offload_counters_take(dm_tree *t, dm_offload_counters *out);

/*
 * Offloaded writes of this tree whose outcome is unknown (their RPC failed:
 * a timeout, a cancel) may still land on the memnode, after any cached
 * copy was dropped.  Their tokens wait in the cache's shared table until
 * this is called: it has the memnodes cancel them and waits until none
 * runs (DM_RPC_OFF_DRAIN), then drops every cached frame of the tree;
 * *drained (if not NULL) says how many writes it drained (the access
 * method then tells hot standbys to drop the whole tree).  A
 * process that shares a cache calls it before each unit of work on the
 * tree (the access method: at every index open), holding no frame;
 * without pending writes it costs one load.  An error (a memnode
 * unreachable) leaves them pending: the tree's cached copies are then not
 * to be trusted, so the caller must not go on.
 */
extern int	dm_tree_drain_settle(dm_tree *t, int *drained);

/*
 * Hooks of the public operations (dm_tree.c, dm_tree_scan.c): try the
 * operation offloaded; DM_ERR_FALLBACK means "do it one-sided" (the policy
 * said so, or the executor declined), any other status is the result.
 */
extern int	dm_offload_write(dm_tree *t, dm_entry e, int del, int *existed);
/*
 * Hook of dm_tree_insert_sorted / dm_tree_delete_sorted: the entries the
 * policy offloads go one RPC each, the rest one-sided as one sorted batch
 * (always: every entry is offered; auto: a one-entry batch is decided like
 * a single write, a longer one goes one-sided).
 */
extern int	dm_offload_sorted(dm_tree *t, const dm_entry *e, int n, int del, int *changed);
extern int	dm_offload_lookup(dm_tree *t, uint64_t key, uint64_t *tids, int max, int *n);
/*
 * Up to max entries of [lo, hi] from lo upward in one offload where
 * possible.  *more: 0 = the range is done, else there may be more (always
 * so when max entries came): continue from *resume (exclusive if
 * *more == 1, inclusive if DM_OFF_RESUME_INCL).  Falls back to an iterator
 * itself, so it always answers.
 */
extern int	dm_tree_offload_scan(dm_tree *t, dm_entry lo, int lo_incl, dm_entry hi, int hi_incl,
								 dm_entry *out, int max, int *n, int *more, dm_entry *resume);
/*
 * The same, but only offloaded: DM_ERR_FALLBACK (nothing read) when the
 * policy chose one-sided reads or the executor declined, so that a caller
 * with its own iterator (src/pg/dmscan.c) goes on with it instead of one
 * opened per batch.  n may be 0 with *more set (nothing on this memnode).
 */
extern int	dm_offload_scan_batch(dm_tree *t, dm_entry lo, int lo_incl, dm_entry hi, int hi_incl,
								  dm_entry *out, int max, int *n, int *more, dm_entry *resume);
/*
 * dm_iter_open for the caller of dm_offload_scan_batch that was answered
 * DM_ERR_FALLBACK: the opening (a descent) is timed as a sample of the
 * one-sided path, which the policy needs as much as the RPC's.
 */
extern int	dm_offload_iter_open(dm_tree *t, const dm_range *r, dm_iter **out);

#endif							/* DM_OFFLOAD_H */
