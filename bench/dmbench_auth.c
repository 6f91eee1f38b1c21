/*
 * dmbench_auth.c — what tenant isolation costs the memnode per op, measured
 * in-process on the real functions (no network noise): for a million ops
 * of the mix a tree uses (READ 8 B / 256 B / 1 KiB, CAS, FAA) at addresses
 * in the caller's own chunks and catalog entry (64 Ki ops, 16 passes a round),
 *   - validation without authentication: dm_region_check_op per op
 *   - validation with it: dm_region_check_op + dm_region_check_owner per op
 *   - the per-batch cost added with it: one uncontended lock/unlock of the
 *     worker's batch lock (memnode/auth.c)
 * Rounds alternate between the variants (same run, same machine state); the
 * median of the rounds is reported, with the region's tenants interleaved
 * (chunks of two identities alternate) as on a shared memnode.
 * Usage: dmbench_auth [--rounds N] [--out FILE]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dm_auth.h"
#include "dm_region.h"
#include "testutil.h"

#define REGION (UINT64_C(256) << 20)
#define CHUNK (UINT64_C(1) << 20)
#define NOPS (1u << 16)		/* 1.5 MiB of ops: the loop measures checks, not cache misses */
#define PASSES 16
#define MAX_ROUNDS 101

typedef struct bop
{
	int			kind;
	uint64_t	off;
	uint32_t	len;
} bop;

static uint64_t rng = 88172645463325252ull;
static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	dm_region	r;
	uint8_t    *base = aligned_alloc(4096, REGION);
	uint64_t	ta = dm_auth_ident_tag("tenant-a"),
				tb = dm_auth_ident_tag("tenant-b");
	dm_tree_name n;
	dm_tree_info ia,
				ib;
	uint64_t	a_chunks[32];
	int			na = 0;
	bop		   *ops = malloc(sizeof(bop) * NOPS);
	int			rounds = 21;
	const char *out = NULL;
	double		t_plain[MAX_ROUNDS],
				t_owner[MAX_ROUNDS],
				t_lock[MAX_ROUNDS];
	volatile int sink = 0;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	FILE	   *f;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
			out = argv[++i];
		else
		{
			fprintf(stderr, "usage: dmbench_auth [--rounds N] [--out FILE]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = 21;
	if (!base || !ops || dm_region_format(&r, base, REGION, 1, CHUNK, 4096, 0, 1, 1) != DM_OK)
		return 1;
	dm_tree_name_named(&n, "a");
	dm_region_cat_create_owned(&r, &n, 1, ta, 1, &ia);
	dm_tree_name_named(&n, "b");
	dm_region_cat_create_owned(&r, &n, 1, tb, 1, &ib);
	for (int i = 0; i < 64; i++)
	{
		uint64_t	off;

		if (dm_region_chunk_alloc(&r, (i % 2) ? ib.tree_id : ia.tree_id, 1, &off) != DM_OK)
			return 1;
		if (i % 2 == 0)
			a_chunks[na++] = off;
	}
	for (uint32_t i = 0; i < NOPS; i++)
	{
		uint32_t	pick = (uint32_t) (rnd() % 100);

		if (pick < 2)
		{
			/* the root and meta words of its catalog entry */
			ops[i].kind = DM_OP_CAS;
			ops[i].off = dm_gaddr_offset(ia.root_addr);
			ops[i].len = 8;
			continue;
		}
		ops[i].kind = pick < 60 ? DM_OP_READ : pick < 90 ? DM_OP_CAS : DM_OP_FAA;
		ops[i].len = ops[i].kind != DM_OP_READ ? 8 : (pick % 3 == 0 ? 8 : pick % 3 == 1 ? 256 : 1024);
		ops[i].off = a_chunks[rnd() % (uint64_t) na] + (rnd() % (CHUNK / 1024 - 1)) * 1024;
	}

	for (int k = 0; k < rounds; k++)
	{
		uint64_t	t0 = now_ns();
		int			bad = 0;

		for (int p = 0; p < PASSES; p++)
			for (uint32_t i = 0; i < NOPS; i++)
				bad |= dm_region_check_op(&r, ops[i].kind, ops[i].off, ops[i].len);
		t_plain[k] = (double) (now_ns() - t0) / NOPS / PASSES;
		t0 = now_ns();
		for (int p = 0; p < PASSES; p++)
			for (uint32_t i = 0; i < NOPS; i++)
				bad |= dm_region_check_op(&r, ops[i].kind, ops[i].off, ops[i].len) |
					dm_region_check_owner(&r, ops[i].off, ops[i].len, ta);
		t_owner[k] = (double) (now_ns() - t0) / NOPS / PASSES;
		t0 = now_ns();
		for (int p = 0; p < PASSES; p++)
			for (uint32_t i = 0; i < NOPS; i++)
			{
				pthread_mutex_lock(&lock);
				sink += (int) i;
				pthread_mutex_unlock(&lock);
			}
		t_lock[k] = (double) (now_ns() - t0) / NOPS / PASSES;
		if (bad)
		{
			fprintf(stderr, "dmbench_auth: an op of tenant-a was refused: the benchmark is wrong\n");
			return 1;
		}
	}
	qsort(t_plain, (size_t) rounds, sizeof(double), cmp_double);
	qsort(t_owner, (size_t) rounds, sizeof(double), cmp_double);
	qsort(t_lock, (size_t) rounds, sizeof(double), cmp_double);
	for (int pass = 0; pass < 2; pass++)
	{
		f = pass == 0 ? stdout : (out ? fopen(out, "w") : NULL);
		if (f == NULL)
			continue;
		fprintf(f, "| per op | median ns | min ns | max ns |\n|---|---|---|---|\n");
		fprintf(f, "| validation, no authentication (dm_region_check_op) | %.2f | %.2f | %.2f |\n",
				t_plain[rounds / 2], t_plain[0], t_plain[rounds - 1]);
		fprintf(f, "| validation with isolation (+ dm_region_check_owner) | %.2f | %.2f | %.2f |\n",
				t_owner[rounds / 2], t_owner[0], t_owner[rounds - 1]);
		fprintf(f, "| isolation check alone (difference of the medians) | %.2f | | |\n",
				t_owner[rounds / 2] - t_plain[rounds / 2]);
		fprintf(f, "| per batch: uncontended batch lock + unlock | %.2f | %.2f | %.2f |\n",
				t_lock[rounds / 2], t_lock[0], t_lock[rounds - 1]);
		fprintf(f, "\n%d rounds of %d x %u ops (60%% READ of 8 B / 256 B / 1 KiB, 30%% CAS, 8%% FAA in 32 chunks of "
				"1 MiB interleaved with another identity's, 2%% CAS on the catalog root word).\n", rounds, PASSES, NOPS);
		if (pass == 1)
			fclose(f);
	}
	return sink == 42 ? 3 : 0;
}
