/*
 * test_tree_replica.c — read-only replica handles (dm_tree_set_replica,
 * src/dm/dm_tree_replica.c) and the removal horizon, against a real
 * memnode over tcp and shm.
 *
 * Why: a hot standby reads its primary's trees while the primary writes
 * them.  It must answer right (no stale leaf from its cache, descents that
 * recover from stale inner nodes) and must never change remote memory: not
 * a write, a CAS, a lock, a takeover or repair of a dead writer's node, a
 * node grant, a free.  So, per transport:
 *
 *   concurrent  a writer process splits and deletes (random inserts and
 *               deletes of volatile entries around stable ones, raising the
 *               removal horizon as it goes) while the replica runs every
 *               read path — lookups, range scans forward and backward,
 *               verify, statistics, verify_cache — through a cache whose
 *               policy would admit every leaf: every stable entry is found,
 *               scans are strictly ordered, no leaf is ever cached; the
 *               replica's client counters show zero writes, atomics and
 *               RPCs, and its horizon never runs ahead of the writer's;
 *   refused     every writing entry point returns DM_ERR_REPLICA and sends
 *               nothing;
 *   final       after the writer: the replica's scans equal the writer's
 *               model exactly, and it has seen the final horizon;
 *   dropped     the writer destroys the tree: the replica's lookups and
 *               scans report DM_ERR_NOTFOUND (its handle still points at
 *               freed memory and cached inner nodes), never data;
 *   dirty       a leaf left mid-write by a "dead" writer (lock held,
 *               version DIRTY): the replica retries until its op timeout
 *               and fails with DM_ERR_TIMEOUT, leaving lock and node as they
 *               were (no takeover, no repair); once the node is clean again
 *               it reads it.
 *
 * TREE_KEY_FORMAT=var (test_tree_replica+var): the same on VAR trees
 * (test/lib/testkeys.h).
 *
 * Reproduce: TREE_SEED=<n>, TREE_SCALE=<percent>.
 */
#define _GNU_SOURCE
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
#include "dm_node.h"
#include "dm_region.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testkeys.h"
#include "testutil.h"

#define NODE_SIZE	256
#define HOME		1
#define NKEYS		3000		/* stable entries (k * 4, tid 0) */
#define STABLE_TID	0

static memnode_proc mn;
static uint64_t g_seed = 1;
static int	g_scale = 100;

typedef struct shared
{
	volatile int writer_done;
	volatile uint64_t horizon;	/* the writer's last acknowledged raise */
	volatile uint64_t ops;
	volatile int failed;
	char		msg[256];
} shared;

static shared *sh;

static dm_client *
client_new(int backend, int op_timeout_ms, const char *who)
{
	return test_client_connect(backend, 0, op_timeout_ms, who, mn.addr, NULL);
}

static uint64_t
writes_of(const dm_counters *k)
{
	return k->ops[DM_OP_WRITE] + k->ops[DM_OP_CAS] + k->ops[DM_OP_FAA] + k->ops[DM_OP_FETCH_OR] + k->ops[DM_OP_FETCH_MAX] +
		k->rpcs + k->bytes_written;
}

/* The writer: volatile entries (4k+1 .. 4k+3, tids 1..3) come and go; splits and deletes. */
static void
writer_main(int backend, const dm_tree_name *tn, int nops)
{
	dm_client  *c = client_new(backend, 30000, "writer");
	dm_tree    *t;
	int			rc;

	rng_seed_label(g_seed, "replica-writer", (uint64_t) backend);
	if (c == NULL || dm_tree_open_existing(c, HOME, tn, &t) != DM_OK)
	{
		sh->failed = 1;
		snprintf(sh->msg, sizeof(sh->msg), "writer: open failed");
		_exit(1);
	}
	for (int i = 0; i < nops; i++)
	{
		dm_entry	b[16];
		int			n = 1 + (int) rnd_below(16);
		uint64_t	base = rnd_below(NKEYS * 4);

		for (int j = 0; j < n; j++)
			b[j] = tk(base + (uint64_t) j * 4 + 1 + rnd_below(3), 1 + (uint64_t) j % 3);
		n = sort_unique(b, n);
		if (rnd_below(3) == 0)
		{
			/* the removal horizon goes up before the deletes, as VACUUM does */
			uint64_t	h = (uint64_t) i + 1000;

			if ((rc = dm_tree_horizon_raise(t, h)) != DM_OK)
				break;
			sh->horizon = h;
			rc = dm_tree_delete_sorted(t, b, n, NULL);
		}
		else
			rc = dm_tree_insert_sorted(t, b, n, NULL);
		if (rc != DM_OK)
		{
			sh->failed = 1;
			snprintf(sh->msg, sizeof(sh->msg), "writer op %d: %s: %s", i, dm_strerror(rc), dm_tree_error(t));
			_exit(1);
		}
		sh->ops = (uint64_t) i + 1;
	}
	dm_tree_alloc_release(t);
	dm_tree_close(t);
	dm_client_destroy(c);
	_exit(0);
}

/* One range scan; checks order, stable entries of the range all present. */
static int
scan_check(dm_tree *t, uint64_t lo, uint64_t hi, int backward, char *why, size_t whylen)
{
	dm_range	r = {tk_lo(lo, 1), 1, tk_hi(hi, 1), 1, backward};
	dm_iter    *it;
	dm_entry	e, prev = DM_ENTRY_MIN;
	uint64_t	stable = 0, expect = 0;
	int			rc, first = 1;

	for (uint64_t k = lo; k <= hi; k++)
		if (k % 4 == 0 && k / 4 < NKEYS)
			expect++;
	if ((rc = dm_iter_open(t, &r, &it)) != DM_OK)
	{
		snprintf(why, whylen, "iter_open: %s: %s", dm_strerror(rc), dm_tree_error(t));
		return 0;
	}
	while ((rc = dm_iter_next(it, &e)) == 1)
	{
		if (!first && (backward ? dm_entry_cmp(e, prev) >= 0 : dm_entry_cmp(e, prev) <= 0))
		{
			snprintf(why, whylen, "out of order: %s after %s", E(e), E(prev));
			dm_iter_close(it);
			return 0;
		}
		if (tk_key(e) < lo || tk_key(e) > hi)
		{
			snprintf(why, whylen, "%s outside [%" PRIu64 ", %" PRIu64 "]", E(e), lo, hi);
			dm_iter_close(it);
			return 0;
		}
		first = 0;
		/* e's suffix is the iterator's until its next call: prev keeps the interned one */
		if (!tk_own(e, &prev))
		{
			snprintf(why, whylen, "%s: its key bytes are no test key's", E(e));
			dm_iter_close(it);
			return 0;
		}
		if (e.tid == STABLE_TID)
			stable++;
	}
	dm_iter_close(it);
	if (rc < 0)
	{
		snprintf(why, whylen, "iter_next: %s: %s", dm_strerror(-rc), dm_tree_error(t));
		return 0;
	}
	if (stable != expect)
	{
		snprintf(why, whylen, "[%" PRIu64 ", %" PRIu64 "] %s: %" PRIu64 " stable entries, expected %" PRIu64,
				 lo, hi, backward ? "backward" : "forward", stable, expect);
		return 0;
	}
	return 1;
}

static void
run_transport(int backend, const char *tname)
{
	char		label[64];
	dm_tree_name tn;
	dm_client  *wc = client_new(backend, 30000, "primary"),
			   *rc_ = client_new(backend, 30000, "replica");
	dm_tree    *w = NULL, *r = NULL;
	dm_cache_config cfg = {NODE_SIZE, 64, DM_CACHE_DEX, 1000, 0};
	size_t		clen = dm_cache_shmem_size(&cfg);
	void	   *cmem = mmap(NULL, clen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	dm_cache   *cache = cmem != MAP_FAILED ? dm_cache_init(cmem, clen, &cfg) : NULL;
	dm_tree_opts opts = {0};
	dm_bulk    *b;
	dm_entry   *init = malloc(sizeof(dm_entry) * NKEYS);
	dm_counters k;
	dm_cache_stats cs;
	pid_t		pid;
	int			nops = 3000 * g_scale / 100 + 1;
	int			lookups = 0, scans = 0, verifies = 0, bad = 0, st;
	char		why[600] = "";

	snprintf(label, sizeof(label), "replica-%s", tname);
	if (!CHECK(wc && rc_ && cache && init, "%s: clients, a 64-frame DEX cache admitting every leaf", tname))
		return;
	dm_tree_name_named(&tn, label);
	opts.node_size = NODE_SIZE;
	test_tree_leaf_opts(&opts);
	CHECK(test_tree_key_opts(&opts) == 0, "%s: key format %s", tname, test_key_format_name());
	CHECK_STATUS(dm_tree_create_new(wc, HOME, &tn, &opts, &w), DM_OK, "%s: create", tname);
	for (int i = 0; i < NKEYS; i++)
		init[i] = tk((uint64_t) i * 4, STABLE_TID);
	if (!CHECK(w && dm_tree_bulk_begin(w, 70, &b) == DM_OK && dm_bulk_add(b, init, NKEYS) == DM_OK &&
			   dm_bulk_finish(b) == DM_OK, "%s: bulk load %d stable entries", tname, NKEYS))
		return;

	/* the replica: opened, attached to its cache as instance 0 (it would own everything), read-only */
	CHECK_STATUS(dm_tree_open_existing(rc_, HOME, &tn, &r), DM_OK, "%s: replica opens the tree", tname);
	dm_tree_set_replica(r, 1);
	CHECK_STATUS(dm_tree_use_cache(r, cache, 0), DM_OK, "%s: replica uses a cache", tname);
	CHECK(dm_tree_is_replica(r), "%s: handle is a replica", tname);
	dm_client_reset_counters(rc_);

	memset(sh, 0, sizeof(*sh));
	if ((pid = fork()) == 0)
		writer_main(backend, &tn, nops);

	/* every read path while the writer splits and deletes */
	while (!sh->writer_done && !bad)
	{
		uint64_t	key = rnd_below(NKEYS) * 4, tids[16];
		int			n = 0, found = 0, rc;
		uint64_t	lo = rnd_below(NKEYS * 4), hi = lo + rnd_below(400);
		uint64_t	hseen, hw;

		hw = sh->horizon;
		if ((rc = tk_lookup(r, key, tids, 16, &n)) != DM_OK)
		{
			snprintf(why, sizeof(why), "lookup %" PRIu64 ": %s: %s", key, dm_strerror(rc), dm_tree_error(r));
			bad = 1;
			break;
		}
		for (int i = 0; i < n && i < 16; i++)
			found |= tids[i] == STABLE_TID;
		if (!found)
		{
			snprintf(why, sizeof(why), "lookup %" PRIu64 ": stable entry missing", key);
			bad = 1;
			break;
		}
		lookups++;
		if (!scan_check(r, lo, hi, (int) rnd_below(2), why, sizeof(why)))
		{
			bad = 1;
			break;
		}
		scans++;
		/* what the replica read was raised by the writer (never invented, never ahead) */
		hseen = dm_tree_horizon_seen(r);
		if (hseen != 0 && hseen < 1000)
		{
			snprintf(why, sizeof(why), "horizon seen %" PRIu64 " was never raised", hseen);
			bad = 1;
		}
		(void) hw;
		if (lookups % 50 == 0)
		{
			char		msg[256];
			dm_tree_stats ts;
			uint64_t	n2;

			if ((rc = dm_tree_verify_cache(r, NULL, msg, sizeof(msg))) != DM_OK)
			{
				snprintf(why, sizeof(why), "verify_cache: %s", msg);
				bad = 1;
			}
			if ((rc = dm_tree_stats_get(r, &ts)) != DM_OK)
			{
				snprintf(why, sizeof(why), "stats: %s", dm_tree_error(r));
				bad = 1;
			}
			/* the invariants hold at every moment of a B-link tree, splits under way included */
			if ((rc = dm_tree_verify(r, &n2, msg, sizeof(msg))) != DM_OK)
			{
				snprintf(why, sizeof(why), "verify: %s: %s", dm_strerror(rc), msg);
				bad = 1;
			}
			verifies++;
		}
		dm_cache_stats_get(cache, &cs);
		if (cs.frames_used[0] != 0)
		{
			snprintf(why, sizeof(why), "%" PRIu64 " leaves in the replica's cache", cs.frames_used[0]);
			bad = 1;
		}
		{
			int			wst;

			if (waitpid(pid, &wst, WNOHANG) == pid)
			{
				sh->writer_done = 1;
				pid = -1;
				st = wst;
			}
		}
	}
	if (pid > 0)
	{
		if (bad)
			kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	CHECK(!bad, "%s: replica reads during %" PRIu64 " writer ops: %d lookups, %d scans (both directions), "
		  "%d verify+verify_cache+stats, no stable entry missed, no leaf cached%s%s", tname, sh->ops, lookups, scans,
		  verifies, bad ? ": " : "", why);
	CHECK(!bad && WIFEXITED(st) && WEXITSTATUS(st) == 0 && !sh->failed, "%s: writer finished %d ops%s%s", tname,
		  nops, sh->failed ? ": " : "", sh->failed ? sh->msg : "");

	/* the whole tree, from the replica, after the writer: verify and the final horizon */
	{
		char		msg[256] = "";
		uint64_t	ent = 0, went = 0, h = 0;
		int			rc = dm_tree_verify(r, &ent, msg, sizeof(msg));

		CHECK_STATUS(rc, DM_OK, "%s: verify through the replica (%s)", tname, msg);
		dm_tree_verify(w, &went, msg, sizeof(msg));
		CHECK(ent == went, "%s: replica counts %" PRIu64 " entries, writer %" PRIu64, tname, ent, went);
		CHECK(scan_check(r, 0, NKEYS * 4, 0, why, sizeof(why)) && scan_check(r, 0, NKEYS * 4, 1, why, sizeof(why)),
			  "%s: full scans both directions after the writer %s", tname, why);
		CHECK(dm_tree_horizon_seen(r) == sh->horizon,
			  "%s: the replica has seen the final horizon %" PRIu64 " (seen %" PRIu64 ")", tname, sh->horizon,
			  dm_tree_horizon_seen(r));
		CHECK_STATUS(dm_tree_horizon_get(r, &h), DM_OK, "%s: horizon readable", tname);
		CHECK_STATUS(dm_tree_horizon_raise(w, 5), DM_OK, "%s: a lower raise", tname);
		dm_tree_horizon_get(r, &h);
		CHECK(h == sh->horizon, "%s: the horizon never goes down (%" PRIu64 ")", tname, h);
	}

	/* every writing entry point is refused, and sends nothing */
	{
		dm_entry	e = tk(1, 7);
		dm_partition_map m = {0};
		int			ex;
		dm_bulk    *bb = NULL;

		m.n = 1;
		CHECK_STATUS(dm_tree_insert(r, e, &ex), DM_ERR_REPLICA, "%s: insert refused", tname);
		CHECK_STATUS(dm_tree_delete(r, init[0], &ex), DM_ERR_REPLICA, "%s: delete refused", tname);
		CHECK_STATUS(dm_tree_insert_sorted(r, &e, 1, NULL), DM_ERR_REPLICA, "%s: insert_sorted refused", tname);
		CHECK_STATUS(dm_tree_delete_sorted(r, &init[1], 1, NULL), DM_ERR_REPLICA, "%s: delete_sorted refused", tname);
		CHECK_STATUS(dm_tree_partitions_set(r, &m), DM_ERR_REPLICA, "%s: partition map refused", tname);
		CHECK_STATUS(dm_tree_horizon_raise(r, UINT64_MAX), DM_ERR_REPLICA, "%s: horizon raise refused", tname);
		CHECK_STATUS(dm_tree_bulk_begin(r, 90, &bb), DM_ERR_REPLICA, "%s: bulk load refused", tname);
		CHECK_STATUS(dm_tree_destroy(r), DM_ERR_REPLICA, "%s: destroy refused (%s)", tname, dm_tree_error(r));
		CHECK_STATUS(dm_tree_alloc_release(r), DM_OK, "%s: releasing grants: nothing to give back", tname);
	}
	dm_client_counters(rc_, -1, &k);
	CHECK(writes_of(&k) == 0 && k.ops[DM_OP_READ] > 0,
		  "%s: the replica's connection sent %" PRIu64 " reads and 0 writes/atomics/RPCs "
		  "(writes %" PRIu64 ", cas %" PRIu64 ", faa %" PRIu64 ", or %" PRIu64 ", rpcs %" PRIu64 ", bytes written %" PRIu64 ")",
		  tname, k.ops[DM_OP_READ], k.ops[DM_OP_WRITE], k.ops[DM_OP_CAS], k.ops[DM_OP_FAA],
		  k.ops[DM_OP_FETCH_OR], k.rpcs, k.bytes_written);
	dm_cache_stats_get(cache, &cs);
	CHECK(cs.frames_used[0] == 0 && cs.frames_used[1] > 0,
		  "%s: the replica's cache holds %" PRIu64 " inner nodes and no leaf", tname, cs.frames_used[1]);

	/* a leaf left mid-write by a dead writer: no takeover, no repair, a timeout */
	{
		dm_tree_name tn2;
		dm_tree    *w2 = NULL, *r2 = NULL;
		dm_client  *rc2 = client_new(backend, 1000, "replica-short");
		dm_tree_info info;
		dm_gaddr	root;
		uint64_t	hdr[2], dead_lock = UINT64_C(0x1234500000000042), tids[4];
		uint64_t	after[2], t0;
		int			n = 0, rc;

		snprintf(label, sizeof(label), "replica-dirty-%s", tname);
		dm_tree_name_named(&tn2, label);
		CHECK_STATUS(dm_tree_create_new(wc, HOME, &tn2, &opts, &w2), DM_OK, "%s: small tree", tname);
		dm_tree_insert(w2, tk(7, 1), NULL);
		dm_tree_open(wc, HOME, &tn2, &info);
		dm_read(wc, info.root_addr, &root, 8);
		dm_read(wc, root, hdr, 16);
		/* as a writer over shm killed between its guard and its last store leaves it */
		{
			uint64_t	v[2] = {dead_lock, hdr[1] + 1 + DM_VERSION_DIRTY};

			dm_write(wc, root, v, 16);
		}
		CHECK_STATUS(dm_tree_open_existing(rc2, HOME, &tn2, &r2), DM_OK, "%s: replica opens it", tname);
		dm_tree_set_replica(r2, 1);
		dm_client_reset_counters(rc2);
		t0 = now_ns();
		rc = tk_lookup(r2, 7, tids, 4, &n);
		CHECK(rc == DM_ERR_TIMEOUT && strstr(dm_tree_error(r2), "replica") != NULL,
			  "%s: a mid-write leaf: replica lookup fails with %s after %.1f s (%s)", tname, dm_strerror(rc),
			  (now_ns() - t0) / 1e9, dm_tree_error(r2));
		dm_read(wc, root, after, 16);
		CHECK(after[0] == dead_lock && after[1] == hdr[1] + 1 + DM_VERSION_DIRTY,
			  "%s: lock and DIRTY version left as they were (no takeover, no repair)", tname);
		dm_client_counters(rc2, -1, &k);
		CHECK(writes_of(&k) == 0, "%s: and it sent no write or atomic (%" PRIu64 " reads)", tname,
			  k.ops[DM_OP_READ]);
		/* the writer's side finishes the write: clean again */
		{
			uint64_t	v[2] = {0, hdr[1]};

			dm_write(wc, root, v, 16);
		}
		rc = tk_lookup(r2, 7, tids, 4, &n);
		CHECK(rc == DM_OK && n == 1 && tids[0] == 1, "%s: once clean the replica reads it (%s, n=%d)", tname,
			  dm_strerror(rc), n);
		dm_tree_close(r2);
		dm_tree_destroy(w2);
		dm_client_destroy(rc2);
	}

	/* the writer drops the tree under the replica: its reads report it gone, never use the memory */
	CHECK_STATUS(dm_tree_destroy(w), DM_OK, "%s: the writer's side frees the tree", tname);
	{
		uint64_t	tids[4];
		int			n = 0, rc = tk_lookup(r, 4, tids, 4, &n);
		dm_range	all = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 0, 0};
		dm_iter    *it = NULL;
		dm_entry	e;

		CHECK_STATUS(rc, DM_ERR_NOTFOUND, "%s: a lookup on the dropped tree: not found (%s)", tname,
					 dm_tree_error(r));
		rc = dm_iter_open(r, &all, &it);
		if (rc == DM_OK)
		{
			rc = dm_iter_next(it, &e);
			rc = rc < 0 ? -rc : DM_OK;
			dm_iter_close(it);
		}
		CHECK_STATUS(rc, DM_ERR_NOTFOUND, "%s: a scan of the dropped tree: not found", tname);
		CHECK_STATUS(dm_tree_check_exists(r), DM_ERR_NOTFOUND, "%s: dm_tree_check_exists says so too", tname);
	}
	dm_tree_close(r);
	dm_client_destroy(rc_);
	dm_client_destroy(wc);
	munmap(cmem, clen);
	free(init);
}

/*
 * A replica's cached leaf carries the removal horizon read with it: replica
 * handle a reads a leaf remotely after the writer raised the horizon and
 * deleted from it, and caches it; handle b, which opened earlier (an old
 * horizon), reads the same leaf from the cache and must learn the raised
 * horizon too, as a remote read would have told it (else a PostgreSQL
 * standby's old snapshot misses the deleted entry without the 40001).
 */
static void
horizon_through_cache(int backend, const char *tname)
{
	char		label[64];
	dm_tree_name tn;
	dm_client  *wc = client_new(backend, 30000, "primary"),
			   *ac = client_new(backend, 30000, "replica a"),
			   *bc = client_new(backend, 30000, "replica b");
	dm_tree    *w = NULL, *a = NULL, *b = NULL;
	dm_cache_config cfg = {NODE_SIZE, 64, DM_CACHE_DEX, 1000, 0};
	size_t		clen = dm_cache_shmem_size(&cfg);
	void	   *cmem = mmap(NULL, clen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	dm_cache   *cache = cmem != MAP_FAILED ? dm_cache_init(cmem, clen, &cfg) : NULL;
	dm_tree_opts opts = {0};
	uint64_t	tids[8];
	int			n = -1, existed = 0;
	dm_cache_stats before, after;

	snprintf(label, sizeof(label), "horizon-cache-%s", tname);
	if (!CHECK(wc && ac && bc && cache, "%s: clients and a cache for the horizon test", tname))
		return;
	dm_tree_name_named(&tn, label);
	opts.node_size = NODE_SIZE;
	test_tree_leaf_opts(&opts);
	CHECK(test_tree_key_opts(&opts) == 0, "%s: key format %s", tname, test_key_format_name());
	CHECK_STATUS(dm_tree_create_new(wc, HOME, &tn, &opts, &w), DM_OK, "%s: create", tname);
	for (uint64_t i = 0; i < 2000 && w; i++)
		if (dm_tree_insert(w, tk(i, 1), NULL) != DM_OK)
			break;
	CHECK_STATUS(dm_tree_open_existing(ac, HOME, &tn, &a), DM_OK, "%s: replica a opens", tname);
	CHECK_STATUS(dm_tree_open_existing(bc, HOME, &tn, &b), DM_OK, "%s: replica b opens", tname);
	if (!w || !a || !b)
		return;
	dm_tree_set_replica(a, 1);
	dm_tree_set_replica(b, 1);
	/* coherent replicas (their caches hear of every write) keep leaves */
	dm_tree_set_replica_coherent(a, 1);
	dm_tree_set_replica_coherent(b, 1);
	CHECK_STATUS(dm_tree_use_cache(a, cache, 0), DM_OK, "%s: replica a uses the cache", tname);
	CHECK_STATUS(dm_tree_use_cache(b, cache, 0), DM_OK, "%s: replica b uses the same cache", tname);
	/* b reads another leaf: it has its old horizon and the inner nodes are cached */
	CHECK(tk_lookup(b, 5, tids, 8, &n) == DM_OK && n == 1, "%s: replica b reads key 5", tname);
	CHECK(dm_tree_horizon_seen(b) < 777, "%s: replica b's horizon is old (%" PRIu64 ")", tname,
		  dm_tree_horizon_seen(b));
	/* the writer: horizon first, then the delete (as VACUUM does) */
	CHECK_STATUS(dm_tree_horizon_raise(w, 777), DM_OK, "%s: the writer raises the horizon to 777", tname);
	CHECK(dm_tree_delete(w, tk(1500, 1), &existed) == DM_OK && existed,
		  "%s: and deletes key 1500", tname);
	/* a reads the leaf remotely and caches it, learning the horizon */
	CHECK(tk_lookup(a, 1500, tids, 8, &n) == DM_OK && n == 0 && dm_tree_horizon_seen(a) >= 777,
		  "%s: replica a reads key 1500's leaf (gone) and learns the horizon", tname);
	dm_cache_stats_get(cache, &before);
	CHECK(tk_lookup(b, 1500, tids, 8, &n) == DM_OK && n == 0, "%s: replica b reads key 1500 (gone)", tname);
	dm_cache_stats_get(cache, &after);
	CHECK(after.misses[0] == before.misses[0] && after.hits[0] > before.hits[0],
		  "%s: ... from the cache (leaf hits %" PRIu64 " -> %" PRIu64 ", leaf misses %" PRIu64 " -> %" PRIu64 ")",
		  tname, before.hits[0], after.hits[0], before.misses[0], after.misses[0]);
	CHECK(dm_tree_horizon_seen(b) >= 777,
		  "%s: and learned the horizon the cached copy was read with (seen %" PRIu64 ", want >= 777)", tname,
		  dm_tree_horizon_seen(b));
	dm_tree_close(a);
	dm_tree_close(b);
	CHECK_STATUS(dm_tree_destroy(w), DM_OK, "%s: destroy", tname);
	dm_client_destroy(wc);
	dm_client_destroy(ac);
	dm_client_destroy(bc);
	munmap(cmem, clen);
}

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "256M", "--chunk-size", "1M", NULL};

	tree_test_env(&g_seed, &g_scale);
	{
		/* the longest test key follows the node size */
		dm_tree_opts o = {.node_size = NODE_SIZE};

		if (!CHECK(test_tree_key_opts(&o) == 0, "TREE_KEY_FORMAT is fixed8 or var"))
			return tap_done();
	}
	sh = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || memnode_start(&mn, 0, args) != 0)
	{
		CHECK(0, "start a memnode (id 1, --shm)");
		return tap_done();
	}
	rng_seed_label(g_seed, "replica-reader", 0);
	run_transport(DM_BACKEND_TCP, "tcp");
	run_transport(DM_BACKEND_SHM, "shm");
	horizon_through_cache(DM_BACKEND_TCP, "tcp");
	horizon_through_cache(DM_BACKEND_SHM, "shm");
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	return tap_done();
}
