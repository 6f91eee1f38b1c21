/*
 * dm_journal.h — the memnode's batch journal: makes a batch of one-sided
 * ops that the memnode executes (tcp clients) complete even if the memnode
 * is killed in the middle of it, once a memnode reattaches to the region.
 *
 * Why: the tree fences every node write with a guard CAS on the node's
 * version and stores the new image after it (dm_tree_io.c).  Over tcp it
 * relies on the memnode executing a batch whole; a memnode killed between
 * the guard and the last store would leave the node DIRTY for good, with a
 * lock value that names no redo slot.  With the journal a reattaching
 * memnode finishes such a batch: for the client it is exactly a batch that
 * landed after its sender gave up, which the tree already copes with (the
 * write is fenced, the lock is taken over after lock_timeout).
 *
 * A slot (DM_JOURNAL_SLOT_SIZE bytes in the region's journal area, one per
 * worker thread) holds the header below and a copy of the batch body as
 * received.  Before executing a batch with any WRITE or atomic, a worker
 * copies its body into its slot and marks it ACTIVE; after each op it
 * stores how many ops are done; at the end, or at once when a guard fails
 * (nothing more will be applied), it marks the slot idle.  On reattach, for an ACTIVE slot, the ops below `progress`
 * are done, the ones above are not, and the op at `progress` is in doubt:
 *   WRITE     stored again (same bytes: nobody else writes a range a
 *             running batch writes, the guard sees to that for nodes);
 *   CAS       applied if the word still holds the expected value, taken
 *             as done if it holds the desired value, else taken as failed
 *             (a failed guard ends the batch there);
 *   FETCH_OR, FETCH_MAX  applied again (idempotent);
 *   FAA       not applied again (at most once: a counter may miss one add);
 *   READ      nothing.
 * Then the rest of the batch runs as it would have.  Residual risk: a CAS
 * in doubt whose word holds the desired value because another client's
 * equal CAS succeeded (two guards from the same version racing, and the
 * memnode killed between one of them and its progress store) is taken as
 * ours; the journal cannot tell them apart.
 *
 * A batch body larger than a slot (only raw transport users send those;
 * the tree's largest, a bulk-load round of 64 nodes, is far smaller) is
 * executed unjournaled: the slot says UNLOGGED so that a reattach can
 * report that such a batch may be partly applied.
 */
#ifndef DM_JOURNAL_H
#define DM_JOURNAL_H

#include "dm_proto.h"
#include "dm_region.h"

#define DM_JOURNAL_IDLE		UINT64_C(0)
#define DM_JOURNAL_ACTIVE	UINT64_C(0x4556495443414A44)	/* "DJACTIVE" */
#define DM_JOURNAL_UNLOGGED	UINT64_C(0x474F4C4E554A4A44)	/* "DJJUNLOG" */

typedef struct dm_journal_slot
{
	uint64_t	state;			/* DM_JOURNAL_* */
	uint64_t	seq;			/* batches journaled in this slot */
	uint64_t	progress;		/* ops of the batch done */
	uint64_t	body_len;
	/* then body_len bytes: the BATCH body (dm_batch_decode's format) */
} dm_journal_slot;

#define DM_JOURNAL_BODY_MAX (DM_JOURNAL_SLOT_SIZE - sizeof(dm_journal_slot))

/* Slot k of the region's journal (k < journal_slots). */
static inline dm_journal_slot *
dm_journal_slot_at(const dm_region *r, uint32_t k)
{
	return (dm_journal_slot *) (r->journal + (uint64_t) k * DM_JOURNAL_SLOT_SIZE);
}

/* Does a batch change memory (any WRITE or atomic)? */
extern int	dm_journal_needed(const dm_wire_op *ops, uint32_t nops);

/* Journal a batch body before executing it: 1 if journaled, 0 if too big (UNLOGGED). */
extern int	dm_journal_begin(dm_journal_slot *s, const uint8_t *body, uint32_t body_len);

/* ops [0, done) of the journaled batch are applied. */
static inline void
dm_journal_progress(dm_journal_slot *s, uint32_t done)
{
	__atomic_store_n(&s->progress, (uint64_t) done, __ATOMIC_RELEASE);
}

/* The batch is over (whole, or ended by a failed guard). */
extern void dm_journal_end(dm_journal_slot *s);

typedef struct dm_journal_replayed
{
	uint64_t	state;			/* what the slot said: DM_JOURNAL_* (or garbage) */
	uint32_t	nops;
	uint32_t	progress;		/* ops done before the memnode died */
	uint32_t	applied;		/* ops applied now (the one in doubt included) */
	int			in_doubt_kind;	/* dm_op_kind of the op in doubt, -1 if none */
	int			in_doubt_applied;	/* 1 if it was applied (or taken as done) */
	int			guard_failed;	/* the batch ended at a failed guard */
} dm_journal_replayed;

/*
 * Finish the batch an ACTIVE slot describes, on region r, and mark the slot
 * idle.  DM_OK (also for an idle or UNLOGGED slot: nothing to do, see
 * out->state), DM_ERR_CORRUPT if the journaled batch does not decode or
 * addresses what it may not (nothing applied).  Not thread-safe: run before
 * the memnode serves anyone.
 */
extern int	dm_journal_replay(dm_region *r, dm_journal_slot *s, dm_journal_replayed *out);

#endif							/* DM_JOURNAL_H */
