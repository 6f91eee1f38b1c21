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
 * Pins live in a fixed pool of slots, several per backend, plus one
 * "overflow" slot per backend that covers every tree and key at once and is
 * shared by that backend's scans beyond its share (many cursors, an Append
 * over many partitions): VACUUM then waits for more than it must, but no
 * scan fails.  A pin belongs to the scan's memory: it is released when the
 * scan ends or runs off its end, and by a reset callback when the memory
 * goes (a portal dropped at an abort) — never merely because a
 * subtransaction aborted, since a cursor opened outside it lives on with its
 * leaf copy.  Slots carry a generation, so a stale handle cannot touch a
 * slot that has been handed to another scan.  Plain MVCC scans and bitmap
 * scans need no pin: a freed or reused tid fails their heap visibility
 * check.
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
	uint64		gen;			/* bumped whenever the slot is taken */
	uint64		tree_id;		/* 0 = every tree (an overflow slot) */
	dm_entry	lo;				/* entries in [lo, hi] may still be returned */
	dm_entry	hi;
} DmScanPin;

typedef struct DmScanPinPool
{
	slock_t		mutex;			/* for taking a regular slot */
	int			nregular;		/* then one overflow slot per backend */
	int			nslots;
	DmScanPin	pins[FLEXIBLE_ARRAY_MEMBER];
} DmScanPinPool;

/* A scan's pin: lives in the scan's memory, released with it at the latest. */
struct DmScanPinHandle
{
	MemoryContextCallback cb;
	int			slot;			/* -1 = released */
	uint64		gen;
	bool		overflow;
};

static DmScanPinPool *pool = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* This backend's regular pins (for the sweep at transaction end) and overflow users. */
typedef struct HeldPin
{
	int			slot;
	uint64		gen;
} HeldPin;

static HeldPin *held = NULL;
static int	nheld = 0;
static int	held_cap = 0;
static int	overflow_users = 0;
static uint64 overflow_gen = 0;
static bool callbacks_registered = false;

static int
pool_slots(void)
{
	return MaxBackends * (PINS_PER_BACKEND + 1);
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
		pool->nregular = MaxBackends * PINS_PER_BACKEND;
		pool->nslots = pool_slots();
		for (int i = 0; i < pool->nslots; i++)
		{
			SpinLockInit(&pool->pins[i].mutex);
			pool->pins[i].in_use = false;
			pool->pins[i].gen = 0;
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Free slot if it still has generation gen (a stale handle frees nothing). */
static void
release_slot(int slot, uint64 gen)
{
	DmScanPin  *p = &pool->pins[slot];

	SpinLockAcquire(&p->mutex);
	if (p->in_use && p->gen == gen)
		p->in_use = false;
	SpinLockRelease(&p->mutex);
}

static int
overflow_slot(void)
{
	return pool->nregular + (MyBackendId - 1);
}

static void
forget_held(int slot, uint64 gen)
{
	for (int i = 0; i < nheld; i++)
		if (held[i].slot == slot && held[i].gen == gen)
		{
			held[i] = held[--nheld];
			return;
		}
}

static void
release_all(void)
{
	while (nheld > 0)
	{
		nheld--;
		release_slot(held[nheld].slot, held[nheld].gen);
	}
	if (overflow_users > 0)
		release_slot(overflow_slot(), overflow_gen);
	overflow_users = 0;
}

static void
pins_xact_callback(XactEvent event, void *arg)
{
	/* scans end before commit; a safety net for anything an abort left behind */
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PREPARE)
		release_all();
}

static void
pins_on_exit(int code, Datum arg)
{
	release_all();
}

void
dmindex_pin_release(DmScanPinHandle *h)
{
	if (h == NULL || h->slot < 0)
		return;
	if (h->overflow)
	{
		/* the generation check keeps a handle from before a sweep harmless */
		if (h->gen == overflow_gen && overflow_users > 0 && --overflow_users == 0)
			release_slot(h->slot, h->gen);
	}
	else
	{
		release_slot(h->slot, h->gen);
		forget_held(h->slot, h->gen);
	}
	h->slot = -1;
}

static void
pin_memory_gone(void *arg)
{
	dmindex_pin_release((DmScanPinHandle *) arg);
}

/* Take slot (in_use false) for tree_id with range [lo, hi]; returns its generation. */
static uint64
take_slot(int slot, uint64 tree_id, dm_entry lo, dm_entry hi)
{
	DmScanPin  *p = &pool->pins[slot];
	uint64		gen;

	SpinLockAcquire(&p->mutex);
	p->in_use = true;
	gen = ++p->gen;
	p->tree_id = tree_id;
	p->lo = lo;
	p->hi = hi;
	SpinLockRelease(&p->mutex);
	return gen;
}

DmScanPinHandle *
dmindex_pin_acquire(uint64 tree_id)
{
	DmScanPinHandle *h = palloc0(sizeof(DmScanPinHandle));
	int			slot = -1;

	if (!callbacks_registered)
	{
		RegisterXactCallback(pins_xact_callback, NULL);
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
	{
		/* start at this backend's share: backends rarely meet here */
		int			first = ((MyBackendId - 1) * PINS_PER_BACKEND) % pool->nregular;

		for (int k = 0; k < pool->nregular; k++)
		{
			int			i = (first + k) % pool->nregular;

			if (!pool->pins[i].in_use)
			{
				slot = i;
				/* an empty range until the scan says what it reads */
				h->gen = take_slot(i, tree_id, DM_ENTRY_INF, DM_ENTRY_MIN);
				break;
			}
		}
	}
	SpinLockRelease(&pool->mutex);
	if (slot >= 0)
	{
		held[nheld].slot = slot;
		held[nheld].gen = h->gen;
		nheld++;
	}
	else
	{
		/* every regular slot taken: this backend's one pin on everything */
		slot = overflow_slot();
		h->overflow = true;
		if (overflow_users++ == 0)
			overflow_gen = take_slot(slot, 0, DM_ENTRY_MIN, DM_ENTRY_INF);
		h->gen = overflow_gen;
	}
	h->slot = slot;
	h->cb.func = pin_memory_gone;
	h->cb.arg = h;
	MemoryContextRegisterResetCallback(GetMemoryChunkContext(h), &h->cb);
	return h;
}

/*
 * A pin lives in shared memory, where a VAR entry's suffix (a pointer into
 * the scan's memory) means nothing: such a bound is widened to its prefix
 * word, (key, 0) below and (key + 1, 0) above, which covers every entry
 * with that prefix.  VACUUM may then wait for a few more entries than it
 * must, never for fewer.
 */
static dm_entry
pin_bound_lo(dm_entry e)
{
	return e.sfx_len == 0 ? e : dm_entry_make(e.key, 0);
}

static dm_entry
pin_bound_hi(dm_entry e)
{
	if (e.sfx_len == 0)
		return e;
	return e.key == UINT64_MAX ? DM_ENTRY_INF : dm_entry_make(e.key + 1, 0);
}

void
dmindex_pin_set(DmScanPinHandle *h, dm_entry lo, dm_entry hi)
{
	DmScanPin  *p;

	lo = pin_bound_lo(lo);
	hi = pin_bound_hi(hi);

	if (h->slot < 0 || h->overflow)
		return;					/* an overflow pin stays on everything */
	p = &pool->pins[h->slot];
	SpinLockAcquire(&p->mutex);
	if (p->in_use && p->gen == h->gen)
	{
		p->lo = lo;
		p->hi = hi;
	}
	SpinLockRelease(&p->mutex);

	/*
	 * The pin must be visible before the remote read that follows it: a
	 * spinlock release orders earlier stores, not later loads.
	 */
	pg_memory_barrier();
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
			blocks = p->in_use && (p->tree_id == tree_id || p->tree_id == 0) &&
				covers_any(p->lo, p->hi, deleted, n);
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
