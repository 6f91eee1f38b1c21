/*
 * test_offload_walk.c — one-sided operations that start where the offload
 * policy's walk through the cache stopped (dm_offload.c find_start hands
 * the node it missed at to the next descent for the same entry:
 * dm_tree_descend_impl's hint), while other processes of the instance
 * split, empty and reclaim the leaves below, through the same shared
 * cache.
 *
 * The policy runs in auto with its estimates pinned (an RPC 1.5x a
 * one-sided read: a lookup missing only its leaf stays one-sided, one
 * missing more goes to the executor, as over tcp here), so both paths and
 * the hint are taken on every transport.  Checked on every operation: a
 * stable entry (never written after the load) is found exactly once,
 * lookups and scans return only entries that exist with their tids, in
 * order, each once; at the end the tree verifies and every cached frame
 * equals remote memory.  The run must have used the hint (its counter)
 * and decided both ways.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_cache.h"
#include "dm_client.h"
#include "testauth.h"
#include "testutil.h"
/* the policy's state, to pin its estimates (both headers have a now_ns()) */
#define now_ns offload_now_ns
#include "dm_offload_int.h"
#undef now_ns

#define STABLE 3000				/* stable keys 8i, tid 1 */
#define VOLATILE_TID 2			/* keys 8i+1..8i+3, written by the children */
#define SCAN_KEYS 20

static memnode_proc mn;

static dm_client *
connect_to(int backend)
{
	dm_client_opts o = {.backend = backend, .name = "test_offload_walk"};
	dm_client  *c;
	uint16_t	id;

	if ((c = dm_client_create(&o)) == NULL)
		return NULL;
	if (dm_client_connect(c, mn.addr, &id) != DM_OK)
	{
		tap_diag("connect %s: %s", mn.addr, dm_client_error(c));
		dm_client_destroy(c);
		return NULL;
	}
	return c;
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/*
 * A writer of the instance: ranges of volatile entries inserted (leaves
 * split) and deleted again (leaves empty); child 0 also reclaims empty
 * leaves (one reclaimer per tree, as VACUUM).
 */
static int
writer(int backend, const char *name, dm_cache *cache, int idx, volatile int *stop)
{
	dm_client  *c = connect_to(backend);
	dm_tree_name tn;
	dm_tree    *t = NULL;
	uint64_t	rng = 0x9e3779b97f4a7c15ull * (uint64_t) (idx + 7);
	int			rounds = 0;
	dm_reclaim_result rr;

	dm_tree_name_named(&tn, name);
	if (c == NULL || dm_tree_open_existing(c, 1, &tn, &t) != DM_OK || dm_tree_use_cache(t, cache, 0) != DM_OK)
		return 2;
	while (!*stop)
	{
		uint64_t	base = xorshift64s(&rng) % (STABLE - 60);

		for (int pass = 0; pass < 2; pass++)
			for (uint64_t k = base; k < base + 60; k++)
				for (uint64_t v = 1; v <= 3; v++)
				{
					dm_entry	e = dm_entry_make(8 * k + v, VOLATILE_TID);
					int			rc = pass == 0 ? dm_tree_insert(t, e, NULL) : dm_tree_delete(t, e, NULL);

					if (rc != DM_OK)
					{
						fprintf(stderr, "writer %d: %s: %s\n", idx, pass ? "delete" : "insert", dm_tree_error(t));
						return 1;
					}
				}
		if (idx == 0 && dm_tree_reclaim(t, &rr) != DM_OK)
		{
			fprintf(stderr, "writer 0: reclaim: %s\n", dm_tree_error(t));
			return 1;
		}
		rounds++;
	}
	dm_tree_close(t);
	dm_client_destroy(c);
	return rounds > 0 ? 0 : 3;
}

/* Pin the policy's estimates: warm, an RPC 1.5x a read. */
static void
pin(dm_tree *t)
{
	struct dm_offload *o = t->off;

	if (o->read_ns < 1000)
		o->read_ns = 1000;
	o->rpc_ns = o->read_ns * 3 / 2;
	if (o->read_samples < WARM_SAMPLES)
		o->read_samples = WARM_SAMPLES;
	if (o->rpc_samples < WARM_SAMPLES)
		o->rpc_samples = WARM_SAMPLES;
}

/*
 * A hint that names the wrong leaf (one far left or far right of the
 * entry, as a stale hint whose address was reused would): the descent must
 * still end at the entry's leaf (moving right, or over again from the
 * root).  The entries are the stable ones, so each must be found.
 */
static int
wrong_hints(dm_tree *t, const char *bname)
{
	uint8_t    *buf = aligned_alloc(8, 256);
	dm_tree_counters before,
				after;
	int			bad = 0,
				n = 0;

	dm_tree_get_counters(t, &before);
	for (uint64_t k = 600; buf && k < STABLE - 600; k += 37)
		for (int side = -1; side <= 1; side += 2)
		{
			dm_entry	e = dm_entry_make(8 * k, 1);
			dm_gaddr	other;
			int			found = 0;

			if (dm_tree_descend(t, dm_entry_make(8 * (k + (uint64_t) (side * 500)), 1), 0, &other, buf) != DM_OK)
			{
				bad++;
				continue;
			}
			t->desc_hint = other;
			t->desc_hint_e = e;
			t->desc_hint_level = 0;
			t->desc_hint_pframe = DM_FRAME_NONE;
			t->desc_hint_slot = -1;
			if (dm_tree_contains(t, e, &found) != DM_OK || !found)
				bad++;
			n++;
		}
	t->desc_hint = 0;
	dm_tree_get_counters(t, &after);
	free(buf);
	return CHECK(buf != NULL && bad == 0 && n > 20 && after.hinted_descents - before.hinted_descents == (uint64_t) n,
				 "%s: descents from a wrong leaf (left or right of the entry) find each stable entry (%d of %d wrong)",
				 bname, bad, n);
}

static void
run(int backend, const char *bname)
{
	dm_cache_config cfg = {256, 160, DM_CACHE_DEX, 100, 0};
	size_t		len = (dm_cache_shmem_size(&cfg) + 4095) & ~(size_t) 4095;
	void	   *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	dm_cache   *cache = mem != MAP_FAILED ? dm_cache_init(mem, len, &cfg) : NULL;
	dm_client  *c = connect_to(backend);
	dm_tree    *t = NULL;
	dm_tree_name tn;
	dm_tree_opts opts;
	char		name[64],
				msg[256];
	pid_t		kids[2] = {0, 0};
	volatile int *stop = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t	rng = 20261127,
				start,
				lookups = 0,
				scans = 0,
				bad = 0,
				checked = 0,
				entries = 0;
	dm_tree_counters tc;
	dm_offload_counters oc;
	int			ok = 1;

	snprintf(name, sizeof(name), "walk-%s", bname);
	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = 256;
	test_tree_leaf_opts(&opts);
	if (!CHECK(stop != MAP_FAILED && cache && c && dm_tree_create_new(c, 1, &tn, &opts, &t) == DM_OK,
			   "%s: a tree of 256-byte nodes and a 160-frame cache in shared memory", bname))
		goto out;
	for (uint64_t k = 0; k < STABLE && ok; k++)
		ok = dm_tree_insert(t, dm_entry_make(8 * k, 1), NULL) == DM_OK;
	if (!CHECK(ok && dm_tree_use_cache(t, cache, 0) == DM_OK && dm_tree_set_offload(t, DM_OFFLOAD_AUTO) == DM_OK,
			   "%s: %d stable entries; the cache; offload auto", bname, STABLE))
		goto out;
	/*
	 * 2.5 s and 4,000 operations at least (a loaded machine runs few per
	 * second over shm, whose RPCs wait for memnode threads), 30 s at most.
	 */
	start = mono_ns();
	*stop = 0;
	for (int i = 0; i < 2; i++)
		if ((kids[i] = fork()) == 0)
			_exit(writer(backend, name, cache, i, stop));
	while ((mono_ns() - start < 2500000000ull || lookups + scans < 4000) && mono_ns() - start < 30000000000ull)
	{
		uint64_t	r = xorshift64s(&rng);
		uint64_t	k = (r >> 8) % (STABLE - SCAN_KEYS);

		pin(t);
		if (r & 1)
		{
			uint64_t	tids[8];
			int			n = 0,
						v = (int) ((r >> 1) & 3);	/* 0: the stable entry, 1..3: a volatile one */
			int			rc = dm_tree_lookup(t, 8 * k + (uint64_t) v, tids, 8, &n);

			lookups++;
			if (rc != DM_OK || (v == 0 && (n != 1 || tids[0] != 1)) ||
				(v != 0 && (n > 1 || (n == 1 && tids[0] != VOLATILE_TID))))
			{
				if (bad++ < 5)
					tap_diag("%s: lookup of %" PRIu64 ": %s, %d tids, first %" PRIu64, bname, 8 * k + (uint64_t) v,
							 dm_strerror(rc), n, n > 0 ? tids[0] : 0);
			}
		}
		else
		{
			dm_entry	out[SCAN_KEYS * 4 + 8],
						resume;
			int			n = 0,
						more = 0,
						stable = 0,
						wrong = 0;
			int			rc = dm_tree_offload_scan(t, dm_entry_make(8 * k, 0), 1, dm_entry_make(8 * (k + SCAN_KEYS), 0), 0,
												  out, SCAN_KEYS * 4 + 8, &n, &more, &resume);

			scans++;
			for (int i = 0; i < n; i++)
			{
				uint64_t	key = out[i].key;

				if (key < 8 * k || key >= 8 * (k + SCAN_KEYS) || (i > 0 && dm_entry_cmp(out[i - 1], out[i]) >= 0))
					wrong++;
				else if (key % 8 == 0)
				{
					/* the stable entries in order: the next one expected */
					if (out[i].tid != 1 || key != 8 * (k + (uint64_t) stable))
						wrong++;
					stable++;
				}
				else if (key % 8 > 3 || out[i].tid != VOLATILE_TID)
					wrong++;
			}
			if (rc != DM_OK || more || wrong || stable != SCAN_KEYS)
			{
				if (bad++ < 5)
					tap_diag("%s: scan from %" PRIu64 ": %s, %d entries, %d stable of %d, %d wrong, more %d", bname,
							 8 * k, dm_strerror(rc), n, stable, SCAN_KEYS, wrong, more);
			}
		}
	}
	*stop = 1;
	for (int i = 0; i < 2; i++)
	{
		int			st = -1;
		int			waited = kids[i] > 0 && waitpid(kids[i], &st, 0) == kids[i];

		CHECK(waited && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "%s: writer %d splitting, emptying%s leaves through the cache ran and exited 0 (status 0x%x)", bname, i,
			  i == 0 ? " and reclaiming" : "", st);
		kids[i] = 0;
	}
	dm_tree_get_counters(t, &tc);
	dm_tree_offload_counters(t, &oc);
	tap_diag("%s: %" PRIu64 " lookups, %" PRIu64 " scans; %" PRIu64 " descents from the walk's miss, %" PRIu64
			 " restarts; decided %" PRIu64 " local, %" PRIu64 " offload; %" PRIu64 " offloads, %" PRIu64 " fell back",
			 bname, lookups, scans, tc.hinted_descents, tc.restarts, oc.decided_local, oc.decided_offload, oc.offloads,
			 oc.fallbacks);
	if (opts.leaf_format == DM_LEAF_HOPSCOTCH)
		tap_diag("%s: hopscotch lookups: %" PRIu64 " by a neighbourhood read, %" PRIu64 " from a whole leaf, %"
				 PRIu64 " node reads", bname, tc.hop_reads, tc.hop_whole, tc.node_reads);
	CHECK(bad == 0 && lookups > 100 && scans > 100,
		  "%s: every lookup and scan right while the writers ran (%" PRIu64 " wrong of %" PRIu64 ")", bname, bad,
		  lookups + scans);
	CHECK(tc.hinted_descents > 20 && oc.decided_local > 20 && oc.offloads > 0,
		  "%s: one-sided descents started at the walk's miss (%" PRIu64 "), both paths taken (%" PRIu64
		  " local, %" PRIu64 " offloaded)", bname, tc.hinted_descents, oc.decided_local, oc.offloads);
	wrong_hints(t, bname);
	msg[0] = '\0';
	ok = dm_tree_verify(t, &entries, msg, sizeof(msg)) == DM_OK;
	CHECK(ok && entries >= STABLE, "%s: the tree verifies (%" PRIu64 " entries) %s", bname, entries, msg);
	msg[0] = '\0';
	ok = dm_tree_verify_cache(t, &checked, msg, sizeof(msg)) == DM_OK;
	CHECK(ok && checked > 0, "%s: every cached frame equals remote memory (%" PRIu64 " compared) %s", bname, checked,
		  msg);
out:
	for (int i = 0; i < 2; i++)
		if (kids[i] > 0)
		{
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
		}
	if (t)
		dm_tree_destroy(t);
	if (c)
		dm_client_destroy(c);
	if (mem != MAP_FAILED)
		munmap(mem, len);
	if (stop != MAP_FAILED)
		munmap((void *) stop, 4096);
}

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "256M", "--chunk-size", "1M",
	"--offload-threads", "2", NULL};

	if (!CHECK(memnode_start(&mn, 0, args) == 0, "memnode (--shm, --offload-threads 2)"))
		return tap_done();
	run(DM_BACKEND_TCP, "tcp");
	run(DM_BACKEND_SHM, "shm");
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	return tap_done();
}
