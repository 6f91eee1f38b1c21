/*
 * test_journal.c — unit tests of the memnode's batch journal
 * (src/dm/dm_journal.c) on a plain buffer: a batch shaped like a tree's
 * fenced node write (guard CAS on the version, node bytes, clean version,
 * lock release) is "killed" after every op, with the op at the kill point
 * applied or not, and the replay must always end in exactly the state of
 * the whole batch; a batch whose guard fails must change nothing however
 * it is cut; FAA in doubt is not applied twice, FETCH_OR is idempotent;
 * idle, UNLOGGED and damaged slots change nothing.  Why: a memnode killed
 * in the middle of a tcp batch must not leave a node half written.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_journal.h"
#include "dm_memops.h"
#include "testutil.h"

#define REGION_SIZE (UINT64_C(16) << 20)
#define NODE_ID 3
#define NODE 1024

static uint8_t *base;
static dm_region r;
static uint64_t bodybuf[(DM_JOURNAL_SLOT_SIZE + 65536) / 8];

typedef struct batch
{
	dm_wire_op	ops[16];
	const uint8_t *payload[16];
	uint32_t	lens[16];
	uint32_t	nops;
} batch;

static void
add(batch *b, int kind, uint8_t flags, uint64_t off, uint32_t len, uint64_t a0, uint64_t a1,
	const uint8_t *payload)
{
	dm_wire_op *o = &b->ops[b->nops];

	memset(o, 0, sizeof(*o));
	o->kind = (uint8_t) kind;
	o->flags = flags;
	o->len = kind == DM_OP_READ || kind == DM_OP_WRITE ? len : 8;
	o->addr = dm_gaddr_make(NODE_ID, off);
	o->arg0 = a0;
	o->arg1 = a1;
	b->payload[b->nops] = payload;
	b->nops++;
}

/* The wire body of a batch (header, ops, payloads), 8-aligned. */
static uint32_t
body_of(const batch *b, uint8_t *out)
{
	dm_batch_hdr h = {.nops = b->nops, .bad_index = 0};
	uint32_t	n = 0;

	memcpy(out, &h, sizeof(h));
	n += sizeof(h);
	memcpy(out + n, b->ops, b->nops * sizeof(dm_wire_op));
	n += b->nops * (uint32_t) sizeof(dm_wire_op);
	for (uint32_t i = 0; i < b->nops; i++)
		if (b->ops[i].kind == DM_OP_WRITE)
		{
			memset(out + n, 0, dm_pad8(b->ops[i].len));
			memcpy(out + n, b->payload[i], b->ops[i].len);
			n += dm_pad8(b->ops[i].len);
		}
	return n;
}

/* What the memnode's executor does for op i (exec.c); 0 iff a guard failed. */
static int
exec_op(const batch *b, uint32_t i)
{
	const dm_wire_op *o = &b->ops[i];
	uint8_t    *p = base + dm_gaddr_offset(o->addr);

	switch (o->kind)
	{
		case DM_OP_WRITE:
			dm_mem_write(p, b->payload[i], o->len, 0);
			return 1;
		case DM_OP_CAS:
			return dm_mem_cas(p, o->arg0, o->arg1) == o->arg0 || !(o->flags & DM_OPF_GUARD);
		case DM_OP_FAA:
			dm_mem_faa(p, o->arg0);
			return 1;
		case DM_OP_FETCH_OR:
			dm_mem_fetch_or(p, o->arg0);
			return 1;
		case DM_OP_FETCH_MAX:
			dm_mem_fetch_max(p, o->arg0);
			return 1;
	}
	return 1;
}

/* Run the whole batch as the executor would: the reference end state. */
static void
exec_all(const batch *b)
{
	for (uint32_t i = 0; i < b->nops; i++)
		if (!exec_op(b, i))
			return;
}

static uint64_t data_off, node_off;
static uint8_t image[NODE], initial[NODE], reference[NODE];

static void
reset_node(void)
{
	memcpy(base + node_off, initial, NODE);
}

/*
 * A fenced node write of version 7 by lock holder 0xAB: the shape
 * write_nodes() gives every tree write (dm_tree_io.c).
 */
static void
node_write_batch(batch *b, uint64_t from_version)
{
	static uint64_t clean_version = 8;

	memset(b, 0, sizeof(*b));
	add(b, DM_OP_CAS, DM_OPF_GUARD, node_off + 8, 8, from_version, 8 | (UINT64_C(1) << 63), NULL);
	add(b, DM_OP_WRITE, 0, node_off + 16, NODE - 16, 0, 0, image + 16);
	add(b, DM_OP_WRITE, 0, node_off + 8, 8, 0, 0, (const uint8_t *) &clean_version);
	add(b, DM_OP_CAS, 0, node_off, 8, 0xAB, 0, NULL);
}

static void
test_kill_points(void)
{
	batch		b;
	uint32_t	blen;
	dm_journal_slot *s = dm_journal_slot_at(&r, 1);
	int			all_ok = 1,
				cases = 0;

	node_write_batch(&b, 7);
	reset_node();
	exec_all(&b);
	memcpy(reference, base + node_off, NODE);
	CHECK(((uint64_t *) reference)[1] == 8 && ((uint64_t *) reference)[0] == 0 &&
		  memcmp(reference + 16, image + 16, NODE - 16) == 0, "reference: version 8, unlocked, new image");
	blen = body_of(&b, (uint8_t *) bodybuf);

	for (uint32_t p = 0; p <= b.nops; p++)
		for (int doubt_applied = 0; doubt_applied <= 1; doubt_applied++)
		{
			dm_journal_replayed out;
			int			rc;

			if (p == b.nops && doubt_applied)
				continue;
			reset_node();
			CHECK(dm_journal_begin(s, (uint8_t *) bodybuf, blen) == 1, "journaled (kill after %u ops)", p);
			for (uint32_t i = 0; i < p; i++)
			{
				exec_op(&b, i);
				dm_journal_progress(s, i + 1);
			}
			/* killed between the op at p and its progress store */
			if (doubt_applied)
				exec_op(&b, p);
			rc = dm_journal_replay(&r, s, &out);
			cases++;
			if (rc != DM_OK || memcmp(base + node_off, reference, NODE) != 0 ||
				s->state != DM_JOURNAL_IDLE || out.progress != p)
			{
				all_ok = 0;
				tap_diag("kill after %u ops (op %u %s): rc %d, version %llx, lock %llx", p, p,
						 doubt_applied ? "applied" : "not applied", rc,
						 (unsigned long long) ((uint64_t *) (base + node_off))[1],
						 (unsigned long long) ((uint64_t *) (base + node_off))[0]);
			}
		}
	CHECK(all_ok, "a node write killed after any op, in-doubt op applied or not: replay gives the whole write (%d cases)", cases);

	/* a stale write (its guard fails): nothing lands, however it is cut */
	node_write_batch(&b, 5);
	blen = body_of(&b, (uint8_t *) bodybuf);
	all_ok = 1;
	{
		dm_journal_replayed out;

		reset_node();
		dm_journal_begin(s, (uint8_t *) bodybuf, blen);
		exec_op(&b, 0);			/* the guard fails; killed before the slot is idle */
		CHECK_STATUS(dm_journal_replay(&r, s, &out), DM_OK, "replay of a stale write");
		CHECK(memcmp(base + node_off, initial, NODE) == 0 && out.guard_failed && out.applied == 0,
			  "a stale write's replay stops at its failed guard: the node is untouched");
	}
	/* replaying an idle slot again changes nothing */
	{
		dm_journal_replayed out;

		node_write_batch(&b, 7);
		reset_node();
		exec_all(&b);
		CHECK_STATUS(dm_journal_replay(&r, s, &out), DM_OK, "replay of an idle slot");
		CHECK(out.state == DM_JOURNAL_IDLE && memcmp(base + node_off, reference, NODE) == 0,
			  "an idle slot is left alone");
	}
}

static void
test_atomics_in_doubt(void)
{
	batch		b;
	uint32_t	blen;
	dm_journal_slot *s = dm_journal_slot_at(&r, 0);
	dm_journal_replayed out;
	uint64_t   *w = (uint64_t *) (base + data_off + 65536);

	memset(&b, 0, sizeof(b));
	add(&b, DM_OP_FAA, 0, data_off + 65536, 8, 5, 0, NULL);
	add(&b, DM_OP_FETCH_OR, 0, data_off + 65536 + 8, 8, 0x30, 0, NULL);
	add(&b, DM_OP_READ, 0, data_off + 65536, 16, 0, 0, NULL);
	add(&b, DM_OP_FAA, 0, data_off + 65536 + 16, 8, 1, 0, NULL);
	blen = body_of(&b, (uint8_t *) bodybuf);

	/* FAA in doubt and applied: not applied again (at most once) */
	w[0] = 100;
	w[1] = 1;
	w[2] = 0;
	dm_journal_begin(s, (uint8_t *) bodybuf, blen);
	exec_op(&b, 0);
	CHECK_STATUS(dm_journal_replay(&r, s, &out), DM_OK, "replay: FAA in doubt");
	CHECK(w[0] == 105 && w[1] == 0x31 && w[2] == 1 && out.in_doubt_kind == DM_OP_FAA && !out.in_doubt_applied,
		  "FAA in doubt is not added twice; the rest of the batch runs (%llu %llx %llu)",
		  (unsigned long long) w[0], (unsigned long long) w[1], (unsigned long long) w[2]);
	/* FETCH_OR in doubt: applied again, idempotent */
	w[0] = 100;
	w[1] = 1;
	w[2] = 0;
	dm_journal_begin(s, (uint8_t *) bodybuf, blen);
	exec_op(&b, 0);
	dm_journal_progress(s, 1);
	exec_op(&b, 1);
	CHECK_STATUS(dm_journal_replay(&r, s, &out), DM_OK, "replay: FETCH_OR in doubt");
	CHECK(w[0] == 105 && w[1] == 0x31 && w[2] == 1 && out.in_doubt_applied,
		  "FETCH_OR in doubt applied again changes nothing more");

	/* FETCH_MAX in doubt (a high-water raise): applied again, idempotent; or applied once if it had not landed */
	memset(&b, 0, sizeof(b));
	add(&b, DM_OP_FETCH_MAX, 0, data_off + 65536, 8, 500, 0, NULL);
	add(&b, DM_OP_FAA, 0, data_off + 65536 + 8, 8, 1, 0, NULL);
	blen = body_of(&b, (uint8_t *) bodybuf);
	for (int landed = 0; landed <= 1; landed++)
	{
		w[0] = 200;
		w[1] = 0;
		dm_journal_begin(s, (uint8_t *) bodybuf, blen);
		if (landed)
			exec_op(&b, 0);
		CHECK_STATUS(dm_journal_replay(&r, s, &out), DM_OK, "replay: FETCH_MAX in doubt (%s)",
					 landed ? "it had landed" : "it had not");
		CHECK(w[0] == 500 && w[1] == 1 && out.in_doubt_kind == DM_OP_FETCH_MAX && out.in_doubt_applied,
			  "FETCH_MAX in doubt: the word is the max once (%llu), the rest of the batch runs (%llu)",
			  (unsigned long long) w[0], (unsigned long long) w[1]);
	}
}

static void
test_bad_slots(void)
{
	batch		b;
	uint32_t	blen;
	dm_journal_slot *s = dm_journal_slot_at(&r, 0);
	dm_journal_replayed out;
	static uint8_t big[DM_JOURNAL_SLOT_SIZE];
	uint64_t	v = 42;

	/* too big to journal: UNLOGGED, and a replay reports it and changes nothing */
	CHECK(dm_journal_begin(s, big, (uint32_t) DM_JOURNAL_BODY_MAX + 8) == 0 && s->state == DM_JOURNAL_UNLOGGED,
		  "a body larger than a slot is not journaled; the slot says UNLOGGED");
	CHECK(dm_journal_replay(&r, s, &out) == DM_OK && out.state == DM_JOURNAL_UNLOGGED &&
		  s->state == DM_JOURNAL_IDLE, "replay of an UNLOGGED slot reports it and clears it");

	/* a journaled batch that writes the superblock: refused whole */
	memset(&b, 0, sizeof(b));
	add(&b, DM_OP_WRITE, 0, data_off, 8, 0, 0, (const uint8_t *) &v);
	add(&b, DM_OP_WRITE, 0, 0, 8, 0, 0, (const uint8_t *) &v);
	blen = body_of(&b, (uint8_t *) bodybuf);
	memset(base + data_off, 0, 8);
	dm_journal_begin(s, (uint8_t *) bodybuf, blen);
	CHECK_STATUS(dm_journal_replay(&r, s, &out), DM_ERR_CORRUPT, "replay of a batch writing the superblock -> CORRUPT");
	CHECK(*(uint64_t *) (base + data_off) == 0 && r.sb->magic == DM_SB_MAGIC && s->state == DM_JOURNAL_IDLE,
		  "nothing of it applied, slot cleared");

	/* garbage in an ACTIVE slot */
	dm_journal_begin(s, (uint8_t *) bodybuf, blen);
	memset((uint8_t *) (s + 1), 0xEE, 64);
	CHECK_STATUS(dm_journal_replay(&r, s, &out), DM_ERR_CORRUPT, "replay of an undecodable body -> CORRUPT");
	CHECK(dm_journal_needed(b.ops, b.nops), "a batch with writes needs the journal");
	memset(&b, 0, sizeof(b));
	add(&b, DM_OP_READ, 0, data_off, 64, 0, 0, NULL);
	CHECK(!dm_journal_needed(b.ops, b.nops), "a batch of reads does not");
}

int
main(void)
{
	base = aligned_alloc(DM_REGION_ALIGN, REGION_SIZE);
	if (!base)
		return 1;
	CHECK_STATUS(dm_region_format(&r, base, REGION_SIZE, NODE_ID, 1 << 20, 16, 2, 77, 0), DM_OK,
				 "format with 2 journal slots");
	CHECK(r.journal == base + r.sb->journal_off && r.sb->journal_slots == 2 &&
		  r.sb->data_off >= r.sb->journal_off + 2 * DM_JOURNAL_SLOT_SIZE,
		  "journal area between catalog and data");
	data_off = r.sb->data_off;
	node_off = data_off + 4096;
	for (int i = 0; i < NODE; i++)
	{
		image[i] = (uint8_t) (i * 7 + 1);
		initial[i] = (uint8_t) (i * 13 + 5);
	}
	((uint64_t *) initial)[0] = 0xAB;	/* locked by the writer */
	((uint64_t *) initial)[1] = 7;	/* version 7 */
	test_kill_points();
	test_atomics_in_doubt();
	test_bad_slots();
	free(base);
	return tap_done();
}
