/*
 * helpers.c — the support every group of the cached-tree test uses: the
 * memnode and run settings, clients, trees created, opened with a cache and
 * bulk-loaded, and dm_caches in MAP_SHARED memory so forked children share
 * one, with their statistics and dm_tree_verify_cache.
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

const opmix MIX_GROW = {60, 70, 78, 85, 92, 97, 100};

const opmix MIX_MIXED = {35, 65, 73, 81, 90, 97, 100};

const opmix MIX_SHRINK = {15, 70, 78, 85, 92, 97, 100};

const opmix MIX_MULTI = {40, 65, 72, 80, 90, 95, 100};

memnode_proc mn;
uint64_t g_seed = 1;
int	g_scale = 100;

/* ---- small helpers ------------------------------------------------------------------ */

int
scaled(int n)
{
	long		v = (long) n * g_scale / 100;

	return v < 1 ? 1 : (int) v;
}

const char *
terr(const dm_tree *t)
{
	const char *s = dm_tree_error(t);

	return s ? s : "";
}

uint64_t
sum_levels(const uint64_t *a)
{
	uint64_t	s = 0;

	for (int i = 0; i < DM_CACHE_LEVELS; i++)
		s += a[i];
	return s;
}

uint64_t
atomics_of(const dm_counters *cc)
{
	return cc->ops[DM_OP_CAS] + cc->ops[DM_OP_FAA] + cc->ops[DM_OP_FETCH_OR] + cc->ops[DM_OP_FETCH_MAX];
}

const transport TR_SHM = {"shm", DM_BACKEND_SHM, 0};
const transport TR_TCP = {"tcp", DM_BACKEND_TCP, 0};
/* every READ/WRITE torn into 8-byte pieces with other ops interleaved (test mode) */
const transport TR_SHM_TEAR = {"shm+tear", DM_BACKEND_SHM, DM_CLIENT_TEAR};

dm_client *
client_new(const transport *tr, const char *who)
{
	return test_client_connect(tr->backend, tr->flags, 30000, who, mn.addr, NULL);
}

dm_tree *
tree_new(dm_client *c, const dm_tree_name *tn)
{
	dm_tree_opts opts;
	dm_tree    *t = NULL;

	memset(&opts, 0, sizeof(opts));
	opts.node_size = NODE_SIZE;
	test_tree_leaf_opts(&opts);
	if (!CHECK(test_tree_key_opts(&opts) == 0, "tree %s: key format %s", tn->name, test_key_format_name()) ||
		!CHECK_STATUS(dm_tree_create_new(c, HOME, tn, &opts, &t), DM_OK, "create tree %s (%d-byte nodes)",
					  tn->name, NODE_SIZE))
		return NULL;
	return t;
}

/* Open a handle; with inst >= 0 it joins that instance (cache may be NULL). */
int
tree_open(dm_client *c, const dm_tree_name *tn, dm_cache *cache, int inst, dm_tree **out)
{
	int			rc = dm_tree_open_existing(c, HOME, tn, out);

	if (rc == DM_OK && inst >= 0 && (rc = dm_tree_use_cache(*out, cache, (uint32_t) inst)) != DM_OK)
	{
		dm_tree_close(*out);
		*out = NULL;
	}
	return rc;
}

int
bulk_load(dm_tree *t, const model *m, int fillfactor)
{
	dm_bulk    *b = NULL;
	int			rc;

	if ((rc = dm_tree_bulk_begin(t, fillfactor, &b)) != DM_OK)
		return rc;
	if (m->n > 0 && (rc = dm_bulk_add(b, m->e, (int) m->n)) != DM_OK)
	{
		dm_bulk_abort(b);
		return rc;
	}
	return dm_bulk_finish(b);
}

int
shcache_new(shcache *sc, dm_cache_policy policy, uint32_t nframes, uint32_t permille)
{
	/*
	 * permille for every leaf read, a hopscotch lookup's miss too (its own
	 * default rate is test_cache's): the groups' admission checks hold for
	 * both leaf formats
	 */
	dm_cache_config cfg = {NODE_SIZE, nframes, policy, permille, 0, 0,
	permille ? permille : DM_CACHE_HOP_ADMIT_NEVER};

	sc->c = NULL;
	sc->len = dm_cache_shmem_size(&cfg);
	sc->mem = sc->len ? mmap(NULL, sc->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
	if (sc->mem == MAP_FAILED)
	{
		sc->mem = NULL;
		return CHECK(0, "cache of %u frames: shared mapping of %zu bytes", nframes, sc->len);
	}
	sc->c = dm_cache_init(sc->mem, sc->len, &cfg);
	return CHECK(sc->c != NULL, "dm_cache_init: %u frames of %d bytes, policy %d, leaf admission %u/1000 (%zu bytes)",
				 nframes, NODE_SIZE, policy, permille, sc->len);
}

void
shcache_free(shcache *sc)
{
	if (sc->mem)
		munmap(sc->mem, sc->len);
	sc->mem = NULL;
	sc->c = NULL;
}

void
diag_cache(const char *label, shcache *sc)
{
	dm_cache_stats s;

	dm_cache_stats_get(sc->c, &s);
	tap_diag("%s: cache %" PRIu64 " frames: used by level %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64
			 "+, hits %" PRIu64 " (leaf %" PRIu64 ", via hint %" PRIu64 "), misses %" PRIu64 " (leaf %" PRIu64
			 "), admissions %" PRIu64 ", skipped %" PRIu64 ", evictions %" PRIu64 ", coolings %" PRIu64
			 ", promotions %" PRIu64 ", delegations %" PRIu64 ", io waits %" PRIu64 ", no frame %" PRIu64
			 ", invalidations %" PRIu64 ", local writes %" PRIu64, label, s.nframes,
			 s.frames_used[0], s.frames_used[1], s.frames_used[2], sum_levels(s.frames_used) - s.frames_used[0]
			 - s.frames_used[1] - s.frames_used[2], sum_levels(s.hits), s.hits[0], s.hint_hits,
			 sum_levels(s.misses), s.misses[0], s.admissions, s.admit_skipped, s.evictions, s.coolings,
			 s.promotions, s.delegations, s.io_waits, s.no_frame, s.invalidations, s.local_writes);
}

/* dm_tree_verify_cache through t (a handle using the cache) and dm_cache_check. */
int
check_cache(const char *label, dm_tree *t, shcache *sc, uint64_t *checked_out)
{
	char		msg[512] = "";
	uint64_t	checked = 0;
	int			rc = dm_tree_verify_cache(t, &checked, msg, sizeof(msg));
	int			ok;

	ok = CHECK_STATUS(rc, DM_OK, "%s: dm_tree_verify_cache (%" PRIu64 " cached nodes compared with remote memory)",
					  label, checked);
	if (rc != DM_OK)
		tap_diag("  %s %s", msg, terr(t));
	msg[0] = '\0';
	rc = dm_cache_check(sc->c, msg, sizeof(msg));
	if (!CHECK(rc == 0, "%s: dm_cache_check", label))
	{
		tap_diag("  %s", msg);
		ok = 0;
	}
	if (checked_out)
		*checked_out = checked;
	return ok;
}
