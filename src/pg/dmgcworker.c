/*
 * dmgcworker.c — the background worker that frees remote trees no index
 * names any more (dmgc.c explains which those are).
 *
 * Most trees are freed eagerly after the transaction that dropped or
 * replaced their index; what is left over — a failed free, a prepared
 * transaction's outcome, a crash, a rolled-back savepoint's CREATE INDEX —
 * is collected here, and by dmindex_gc() on demand.  VACUUM no longer does
 * it: collecting means reading pg_class and opening every dmindex index of
 * the database, which a VACUUM of one table must not wait for or fail on.
 *
 * A launcher, connected to no database, wakes every dmindex.gc_naptime
 * seconds, asks the memnodes which databases of this cluster have trees,
 * frees the trees of databases that no longer exist, and starts one
 * short-lived worker per remaining database, one at a time, which runs the
 * collector there without waiting for any lock: an index under DDL makes it
 * give up on that database until the next round (so a prepared transaction
 * that holds such a lock for long delays collection there until it ends).
 * The launcher waits for each worker a bounded time (wait_for_collector).
 * The launcher starts only once recovery
 * has finished: a hot standby never frees remote memory.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "dmam.h"
#include "dmindex.h"

PGDLLEXPORT void dmindex_gc_launcher_main(Datum arg);
PGDLLEXPORT void dmindex_gc_database_main(Datum arg);

int			dmindex_gc_naptime = 60;

typedef struct DbState
{
	Oid			oid;
	bool		enterable;
} DbState;

/* The databases of the cluster (a fresh look at pg_database). */
static DbState *
list_databases(int *n)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	int			cap = 16;
	DbState    *out = palloc(sizeof(DbState) * cap);

	*n = 0;
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		if (*n == cap)
		{
			cap *= 2;
			out = repalloc(out, sizeof(DbState) * cap);
		}
		out[*n].oid = db->oid;
		/* a database half-dropped by an interrupted DROP DATABASE cannot be entered */
		out[*n].enterable = db->datconnlimit != DATCONNLIMIT_INVALID_DB;
		(*n)++;
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return out;
}

/*
 * Wait for the collector of database dboid to end, but not for ever: it
 * takes no lock it would wait for and every remote operation has a
 * timeout, yet a worker that hangs anyway (in its connection to the
 * database, say) must not stop collection in every other database.  After
 * gc_naptime + 5 minutes it is told to stop (SIGTERM) and, if it has not
 * after another minute, left alone; either way the next round starts on
 * time.  Interrupts of the launcher (SIGTERM) are served while it waits.
 */
static void
wait_for_collector(BackgroundWorkerHandle *handle, Oid dboid)
{
	TimestampTz start = GetCurrentTimestamp();
	long		limit_ms = ((long) (dmindex_gc_naptime > 0 ? dmindex_gc_naptime : 60) + 300) * 1000L;
	bool		terminated = false;

	for (;;)
	{
		pid_t		pid;
		BgwHandleStatus st;

		CHECK_FOR_INTERRUPTS();
		st = GetBackgroundWorkerPid(handle, &pid);
		if (st == BGWH_STOPPED || st == BGWH_POSTMASTER_DIED)
			return;
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), terminated ? limit_ms + 60000 : limit_ms))
		{
			if (terminated)
			{
				ereport(LOG,
						(errmsg("dmindex: the collector for database %u did not stop; not waiting for it any more",
								dboid)));
				return;
			}
			ereport(LOG,
					(errmsg("dmindex: the collector for database %u has run for %ld s: stopping it",
							dboid, limit_ms / 1000)));
			TerminateBackgroundWorker(handle);
			terminated = true;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* Run the collector in database dboid in a worker of its own; wait for it (bounded). */
static void
collect_in_database(Oid dboid)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "dmindex");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "dmindex_gc_database_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "dmindex collector for database %u", dboid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "dmindex collector");
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(LOG,
				(errmsg("dmindex: could not start a collector for database %u", dboid),
				 errhint("Raise \"max_worker_processes\".")));
		return;
	}
	wait_for_collector(handle, dboid);
	pfree(handle);
}

/* One round: every database with trees. */
static void
collect_round(void)
{
	Oid		   *tree_dbs;
	int			ntree_dbs;
	DbState    *dbs;
	int			ndbs;

	/* trees first, then pg_database: a database created in between is seen */
	StartTransactionCommand();
	tree_dbs = dmindex_gc_tree_databases(&ntree_dbs);
	PushActiveSnapshot(GetTransactionSnapshot());
	dbs = list_databases(&ndbs);
	PopActiveSnapshot();
	for (int i = 0; i < ntree_dbs; i++)
	{
		DbState    *db = NULL;

		for (int j = 0; j < ndbs && db == NULL; j++)
			if (dbs[j].oid == tree_dbs[i])
				db = &dbs[j];
		if (db == NULL)
		{
			int64		freed = dmindex_gc_free_database(tree_dbs[i]);

			if (freed > 0)
				ereport(LOG,
						(errmsg_plural("dmindex: freed %lld remote tree of dropped database %u",
									   "dmindex: freed %lld remote trees of dropped database %u",
									   freed, (long long) freed, tree_dbs[i])));
		}
	}
	CommitTransactionCommand();

	for (int i = 0; i < ntree_dbs; i++)
		for (int j = 0; j < ndbs; j++)
			if (dbs[j].oid == tree_dbs[i] && dbs[j].enterable)
			{
				collect_in_database(dbs[j].oid);
				CHECK_FOR_INTERRUPTS();
			}
}

void
dmindex_gc_launcher_main(Datum arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	for (;;)
	{
		long		wait_ms = (dmindex_gc_naptime > 0 ? dmindex_gc_naptime : 60) * 1000L;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 wait_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (dmindex_gc_naptime <= 0 || dmindex_memnode_list->count == 0 || RecoveryInProgress())
			continue;
		collect_round();
	}
}

void
dmindex_gc_database_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	int64		freed;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* also databases that refuse connections (datallowconn = false) */
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, BGWORKER_BYPASS_ALLOWCONN);

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "collecting orphaned dmindex trees");
	freed = dmindex_gc_database(false);
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	if (freed > 0)
		ereport(LOG,
				(errmsg_plural("dmindex: freed %lld remote tree of dropped or rebuilt indexes in database %u",
							   "dmindex: freed %lld remote trees of dropped or rebuilt indexes in database %u",
							   freed, (long long) freed, dboid)));
	proc_exit(0);
}

void
dmindex_gc_worker_init(void)
{
	BackgroundWorker worker;

	DefineCustomIntVariable("dmindex.gc_naptime",
							"Time between two rounds of the collector of orphaned remote trees.",
							"Remote trees whose index was dropped or rebuilt are normally freed at "
							"commit; the collector frees what is left over. 0 turns it off.",
							&dmindex_gc_naptime,
							60,
							0,
							86400,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL,
							NULL,
							NULL);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 10;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "dmindex");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "dmindex_gc_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "dmindex collector launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "dmindex collector launcher");
	RegisterBackgroundWorker(&worker);
}
