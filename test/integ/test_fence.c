/*
 * test_fence.c — the writer fence (src/dm/dm_tree_writer.c): once another
 * handle takes a tree over (raises the writer epoch, as a promoted
 * PostgreSQL standby does), every write of the old writer is refused with
 * DM_ERR_FENCED and lands nothing, on every memnode of the tree, while the
 * new writer goes on; a write the old writer sent before the takeover and
 * that only arrives after it (DM_FAULT_LATE over tcp) lands nothing either.
 *
 * Two memnodes (ids 1 and 2); the tree is bulk-loaded over both so that
 * leaves, inner nodes and splits happen on each.  Over tcp and shm.  After
 * each step the tree verifies and its contents equal a model of what the
 * writers were told succeeded.  A control run of the late write without a
 * takeover shows that the late batch does land when nothing fences it.
 * Reclamation too (reclaim_fenced): the old writer takes no leaf out and
 * neither pops from nor pushes to nor installs the tree's reuse list.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_region.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testutil.h"

#define NODE_SIZE 256
#define NLOAD 4000
#define LOCK_TIMEOUT_MS 300

static memnode_proc mn1, mn2;

typedef struct transport
{
	const char *name;
	int			backend;
} transport;

static dm_client *
connect_client(const transport *tr)
{
	return test_client_connect(tr->backend, 0, 5000, "fence", mn1.addr, mn2.addr);
}

static dm_entry
key_entry(uint64_t k)
{
	return dm_entry_make(k * 8 + 3, k);
}

/* Every entry of the tree, in order, equals the model; and the tree verifies. */
static int
same_as_model(dm_tree *t, const model *m, const char *what)
{
	dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, 0};
	dm_iter    *it;
	dm_entry	e;
	size_t		i = 0;
	int			rc, ok = 1;
	char		msg[256];
	uint64_t	n;

	if (dm_iter_open(t, &r, &it) != DM_OK)
		return 0;
	while ((rc = dm_iter_next(it, &e)) == 1)
	{
		if (i >= m->n || dm_entry_cmp(e, m->e[i]) != 0)
		{
			if (ok)
				tap_diag("%s: entry %zu is %s, model has %s", what, i, E(e),
						 i < m->n ? E(m->e[i]) : "nothing");
			ok = 0;
		}
		i++;
	}
	dm_iter_close(it);
	if (rc != 0 || i != m->n)
	{
		tap_diag("%s: %zu entries, model %zu (rc %d)", what, i, m->n, rc);
		ok = 0;
	}
	if (dm_tree_verify(t, &n, msg, sizeof(msg)) != DM_OK)
	{
		tap_diag("%s: verify: %s", what, msg);
		ok = 0;
	}
	return ok;
}

/* Keys spread over the whole loaded range, so the writes hit both memnodes. */
static uint64_t
spread_key(int i, int n)
{
	return (uint64_t) i * NLOAD / (uint64_t) n + NLOAD + 1;	/* new keys: k*8+3 with tid k >= NLOAD+1 */
}

static void
run(const transport *tr)
{
	dm_client  *ca = connect_client(tr), *cb = connect_client(tr);
	dm_tree_opts o;
	dm_tree_name tn;
	dm_tree    *a = NULL, *b = NULL, *a2 = NULL;
	dm_bulk    *bulk;
	model		m = {0};
	uint64_t	w1 = DM_WRITER_MAKE(1, 0xA), w2 = DM_WRITER_MAKE(2, 0xB), seen, word, hw;
	int			rc, refused = 0, landed = 0, nodes_on[2] = {0, 0};
	dm_tree_stats st;
	char		name[64];

	if (!CHECK(ca && cb, "%s: two clients", tr->name))
		return;
	snprintf(name, sizeof(name), "fence-%s", tr->name);
	dm_tree_name_named(&tn, name);
	memset(&o, 0, sizeof(o));
	o.node_size = NODE_SIZE;
	o.nmemnodes = 2;
	o.memnodes[0] = 1;
	o.memnodes[1] = 2;
	o.placement_level = 1;
	o.lock_timeout_ms = LOCK_TIMEOUT_MS;
	o.writer = w1;
	o.high_water = 7;
	CHECK_STATUS(dm_tree_create_new(ca, 1, &tn, &o, &a), DM_OK, "%s: create a tree on memnodes 1 and 2", tr->name);
	if (a == NULL)
		return;
	CHECK(dm_tree_writer_word(a) == w1 && dm_tree_writer_high_water(a) == 7,
		  "%s: the creator writes under the first writer word", tr->name);

	/* bulk load over both memnodes */
	rc = dm_tree_bulk_begin(a, 90, &bulk);
	for (uint64_t k = 0; rc == DM_OK && k < NLOAD; k++)
	{
		dm_entry	e = key_entry(k);

		rc = dm_bulk_add(bulk, &e, 1);
		m_insert(&m, e);
	}
	if (rc == DM_OK)
		rc = dm_bulk_finish(bulk);
	CHECK_STATUS(rc, DM_OK, "%s: bulk load %d entries", tr->name, NLOAD);
	if (dm_tree_stats_get(a, &st) == DM_OK)
	{
		nodes_on[0] = (int) st.nodes_by_memnode[0];
		nodes_on[1] = (int) st.nodes_by_memnode[1];
	}
	CHECK(nodes_on[0] > 0 && nodes_on[1] > 0,
		  "%s: nodes on both memnodes (%d, %d)", tr->name, nodes_on[0], nodes_on[1]);

	/* a second writer of the same epoch (another backend of the same server) */
	CHECK_STATUS(dm_tree_open_existing(cb, 1, &tn, &b), DM_OK, "%s: second handle opens", tr->name);
	if (b == NULL)
		return;
	CHECK(dm_tree_writer_word(b) == w1, "%s: it adopts the current writer word", tr->name);
	rc = DM_OK;
	for (int i = 0; i < 200 && rc == DM_OK; i++)
	{
		dm_entry	e = key_entry(spread_key(i, 200));

		rc = dm_tree_insert(i % 2 ? a : b, e, NULL);
		m_insert(&m, e);
	}
	CHECK_STATUS(rc, DM_OK, "%s: both handles insert 200 entries across the key space", tr->name);

	/*
	 * The high-water mark a write depends on is up before the write lands,
	 * carried by the node's own batch where it can be (a fetch-and-max
	 * after the fence guard: no round trip of its own), raised by a CAS of
	 * its own where not (a leaf on the other memnode; ucx).
	 */
	{
		dm_counters k0, k1;
		int			carried, fetch_max_ops, behind = 0;

		dm_client_counters(ca, -1, &k0);
		rc = DM_OK;
		for (int i = 0; i < 40 && rc == DM_OK; i++)
		{
			dm_entry	e = key_entry(spread_key(i, 40) + 3 * NLOAD);

			dm_tree_writer_require(a, 10 + (uint64_t) i);
			rc = dm_tree_insert(a, e, NULL);
			m_insert(&m, e);
			if (dm_tree_writer_read(b, NULL, &hw) != DM_OK || hw < 10 + (uint64_t) i ||
				dm_tree_writer_high_water(a) < 10 + (uint64_t) i)
				behind++;
		}
		dm_client_counters(ca, -1, &k1);
		fetch_max_ops = (int) (k1.ops[DM_OP_FETCH_MAX] - k0.ops[DM_OP_FETCH_MAX]);
		carried = tr->backend == DM_BACKEND_UCX ? fetch_max_ops == 0 : fetch_max_ops > 0 && fetch_max_ops <= 40;
		CHECK(rc == DM_OK && behind == 0,
			  "%s: 40 inserts each needing a higher mark: the mark was up after every one (%d behind)",
			  tr->name, behind);
		CHECK(carried, "%s: %d of the raises carried by the write's own batch (none over ucx, which has no fetch-and-max)",
			  tr->name, fetch_max_ops);
	}
	CHECK(same_as_model(b, &m, "before takeover"), "%s: tree = model before the takeover", tr->name);

	/* b takes over: epoch 1 -> 2 */
	CHECK_STATUS(dm_tree_writer_takeover(b, w1, w2, 100, &seen), DM_OK, "%s: takeover", tr->name);
	CHECK(seen == w1 && dm_tree_writer_word(b) == w2, "%s: the takeover won (saw %016" PRIx64 ")", tr->name, seen);
	CHECK(dm_tree_writer_read(a, &word, &hw) == DM_OK && word == w2 && hw == 100,
		  "%s: writer word and high-water mark are the new writer's", tr->name);

	/* every write of the old writer is refused */
	for (int i = 0; i < 100; i++)
	{
		dm_entry	e = key_entry(spread_key(i, 100) + 7 * NLOAD);

		refused += dm_tree_insert(a, e, NULL) == DM_ERR_FENCED;
	}
	CHECK(refused == 100, "%s: 100 inserts of the old writer across the key space: %d refused (DM_ERR_FENCED)",
		  tr->name, refused);
	refused = 0;
	for (int i = 0; i < 100; i++)
		refused += dm_tree_delete(a, key_entry((uint64_t) i * (NLOAD / 100)), NULL) == DM_ERR_FENCED;
	CHECK(refused == 100, "%s: 100 deletes of existing entries: %d refused", tr->name, refused);
	{
		dm_entry	batch[300];
		int			changed = -1;

		for (int i = 0; i < 300; i++)
			batch[i] = key_entry(9 * NLOAD + (uint64_t) i);	/* one region: splits */
		CHECK_STATUS(dm_tree_insert_sorted(a, batch, 300, &changed), DM_ERR_FENCED,
					 "%s: a sorted batch that would split leaves is refused", tr->name);
		for (int i = 0; i < 300; i++)
			batch[i] = key_entry((uint64_t) i * 13);
		CHECK_STATUS(dm_tree_delete_sorted(a, batch, 300, &changed), DM_ERR_FENCED,
					 "%s: a sorted delete batch is refused", tr->name);
	}
	CHECK_STATUS(dm_tree_writer_raise(a, 1000), DM_ERR_FENCED, "%s: raising the high-water mark is refused", tr->name);
	dm_tree_writer_require(a, 2000);
	CHECK(dm_tree_insert(a, key_entry(11 * NLOAD), NULL) == DM_ERR_FENCED &&
		  dm_tree_writer_read(b, NULL, &hw) == DM_OK && hw == 100,
		  "%s: nor can a fenced write carry a raise (mark still %" PRIu64 ")", tr->name, hw);
	{
		dm_partition_map before, m, after;

		memset(&m, 0, sizeof(m));
		m.n = 2;
		m.lo[1] = 1000;
		m.instance[1] = 7;
		CHECK(dm_tree_partitions_get(b, &before) == DM_OK, "%s: the new writer reads the partition map", tr->name);
		CHECK_STATUS(dm_tree_partitions_set(a, &m), DM_ERR_FENCED, "%s: storing a partition map is refused",
					 tr->name);
		CHECK(dm_tree_partitions_get(b, &after) == DM_OK && after.epoch == before.epoch && after.n == before.n,
			  "%s: ... and the map is unchanged (epoch %" PRIu64 ", %d ranges)", tr->name, after.epoch, after.n);
		CHECK_STATUS(dm_tree_partitions_set(b, &m), DM_OK, "%s: the new writer stores it", tr->name);
		CHECK(dm_tree_partitions_get(a, &after) == DM_OK && after.epoch == before.epoch + 1 && after.n == 2 &&
			  after.instance[1] == 7, "%s: ... and every handle reads it", tr->name);
	}
	CHECK_STATUS(dm_tree_writer_takeover(a, w1, DM_WRITER_MAKE(3, 0xA), 5, &seen), DM_OK,
				 "%s: a takeover from the stale word runs", tr->name);
	CHECK(seen == w2 && dm_tree_writer_read(b, &word, &hw) == DM_OK && word == w2 && hw == 100,
		  "%s: ... and changes nothing (it saw the new word)", tr->name);
	CHECK_STATUS(dm_tree_destroy(a), DM_ERR_FENCED, "%s: the old writer cannot free the tree", tr->name);
	{
		dm_tree_counters ctr;

		dm_tree_get_counters(a, &ctr);
		CHECK(ctr.fenced_off >= 200, "%s: the old handle counted %" PRIu64 " fenced batches", tr->name, ctr.fenced_off);
	}
	CHECK(same_as_model(b, &m, "after refused writes"), "%s: nothing of the old writer landed; tree verifies",
		  tr->name);

	/* a handle the user refuses (a fenced server reopening): no remote op at all */
	CHECK_STATUS(dm_tree_open_existing(ca, 1, &tn, &a2), DM_OK, "%s: reopen on the old writer's client", tr->name);
	if (a2)
	{
		dm_tree_counters ctr;

		dm_tree_writer_refuse(a2);
		CHECK_STATUS(dm_tree_insert(a2, key_entry(5), NULL), DM_ERR_FENCED, "%s: refused handle: insert fails",
					 tr->name);
		dm_tree_get_counters(a2, &ctr);
		/* it read its way down (reads are allowed) but sent no lock or write: nothing was fenced remotely */
		CHECK(dm_tree_writer_refused(a2) && ctr.fenced_off == 0 && ctr.lock_retries == 0,
			  "%s: refused before any remote lock or write", tr->name);
		dm_tree_close(a2);
	}

	/* the new writer goes on, on both memnodes, splits included */
	rc = DM_OK;
	for (int i = 0; i < 400 && rc == DM_OK; i++)
	{
		dm_entry	e = key_entry(spread_key(i, 400) + 11 * NLOAD);

		rc = dm_tree_insert(b, e, NULL);
		m_insert(&m, e);
		landed++;
	}
	for (int i = 0; i < 100 && rc == DM_OK; i++)
	{
		dm_entry	e = key_entry((uint64_t) i * 37 % NLOAD);

		rc = dm_tree_delete(b, e, NULL);
		m_delete(&m, e);
	}
	CHECK_STATUS(rc, DM_OK, "%s: the new writer inserts %d and deletes 100", tr->name, landed);
	CHECK(same_as_model(b, &m, "new writer"), "%s: tree = model; verifies", tr->name);

	/*
	 * A write sent before a takeover that lands after it (tcp only: the
	 * memnode executes a batch the sender abandoned).  A child process's
	 * handle (writer w2) deletes an entry; its write batch is executed late
	 * by a forked executor (DM_FAULT_LATE); meanwhile b takes over (w3).
	 * The control run without a takeover shows the late batch does land.
	 * Deletes never split, so the write batch is the delete's last step.
	 */
	if (tr->backend == DM_BACKEND_TCP)
	{
		for (int takeover = 0; takeover <= 1; takeover++)
		{
			dm_entry	warm = key_entry((uint64_t) (1000 + 2 * takeover)),
						probe = key_entry((uint64_t) (1001 + 2 * takeover));
			int			p[2], found = -1, status = 0;
			char		byte = 0;
			pid_t		pid;

			if (pipe(p) != 0 || (pid = fork()) < 0)
			{
				CHECK(0, "%s: fork the late writer", tr->name);
				break;
			}
			if (pid == 0)
			{
				dm_client  *cc = connect_client(tr);
				dm_tree    *c = NULL;
				uint64_t	s0, per;
				dm_fault	f;
				int			code = 0;

				if (!cc || dm_tree_open_existing(cc, 1, &tn, &c) != DM_OK)
					_exit(2);
				s0 = dm_client_steps(cc);
				if (dm_tree_delete(c, warm, NULL) != DM_OK)
					_exit(3);
				per = dm_client_steps(cc) - s0;
				memset(&f, 0, sizeof(f));
				f.action = DM_FAULT_LATE;
				f.at = per;		/* relative: the last step of the next delete */
				f.ms = 400;
				dm_client_set_fault(cc, &f);
				rc = dm_tree_delete(c, probe, NULL);
				if (rc != DM_ERR_TIMEOUT && rc != DM_ERR_CLOSED)
					code = 4;
				if (write(p[1], &byte, 1) != 1)
					code = 5;
				while (wait(NULL) > 0 || errno == EINTR)
					;			/* the late executor has sent its batch */
				_exit(code);
			}
			close(p[1]);
			if (read(p[0], &byte, 1) == 1 && takeover)
			{
				uint64_t	w3 = DM_WRITER_MAKE(3, 0xD);

				CHECK(dm_tree_writer_takeover(b, w2, w3, 200, &seen) == DM_OK && seen == w2,
					  "%s: takeover while a delete is in flight", tr->name);
				w2 = w3;
			}
			close(p[0]);
			waitpid(pid, &status, 0);
			m_delete(&m, warm);
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				  "%s%s: the delete's write batch was held back (child status %d)",
				  tr->name, takeover ? "" : " control", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			usleep(100 * 1000);
			if (dm_tree_contains(b, probe, &found) != DM_OK)
				found = -1;
			if (takeover)
				CHECK(found == 1, "%s: the late delete landed nothing after the takeover", tr->name);
			else
			{
				CHECK(found == 0, "%s control: without a takeover the late delete lands", tr->name);
				m_delete(&m, probe);
			}
			/* a fenced late batch never ran its unlock: the lock is taken over after its timeout */
			rc = dm_tree_insert(b, key_entry((uint64_t) (1000 + 2 * takeover)), NULL);
			m_insert(&m, warm);
			CHECK_STATUS(rc, DM_OK, "%s: the writer writes that leaf afterwards", tr->name);
			CHECK(same_as_model(b, &m, "late write"), "%s: tree = model; verifies", tr->name);
		}
	}

	CHECK_STATUS(dm_tree_destroy(b), DM_OK, "%s: the current writer frees the tree", tr->name);
	dm_tree_close(a);
	dm_client_destroy(ca);
	dm_client_destroy(cb);
	m_free(&m);
}

/*
 * Reclamation behind the fence: an old writer (fenced off by a takeover)
 * can neither take empty leaves out (dm_tree_reclaim), nor push to, pop
 * from or install the tree's reuse list (meta word 12), nor write a reused
 * node.  Its attempts fail with DM_ERR_FENCED and change nothing: the
 * reuse list keeps the same nodes, the tree the same nodes and entries.
 * The new writer then reclaims and reuses as usual.  Before the reuse list
 * was fenced, the old writer's split popped a free node (CAS on its slot)
 * and then failed to write it: the node was gone from the list for good.
 */
static int
same_addrs(dm_tree *t, const dm_gaddr *want, int nwant)
{
	dm_gaddr	got[512];
	int			n = 0;

	if (dm_tree_reuse_list(t, got, 512, &n) != DM_OK || n != nwant || n > 512)
		return 0;
	for (int i = 0; i < n; i++)
		if (got[i] != want[i])
			return 0;
	return 1;
}

static void
reclaim_fenced(const transport *tr)
{
	dm_client  *ca = connect_client(tr), *cb = connect_client(tr);
	dm_tree_opts o;
	dm_tree_name tn;
	dm_tree_info info;
	dm_tree    *a = NULL, *b = NULL;
	dm_reclaim_result res;
	dm_tree_stats st0, st1;
	dm_gaddr	free0[512];
	model		m = {0};
	uint64_t	w1 = DM_WRITER_MAKE(1, 0xA), w2 = DM_WRITER_MAKE(2, 0xB), seen, word12 = 1;
	int			rc = DM_OK, nfree0 = 0;
	char		name[64];

	if (!CHECK(ca && cb, "%s: reclaim: two clients", tr->name))
		return;
	for (int pass = 0; pass < 2; pass++)
	{
		/* pass 0: the list exists when the old writer is fenced; pass 1: it does not yet */
		snprintf(name, sizeof(name), "fence-reclaim-%s-%d", tr->name, pass);
		dm_tree_name_named(&tn, name);
		memset(&o, 0, sizeof(o));
		o.node_size = NODE_SIZE;
		o.lock_timeout_ms = LOCK_TIMEOUT_MS;
		o.writer = w1;
		m.n = 0;
		rc = dm_tree_create_new(ca, 1, &tn, &o, &a);
		for (uint64_t k = 0; k < 400 && rc == DM_OK; k++)
		{
			rc = dm_tree_insert(a, key_entry(k), NULL);
			m_insert(&m, key_entry(k));
		}
		for (uint64_t k = 100; k < 300 && rc == DM_OK; k++)
		{
			rc = dm_tree_delete(a, key_entry(k), NULL);
			m_delete(&m, key_entry(k));
		}
		if (pass == 0 && rc == DM_OK && (rc = dm_tree_reclaim(a, &res)) == DM_OK)
		{
			CHECK(res.leaves_reclaimed > 0, "%s: reclaim: the writer reclaims %" PRIu64 " empty leaves",
				  tr->name, res.leaves_reclaimed);
			/* more empty leaves, left for later */
			for (uint64_t k = 300; k < 360 && rc == DM_OK; k++)
			{
				rc = dm_tree_delete(a, key_entry(k), NULL);
				m_delete(&m, key_entry(k));
			}
		}
		CHECK_STATUS(rc, DM_OK, "%s: reclaim pass %d: 400 inserts, deletes leaving empty leaves", tr->name, pass);
		if (rc != DM_OK)
			break;

		/* b takes over */
		rc = dm_tree_open_existing(cb, 1, &tn, &b);
		if (rc == DM_OK)
			rc = dm_tree_writer_takeover(b, w1, w2, 0, &seen);
		CHECK(rc == DM_OK && seen == w1, "%s: reclaim pass %d: another handle takes the tree over", tr->name, pass);
		if (rc != DM_OK || dm_tree_stats_get(b, &st0) != DM_OK ||
			dm_tree_reuse_list(b, free0, 512, &nfree0) != DM_OK || nfree0 > 512)
		{
			CHECK(0, "%s: reclaim pass %d: state before", tr->name, pass);
			break;
		}
		CHECK(pass == 1 || nfree0 > 0, "%s: reclaim pass %d: %d free nodes in the reuse list", tr->name, pass, nfree0);

		/* the old writer: reclaim, and splits that would pop free nodes */
		CHECK_STATUS(dm_tree_reclaim(a, &res), DM_ERR_FENCED, "%s: reclaim pass %d: the old writer's reclaim is "
					 "refused", tr->name, pass);
		{
			dm_entry	batch[100];
			int			changed = -1;

			for (int i = 0; i < 100; i++)
				batch[i] = key_entry(5000 + (uint64_t) i);	/* one region: splits */
			CHECK_STATUS(dm_tree_insert_sorted(a, batch, 100, &changed), DM_ERR_FENCED,
						 "%s: reclaim pass %d: the old writer's splitting batch is refused", tr->name, pass);
		}
		CHECK(same_addrs(b, free0, nfree0), "%s: reclaim pass %d: the reuse list is unchanged (%d free nodes)",
			  tr->name, pass, nfree0);
		if (pass == 1)
		{
			if (dm_tree_open(cb, 1, &tn, &info) != DM_OK || dm_read(cb, info.meta_addr + 8 * 11, &word12, 8) != DM_OK)
				word12 = 1;
			CHECK(word12 == 0, "%s: reclaim: the old writer installed no reuse list (meta word 12 = %" PRIx64 ")",
				  tr->name, word12);
		}
		if (dm_tree_stats_get(b, &st1) != DM_OK)
			memset(&st1, 0, sizeof(st1));
		CHECK(st1.nodes[0] == st0.nodes[0] && st1.nodes[1] == st0.nodes[1] && st1.half_dead == 0,
			  "%s: reclaim pass %d: the tree has the same nodes (%" PRIu64 " leaves, none half-dead)",
			  tr->name, pass, st1.nodes[0]);
		CHECK(same_as_model(b, &m, "fenced reclaim"), "%s: reclaim pass %d: tree = model; verifies", tr->name, pass);

		/* the new writer reclaims and reuses */
		rc = dm_tree_reclaim(b, &res);
		CHECK(rc == DM_OK && res.leaves_reclaimed > 0, "%s: reclaim pass %d: the new writer reclaims %" PRIu64
			  " leaves", tr->name, pass, res.leaves_reclaimed);
		for (uint64_t k = 6000; k < 6200 && rc == DM_OK; k++)
		{
			rc = dm_tree_insert(b, key_entry(k), NULL);
			m_insert(&m, key_entry(k));
		}
		{
			dm_tree_counters ctr;

			dm_tree_get_counters(b, &ctr);
			CHECK(rc == DM_OK && ctr.nodes_reused > 0, "%s: reclaim pass %d: its splits reuse %" PRIu64
				  " freed nodes", tr->name, pass, ctr.nodes_reused);
		}
		CHECK(same_as_model(b, &m, "new writer reclaims"), "%s: reclaim pass %d: tree = model; verifies",
			  tr->name, pass);
		dm_tree_close(a);
		CHECK_STATUS(dm_tree_destroy(b), DM_OK, "%s: reclaim pass %d: free the tree", tr->name, pass);
		a = b = NULL;
	}
	dm_client_destroy(ca);
	dm_client_destroy(cb);
	m_free(&m);
}

int
main(void)
{
	const char *const args1[] = {"--id", "1", "--shm", "--size", "64M", "--chunk-size", "1M", NULL};
	const char *const args2[] = {"--id", "2", "--shm", "--size", "64M", "--chunk-size", "1M", NULL};
	const transport trs[] = {{"tcp", DM_BACKEND_TCP}, {"shm", DM_BACKEND_SHM}, {"ucx", DM_BACKEND_UCX}};

	if (memnode_start(&mn1, 0, args1) != 0 || memnode_start(&mn2, 0, args2) != 0)
	{
		CHECK(0, "start two memnodes");
		return tap_done();
	}
	for (size_t i = 0; i < sizeof(trs) / sizeof(trs[0]); i++)
		if (test_backend_wanted(trs[i].backend))
		{
			run(&trs[i]);
			reclaim_fenced(&trs[i]);
		}
	CHECK(WIFEXITED(memnode_stop(&mn1, SIGTERM)) && WIFEXITED(memnode_stop(&mn2, SIGTERM)),
		  "memnodes exit on SIGTERM");
	return tap_done();
}
