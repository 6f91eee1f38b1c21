/*
 * dmoffload.c — offloading tree operations to the memory nodes from the
 * access method (DEX §6; the core is src/dm/dm_offload.c): the GUC
 * dmindex.offload, applying it to the trees the AM opens, and this
 * server's offload counters in shared memory with the SQL functions
 * dmindex_offload_stats() and dmindex_offload_stats_reset().
 *
 * What is offloaded where the policy says so: the insert buffer's flushes
 * and VACUUM's deletes (dm_tree_insert_sorted / dm_tree_delete_sorted) and
 * forward index scans (dmscan.c reads batches from the executor).  Backward
 * scans read one-sided.  A hot standby offloads nothing: its handles are
 * read-only replicas, which must read the removal horizon after every node
 * (dmstandby.c) and never write.
 *
 * The default is "auto" (docs/design.md §8, "Offloading"): over shm a
 * remote read is a memory access and the cost model keeps nearly every
 * operation one-sided; over tcp it offloads where an RPC beats the round
 * trips of the descent.
 *
 * Counters.  Each tree handle counts its own (dm_offload_counters); after
 * every operation that may have offloaded, the AM adds them into this
 * server's totals (dmindex_offload_publish) — atomics in shared memory, so
 * dmindex_offload_stats() shows every backend's work.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "dm_offload.h"
#include "dmam.h"

PG_FUNCTION_INFO_V1(dmindex_offload_stats);
PG_FUNCTION_INFO_V1(dmindex_offload_stats_reset);

int			dmindex_offload = DM_OFFLOAD_AUTO;

static const struct config_enum_entry offload_options[] = {
	{"off", DM_OFFLOAD_OFF, false},
	{"always", DM_OFFLOAD_ALWAYS, false},
	{"auto", DM_OFFLOAD_AUTO, false},
	{NULL, 0, false}
};

/* The counts of dm_offload_counters this server adds up. */
enum
{
	OC_OFFLOADS,
	OC_FALLBACKS,
	OC_DECIDED_OFFLOAD,
	OC_DECIDED_LOCAL,
	OC_EXPLORED,
	OC_LOAD_REPORTS,
	OC_INVALIDATED,
	OC_LOST_WRITES,
	OC_RPC_NS,
	OC_RPCS,
	OC_READ_NS,
	OC_READS,
	OC_COUNT
};

typedef struct OffloadShared
{
	pg_atomic_uint64 count[OC_COUNT];
	pg_atomic_uint64 busy_pct;	/* the last memnode busy ratio a backend saw */
} OffloadShared;

static OffloadShared *offload_shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
offload_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(OffloadShared)));
}

static void
offload_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	offload_shared = ShmemInitStruct("dmindex offload counters", sizeof(OffloadShared), &found);
	if (!found)
	{
		for (int i = 0; i < OC_COUNT; i++)
			pg_atomic_init_u64(&offload_shared->count[i], 0);
		pg_atomic_init_u64(&offload_shared->busy_pct, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
dmindex_offload_init(void)
{
	DefineCustomEnumVariable("dmindex.offload",
							 "Whether index operations are offloaded to the memory nodes' CPUs.",
							 "\"auto\" offloads the rest of an operation at a node cache miss when "
							 "the cost model says one RPC beats the remaining round trips and the "
							 "memory node is not busy; \"always\" at every miss (for tests); "
							 "\"off\" never.",
							 &dmindex_offload,
							 DM_OFFLOAD_AUTO,
							 offload_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = offload_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = offload_shmem_startup;
}

void
dmindex_offload_apply(dm_tree *tree)
{
	/* a standby's read-only replica never offloads (see the top of this file) */
	int			mode = dm_tree_is_replica(tree) ? DM_OFFLOAD_OFF : dmindex_offload;
	int			rc;

	if (dm_tree_get_offload(tree) == mode)
		return;
	/* the handle's counts so far belong to the totals before its state goes */
	dmindex_offload_publish(tree);
	/* DM_ERR_NOMEM is its only failure (the mode is one of the GUC's) */
	if ((rc = dm_tree_set_offload(tree, mode)) != DM_OK)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("The offloading state of a dmindex tree could not be allocated.")));
}

void
dmindex_offload_publish(dm_tree *tree)
{
	dm_offload_counters c;
	uint64		v[OC_COUNT];

	if (offload_shared == NULL || dm_tree_get_offload(tree) == DM_OFFLOAD_OFF)
		return;
	dm_tree_offload_counters_take(tree, &c);
	v[OC_OFFLOADS] = c.offloads;
	v[OC_FALLBACKS] = c.fallbacks;
	v[OC_DECIDED_OFFLOAD] = c.decided_offload;
	v[OC_DECIDED_LOCAL] = c.decided_local;
	v[OC_EXPLORED] = c.explored;
	v[OC_LOAD_REPORTS] = c.load_reports;
	v[OC_INVALIDATED] = c.invalidated;
	v[OC_LOST_WRITES] = c.lost_writes;
	v[OC_RPC_NS] = c.rpc_ns_total;
	v[OC_RPCS] = c.rpcs;
	v[OC_READ_NS] = c.read_ns_total;
	v[OC_READS] = c.reads;
	for (int i = 0; i < OC_COUNT; i++)
		if (v[i] != 0)
			pg_atomic_fetch_add_u64(&offload_shared->count[i], (int64) v[i]);
	if (c.load_reports > 0)
		pg_atomic_write_u64(&offload_shared->busy_pct, c.memnode_busy_pct);
}

/* ---- SQL functions ------------------------------------------------------------ */

Datum
dmindex_offload_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[13];
	bool		nulls[13] = {0};
	uint64		v[OC_COUNT] = {0};
	int			i = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (offload_shared)
		for (int k = 0; k < OC_COUNT; k++)
			v[k] = pg_atomic_read_u64(&offload_shared->count[k]);
	values[i++] = CStringGetTextDatum(dm_offload_mode_name(dmindex_offload));
	values[i++] = Int64GetDatum((int64) v[OC_OFFLOADS]);
	values[i++] = Int64GetDatum((int64) v[OC_FALLBACKS]);
	values[i++] = Int64GetDatum((int64) v[OC_DECIDED_OFFLOAD]);
	values[i++] = Int64GetDatum((int64) v[OC_DECIDED_LOCAL]);
	values[i++] = Int64GetDatum((int64) v[OC_EXPLORED]);
	values[i++] = Int64GetDatum((int64) v[OC_LOAD_REPORTS]);
	values[i++] = Int64GetDatum((int64) v[OC_INVALIDATED]);
	values[i++] = Int64GetDatum((int64) v[OC_LOST_WRITES]);
	if (v[OC_RPCS] > 0)
		values[i++] = Float8GetDatum((double) v[OC_RPC_NS] / (double) v[OC_RPCS] / 1000.0);
	else
		nulls[i++] = true;
	if (v[OC_READS] > 0)
		values[i++] = Float8GetDatum((double) v[OC_READ_NS] / (double) v[OC_READS] / 1000.0);
	else
		nulls[i++] = true;
	if (offload_shared && v[OC_LOAD_REPORTS] > 0)
		values[i++] = Int32GetDatum((int32) pg_atomic_read_u64(&offload_shared->busy_pct));
	else
		nulls[i++] = true;
	values[i++] = Int64GetDatum((int64) v[OC_RPCS]);
	Assert(i == lengthof(values));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
dmindex_offload_stats_reset(PG_FUNCTION_ARGS)
{
	if (offload_shared)
	{
		for (int k = 0; k < OC_COUNT; k++)
			pg_atomic_write_u64(&offload_shared->count[k], 0);
		pg_atomic_write_u64(&offload_shared->busy_pct, 0);
	}
	PG_RETURN_VOID();
}
