/*
 * dmscanpin.c — the interlock between VACUUM and scans that hold index
 * entries which a heap visit would no longer catch if their tid were freed.
 *
 * An index-only scan returns a key without visiting the heap when the
 * visibility map says the page is all-visible; a scan with a non-MVCC
 * snapshot trusts that a tid still holds the row it indexed.  Both hold a
 * private copy of a leaf (dm_tree_scan.c) between calls.  Without an
 * interlock, VACUUM could delete an entry the copy still has, mark the heap
 * item unused and the page all-visible, and the scan would then return the
 * deleted key (or another row that reused the tid).  btree prevents this by
 * making VACUUM take a cleanup lock on every leaf, which waits for the pin
 * such a scan keeps on its current leaf.
 *
 * dmindex's equivalent is a pin on a key range rather than on a node (nodes
 * split and move entries; a key range covers an entry wherever it went): a
 * pinned scan publishes, in shared memory, the entries it may still return
 * from what it has read — from its last returned entry to the far fence of
 * its leaf copy — and widens that to the rest of its range before every
 * remote read.  VACUUM, after each batch of deletes has landed, waits until
 * no pin of the same tree covers an entry it deleted: a scan that read the
 * entry before the delete published its pin before that read, so VACUUM
 * sees it; a scan whose pin VACUUM did not see reads only after the delete.
 * Only then does VACUUM go on and let the heap reuse the tids.  Like btree's,
 * VACUUM waits for a cursor parked on such entries (interruptibly).
 *
 * Pins live in a fixed pool of slots (several per backend); a backend
 * releases its pins when a scan ends, and all pins of a (sub)transaction
 * that aborts.  Plain MVCC scans and bitmap scans need none: a freed or
 * reused tid fails their heap visibility check.
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/memutils.h"

#include "dmam.h"

#define PINS_PER_BACKEND 8

typedef struct DmScanPin
{
	slock_t		mutex;
	bool		in_use;
	uint64		tree_id;
	dm_entry	lo;				/* entries in [lo, hi] may still be returned */
	dm_entry	hi;
} DmScanPin;

typedef struct DmScanPinPool
{
	slock_t		mutex;			/* for finding a free slot */
	int			nslots;
	DmScanPin	pins[FLEXIBLE_ARRAY_MEMBER];
} DmScanPinPool;

static DmScanPinPool *pool = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* The pins this backend holds, with the subtransaction that took each. */
typedef struct HeldPin
{
	int			slot;
	SubTransactionId subid;
} HeldPin;

static HeldPin *held = NULL;
static int	nheld = 0;
static int	held_cap = 0;
static bool callbacks_registered = false;

static int
pool_slots(void)
{
	return MaxBackends * PINS_PER_BACKEND;
}

static Size
pool_size(void)
{
	return add_size(offsetof(DmScanPinPool, pins), mul_size(sizeof(DmScanPin), pool_slots()));
}

static void
pins_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(pool_size());
}

static void
pins_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	pool = ShmemInitStruct("dmindex scan pins", pool_size(), &found);
	if (!found)
	{
		SpinLockInit(&pool->mutex);
		pool->nslots = pool_slots();
		for (int i = 0; i < pool->nslots; i++)
		{
			SpinLockInit(&pool->pins[i].mutex);
			pool->pins[i].in_use = false;
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

static void
release_slot(int slot)
{
	DmScanPin  *p = &pool->pins[slot];

	SpinLockAcquire(&p->mutex);
	p->in_use = false;
	SpinLockRelease(&p->mutex);
}

/* Forget held[i] (and release its slot). */
static void
drop_held(int i)
{
	release_slot(held[i].slot);
	held[i] = held[--nheld];
}

static void
pins_xact_callback(XactEvent event, void *arg)
{
	/* scans end before commit; whatever an abort left behind goes now */
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PREPARE)
		while (nheld > 0)
			drop_held(nheld - 1);
}

static void
pins_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		for (int i = nheld - 1; i >= 0; i--)
			if (held[i].subid == mySubid)
				drop_held(i);
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (int i = 0; i < nheld; i++)
			if (held[i].subid == mySubid)
				held[i].subid = parentSubid;
	}
}

static void
pins_on_exit(int code, Datum arg)
{
	while (nheld > 0)
		drop_held(nheld - 1);
}

int
dmindex_pin_acquire(uint64 tree_id)
{
	int			slot = -1;

	if (!callbacks_registered)
	{
		RegisterXactCallback(pins_xact_callback, NULL);
		RegisterSubXactCallback(pins_subxact_callback, NULL);
		before_shmem_exit(pins_on_exit, (Datum) 0);
		callbacks_registered = true;
	}
	if (nheld == held_cap)
	{
		int			cap = held_cap ? held_cap * 2 : 8;

		held = held ? repalloc(held, sizeof(HeldPin) * cap)
			: MemoryContextAlloc(TopMemoryContext, sizeof(HeldPin) * cap);
		held_cap = cap;
	}
	SpinLockAcquire(&pool->mutex);
	for (int i = 0; i < pool->nslots; i++)
	{
		/* in_use changes only under the pool's mutex (and the slot's) */
		if (!pool->pins[i].in_use)
		{
			slot = i;
			SpinLockAcquire(&pool->pins[i].mutex);
			pool->pins[i].in_use = true;
			pool->pins[i].tree_id = tree_id;
			/* an empty range until the scan says what it reads */
			pool->pins[i].lo = DM_ENTRY_INF;
			pool->pins[i].hi = DM_ENTRY_MIN;
			SpinLockRelease(&pool->pins[i].mutex);
			break;
		}
	}
	SpinLockRelease(&pool->mutex);
	if (slot < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("too many concurrent dmindex index-only scans"),
				 errdetail("The server has room for %d of them at once.", pool_slots()),
				 errhint("Close cursors that are not needed, or raise \"max_connections\".")));
	held[nheld].slot = slot;
	held[nheld].subid = GetCurrentSubTransactionId();
	nheld++;
	return slot;
}

void
dmindex_pin_set(int slot, dm_entry lo, dm_entry hi)
{
	DmScanPin  *p = &pool->pins[slot];

	SpinLockAcquire(&p->mutex);
	p->lo = lo;
	p->hi = hi;
	SpinLockRelease(&p->mutex);

	/*
	 * The pin must be visible before the remote read that follows it: a
	 * spinlock release orders earlier stores, not later loads.
	 */
	pg_memory_barrier();
}

void
dmindex_pin_release(int slot)
{
	for (int i = 0; i < nheld; i++)
		if (held[i].slot == slot)
		{
			drop_held(i);
			return;
		}
}

/* Whether a sorted array of entries has one in [lo, hi]. */
static bool
covers_any(dm_entry lo, dm_entry hi, const dm_entry *e, int n)
{
	int			a = 0,
				b = n;

	if (dm_entry_cmp(lo, hi) > 0)
		return false;
	/* the first entry >= lo */
	while (a < b)
	{
		int			m = a + (b - a) / 2;

		if (dm_entry_cmp(e[m], lo) < 0)
			a = m + 1;
		else
			b = m;
	}
	return a < n && dm_entry_cmp(e[a], hi) <= 0;
}

void
dmindex_pin_wait(uint64 tree_id, const dm_entry *deleted, int n)
{
	long		sleep_ms = 1;

	if (n == 0)
		return;
	/* the deletes have landed: see every pin published before them */
	pg_memory_barrier();
	for (int i = 0; i < pool->nslots; i++)
	{
		DmScanPin  *p = &pool->pins[i];

		/*
		 * Wait while the pin covers a deleted entry: the scan may still hold
		 * it in its copy.  Once the scan has moved past (or ended), what it
		 * reads next was read after the deletes.  A scan that re-read the
		 * same leaf keeps us waiting until it moves on, as a btree pin would.
		 */
		for (;;)
		{
			bool		blocks;

			SpinLockAcquire(&p->mutex);
			blocks = p->in_use && p->tree_id == tree_id && covers_any(p->lo, p->hi, deleted, n);
			SpinLockRelease(&p->mutex);
			if (!blocks)
				break;
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 sleep_ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			sleep_ms = Min(sleep_ms * 2, 100);
		}
	}
}

void
dmindex_scanpin_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = pins_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = pins_shmem_startup;
}
