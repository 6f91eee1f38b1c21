/*
 * test_tree_cache/main.c — the remote B-link tree read and written through the
 * compute-side node cache (dm_cache.h) and the key-ownership rules of
 * compute instances (dm_tree.h, "Compute-side cache and key ownership"),
 * against a real memnode over shm and tcp.
 *
 * Why: the cache changes who may write a node and how: owned nodes are
 * written under the cache frame's local lock only (no remote CAS), shared
 * ones under both locks, and every write goes through to remote memory
 * before it returns.  A mistake there does not crash anything; it loses or
 * resurrects entries, serves a stale copy, or lets two processes write one
 * node at once.  So every group compares results with a model (entrymodel.h)
 * and ends with dm_tree_verify (remote memory), dm_tree_verify_cache (every
 * cached owned node identical to remote memory, no shared leaf or foreign
 * node cached) and dm_cache_check (the cache's own structures).  256-byte
 * nodes (10 entries a leaf, 7 children an inner node) make trees of a few
 * thousand entries tall, and caches of a few dozen frames evict all the time.
 *
 * Groups:
 *   1 single   one process, one tiny cache (24, 32, 40 frames: 2-5% of the
 *              tree) per policy (DEX admitting every leaf, DEX admitting
 *              10%, INNER) and transport: random singles, batches, lookups,
 *              scans compared with the model; a second handle without a
 *              cache sees every write at once and exactly the model
 *              (write-through); cache statistics show the cache did its
 *              work (hits, evictions, coolings, local writes; no leaf under
 *              INNER);
 *   2 atomics  a warm cache holding the whole tree: inserts into owned
 *              leaves take no remote atomic and fewer round trips than the
 *              same inserts through a handle without a cache;
 *   3 multi    4 writer processes and 1 scanner share one DEX cache of
 *              ~1% of the tree (shm, tcp, shm with torn transfers); each
 *              writer owns the keys == its index mod 4, so its own results
 *              are exact while the others run;
 *   4 two      two instances (2 processes each, one cache each) own
 *              [0, K) and [K, max]; keys dense around K, so the root and
 *              inner nodes are shared; reads cross the whole key space;
 *              writes outside the instance's range fail with DM_ERR_NOTOWNER
 *              and change nothing;
 *   5 pmap     partition-map validation, epochs, and refresh dropping the
 *              tree's cached nodes and changing ownership;
 *   6 bulk     a bulk load into a tree whose empty root is cached: the old
 *              root must not be served afterwards.
 *
 * TREE_KEY_FORMAT=var (run-c-tests.sh: test_tree_cache+var) runs the groups
 * with variable-length keys (test/lib/testkeys.h; NULLs become test key
 * UINT64_MAX, still the last range's), all but group 5: its maps put
 * boundaries between test keys below 2000, which share prefix words in
 * VAR trees, and instance key ranges partition the prefix word (§7).
 *
 * Reproduce: TREE_SEED=<n> (printed) changes every random stream;
 * TREE_SCALE=<percent> scales operation counts; TREE_GROUPS=1,3 runs only
 * those groups.  Failure messages name the process and operation number.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_cache.h"
#include "dm_client.h"
#include "dm_region.h"		/* dm_tree_name_named */
#include "dm_tree.h"
#include "entrymodel.h"
#include "testutil.h"

#include "tree_cache.h"

/* ---- main ------------------------------------------------------------------------------------- */

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "256M", "--chunk-size", "1M", NULL};
	static const struct
	{
		char		id;
		const char *name;
		void		(*fn) (void);
	}			groups[] = {
		{'1', "single process, tiny caches", group1},
		{'2', "remote atomics avoided", group2},
		{'3', "4 writers + 1 scanner on one cache", group3},
		{'4', "two instances, partitioned", group4},
		{'5', "partition maps", group5},
		{'6', "bulk load with a cache", group6},
	};
	const char *only = getenv("TREE_GROUPS");
	uint64_t	t0 = now_ns();

	tree_test_env(&g_seed, &g_scale);
	/* the longest test key is fixed by the first tree's node size: set it before interning */
	{
		dm_tree_opts o = {.node_size = NODE_SIZE};

		if (!CHECK(test_tree_key_opts(&o) == 0, "TREE_KEY_FORMAT is fixed8 or var"))
			return tap_done();
	}
	/* the children's entries come back through shared memory: their suffixes must be the parent's */
	tk_intern(0, 20000 * 3 + 1);
	tk_intern((UINT64_C(1) << 20) - 4096, 8192);
	tk_intern(UINT64_MAX - 8000, 8001);

	sh = test_start_shared(sizeof(shared), &mn, args);
	if (sh == NULL)
		return tap_done();
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
	{
		uint64_t	g0 = now_ns();

		if (only && *only && strchr(only, groups[i].id) == NULL)
			continue;
		if (groups[i].id == '5' && test_key_var())
			continue;
		tap_diag("---- group %c: %s", groups[i].id, groups[i].name);
		groups[i].fn();
		tap_diag("group %c took %.1f s", groups[i].id, (now_ns() - g0) / 1e9);
	}
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	tap_diag("total %.1f s", (now_ns() - t0) / 1e9);
	return tap_done();
}
