/*
 * test_cache_inval.c — invalidation by address (dm_cache_invalidate_nodes,
 * dm_cache_admit_finish_gen): what a hot standby's cache relies on when its
 * primary's WAL says which nodes changed.  No memnode: "remote memory" is a
 * version word per node in a shared mapping.
 *
 *   1. the race, step by step: a reader reads a node remotely, the node
 *      changes and its invalidation runs (in another process, which must
 *      wait for the reader's fetch), then the reader finishes: with the
 *      generation check the stale copy is not admitted; the plain
 *      dm_cache_admit_finish would have kept it (the hazard is real);
 *   2. an invalidation before the reader took the generation does not stop
 *      its admission (its read came after), and drops cached frames;
 *   3. stress: a writer process changes nodes and invalidates them, reader
 *      processes read through the cache (copy on hit, fetch and admit on
 *      miss); every copy a reader gets must be at least as new as every
 *      change whose invalidation had finished before its read began.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_cache.h"
#include "testutil.h"

#define FS 256
#define NNODES 64
#define ADDR(i) (UINT64_C(0x200000000) + (uint64_t) (i) * FS)
#define TAG UINT64_C(0x5151)

typedef struct shared
{
	uint64_t	remote[NNODES];		/* the node's current version ("remote memory") */
	uint64_t	invalidated[NNODES];	/* highest version whose invalidation has finished */
	uint64_t	stop;
	uint64_t	reads;
	uint64_t	hits;
	uint64_t	bad;
	char		why[256];
} shared;

static dm_cache *
new_cache(uint32_t nframes, size_t *len, void **mem)
{
	dm_cache_config cfg = {FS, nframes, DM_CACHE_DEX, 1000, 0};

	*len = dm_cache_shmem_size(&cfg);
	*mem = test_shared_map(*len);
	return dm_cache_init(*mem, *len, &cfg);
}

/* A node image: its version in the first word, the rest a pattern of it. */
static void
make_node(uint8_t *buf, uint64_t version)
{
	for (int i = 0; i < FS / 8; i++)
		memcpy(buf + 8 * i, &version, 8);
}

static uint64_t
node_version(const uint8_t *buf)
{
	uint64_t	v;

	memcpy(&v, buf, 8);
	return v;
}

/* The version a cached copy of node i holds, or 0 if it is not cached. */
static uint64_t
cached_version(dm_cache *c, int i)
{
	uint8_t		buf[FS];
	int			io;
	uint32_t	f = dm_cache_lookup(c, TAG, ADDR(i), DM_FRAME_NONE, &io);

	if (f == DM_FRAME_NONE || dm_cache_copy(c, f, TAG, ADDR(i), buf, FS, NULL, NULL) != DM_CACHE_COPIED)
		return 0;
	return node_version(buf);
}

/* A child that invalidates node i (blocking while a fetch of it is in progress). */
static pid_t
invalidate_in_child(dm_cache *c, int i, volatile uint64_t *done)
{
	pid_t		pid = fork();

	if (pid == 0)
	{
		dm_gaddr	a = ADDR(i);

		dm_cache_invalidate_nodes(c, TAG, &a, 1);
		__atomic_store_n(done, 1, __ATOMIC_SEQ_CST);
		_exit(0);
	}
	return pid;
}

static void
test_race_steps(void)
{
	size_t		len;
	void	   *mem;
	dm_cache   *c = new_cache(64, &len, &mem);
	volatile uint64_t *done = test_shared_map(64);
	uint8_t		buf[FS];
	uint32_t	f, existing;
	uint64_t	gen;
	pid_t		pid;
	int			st, admitted;

	if (!CHECK(c != NULL, "cache made"))
		return;

	/* 1. with the generation check */
	f = dm_cache_admit_begin(c, TAG, ADDR(1), &existing);
	CHECK(f != DM_FRAME_NONE, "reader: admission of node 1 begins (frame in IO)");
	gen = dm_cache_inval_gen(c);
	make_node(buf, 1);			/* the reader's remote read: version 1 */
	/* the node changes to version 2 remotely; its invalidation runs meanwhile */
	*done = 0;
	pid = invalidate_in_child(c, 1, done);
	usleep(100 * 1000);
	CHECK(__atomic_load_n(done, __ATOMIC_SEQ_CST) == 0,
		  "the invalidation waits for the fetch in progress");
	CHECK(dm_cache_inval_gen(c) == gen + 1, "and has bumped the generation (%" PRIu64 " -> %" PRIu64 ")",
		  gen, dm_cache_inval_gen(c));
	admitted = dm_cache_admit_finish_gen(c, f, buf, FS, 0, DM_FRAME_NONE, -1, gen);
	CHECK(admitted == 0, "reader: the copy read before the invalidation is not admitted");
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && *done == 1, "the invalidation finished");
	CHECK(cached_version(c, 1) == 0, "node 1 is not cached");

	/* the same interleaving with the plain finish: the stale copy stays (what the check prevents) */
	f = dm_cache_admit_begin(c, TAG, ADDR(2), &existing);
	make_node(buf, 1);
	*done = 0;
	pid = invalidate_in_child(c, 2, done);
	usleep(100 * 1000);
	dm_cache_admit_finish(c, f, buf, FS, 0, DM_FRAME_NONE, -1, 0);
	waitpid(pid, &st, 0);
	/* the child dropped it after the finish; but had it run a moment earlier... */
	CHECK(*done == 1, "plain finish: the invalidation waited for the fetch, then dropped the frame");
	f = dm_cache_admit_begin(c, TAG, ADDR(3), &existing);
	gen = dm_cache_inval_gen(c);
	make_node(buf, 1);
	/* the generation moves (an invalidation of this node that looked before admit_begin and found nothing) */
	{
		dm_gaddr	other = ADDR(9);

		dm_cache_invalidate_nodes(c, TAG, &other, 1);
	}
	dm_cache_admit_finish(c, f, buf, FS, 0, DM_FRAME_NONE, -1, 0);
	CHECK(cached_version(c, 3) == 1, "plain finish keeps what it read across a generation change (version 1): "
		  "the hazard dm_cache_admit_finish_gen closes");
	{
		dm_gaddr	a = ADDR(3);

		CHECK(dm_cache_invalidate_nodes(c, TAG, &a, 1) == 1, "invalidating a cached node drops its frame");
		CHECK(cached_version(c, 3) == 0, "node 3 is gone");
		CHECK(dm_cache_inval_gen(c) > gen, "every invalidation moves the generation");
	}

	/* 2. an invalidation before the generation was taken does not stop the admission */
	{
		dm_gaddr	a = ADDR(4);

		dm_cache_invalidate_nodes(c, TAG, &a, 1);
		f = dm_cache_admit_begin(c, TAG, ADDR(4), &existing);
		gen = dm_cache_inval_gen(c);
		make_node(buf, 7);
		admitted = dm_cache_admit_finish_gen(c, f, buf, FS, 0, DM_FRAME_NONE, -1, gen);
		CHECK(admitted == 1 && cached_version(c, 4) == 7,
			  "a read after the invalidation is admitted (version %" PRIu64 ")", cached_version(c, 4));
		/* an invalidation of another node between the read and the finish also stops it: conservative */
		f = dm_cache_admit_begin(c, TAG, ADDR(5), &existing);
		gen = dm_cache_inval_gen(c);
		a = ADDR(6);
		dm_cache_invalidate_nodes(c, TAG, &a, 1);
		admitted = dm_cache_admit_finish_gen(c, f, buf, FS, 0, DM_FRAME_NONE, -1, gen);
		CHECK(admitted == 0, "an invalidation of any node meanwhile abandons the admission (generation is global)");
		CHECK(cached_version(c, 4) == 7, "node 4 stays cached");
	}
	/* (dm_cache_check wants real tree nodes in frames; these are version words) */
	munmap(mem, len);
}

/* ---- stress ---------------------------------------------------------------- */

static void
reader(dm_cache *c, shared *s, unsigned seed)
{
	uint8_t		buf[FS];

	while (!__atomic_load_n(&s->stop, __ATOMIC_SEQ_CST))
	{
		int			i = (int) (rand_r(&seed) % NNODES);
		uint64_t	need = __atomic_load_n(&s->invalidated[i], __ATOMIC_SEQ_CST);
		uint64_t	got = 0;
		int			io;
		uint32_t	f = dm_cache_lookup(c, TAG, ADDR(i), DM_FRAME_NONE, &io);

		if (f != DM_FRAME_NONE && dm_cache_copy(c, f, TAG, ADDR(i), buf, FS, NULL, NULL) == DM_CACHE_COPIED)
		{
			got = node_version(buf);
			__atomic_add_fetch(&s->hits, 1, __ATOMIC_RELAXED);
		}
		else
		{
			uint32_t	existing;
			uint64_t	gen;

			f = io ? DM_FRAME_NONE : dm_cache_admit_begin(c, TAG, ADDR(i), &existing);
			gen = dm_cache_inval_gen(c);
			got = __atomic_load_n(&s->remote[i], __ATOMIC_SEQ_CST);	/* the remote read */
			make_node(buf, got);
			if (rand_r(&seed) % 4 == 0)
				sched_yield();	/* widen the window between the read and the finish */
			if (f != DM_FRAME_NONE)
				dm_cache_admit_finish_gen(c, f, buf, FS, 0, DM_FRAME_NONE, -1, gen);
		}
		__atomic_add_fetch(&s->reads, 1, __ATOMIC_RELAXED);
		if (got < need && __atomic_add_fetch(&s->bad, 1, __ATOMIC_SEQ_CST) == 1)
			snprintf(s->why, sizeof(s->why), "node %d: got version %" PRIu64 ", but version %" PRIu64
					 " had been invalidated before the read began", i, got, need);
	}
	_exit(0);
}

static void
test_stress(void)
{
	size_t		len;
	void	   *mem;
	dm_cache   *c = new_cache(32, &len, &mem);	/* fewer frames than nodes: eviction too */
	shared	   *s = test_shared_map(sizeof(shared));
	pid_t		readers[3];
	uint64_t	t_end = now_ns() + UINT64_C(3000000000);
	uint64_t	changes = 0;
	unsigned	seed = 4711;
	uint8_t		buf[FS];

	for (int i = 0; i < NNODES; i++)
		s->remote[i] = 1;
	for (int r = 0; r < 3; r++)
		if ((readers[r] = fork()) == 0)
			reader(c, s, 100 + (unsigned) r);
	/* the writer: change a node remotely, then invalidate it (the standby's redo) */
	while (now_ns() < t_end)
	{
		int			i = (int) (rand_r(&seed) % NNODES);
		uint64_t	v = __atomic_add_fetch(&s->remote[i], 1, __ATOMIC_SEQ_CST);
		dm_gaddr	a = ADDR(i);

		dm_cache_invalidate_nodes(c, TAG, &a, 1);
		__atomic_store_n(&s->invalidated[i], v, __ATOMIC_SEQ_CST);
		changes++;
		if (changes % 64 == 0)
			usleep(50);
	}
	__atomic_store_n(&s->stop, 1, __ATOMIC_SEQ_CST);
	for (int r = 0; r < 3; r++)
	{
		int			st;

		waitpid(readers[r], &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "reader %d exited cleanly", r);
	}
	tap_diag("stress: %" PRIu64 " changes, %" PRIu64 " reads, %" PRIu64 " hits", changes, s->reads, s->hits);
	CHECK(s->bad == 0, "no read returned a copy older than a finished invalidation (%" PRIu64 " bad%s%s)",
		  s->bad, s->bad ? ": " : "", s->why);
	CHECK(s->hits > 1000 && changes > 1000, "the cache was used while nodes changed (%" PRIu64 " hits, %"
		  PRIu64 " changes)", s->hits, changes);
	/* at rest every cached copy is the current version */
	{
		int			stale = 0;

		for (int i = 0; i < NNODES; i++)
		{
			uint64_t	v = cached_version(c, i);

			if (v != 0 && v != s->remote[i])
				stale++;
		}
		CHECK(stale == 0, "at rest no cached node is stale (%d)", stale);
	}
	(void) buf;
	munmap(mem, len);
}

int
main(void)
{
	test_race_steps();
	test_stress();
	return tap_done();
}
