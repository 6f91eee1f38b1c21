/*
 * test_node.c — unit tests of the tree's node layer (dm_node.c), no
 * memnode needed: the checksum accepts whole nodes and rejects torn copies
 * (a mix of two versions word by word, as 8-byte-atomic transports produce),
 * wrong tree tags, sizes and counts; in-node searches find the right slot.
 */
#include <stdlib.h>
#include <string.h>

#include "dm_node.h"
#include "nodesearch.h"
#include "testutil.h"

#define NS 1024

static void
make_leaf(uint8_t *buf, uint64_t tag, int n, uint64_t base)
{
	dm_node_init(buf, NS, 0, tag, DM_ENTRY_MIN, DM_ENTRY_INF);
	for (int i = 0; i < n; i++)
		LEAF_ENTS(buf)[i] = dm_raw_of(dm_entry_make(base + (uint64_t) i * 2, 7));
	NODE_HDR(buf)->count = (uint16_t) n;
	dm_node_seal(buf);
}

int
main(void)
{
	uint8_t    *a = aligned_alloc(8, NS), *b = aligned_alloc(8, NS), *m = aligned_alloc(8, NS);
	int			torn_caught = 0, torn_total = 0;

	CHECK(dm_leaf_cap(1024) == 58 && dm_inner_cap(1024) == 39 && dm_leaf_cap(256) == 10 &&
		  dm_inner_cap(256) == 7 && dm_leaf_cap(4096) == 250, "capacities follow the documented layout");

	make_leaf(a, 42, 40, 100);
	CHECK(dm_node_valid(a, NS, 42), "a sealed node validates");
	CHECK(!dm_node_valid(a, NS, 43), "a node of another tree does not");
	CHECK(!dm_node_valid(a, 2048, 42), "a node of another size does not");
	NODE_HDR(a)->count = 59;
	CHECK(!dm_node_valid(a, NS, 42), "a count beyond capacity does not");
	make_leaf(a, 42, 40, 100);
	NODE_HDR(a)->lock = 12345;
	CHECK(dm_node_valid(a, NS, 42), "the lock word is outside the checksum (readers ignore a holder)");
	LEAF_ENTS(a)[10].tid ^= 1;
	CHECK(!dm_node_valid(a, NS, 42), "one flipped bit in an entry is caught");
	memset(m, 0, NS);
	CHECK(!dm_node_valid(m, NS, 0), "zeroed memory (a fresh chunk) is not a node");

	/*
	 * Torn copies: version 1 and version 2 of a node (one entry inserted,
	 * shifting the rest), mixed at every word boundary, both ways.  A copy
	 * that equals neither version must never validate.
	 */
	make_leaf(a, 42, 40, 100);
	memcpy(b, a, NS);
	memmove(&LEAF_ENTS(b)[6], &LEAF_ENTS(b)[5], 35 * sizeof(dm_rawent));
	LEAF_ENTS(b)[5] = dm_raw_of(dm_entry_make(109, 8));
	NODE_HDR(b)->count = 41;
	dm_node_seal(b);
	for (int cut = 8; cut < NS; cut += 8)
		for (int dir = 0; dir < 2; dir++)
		{
			const uint8_t *first = dir ? b : a, *second = dir ? a : b;

			memcpy(m, first, (size_t) cut);
			memcpy(m + cut, second + cut, (size_t) (NS - cut));
			if (memcmp(m, a, dm_node_used_bytes(a)) == 0 || memcmp(m, b, dm_node_used_bytes(b)) == 0)
				continue;		/* the words that differ were all on one side */
			torn_total++;
			torn_caught += !dm_node_valid(m, NS, 42);
		}
	CHECK(torn_total > 100 && torn_caught == torn_total, "all %d torn mixes of two versions are rejected (%d caught)",
		  torn_total, torn_caught);

	/* searches */
	make_leaf(a, 1, 40, 100);	/* keys 100, 102, ..., 178 */
	CHECK(leaf_lb(a, dm_entry_make(100, 7)) == 0 &&
		  leaf_lb(a, dm_entry_make(101, 0)) == 1 &&
		  leaf_lb(a, dm_entry_make(178, 7)) == 39 &&
		  leaf_lb(a, dm_entry_make(179, 0)) == 40 &&
		  leaf_lb(a, dm_entry_make(0, 0)) == 0, "leaf lower bound");
	dm_node_init(a, NS, 1, 1, DM_ENTRY_MIN, DM_ENTRY_INF);
	for (int i = 0; i < 5; i++)
	{
		INNER_ENTS(a)[i].sep = dm_raw_of(i == 0 ? DM_ENTRY_MIN : dm_entry_make((uint64_t) i * 10, 0));
		INNER_ENTS(a)[i].child = (dm_gaddr) (i + 1) * 4096;
	}
	NODE_HDR(a)->count = 5;
	CHECK(child_ix(a, dm_entry_make(0, 5)) == 0 &&
		  child_ix(a, dm_entry_make(10, 0)) == 1 &&
		  child_ix(a, dm_entry_make(9, UINT64_MAX - 1)) == 0 &&
		  child_ix(a, dm_entry_make(45, 0)) == 4 &&
		  child_ix(a, DM_ENTRY_INF) == 4, "inner child index (last separator <= entry)");

	/* entry order: NULLs after every value, INF after everything */
	CHECK(dm_entry_cmp(dm_entry_make(UINT64_MAX, DM_TID_MAX), dm_entry_null(1)) < 0 &&
		  dm_entry_cmp(dm_entry_null(DM_TID_LIMIT - 1), DM_ENTRY_INF) < 0 &&
		  dm_entry_is_null(dm_entry_null(3)) && !dm_entry_is_null(dm_entry_make(3, 3)),
		  "NULL entries sort after every value and before +infinity");
	CHECK(dm_node_covers(a, DM_ENTRY_INF), "the rightmost node covers +infinity");
	free(a);
	free(b);
	free(m);
	return tap_done();
}
