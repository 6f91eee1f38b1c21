/*
 * dm_journal.c — the memnode's batch journal (see dm_journal.h): recording
 * a batch before the memnode executes it, and finishing an interrupted one
 * when a memnode reattaches to the region.
 */
#include <string.h>

#include "dm_journal.h"
#include "dm_memops.h"

int
dm_journal_needed(const dm_wire_op *ops, uint32_t nops)
{
	for (uint32_t i = 0; i < nops; i++)
		if (ops[i].kind != DM_OP_READ)
			return 1;
	return 0;
}

int
dm_journal_begin(dm_journal_slot *s, const uint8_t *body, uint32_t body_len)
{
	if (body_len > DM_JOURNAL_BODY_MAX)
	{
		__atomic_store_n(&s->state, DM_JOURNAL_UNLOGGED, __ATOMIC_RELEASE);
		return 0;
	}
	memcpy((uint8_t *) (s + 1), body, body_len);
	s->body_len = body_len;
	s->progress = 0;
	s->seq++;
	/* the copy and the header are in the region before the slot says ACTIVE */
	__atomic_store_n(&s->state, DM_JOURNAL_ACTIVE, __ATOMIC_RELEASE);
	return 1;
}

void
dm_journal_end(dm_journal_slot *s)
{
	__atomic_store_n(&s->state, DM_JOURNAL_IDLE, __ATOMIC_RELEASE);
}

/* Apply one op to region memory; returns 0 iff it is a guard that failed. */
static int
apply(uint8_t *p, const dm_wire_op *op, const uint8_t *payload)
{
	switch (op->kind)
	{
		case DM_OP_WRITE:
			dm_mem_write(p, payload, op->len, 0);
			break;
		case DM_OP_CAS:
			if (dm_mem_cas(p, op->arg0, op->arg1) != op->arg0 && (op->flags & DM_OPF_GUARD))
				return 0;
			break;
		case DM_OP_FAA:
			(void) dm_mem_faa(p, op->arg0);
			break;
		case DM_OP_FETCH_OR:
			(void) dm_mem_fetch_or(p, op->arg0);
			break;
		case DM_OP_FETCH_MAX:
			(void) dm_mem_fetch_max(p, op->arg0);
			break;
		default:
			break;
	}
	return 1;
}

/*
 * The op the memnode may or may not have applied before it died (rules in
 * dm_journal.h).  Returns 0 iff it ends the batch (a failed guard);
 * *applied tells whether it counts as applied.
 */
static int
apply_in_doubt(uint8_t *p, const dm_wire_op *op, const uint8_t *payload, int *applied)
{
	uint64_t	cur;

	*applied = 1;
	switch (op->kind)
	{
		case DM_OP_WRITE:
		case DM_OP_FETCH_OR:
		case DM_OP_FETCH_MAX:	/* idempotent, like OR: applying it again changes nothing */
			return apply(p, op, payload);
		case DM_OP_CAS:
			cur = __atomic_load_n((volatile uint64_t *) p, __ATOMIC_ACQUIRE);
			if (cur == op->arg1)
				return 1;		/* it landed */
			if (cur == op->arg0)
				return apply(p, op, payload);	/* it did not: do it now */
			*applied = 0;		/* it failed */
			return (op->flags & DM_OPF_GUARD) == 0;
		case DM_OP_FAA:
		default:
			*applied = 0;
			return 1;
	}
}

int
dm_journal_replay(dm_region *r, dm_journal_slot *s, dm_journal_replayed *out)
{
	const uint8_t *body = (const uint8_t *) (s + 1);
	const dm_wire_op *ops;
	const uint8_t *payload;
	uint32_t	nops,
				bad;
	uint64_t	progress;

	memset(out, 0, sizeof(*out));
	out->in_doubt_kind = -1;
	out->state = s->state;
	if (s->state != DM_JOURNAL_ACTIVE)
	{
		dm_journal_end(s);
		return DM_OK;
	}
	if (s->body_len > DM_JOURNAL_BODY_MAX ||
		dm_batch_decode(body, (uint32_t) s->body_len, &ops, &nops, &payload, &bad) != DM_OK)
	{
		dm_journal_end(s);
		return DM_ERR_CORRUPT;
	}
	out->nops = nops;
	progress = s->progress;
	out->progress = progress > nops ? nops : (uint32_t) progress;
	/* the memnode checked the batch before journaling it; check again anyway */
	for (uint32_t i = 0; i < nops; i++)
		if ((ops[i].addr & DM_GADDR_RESERVED_BIT) || dm_gaddr_node(ops[i].addr) != r->node_id ||
			dm_region_check_op(r, ops[i].kind, dm_gaddr_offset(ops[i].addr), ops[i].len) != DM_OK)
		{
			dm_journal_end(s);
			return DM_ERR_CORRUPT;
		}

	/* each WRITE's payload follows the previous one's, as in the executor */
	for (uint32_t i = 0; i < nops; i++)
	{
		uint8_t    *p = r->base + dm_gaddr_offset(ops[i].addr);
		const uint8_t *data = payload;
		int			go;

		if (ops[i].kind == DM_OP_WRITE)
			payload += dm_pad8(ops[i].len);
		if (i < out->progress || ops[i].kind == DM_OP_READ)
			continue;
		if (i == out->progress)
		{
			int			applied;

			out->in_doubt_kind = ops[i].kind;
			go = apply_in_doubt(p, &ops[i], data, &applied);
			out->in_doubt_applied = applied;
			out->applied += (uint32_t) applied;
		}
		else
		{
			go = apply(p, &ops[i], data);
			out->applied += (uint32_t) go;
		}
		if (!go)
		{
			out->guard_failed = 1;
			break;
		}
	}
	dm_journal_end(s);
	return DM_OK;
}
