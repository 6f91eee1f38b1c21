/*
 * test_atomic.c — atomicity of one-sided operations across processes, over
 * both transports (tcp: the memnode executes; shm: clients execute on the
 * mapped region), with and without tear mode:
 *   (a) K processes x M fetch-and-add on one word sum up exactly;
 *   (b) a CAS spin lock gives mutual exclusion (a non-atomic counter
 *       updated inside the lock by READ + WRITE comes out exact);
 *   (c) a single batch of mixed ops returns the right results, and a batch
 *       spanning two memnodes is routed by the node id of each address;
 *   (d) tear mode really tears 1 KiB reads over shm, while without it no
 *       aligned 8-byte word is ever torn.
 * Every child process creates its own dm_client: a client is never shared
 * across fork.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_region.h"
#include "testutil.h"

#define K 4						/* processes */

/* Child exit codes. */
#define CHILD_OK 0
#define CHILD_VIOLATION 1
#define CHILD_ERROR 2

/* Word offsets inside the test chunk (distinct cache lines). */
#define OFF_FAA 0
#define OFF_LOCK 64
#define OFF_INCS 128
#define OFF_COUNTER 192
#define OFF_READY_FAA 256		/* start barriers: see start_barrier() */
#define OFF_GO_FAA 320
#define OFF_READY_LOCK 384
#define OFF_GO_LOCK 448
#define OFF_MAX 512
#define OFF_READY_MAX 576
#define OFF_GO_MAX 640
#define OFF_BATCH 4096
#define OFF_TEAR 8192			/* 1 KiB pattern area */
#define OFF_TEAR_STOP 16384
#define TEAR_BYTES 1024

typedef struct config
{
	const char *name;
	int			backend;
	uint32_t	flags;
} config;

static const config configs[] = {
	{"tcp", DM_BACKEND_TCP, 0},
	{"shm", DM_BACKEND_SHM, 0},
	{"tcp+tear", DM_BACKEND_TCP, DM_CLIENT_TEAR},
	{"shm+tear", DM_BACKEND_SHM, DM_CLIENT_TEAR},
	{"ucx", DM_BACKEND_UCX, 0},	/* the ucx variant only (test_backend_wanted) */
	{"ucx+tear", DM_BACKEND_UCX, DM_CLIENT_TEAR},
};

static memnode_proc mn1,
			mn2;

/* A client connected to one or two memnodes, or NULL (diagnostic printed). */
static dm_client *
connect_client(const config *cf, const char *addr1, const char *addr2)
{
	return test_client_connect(cf->backend, cf->flags, 20000, "test_atomic", addr1, addr2);
}

/*
 * Wait for n children, at most timeout_s seconds in all; children still
 * running then are killed (and count as failed).  Returns the number of
 * children that did not exit with CHILD_OK; codes[] gets each exit code
 * (or 100 + signal).
 */
static int
wait_children(pid_t *pids, int n, int timeout_s, int *codes)
{
	uint64_t	deadline = now_ns() + (uint64_t) timeout_s * 1000000000u;
	int			left = n,
				bad = 0;

	for (int i = 0; i < n; i++)
		codes[i] = -1;
	while (left > 0)
	{
		int			st;
		pid_t		p = waitpid(-1, &st, WNOHANG);

		if (p > 0)
		{
			for (int i = 0; i < n; i++)
				if (pids[i] == p)
				{
					codes[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
					if (codes[i] != CHILD_OK)
						bad++;
					left--;
				}
			continue;
		}
		if (p < 0 && errno != EINTR)
			break;
		if (now_ns() > deadline)
		{
			tap_diag("children still running after %d s: killing them", timeout_s);
			for (int i = 0; i < n; i++)
				if (codes[i] == -1)
				{
					kill(pids[i], SIGKILL);
					waitpid(pids[i], NULL, 0);
					codes[i] = 100 + SIGKILL;
					bad++;
				}
			break;
		}
		usleep(1000);
	}
	return bad;
}

/*
 * Start barrier.  Forking and connecting takes longer than a child's whole
 * workload over shm, so without it the children would run one after the
 * other and prove nothing about concurrency: each child checks in (FAA on
 * the ready word) and waits for the go word, which the parent sets once
 * all K have checked in.
 */
static int
child_barrier(dm_client *c, dm_gaddr chunk, uint64_t ready_off, uint64_t go_off)
{
	uint64_t	go = 0,
				deadline = now_ns() + UINT64_C(30000000000);
	int			rc;

	if ((rc = dm_faa(c, chunk + ready_off, 1, NULL)) != DM_OK)
		return rc;
	while (go == 0)
	{
		if ((rc = dm_read(c, chunk + go_off, &go, 8)) != DM_OK)
			return rc;
		if (now_ns() > deadline)
			return DM_ERR_TIMEOUT;
		sched_yield();
	}
	return DM_OK;
}

/* Parent side: wait until all n children checked in, then let them go. */
static int
release_children(dm_client *c, dm_gaddr chunk, uint64_t ready_off, uint64_t go_off, int n)
{
	uint64_t	ready = 0,
				one = 1,
				deadline = now_ns() + UINT64_C(30000000000);

	while (ready < (uint64_t) n && now_ns() < deadline)
	{
		if (dm_read(c, chunk + ready_off, &ready, 8) != DM_OK)
			break;
		if (ready < (uint64_t) n)
			usleep(200);
	}
	dm_write(c, chunk + go_off, &one, 8);	/* release even on failure: children must end */
	return ready == (uint64_t) n;
}

/* ---- (a) fetch-and-add -------------------------------------------------- */

static int
child_faa(const config *cf, dm_gaddr word, int m)
{
	dm_client  *c = connect_client(cf, mn1.addr, NULL);
	uint64_t	old;
	int			rc;

	if (!c)
		return CHILD_ERROR;
	if ((rc = child_barrier(c, word - OFF_FAA, OFF_READY_FAA, OFF_GO_FAA)) != DM_OK)
	{
		fprintf(stderr, "# faa barrier: %s: %s\n", dm_strerror(rc), dm_client_error(c));
		return CHILD_ERROR;
	}
	for (int i = 0; i < m; i++)
		if ((rc = dm_faa(c, word, 1, &old)) != DM_OK)
		{
			fprintf(stderr, "# faa: %s: %s\n", dm_strerror(rc), dm_client_error(c));
			return CHILD_ERROR;
		}
	dm_client_destroy(c);
	return CHILD_OK;
}

static void
test_faa(const config *cf, dm_client *c, dm_gaddr chunk)
{
	int			m = cf->backend == DM_BACKEND_SHM ? 20000 : 3000;
	pid_t		pids[K];
	int			codes[K];
	uint64_t	v = 0,
				t0 = now_ns();
	int			bad;

	for (int i = 0; i < K; i++)
		if ((pids[i] = test_fork()) == 0)
			_exit(child_faa(cf, chunk + OFF_FAA, m));
	CHECK(release_children(c, chunk, OFF_READY_FAA, OFF_GO_FAA, K), "%s: all %d FAA children started", cf->name, K);
	t0 = now_ns();
	bad = wait_children(pids, K, 120, codes);
	CHECK(bad == 0, "%s: %d FAA children finished cleanly", cf->name, K);
	CHECK_STATUS(dm_read(c, chunk + OFF_FAA, &v, 8), DM_OK, "%s: read FAA word", cf->name);
	CHECK(v == (uint64_t) K * m, "%s: FAA word = %d x %d = %d (got %" PRIu64 ")",
		  cf->name, K, m, K * m, v);
	tap_diag("%s: %d x %d FAA in %.2f s", cf->name, K, m, (now_ns() - t0) / 1e9);
}

/* ---- (a') fetch-and-max ------------------------------------------------- */

/*
 * Each child raises the word to i*K + id for i = 0..m-1.  If the max were
 * a read and a write, a lower value could overwrite a higher one: the old
 * values a child sees would then go down, and the end value could be less
 * than the highest value anyone wrote.
 */
static int
child_max(const config *cf, dm_gaddr chunk, int id, int m)
{
	dm_client  *c = connect_client(cf, mn1.addr, NULL);
	uint64_t	old,
				seen = 0;
	int			rc,
				down = 0;

	if (!c)
		return CHILD_ERROR;
	if ((rc = child_barrier(c, chunk, OFF_READY_MAX, OFF_GO_MAX)) != DM_OK)
		goto fail;
	for (int i = 0; i < m; i++)
	{
		if ((rc = dm_fetch_max(c, chunk + OFF_MAX, (uint64_t) i * K + (uint64_t) id, &old)) != DM_OK)
			goto fail;
		if (old < seen)
			down++;
		seen = old;
	}
	dm_client_destroy(c);
	if (down)
		fprintf(stderr, "# max child %d saw the word go down %d times\n", id, down);
	return down ? CHILD_VIOLATION : CHILD_OK;
fail:
	fprintf(stderr, "# max child: %s: %s\n", dm_strerror(rc), dm_client_error(c));
	return CHILD_ERROR;
}

static void
test_fetch_max(const config *cf, dm_client *c, dm_gaddr chunk)
{
	int			m = cf->backend == DM_BACKEND_SHM ? 20000 : 2000;
	uint64_t	w = 100,
				old = 0;
	pid_t		pids[K];
	int			codes[K],
				bad;

	CHECK_STATUS(dm_write(c, chunk + OFF_MAX, &w, 8), DM_OK, "%s: max word = 100", cf->name);
	if (cf->backend == DM_BACKEND_UCX)
	{
		/* UCX has no such atomic: refused before anything is applied */
		CHECK_STATUS(dm_fetch_max(c, chunk + OFF_MAX, 300, &old), DM_ERR_INVALID, "%s: FETCH_MAX refused", cf->name);
		CHECK(dm_read(c, chunk + OFF_MAX, &w, 8) == DM_OK && w == 100, "%s: word unchanged (%" PRIu64 ")", cf->name, w);
		return;
	}
	CHECK(dm_fetch_max(c, chunk + OFF_MAX, 50, &old) == DM_OK && old == 100 &&
		  dm_read(c, chunk + OFF_MAX, &w, 8) == DM_OK && w == 100,
		  "%s: FETCH_MAX 50 on 100: old 100, word stays 100 (%" PRIu64 ")", cf->name, w);
	CHECK(dm_fetch_max(c, chunk + OFF_MAX, 300, &old) == DM_OK && old == 100 &&
		  dm_read(c, chunk + OFF_MAX, &w, 8) == DM_OK && w == 300,
		  "%s: FETCH_MAX 300 on 100: old 100, word 300 (%" PRIu64 ")", cf->name, w);
	CHECK(dm_fetch_max(c, chunk + OFF_MAX, UINT64_MAX - 1, &old) == DM_OK && old == 300 &&
		  dm_fetch_max(c, chunk + OFF_MAX, 5, &old) == DM_OK && old == UINT64_MAX - 1 &&
		  dm_read(c, chunk + OFF_MAX, &w, 8) == DM_OK && w == UINT64_MAX - 1,
		  "%s: FETCH_MAX compares unsigned (2^64-2 stays against 5)", cf->name);
	w = 0;
	CHECK_STATUS(dm_write(c, chunk + OFF_MAX, &w, 8), DM_OK, "%s: max word = 0", cf->name);
	for (int i = 0; i < K; i++)
		if ((pids[i] = test_fork()) == 0)
			_exit(child_max(cf, chunk, i, m));
	CHECK(release_children(c, chunk, OFF_READY_MAX, OFF_GO_MAX, K), "%s: all %d max children started", cf->name, K);
	bad = wait_children(pids, K, 120, codes);
	CHECK(bad == 0, "%s: %d FETCH_MAX children finished, none saw the word go down", cf->name, K);
	CHECK(dm_read(c, chunk + OFF_MAX, &w, 8) == DM_OK && w == (uint64_t) (m - 1) * K + (K - 1),
		  "%s: concurrent FETCH_MAX ends at the highest value raised, %d (got %" PRIu64 ")",
		  cf->name, (m - 1) * K + (K - 1), w);
}

/* ---- (b) CAS spin lock ---------------------------------------------------- */

static int
child_lock(const config *cf, dm_gaddr chunk, int m)
{
	dm_client  *c = connect_client(cf, mn1.addr, NULL);
	uint64_t	me = (uint64_t) getpid(),
				old,
				incs,
				cnt,
				one = 1,
				zero = 0;
	int			violations = 0,
				rc;

	if (!c)
		return CHILD_ERROR;
	if ((rc = child_barrier(c, chunk, OFF_READY_LOCK, OFF_GO_LOCK)) != DM_OK)
		goto fail;
	for (int i = 0; i < m; i++)
	{
		/* acquire */
		for (;;)
		{
			if ((rc = dm_cas(c, chunk + OFF_LOCK, 0, me, &old)) != DM_OK)
				goto fail;
			if (old == 0)
				break;
			/* two cores, four processes: let the holder run */
			sched_yield();
		}
		/* critical section: nobody else may be in here */
		if ((rc = dm_read(c, chunk + OFF_INCS, &incs, 8)) != DM_OK)
			goto fail;
		if (incs != 0)
			violations++;
		if ((rc = dm_write(c, chunk + OFF_INCS, &one, 8)) != DM_OK)
			goto fail;
		/* non-atomic increment: only correct under mutual exclusion */
		if ((rc = dm_read(c, chunk + OFF_COUNTER, &cnt, 8)) != DM_OK)
			goto fail;
		cnt++;
		if ((rc = dm_write(c, chunk + OFF_COUNTER, &cnt, 8)) != DM_OK)
			goto fail;
		if ((rc = dm_write(c, chunk + OFF_INCS, &zero, 8)) != DM_OK)
			goto fail;
		/* release: the lock must still be ours */
		if ((rc = dm_cas(c, chunk + OFF_LOCK, me, 0, &old)) != DM_OK)
			goto fail;
		if (old != me)
			violations++;
	}
	dm_client_destroy(c);
	if (violations)
		fprintf(stderr, "# lock child %d saw %d violations\n", (int) getpid(), violations);
	return violations ? CHILD_VIOLATION : CHILD_OK;
fail:
	fprintf(stderr, "# lock child: %s: %s\n", dm_strerror(rc), dm_client_error(c));
	return CHILD_ERROR;
}

static void
test_lock(const config *cf, dm_client *c, dm_gaddr chunk)
{
	int			m = cf->backend == DM_BACKEND_SHM ? 20000 : 500;
	pid_t		pids[K];
	int			codes[K];
	uint64_t	words[3],
				t0 = now_ns();
	int			bad,
				viol = 0;

	for (int i = 0; i < K; i++)
		if ((pids[i] = test_fork()) == 0)
			_exit(child_lock(cf, chunk, m));
	CHECK(release_children(c, chunk, OFF_READY_LOCK, OFF_GO_LOCK, K), "%s: all %d lock children started", cf->name, K);
	t0 = now_ns();
	bad = wait_children(pids, K, 120, codes);
	for (int i = 0; i < K; i++)
		if (codes[i] == CHILD_VIOLATION)
			viol++;
	CHECK(viol == 0, "%s: no process saw another inside the CAS lock", cf->name);
	CHECK(bad == 0, "%s: %d lock children finished cleanly", cf->name, K);
	CHECK_STATUS(dm_read(c, chunk + OFF_LOCK, words, 8), DM_OK, "%s: read lock word", cf->name);
	CHECK_STATUS(dm_read(c, chunk + OFF_INCS, words + 1, 8), DM_OK, "%s: read in-CS word", cf->name);
	CHECK_STATUS(dm_read(c, chunk + OFF_COUNTER, words + 2, 8), DM_OK, "%s: read counter", cf->name);
	CHECK(words[0] == 0 && words[1] == 0, "%s: lock free and nobody inside at the end", cf->name);
	CHECK(words[2] == (uint64_t) K * m, "%s: non-atomic counter under lock = %d (got %" PRIu64 ")",
		  cf->name, K * m, words[2]);
	tap_diag("%s: %d x %d lock iterations in %.2f s", cf->name, K, m, (now_ns() - t0) / 1e9);
}

/* ---- (c) mixed batch, and batches over two memnodes ------------------------ */

static void
test_mixed_batch(const config *cf, dm_client *c, dm_gaddr chunk)
{
	dm_gaddr	b = chunk + OFF_BATCH;
	uint8_t		pat[16],
				rd16[16],
				rd3[3],
				rd13[13],
				five[5] = {0xF1, 0xF2, 0xF3, 0xF4, 0xF5},
				expect13[13];
	uint64_t	rdword = 0;
	dm_op		ops[11];
	dm_counters ctr;
	int			bad = 12345,
				rc;

	for (int i = 0; i < 16; i++)
		pat[i] = (uint8_t) (0x30 + i);
	memset(rd16, 0, sizeof(rd16));
	dm_op_write(&ops[0], b, pat, 16);
	dm_op_read(&ops[1], b, rd16, 16);	/* same batch: sees the write */
	dm_op_atomic(&ops[2], DM_OP_CAS, b + 64, 0, 11);	/* succeeds */
	dm_op_atomic(&ops[3], DM_OP_CAS, b + 64, 0, 22);	/* fails: word is 11 */
	dm_op_atomic(&ops[4], DM_OP_FAA, b + 64, 5, 0);	/* 11 -> 16 */
	dm_op_atomic(&ops[5], DM_OP_FETCH_OR, b + 64, 0x100, 0);	/* 16 -> 0x110 */
	dm_op_read(&ops[6], b + 64, &rdword, 8);
	dm_op_read(&ops[7], b + 1, rd3, 3);	/* unaligned, odd length */
	dm_op_write(&ops[8], b + 203, five, 5);	/* unaligned write */
	dm_op_read(&ops[9], b + 200, rd13, 13);
	dm_op_atomic(&ops[10], DM_OP_CAS, b + 64, 0x110, 0x220);	/* succeeds */

	dm_client_reset_counters(c);
	rc = dm_post(c, ops, 11, &bad);
	CHECK_STATUS(rc, DM_OK, "%s: mixed batch of 11 ops", cf->name);
	CHECK(bad == -1, "%s: bad_index -1 on success (got %d)", cf->name, bad);
	CHECK(memcmp(rd16, pat, 16) == 0, "%s: READ after WRITE in the same batch sees the data", cf->name);
	CHECK(ops[2].result == 0, "%s: CAS 0->11 succeeded (old 0, got %" PRIu64 ")", cf->name, ops[2].result);
	CHECK(ops[3].result == 11, "%s: CAS 0->22 failed, returning old 11 (got %" PRIu64 ")", cf->name, ops[3].result);
	CHECK(ops[4].result == 11, "%s: FAA +5 returned old 11 (got %" PRIu64 ")", cf->name, ops[4].result);
	CHECK(ops[5].result == 16, "%s: FETCH_OR returned old 16 (got %" PRIu64 ")", cf->name, ops[5].result);
	CHECK(rdword == 0x110, "%s: word is 0x110 after FAA and FETCH_OR (got 0x%" PRIx64 ")", cf->name, rdword);
	CHECK(memcmp(rd3, pat + 1, 3) == 0, "%s: unaligned 3-byte READ", cf->name);
	memset(expect13, 0, sizeof(expect13));
	memcpy(expect13 + 3, five, 5);
	CHECK(memcmp(rd13, expect13, 13) == 0, "%s: unaligned 5-byte WRITE landed exactly (and nothing around it)",
		  cf->name);
	CHECK(ops[10].result == 0x110, "%s: last CAS saw 0x110", cf->name);
	dm_client_counters(c, -1, &ctr);
	CHECK(ctr.round_trips == 1, "%s: one round trip for the batch (got %" PRIu64 ")", cf->name, ctr.round_trips);
	CHECK(ctr.ops[DM_OP_READ] == 4 && ctr.ops[DM_OP_WRITE] == 2 && ctr.ops[DM_OP_CAS] == 3 &&
		  ctr.ops[DM_OP_FAA] == 1 && ctr.ops[DM_OP_FETCH_OR] == 1,
		  "%s: op counters by kind", cf->name);
	CHECK(ctr.bytes_read == 16 + 8 + 3 + 13 && ctr.bytes_written == 16 + 5,
		  "%s: byte counters (read %" PRIu64 ", written %" PRIu64 ")", cf->name, ctr.bytes_read, ctr.bytes_written);
	rdword = 0;
	CHECK(dm_read(c, b + 64, &rdword, 8) == DM_OK && rdword == 0x220, "%s: final word 0x220", cf->name);
}

static void
test_two_nodes(const config *cf)
{
	dm_client  *c = connect_client(cf, mn1.addr, mn2.addr);
	dm_gaddr	ch1 = 0,
				ch2 = 0;
	uint64_t	sz = 0,
				w1 = 0,
				w2 = 0;
	char		p1[64],
				p2[64],
				r1[64],
				r2[64];
	dm_op		ops[6];
	dm_counters ctr;
	dm_node_info ni;
	int			rc,
				bad;

	if (!CHECK(c != NULL, "%s: client connected to memnodes 1 and 2", cf->name))
		return;
	CHECK(dm_client_nnodes(c) == 2, "%s: two connections", cf->name);
	CHECK(dm_client_node_info(c, 0, &ni) == DM_OK && ni.node_id == 1 && ni.backend == cf->backend,
		  "%s: node 0 is id 1 on the requested backend", cf->name);
	CHECK(dm_client_node_info(c, 1, &ni) == DM_OK && ni.node_id == 2 && ni.backend == cf->backend,
		  "%s: node 1 is id 2 on the requested backend", cf->name);
	CHECK_STATUS(dm_chunk_alloc(c, 1, 0x5151, &ch1, &sz), DM_OK, "%s: chunk on node 1", cf->name);
	CHECK_STATUS(dm_chunk_alloc(c, 2, 0x5252, &ch2, &sz), DM_OK, "%s: chunk on node 2", cf->name);
	CHECK(dm_gaddr_node(ch1) == 1 && dm_gaddr_node(ch2) == 2, "%s: chunk addresses carry their node ids", cf->name);
	if (!ch1 || !ch2)
	{
		dm_client_destroy(c);
		return;
	}

	memset(p1, 'A', sizeof(p1));
	memset(p2, 'B', sizeof(p2));
	snprintf(p1, sizeof(p1), "node one %s", cf->name);
	snprintf(p2, sizeof(p2), "node two %s", cf->name);
	/* Interleave the nodes in the array: routing is by each op's address. */
	dm_op_write(&ops[0], ch1 + 512, p1, sizeof(p1));
	dm_op_write(&ops[1], ch2 + 512, p2, sizeof(p2));
	dm_op_atomic(&ops[2], DM_OP_FAA, ch2 + 8, 7, 0);
	dm_op_atomic(&ops[3], DM_OP_FAA, ch1 + 8, 3, 0);
	dm_op_read(&ops[4], ch2 + 512, r2, sizeof(r2));
	dm_op_read(&ops[5], ch1 + 512, r1, sizeof(r1));
	dm_client_reset_counters(c);
	rc = dm_post(c, ops, 6, &bad);
	CHECK_STATUS(rc, DM_OK, "%s: batch over two memnodes", cf->name);
	CHECK(memcmp(r1, p1, sizeof(p1)) == 0 && memcmp(r2, p2, sizeof(p2)) == 0,
		  "%s: each node's read sees its own write", cf->name);
	dm_client_counters(c, -1, &ctr);
	CHECK(ctr.round_trips == 2, "%s: one round trip per memnode touched (got %" PRIu64 ")", cf->name,
		  ctr.round_trips);
	dm_client_counters(c, 1, &ctr);
	CHECK(ctr.ops[DM_OP_WRITE] == 1 && ctr.ops[DM_OP_FAA] == 1 && ctr.ops[DM_OP_READ] == 1,
		  "%s: node 1's counters count only its ops", cf->name);
	/* Same offsets, different nodes: separate memory. */
	rc = dm_read(c, ch1 + 8, &w1, 8);
	if (rc == DM_OK)
		rc = dm_read(c, ch2 + 8, &w2, 8);
	CHECK(rc == DM_OK && w1 == 3 && w2 == 7, "%s: FAA words per node: %" PRIu64 " and %" PRIu64 " (want 3 and 7)",
		  cf->name, w1, w2);
	if (dm_gaddr_offset(ch1) == dm_gaddr_offset(ch2))
		CHECK(memcmp(r1, r2, sizeof(r1)) != 0, "%s: same offset on two nodes holds different data", cf->name);
	CHECK_STATUS(dm_chunk_free(c, ch1), DM_OK, "%s: free node 1 chunk", cf->name);
	CHECK_STATUS(dm_chunk_free(c, ch2), DM_OK, "%s: free node 2 chunk", cf->name);
	/* An address on a node we are not connected to. */
	dm_op_read(&ops[0], ch1 + 512, r1, 8);
	dm_op_read(&ops[1], dm_gaddr_make(3, dm_gaddr_offset(ch1)), r1, 8);
	CHECK_STATUS(dm_post(c, ops, 2, &bad), DM_ERR_NOTFOUND, "%s: op on an unknown node id -> NOTFOUND", cf->name);
	CHECK(bad == 1, "%s: bad_index names it (got %d)", cf->name, bad);
	dm_client_destroy(c);
}

/* ---- (d) tear mode ---------------------------------------------------------- */

/* The 8-byte word of pattern generation g: checkable on its own. */
static uint64_t
pat_word(uint32_t g)
{
	return ((uint64_t) g << 32) | (uint32_t) ~g;
}

static int
pat_word_valid(uint64_t w)
{
	return (uint32_t) (w >> 32) == (uint32_t) ~(uint32_t) w;
}

/* Write generations 1, 2, 3, ... until the stop word is set (or 60 s). */
static int
child_tear_writer(const config *cf, dm_gaddr chunk)
{
	dm_client  *c = connect_client(cf, mn1.addr, NULL);
	uint64_t	buf[TEAR_BYTES / 8],
				stop = 0,
				t_end = now_ns() + UINT64_C(60000000000);
	int			rc;

	if (!c)
		return CHILD_ERROR;
	for (uint32_t g = 1;; g++)
	{
		for (int i = 0; i < TEAR_BYTES / 8; i++)
			buf[i] = pat_word(g);
		if ((rc = dm_write(c, chunk + OFF_TEAR, buf, TEAR_BYTES)) != DM_OK)
			goto fail;
		if ((g & 7) == 0)
		{
			if ((rc = dm_read(c, chunk + OFF_TEAR_STOP, &stop, 8)) != DM_OK)
				goto fail;
			if (stop || now_ns() > t_end)
				break;
		}
	}
	dm_client_destroy(c);
	return CHILD_OK;
fail:
	fprintf(stderr, "# tear writer: %s: %s\n", dm_strerror(rc), dm_client_error(c));
	return CHILD_ERROR;
}

/*
 * Read the 1 KiB area up to nreads times (stopping early once stop_after
 * torn reads were seen, if > 0) while a child writes patterns; count reads
 * mixing generations (torn) and words that are no pattern word at all (a
 * torn 8-byte word).  *done gets the number of reads made.
 */
static void
run_tear(const config *cf, dm_client *c, dm_gaddr chunk, int nreads, int stop_after,
		 int *torn, int *badwords, int *done)
{
	uint64_t	buf[TEAR_BYTES / 8],
				zero = 0,
				one = 1,
				first = 0;
	pid_t		pid;
	int			code,
				rc = DM_OK;
	uint64_t	deadline;

	*torn = *badwords = *done = 0;
	dm_write(c, chunk + OFF_TEAR_STOP, &zero, 8);
	dm_write(c, chunk + OFF_TEAR + TEAR_BYTES - 8, &zero, 8);
	if ((pid = test_fork()) == 0)
		_exit(child_tear_writer(cf, chunk));
	/*
	 * Start reading once the writer has written a whole pattern (a real
	 * condition, not a sleep): its last word is the last one written.
	 */
	deadline = now_ns() + UINT64_C(10000000000);
	while (first == 0 && now_ns() < deadline)
		if (dm_read(c, chunk + OFF_TEAR + TEAR_BYTES - 8, &first, 8) != DM_OK)
			break;
	CHECK(first != 0, "%s: tear writer started", cf->name);
	for (int r = 0; r < nreads && first != 0; r++)
	{
		int			mixed = 0;

		if ((rc = dm_read(c, chunk + OFF_TEAR, buf, TEAR_BYTES)) != DM_OK)
			break;
		(*done)++;
		for (int i = 0; i < TEAR_BYTES / 8; i++)
		{
			if (!pat_word_valid(buf[i]))
				(*badwords)++;
			if (buf[i] != buf[0])
				mixed = 1;
		}
		*torn += mixed;
		if (stop_after > 0 && *torn >= stop_after)
			break;
	}
	CHECK_STATUS(rc, DM_OK, "%s: all tear-test reads succeeded", cf->name);
	dm_write(c, chunk + OFF_TEAR_STOP, &one, 8);
	CHECK(wait_children(&pid, 1, 60, &code) == 0, "%s: tear writer finished cleanly", cf->name);
}

static void
test_tear(void)
{
	const config tear_cf = {"shm+tear", DM_BACKEND_SHM, DM_CLIENT_TEAR};
	const config plain_cf = {"shm", DM_BACKEND_SHM, 0};
	dm_client  *c;
	dm_gaddr	chunk = 0;
	int			torn,
				badwords,
				done;

	/*
	 * Tear mode on both sides: some reads must come out torn, words
	 * intact.  Writer and reader copy in the same direction at the same
	 * pace, so tears are rarer than one would think (see the report on
	 * tear mode); read up to 20000 times, stop after 20 tears.
	 */
	c = connect_client(&tear_cf, mn1.addr, NULL);
	if (!CHECK(c != NULL, "tear: shm+tear client"))
		return;
	CHECK_STATUS(dm_chunk_alloc(c, 1, 0x7EA2, &chunk, NULL), DM_OK, "tear: chunk");
	run_tear(&tear_cf, c, chunk, 20000, 20, &torn, &badwords, &done);
	tap_diag("shm+tear: %d of %d 1 KiB reads torn, %d torn words", torn, done, badwords);
	CHECK(torn > 0, "shm+tear: 1 KiB reads do get torn (%d of %d)", torn, done);
	CHECK(badwords == 0, "shm+tear: no 8-byte word is ever torn (%d bad words)", badwords);
	dm_client_destroy(c);

	/* No tear mode: aligned 8-byte words must still never tear. */
	c = connect_client(&plain_cf, mn1.addr, NULL);
	if (!CHECK(c != NULL, "tear: plain shm client"))
		return;
	run_tear(&plain_cf, c, chunk, 20000, 0, &torn, &badwords, &done);
	tap_diag("shm (no tear): %d of %d 1 KiB reads mixed generations, %d torn words", torn, done, badwords);
	CHECK(done == 20000 && badwords == 0,
		  "shm without tear: no aligned 8-byte word torn in %d reads (%d bad)", done, badwords);
	CHECK_STATUS(dm_chunk_free(c, chunk), DM_OK, "tear: free chunk");
	dm_client_destroy(c);
}

/* ---------------------------------------------------------------------------- */

int
main(void)
{
	const char *const args1[] = {"--id", "1", "--shm", "--size", "256M", "--chunk-size", "1M", NULL};
	const char *const args2[] = {"--id", "2", "--shm", "--size", "256M", "--chunk-size", "1M", NULL};

	if (memnode_start(&mn1, 0, args1) != 0 || memnode_start(&mn2, 0, args2) != 0)
	{
		CHECK(0, "start two memnodes (ids 1 and 2, with --shm)");
		return tap_done();
	}
	CHECK(mn1.shm_path[0] && mn2.shm_path[0] && strcmp(mn1.shm_path, mn2.shm_path) != 0,
		  "memnodes export distinct shm files (%s, %s)", mn1.shm_path, mn2.shm_path);

	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++)
	{
		const config *cf = &configs[i];
		dm_client  *c = test_backend_wanted(cf->backend) ? connect_client(cf, mn1.addr, NULL) : NULL;
		dm_tree_name tn;
		dm_tree_info ti;
		dm_gaddr	chunk = 0;
		uint64_t	size = 0,
					freed = 0;
		char		name[64];

		if (!test_backend_wanted(cf->backend))
			continue;
		if (!CHECK(c != NULL, "%s: client connects", cf->name))
			continue;
		/* Own the chunk by a tree, so dropping the tree frees it. */
		snprintf(name, sizeof(name), "atomic-%s", cf->name);
		dm_tree_name_named(&tn, name);
		CHECK_STATUS(dm_tree_create(c, 1, &tn, &ti), DM_OK, "%s: create tree", cf->name);
		CHECK_STATUS(dm_chunk_alloc(c, 1, ti.tree_id, &chunk, &size), DM_OK, "%s: chunk for the tree", cf->name);
		if (chunk == 0 || size < 32768)
		{
			CHECK(0, "%s: usable chunk", cf->name);
			dm_client_destroy(c);
			continue;
		}
		test_faa(cf, c, chunk);
		test_fetch_max(cf, c, chunk);
		test_lock(cf, c, chunk);
		test_mixed_batch(cf, c, chunk);
		CHECK_STATUS(dm_tree_drop(c, 1, &tn, &freed), DM_OK, "%s: drop tree", cf->name);
		CHECK(freed == 1, "%s: dropping the tree freed its chunk", cf->name);
		dm_client_destroy(c);
		test_two_nodes(cf);
	}
	if (test_backend_wanted(DM_BACKEND_SHM))
		test_tear();

	CHECK(WIFEXITED(memnode_stop(&mn2, SIGTERM)), "memnode 2 exits on SIGTERM");
	CHECK(WIFEXITED(memnode_stop(&mn1, SIGTERM)), "memnode 1 exits on SIGTERM");
	return tap_done();
}
