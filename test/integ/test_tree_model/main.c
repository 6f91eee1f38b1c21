/*
 * test_tree_model/main.c — model-based test of the remote B-link tree (dm_tree.h)
 * against a real memnode, over the tcp and the shm backend, with 256-byte
 * and 1 KiB nodes.
 *
 * Why model-based: the tree's interesting code (splits, right-moves, runs of
 * equal keys spread over several leaves, empty leaves left behind by
 * deletes, scans crossing all of those in both directions) is reached by
 * long random operation sequences, not by hand-written cases.  Every
 * operation's result is compared with a plain sorted array holding the same
 * set, and after each phase dm_tree_verify must pass and count exactly the
 * model's entries, dm_tree_stats_get must agree with it, and full and random
 * range scans must return exactly the model's slices.  256-byte nodes hold
 * only 10 leaf entries and 7 children, so a few thousand entries give a tree
 * of height 5 and thousands of splits.
 *
 * Sections:
 *   model   random singles, hot keys + NULLs + edge keys, sorted batches,
 *           scans interleaved with changes through the same handle, drain
 *           to empty, refill; then dm_tree_destroy returns every chunk and
 *           removes the catalog entry;
 *   bulk    dm_tree_bulk_begin/dm_bulk_add/dm_bulk_finish at fillfactor
 *           50/90/100 with 0, 1 and thousands of entries, then random ops;
 *   errors  invalid node sizes, duplicate names, bulk into a non-empty tree,
 *           NULL-flagged tids outside dm_entry_null, unsorted batches;
 *   verify  nodes edited and resealed with the tree's own checksum, so that
 *           only dm_tree_verify can notice, one broken invariant at a time;
 *   nospace a 16 MiB memnode fills up: NOSPACE, then the tree still verifies
 *           with every acknowledged entry, deletes work, destroy frees;
 *   corrupt garbage written into a leaf and into the root's checksum makes
 *           operations fail with DM_ERR_CORRUPT in bounded time (each such
 *           operation runs in a child with a deadline, so a tree that loops
 *           forever fails the test instead of hanging it) and verify report
 *           it; restoring the bytes heals the tree.
 *
 * TREE_KEY_FORMAT=var (run-c-tests.sh: test_tree_model+var) runs nospace,
 * model and bulk with variable-length keys (test/lib/testkeys.h), the model
 * comparing entries by their bytes, over shm only (the transport does not
 * see the key format; tcp takes twice as long); errors, corrupt and verify
 * edit FIXED8 node images and test FIXED8 entry rules, so they run in the
 * FIXED8 run only (VAR images and entry rules: test_node_var, test_tree_var).
 *
 * Reproduce: TREE_SEED=<n> build/test/integ/test_tree_model (the seed is
 * printed; each section derives its own stream from it).  On a mismatch the
 * last operations are printed.  TREE_SCALE=<percent> scales op counts;
 * TREE_BACKEND=tcp|shm runs one backend only (handy for seed sweeps).
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
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_node.h"
#include "dm_offload.h"			/* the tree's node struct and dm_node_seal: for sealed corruption */
#include "dm_region.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testkeys.h"
#include "testutil.h"

#include "tree_model.h"

/* ----------------------------------------------------------------------------------- */

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "512M", "--chunk-size", "1M",
	"--offload-threads", "2", NULL};
	const char *const args_small[] = {"--id", "2", "--shm", "--size", "16M", "--chunk-size", "1M",
	"--catalog-size", "16", NULL};
	uint64_t	t0 = now_ns();
	const char *only = getenv("TREE_BACKEND");	/* "tcp" or "shm": run only that one */
	int			var = test_key_var();

	tree_test_env(&g_seed, &g_scale);
	if (var)
	{
		/* the longest test key is fixed by the first tree: the smallest node size comes first */
		dm_tree_opts o = {.node_size = 256};

		if (!CHECK(test_tree_key_opts(&o) == 0, "TREE_KEY_FORMAT is fixed8 or var"))
			return tap_done();
		if (only == NULL)
			only = "shm";
	}

	if (memnode_start(&mn, 0, args) != 0 || memnode_start(&mn_small, 0, args_small) != 0)
	{
		CHECK(0, "start memnodes (id 1, 512M; id 2, 16M; --shm)");
		return tap_done();
	}

	if (test_ucx())
	{
		/* the ucx variant: the model and bulk runs over ucx */
		for (int j = 0; j < 2; j++)
		{
			run_model(&cfg_ucx, j == 0 ? 256 : 1024);
			run_bulk(&cfg_ucx, j == 0 ? 256 : 1024, 90, 0);
			run_bulk(&cfg_ucx, j == 0 ? 256 : 1024, 90, 1);
		}
	}
	else
	{
		const tcfg *cfs[2] = {&cfg_tcp, &cfg_shm};
		const uint32_t sizes[2] = {256, 1024};

		if (!var)
		{
			run_errors(only && strcmp(only, "shm") == 0 ? &cfg_shm : &cfg_tcp);
			tap_diag("errors: %.1f s", (now_ns() - t0) / 1e9);
			for (int i = 0; i < 2; i++)
				if (!only || strcmp(only, cfs[i]->name) == 0)
					run_corrupt(cfs[i]);
			tap_diag("corrupt: %.1f s", (now_ns() - t0) / 1e9);
			run_verify_detects(only && strcmp(only, "tcp") == 0 ? &cfg_tcp : &cfg_shm);
			tap_diag("verify: %.1f s", (now_ns() - t0) / 1e9);
		}
		run_nospace(&cfg_shm);
		tap_diag("nospace: %.1f s", (now_ns() - t0) / 1e9);
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++)
				if (!only || strcmp(only, cfs[i]->name) == 0)
					run_model(cfs[i], sizes[j]);
		tap_diag("model: %.1f s", (now_ns() - t0) / 1e9);
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2 && (!only || strcmp(only, cfs[i]->name) == 0); j++)
			{
				const int	ffs[3] = {50, 90, 100};

				for (int f = 0; f < 3; f++)
				{
					run_bulk(cfs[i], sizes[j], ffs[f], 0);
					run_bulk(cfs[i], sizes[j], ffs[f], 1);
					run_bulk(cfs[i], sizes[j], ffs[f], sizes[j] == 256 ? 3000 : 20000);
				}
			}
	}

	CHECK(WIFEXITED(memnode_stop(&mn_small, SIGTERM)), "small memnode exits on SIGTERM");
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	tap_diag("total %.1f s", (now_ns() - t0) / 1e9);
	return tap_done();
}
