/*
 * test_tree_alloc.c — where tree nodes come from (src/dm/dm_tree_alloc.c
 * and the memnode's slab allocator) with a real memnode: many short
 * sessions, as PostgreSQL backends that connect, insert a little and exit,
 * must not make the memnode's use grow beyond the tree's own size by more
 * than the bounded rest of each session's last grant; returned rests are
 * reused; concurrent sessions never get the same node.
 *
 * The memnode's byte count (dm_node_stats.bytes_in_use) is checked exactly:
 *   bytes_in_use == node_size * (nodes reachable in the tree
 *                               + nodes granted to sessions and not used
 *                               + retired nodes)
 * where a session's unused grant is computed from its own counters (nodes
 * it allocated = splits + root grows; grants run 1, 2, 4, 8, 16, 16, ...
 * nodes) unless it gave the rest back.  A node handed out twice would break
 * the tree (verify, model) or the count.
 *
 * Sections: sequential short sessions over tcp and shm without giving
 * anything back (the PostgreSQL case: dm_tree_close is local); the same
 * with dm_tree_alloc_release (everything reused: use == tree size);
 * concurrent sessions in several processes with a scanner, then verify and
 * model; a bulk load (its large grant's rest goes back).
 * TREE_SCALE=<percent> scales the session counts; TREE_SEED the keys.
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

#include "dm_client.h"
#include "dm_region.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testutil.h"

#define NODE_SIZE 256			/* 10 entries a leaf: sessions split often */
#define PER_SESSION 3			/* entries a session inserts */
#define NPROC 4					/* concurrent session processes */
#define GRANT_MAX 16			/* dm_tree_alloc.c's DM_GRANT_MAX */

static memnode_proc mn;
static uint64_t g_seed = 1;
static int	g_scale = 100;

static dm_client *
connect_client(int backend, const char *name)
{
	return test_client_connect(backend, 0, 30000, name, mn.addr, NULL);
}

/* Nodes granted to a handle that allocated k nodes (grants 1, 2, 4, ..., GRANT_MAX). */
static uint64_t
granted_for(uint64_t k)
{
	uint64_t	granted = 0,
				next = 1;

	while (granted < k)
	{
		granted += next;
		next = next * 2 > GRANT_MAX ? GRANT_MAX : next * 2;
	}
	return granted;
}

/*
 * One short session: connect, open the tree, insert PER_SESSION entries,
 * optionally give the grant's rest back, close, disconnect.  Returns the
 * nodes it stranded (granted and unused, not given back), or -1.
 */
/* nodes of redo slots (two nodes each, dm_tree_io.c) left by sessions that did not give back: not grants */
static uint64_t g_redo_stranded;

static int64_t
session(int backend, const dm_tree_name *tn, uint64_t tid, int give_back, model *m, uint64_t *allocated)
{
	dm_client  *c = connect_client(backend, "test_tree_alloc session");
	dm_tree    *t = NULL;
	dm_tree_counters ctr;
	int64_t		stranded = -1;

	if (c == NULL)
		return -1;
	if (dm_tree_open_existing(c, 1, tn, &t) != DM_OK)
		goto out;
	for (int i = 0; i < PER_SESSION; i++)
	{
		dm_entry	e = dm_entry_make(rnd_below(1000000), tid * PER_SESSION + (uint64_t) i);

		if (dm_tree_insert(t, e, NULL) != DM_OK)
		{
			tap_diag("session insert: %s", dm_tree_error(t));
			goto out;
		}
		if (m)
			m_insert(m, e);
	}
	dm_tree_get_counters(t, &ctr);
	if (allocated)
		*allocated = ctr.splits + ctr.root_grows + ctr.nodes_unlinked;
	if (give_back)
	{
		if (dm_tree_alloc_release(t) != DM_OK)
		{
			tap_diag("release: %s", dm_tree_error(t));
			goto out;
		}
		stranded = (int64_t) ctr.nodes_unlinked;	/* used, never linked: not given back */
	}
	else
	{
		/* + the redo slot (two nodes) a handle writing over shm holds (dm_tree_io.c) until it gives back */
		stranded = (int64_t) (granted_for(ctr.splits + ctr.root_grows + ctr.nodes_unlinked) -
							  (ctr.splits + ctr.root_grows) + 2 * ctr.redo_slots);
		g_redo_stranded += 2 * ctr.redo_slots;
	}
out:
	dm_tree_close(t);
	dm_client_destroy(c);
	return stranded;
}

static dm_tree *
create_tree(dm_client *c, const char *name, dm_tree_name *tn)
{
	dm_tree_opts o;
	dm_tree    *t = NULL;

	memset(&o, 0, sizeof(o));
	o.node_size = NODE_SIZE;
	dm_tree_name_named(tn, name);
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, tn, &o, &t), DM_OK, "%s: create tree", name))
		return NULL;
	return t;
}

/* Sequential sessions; give_back: each returns its grant's rest before closing. */
static void
run_sessions(int backend, const char *bname, int give_back, int nsessions)
{
	char		name[64];
	dm_client  *c = connect_client(backend, "test_tree_alloc");
	dm_tree_name tn;
	dm_tree    *t;
	model		m = {0};
	uint64_t	stranded = 0,
				redo = 0,
				base,
				use,
				nodes,
				allocating = 0;
	int			bad = 0;

	snprintf(name, sizeof(name), "sessions %s%s", bname, give_back ? " give-back" : "");
	if (!CHECK(c != NULL, "%s: client connects", name))
		return;
	base = memnode_bytes_in_use(c, 1);
	rng_seed_label(g_seed, name, 0);
	if ((t = create_tree(c, name, &tn)) == NULL)
	{
		dm_client_destroy(c);
		return;
	}
	dm_tree_close(t);			/* the creating handle took one node (the root) */
	redo = g_redo_stranded;
	for (int s = 0; s < nsessions && !bad; s++)
	{
		uint64_t	k = 0;
		int64_t		st = session(backend, &tn, (uint64_t) s, give_back, &m, &k);

		if (st < 0)
			bad = 1;
		else
			stranded += (uint64_t) st;
		allocating += k > 0;
	}
	CHECK(!bad, "%s: %d sessions of %d inserts each, every one in a new connection", name, nsessions, PER_SESSION);
	if (dm_tree_open_existing(c, 1, &tn, &t) != DM_OK)
	{
		CHECK(0, "%s: reopen", name);
		dm_client_destroy(c);
		return;
	}
	redo = g_redo_stranded - redo;
	tree_matches_model(t, &m, 0, name);
	use = memnode_bytes_in_use(c, 1) - base;
	nodes = tree_node_count(t, NULL, NULL);
	CHECK(use == (uint64_t) NODE_SIZE * (nodes + stranded),
		  "%s: memnode use %" PRIu64 " B = %d B x (%" PRIu64 " tree nodes + %" PRIu64 " granted, unused)",
		  name, use, NODE_SIZE, nodes, stranded);
	if (give_back)
		CHECK(stranded == 0 && use == (uint64_t) NODE_SIZE * nodes,
			  "%s: everything given back was reused: use is exactly the tree", name);
	else
		CHECK(stranded - redo < (uint64_t) nsessions * GRANT_MAX && stranded - redo <= nodes,
			  "%s: stranded %" PRIu64 " nodes of grants: under %d per session and no more than the tree (%" PRIu64 ")"
			  " (+ %" PRIu64 " nodes of redo slots, one slot per session that wrote over shm)",
			  name, stranded - redo, GRANT_MAX, nodes, redo);
	/* before grants: every session that allocated took a 64 KiB slab of its own */
	tap_diag("%s: %d sessions (%" PRIu64 " of them allocated), tree %" PRIu64 " nodes, memnode use %" PRIu64 " KiB "
			 "(one 64 KiB slab per allocating session: %" PRIu64 " KiB)",
			 name, nsessions, allocating, nodes, use >> 10, allocating * 64);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", name);
	CHECK(memnode_bytes_in_use(c, 1) == base, "%s: dropping the tree frees all of it", name);
	m_free(&m);
	dm_client_destroy(c);
}

/*
 * NPROC processes run short sessions at once (each its own tid range),
 * half of them giving their rest back, while a scanner checks order.
 * Stranded counts come back through shared memory.
 */
static void
run_concurrent(int nsessions)
{
	const char *name = "concurrent sessions";
	dm_client  *c = connect_client(DM_BACKEND_SHM, "test_tree_alloc");
	dm_tree_name tn;
	dm_tree    *t;
	volatile int64_t *shared;
	pid_t		pids[NPROC + 1];
	model		m = {0};
	uint64_t	stranded = 0,
				base,
				use,
				nodes;
	int			bad = 0;

	if (!CHECK(c != NULL, "%s: client connects", name))
		return;
	base = memnode_bytes_in_use(c, 1);
	if ((t = create_tree(c, name, &tn)) == NULL)
	{
		dm_client_destroy(c);
		return;
	}
	dm_tree_close(t);
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	memset((void *) shared, 0, 4096);
	for (int p = 0; p <= NPROC; p++)
	{
		if ((pids[p] = fork()) == 0)
		{
			if (p == NPROC)
			{
				/* the scanner: ordered, until the writers are done */
				dm_client  *sc = connect_client(DM_BACKEND_SHM, "scanner");
				dm_tree    *st = NULL;
				int			ok = sc && dm_tree_open_existing(sc, 1, &tn, &st) == DM_OK;
				int64_t		scans = 0;

				/* at least one scan, even if the writers are done before it connected (slow builds) */
				while (ok && (scans == 0 || shared[NPROC + 1] < NPROC))
				{
					dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, (int) (scans & 1)};
					dm_iter    *it;
					dm_entry	e, prev = {0, 0};
					int			rc, n = 0;

					if (dm_iter_open(st, &r, &it) != DM_OK)
					{
						ok = 0;
						break;
					}
					while ((rc = dm_iter_next(it, &e)) == 1)
					{
						if (n++ > 0 && dm_entry_cmp(e, prev) * (r.backward ? -1 : 1) <= 0)
							ok = 0;
						prev = e;
					}
					if (rc < 0)
						ok = 0;
					dm_iter_close(it);
					scans++;
				}
				shared[NPROC + 2] = ok ? scans : -1;
				_exit(0);
			}
			rng_seed_label(g_seed, name, (uint64_t) p);
			for (int s = 0; s < nsessions; s++)
			{
				int			give = (int) rnd_below(2);
				int64_t		st = session(DM_BACKEND_SHM, &tn, (uint64_t) (p + 1) * 1000000 + (uint64_t) s, give, NULL, NULL);

				if (st < 0)
				{
					shared[p] = -1;
					break;
				}
				shared[p] += st;
			}
			__atomic_add_fetch(&shared[NPROC + 1], 1, __ATOMIC_SEQ_CST);
			_exit(0);
		}
	}
	for (int p = 0; p <= NPROC; p++)
	{
		int			status;

		waitpid(pids[p], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad = 1;
	}
	for (int p = 0; p < NPROC; p++)
	{
		if (shared[p] < 0)
			bad = 1;
		else
			stranded += (uint64_t) shared[p];
	}
	CHECK(!bad, "%s: %d processes x %d sessions ran", name, NPROC, nsessions);
	CHECK(shared[NPROC + 2] > 0, "%s: the scanner saw every scan ordered (%" PRId64 " scans)", name,
		  (int64_t) shared[NPROC + 2]);
	/* the model: replay every process's stream of keys */
	for (int p = 0; p < NPROC; p++)
	{
		rng_seed_label(g_seed, name, (uint64_t) p);
		for (int s = 0; s < nsessions; s++)
		{
			uint64_t	tid = (uint64_t) (p + 1) * 1000000 + (uint64_t) s;

			(void) rnd_below(2);
			for (int i = 0; i < PER_SESSION; i++)
			{
				uint64_t	key = rnd_below(1000000);

				m_insert(&m, dm_entry_make(key, tid * PER_SESSION + (uint64_t) i));
			}
		}
	}
	if (dm_tree_open_existing(c, 1, &tn, &t) == DM_OK)
	{
		tree_matches_model(t, &m, 0, name);
		use = memnode_bytes_in_use(c, 1) - base;
		nodes = tree_node_count(t, NULL, NULL);
		CHECK(use == (uint64_t) NODE_SIZE * (nodes + stranded),
			  "%s: memnode use %" PRIu64 " B = %d B x (%" PRIu64 " tree nodes + %" PRIu64 " granted, unused): "
			  "no node was handed out twice", name, use, NODE_SIZE, nodes, stranded);
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", name);
	}
	else
		CHECK(0, "%s: reopen", name);
	munmap((void *) shared, 4096);
	m_free(&m);
	dm_client_destroy(c);
}

/* Bulk load: large grants while it runs, the rest given back at the end. */
static void
run_bulk(int n)
{
	const char *name = "bulk load";
	dm_client  *c = connect_client(DM_BACKEND_SHM, "test_tree_alloc");
	dm_tree_name tn;
	dm_tree    *t;
	dm_bulk    *b;
	dm_entry   *e = malloc(sizeof(*e) * (size_t) n);
	model		m = {0};
	uint64_t	base,
				use,
				nodes;

	if (!CHECK(c != NULL && e != NULL, "%s: client connects", name))
		return;
	base = memnode_bytes_in_use(c, 1);
	if ((t = create_tree(c, name, &tn)) == NULL)
		return;
	for (int i = 0; i < n; i++)
		e[i] = dm_entry_make((uint64_t) i * 3, 7);
	CHECK(dm_tree_bulk_begin(t, 90, &b) == DM_OK && dm_bulk_add(b, e, n) == DM_OK && dm_bulk_finish(b) == DM_OK,
		  "%s: %d entries loaded", name, n);
	for (int i = 0; i < n; i++)
		m_insert(&m, e[i]);
	tree_matches_model(t, &m, 0, name);
	use = memnode_bytes_in_use(c, 1) - base;
	nodes = tree_node_count(t, NULL, NULL);
	/* + the empty root the load replaced (retired, still allocated) */
	CHECK(use == (uint64_t) NODE_SIZE * (nodes + 1),
		  "%s: memnode use %" PRIu64 " B = %d B x (%" PRIu64 " tree nodes + the retired root): the rest of the last grant went back",
		  name, use, NODE_SIZE, nodes);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", name);
	free(e);
	m_free(&m);
	dm_client_destroy(c);
}

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "256M", "--chunk-size", "1M", NULL};
	uint64_t	t0 = now_ns();
	int			n;

	tree_test_env(&g_seed, &g_scale);
	n = 2000 * g_scale / 100;
	if (n < 20)
		n = 20;
	if (memnode_start(&mn, 0, args) != 0)
	{
		CHECK(0, "start memnode (id 1, 256M, --shm)");
		return tap_done();
	}
	run_sessions(DM_BACKEND_SHM, "shm", 0, n);
	run_sessions(DM_BACKEND_TCP, "tcp", 0, n / 4);
	run_sessions(DM_BACKEND_SHM, "shm", 1, n / 2);
	run_concurrent(n / 8);
	run_bulk(50000);
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	tap_diag("total %.1f s", (now_ns() - t0) / 1e9);
	return tap_done();
}
