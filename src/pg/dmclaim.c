/*
 * dmclaim.c — this server's claim of its dmindex.instance_id (DESIGN.md
 * §7; the claim itself is src/dm/dm_claim.c).
 *
 * Two running servers with the same instance id would each take the same
 * nodes for their own (pg_basebackup copies postgresql.conf, and with it
 * the primary's id, to every standby it makes).  So before a backend uses
 * an index it makes sure this server holds the claim of its instance id on
 * the index's home memnode: a lease of dmindex.instance_lease seconds in
 * that memnode's catalog.  A second live server asking for the same id is
 * refused with ERRCODE_OBJECT_IN_USE.
 *
 * When: the keeper worker claims the id on every configured memnode as
 * soon as the server starts (so a running primary holds its id before any
 * standby is made from its backup), and retries where it could not; a
 * backend also claims on the home memnode of an index it opens if no valid
 * claim is known there.
 *
 * Who holds a claim: the server's identity (host name, port and data
 * directory: unique among running servers, as only one postmaster can run
 * on a data directory, and the same across restarts, so a restarted server
 * gets its claim back at once instead of waiting out its own old lease).
 * Each run also has a random token, written beside the claim for
 * diagnostics.  The claim is renewed by the "dmindex claim keeper"
 * background worker every third of the lease, and lazily by any backend
 * that opens an index when less than half the lease is left (so claims
 * stay valid if the keeper is slow); the keeper gives the claims up when
 * the server shuts down cleanly.  A server stopped without that (crash,
 * immediate shutdown) leaves its lease to run out: another server can take
 * the id over after at most dmindex.instance_lease.
 *
 * Shared memory keeps, per memnode, the lease end this server last wrote
 * and the memnode's incarnation (a restarted memnode has an empty catalog,
 * so the claim must be made again there).
 */
#include "postgres.h"

#include <time.h>
#include <unistd.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "dm_claim.h"
#include "dmam.h"
#include "dmindex.h"

#define MAX_CLAIM_NODES 64

typedef struct ClaimSlot
{
	bool		used;
	bool		lost;			/* the keeper found another server holding it */
	uint16		node;
	uint64		incarnation;	/* the memnode's incarnation the claim was made on */
	uint32		lease_end_s;	/* as this server last wrote it */
} ClaimSlot;

typedef struct ClaimShared
{
	slock_t		mutex;
	uint64		run_token;
	int			instance;		/* the id claimed (dmindex.instance_id is fixed at start) */
	ClaimSlot	slots[MAX_CLAIM_NODES];
} ClaimShared;

int			dmindex_instance_lease = 30;

static ClaimShared *claims = NULL;
static uint64 server_identity = 0;
static uint64 run_token = 0;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

PGDLLEXPORT void dmindex_claim_keeper_main(Datum arg);

static uint32
now_s(void)
{
	return (uint32) time(NULL);
}

/* FNV-1a over the identity string: stable for this host, port and data directory. */
static uint64
make_identity(void)
{
	char		host[256] = "";
	char	   *s;
	uint64		h = UINT64CONST(0xcbf29ce484222325);

	(void) gethostname(host, sizeof(host) - 1);
	s = psprintf("%s:%d:%s", host, PostPortNumber, DataDir ? DataDir : "");
	for (const char *p = s; *p; p++)
		h = (h ^ (uint8) *p) * UINT64CONST(0x100000001b3);
	pfree(s);
	return h;
}

static void
claim_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(ClaimShared)));
}

static void
claim_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	claims = ShmemInitStruct("dmindex instance claims", sizeof(ClaimShared), &found);
	if (!found)
	{
		/*
		 * Also after a crash restart of the backends: the claims stay ours
		 * (same identity), they are just made again on first use.
		 */
		memset(claims, 0, sizeof(*claims));
		SpinLockInit(&claims->mutex);
		claims->run_token = run_token;
		claims->instance = dmindex_instance_id;
	}
	LWLockRelease(AddinShmemInitLock);
}

static ClaimSlot *
find_slot(uint16 node, bool create)
{
	ClaimSlot  *free_slot = NULL;

	for (int i = 0; i < MAX_CLAIM_NODES; i++)
	{
		if (claims->slots[i].used && claims->slots[i].node == node)
			return &claims->slots[i];
		if (!claims->slots[i].used && free_slot == NULL)
			free_slot = &claims->slots[i];
	}
	if (create && free_slot)
	{
		memset(free_slot, 0, sizeof(*free_slot));
		free_slot->used = true;
		free_slot->node = node;
	}
	return create ? free_slot : NULL;
}

static void
refuse(uint16 node, const dm_claim_state *st)
{
	int			left = (int) st->lease_end_s - (int) now_s();

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("dmindex instance %d is already in use by another server", dmindex_instance_id),
			 errdetail("Memory node %u holds a claim of instance %d by another server (run %016llx) whose lease ends in %d s.",
					   node, dmindex_instance_id, (unsigned long long) st->run_token, Max(left, 0)),
			 errhint("Set a distinct \"dmindex.instance_id\" on each server (a standby made by pg_basebackup copies the primary's).")));
}

void
dmindex_claim_check(dm_client *client, uint16 node)
{
	dm_node_info info;
	dm_claim_state st;
	ClaimSlot  *slot;
	uint32		now = now_s();
	uint32		lease = (uint32) dmindex_instance_lease;
	bool		fresh = false;
	int			rc;

	if (claims == NULL || !dmindex_node_info(client, node, &info))
		return;					/* no connection: the caller's own access reports it */
	SpinLockAcquire(&claims->mutex);
	slot = find_slot(node, false);
	/* more than half the lease left, on this incarnation of the memnode: nothing to do */
	if (slot && !slot->lost && slot->incarnation == info.incarnation &&
		slot->lease_end_s > now + lease / 2)
		fresh = true;
	SpinLockRelease(&claims->mutex);
	if (fresh)
		return;

	rc = dm_claim_take(client, node, GetSystemIdentifier(), (uint32) dmindex_instance_id,
					   server_identity, run_token, now, lease, &st);
	if (rc == DM_ERR_EXISTS)
	{
		SpinLockAcquire(&claims->mutex);
		if ((slot = find_slot(node, false)) != NULL)
			slot->lost = true;
		SpinLockRelease(&claims->mutex);
		refuse(node, &st);
	}
	if (rc != DM_OK)
		dmindex_raise(rc, client, info.address);
	SpinLockAcquire(&claims->mutex);
	slot = find_slot(node, true);
	if (slot)
	{
		/* concurrent renewals by several backends: keep the latest end */
		if (slot->incarnation != info.incarnation || slot->lost || st.lease_end_s > slot->lease_end_s)
			slot->lease_end_s = st.lease_end_s;
		slot->lost = false;
		slot->incarnation = info.incarnation;
	}
	SpinLockRelease(&claims->mutex);
	if (slot == NULL)
		elog(WARNING, "dmindex: more than %d memory nodes hold claims of this server; memory node %u is not renewed in the background",
			 MAX_CLAIM_NODES, node);
}

/*
 * Whether another running server holds the claim of `instance` on memnode
 * node: a holder that is not this server (same host, port and data
 * directory) and whose lease has not ended.  Errors count as held (the
 * caller then stays on the safe side).
 */
bool
dmindex_claim_held_by_other(dm_client *client, uint16 node, int instance)
{
	dm_claim_state st;

	if (dm_claim_get(client, node, GetSystemIdentifier(), (uint32) instance, &st) != DM_OK)
		return true;
	if (st.holder == 0 || st.holder == dm_claim_holder(server_identity ? server_identity : make_identity()))
		return false;
	return st.lease_end_s > now_s();
}

/* ---- the keeper: renews every claim, gives them up at shutdown ---------------------- */

/*
 * One pass of the keeper.  release = false: claim the id on every
 * configured memnode this server has no valid claim on, and renew the
 * others; release = true (a clean shutdown): give every claim up.
 */
static void
keeper_pass(bool release)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "dmindex claim keeper",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	DmTempClient *tc = dmindex_temp_client_create();
	dm_client  *client = dmindex_temp_client_get(tc);

	for (int i = 0; i < dmindex_memnode_list->count; i++)
	{
		uint16		id;
		dm_node_info info;
		dm_claim_state st;
		ClaimSlot	mine;
		bool		have;
		int			rc;

		memset(&mine, 0, sizeof(mine));
		if (dmindex_connect(client, dmindex_memnode_list->addresses[i], false, &id) != DM_OK ||
			!dmindex_node_info(client, id, &info))
			continue;
		SpinLockAcquire(&claims->mutex);
		{
			ClaimSlot  *s = find_slot(id, false);

			have = s != NULL;
			if (have)
				mine = *s;
		}
		SpinLockRelease(&claims->mutex);
		if (release)
		{
			if (have && !mine.lost && mine.incarnation == info.incarnation)
				(void) dm_claim_release(client, id, GetSystemIdentifier(),
										(uint32) dmindex_instance_id, server_identity);
			continue;
		}
		rc = dm_claim_take(client, id, GetSystemIdentifier(), (uint32) dmindex_instance_id,
						   server_identity, run_token, now_s(),
						   (uint32) dmindex_instance_lease, &st);
		if (rc != DM_OK && rc != DM_ERR_EXISTS)
			continue;			/* unreachable now: next round */
		SpinLockAcquire(&claims->mutex);
		{
			ClaimSlot  *s = find_slot(id, true);

			if (s)
			{
				s->incarnation = info.incarnation;
				s->lost = rc == DM_ERR_EXISTS;
				if (rc == DM_OK)
					s->lease_end_s = st.lease_end_s;
			}
		}
		SpinLockRelease(&claims->mutex);
		/* say so once, when it changes */
		if (rc == DM_ERR_EXISTS && (!have || !mine.lost))
			ereport(WARNING,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("dmindex instance %d is already in use by another server", dmindex_instance_id),
					 errdetail("Memory node %u holds a claim of instance %d by another server (run %016llx); this server's dmindex indexes on it are refused until it can claim the id.",
							   id, dmindex_instance_id, (unsigned long long) st.run_token),
					 errhint("Set a distinct \"dmindex.instance_id\" on each server (a standby made by pg_basebackup copies the primary's).")));
		else if (rc == DM_OK && have && mine.lost)
			ereport(LOG,
					(errmsg("dmindex instance %d claimed on memory node %u", dmindex_instance_id, id)));
	}
	dmindex_temp_client_destroy(tc);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

void
dmindex_claim_keeper_main(Datum arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();

	/* claim at once, then renew every third of the lease */
	while (!ShutdownRequestPending)
	{
		long		wait_ms = Max(1000L, dmindex_instance_lease * 1000L / 3);

		keeper_pass(false);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 wait_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
	/* a clean shutdown: another server may take the id at once */
	keeper_pass(true);
	proc_exit(0);
}

void
dmindex_claim_init(void)
{
	BackgroundWorker worker;

	DefineCustomIntVariable("dmindex.instance_lease",
							"How long a server's claim of its dmindex.instance_id lasts without renewal.",
							"A server that stops without giving its claim up (a crash) blocks its "
							"instance id for other servers this long.",
							&dmindex_instance_lease,
							30,
							2,
							3600,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	/* in the postmaster, so every process of this run shares it, also across backend crash restarts */
	server_identity = make_identity();
	if (!pg_strong_random(&run_token, sizeof(run_token)))
		run_token = (uint64) getpid() ^ ((uint64) time(NULL) << 20);

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = claim_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = claim_shmem_startup;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "dmindex");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "dmindex_claim_keeper_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "dmindex claim keeper");
	snprintf(worker.bgw_type, BGW_MAXLEN, "dmindex claim keeper");
	RegisterBackgroundWorker(&worker);
}
