/*
 * dmicount.c — a fixed amount of tree work for instruction counting
 * (valgrind --tool=callgrind), where wall-clock benchmarks on a shared
 * machine drift too much to see a 1-2% change.
 *
 *   dmicount lookup|insert|scan|none N [ENTRIES]
 *
 * starts a memnode (build/dmindex-memnode --shm, as the C tests do),
 * creates a FIXED8 tree of 1024-byte nodes over shm, bulk-loads ENTRIES
 * keys (default 100000: the even numbers scrambled by a fixed bijection)
 * and then does N operations of one kind in run_ops: point lookups of
 * loaded keys, inserts of new (odd) keys, or N entries read by range scans
 * of 100 entries each.  Every choice comes from a fixed seed, so two runs
 * execute the same instructions.  Count only run_ops with
 * --toggle-collect=run_ops and take the difference of a run with N and
 * one with 2N: what is left is N operations without the fixed costs (see
 * bench/results/varkey-fixed8-*.md).  Results are checked (each lookup
 * finds its tid, each insert is new, each scan returns its 100 entries in
 * order), so a faster wrong tree cannot pass for a faster tree.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_client.h"
#include "dm_tree.h"
#include "testutil.h"

#define SCAN_LEN 100

/* The key of ordinal i: a bijection of 64-bit words, so keys spread over every leaf. */
static uint64_t
key_of(uint64_t i)
{
	uint64_t	x = i * UINT64_C(0x9E3779B97F4A7C15);

	x ^= x >> 29;
	return x;
}

static int
cmp_entry(const void *a, const void *b)
{
	return dm_entry_cmp(*(const dm_entry *) a, *(const dm_entry *) b);
}

/* Returns the number of failed checks.  Not inlined: callgrind counts this function only. */
static __attribute__((noinline)) uint64_t
run_ops(dm_tree *t, const char *what, uint64_t n, uint64_t entries)
{
	uint64_t	rng = 42,
				bad = 0,
				i;

	if (strcmp(what, "lookup") == 0)
		for (i = 0; i < n; i++)
		{
			uint64_t	o = xorshift64s(&rng) % entries,
						tid;
			int			got = 0;

			if (dm_tree_lookup(t, key_of(2 * o), &tid, 1, &got) != DM_OK || got != 1 || tid != o + 1)
				bad++;
		}
	else if (strcmp(what, "insert") == 0)
		for (i = 0; i < n; i++)
		{
			int			existed = 1;

			if (dm_tree_insert(t, dm_entry_make(key_of(2 * i + 1), i + 1), &existed) != DM_OK || existed)
				bad++;
		}
	else if (strcmp(what, "scan") == 0)
		for (i = 0; i < n; i += SCAN_LEN)
		{
			dm_range	r;
			dm_iter    *it = NULL;
			dm_entry	e,
						prev = DM_ENTRY_MIN;
			int			k = 0;

			memset(&r, 0, sizeof(r));
			/* below 2^63 - 2^56: at least SCAN_LEN entries follow (checked) */
			r.lo = dm_key_lo(xorshift64s(&rng) >> 1, 1);
			r.lo_incl = 1;
			r.hi = DM_ENTRY_INF;
			r.hi_incl = 1;
			if (dm_iter_open(t, &r, &it) != DM_OK)
			{
				bad++;
				continue;
			}
			while (k < SCAN_LEN && dm_iter_next(it, &e) == 1)
			{
				if (k > 0 && dm_entry_cmp(prev, e) >= 0)
					bad++;
				prev = e;
				k++;
			}
			if (k != SCAN_LEN)
				bad++;
			dm_iter_close(it);
		}
	else if (strcmp(what, "none") != 0)
		bad = UINT64_MAX;
	return bad;
}

int
main(int argc, char **argv)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "512M", NULL};
	memnode_proc mn;
	dm_client  *c;
	dm_tree    *t = NULL;
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_bulk    *b = NULL;
	dm_entry   *e;
	uint64_t	n,
				entries = 100000,
				bad,
				i;
	int			st;

	if (argc < 3 || argc > 4)
	{
		fprintf(stderr, "usage: dmicount lookup|insert|scan|none N [ENTRIES]\n");
		return 2;
	}
	n = strtoull(argv[2], NULL, 10);
	if (argc == 4)
		entries = strtoull(argv[3], NULL, 10);
	if (entries < 2 * SCAN_LEN)
	{
		fprintf(stderr, "dmicount: at least %d entries\n", 2 * SCAN_LEN);
		return 2;
	}
	if (memnode_start(&mn, 0, args) != 0)
		return 1;
	c = test_client_connect(DM_BACKEND_SHM, 0, 30000, "dmicount", mn.addr, NULL);
	if (!c)
		goto fail;
	dm_tree_name_named(&tn, "icount");
	memset(&opts, 0, sizeof(opts));
	opts.node_size = 1024;
	if ((st = dm_tree_create_new(c, 1, &tn, &opts, &t)) != DM_OK)
	{
		fprintf(stderr, "dmicount: create: %s\n", dm_strerror(st));
		goto fail;
	}
	e = malloc(entries * sizeof(dm_entry));
	if (!e)
		goto fail;
	for (i = 0; i < entries; i++)
		e[i] = dm_entry_make(key_of(2 * i), i + 1);
	qsort(e, entries, sizeof(dm_entry), cmp_entry);
	st = dm_tree_bulk_begin(t, 90, &b);
	if (st == DM_OK)
		st = dm_bulk_add(b, e, (int) entries);
	if (st == DM_OK)
		st = dm_bulk_finish(b);
	free(e);
	if (st != DM_OK)
	{
		fprintf(stderr, "dmicount: bulk load: %s\n", dm_strerror(st));
		goto fail;
	}
	bad = run_ops(t, argv[1], n, entries);
	if (bad)
	{
		fprintf(stderr, "dmicount: %s: %" PRIu64 " failed checks\n", argv[1], bad);
		goto fail;
	}
	printf("dmicount: %s %" PRIu64 " ok\n", argv[1], n);
	dm_tree_destroy(t);
	dm_client_destroy(c);
	memnode_stop(&mn, 15);
	return 0;
fail:
	memnode_stop(&mn, 9);
	return 1;
}
