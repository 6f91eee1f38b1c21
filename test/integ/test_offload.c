/*
 * test_offload.c — the offload executor (memnode/offload.c,
 * src/dm/dm_tree_exec.c) and its client (src/dm/dm_offload.c), over tcp and
 * shm, checked against a sorted model and dm_tree_verify.
 *
 * Sections (each per transport):
 *   basic     offloaded inserts, deletes, lookups and scans (one RPC for up
 *             to N entries, resumed over many leaves) give exactly the
 *             model; splits fall back and the tree verifies;
 *   race      offloaded inserts from this process while a child inserts
 *             one-sided into the same key range, splitting the very leaves
 *             the executor writes: exact final contents, verify;
 *   cache     a handle with a compute-side cache: the executor's writes
 *             drop the cached copies (a lookup through the cache sees them,
 *             dm_tree_verify_cache finds every owned frame identical);
 *   fence     a handle whose tree was taken over by another writer: its
 *             offloaded insert is refused (DM_ERR_FENCED) and lands nothing;
 *   declined  a memnode with --offload-threads 0 declines every offload
 *             (DM_ERR_FALLBACK, load report says 0 slots): the operations
 *             are done one-sided and are right;
 *   isolation with --auth-file, one identity cannot offload on another's
 *             tree (DM_ERR_PERMISSION), nothing changed;
 *   auto      the policy: counters of decisions, and over shm (a remote read
 *             is a memory access) it prefers one-sided reads;
 *   sorted    sorted batches (dm_tree_insert_sorted / delete_sorted, the
 *             access method's flushes and VACUUM's deletes) offloaded entry
 *             by entry with "always"; with "auto" only one-entry batches
 *             may offload, longer ones go one-sided: exact contents,
 *             changed counts, splits one-sided;
 *   owned     a partition map gives this instance half of the keys (the
 *             access method's single-writer mode): without a cache nothing
 *             is offloaded (the root is shared), with one only writes of
 *             owned keys are, under owned subtrees; contents exact;
 *   wlog      write tracking (dm_tree_wlog.c, the WAL of hot standbys'
 *             caches): an offloaded write's nodes are in the list; one whose
 *             reply never came (the memnode stopped, the op timed out) marks
 *             the list lost (overflow: the whole tree).
 * The ucx variant (NAME+ucx-tcp, NAME+ucx-posix) runs only run_ucx: no
 * offloading over ucx, the drain over UCX messages.
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
#include "dm_offload.h"
#include "dm_region.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testauth.h"
#include "testutil.h"


static memnode_proc mn;

static dm_client *
connect_to(const memnode_proc *m, int backend, const char *identity)
{
	dm_client_opts o = {.backend = backend, .name = "test_offload"};
	dm_client  *c;
	uint16_t	id;

	if (identity)
		test_auth_opts(&o, identity);
	if ((c = dm_client_create(&o)) == NULL)
		return NULL;
	if (dm_client_connect(c, m->addr, &id) != DM_OK)
	{
		tap_diag("connect %s: %s", m->addr, dm_client_error(c));
		dm_client_destroy(c);
		return NULL;
	}
	return c;
}

static dm_tree *
new_tree(dm_client *c, const char *name, uint32_t ns)
{
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_tree    *t = NULL;

	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = ns;
	test_tree_leaf_opts(&opts);
	if (dm_tree_create_new(c, 1, &tn, &opts, &t) != DM_OK)
		return NULL;
	return t;
}

/* The tree holds exactly the model: verify, count, a full offloaded scan. */
static int
same_as_model(dm_tree *t, const model *m, const char *what)
{
	uint64_t	n = 0;
	char		msg[256];
	dm_entry	lo = DM_ENTRY_MIN,
				out[300];
	int			incl = 1,
				got,
				more = 1;
	size_t		k = 0;

	if (dm_tree_verify(t, &n, msg, sizeof(msg)) != DM_OK)
	{
		tap_diag("%s: verify: %s", what, msg);
		return 0;
	}
	if (n != m->n)
	{
		tap_diag("%s: %" PRIu64 " entries, model %zu", what, n, m->n);
		return 0;
	}
	while (more)
	{
		dm_entry	resume;

		if (dm_tree_offload_scan(t, lo, incl, DM_ENTRY_INF, 1, out, 300, &got, &more, &resume) != DM_OK)
		{
			tap_diag("%s: scan failed: %s", what, dm_tree_error(t));
			return 0;
		}
		for (int i = 0; i < got; i++, k++)
			if (k >= m->n || dm_entry_cmp(out[i], m->e[k]) != 0)
			{
				tap_diag("%s: scan entry %zu differs", what, k);
				return 0;
			}
		lo = resume;
		incl = more == DM_OFF_RESUME_INCL;
	}
	return k == m->n;
}

static void
run_basic(int backend, const char *bname)
{
	dm_client  *c = connect_to(&mn, backend, NULL);
	dm_tree    *t;
	model		m = {0};
	dm_offload_counters oc;
	int			ok = 1;
	char		name[64];

	snprintf(name, sizeof(name), "basic-%s", bname);
	if (!CHECK(c && (t = new_tree(c, name, 256)) != NULL, "basic %s: tree", bname))
		return;
	CHECK_STATUS(dm_tree_set_offload(t, DM_OFFLOAD_ALWAYS), DM_OK, "basic %s: offload always", bname);
	for (int i = 0; i < 3000 && ok; i++)
	{
		dm_entry	e = dm_entry_make(rnd() % 800, rnd() % 4);
		int			del = rnd() % 4 == 0,
					existed = -1,
					rc;

		rc = del ? dm_tree_delete(t, e, &existed) : dm_tree_insert(t, e, &existed);
		if (rc != DM_OK || existed != (m_has(&m, e)))
			ok = CHECK(0, "basic %s: op %d (%s %" PRIu64 "/%" PRIu64 ") rc %s existed %d", bname, i,
					   del ? "delete" : "insert", e.key, e.tid, dm_strerror(rc), existed);
		if (del)
			m_delete(&m, e);
		else
			m_insert(&m, e);
		if (i % 7 == 0)
		{
			uint64_t	key = rnd() % 800,
						tids[8];
			int			n = 0,
						want = 0;

			for (size_t k = 0; k < m.n; k++)
				want += m.e[k].key == key;
			if (dm_tree_lookup(t, key, tids, 8, &n) != DM_OK || n != want)
				ok = CHECK(0, "basic %s: lookup %" PRIu64 " found %d, model %d", bname, key, n, want);
		}
	}
	CHECK(ok, "basic %s: 3000 offloaded inserts/deletes and lookups match the model", bname);
	CHECK(same_as_model(t, &m, "basic"), "basic %s: verify + a full scan in 300-entry replies = model (%zu)",
		  bname, m.n);
	/* a bounded scan in the middle, exclusive bounds */
	{
		dm_entry	out[64],
					resume;
		int			n,
					more;
		size_t		k = 0;

		while (k < m.n && m.e[k].key <= 200)
			k++;
		CHECK_STATUS(dm_tree_offload_scan(t, dm_key_lo(200, 0), 0, dm_key_hi(300, 0), 0, out, 64, &n, &more, &resume),
					 DM_OK, "basic %s: scan (200, 300)", bname);
		for (int i = 0; i < n; i++, k++)
			ok &= k < m.n && dm_entry_cmp(out[i], m.e[k]) == 0 && out[i].key < 300;
		CHECK(ok && n > 0, "basic %s: scan (200, 300) returns the model's %d first entries in order", bname, n);
	}
	dm_tree_offload_counters(t, &oc);
	tap_diag("basic %s: %" PRIu64 " offloaded, %" PRIu64 " fell back", bname, oc.offloads, oc.fallbacks);
	CHECK(oc.offloads > 2000 && oc.fallbacks > 0 && oc.fallbacks < oc.offloads,
		  "basic %s: the executor did most (%" PRIu64 "), splits fell back (%" PRIu64 ")", bname, oc.offloads,
		  oc.fallbacks);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "basic %s: destroy", bname);
	m_free(&m);
	dm_client_destroy(c);
}

/*
 * A tree of key format VAR is never offloaded, whatever the mode: requests
 * carry 64-bit keys, and a reply's entries would lose their suffixes.
 * Entries with suffixes go in and come back whole, one-sided.
 */
static void
run_var(int backend, const char *bname)
{
	dm_client  *c = connect_to(&mn, backend, NULL);
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_tree    *t = NULL;
	dm_offload_counters oc;
	uint8_t		keys[200][20];
	dm_entry	ents[200],
				out[64],
				resume;
	int			n = -1,
				more,
				ok = 1,
				rc;
	char		name[64];

	snprintf(name, sizeof(name), "var-%s", bname);
	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = 256;
	opts.key_format = DM_KEY_VAR;
	if (!CHECK(c && dm_tree_create_new(c, 1, &tn, &opts, &t) == DM_OK, "var %s: tree", bname))
		return;
	CHECK_STATUS(dm_tree_set_offload(t, DM_OFFLOAD_ALWAYS), DM_OK, "var %s: offload always", bname);
	/* 20-byte keys sharing their first 8 bytes: the suffix decides the order */
	for (int i = 0; i < 200; i++)
	{
		memset(keys[i], 'k', 8);
		snprintf((char *) keys[i] + 8, 12, "%011d", 1000 + i);
		ents[i] = dm_entry_from_bytes(keys[i], 19, (uint64_t) (i + 1));
	}
	CHECK_STATUS(dm_tree_insert_sorted(t, ents, 200, NULL), DM_OK, "var %s: 200 entries with suffixes", bname);
	rc = dm_offload_scan_batch(t, DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, out, 64, &n, &more, &resume);
	CHECK(rc == DM_ERR_FALLBACK && n == 0, "var %s: an offloaded scan batch falls back (%s, %d entries)",
		  bname, dm_strerror(rc), n);
	{
		dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, 0};
		dm_iter    *it;
		dm_entry	e;
		int			k = 0;

		if (CHECK_STATUS(dm_offload_iter_open(t, &r, &it), DM_OK, "var %s: iterator", bname))
		{
			while ((rc = dm_iter_next(it, &e)) == 1)
				ok &= k < 200 && dm_entry_cmp(e, ents[k++]) == 0 && e.sfx_len == 11;
			dm_iter_close(it);
			CHECK(rc == 0 && ok && k == 200, "var %s: the scan returns the 200 entries whole, in order", bname);
		}
	}
	/* auto: the policy explores the executor now and then, never for this tree */
	CHECK_STATUS(dm_tree_set_offload(t, DM_OFFLOAD_AUTO), DM_OK, "var %s: offload auto", bname);
	ok = 1;
	for (int i = 0; i < 300 && ok; i++)
	{
		int			k = (int) (rnd() % 200);

		rc = dm_offload_scan_batch(t, ents[k], 1, DM_ENTRY_INF, 1, out, 8, &n, &more, &resume);
		if (rc == DM_OK)
			for (int j = 0; j < n; j++)
				ok &= k + j < 200 && dm_entry_cmp(out[j], ents[k + j]) == 0;
		else
			ok &= rc == DM_ERR_FALLBACK;
	}
	CHECK(ok, "var %s: 300 scan batches under auto fall back or return whole entries", bname);
	dm_tree_offload_counters(t, &oc);
	CHECK(oc.offloads == 0, "var %s: nothing was offloaded (%" PRIu64 ")", bname, oc.offloads);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "var %s: destroy", bname);
	dm_client_destroy(c);
}

/* Offloaded inserts (even keys) racing one-sided inserts (odd keys) that split the same leaves. */
static void
run_race(int backend, const char *bname)
{
	dm_client  *c = connect_to(&mn, backend, NULL);
	dm_tree    *t;
	dm_tree_name tn;
	model		m = {0};
	pid_t		pid;
	int			status,
				ok = 1;
	const int	n = 4000;
	dm_offload_counters oc;

	dm_tree_name_named(&tn, backend == DM_BACKEND_SHM ? "race-shm" : "race-tcp");
	if (!CHECK(c && (t = new_tree(c, tn.name, 256)) != NULL, "race %s: tree", bname))
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0)
	{
		dm_client  *cc = connect_to(&mn, backend, NULL);
		dm_tree    *ct = NULL;
		int			rc = cc ? dm_tree_open_existing(cc, 1, &tn, &ct) : DM_ERR_CONNECT;

		for (int i = 0; i < n && rc == DM_OK; i++)
			rc = dm_tree_insert(ct, dm_entry_make((uint64_t) (i * 7919 % n) * 2 + 1, 1), NULL);
		_exit(rc == DM_OK ? 0 : 1);
	}
	CHECK_STATUS(dm_tree_set_offload(t, DM_OFFLOAD_ALWAYS), DM_OK, "race %s: offload always", bname);
	for (int i = 0; i < n && ok; i++)
	{
		int			rc = dm_tree_insert(t, dm_entry_make((uint64_t) (i * 104729 % n) * 2, 2), NULL);

		if (rc != DM_OK)
			ok = CHECK(0, "race %s: offloaded insert %d: %s", bname, i, dm_tree_error(t));
	}
	CHECK(ok, "race %s: %d offloaded inserts beside a one-sided writer", bname, n);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "race %s: the one-sided writer inserted %d entries", bname, n);
	for (int i = 0; i < 2 * n; i++)
		m_insert(&m, dm_entry_make((uint64_t) i, (uint64_t) (i % 2 ? 1 : 2)));
	CHECK(same_as_model(t, &m, "race"), "race %s: verify + exactly both writers' %d entries", bname, 2 * n);
	dm_tree_offload_counters(t, &oc);
	tap_diag("race %s: %" PRIu64 " offloaded, %" PRIu64 " fell back", bname, oc.offloads, oc.fallbacks);
	CHECK(oc.offloads > 0 && oc.fallbacks > 0, "race %s: both offloads and fallbacks happened", bname);
	dm_tree_destroy(t);
	m_free(&m);
	dm_client_destroy(c);
}

static int	stop_process(pid_t pid);
static const char *watchdog_what;

static void
watchdog_fired(int sig)
{
	char		msg[256];
	int			n = snprintf(msg, sizeof(msg), "not ok - %s: still waiting after 30 s (hung)\n", watchdog_what);

	(void) sig;
	if (write(1, msg, (size_t) n) < 0)
		_exit(2);
	_exit(1);
}

/*
 * An offloaded write through a handle with a cache whose reply never comes
 * (the memnode is stopped; the op times out): it fails in about the op
 * timeout instead of waiting forever, the tree's cached frames are dropped
 * (the executor may have written any node under the start), and after the
 * memnode resumes the tree is still the model (the request never ran: the
 * memnode runs no write of a client that hung up) and agrees with what the
 * cache holds.  Before the fix the client deadlocked on its own frame: the
 * start node's I/O flag was held while the cache invalidation waited for
 * every frame of the tree, that one included.
 */
static void
run_cache_lost(int backend, const char *bname, const char *name, dm_cache *cache, uint64_t tag, model *m)
{
	dm_client_opts o = {.backend = backend, .name = "test_offload", .op_timeout_ms = 400};
	dm_client  *c = dm_client_create(&o);
	dm_tree    *t = NULL;
	dm_tree_name tn;
	dm_tree_info info;
	uint64_t	root = 0,
				checked = 0;
	uint16_t	id;
	uint32_t	left = 0;
	dm_gaddr	a;
	dm_offload_counters oc;
	char		msg[256];
	int			rc;

	dm_tree_name_named(&tn, name);
	if (!CHECK(c && dm_client_connect(c, mn.addr, &id) == DM_OK && dm_tree_open(c, 1, &tn, &info) == DM_OK &&
			   dm_tree_open_existing(c, 1, &tn, &t) == DM_OK && dm_tree_use_cache(t, cache, 0) == DM_OK &&
			   dm_tree_set_offload(t, DM_OFFLOAD_ALWAYS) == DM_OK,
			   "cache %s: a second handle (op timeout 400 ms) on the cache, offload always", bname))
		goto out;
	/* the miss at the root again, so the insert goes to the executor */
	CHECK_STATUS(dm_read(c, info.root_addr, &root, 8), DM_OK, "cache %s: read the root's address", bname);
	dm_cache_invalidate(cache, tag, root);
	if (!CHECK(stop_process(mn.pid), "cache %s: memnode stopped", bname))
		goto out;
	watchdog_what = "an offloaded insert through a cache while the memnode is stopped";
	signal(SIGALRM, watchdog_fired);
	alarm(30);
	rc = dm_tree_insert(t, dm_entry_make(1ull << 40, 7), NULL);
	alarm(0);
	kill(mn.pid, SIGCONT);
	dm_tree_offload_counters(t, &oc);
	CHECK(rc != DM_OK && rc != DM_ERR_FALLBACK && oc.lost_writes == 1,
		  "cache %s: the offloaded insert without a reply fails (%s), its outcome counted unknown", bname,
		  dm_strerror(rc));
	for (uint32_t f = dm_cache_next_frame(cache, tag, 0, &a); f != DM_FRAME_NONE;
		 f = dm_cache_next_frame(cache, tag, f + 1, &a))
		left++;
	CHECK(left == 0, "cache %s: and every cached frame of the tree was dropped (%u left)", bname, left);
	dm_tree_close(t);
	t = NULL;
	dm_client_destroy(c);
	c = NULL;
	/* a fresh connection once the memnode runs again */
	c = connect_to(&mn, backend, NULL);
	if (!CHECK(c && dm_tree_open_existing(c, 1, &tn, &t) == DM_OK && dm_tree_use_cache(t, cache, 0) == DM_OK,
			   "cache %s: reopened after the memnode resumed", bname))
		goto out;
	{
		int			drained = -1;

		/* its token waits in the cache's table: the next use drains it (it never ran) */
		rc = dm_tree_drain_settle(t, &drained);
		CHECK(rc == DM_OK && drained == 1, "cache %s: the next use of the tree drains the lost write (%d drained)",
			  bname, drained);
		rc = dm_tree_drain_settle(t, &drained);
		CHECK(rc == DM_OK && drained == 0, "cache %s: and then nothing is left to drain (%d)", bname, drained);
	}
	{
		dm_rpc_off_drain_req dr;
		dm_rpc_off_drain_rep rep;

		/* the memnode checks what it is asked */
		memset(&dr, 0, sizeof(dr));
		CHECK_STATUS(dm_client_rpc(c, 1, DM_RPC_OFF_DRAIN, &dr, sizeof(dr), &rep, sizeof(rep), sizeof(rep), NULL),
					 DM_ERR_INVALID, "cache %s: a drain of no token is refused", bname);
		dr.n = DM_OFF_DRAIN_MAX + 1;
		CHECK_STATUS(dm_client_rpc(c, 1, DM_RPC_OFF_DRAIN, &dr, sizeof(dr), &rep, sizeof(rep), sizeof(rep), NULL),
					 DM_ERR_INVALID, "cache %s: a drain of more than %d tokens is refused", bname, DM_OFF_DRAIN_MAX);
		dr.n = 1;
		dr.tokens[0] = 0x5eed;
		CHECK(dm_client_rpc(c, 1, DM_RPC_OFF_DRAIN, &dr, sizeof(dr), &rep, sizeof(rep), sizeof(rep), NULL) == DM_OK &&
			  rep.running == 0, "cache %s: a drain of a token nobody runs answers 0 running", bname);
	}
	CHECK(same_as_model(t, m, "cache-lost"), "cache %s: after the lost write the tree = model", bname);
	CHECK_STATUS(dm_tree_verify_cache(t, &checked, msg, sizeof(msg)), DM_OK,
				 "cache %s: the cache agrees with remote memory after the lost write (%" PRIu64 " compared) %s",
				 bname, checked, msg);
out:
	if (t)
		dm_tree_close(t);
	if (c)
		dm_client_destroy(c);
}

static int	reap_late_child(void);

/*
 * An offloaded insert whose request reaches the memnode after its client
 * gave up (DM_FAULT_LATE_RPC: the client sees a timeout, a child sends the
 * request 300 ms later).  Tries keys until one is offloaded (the executor
 * declines a leaf that would split): returns the key, 0 if none was.
 */
static uint64_t
late_insert(dm_client **cp, dm_tree **tp, const dm_tree_name *tn, dm_cache *cache, uint64_t tag,
			dm_gaddr root_addr, dm_tree *reader, int backend, uint64_t *next)
{
	for (int tries = 0; tries < 20; tries++, *next += 37)
	{
		dm_entry	e = dm_entry_make(*next * 3 + 2, 99);
		dm_fault	f = {DM_FAULT_LATE_RPC, 1, 300, 0};
		dm_offload_counters a,
					b;
		uint64_t	root = 0;
		int			found;

		/* a connection of its own each time: the fault breaks it */
		if (*tp)
			dm_tree_close(*tp);
		if (*cp)
			dm_client_destroy(*cp);
		*tp = NULL;
		if ((*cp = connect_to(&mn, backend, NULL)) == NULL || dm_tree_open_existing(*cp, 1, tn, tp) != DM_OK ||
			dm_tree_use_cache(*tp, cache, 0) != DM_OK || dm_tree_set_offload(*tp, DM_OFFLOAD_ALWAYS) != DM_OK)
			return 0;
		/* room in e's leaf (the executor does not split), then one offloaded insert to see it takes it */
		for (uint64_t k = *next * 3 - 6; k <= *next * 3 + 8; k++)
			for (uint64_t tid = 0; tid < 3; tid++)
				(void) dm_tree_delete(reader, dm_entry_make(k, tid), NULL);
		(void) dm_read(*cp, root_addr, &root, 8);
		dm_cache_invalidate(cache, tag, root);
		dm_tree_offload_counters(*tp, &a);
		(void) dm_tree_insert(*tp, dm_entry_make(e.key, 98), NULL);
		dm_tree_offload_counters(*tp, &b);
		(void) dm_tree_delete(reader, dm_entry_make(e.key, 98), NULL);
		if (b.offloads == a.offloads)
			continue;
		(void) dm_tree_contains(*tp, e, &found);	/* the path back in the cache, but the root */
		(void) dm_read(*cp, root_addr, &root, 8);
		dm_cache_invalidate(cache, tag, root);
		dm_client_set_fault(*cp, &f);
		if (dm_tree_insert(*tp, e, NULL) != DM_OK)
		{
			dm_offload_counters l;

			dm_tree_offload_counters(*tp, &l);
			if (l.lost_writes > b.lost_writes)
			{
				*next += 37;
				return e.key;
			}
		}
		/* the fault hit another step: another key */
		dm_client_set_fault(*cp, NULL);
		(void) reap_late_child();
	}
	return 0;
}

/* Wait (10 s at most) for the child that sends the late request (the memnode is our other child). */
static int
reap_late_child(void)
{
	for (int i = 0; i < 1000; i++)
	{
		struct timespec ts = {0, 10 * 1000 * 1000};
		pid_t		p = waitpid(-1, NULL, WNOHANG);

		if (p > 0 && p != mn.pid)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void
run_cache_late(int backend, const char *bname, const char *name, dm_cache *cache, uint64_t tag, dm_tree *reader)
{
	dm_client  *c = connect_to(&mn, backend, NULL);
	dm_client  *cu = connect_to(&mn, backend, NULL);
	dm_tree    *t = NULL,
			   *tu = NULL;
	dm_tree_name tn;
	dm_tree_info info;
	uint64_t	next = 100,
				key,
				checked = 0;
	int			found = -1,
				remote = -1,
				existed = -1;
	char		msg[256] = "";

	dm_tree_name_named(&tn, name);
	if (!CHECK(c && cu && dm_tree_open(c, 1, &tn, &info) == DM_OK && dm_tree_open_existing(c, 1, &tn, &t) == DM_OK &&
			   dm_tree_use_cache(t, cache, 0) == DM_OK && dm_tree_set_offload(t, DM_OFFLOAD_ALWAYS) == DM_OK &&
			   dm_tree_open_existing(cu, 1, &tn, &tu) == DM_OK, "late %s: handles", bname))
		return;

	/* landed */
	key = late_insert(&c, &t, &tn, cache, tag, info.root_addr, reader, backend, &next);
	if (CHECK(key != 0, "late %s: an offloaded insert given up on by its client (key %" PRIu64 ")", bname, key))
	{
		(void) dm_tree_contains(reader, dm_entry_make(key, 99), &found);	/* cached before it lands */
		CHECK(reap_late_child(), "late %s: landed: the late request was sent", bname);
		(void) dm_tree_contains(tu, dm_entry_make(key, 99), &remote);
		CHECK(found == 0 && remote == 1, "late %s: landed: it was not there for the reader (%d), then landed (%d)",
			  bname, found, remote);
		CHECK_STATUS(dm_tree_drain_settle(reader, NULL), DM_OK, "late %s: landed: the reader's next use drains it", bname);
		CHECK_STATUS(dm_tree_verify_cache(reader, &checked, msg, sizeof(msg)), DM_OK,
					 "late %s: landed: the cache agrees with remote memory afterwards %s", bname, msg);
		(void) dm_tree_contains(reader, dm_entry_make(key, 99), &found);
		(void) dm_tree_delete(reader, dm_entry_make(key, 99), &existed);
		(void) dm_tree_contains(tu, dm_entry_make(key, 99), &remote);
		CHECK(found == 1 && existed == 1 && remote == 0,
			  "late %s: landed: the reader sees it (%d), a delete through the cache finds it (%d) and removes it "
			  "remotely (%d left)", bname, found, existed, remote);
	}

	/* cancelled */
	key = late_insert(&c, &t, &tn, cache, tag, info.root_addr, reader, backend, &next);
	if (CHECK(key != 0, "late %s: another offloaded insert given up on (key %" PRIu64 ")", bname, key))
	{
		CHECK_STATUS(dm_tree_drain_settle(reader, NULL), DM_OK,
					 "late %s: cancelled: the reader's next use drains it before it arrives", bname);
		CHECK(reap_late_child(), "late %s: cancelled: the late request was sent", bname);
		(void) dm_tree_contains(tu, dm_entry_make(key, 99), &remote);
		(void) dm_tree_contains(reader, dm_entry_make(key, 99), &found);
		CHECK(remote == 0 && found == 0, "late %s: cancelled: arriving after the drain it did not run (remote %d, "
			  "through the cache %d)", bname, remote, found);
		CHECK_STATUS(dm_tree_verify_cache(reader, &checked, msg, sizeof(msg)), DM_OK,
					 "late %s: cancelled: the cache agrees with remote memory %s", bname, msg);
	}
	CHECK_STATUS(dm_tree_drain_settle(t, NULL), DM_OK, "late %s: nothing left to drain", bname);
	if (t)
		dm_tree_close(t);
	dm_tree_close(tu);
	if (c)
		dm_client_destroy(c);
	dm_client_destroy(cu);
}

static void
run_cache(int backend, const char *bname)
{
	dm_client  *c = connect_to(&mn, backend, NULL);
	dm_cache_config cfg = {256, 256, DM_CACHE_DEX, 1000, 0};
	size_t		len = dm_cache_shmem_size(&cfg);
	void	   *mem = aligned_alloc(64, (len + 63) & ~(size_t) 63);
	dm_cache   *cache = mem ? dm_cache_init(mem, len, &cfg) : NULL;
	dm_tree    *t,
			   *t2 = NULL;
	model		m = {0};
	char		name[64],
				msg[256];
	uint64_t	checked = 0,
				tag = 0;
	int			ok = 1;
	dm_offload_counters oc;
	dm_tree_info info;

	snprintf(name, sizeof(name), "cache-%s", bname);
	if (!CHECK(c && cache && (t = new_tree(c, name, 256)) != NULL, "cache %s: tree and a 256-frame cache", bname))
		return;
	CHECK_STATUS(dm_tree_use_cache(t, cache, 0), DM_OK, "cache %s: use the cache", bname);
	/* one-sided first: the cache fills with the path and leaves */
	for (int i = 0; i < 600; i++)
	{
		dm_entry	e = dm_entry_make((uint64_t) i * 3, 0);

		dm_tree_insert(t, e, NULL);
		m_insert(&m, e);
	}
	CHECK_STATUS(dm_tree_set_offload(t, DM_OFFLOAD_ALWAYS), DM_OK, "cache %s: offload always", bname);
	{
		dm_tree_name tn;
		dm_node_info ni;

		dm_tree_name_named(&tn, name);
		ok = dm_tree_open(c, 1, &tn, &info) == DM_OK && dm_client_node_info(c, 0, &ni) == DM_OK &&
			dm_tree_open_existing(c, 1, &tn, &t2) == DM_OK && dm_tree_use_cache(t2, cache, 0) == DM_OK;
		tag = dm_cache_tree_tag(dm_tree_id(t), ni.incarnation);
	}
	{
		uint32_t	nf = 0;
		dm_gaddr	a;

		for (uint32_t f = dm_cache_next_frame(cache, tag, 0, &a); f != DM_FRAME_NONE;
			 f = dm_cache_next_frame(cache, tag, f + 1, &a))
			nf++;
		tap_diag("cache %s: %u frames hold the tree's nodes before the offloads (ok %d)", bname, nf, ok);
	}
	for (int round = 0; round < 3 && ok; round++)
		for (int i = 0; i < 600 && ok; i++)
		{
			uint64_t	root = 0;

			/*
			 * The root leaves the cache, its leaves stay: the miss is at the
			 * root, and the executor writes a leaf this cache holds (the
			 * case DEX's path-aware caching makes rare, and the reason
			 * for the invalidation).
			 */
			ok &= dm_read(c, info.root_addr, &root, 8) == DM_OK;
			dm_cache_invalidate(cache, tag, root);
			dm_entry	e = dm_entry_make((uint64_t) i * 3 + 1 + (uint64_t) (round == 2), (uint64_t) round);
			uint64_t	tids[4];
			int			n = 0;

			if (round == 1)
			{
				/* delete what round 0 inserted */
				e = dm_entry_make((uint64_t) i * 3 + 1, 0);
				ok &= dm_tree_delete(t, e, NULL) == DM_OK;
				m_delete(&m, e);
			}
			else
			{
				ok &= dm_tree_insert(t, e, NULL) == DM_OK;
				m_insert(&m, e);
			}
			/* read it back one-sided, through the cache, as another backend would */
			ok &= dm_tree_lookup(t2, e.key, tids, 4, &n) == DM_OK && n == (round == 1 ? 0 : 1);
			if (!ok)
				CHECK(0, "cache %s: round %d key %" PRIu64 ": a lookup through the cache saw %d", bname, round,
					  e.key, n);
		}
	CHECK(ok, "cache %s: every offloaded change is seen at once by one-sided lookups through the cache", bname);
	CHECK_STATUS(dm_tree_verify_cache(t, &checked, msg, sizeof(msg)), DM_OK,
				 "cache %s: every cached frame agrees with remote memory (%" PRIu64 " compared) %s", bname,
				 checked, msg);
	dm_tree_offload_counters(t, &oc);
	CHECK(oc.offloads > 0 && oc.invalidated > 0, "cache %s: %" PRIu64 " offloads from the uncached root invalidated %"
		  PRIu64 " written nodes", bname, oc.offloads, oc.invalidated);
	CHECK(same_as_model(t, &m, "cache"), "cache %s: tree = model", bname);
	run_cache_lost(backend, bname, name, cache, tag, &m);
	run_cache_late(backend, bname, name, cache, tag, t2);
	dm_tree_close(t2);
	dm_tree_destroy(t);
	m_free(&m);
	free(mem);
	dm_client_destroy(c);
}

static void
run_fence(int backend, const char *bname)
{
	dm_client  *c = connect_to(&mn, backend, NULL);
	dm_tree    *a = NULL,
			   *b = NULL;
	dm_tree_name tn;
	uint64_t	w1,
				seen;
	int			found = -1;

	dm_tree_name_named(&tn, backend == DM_BACKEND_SHM ? "fence-shm" : "fence-tcp");
	if (!CHECK(c && (a = new_tree(c, tn.name, 256)) != NULL &&
			   dm_tree_open_existing(c, 1, &tn, &b) == DM_OK, "fence %s: two handles", bname))
		return;
	dm_tree_set_offload(a, DM_OFFLOAD_ALWAYS);
	{
		dm_offload_counters oc0, oc1;
		uint64_t	hw = 0;

		/* the write depends on mark 77: it is up before the executor writes (dm_offload.c) */
		dm_tree_offload_counters(a, &oc0);
		dm_tree_writer_require(a, 77);
		CHECK_STATUS(dm_tree_insert(a, dm_entry_make(1, 1), NULL), DM_OK, "fence %s: offloaded insert", bname);
		dm_tree_offload_counters(a, &oc1);
		if (dm_tree_writer_read(b, NULL, &hw) != DM_OK)
			hw = 0;
		CHECK(oc1.offloads == oc0.offloads + 1 && hw == 77,
			  "fence %s: the offloaded insert raised the high-water mark it needed first (%" PRIu64 ")", bname, hw);
	}
	{
		dm_counters k0, k1;
		uint64_t	hw = 0;
		int			existed = -1;

		/* the raise rides in the request: the executor's write batch carries it (protocol 6) */
		dm_tree_writer_require(a, 90);
		dm_client_counters(c, -1, &k0);
		CHECK_STATUS(dm_tree_insert(a, dm_entry_make(3, 1), NULL), DM_OK, "fence %s: offloaded insert (mark 90)", bname);
		dm_client_counters(c, -1, &k1);
		CHECK(dm_tree_writer_read(b, NULL, &hw) == DM_OK && hw == 90 && dm_tree_writer_high_water(a) == 90,
			  "fence %s: raised to 90 by the executor (%" PRIu64 ")", bname, hw);
		CHECK(k1.rpcs - k0.rpcs == 1 && k1.round_trips == k0.round_trips,
			  "fence %s: an offloaded insert that needs a raise is one RPC (%" PRIu64 ") and no batch (%" PRIu64 ")",
			  bname, k1.rpcs - k0.rpcs, k1.round_trips - k0.round_trips);
		/* a write that writes nothing raises nothing, and the handle knows it */
		dm_tree_writer_require(a, 95);
		CHECK(dm_tree_insert(a, dm_entry_make(3, 1), &existed) == DM_OK && existed == 1 &&
			  dm_tree_writer_read(b, NULL, &hw) == DM_OK && hw == 90 && dm_tree_writer_high_water(a) == 90,
			  "fence %s: an insert of an existing entry raises nothing (%" PRIu64 ", handle %" PRIu64 ")", bname,
			  hw, dm_tree_writer_high_water(a));
		CHECK(dm_tree_insert(a, dm_entry_make(4, 1), NULL) == DM_OK &&
			  dm_tree_writer_read(b, NULL, &hw) == DM_OK && hw == 95,
			  "fence %s: the next write raises it (%" PRIu64 ")", bname, hw);
	}
	w1 = dm_tree_writer_word(a);
	CHECK_STATUS(dm_tree_writer_takeover(b, w1, DM_WRITER_MAKE(DM_WRITER_EPOCH(w1) + 1, 7), 0, &seen), DM_OK,
				 "fence %s: the other handle takes the tree over", bname);
	CHECK_STATUS(dm_tree_insert(a, dm_entry_make(2, 1), NULL), DM_ERR_FENCED,
				 "fence %s: the old writer's offloaded insert is fenced off", bname);
	CHECK_STATUS(dm_tree_contains(b, dm_entry_make(2, 1), &found), DM_OK, "fence %s: contains", bname);
	CHECK(found == 0, "fence %s: nothing of it landed", bname);
	dm_tree_close(a);
	dm_tree_destroy(b);
	dm_client_destroy(c);
}

static void
run_declined(void)
{
	const char *const args[] = {"--id", "1", "--size", "64M", "--chunk-size", "1M", "--offload-threads", "0", NULL};
	memnode_proc m0;
	dm_client  *c;
	dm_tree    *t;
	dm_rpc_off_load_rep lr;
	dm_offload_counters oc;
	model		m = {0};
	int			ok = 1;

	if (!CHECK(memnode_start(&m0, 0, args) == 0, "declined: memnode with --offload-threads 0"))
		return;
	c = connect_to(&m0, DM_BACKEND_TCP, NULL);
	if (CHECK(c && (t = new_tree(c, "declined", 256)) != NULL, "declined: tree"))
	{
		CHECK(dm_client_rpc(c, 1, DM_RPC_OFF_LOAD, NULL, 0, &lr, sizeof(lr), sizeof(lr), NULL) == DM_OK &&
			  lr.slots == 0, "declined: the load report says 0 executor slots");
		dm_tree_set_offload(t, DM_OFFLOAD_ALWAYS);
		for (int i = 0; i < 500 && ok; i++)
		{
			dm_entry	e = dm_entry_make(rnd() % 300, 0);

			ok &= dm_tree_insert(t, e, NULL) == DM_OK;
			m_insert(&m, e);
		}
		CHECK(ok, "declined: 500 inserts succeed one-sided");
		CHECK(same_as_model(t, &m, "declined"), "declined: tree = model");
		dm_tree_offload_counters(t, &oc);
		CHECK(oc.offloads == 0 && oc.fallbacks > 500, "declined: nothing offloaded, %" PRIu64 " declined",
			  oc.fallbacks);
		CHECK(dm_client_rpc(c, 1, DM_RPC_OFF_LOAD, NULL, 0, &lr, sizeof(lr), sizeof(lr), NULL) == DM_OK &&
			  lr.declined_busy == oc.fallbacks && lr.offloads == 0,
			  "declined: the memnode counted them (%" PRIu64 ")", lr.declined_busy);
		dm_tree_destroy(t);
	}
	m_free(&m);
	dm_client_destroy(c);
	memnode_stop(&m0, SIGTERM);
}

static void
run_isolation(void)
{
	const char *args[] = {"--id", "1", "--size", "64M", "--chunk-size", "1M", "--auth-file", NULL, NULL};
	memnode_proc ma;
	dm_client  *ca,
			   *cb;
	dm_tree    *t;
	dm_rpc_off_req req;
	uint8_t		rep[sizeof(dm_rpc_off_rep) + 16 * sizeof(dm_entry_wire)];
	int			found = -1;

	args[7] = test_auth_file();
	if (!CHECK(memnode_start(&ma, 0, args) == 0, "isolation: memnode with --auth-file"))
		return;
	ca = connect_to(&ma, DM_BACKEND_TCP, "tenant-a");
	cb = connect_to(&ma, DM_BACKEND_TCP, "tenant-b");
	if (CHECK(ca && cb && (t = new_tree(ca, "iso", 256)) != NULL, "isolation: tenant-a's tree"))
	{
		dm_tree_set_offload(t, DM_OFFLOAD_ALWAYS);
		CHECK_STATUS(dm_tree_insert(t, dm_entry_make(5, 5), NULL), DM_OK, "isolation: tenant-a offloads an insert");
		/* tenant-b names a's tree and its root (read from a's handle) */
		memset(&req, 0, sizeof(req));
		req.tree_id = dm_tree_id(t);
		req.start = 0;
		req.node_size = 256;
		req.level = UINT32_MAX;
		req.lo.key = 6;
		req.hi.key = 6;
		req.max = 16;
		{
			/* the root address, as tenant-a's client reads it */
			dm_tree_info info;
			dm_tree_name tn;
			uint64_t	root = 0;

			dm_tree_name_named(&tn, "iso");
			if (dm_tree_open(ca, 1, &tn, &info) == DM_OK)
				dm_read(ca, info.root_addr, &root, 8);
			req.start = root;
		}
		CHECK_STATUS(dm_client_rpc(cb, 1, DM_RPC_OFF_INSERT, &req, sizeof(req), rep, sizeof(dm_rpc_off_rep),
								   sizeof(rep), NULL), DM_ERR_PERMISSION,
					 "isolation: tenant-b's offloaded insert into tenant-a's tree is refused");
		CHECK_STATUS(dm_client_rpc(cb, 1, DM_RPC_OFF_SCAN, &req, sizeof(req), rep, sizeof(dm_rpc_off_rep),
								   sizeof(rep), NULL), DM_ERR_PERMISSION,
					 "isolation: and so is its offloaded scan");
		{
			/* tenant-b's own tree, but the high-water word it names is tenant-a's */
			dm_tree    *tb = new_tree(cb, "iso-b", 256);
			dm_tree_name tn;
			dm_tree_info ia,
						ib;
			uint64_t	hw_before = 1,
						hw_after = 2,
						root = 0;

			dm_tree_name_named(&tn, "iso");
			if (CHECK(tb && dm_tree_open(ca, 1, &tn, &ia) == DM_OK, "isolation: tenant-b's tree"))
			{
				dm_tree_name_named(&tn, "iso-b");
				if (dm_tree_open(cb, 1, &tn, &ib) == DM_OK)
					dm_read(cb, ib.root_addr, &root, 8);
				dm_read(ca, ia.meta_addr + 8 * 8, &hw_before, 8);
				req.tree_id = dm_tree_id(tb);
				req.start = root;
				/* b's own writer word and fence: only the high-water word is foreign */
				req.fence = ib.meta_addr + 8 * 7;
				dm_read(cb, req.fence, &req.writer, 8);
				req.hw_word = ia.meta_addr + 8 * 8;
				req.hw_mark = 1u << 30;
				CHECK_STATUS(dm_client_rpc(cb, 1, DM_RPC_OFF_INSERT, &req, sizeof(req), rep, sizeof(dm_rpc_off_rep),
										   sizeof(rep), NULL), DM_ERR_PERMISSION,
							 "isolation: an offloaded insert raising tenant-a's high-water word is refused");
				dm_read(ca, ia.meta_addr + 8 * 8, &hw_after, 8);
				CHECK(hw_after == hw_before, "isolation: tenant-a's high-water word unchanged (%" PRIu64 ")", hw_after);
				req.hw_word = ib.meta_addr + 8 * 8 + 4;
				CHECK_STATUS(dm_client_rpc(cb, 1, DM_RPC_OFF_INSERT, &req, sizeof(req), rep, sizeof(dm_rpc_off_rep),
										   sizeof(rep), NULL), DM_ERR_INVALID,
							 "isolation: a misaligned high-water word is refused");
				req.hw_word = 0;
				CHECK_STATUS(dm_client_rpc(cb, 1, DM_RPC_OFF_INSERT, &req, sizeof(req), rep, sizeof(dm_rpc_off_rep),
										   sizeof(rep), NULL), DM_ERR_INVALID,
							 "isolation: a mark without a word is refused");
				req.hw_mark = 0;
			}
			if (tb)
				dm_tree_destroy(tb);
		}
		CHECK(dm_tree_contains(t, dm_entry_make(6, 0), &found) == DM_OK && found == 0,
			  "isolation: tenant-a's tree unchanged");
		dm_tree_destroy(t);
	}
	dm_client_destroy(ca);
	dm_client_destroy(cb);
	memnode_stop(&ma, SIGTERM);
}

/* The policy over shm: a remote read costs a memory access, an RPC a socket round trip. */
static void
run_auto(int backend, const char *bname)
{
	dm_client  *c = connect_to(&mn, backend, NULL);
	dm_tree    *t;
	dm_offload_counters oc,
				o0;
	int			ok = 1;
	char		name[64];
	int			nops;
	uint64_t	t_explore;

	memset(&o0, 0, sizeof(o0));
	snprintf(name, sizeof(name), "auto-%s", bname);
	if (!CHECK(c && (t = new_tree(c, name, 1024)) != NULL, "auto %s: tree", bname))
		return;
	for (int i = 0; i < 20000 && ok; i++)
		ok &= dm_tree_insert(t, dm_entry_make(rnd() % 100000, 0), NULL) == DM_OK;
	CHECK_STATUS(dm_tree_set_offload(t, DM_OFFLOAD_AUTO), DM_OK, "auto %s: offload auto", bname);
	if (backend == DM_BACKEND_SHM)
	{
		/*
		 * The access method's scans first, on a handle that has measured
		 * nothing yet: an offloaded batch where the policy wants one, else
		 * its own iterator (dm_offload_iter_open, which times the one-sided
		 * path).  Without that sample the policy never learns that RPCs lose
		 * here: every scan walks the cache for a start node and 1/128 of
		 * them go to the executor (0 without a walk, ~160 explored).  The
		 * bounds leave room for a loaded machine, whose slow samples may
		 * make the policy walk for a while.
		 */
		for (int i = 0; i < 20000 && ok; i++)
		{
			uint64_t	k = rnd() % 100000;
			dm_entry	out[8],
						resume,
						e;
			int			n,
						more,
						rc = dm_offload_scan_batch(t, dm_key_lo(k, 1), 1, dm_key_hi(k, 1), 1, out, 8, &n, &more, &resume);

			if (rc == DM_ERR_FALLBACK)
			{
				dm_range	r = {dm_key_lo(k, 1), 1, dm_key_hi(k, 1), 1, 0};
				dm_iter    *it;

				ok &= dm_offload_iter_open(t, &r, &it) == DM_OK;
				if (ok)
				{
					while (dm_iter_next(it, &e) == 1)
						;
					dm_iter_close(it);
				}
			}
			else
				ok &= rc == DM_OK;
		}
		dm_tree_offload_counters(t, &oc);
		tap_diag("auto shm scans: decided %" PRIu64 " offload / %" PRIu64 " local (%" PRIu64 " explored, %" PRIu64
				 " without a walk), rpc %.1f us, read %.1f us", oc.decided_offload, oc.decided_local, oc.explored,
				 oc.unwalked, oc.rpc_ns_avg / 1e3, oc.read_ns_avg / 1e3);
		CHECK(ok && oc.read_ns_avg > 0 && oc.unwalked > 10000 && oc.explored < 20000 / 256,
			  "auto shm: scans through the access method's path learn the one-sided cost: %" PRIu64
			  " of 20000 decided without a walk, %" PRIu64 " explored", oc.unwalked, oc.explored);
		o0 = oc;				/* the lookups below are counted from here */
	}
	/*
	 * Where an offload loses by far (over shm; over tcp when the RPC is slow,
	 * as under a sanitizer) it is explored 1/1024 of the time and at most
	 * once a second (the scans above may just have): lookups until some
	 * were, for 40,000 lookups or 3 seconds, whichever is later.
	 */
	nops = 0;
	t_explore = now_ns();
	do
	{
		for (int i = 0; i < 1000 && ok; i++, nops++)
		{
			uint64_t	tids[4];
			int			n;

			ok &= dm_tree_lookup(t, rnd() % 100000, tids, 4, &n) == DM_OK;
		}
		dm_tree_offload_counters(t, &oc);
		oc.decided_offload -= o0.decided_offload;
		oc.decided_local -= o0.decided_local;
		oc.explored -= o0.explored;
		oc.unwalked -= o0.unwalked;
	} while (ok && (nops < 40000 || now_ns() - t_explore < UINT64_C(3000000000)) &&
			 (nops < 3000 || oc.explored == 0 || oc.load_reports == 0));
	tap_diag("auto %s: decided %" PRIu64 " offload / %" PRIu64 " local (%" PRIu64 " explored), rpc %.1f us, read %.1f us",
			 bname, oc.decided_offload, oc.decided_local, oc.explored, oc.rpc_ns_avg / 1e3, oc.read_ns_avg / 1e3);
	CHECK(ok && oc.decided_offload + oc.decided_local == (uint64_t) nops && oc.explored > 0 && oc.load_reports > 0,
		  "auto %s: every lookup decided, some explored, the load was asked for", bname);
	if (backend == DM_BACKEND_SHM)
	{
		CHECK(oc.decided_local > oc.decided_offload,
			  "auto shm: one-sided reads preferred (%" PRIu64 " local, %" PRIu64 " offloaded)", oc.decided_local,
			  oc.decided_offload);
		/* once both estimates exist, an RPC cannot beat even a root-to-leaf walk of memory reads */
		CHECK(oc.unwalked > oc.decided_local * 9 / 10,
			  "auto shm: most decisions made without walking the cache for a start node (%" PRIu64 " of %" PRIu64 ")",
			  oc.unwalked, oc.decided_local);
	}
	dm_tree_destroy(t);
	dm_client_destroy(c);
}

/* Sorted batches through the executor, against the model. */
static void
run_sorted(int backend, const char *bname)
{
	dm_client  *c = connect_to(&mn, backend, NULL);
	dm_tree    *t;
	model		m = {0};
	dm_offload_counters oc,
				o20;
	dm_entry	batch[512];
	int			ok = 1,
				singles = 0,
				multis = 0;
	char		name[64];

	snprintf(name, sizeof(name), "sorted-%s", bname);
	if (!CHECK(c && (t = new_tree(c, name, 512)) != NULL, "sorted %s: tree", bname))
		return;
	CHECK_STATUS(dm_tree_set_offload(t, DM_OFFLOAD_ALWAYS), DM_OK, "sorted %s: offload always", bname);
	for (int round = 0; round < 40 && ok; round++)
	{
		int			del = round % 4 == 3;
		int			n = 1 + (int) rnd_below(sizeof(batch) / sizeof(batch[0]));
		int			changed = -1,
					want = 0,
					rc;

		if (round == 20)
		{
			dm_tree_set_offload(t, DM_OFFLOAD_AUTO);
			dm_tree_offload_counters(t, &o20);
		}
		if (round >= 20 && round % 3 == 1)
			n = 1;				/* a one-row transaction's flush */
		for (int i = 0; i < n; i++)
			batch[i] = del && m.n > 0 ? m.e[rnd_below(m.n)] : dm_entry_make(rnd_below(20000), rnd_below(4));
		n = sort_unique(batch, n);
		if (round >= 20)
			n == 1 ? singles++ : multis++;
		for (int i = 0; i < n; i++)
			want += del ? m_delete(&m, batch[i]) : m_insert(&m, batch[i]);
		rc = del ? dm_tree_delete_sorted(t, batch, n, &changed) : dm_tree_insert_sorted(t, batch, n, &changed);
		if (rc != DM_OK)
			ok = CHECK_STATUS(rc, DM_OK, "sorted %s: round %d: %s of %d: %s", bname, round,
							  del ? "delete" : "insert", n, dm_tree_error(t));
		if (changed != want)
			ok = CHECK(0, "sorted %s: round %d: %d changed, model %d", bname, round, changed, want);
		if (round == 19)
		{
			dm_tree_offload_counters(t, &oc);
			CHECK(oc.offloads > 1000 && oc.fallbacks > 0,
				  "sorted %s: always: %" PRIu64 " entries offloaded, %" PRIu64 " (splits) one-sided", bname,
				  oc.offloads, oc.fallbacks);
		}
	}
	dm_tree_offload_counters(t, &oc);	/* before the check's own (offloaded) scans */
	CHECK(ok && same_as_model(t, &m, "sorted"), "sorted %s: 40 sorted batches (always, then auto) = model", bname);
	CHECK(oc.offloads - o20.offloads <= (uint64_t) singles &&
		  oc.decided_local - o20.decided_local >= (uint64_t) multis,
		  "sorted %s: auto: only one-entry batches offloaded (%" PRIu64 " of %d), %d longer ones one-sided",
		  bname, oc.offloads - o20.offloads, singles, multis);
	tap_diag("sorted %s: decided %" PRIu64 " offload / %" PRIu64 " one-sided", bname, oc.decided_offload,
			 oc.decided_local);
	m_free(&m);
	dm_tree_destroy(t);
	dm_client_destroy(c);
}

/* Only what this instance owns is offloaded; shared nodes (the root) never. */
static void
run_owned(int backend, const char *bname)
{
	dm_client  *c = connect_to(&mn, backend, NULL);
	dm_cache_config cfg = {1024, 512, DM_CACHE_DEX, 1000, 0};
	size_t		len = dm_cache_shmem_size(&cfg);
	void	   *mem = aligned_alloc(64, (len + 63) & ~(size_t) 63);
	dm_cache   *cache = mem ? dm_cache_init(mem, len, &cfg) : NULL;
	dm_tree    *t,
			   *t2 = NULL;
	dm_partition_map pm;
	dm_tree_name tn;
	dm_offload_counters oc;
	model		m = {0};
	char		name[64];
	int			ok = 1;
	uint64_t	owned_off;

	snprintf(name, sizeof(name), "owned-%s", bname);
	if (!CHECK(c && cache && (t = new_tree(c, name, 512)) != NULL, "owned %s: tree and a cache", bname))
		return;
	for (int i = 0; i < 4000 && ok; i++)
	{
		dm_entry	e = dm_entry_make((uint64_t) i * 5, 0);

		ok &= dm_tree_insert(t, e, NULL) == DM_OK;
		m_insert(&m, e);
	}
	memset(&pm, 0, sizeof(pm));
	pm.n = 2;
	pm.lo[0] = 0;
	pm.lo[1] = 10000;
	pm.instance[0] = 0;
	pm.instance[1] = 1;
	ok &= CHECK_STATUS(dm_tree_partitions_set(t, &pm), DM_OK, "owned %s: instance 0 owns [0, 10000)", bname);
	dm_tree_name_named(&tn, name);
	/* no cache: every offload would start at the root, which is shared */
	ok &= dm_tree_open_existing(c, 1, &tn, &t2) == DM_OK && dm_tree_use_cache(t2, NULL, 0) == DM_OK;
	dm_tree_write_any_key(t2, 1);
	dm_tree_set_offload(t2, DM_OFFLOAD_ALWAYS);
	for (int i = 0; i < 200 && ok; i++)
	{
		dm_entry	e = dm_entry_make((uint64_t) i * 97 + 1, 1);	/* both ranges */

		ok &= dm_tree_insert(t2, e, NULL) == DM_OK;
		m_insert(&m, e);
	}
	dm_tree_offload_counters(t2, &oc);
	CHECK(ok && oc.offloads == 0 && oc.decided_offload == 0,
		  "owned %s: without a cache nothing is offloaded from the shared root (%" PRIu64 ")", bname,
		  oc.offloads);
	dm_tree_close(t2);
	/* with a cache: owned subtrees below the cached root are offloaded, only for owned keys */
	ok &= dm_tree_open_existing(c, 1, &tn, &t2) == DM_OK && dm_tree_use_cache(t2, cache, 0) == DM_OK;
	dm_tree_write_any_key(t2, 1);
	dm_tree_set_offload(t2, DM_OFFLOAD_ALWAYS);
	for (int i = 0; i < 300 && ok; i++)
	{
		dm_entry	e = dm_entry_make((uint64_t) i * 31 + 2, 2);	/* owned: below 10000 */

		ok &= dm_tree_insert(t2, e, NULL) == DM_OK;
		m_insert(&m, e);
	}
	dm_tree_offload_counters(t2, &oc);
	owned_off = oc.offloads;
	for (int i = 0; i < 300 && ok; i++)
	{
		dm_entry	e = dm_entry_make(10000 + (uint64_t) i * 31 + 3, 3);	/* instance 1's */

		ok &= dm_tree_insert(t2, e, NULL) == DM_OK;
		m_insert(&m, e);
	}
	dm_tree_offload_counters(t2, &oc);
	CHECK(ok && owned_off > 0 && oc.offloads == owned_off,
		  "owned %s: writes of owned keys offloaded (%" PRIu64 "), of instance 1's keys none (%" PRIu64 ")",
		  bname, owned_off, oc.offloads - owned_off);
	CHECK(same_as_model(t, &m, "owned"), "owned %s: contents = model", bname);
	dm_tree_close(t2);
	m_free(&m);
	dm_tree_destroy(t);
	dm_client_destroy(c);
	free(mem);
}

/* Stop process pid and wait until it is stopped (a thread already awake could still answer). */
static int
stop_process(pid_t pid)
{
	char		path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	kill(pid, SIGSTOP);
	for (int i = 0; i < 2000; i++)
	{
		FILE	   *f = fopen(path, "r");
		char		st = 0;

		if (f)
		{
			/* "pid (comm) S ...": the state follows the last ')' */
			char		buf[512];
			size_t		n = fread(buf, 1, sizeof(buf) - 1, f);
			char	   *p;

			fclose(f);
			buf[n] = 0;
			if ((p = strrchr(buf, ')')) != NULL && p[1] == ' ')
				st = p[2];
		}
		if (st == 'T' || st == 't')
			return 1;
		usleep(1000);
	}
	return 0;
}

/* The write log gets the executor's nodes; an unknown outcome marks it lost. */
static void
run_wlog(int backend, const char *bname)
{
	dm_client_opts o = {.backend = backend, .name = "test_offload", .op_timeout_ms = 400};
	dm_client  *c = dm_client_create(&o);
	dm_tree    *t;
	dm_offload_counters oc;
	const dm_gaddr *w;
	int			n,
				overflow,
				ok = 1,
				rc;
	uint16_t	id;
	char		name[64];

	snprintf(name, sizeof(name), "wlog-%s", bname);
	if (!CHECK(c && dm_client_connect(c, mn.addr, &id) == DM_OK && (t = new_tree(c, name, 1024)) != NULL,
			   "wlog %s: tree", bname))
		return;
	for (int i = 0; i < 200 && ok; i++)
		ok &= dm_tree_insert(t, dm_entry_make((uint64_t) i * 10, 1), NULL) == DM_OK;
	dm_tree_track_writes(t, 1);
	CHECK_STATUS(dm_tree_set_offload(t, DM_OFFLOAD_ALWAYS), DM_OK, "wlog %s: offload always", bname);
	/* into a leaf with room: the executor writes it, nothing one-sided */
	for (int i = 0; i < 5 && ok; i++)
		ok &= dm_tree_insert(t, dm_entry_make((uint64_t) i * 10 + 5, 1), NULL) == DM_OK;
	dm_tree_offload_counters(t, &oc);
	w = dm_tree_written_nodes(t, &n, &overflow);
	CHECK(ok && oc.offloads == 5 && oc.fallbacks == 0 && n >= 1 && !overflow,
		  "wlog %s: 5 offloaded inserts (%" PRIu64 "), the nodes the executor wrote are logged (%d)", bname,
		  oc.offloads, n);
	for (int i = 0; i < n; i++)
		if (w[i] == 0 || dm_gaddr_node(w[i]) != 1)
			ok = CHECK(0, "wlog %s: logged node %d is 0x%llx", bname, i, (unsigned long long) w[i]);
	/* a stopped memnode: the offloaded insert times out, its outcome unknown */
	CHECK(stop_process(mn.pid), "wlog %s: memnode stopped", bname);
	rc = dm_tree_insert(t, dm_entry_make(77, 1), NULL);
	kill(mn.pid, SIGCONT);
	(void) dm_tree_written_nodes(t, &n, &overflow);
	dm_tree_offload_counters(t, &oc);
	CHECK(rc != DM_OK && rc != DM_ERR_FALLBACK && overflow && oc.lost_writes == 1,
		  "wlog %s: an offloaded insert that timed out (%s) marks the write log lost", bname, dm_strerror(rc));
	(void) dm_tree_written_nodes(t, &n, &overflow);
	CHECK(!overflow && n == 0, "wlog %s: and the next list starts afresh", bname);
	dm_tree_close(t);
	dm_client_destroy(c);
}

/*
 * The ucx variant (DM_TEST_TRANSPORT=ucx): a client that reaches the
 * memnode over ucx offloads nothing (docs/design.md §3: the executor's
 * atomics are the memnode CPU's, not the NIC's), and its answers are the
 * one-sided ones; the drain of writes of unknown outcome works over UCX:
 * the "late" section with a tcp client's offloaded inserts given up on,
 * drained by a reader over ucx, whose DM_RPC_OFF_DRAIN (and every other
 * RPC) goes as a UCX active message.
 */
static void
run_ucx(void)
{
	dm_client  *c = connect_to(&mn, DM_BACKEND_TCP, NULL);
	dm_client  *cu = connect_to(&mn, DM_BACKEND_UCX, NULL);
	dm_cache_config cfg = {256, 256, DM_CACHE_DEX, 1000, 0};
	size_t		len = dm_cache_shmem_size(&cfg);
	void	   *mem = aligned_alloc(64, (len + 63) & ~(size_t) 63);
	dm_cache   *cache = mem ? dm_cache_init(mem, len, &cfg) : NULL;
	dm_tree    *t = NULL,
			   *tu = NULL;
	dm_tree_name tn;
	dm_node_info ni;
	dm_offload_counters a,
				b;
	dm_counters k0,
				k1;
	model		m = {0};
	uint64_t	tag = 0;
	int			ok = 1;

	dm_tree_name_named(&tn, "ucx-drain");
	if (!CHECK(c && cu && cache && (t = new_tree(c, "ucx-drain", 256)) != NULL &&
			   dm_tree_use_cache(t, cache, 0) == DM_OK && dm_tree_open_existing(cu, 1, &tn, &tu) == DM_OK &&
			   dm_tree_use_cache(tu, cache, 0) == DM_OK && dm_client_node_info(cu, 0, &ni) == DM_OK &&
			   ni.backend == DM_BACKEND_UCX, "ucx: a tree, a tcp and a ucx handle on one cache"))
		return;
	tag = dm_cache_tree_tag(dm_tree_id(t), ni.incarnation);
	CHECK_STATUS(dm_tree_set_offload(tu, DM_OFFLOAD_ALWAYS), DM_OK, "ucx: offload always");
	dm_tree_offload_counters(tu, &a);
	for (int i = 0; i < 600 && ok; i++)
	{
		dm_entry	e = dm_entry_make((uint64_t) i * 3, 0);
		uint64_t	tids[2];
		int			n = 0;

		ok = dm_tree_insert(tu, e, NULL) == DM_OK && dm_tree_lookup(tu, e.key, tids, 2, &n) == DM_OK && n == 1;
		m_insert(&m, e);
	}
	dm_tree_offload_counters(tu, &b);
	CHECK(ok && b.offloads == a.offloads, "ucx: 600 inserts and lookups, none offloaded (%" PRIu64 " offloads)",
		  b.offloads - a.offloads);
	CHECK(same_as_model(t, &m, "ucx"), "ucx: tree = model");
	dm_client_counters(cu, -1, &k0);
	run_cache_late(DM_BACKEND_TCP, "tcp, drained over ucx", "ucx-drain", cache, tag, tu);
	dm_client_counters(cu, -1, &k1);
	CHECK(k1.rpcs > k0.rpcs && k1.rpcs_ucx - k0.rpcs_ucx == k1.rpcs - k0.rpcs,
		  "ucx: the reader's drains went over UCX (%" PRIu64 " of %" PRIu64 " RPCs)", k1.rpcs_ucx - k0.rpcs_ucx,
		  k1.rpcs - k0.rpcs);
	dm_tree_close(tu);
	dm_tree_destroy(t);
	m_free(&m);
	free(mem);
	dm_client_destroy(cu);
	dm_client_destroy(c);
}


/*
 * A write still running when its client gave up and drains it: the memnode
 * (test hook DMINDEX_MEMNODE_TEST_WRITE_DELAY_MS) makes every offloaded
 * write wait 1.5 s before it runs; the writer's client gives up after
 * 400 ms.  A reader caches the leaf meanwhile (the write has not landed).
 * The drain must wait until the write has landed before the cache is
 * trusted again: returning at once would let the reader keep a copy that
 * misses the entry for good (owned frames are never read again remotely).
 */
static void
run_drain_running(int backend, const char *bname)
{
	const char *args[] = {"--id", "1", "--shm", "--size", "64M", "--chunk-size", "1M", NULL};
	dm_cache_config cfg = {256, 256, DM_CACHE_DEX, 1000, 0};
	size_t		len = dm_cache_shmem_size(&cfg);
	void	   *mem = aligned_alloc(64, (len + 63) & ~(size_t) 63);
	dm_cache   *cache = mem ? dm_cache_init(mem, len, &cfg) : NULL;
	dm_client_opts wo = {.backend = backend, .name = "test_offload writer", .op_timeout_ms = 400};
	memnode_proc md;
	dm_client  *c = NULL,
			   *cw = NULL;
	dm_tree    *t = NULL,
			   *tw = NULL,
			   *tu = NULL;
	dm_tree_name tn;
	dm_node_info ni;
	dm_offload_counters a,
				b;
	uint64_t	tag = 0,
				root = 0,
				checked = 0;
	dm_entry	e = dm_entry_make(1001, 7);
	int			found = -1,
				drained = -1,
				rc;
	double		t0,
				waited;
	char		msg[256] = "";

	setenv("DMINDEX_MEMNODE_TEST_WRITE_DELAY_MS", "1500", 1);
	rc = memnode_start(&md, 0, args);
	unsetenv("DMINDEX_MEMNODE_TEST_WRITE_DELAY_MS");
	if (!CHECK(rc == 0 && cache, "drain running %s: a memnode whose offloaded writes take 1.5 s", bname))
		goto out;
	dm_tree_name_named(&tn, "drain-running");
	if (!CHECK((c = connect_to(&md, backend, NULL)) != NULL && (t = new_tree(c, "drain-running", 256)) != NULL &&
			   dm_tree_open_existing(c, 1, &tn, &tu) == DM_OK, "drain running %s: tree", bname))
		goto out;
	for (int i = 0; i < 300; i++)
		(void) dm_tree_insert(t, dm_entry_make((uint64_t) i * 4, 0), NULL);
	if (!CHECK(dm_tree_use_cache(t, cache, 0) == DM_OK && (cw = dm_client_create(&wo)) != NULL &&
			   dm_client_connect(cw, md.addr, NULL) == DM_OK && dm_tree_open_existing(cw, 1, &tn, &tw) == DM_OK &&
			   dm_tree_use_cache(tw, cache, 0) == DM_OK && dm_tree_set_offload(tw, DM_OFFLOAD_ALWAYS) == DM_OK &&
			   dm_client_node_info(c, 0, &ni) == DM_OK, "drain running %s: a writer giving up after 400 ms", bname))
		goto out;
	tag = dm_cache_tree_tag(dm_tree_id(t), ni.incarnation);
	/* the path cached but the root: the writer offloads from the root */
	(void) dm_tree_contains(t, e, &found);
	{
		dm_tree_info info;

		if (dm_tree_open(c, 1, &tn, &info) == DM_OK)
			(void) dm_read(c, info.root_addr, &root, 8);
	}
	dm_cache_invalidate(cache, tag, root);
	dm_tree_offload_counters(tw, &a);
	t0 = now_ns() / 1e9;
	rc = dm_tree_insert(tw, e, NULL);
	dm_tree_offload_counters(tw, &b);
	CHECK(rc != DM_OK && b.lost_writes == a.lost_writes + 1,
		  "drain running %s: the writer gave up on its offloaded insert (%s, %" PRIu64 " lost)", bname,
		  dm_strerror(rc), b.lost_writes - a.lost_writes);
	/* the reader caches the leaf while the write still waits on the memnode */
	(void) dm_tree_contains(t, e, &found);
	CHECK(found == 0, "drain running %s: not landed yet when the reader cached the leaf (%d)", bname, found);
	rc = dm_tree_drain_settle(t, &drained);
	waited = now_ns() / 1e9 - t0;
	CHECK(rc == DM_OK && drained == 1 && waited > 1.2,
		  "drain running %s: the reader's next use drains it and waits until it has run (%s, %d drained, %.2f s "
		  "after the insert began)", bname, dm_strerror(rc), drained, waited);
	(void) dm_tree_contains(t, e, &found);	/* re-read, cached again */
	while (now_ns() / 1e9 - t0 < 2.0)
		usleep(50 * 1000);
	(void) dm_tree_contains(t, e, &found);
	CHECK(found == 1, "drain running %s: the reader's cache then holds the landed entry (%d)", bname, found);
	(void) dm_tree_contains(tu, e, &found);
	CHECK(found == 1, "drain running %s: it is in remote memory (%d)", bname, found);
	CHECK_STATUS(dm_tree_verify_cache(t, &checked, msg, sizeof(msg)), DM_OK,
				 "drain running %s: the cache agrees with remote memory %s", bname, msg);
out:
	if (tw)
		dm_tree_close(tw);
	if (tu)
		dm_tree_close(tu);
	if (t)
		dm_tree_destroy(t);
	if (cw)
		dm_client_destroy(cw);
	if (c)
		dm_client_destroy(c);
	if (rc == 0 || md.pid > 0)
		CHECK(WIFEXITED(memnode_stop(&md, SIGTERM)), "drain running %s: memnode exits", bname);
	free(mem);
}

/*
 * The memnode's list of drained tokens keeps the last CANCELLED_MAX
 * (4096; memnode/offload.c) and is looked up through an index on every
 * offload: after 4096 + 300 drained tokens, each of the last 4096 still
 * stops its request, each of the 300 oldest (pushed out of the ring, so
 * out of the index's chains) no longer does.
 */
static void
run_cancel_ring(void)
{
	enum
	{
		OLD = 300, KEPT = 4096, N = OLD + KEPT
	};
	dm_client  *c = connect_to(&mn, DM_BACKEND_TCP, NULL);
	dm_tree    *t = c ? new_tree(c, "cancel-ring", 256) : NULL;
	uint64_t   *tok = calloc(N, sizeof(uint64_t));
	dm_rpc_off_req req;
	uint8_t		rep[sizeof(dm_rpc_off_rep) + 16 * sizeof(dm_entry_wire)];
	int			refused_kept = 0,
				ran_old = 0,
				other = 0;

	if (!CHECK(t && tok && dm_tree_insert(t, dm_entry_make(77, 7), NULL) == DM_OK, "cancel ring: a tree"))
		goto out;
	memset(&req, 0, sizeof(req));
	req.tree_id = dm_tree_id(t);
	req.node_size = 256;
	req.level = UINT32_MAX;
	req.lo.key = 77;
	req.hi.key = 77;
	req.hi.tid = DM_TID_MAX;
	req.flags = DM_OFF_LO_INCL | DM_OFF_HI_INCL;
	req.max = 16;
	{
		dm_tree_info info;
		dm_tree_name tn;

		dm_tree_name_named(&tn, "cancel-ring");
		if (dm_tree_open(c, 1, &tn, &info) == DM_OK)
			dm_read(c, info.root_addr, &req.start, 8);
	}
	for (int i = 0; i < N; i++)
		tok[i] = (xorshift64s(&rng) | 1) ^ ((uint64_t) i << 1);
	for (int i = 0; i < N; i += DM_OFF_DRAIN_MAX)
	{
		dm_rpc_off_drain_req dr;
		dm_rpc_off_drain_rep drep;

		memset(&dr, 0, sizeof(dr));
		dr.n = (uint32_t) (N - i < DM_OFF_DRAIN_MAX ? N - i : DM_OFF_DRAIN_MAX);
		memcpy(dr.tokens, tok + i, dr.n * sizeof(uint64_t));
		if (dm_client_rpc(c, 1, DM_RPC_OFF_DRAIN, &dr, sizeof(dr), &drep, sizeof(drep), sizeof(drep), NULL) != DM_OK ||
			drep.running != 0)
			other++;
	}
	for (int i = 0; i < N; i++)
	{
		int			rc;

		req.token = tok[i];
		rc = dm_client_rpc(c, 1, DM_RPC_OFF_LOOKUP, &req, sizeof(req), rep, sizeof(dm_rpc_off_rep), sizeof(rep), NULL);
		if (i >= OLD && rc == DM_ERR_FALLBACK)
			refused_kept++;
		else if (i < OLD && rc == DM_OK && ((dm_rpc_off_rep *) rep)->count == 1)
			ran_old++;
		else
			other++;
	}
	CHECK(refused_kept == KEPT && ran_old == OLD && other == 0,
		  "cancel ring: the last %d drained tokens stop their requests (%d), the %d oldest do not (%d ran), "
		  "%d other answers", KEPT, refused_kept, OLD, ran_old, other);
out:
	free(tok);
	if (t)
		dm_tree_destroy(t);
	if (c)
		dm_client_destroy(c);
}

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "256M", "--chunk-size", "1M",
	"--offload-threads", "2", NULL};
	const int	backends[2] = {DM_BACKEND_TCP, DM_BACKEND_SHM};
	const char *names[2] = {"tcp", "shm"};

	uint64_t	seed = 20261124;
	int			scale = 100;

	tree_test_env(&seed, &scale);
	rng = seed | 1;
	if (!CHECK(memnode_start(&mn, 0, args) == 0, "memnode (--shm, --offload-threads 2)"))
		return tap_done();
	if (test_ucx())
	{
		run_ucx();
		CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
		return tap_done();
	}
	for (int i = 0; i < 2; i++)
	{
		run_basic(backends[i], names[i]);
		run_race(backends[i], names[i]);
		run_cache(backends[i], names[i]);
		run_fence(backends[i], names[i]);
		run_auto(backends[i], names[i]);
		run_sorted(backends[i], names[i]);
		run_owned(backends[i], names[i]);
		run_wlog(backends[i], names[i]);
		run_var(backends[i], names[i]);
	}
	run_cancel_ring();
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	run_declined();
	run_isolation();
	run_drain_running(DM_BACKEND_TCP, "tcp");
	run_drain_running(DM_BACKEND_SHM, "shm");
	return tap_done();
}
