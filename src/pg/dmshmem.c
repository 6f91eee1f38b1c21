/*
 * dmshmem.c — the compute-side node cache of this PostgreSQL instance
 * (src/dm/dm_cache.h; DESIGN.md §6) in shared memory: its GUCs, its
 * creation at server start, attaching index handles to it, and the SQL
 * functions dmindex_cache_stats() and dmindex_cache_stats_reset() (the
 * partition map's are in dmpartition.c).
 *
 * Every backend writes the nodes its instance owns through this one cache
 * under the frames' local locks, without remote locks, so the policy, the
 * frame size and the instance id are fixed at server start (PGC_POSTMASTER):
 * a backend that wrote around the cache would race with one writing through
 * it.  After a backend crash the postmaster re-creates shared memory, and
 * with it an empty cache; as the cache is write-through, nothing is lost.
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "access/table.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "dm_cache.h"
#include "dmam.h"
#include "dmindex.h"

PG_FUNCTION_INFO_V1(dmindex_cache_stats);
PG_FUNCTION_INFO_V1(dmindex_cache_stats_reset);

/* A cache needs some frames to work: a root-to-leaf path per backend and then some. */
#define MIN_FRAMES 64

int			dmindex_cache_size_kb = 64 * 1024;
int			dmindex_cache_policy = DM_CACHE_DEX;
double		dmindex_cache_leaf_admission = 0.1;
double		dmindex_cache_hop_admission = DM_CACHE_HOP_ADMIT_DEFAULT / 1000.0;
int			dmindex_cache_frame_size = 1024;
int			dmindex_hotspot_entries = DM_CACHE_HOTSPOT_DEFAULT;
int			dmindex_instance_id = 0;
dm_cache   *dmindex_node_cache = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static const struct config_enum_entry policy_options[] = {
	{"off", DM_CACHE_OFF, false},
	{"inner", DM_CACHE_INNER, false},
	{"dex", DM_CACHE_DEX, false},
	{NULL, 0, false}
};

static const char *
policy_name(int p)
{
	return p == DM_CACHE_DEX ? "dex" : p == DM_CACHE_INNER ? "inner" : "off";
}

static bool
frame_size_check_hook(int *newval, void **extra, GucSource source)
{
	if (*newval < 256 || *newval > 4096 || (*newval & (*newval - 1)) != 0)
	{
		GUC_check_errdetail("The frame size must be a power of two between 256 and 4096 bytes.");
		return false;
	}
	return true;
}

/* The configuration the GUCs ask for; false when there is to be no cache. */
static bool
wanted_config(dm_cache_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	if (dmindex_cache_policy == DM_CACHE_OFF || dmindex_cache_size_kb == 0)
		return false;
	cfg->frame_size = (uint32) dmindex_cache_frame_size;
	cfg->nframes = dm_cache_frames_for_bytes((size_t) dmindex_cache_size_kb * 1024, cfg->frame_size);
	cfg->policy = (dm_cache_policy) dmindex_cache_policy;
	cfg->leaf_admit_permille = (uint32) rint(dmindex_cache_leaf_admission * 1000);
	cfg->cooling_percent = 10;
	{
		uint32		ha = (uint32) rint(dmindex_cache_hop_admission * 1000);

		cfg->hop_admit_permille = ha == 0 ? DM_CACHE_HOP_ADMIT_NEVER : ha;
	}
	/* the instance's hotspot buffer lives in the cache's memory, on top of dmindex.cache_size */
	cfg->hotspot_entries = dmindex_hotspot_entries == 0 ? DM_CACHE_HOTSPOT_NONE : (uint32) dmindex_hotspot_entries;
	return true;
}

static void
cache_shmem_request(void)
{
	dm_cache_config cfg;

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	if (wanted_config(&cfg))
		RequestAddinShmemSpace(add_size(dm_cache_shmem_size(&cfg), 64));
}

static void
cache_shmem_startup(void)
{
	dm_cache_config cfg;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	dmindex_node_cache = NULL;
	if (!wanted_config(&cfg))
		return;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	{
		Size		size = dm_cache_shmem_size(&cfg);
		bool		found;
		char	   *mem = ShmemInitStruct("dmindex node cache", add_size(size, 64), &found);
		void	   *aligned = (void *) TYPEALIGN(64, mem);

		dmindex_node_cache = found ? dm_cache_attach(aligned) : dm_cache_init(aligned, size, &cfg);
	}
	LWLockRelease(AddinShmemInitLock);
	if (dmindex_node_cache == NULL)
		elog(FATAL, "could not initialize the dmindex node cache");
}

void
dmindex_cache_init(void)
{
	dm_cache_config cfg;

	DefineCustomIntVariable("dmindex.cache_size",
							"Shared memory for the node cache of dmindex indexes.",
							"0 disables the cache: every node is read from the memory nodes.",
							&dmindex_cache_size_kb,
							64 * 1024,
							0,
							INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("dmindex.cache_policy",
							 "What the node cache holds.",
							 "\"dex\" caches inner nodes and admits a leaf with the probability "
							 "dmindex.cache_leaf_admission, \"inner\" caches inner nodes only, "
							 "\"off\" caches nothing.",
							 &dmindex_cache_policy,
							 DM_CACHE_DEX,
							 policy_options,
							 PGC_POSTMASTER,
							 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("dmindex.cache_leaf_admission",
							 "Probability that a leaf read from a memory node is admitted to the node cache.",
							 "Inner nodes are always admitted; leaves written are always admitted.",
							 &dmindex_cache_leaf_admission,
							 0.1,
							 0.0,
							 1.0,
							 PGC_POSTMASTER,
							 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("dmindex.cache_hop_admission",
							 "Probability that a leaf a point lookup in a hopscotch-leaf index missed is admitted "
							 "to the node cache.",
							 "Such a lookup reads only the key's neighbourhood, so admitting reads the whole leaf "
							 "for the cache alone; other leaf reads follow dmindex.cache_leaf_admission.",
							 &dmindex_cache_hop_admission,
							 DM_CACHE_HOP_ADMIT_DEFAULT / 1000.0,
							 0.0,
							 1.0,
							 PGC_POSTMASTER,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("dmindex.cache_frame_size",
							"Size of a node cache frame.",
							"Indexes whose node size is larger are not cached.",
							&dmindex_cache_frame_size,
							1024,
							256,
							4096,
							PGC_POSTMASTER,
							GUC_UNIT_BYTE,
							frame_size_check_hook, NULL, NULL);

	DefineCustomIntVariable("dmindex.hotspot_entries",
							"Keys the shared hotspot buffer of hopscotch-leaf indexes remembers.",
							"A lookup of a remembered key reads 16 bytes of its leaf instead of its "
							"neighbourhood. The buffer takes 64 bytes a key of shared memory on top of "
							"dmindex.cache_size and is shared by every backend; 0 disables it. "
							"Without a node cache each backend keeps a small buffer of its own.",
							&dmindex_hotspot_entries,
							DM_CACHE_HOTSPOT_DEFAULT,
							0,
							DM_CACHE_HOTSPOT_MAX,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("dmindex.instance_id",
							"Which instance of the partition maps this server is.",
							"Each server attached to the same memory nodes needs its own id (dmclaim.c "
							"refuses a second live server with the same id); the partition maps say "
							"which key ranges each id caches.",
							&dmindex_instance_id,
							0,
							0,
							DMINDEX_MAX_INSTANCE_ID,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	if (wanted_config(&cfg) && cfg.nframes < MIN_FRAMES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"dmindex.cache_size\" is too small: %d kB hold %u frames of %d bytes",
						dmindex_cache_size_kb, cfg.nframes, dmindex_cache_frame_size),
				 errdetail("The node cache needs at least %d frames.", MIN_FRAMES),
				 errhint("Set \"dmindex.cache_size\" to 0 to run without a cache, or raise it.")));

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = cache_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = cache_shmem_startup;
}

/* ---- SQL functions ------------------------------------------------------------ */

static Datum
int8_array(const uint64 *v, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * n);

	for (int i = 0; i < n; i++)
		d[i] = Int64GetDatum((int64) v[i]);
	return PointerGetDatum(construct_array(d, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/* Highest level with anything to report, + 1 (at least 1). */
static int
levels_used(const dm_cache_stats *st)
{
	int			n = 1;

	for (int l = 0; l < DM_CACHE_LEVELS; l++)
		if (st->frames_used[l] || st->hits[l] || st->misses[l])
			n = l + 1;
	return n;
}

Datum
dmindex_cache_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	dm_cache_stats st;
	Datum		values[22];
	bool		nulls[22] = {0};
	uint64		used = 0,
				hits = 0,
				misses = 0;
	int			i = 0,
				nl;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	memset(&st, 0, sizeof(st));
	if (dmindex_node_cache)
		dm_cache_stats_get(dmindex_node_cache, &st);
	for (int l = 0; l < DM_CACHE_LEVELS; l++)
	{
		used += st.frames_used[l];
		hits += st.hits[l];
		misses += st.misses[l];
	}
	nl = levels_used(&st);
	values[i++] = CStringGetTextDatum(policy_name(dmindex_node_cache ? (int) st.policy : DM_CACHE_OFF));
	values[i++] = Int64GetDatum((int64) st.nframes);
	values[i++] = Int32GetDatum((int32) st.frame_size);
	values[i++] = Int64GetDatum((int64) used);
	values[i++] = Int64GetDatum((int64) st.frames_cooling);
	values[i++] = Int64GetDatum((int64) hits);
	values[i++] = Int64GetDatum((int64) misses);
	if (hits + misses > 0)
		values[i++] = Float8GetDatum((double) hits / (double) (hits + misses));
	else
		nulls[i++] = true;
	values[i++] = Int64GetDatum((int64) st.hint_hits);
	values[i++] = Int64GetDatum((int64) st.admissions);
	values[i++] = Int64GetDatum((int64) st.admit_skipped);
	values[i++] = Int64GetDatum((int64) st.evictions);
	values[i++] = Int64GetDatum((int64) st.coolings);
	values[i++] = Int64GetDatum((int64) st.promotions);
	values[i++] = Int64GetDatum((int64) st.io_waits);
	values[i++] = Int64GetDatum((int64) st.local_writes);
	values[i++] = Int64GetDatum((int64) st.round_trips_avoided);
	values[i++] = Int64GetDatum((int64) st.bytes_avoided);
	values[i++] = int8_array(st.frames_used, nl);
	values[i++] = int8_array(st.hits, nl);
	values[i++] = int8_array(st.misses, nl);
	values[i++] = Int64GetDatum((int64) st.invalidations);
	Assert(i == lengthof(values));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
dmindex_cache_stats_reset(PG_FUNCTION_ARGS)
{
	if (dmindex_node_cache)
		dm_cache_stats_reset(dmindex_node_cache);
	PG_RETURN_VOID();
}
