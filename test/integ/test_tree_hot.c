/*
 * test_tree_hot.c — the hotspot buffer of a compute instance (dm_tree_hot.c,
 * docs/design.md §5.1): hopscotch lookups through handles that use one
 * node cache speculate with the cache's buffer, whoever pinned the key.
 *
 *   share   a key one process looked up is, in another process of the same
 *           cache (another client, another handle), answered by one 16-byte
 *           speculative read on its first lookup; a handle without a cache
 *           has its own buffer (its first lookup reads the neighbourhood);
 *           a cache configured without a buffer makes no speculation; two
 *           trees sharing the buffer never answer for each other;
 *   torn    a torn tuple at the tree: a test hook stops the writer of a
 *           tuple (key B taking over key A's way, in a one-set buffer)
 *           after each word it stores, and another handle of the instance
 *           looks B up there: half way the slot claims B with A's leaf,
 *           version and tid, which A's unchanged leaf would confirm, so a
 *           reader believing it would return A's tid for B.  Every lookup
 *           must return B's tid (the seqlock makes the slot a miss).
 *   change  what a pin answers once another handle changed the key, for a
 *           cache that speculates before the descent (inner nodes only)
 *           and one that speculates at the descent's leaf (DEX, no leaf
 *           admitted): each lookup in a new process (a backend) whose
 *           instance's buffer holds the key pinned by the previous one.
 *           VACUUM's delete of the pinned tid, an insert of a first tid, a
 *           second tid (duplicates), and the tree dropped and made again
 *           under its name with other tids: every answer the truth.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_cache.h"
#include "dm_client.h"
#include "dm_hot.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testutil.h"

static memnode_proc mn;
static uint64_t g_seed = 1;
static int	g_scale = 100;

typedef struct shared
{
	int			n;
	uint64_t	tid;
	uint64_t	tid2;			/* the second tid, when n >= 2 */
	uint64_t	hits;
	uint64_t	nbhd;
	uint64_t	bytes;
	int			rc;
} shared;

static shared *sh;

static dm_tree *
make_tree(dm_client *c, const char *name, int n)
{
	dm_tree_name tn;
	dm_tree_opts o;
	dm_tree    *t = NULL;
	dm_bulk    *b = NULL;
	int			rc;

	memset(&o, 0, sizeof(o));
	o.node_size = 1024;
	o.leaf_format = DM_LEAF_HOPSCOTCH;
	o.neighborhood = 8;
	dm_tree_name_named(&tn, name);
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &o, &t), DM_OK, "%s: create", name))
		return NULL;
	rc = dm_tree_bulk_begin(t, 80, &b);
	for (int i = 0; i < n && rc == DM_OK; i++)
	{
		dm_entry	e = dm_entry_make((uint64_t) i * 7 + 3, (uint64_t) i + 100);

		rc = dm_bulk_add(b, &e, 1);
	}
	rc = rc == DM_OK ? dm_bulk_finish(b) : (dm_bulk_abort(b), rc);
	CHECK_STATUS(rc, DM_OK, "%s: bulk-load %d keys (key i*7+3 has tid i+100)", name, n);
	return t;
}

static dm_tree *
open_tree(dm_client *c, const char *name, dm_cache *cache)
{
	dm_tree_name tn;
	dm_tree    *t = NULL;

	dm_tree_name_named(&tn, name);
	if (dm_tree_open_existing(c, 1, &tn, &t) != DM_OK)
		return NULL;
	if (cache && dm_tree_use_cache(t, cache, 0) != DM_OK)
	{
		dm_tree_close(t);
		return NULL;
	}
	return t;
}

static dm_cache *
new_cache(uint32_t hotspot)
{
	dm_cache_config cfg = {1024, 256, DM_CACHE_INNER, 0, 10, hotspot};
	size_t		len = dm_cache_shmem_size(&cfg);

	return len ? dm_cache_init(test_shared_map(len), len, &cfg) : NULL;
}

/* One lookup: its answer and what it cost, in *sh. */
static void
look(dm_client *c, dm_tree *t, uint64_t key)
{
	dm_counters c0,
				c1;
	dm_tree_counters t0,
				t1;
	uint64_t	tids[4] = {0};

	dm_client_counters(c, 1, &c0);
	dm_tree_get_counters(t, &t0);
	sh->rc = dm_tree_lookup(t, key, tids, 4, &sh->n);
	dm_client_counters(c, 1, &c1);
	dm_tree_get_counters(t, &t1);
	sh->tid = tids[0];
	sh->tid2 = tids[1];
	sh->hits = t1.hop_spec_hits - t0.hop_spec_hits;
	sh->nbhd = t1.hop_reads - t0.hop_reads;
	sh->bytes = c1.bytes_read - c0.bytes_read;
}

/* look() in a new process with its own client and handle on the cache. */
static void
look_child(const char *name, dm_cache *cache, uint64_t key)
{
	pid_t		pid = test_fork();
	int			st = 0;

	if (pid == 0)
	{
		dm_client  *c = test_client_connect(DM_BACKEND_TCP, 0, 30000, "test_tree_hot", mn.addr, NULL);
		dm_tree    *t = c ? open_tree(c, name, cache) : NULL;

		sh->rc = -1;
		if (t)
		{
			look(c, t, key);
			dm_tree_close(t);
		}
		if (c)
			dm_client_destroy(c);
		_exit(0);
	}
	waitpid(pid, &st, 0);
}

#define KEY(i) ((uint64_t) (i) * 7 + 3)
#define TID(i) ((uint64_t) (i) + 100)

static void
run_share(void)
{
	const char *name = "hot-share",
			   *name2 = "hot-share-2";
	dm_client  *c = test_client_connect(DM_BACKEND_TCP, 0, 30000, "test_tree_hot", mn.addr, NULL);
	dm_cache   *cache = new_cache(1024),
			   *none = new_cache(DM_CACHE_HOTSPOT_NONE);
	dm_tree    *t = NULL,
			   *t2 = NULL,
			   *tc = NULL,
			   *tn = NULL;
	int			n = 4000 * g_scale / 100 + 100;
	/* two keys of the tree at any TREE_SCALE (CI's sanitized run: 25, n = 1100) */
	const int	I1 = n / 4,
				I2 = n / 2;

	if (!CHECK(c && cache && none, "share: client, a cache with a 1024-key buffer, one without a buffer") ||
		(t = make_tree(c, name, n)) == NULL || (t2 = make_tree(c, name2, n)) == NULL)
		goto out;
	tc = open_tree(c, name, cache);
	tn = open_tree(c, name, none);
	if (!CHECK(tc && tn, "share: handles on the two caches"))
		goto out;

	/* another process pins key I1 in the instance's buffer... */
	look_child(name, cache, KEY(I1));
	CHECK(sh->rc == DM_OK && sh->n == 1 && sh->tid == TID(I1) && sh->nbhd == 1 && sh->hits == 0,
		  "share: a first process's lookup reads the neighbourhood (pins the key)");
	/* ...and this one, which never looked it up, speculates with 16 bytes */
	look(c, tc, KEY(I1));
	CHECK(sh->rc == DM_OK && sh->n == 1 && sh->tid == TID(I1) && sh->hits == 1 && sh->bytes == 16,
		  "share: another process's first lookup of it is one 16-byte speculative read (%" PRIu64 " hits, %" PRIu64
		  " bytes)", sh->hits, sh->bytes);
	look_child(name, cache, KEY(I1));
	CHECK(sh->rc == DM_OK && sh->tid == TID(I1) && sh->hits == 1 && sh->bytes == 16,
		  "share: and so is a third process's");
	/* the same key in another tree sharing the buffer: its own lookup, its own tid */
	{
		dm_tree    *t2c = open_tree(c, name2, cache);

		dm_tree_delete(t2, dm_entry_make(KEY(I1), TID(I1)), NULL);
		dm_tree_insert(t2, dm_entry_make(KEY(I1), 777), NULL);
		if (CHECK(t2c != NULL, "share: a handle on a second tree, same cache"))
		{
			look(c, t2c, KEY(I1));
			CHECK(sh->rc == DM_OK && sh->n == 1 && sh->tid == 777 && sh->hits == 0,
				  "share: the second tree's key of the same value is not answered by the first tree's pin");
			look(c, t2c, KEY(I1));
			CHECK(sh->rc == DM_OK && sh->n == 1 && sh->tid == 777 && sh->hits == 1,
				  "share: then by its own");
			look(c, tc, KEY(I1));
			CHECK(sh->rc == DM_OK && sh->tid == TID(I1) && sh->hits == 1, "share: the first tree's pin is intact");
			dm_tree_close(t2c);
		}
	}
	/* a cache without a buffer: no speculation, however often */
	look(c, tn, KEY(I1));
	look(c, tn, KEY(I1));
	CHECK(sh->rc == DM_OK && sh->tid == TID(I1) && sh->hits == 0 && sh->nbhd == 1,
		  "share: with a cache configured without a buffer no lookup speculates");
	/* a handle without a cache keeps its own buffer */
	look(c, t, KEY(I2));
	CHECK(sh->rc == DM_OK && sh->tid == TID(I2) && sh->hits == 0, "share: a handle without a cache: first lookup");
	look(c, t, KEY(I2));
	CHECK(sh->rc == DM_OK && sh->tid == TID(I2) && sh->hits == 1, "share: second lookup, from its own buffer");
	look(c, tc, KEY(I2));
	CHECK(sh->rc == DM_OK && sh->tid == TID(I2) && sh->hits == 0,
		  "share: which the instance's buffer does not see");
out:
	if (tc)
		dm_tree_close(tc);
	if (tn)
		dm_tree_close(tn);
	if (t2)
		CHECK_STATUS(dm_tree_destroy(t2), DM_OK, "share: destroy the second tree");
	if (t)
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "share: destroy");
	if (c)
		dm_client_destroy(c);
}

/* ---- torn ---------------------------------------------------------------------------- */

static dm_client *hook_c;
static dm_tree *hook_t;
static uint64_t hook_key,
			hook_tid;
static int	hook_on,
			hook_stops,
			hook_wrong;
static char hook_why[200];

static void
torn_hook(dm_hot_slot *s, int word)
{
	uint64_t	tids[4] = {0};
	int			got = -1,
				rc;

	(void) s;
	if (!hook_on)
		return;					/* the lookup below pins too: not that store */
	hook_on = 0;
	hook_stops++;
	rc = dm_tree_lookup(hook_t, hook_key, tids, 4, &got);
	if ((rc != DM_OK || got != 1 || tids[0] != hook_tid) && !hook_wrong++)
		snprintf(hook_why, sizeof(hook_why), ": after word %d a lookup of %" PRIu64 " gave %d tids (first %" PRIu64
				 "), want %" PRIu64, word, hook_key, got, tids[0], hook_tid);
	hook_on = 1;
}

static void
run_torn(void)
{
	const char *name = "hot-torn";
	dm_client  *c = test_client_connect(DM_BACKEND_TCP, 0, 30000, "test_tree_hot", mn.addr, NULL);
	dm_client  *c2 = test_client_connect(DM_BACKEND_TCP, 0, 30000, "test_tree_hot", mn.addr, NULL);
	dm_cache   *cache = new_cache(4);	/* one set of four ways */
	dm_tree    *t = NULL,
			   *pin = NULL;
	int			n = 4000;
	int			a = 100,
				b = 3000;		/* keys in different leaves */

	if (!CHECK(c && c2 && cache, "torn: clients, a cache with a one-set buffer") || (t = make_tree(c, name, n)) == NULL)
		goto out;
	pin = open_tree(c, name, cache);
	hook_t = open_tree(c2, name, cache);
	hook_c = c2;
	if (!CHECK(pin && hook_t, "torn: a pinning handle and a looking one on the cache"))
		goto out;
	/* A takes way 0, three more keys the others; each counted once */
	look(c, pin, KEY(a));
	for (int i = 1; i <= 3; i++)
		look(c, pin, KEY(a + i * 500));
	/* B's first pin only ages the full set; its second takes way 0 (A's), stopped at every word */
	look(c, pin, KEY(b));
	hook_key = KEY(b);
	hook_tid = TID(b);
	hook_stops = hook_wrong = 0;
	hook_on = 1;
	dm_hot_test_store_hook = torn_hook;
	look(c, pin, KEY(b));
	dm_hot_test_store_hook = NULL;
	hook_on = 0;
	CHECK(sh->rc == DM_OK && sh->tid == TID(b), "torn: B's lookup that pinned it over A's way is right");
	CHECK(hook_stops == 6 && hook_wrong == 0,
		  "torn: another handle of the instance looked B up at each of the %d stops of that pin: always B's tid%s",
		  hook_stops, hook_why);
	look(c, pin, KEY(a));
	CHECK(sh->rc == DM_OK && sh->tid == TID(a) && sh->hits == 0, "torn: B did take A's way (A is not pinned now)");
out:
	if (pin)
		dm_tree_close(pin);
	if (hook_t)
		dm_tree_close(hook_t);
	if (t)
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "torn: destroy");
	if (c2)
		dm_client_destroy(c2);
	if (c)
		dm_client_destroy(c);
}

/* ---- change ---------------------------------------------------------------------- */

/* A pinned key (two lookups in other processes, the second a hit) answered by a child after each change. */
static void
pin_child(const char *name, dm_cache *cache, uint64_t key, const char *what)
{
	look_child(name, cache, key);
	look_child(name, cache, key);
	CHECK(sh->rc == DM_OK && sh->hits == 1, "change: %s: the key is pinned in the instance's buffer (%" PRIu64
		  " hits)", what, sh->hits);
}

static void
run_change_one(dm_client *c, dm_cache *cache, const char *cname)
{
	const char *name = "hot-change";
	int			n = 2000 * g_scale / 100 + 100;
	dm_tree    *t = make_tree(c, name, n);
	uint64_t	k = KEY(n / 4);

	if (t == NULL)
		return;
	pin_child(name, cache, k, cname);
	CHECK(sh->n == 1 && sh->tid == TID(n / 4), "change %s: pinned answer is the key's tid", cname);
	/* VACUUM removes the pinned tid: the heap may reuse it, the index must not return it */
	CHECK_STATUS(dm_tree_delete(t, dm_entry_make(k, TID(n / 4)), NULL), DM_OK, "change %s: delete", cname);
	look_child(name, cache, k);
	CHECK(sh->rc == DM_OK && sh->n == 0 && sh->hits == 0,
		  "change %s: after the pinned tid's delete, another process finds none (n %d, tid %" PRIu64 ", hits %" PRIu64
		  ")", cname, sh->n, sh->tid, sh->hits);
	pin_child(name, cache, k, cname);
	CHECK(sh->n == 0, "change %s: the pinned answer is 'none'", cname);
	CHECK_STATUS(dm_tree_insert(t, dm_entry_make(k, 4242), NULL), DM_OK, "change %s: insert", cname);
	look_child(name, cache, k);
	CHECK(sh->rc == DM_OK && sh->n == 1 && sh->tid == 4242,
		  "change %s: after an insert of the key pinned as absent, its tid (n %d, tid %" PRIu64 ")", cname, sh->n,
		  sh->tid);
	pin_child(name, cache, k, cname);
	CHECK_STATUS(dm_tree_insert(t, dm_entry_make(k, 4243), NULL), DM_OK, "change %s: insert a duplicate", cname);
	look_child(name, cache, k);
	CHECK(sh->rc == DM_OK && sh->n == 2 && sh->tid == 4242 && sh->tid2 == 4243,
		  "change %s: a second tid of the pinned key: both (n %d)", cname, sh->n);
	look_child(name, cache, k);
	CHECK(sh->rc == DM_OK && sh->n == 2 && sh->hits == 0, "change %s: two tids are never answered from the buffer",
		  cname);
	/* dropped and made again under its name: the old tree's pin answers nothing */
	pin_child(name, cache, KEY(n / 2), cname);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "change %s: destroy", cname);
	t = make_tree(c, name, n);
	if (t == NULL)
		return;
	CHECK_STATUS(dm_tree_delete(t, dm_entry_make(KEY(n / 2), TID(n / 2)), NULL), DM_OK, "change %s: delete in the new tree",
				 cname);
	CHECK_STATUS(dm_tree_insert(t, dm_entry_make(KEY(n / 2), 6161), NULL), DM_OK, "change %s: insert in the new tree",
				 cname);
	look_child(name, cache, KEY(n / 2));
	CHECK(sh->rc == DM_OK && sh->n == 1 && sh->tid == 6161,
		  "change %s: the tree made again answers its own tid, not the dropped tree's pin (n %d, tid %" PRIu64 ")",
		  cname, sh->n, sh->tid);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "change %s: destroy the new tree", cname);
}

static void
run_change(void)
{
	dm_client  *c = test_client_connect(DM_BACKEND_TCP, 0, 30000, "test_tree_hot", mn.addr, NULL);
	dm_cache_config inner = {1024, 256, DM_CACHE_INNER, 0, 10, 1024, 0};
	dm_cache_config dex = {1024, 256, DM_CACHE_DEX, 0, 10, 1024, DM_CACHE_HOP_ADMIT_NEVER};
	size_t		li = dm_cache_shmem_size(&inner),
				ld = dm_cache_shmem_size(&dex);
	dm_cache   *ci = li ? dm_cache_init(test_shared_map(li), li, &inner) : NULL;
	dm_cache   *cd = ld ? dm_cache_init(test_shared_map(ld), ld, &dex) : NULL;

	if (CHECK(c && ci && cd, "change: client, two caches"))
	{
		run_change_one(c, ci, "inner");
		run_change_one(c, cd, "dex");
	}
	if (c)
		dm_client_destroy(c);
}

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "256M", "--chunk-size", "1M", NULL};

	tree_test_env(&g_seed, &g_scale);
	rng_seed_label(g_seed, "test_tree_hot", 0);
	sh = test_start_shared(sizeof(shared), &mn, args);
	if (sh == NULL)
		return tap_done();
	run_share();
	run_torn();
	run_change();
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	return tap_done();
}
