/*
 * test_cache.c — unit tests of the compute-side node cache (dm_cache.c),
 * no memnode needed; the "remote memory" is an array in the test's own
 * shared mapping.
 *
 *   1. configuration: shared-memory sizing, refused configurations,
 *      attach, and what each policy admits;
 *   2. single-process basics: the I/O flag, copies, tags separating trees,
 *      local write locks, swizzle hints (followed, stale, cleared), abort,
 *      invalidation, statistics, 256-byte nodes in 1024-byte frames;
 *   3. eviction: a small cache under a stream of admissions stays full and
 *      consistent, and a node read between admissions gets its second
 *      chance; then the cooling map step by step (dm_cache_make_cold): the
 *      oldest candidate goes first, a promoted node's old slot does not
 *      count, a frame cooled while locked stays evictable; next_frame;
 *   4. path-aware cooling: an inner node on a path that is read constantly
 *      delegates its cooling to its children and is never evicted;
 *   5. multi-process contention: optimistic copies racing a writer that
 *      rewrites a few frames non-stop are never torn; then forked readers
 *      and writers on a cache much smaller than the key space: no torn or
 *      misplaced copy, no lost update (the I/O flag and the frame locks
 *      admit one fetcher and one writer per node), the cache ends equal to
 *      remote memory, and afterwards every old node can still be evicted.
 *
 * Every node put in the cache is a real sealed tree node whose entries all
 * name its own address and carry one counter value, so a copy from the
 * wrong frame, a torn copy and a stale copy are all detected.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#include "dm_node.h"
#include "entrymodel.h"
#include "testutil.h"

#define NS			1024		/* node size */
#define FS			1024		/* frame size */
#define NONE		DM_FRAME_NONE

/* Node addresses: distinct, node-aligned, far from 0. */
#define ADDR(i)		(UINT64_C(0x100000000) + (uint64_t) (i) * NS)

/* ---- helpers ------------------------------------------------------------- */

typedef struct cache_map
{
	void	   *mem;
	size_t		len;
	dm_cache   *c;
} cache_map;

static dm_cache *
new_cache(cache_map *m, uint32_t nframes, dm_cache_policy policy, uint32_t permille)
{
	dm_cache_config cfg = {FS, nframes, policy, permille, 0};

	m->len = dm_cache_shmem_size(&cfg);
	if (m->len == 0)
	{
		tap_diag("dm_cache_shmem_size refused %u frames", nframes);
		exit(2);
	}
	m->mem = test_shared_map(m->len);
	m->c = dm_cache_init(m->mem, m->len, &cfg);
	if (m->c == NULL)
	{
		tap_diag("dm_cache_init refused %u frames", nframes);
		exit(2);
	}
	return m->c;
}

static void
free_cache(cache_map *m)
{
	munmap(m->mem, m->len);
	memset(m, 0, sizeof(*m));
}

/*
 * A sealed node of `size` bytes: fences (addr,0)..(addr+1,0), and the
 * whole entry area filled with (addr, counter) entries (count = the
 * level's capacity), so that node_check can tell which node and which
 * version a copy is, and whether it is torn.
 */
static void
make_node(void *buf, uint32_t size, int level, uint64_t tag, dm_gaddr addr, uint64_t counter)
{
	int			n = dm_leaf_cap(size);

	dm_node_init(buf, size, level, tag, dm_entry_make(addr, 0), dm_entry_make(addr + 1, 0));
	for (int i = 0; i < n; i++)
		LEAF_ENTS(buf)[i] = dm_raw_of(dm_entry_make(addr, counter));
	NODE_HDR(buf)->count = (uint16_t) (level == 0 ? n : dm_inner_cap(size));
	dm_node_seal(buf);
}

#define NODE_OK		0
#define NODE_TORN	1			/* invalid checksum, or entries disagree */
#define NODE_WRONG	2			/* a consistent node, but not the one asked for */

/* Classify a copy of node addr of tree tag; *counter gets its counter. */
static int
node_check(const void *buf, uint32_t size, uint64_t tag, dm_gaddr addr, uint64_t *counter)
{
	const dm_rawent *e = LEAF_ENTS(buf);
	int			n = dm_leaf_cap(size);

	if (!dm_node_valid(buf, size, tag))
		return NODE_TORN;
	for (int i = 1; i < n; i++)
		if (e[i].key != e[0].key || e[i].tid != e[0].tid)
			return NODE_TORN;
	if (counter)
		*counter = e[0].tid;
	if (e[0].key != addr || NODE_HDR(buf)->low.key != addr)
		return NODE_WRONG;
	return NODE_OK;
}

static int
check_ok(dm_cache *c)
{
	char		msg[256];

	if (dm_cache_check(c, msg, sizeof(msg)) == 0)
		return 1;
	tap_diag("dm_cache_check: %s", msg);
	return 0;
}

static uint64_t
sum_levels(const uint64_t *v)
{
	uint64_t	s = 0;

	for (int i = 0; i < DM_CACHE_LEVELS; i++)
		s += v[i];
	return s;
}

static dm_cache_stats
stats(dm_cache *c)
{
	dm_cache_stats st;

	dm_cache_stats_get(c, &st);
	return st;
}

static void
diag_stats(const char *what, dm_cache *c)
{
	dm_cache_stats st = stats(c);

	tap_diag("%s: used %" PRIu64 "/%" PRIu64 " (cooling %" PRIu64 "/%" PRIu64 "), hits %" PRIu64
			 " (hint %" PRIu64 "), admissions %" PRIu64 ", evictions %" PRIu64 ", coolings %" PRIu64
			 ", delegations %" PRIu64 ", promotions %" PRIu64 ", io_waits %" PRIu64 ", no_frame %" PRIu64
			 ", invalidations %" PRIu64,
			 what, sum_levels(st.frames_used), st.nframes, st.frames_cooling, st.cooling_capacity,
			 sum_levels(st.hits), st.hint_hits, st.admissions, st.evictions, st.coolings,
			 st.delegations, st.promotions, st.io_waits, st.no_frame, st.invalidations);
}

/*
 * Admit (tag, addr) with content make_node(level, counter), retrying while
 * admit_begin finds no frame (up to 100 times).  Returns the frame, or NONE
 * if the node was already cached or no frame was ever found; *tries (may be
 * NULL) gets the number of admit_begin calls.
 */
static uint32_t
admit(dm_cache *c, uint64_t tag, dm_gaddr addr, int level, uint64_t counter,
	  uint32_t parent, int slot, int *tries)
{
	static uint8_t buf[NS];
	uint32_t	f = NONE,
				existing = NONE;
	int			t = 0;

	while (f == NONE && t < 100)
	{
		t++;
		f = dm_cache_admit_begin(c, tag, addr, &existing);
		if (f == NONE && existing != NONE)
			break;
	}
	if (tries)
		*tries = t;
	if (f == NONE)
		return NONE;
	make_node(buf, NS, level, tag, addr, counter);
	dm_cache_admit_finish(c, f, buf, NS, level, parent, slot, 0);
	return f;
}

/* Copy (tag, addr) out of the cache (lookup + copy): NODE_OK etc., or -1 if not cached. */
static int
cached_node(dm_cache *c, uint64_t tag, dm_gaddr addr, uint64_t *counter)
{
	uint8_t		buf[NS];
	uint32_t	f = dm_cache_lookup(c, tag, addr, NONE, NULL);

	if (f == NONE || dm_cache_copy(c, f, tag, addr, buf, NS, NULL, NULL) != DM_CACHE_COPIED)
		return -1;
	return node_check(buf, NS, tag, addr, counter);
}

/*
 * Wait for n children, killing those still running after timeout_s.
 * Returns how many did not exit with status 0.
 */
static int
wait_children(const pid_t *pids, int n, int timeout_s)
{
	uint64_t	deadline = now_ns() + (uint64_t) timeout_s * 1000000000u;
	int			done[64] = {0},
				left = n,
				bad = 0;

	while (left > 0)
	{
		int			st;
		pid_t		p = waitpid(-1, &st, WNOHANG);

		if (p > 0)
		{
			for (int i = 0; i < n; i++)
				if (pids[i] == p && !done[i])
				{
					done[i] = 1;
					left--;
					if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
					{
						bad++;
						if (WIFSIGNALED(st))
							tap_diag("child %d killed by signal %d", i, WTERMSIG(st));
						else
							tap_diag("child %d exited with status %d", i, WEXITSTATUS(st));
					}
				}
			continue;
		}
		if (p < 0 && errno != EINTR)
			break;
		if (now_ns() > deadline)
		{
			tap_diag("children still running after %d s: killing them", timeout_s);
			for (int i = 0; i < n; i++)
				if (!done[i])
				{
					kill(pids[i], SIGKILL);
					waitpid(pids[i], NULL, 0);
					bad++;
				}
			break;
		}
		usleep(1000);
	}
	return bad;
}

/* ---- 1. configuration ------------------------------------------------------ */

static size_t
size_for(uint32_t frame_size, uint32_t nframes)
{
	dm_cache_config cfg = {frame_size, nframes, DM_CACHE_DEX, 100, 10, DM_CACHE_HOTSPOT_NONE};

	return dm_cache_shmem_size(&cfg);
}

/*
 * Children for the "sizing of huge caches returns" checks: a hang shows as
 * SIGALRM, a wrong answer as exit status 1.
 */
static void
child_huge_size(void)
{
	dm_cache_config cfg = {1024, (UINT32_C(1) << 30) + 1, DM_CACHE_DEX, 100, 10};
	size_t		s;

	alarm(2);
	s = dm_cache_shmem_size(&cfg);
	/* 0 (refused) is fine; a size must at least hold the frames */
	_exit(s == 0 || s > (size_t) cfg.nframes * 1024 ? 0 : 1);
}

static void
child_huge_bytes(void)
{
	size_t		bytes = (size_t) 1 << 41;	/* 2 TiB */
	uint32_t	n;

	alarm(2);
	n = dm_cache_frames_for_bytes(bytes, 1024);
	/* whatever it answers must fit (n > 2^30 cannot be sized at all: a refusal is fine) */
	_exit(n == 0 || (size_for(1024, n) > 0 && size_for(1024, n) <= bytes) ? 0 : 1);
}

static void
test_config(void)
{
	static const uint32_t fsizes[] = {256, 1024, 4096};
	static const uint32_t counts[] = {16, 64, 1000, 4096};
	int			mismatches = 0;
	size_t		len;
	void	   *mem;
	dm_cache   *c;

	/* frames_for_bytes inverts shmem_size: exactly N frames fit in the size of N frames */
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
		{
			size_t		s = size_for(fsizes[i], counts[j]);
			uint32_t	n = dm_cache_frames_for_bytes(s, fsizes[i]);

			if (n != counts[j])
			{
				if (mismatches++ < 6)
					tap_diag("frame size %u: shmem_size(%u frames) = %zu bytes, but frames_for_bytes(%zu) = %u "
							 "(and shmem_size(%u) = %zu still fits)", fsizes[i], counts[j], s, s, n,
							 n + 1, size_for(fsizes[i], n + 1));
			}
		}
	CHECK(mismatches == 0, "frames_for_bytes(shmem_size(N frames)) == N for N in 16, 64, 1000, 4096 and "
		  "frame sizes 256, 1024, 4096 (%d of 12 differ)", mismatches);
	CHECK(size_for(1024, 64) > size_for(1024, 16) && size_for(1024, 64) >= 64u * 1024,
		  "more frames need more memory, at least the frames themselves");
	CHECK(dm_cache_frames_for_bytes(size_for(1024, 16) - 1, 1024) == 0 &&
		  dm_cache_frames_for_bytes(0, 1024) == 0 &&
		  dm_cache_frames_for_bytes(size_for(1024, 16), 1024) == 16,
		  "less than the size of 16 frames gives 0 frames; exactly that size gives 16");
	CHECK(dm_cache_frames_for_bytes(1 << 20, 1000) == 0 && dm_cache_frames_for_bytes(1 << 20, 8192) == 0,
		  "frames_for_bytes refuses invalid frame sizes");
	{
		pid_t		p[2];

		p[0] = test_fork();
		if (p[0] == 0)
			child_huge_size();
		p[1] = test_fork();
		if (p[1] == 0)
			child_huge_bytes();
		CHECK(wait_children(p, 2, 30) == 0,
			  "sizing a cache of 2^30+1 frames and frames_for_bytes(2 TiB) return (no hang) with a usable answer");
	}

	/* invalid configurations */
	len = size_for(4096, 64) + 4096;
	mem = test_shared_map(len);
	{
		struct
		{
			dm_cache_config cfg;
			const char *why;
		}			bad[] = {
			{{1000, 64, DM_CACHE_DEX, 100, 10}, "frame size not a power of two"},
			{{128, 64, DM_CACHE_DEX, 100, 10}, "frame size below 256"},
			{{8192, 64, DM_CACHE_DEX, 100, 10}, "frame size above 4096"},
			{{1024, 15, DM_CACHE_DEX, 100, 10}, "fewer than 16 frames"},
			{{1024, 64, (dm_cache_policy) 3, 100, 10}, "policy beyond DEX"},
			{{1024, 64, DM_CACHE_DEX, 1001, 10}, "leaf admission above 1000 permille"},
			{{1024, 64, DM_CACHE_DEX, 100, 51}, "cooling map above 50%"},
			{{1024, 64, DM_CACHE_DEX, 100, 10, DM_CACHE_HOTSPOT_MAX + 1}, "hotspot buffer above its maximum"},
		};
		dm_cache_config good = {1024, 64, DM_CACHE_DEX, 100, 10, DM_CACHE_HOTSPOT_NONE};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			CHECK(dm_cache_init(mem, len, &bad[i].cfg) == NULL && dm_cache_shmem_size(&bad[i].cfg) == 0,
				  "init and shmem_size refuse: %s", bad[i].why);
		CHECK(dm_cache_init((uint8_t *) mem + 8, len - 8, &good) == NULL, "init refuses memory not 64-byte aligned");
		CHECK(dm_cache_init(mem, dm_cache_shmem_size(&good) - 1, &good) == NULL,
			  "init refuses memory one byte too small");
		CHECK(dm_cache_init(NULL, len, &good) == NULL, "init refuses NULL memory");
		CHECK(dm_cache_attach(mem) == NULL, "attach fails on zeroed memory (nothing initialised)");
		c = dm_cache_init(mem, dm_cache_shmem_size(&good), &good);
		CHECK(c == mem && dm_cache_frame_size(c) == 1024 && dm_cache_nframes(c) == 64 &&
			  dm_cache_get_policy(c) == DM_CACHE_DEX && dm_cache_hint_slots(c) == (uint32_t) dm_inner_cap(1024),
			  "init accepts exactly shmem_size bytes and keeps the configuration (%u hint slots)",
			  c ? dm_cache_hint_slots(c) : 0);
		CHECK(dm_cache_attach(mem) == c, "attach returns the initialised cache");
		CHECK(c && check_ok(c), "a new cache passes dm_cache_check");
		/* init over a used cache starts from scratch (memory "zeroed or not") */
		if (c && admit(c, 7, ADDR(1), 0, 0, NONE, -1, NULL) != NONE)
		{
			c = dm_cache_init(mem, len, &good);
			CHECK(c && dm_cache_lookup(c, 7, ADDR(1), NONE, NULL) == NONE && check_ok(c) &&
				  stats(c).admissions == 0, "re-initialising a used cache empties it");
		}
		else
			CHECK(0, "admit into a new cache");
	}
	munmap(mem, len);
	{
		void	   *zero = test_shared_map(4096);

		CHECK(dm_cache_attach(zero) == NULL && dm_cache_attach(NULL) == NULL,
			  "attach fails on another zeroed mapping and on NULL");
		munmap(zero, 4096);
	}

	/* what each policy admits */
	{
		cache_map	m;
		int			n,
					ok;

		c = new_cache(&m, 16, DM_CACHE_OFF, 1000);
		ok = 1;
		for (int l = 0; l < 4; l++)
		{
			ok &= !dm_cache_caches_level(c, l);
			for (int i = 0; i < 100; i++)
				ok &= !dm_cache_should_admit(c, l);
		}
		CHECK(ok, "OFF caches no level and admits nothing (even with 1000 permille)");
		CHECK(!dm_cache_caches_level(NULL, 1), "no cache (NULL) caches nothing");
		free_cache(&m);

		c = new_cache(&m, 16, DM_CACHE_INNER, 1000);
		ok = !dm_cache_caches_level(c, 0) && dm_cache_caches_level(c, 1) && dm_cache_caches_level(c, 5);
		for (int i = 0; i < 1000; i++)
			ok &= !dm_cache_should_admit(c, 0) && dm_cache_should_admit(c, 1) && dm_cache_should_admit(c, 3);
		CHECK(ok, "INNER caches and admits levels > 0 only, leaves never (even with 1000 permille)");
		free_cache(&m);

		c = new_cache(&m, 16, DM_CACHE_DEX, 100);
		ok = dm_cache_caches_level(c, 0) && dm_cache_caches_level(c, 1);
		for (int i = 0; i < 1000; i++)
			ok &= dm_cache_should_admit(c, 1) && dm_cache_should_admit(c, 2);
		CHECK(ok, "DEX caches every level and always admits inner nodes");
		dm_cache_stats_reset(c);
		n = 0;
		for (int i = 0; i < 20000; i++)
			n += dm_cache_should_admit(c, 0);
		CHECK(n >= 1500 && n <= 2500, "DEX at 100 permille admits 1500..2500 of 20000 leaves (%d)", n);
		CHECK(stats(c).admit_skipped == (uint64_t) (20000 - n), "the %d leaves not admitted count as admit_skipped",
			  20000 - n);
		free_cache(&m);

		c = new_cache(&m, 16, DM_CACHE_DEX, 0);
		n = 0;
		for (int i = 0; i < 5000; i++)
			n += dm_cache_should_admit(c, 0);
		CHECK(n == 0 && dm_cache_caches_level(c, 0), "DEX at 0 permille never admits a leaf (but caches level 0)");
		free_cache(&m);

		c = new_cache(&m, 16, DM_CACHE_DEX, 1000);
		n = 0;
		for (int i = 0; i < 5000; i++)
			n += dm_cache_should_admit(c, 0);
		CHECK(n == 5000 && stats(c).admit_skipped == 0, "DEX at 1000 permille always admits leaves");
		n = 0;
		for (int i = 0; i < 50000; i++)
			n += dm_cache_should_admit_lookup(c);
		CHECK(n >= 300 && n <= 700, "a hopscotch lookup's miss: the default %d permille, whatever the leaf rate "
			  "(%d of 50000)", DM_CACHE_HOP_ADMIT_DEFAULT, n);
		free_cache(&m);

		/* the lookup rate given, and never */
		{
			dm_cache_config cfg = {FS, 16, DM_CACHE_DEX, 100, 10, DM_CACHE_HOTSPOT_NONE, 500};
			dm_cache_config never = {FS, 16, DM_CACHE_DEX, 1000, 10, DM_CACHE_HOTSPOT_NONE,
			DM_CACHE_HOP_ADMIT_NEVER};
			dm_cache_config bad = {FS, 16, DM_CACHE_DEX, 100, 10, DM_CACHE_HOTSPOT_NONE, 1001};
			size_t		l1 = dm_cache_shmem_size(&cfg),
						l2 = dm_cache_shmem_size(&never);
			dm_cache   *c1 = dm_cache_init(test_shared_map(l1), l1, &cfg),
					   *c2 = dm_cache_init(test_shared_map(l2), l2, &never);
			int			n1 = 0,
						n2 = 0;

			for (int i = 0; i < 20000; i++)
			{
				n1 += dm_cache_should_admit_lookup(c1);
				n2 += dm_cache_should_admit_lookup(c2);
			}
			CHECK(n1 >= 9000 && n1 <= 11000 && n2 == 0 && dm_cache_should_admit(c2, 0),
				  "hop_admit_permille 500 admits about half (%d of 20000), NEVER none (leaves still at 1000)", n1);
			CHECK(dm_cache_shmem_size(&bad) == 0, "hop_admit_permille above 1000 is refused");
		}
		c = new_cache(&m, 16, DM_CACHE_INNER, 1000);
		n = 0;
		for (int i = 0; i < 1000; i++)
			n += dm_cache_should_admit_lookup(c);
		CHECK(n == 0, "INNER never admits a lookup's leaf either");
		free_cache(&m);
	}
}

/* ---- 2. single-process basics ------------------------------------------------- */

static void
test_basics(void)
{
	cache_map	m;
	dm_cache   *c = new_cache(&m, 64, DM_CACHE_DEX, 1000);
	uint64_t	tag = dm_cache_tree_tag(1, 100),
				tag2 = dm_cache_tree_tag(2, 100),
				tag1b = dm_cache_tree_tag(1, 101);
	uint8_t		node[NS],
				buf[NS];
	uint32_t	hints[64];
	uint32_t	f,
				g,
				existing;
	int			io,
				level;
	dm_cache_stats st;

	CHECK(tag != tag2 && tag != tag1b && tag2 != tag1b && tag && tag2 && tag1b &&
		  dm_cache_tree_tag(1, 100) == tag, "tree tags differ by tree id and by incarnation, are stable and non-zero");

	/* admission: the frame is in IO until finished */
	f = dm_cache_admit_begin(c, tag, ADDR(1), &existing);
	CHECK(f < 64 && existing == NONE, "admit_begin of a new node gives a frame (%u)", f);
	g = dm_cache_lookup(c, tag, ADDR(1), NONE, &io);
	CHECK(g == NONE && io == 1 && stats(c).io_waits == 1,
		  "a lookup during the fetch misses with io=1 (the I/O flag) and counts an io_wait");
	g = dm_cache_admit_begin(c, tag, ADDR(1), &existing);
	CHECK(g == NONE && existing == NONE, "a second admit_begin during the fetch fails with *existing NONE");
	CHECK(dm_cache_copy(c, f, tag, ADDR(1), buf, NS, NULL, NULL) == DM_CACHE_BUSY,
		  "copying the frame being fetched gives up with BUSY (read remotely)");
	{
		char		msg[256];

		CHECK(dm_cache_check(c, msg, sizeof(msg)) != 0, "dm_cache_check reports the fetch in progress");
	}
	make_node(node, NS, 0, tag, ADDR(1), 11);
	dm_cache_admit_finish(c, f, node, NS, 0, NONE, -1, 0);
	g = dm_cache_lookup(c, tag, ADDR(1), NONE, &io);
	CHECK(g == f && io == 0, "after admit_finish the lookup finds the frame");
	level = -1;
	memset(buf, 0, NS);
	CHECK(dm_cache_copy(c, f, tag, ADDR(1), buf, NS, NULL, &level) == DM_CACHE_COPIED &&
		  memcmp(buf, node, NS) == 0 && level == 0, "copy returns the admitted bytes and level 0");
	CHECK(dm_cache_copy(c, f, tag2, ADDR(1), buf, NS, NULL, NULL) == DM_CACHE_GONE &&
		  dm_cache_copy(c, f, tag, ADDR(2), buf, NS, NULL, NULL) == DM_CACHE_GONE &&
		  dm_cache_copy(c, 64, tag, ADDR(1), buf, NS, NULL, NULL) == DM_CACHE_GONE &&
		  dm_cache_copy(c, NONE, tag, ADDR(1), buf, NS, NULL, NULL) == DM_CACHE_GONE,
		  "copy with a wrong tag, address or frame number is GONE");
	CHECK(dm_cache_lookup(c, tag2, ADDR(1), NONE, &io) == NONE && io == 0 &&
		  dm_cache_lookup(c, tag1b, ADDR(1), NONE, &io) == NONE && io == 0 &&
		  dm_cache_lookup(c, tag, ADDR(2), NONE, &io) == NONE && io == 0,
		  "the same address under another tree or incarnation misses, as does another address");
	g = dm_cache_admit_begin(c, tag, ADDR(1), &existing);
	CHECK(g == NONE && existing == f, "admit_begin of a cached node fails with *existing = its frame");
	CHECK(check_ok(c), "check passes after one admission");

	/* the same address in another tree is another node */
	g = admit(c, tag2, ADDR(1), 0, 22, NONE, -1, NULL);
	CHECK(g != NONE && g != f, "the same address in another tree gets its own frame");
	CHECK(cached_node(c, tag2, ADDR(1), NULL) == NODE_OK &&
		  dm_cache_copy(c, f, tag, ADDR(1), buf, NS, NULL, NULL) == DM_CACHE_COPIED && memcmp(buf, node, NS) == 0,
		  "both copies of address 1 are intact and separate");

	/* local write lock */
	memset(buf, 0, NS);
	CHECK(dm_cache_lock(c, f, tag, ADDR(1), buf, NS) == 0 && memcmp(buf, node, NS) == 0,
		  "lock returns the cached node");
	CHECK(dm_cache_lookup(c, tag, ADDR(1), NONE, &io) == f && io == 0,
		  "a locked frame is still found (readers wait on its version)");
	CHECK(dm_cache_copy(c, f, tag, ADDR(1), buf, NS, NULL, NULL) == DM_CACHE_BUSY,
		  "copying a frame a writer holds gives up with BUSY");
	make_node(node, NS, 0, tag, ADDR(1), 12);
	dm_cache_unlock(c, f, node, NS);
	CHECK(dm_cache_copy(c, f, tag, ADDR(1), buf, NS, NULL, NULL) == DM_CACHE_COPIED &&
		  memcmp(buf, node, NS) == 0, "after unlock with new content, copy returns the new content");
	CHECK(dm_cache_lock(c, f, tag, ADDR(1), NULL, 0) == 0, "lock without a buffer");
	dm_cache_unlock(c, f, NULL, 0);
	CHECK(dm_cache_copy(c, f, tag, ADDR(1), buf, NS, NULL, NULL) == DM_CACHE_COPIED &&
		  memcmp(buf, node, NS) == 0, "unlock without content keeps the content");
	CHECK(dm_cache_lock(c, f, tag, ADDR(2), buf, NS) == DM_CACHE_GONE &&
		  dm_cache_lock(c, f, tag2, ADDR(1), buf, NS) == DM_CACHE_GONE &&
		  dm_cache_lock(c, 64, tag, ADDR(1), buf, NS) == DM_CACHE_GONE,
		  "lock of a frame holding another node (or of no frame) is GONE");
	CHECK(check_ok(c), "check passes after writes (no frame left locked)");

	/* swizzled child pointers */
	{
		uint32_t	r,
					c1,
					c2,
					d = NONE;
		uint64_t	hh;
		int			all_none = 1,
					others_none = 1;

		r = admit(c, tag, ADDR(100), 1, 0, NONE, -1, NULL);
		c1 = admit(c, tag, ADDR(101), 0, 0, r, 3, NULL);
		c2 = admit(c, tag, ADDR(102), 0, 0, NONE, -1, NULL);
		CHECK(r != NONE && c1 != NONE && c2 != NONE, "admit an inner node and two leaves");
		memset(hints, 0xAB, sizeof(hints));
		io = dm_cache_copy(c, r, tag, ADDR(100), buf, NS, hints, &level);
		CHECK(io == DM_CACHE_COPIED && level == 1 && hints[3] == c1,
			  "admit_finish with parent/slot swizzles the parent's hint (hint[3] = %u, want %u)", hints[3], c1);
		for (uint32_t s = 0; s < dm_cache_hint_slots(c); s++)
			if (s != 3 && hints[s] != NONE)
				others_none = 0;
		CHECK(others_none, "the other hint slots are empty");
		hh = stats(c).hint_hits;
		CHECK(dm_cache_lookup(c, tag, ADDR(101), hints[3], &io) == c1 && stats(c).hint_hits == hh + 1,
			  "a lookup with the hint finds the child through it (hint_hits + 1)");
		CHECK(dm_cache_lookup(c, tag, ADDR(101), NONE, &io) == c1 && stats(c).hint_hits == hh + 1,
			  "a lookup without a hint finds it through the table (hint_hits unchanged)");
		dm_cache_set_hint(c, r, 5, c2);
		CHECK(dm_cache_copy(c, r, tag, ADDR(100), buf, NS, hints, NULL) == DM_CACHE_COPIED && hints[5] == c2 &&
			  dm_cache_lookup(c, tag, ADDR(102), hints[5], &io) == c2 && stats(c).hint_hits == hh + 2,
			  "set_hint swizzles slot 5 and the lookup follows it");
		dm_cache_set_hint(c, r, (int) dm_cache_hint_slots(c), c2);
		dm_cache_set_hint(c, r, -1, c2);
		dm_cache_set_hint(c, r, 6, 64);
		CHECK(check_ok(c), "set_hint ignores out-of-range slots and frames");

		/* a stale hint: the child's frame now holds another node */
		dm_cache_invalidate(c, tag, ADDR(101));
		for (int i = 0; i < 1000 && d != c1; i++)
		{
			d = admit(c, tag, ADDR(1000 + i), 0, 0, NONE, -1, NULL);
			if (d != c1)
				dm_cache_invalidate(c, tag, ADDR(1000 + i));
		}
		CHECK(d == c1, "the invalidated child's frame is reused for another node");
		hh = stats(c).hint_hits;
		CHECK(dm_cache_lookup(c, tag, ADDR(101), c1, &io) == NONE && io == 0 && stats(c).hint_hits == hh,
			  "a stale hint (frame re-used) is not followed: the lookup misses through the table");
		CHECK(dm_cache_lookup(c, tag, ADDR(102), c1, &io) == c2 && stats(c).hint_hits == hh,
			  "a hint naming the wrong frame falls back to the table");

		/* writing an inner node clears its hints (its entries may have moved) */
		CHECK(dm_cache_lock(c, r, tag, ADDR(100), NULL, 0) == 0, "lock the inner node");
		dm_cache_unlock(c, r, NULL, 0);
		CHECK(dm_cache_copy(c, r, tag, ADDR(100), buf, NS, hints, NULL) == DM_CACHE_COPIED && hints[5] == c2,
			  "unlock without new content keeps the hints");
		CHECK(dm_cache_lock(c, r, tag, ADDR(100), NULL, 0) == 0, "lock the inner node again");
		make_node(node, NS, 1, tag, ADDR(100), 1);
		dm_cache_unlock(c, r, node, NS);
		CHECK(dm_cache_copy(c, r, tag, ADDR(100), buf, NS, hints, NULL) == DM_CACHE_COPIED &&
			  memcmp(buf, node, NS) == 0, "the inner node has its new content");
		for (uint32_t s = 0; s < dm_cache_hint_slots(c); s++)
			if (hints[s] != NONE)
				all_none = 0;
		CHECK(all_none, "unlock with new content clears all the inner node's hints");
		dm_cache_set_hint(c, c2, 0, r);	/* a leaf's hints: harmless, and a leaf write keeps them */
		CHECK(dm_cache_lock(c, c2, tag, ADDR(102), NULL, 0) == 0, "lock a leaf");
		make_node(node, NS, 0, tag, ADDR(102), 5);
		dm_cache_unlock(c, c2, node, NS);
		CHECK(dm_cache_copy(c, c2, tag, ADDR(102), buf, NS, hints, NULL) == DM_CACHE_COPIED && hints[0] == r &&
			  memcmp(buf, node, NS) == 0, "a leaf write changes the content (hints are only cleared on inner nodes)");
		CHECK(check_ok(c), "check passes after the hint tests");
	}

	/* abort */
	{
		uint64_t	adm = stats(c).admissions;

		f = dm_cache_admit_begin(c, tag, ADDR(5), &existing);
		CHECK(f != NONE, "admit_begin for an abort");
		dm_cache_admit_abort(c, f);
		CHECK(dm_cache_lookup(c, tag, ADDR(5), NONE, &io) == NONE && io == 0 &&
			  dm_cache_copy(c, f, tag, ADDR(5), buf, NS, NULL, NULL) == DM_CACHE_GONE,
			  "after admit_abort the node is neither cached nor in IO");
		CHECK(check_ok(c) && stats(c).admissions == adm, "check passes after abort, and no admission is counted");
		g = admit(c, tag, ADDR(5), 0, 5, NONE, -1, NULL);
		CHECK(g != NONE && cached_node(c, tag, ADDR(5), NULL) == NODE_OK, "the aborted node can be admitted again");
	}

	/* invalidation */
	{
		uint64_t	inv = stats(c).invalidations;
		uint32_t	n3 = 0,
					gone = 0,
					kept = 0;
		uint64_t	tag3 = dm_cache_tree_tag(3, 100),
					tag4 = dm_cache_tree_tag(4, 100);

		f = dm_cache_lookup(c, tag, ADDR(1), NONE, NULL);
		dm_cache_invalidate(c, tag, ADDR(1));
		CHECK(dm_cache_lookup(c, tag, ADDR(1), NONE, &io) == NONE && io == 0 &&
			  dm_cache_copy(c, f, tag, ADDR(1), buf, NS, NULL, NULL) == DM_CACHE_GONE &&
			  stats(c).invalidations == inv + 1, "invalidate drops the node (copy from its old frame is GONE)");
		CHECK(cached_node(c, tag2, ADDR(1), NULL) == NODE_OK, "the same address in the other tree stays cached");
		dm_cache_invalidate(c, tag, ADDR(1));
		dm_cache_invalidate(c, tag, ADDR(999999));
		CHECK(stats(c).invalidations == inv + 1 && check_ok(c), "invalidating absent nodes changes nothing");

		for (int i = 0; i < 10; i++)
			n3 += admit(c, tag3, ADDR(i), i % 2, 0, NONE, -1, NULL) != NONE;
		for (int i = 0; i < 5; i++)
			admit(c, tag4, ADDR(i), 0, 0, NONE, -1, NULL);
		inv = stats(c).invalidations;
		CHECK(n3 == 10 && dm_cache_invalidate_tree(c, tag3) == 10, "invalidate_tree drops the tree's 10 frames");
		for (int i = 0; i < 10; i++)
			gone += dm_cache_lookup(c, tag3, ADDR(i), NONE, NULL) == NONE;
		for (int i = 0; i < 5; i++)
			kept += cached_node(c, tag4, ADDR(i), NULL) == NODE_OK;
		CHECK(gone == 10 && kept == 5 && stats(c).invalidations == inv + 10,
			  "all its nodes are gone, the other tree's 5 stay (%u gone, %u kept)", gone, kept);
		CHECK(dm_cache_invalidate_tree(c, tag3) == 0 && check_ok(c), "invalidating it again drops nothing");
	}

	/* statistics */
	{
		uint32_t	r;

		dm_cache_stats_reset(c);
		st = stats(c);
		CHECK(sum_levels(st.hits) == 0 && st.admissions == 0 && st.invalidations == 0 && st.hint_hits == 0 &&
			  st.io_waits == 0 && sum_levels(st.frames_used) > 0,
			  "stats_reset zeroes the counters (frames in use are a state, not a counter)");
		r = admit(c, tag, ADDR(200), 2, 0, NONE, -1, NULL);
		for (int i = 0; i < 3; i++)
			dm_cache_copy(c, r, tag, ADDR(200), buf, NS, NULL, NULL);
		dm_cache_copy(c, dm_cache_lookup(c, tag, ADDR(102), NONE, NULL), tag, ADDR(102), buf, NS, NULL, NULL);
		dm_cache_copy(c, r, tag, ADDR(201), buf, NS, NULL, NULL);	/* GONE: no hit */
		dm_cache_count_miss(c, 0);
		dm_cache_count_miss(c, 2);
		dm_cache_count_miss(c, 2);
		dm_cache_count_miss(c, 12);
		dm_cache_count_local_write(c);
		st = stats(c);
		CHECK(st.hits[2] == 3 && st.hits[0] == 1 && sum_levels(st.hits) == 4,
			  "hits are counted by level (3 at level 2, 1 at level 0)");
		CHECK(st.misses[0] == 1 && st.misses[2] == 2 && st.misses[DM_CACHE_LEVELS - 1] == 1 &&
			  sum_levels(st.misses) == 4, "misses are counted by level, deep levels in the last");
		CHECK(st.admissions == 1 && st.local_writes == 1 && st.round_trips_avoided == 5 &&
			  st.bytes_avoided == 4 * NS + 16, "admissions, local writes, round trips and bytes avoided");
		CHECK(st.frames_used[2] == 1 && st.frames_used[1] == 1 && st.nframes == 64 && st.frame_size == FS &&
			  st.policy == DM_CACHE_DEX, "frames in use by level; configuration in the stats");
	}

	/* a 256-byte node in a 1024-byte frame */
	{
		uint8_t		small[256],
					sbuf[256];
		uint64_t	counter = 0;

		f = dm_cache_admit_begin(c, tag, ADDR(300), &existing);
		make_node(small, 256, 0, tag, ADDR(300), 7);
		if (f != NONE)
			dm_cache_admit_finish(c, f, small, 256, 0, NONE, -1, 0);
		CHECK(f != NONE && dm_cache_copy(c, f, tag, ADDR(300), sbuf, 256, NULL, &level) == DM_CACHE_COPIED &&
			  memcmp(sbuf, small, 256) == 0 && level == 0 && node_check(sbuf, 256, tag, ADDR(300), &counter) == NODE_OK &&
			  counter == 7, "a 256-byte node in a 1024-byte frame copies back intact");
		CHECK(dm_cache_lock(c, f, tag, ADDR(300), sbuf, 256) == 0 && memcmp(sbuf, small, 256) == 0,
			  "lock returns the 256-byte node");
		make_node(small, 256, 0, tag, ADDR(300), 8);
		dm_cache_unlock(c, f, small, 256);
		CHECK(dm_cache_copy(c, f, tag, ADDR(300), sbuf, 256, NULL, NULL) == DM_CACHE_COPIED &&
			  node_check(sbuf, 256, tag, ADDR(300), &counter) == NODE_OK && counter == 8 && check_ok(c),
			  "unlock with a new 256-byte node replaces it; check passes");
		CHECK(dm_cache_copy(c, f, tag, ADDR(300), buf, FS + 1, NULL, NULL) == DM_CACHE_GONE,
			  "a copy longer than the frame is refused");
	}
	free_cache(&m);
}

/* ---- 3. eviction ---------------------------------------------------------------- */

#define SC_ADMITS	20000		/* admissions in the statistical second-chance test */

static void
test_eviction(void)
{
	cache_map	m;
	dm_cache   *c = new_cache(&m, 64, DM_CACHE_DEX, 1000);
	uint64_t	tag = dm_cache_tree_tag(10, 1);
	int			failed = 0,
				max_tries = 0,
				overfull = 0,
				cached = 0,
				bad = 0;
	dm_cache_stats st;

	/* 5000 distinct leaves through 64 frames, one at a time */
	for (int i = 0; i < 5000; i++)
	{
		int			tries;

		if (admit(c, tag, ADDR(i), 0, (uint64_t) i, NONE, -1, &tries) == NONE)
			failed++;
		if (tries > max_tries)
			max_tries = tries;
		st = stats(c);
		if (sum_levels(st.frames_used) > 64)
			overfull++;
	}
	st = stats(c);
	diag_stats("eviction", c);
	CHECK(failed == 0 && st.no_frame == 0,
		  "every one of 5000 admissions got a frame (%d failed, at most %d attempts, no_frame %" PRIu64 ")",
		  failed, max_tries, st.no_frame);
	CHECK(st.admissions == 5000 && st.evictions >= 5000 - 64 && st.coolings > 0,
		  "5000 admissions, at least 4936 evictions (%" PRIu64 "), coolings (%" PRIu64 ")",
		  st.evictions, st.coolings);
	CHECK(overfull == 0, "frames in use never exceeded 64");
	CHECK(check_ok(c), "check passes after 5000 admissions");
	for (int i = 0; i < 5000; i++)
	{
		uint64_t	counter = UINT64_MAX;
		int			r = cached_node(c, tag, ADDR(i), &counter);

		if (r < 0)
			continue;
		cached++;
		if (r != NODE_OK || counter != (uint64_t) i)
			bad++;
	}
	CHECK(cached == 64 && (uint64_t) cached == sum_levels(st.frames_used),
		  "the cache is full: 64 nodes found, as many as frames in use (%d)", cached);
	CHECK(bad == 0, "every cached node copies back exactly its own content (%d wrong)", bad);
	CHECK(cached_node(c, tag, ADDR(4999), NULL) == NODE_OK, "the last node admitted is cached");
	free_cache(&m);

	/*
	 * Second chance, statistically: the hot node is read (copied) after
	 * every admission, so when it is cooled it is normally promoted by the
	 * next read, long before its turn.  A node never re-read lives only as
	 * long as it takes to cycle the 64 frames (~SC_ADMITS/64 = 312
	 * evictions if it were re-admitted each time).  The cooling map of a
	 * 64-frame cache is one FIFO of 6, sampled at random, so the hot node
	 * may still be unlucky now and then: allow SC_ADMITS/1000.
	 */
	{
		uint64_t	hot = ADDR(900000);
		int			hot_lost = 0,
					old_cached = 0;
		uint8_t		buf[NS];

		c = new_cache(&m, 64, DM_CACHE_DEX, 1000);
		admit(c, tag, hot, 0, 0, NONE, -1, NULL);
		for (int i = 0; i < SC_ADMITS; i++)
		{
			uint32_t	f;

			admit(c, tag, ADDR(i), 0, (uint64_t) i, NONE, -1, NULL);
			f = dm_cache_lookup(c, tag, hot, NONE, NULL);
			if (f == NONE || dm_cache_copy(c, f, tag, hot, buf, NS, NULL, NULL) != DM_CACHE_COPIED)
			{
				hot_lost++;
				admit(c, tag, hot, 0, 0, NONE, -1, NULL);
			}
		}
		/*
		 * About one frame is sampled per admission, so a node survives k
		 * admissions with probability ~exp(-k/64): 2000 make it ~1e-14.
		 */
		for (int i = 0; i < SC_ADMITS - 2000; i++)
			old_cached += dm_cache_lookup(c, tag, ADDR(i), NONE, NULL) != NONE;
		st = stats(c);
		diag_stats("second chance", c);
		CHECK(st.promotions > 0, "touching cooling frames promoted them (%" PRIu64 ")", st.promotions);
		CHECK(hot_lost <= SC_ADMITS / 1000 && cached_node(c, tag, hot, NULL) == NODE_OK,
			  "the node read between admissions was evicted only %d times in %d admissions (at most %d)",
			  hot_lost, SC_ADMITS, SC_ADMITS / 1000);
		CHECK(old_cached == 0, "none of the %d oldest nodes, never re-read, is still cached (%d)",
			  SC_ADMITS - 2000, old_cached);
		CHECK(check_ok(c), "check passes");
		free_cache(&m);
	}
}

/*
 * The cooling map, deterministically.  A 64-frame cache has a single
 * cooling bucket (10% of 64 frames / 6 slots), a FIFO of 6 frames.  Filling
 * it with 64 nodes takes never-used frames and cools nothing, so the FIFO
 * starts empty; dm_cache_make_cold then puts chosen frames in it in a
 * chosen order, and the next admission (cache full) evicts the oldest
 * candidate: get_frame cools at most 2 more sampled frames (appended at
 * the tail: no overflow with <= 4 queued) and then evicts the head.
 */
static void
fill_cache(dm_cache *c, uint64_t tag, uint32_t *frames)
{
	for (int i = 0; i < 64; i++)
		frames[i] = admit(c, tag, ADDR(i), 0, (uint64_t) i, NONE, -1, NULL);
}

static int
count_cached(dm_cache *c, uint64_t tag, int from, int to)
{
	int			n = 0;

	for (int i = from; i < to; i++)
		n += dm_cache_lookup(c, tag, ADDR(i), NONE, NULL) != NONE;
	return n;
}

static void
test_cooling_map(void)
{
	cache_map	m;
	dm_cache   *c;
	uint64_t	tag = dm_cache_tree_tag(11, 1);
	uint32_t	fr[64];
	uint8_t		buf[NS];
	dm_cache_stats st;

	/* make_cold: the frame becomes a candidate; the next admission evicts it and nothing else */
	c = new_cache(&m, 64, DM_CACHE_DEX, 1000);
	fill_cache(c, tag, fr);
	st = stats(c);
	CHECK(st.cooling_capacity == 6 && sum_levels(st.frames_used) == 64 && st.frames_cooling == 0 &&
		  st.coolings == 0, "a full 64-frame cache, one cooling FIFO of 6 slots, nothing cooling yet");
	dm_cache_make_cold(c, fr[10]);
	dm_cache_make_cold(c, fr[10]);	/* already cooling: no-op */
	dm_cache_make_cold(c, 64);	/* no such frame: no-op */
	dm_cache_make_cold(c, NONE);
	st = stats(c);
	CHECK(st.frames_cooling == 1 && st.coolings == 1, "make_cold cools one HOT frame (twice is once)");
	admit(c, tag, ADDR(100), 0, 0, NONE, -1, NULL);
	CHECK(dm_cache_lookup(c, tag, ADDR(10), NONE, NULL) == NONE && count_cached(c, tag, 0, 64) == 63 &&
		  stats(c).evictions == 1, "the next admission evicts the cold frame and only it");
	CHECK(check_ok(c), "check passes");
	free_cache(&m);

	/* (a fresh cache again: the admission above cooled sampled frames) */
	c = new_cache(&m, 64, DM_CACHE_DEX, 1000);
	fill_cache(c, tag, fr);
	dm_cache_make_cold(c, fr[20]);
	CHECK(dm_cache_copy(c, fr[20], tag, ADDR(20), buf, NS, NULL, NULL) == DM_CACHE_COPIED &&
		  stats(c).frames_cooling == 0 && stats(c).promotions == 1, "a copy of a cold frame promotes it to HOT");
	CHECK(dm_cache_lock(c, fr[21], tag, ADDR(21), NULL, 0) == 0, "lock a frame");
	dm_cache_make_cold(c, fr[21]);
	dm_cache_unlock(c, fr[21], NULL, 0);
	CHECK(stats(c).frames_cooling == 1 && dm_cache_lock(c, fr[21], tag, ADDR(21), NULL, 0) == 0 &&
		  stats(c).frames_cooling == 0 && stats(c).promotions == 2, "make_cold works on a locked frame; a lock promotes");
	dm_cache_unlock(c, fr[21], NULL, 0);
	CHECK(check_ok(c), "check passes");
	free_cache(&m);

	/*
	 * FIFO order after a promotion.  A is cooled, then promoted by a copy;
	 * B is cooled; then A is cooled again.  B is now the oldest candidate
	 * and the next eviction must take B.  (If A's first, promoted, FIFO
	 * slot still counts, A is evicted at once through it: a node read
	 * constantly loses its second chance whenever it is cooled again.)
	 */
	c = new_cache(&m, 64, DM_CACHE_DEX, 1000);
	fill_cache(c, tag, fr);
	dm_cache_make_cold(c, fr[1]);	/* A */
	dm_cache_copy(c, fr[1], tag, ADDR(1), buf, NS, NULL, NULL);
	dm_cache_make_cold(c, fr[2]);	/* B */
	dm_cache_make_cold(c, fr[1]);	/* A again */
	CHECK(stats(c).frames_cooling == 2, "two frames cooling (A re-cooled after its promotion, and B)");
	admit(c, tag, ADDR(100), 0, 0, NONE, -1, NULL);
	CHECK(dm_cache_lookup(c, tag, ADDR(2), NONE, NULL) == NONE && dm_cache_lookup(c, tag, ADDR(1), NONE, NULL) == fr[1],
		  "the oldest candidate (B) is evicted, not the node promoted and re-cooled after it (A: %s)",
		  dm_cache_lookup(c, tag, ADDR(1), NONE, NULL) == NONE ? "evicted" : "kept");
	CHECK(check_ok(c), "check passes");
	free_cache(&m);

	/*
	 * A frame cooled while a writer holds it.  The tree's write path does
	 * exactly this (admit_finish keep_locked, dm_cache_make_cold, then the
	 * remote write with the frame still locked), and meanwhile other
	 * processes push the FIFO along.  Here: X is locked and cooled, five
	 * more frames fill the FIFO, a sixth pushes X (locked, so not evicted)
	 * out of the FIFO.  Once unlocked, X is the coldest node of the cache
	 * and must still be evictable: a COOLING frame that no FIFO names is
	 * never sampled (only HOT frames are) nor evicted, so it would stay
	 * cached for ever unless read again.
	 */
	c = new_cache(&m, 64, DM_CACHE_DEX, 1000);
	fill_cache(c, tag, fr);
	CHECK(dm_cache_lock(c, fr[0], tag, ADDR(0), buf, NS) == 0, "lock X");
	dm_cache_make_cold(c, fr[0]);
	for (int i = 1; i <= 6; i++)
		dm_cache_make_cold(c, fr[i]);
	dm_cache_unlock(c, fr[0], NULL, 0);
	CHECK(dm_cache_lookup(c, tag, ADDR(0), NONE, NULL) == fr[0] && check_ok(c),
		  "X is still cached after the FIFO overflowed while it was locked");
	for (int i = 0; i < 30 * 64; i++)
		admit(c, tag, ADDR(1000 + i), 0, 0, NONE, -1, NULL);
	st = stats(c);
	CHECK(count_cached(c, tag, 1, 64) == 0, "30 x 64 admissions pushed out all 63 other old nodes");
	CHECK(dm_cache_lookup(c, tag, ADDR(0), NONE, NULL) == NONE,
		  "X, cooled while locked and never read again, was evicted too (%" PRIu64 " frames still cooling)",
		  st.frames_cooling);
	CHECK(check_ok(c), "check passes");
	free_cache(&m);

	/* next_frame enumerates one tree's frames */
	{
		uint64_t	tagb = dm_cache_tree_tag(12, 1);
		dm_gaddr	a;
		int			seen[10] = {0},
					n = 0,
					wrong = 0;

		c = new_cache(&m, 64, DM_CACHE_DEX, 1000);
		for (int i = 0; i < 10; i++)
		{
			admit(c, tag, ADDR(i), 0, 0, NONE, -1, NULL);
			admit(c, tagb, ADDR(i), 0, 0, NONE, -1, NULL);
		}
		dm_cache_invalidate(c, tag, ADDR(3));
		for (uint32_t f = dm_cache_next_frame(c, tag, 0, &a); f != NONE; f = dm_cache_next_frame(c, tag, f + 1, &a))
		{
			uint64_t	i = (a - ADDR(0)) / NS;

			n++;
			if (a < ADDR(0) || i >= 10 || seen[i]++ || dm_cache_lookup(c, tag, a, NONE, NULL) != f)
				wrong++;
		}
		CHECK(n == 9 && wrong == 0 && !seen[3], "next_frame lists the tree's 9 cached nodes once each, with their frames");
		CHECK(dm_cache_next_frame(c, dm_cache_tree_tag(13, 1), 0, &a) == NONE &&
			  dm_cache_next_frame(c, tag, 64, &a) == NONE, "next_frame: nothing for another tree or past the end");
		free_cache(&m);
	}
}

/* ---- 4. path-aware cooling -------------------------------------------------------- */

#define P_L1	4				/* level-1 children of the root */
#define P_LEAF	4				/* leaves under each level-1 node */

static void
test_path_cooling(void)
{
	cache_map	m;
	dm_cache   *c = new_cache(&m, 64, DM_CACHE_DEX, 1000);
	uint64_t	tag = dm_cache_tree_tag(20, 1);
	uint64_t	root_addr = ADDR(1000000);
	uint32_t	root,
				l1[P_L1];
	uint32_t	hints[64];
	uint8_t		buf[NS];
	int			root_moved = 0,
				l1_lost = 0,
				bad = 0;
	dm_cache_stats st;

	/* root (level 2) -> P_L1 level-1 nodes -> P_LEAF leaves each, all swizzled */
	root = admit(c, tag, root_addr, 2, 0, NONE, -1, NULL);
	for (int i = 0; i < P_L1; i++)
	{
		l1[i] = admit(c, tag, ADDR(2000000 + i), 1, 0, root, i, NULL);
		for (int j = 0; j < P_LEAF; j++)
			admit(c, tag, ADDR(3000000 + i * 100 + j), 0, 0, l1[i], j, NULL);
	}
	CHECK(dm_cache_copy(c, root, tag, root_addr, buf, NS, hints, NULL) == DM_CACHE_COPIED &&
		  hints[0] == l1[0] && hints[P_L1 - 1] == l1[P_L1 - 1] && check_ok(c),
		  "a three-level cached path with swizzled hints");

	/*
	 * 4000 other leaves stream through while every round descends root ->
	 * each level-1 node the way the tree does: follow the hint, and
	 * re-swizzle it when the child was found through the table.
	 */
	for (int i = 0; i < 4000; i++)
	{
		uint32_t	f;

		admit(c, tag, ADDR(i), 0, (uint64_t) i, NONE, -1, NULL);
		f = dm_cache_lookup(c, tag, root_addr, NONE, NULL);
		if (f != root)
		{
			root_moved++;
			if (f == NONE)
				f = root = admit(c, tag, root_addr, 2, 0, NONE, -1, NULL);
			root = f;
		}
		if (dm_cache_copy(c, root, tag, root_addr, buf, NS, hints, NULL) != DM_CACHE_COPIED ||
			node_check(buf, NS, tag, root_addr, NULL) != NODE_OK)
		{
			bad++;
			continue;
		}
		for (int k = 0; k < P_L1; k++)
		{
			dm_gaddr	a = ADDR(2000000 + k);

			f = dm_cache_lookup(c, tag, a, hints[k], NULL);
			if (f == NONE)
			{
				l1_lost++;
				f = admit(c, tag, a, 1, 0, root, k, NULL);
			}
			else if (dm_cache_copy(c, f, tag, a, buf, NS, NULL, NULL) != DM_CACHE_COPIED ||
					 node_check(buf, NS, tag, a, NULL) != NODE_OK)
				bad++;
			else if (f != hints[k])
				dm_cache_set_hint(c, root, k, f);
			l1[k] = f;
		}
	}
	st = stats(c);
	diag_stats("path cooling", c);
	tap_diag("level-1 nodes re-admitted %d times", l1_lost);
	CHECK(st.delegations > 0, "sampled inner nodes delegated their cooling to a child (%" PRIu64 ")",
		  st.delegations);
	CHECK(root_moved == 0 && dm_cache_lookup(c, tag, root_addr, NONE, NULL) == root,
		  "the root was never evicted in 4000 admissions (moved %d times)", root_moved);
	CHECK(bad == 0 && check_ok(c), "every copy on the path was intact; check passes");
	CHECK(st.hint_hits > 0 && st.frames_used[2] == 1, "descents used the hints; one level-2 frame in use");
	free_cache(&m);
}

/* ---- 5. multi-process contention ---------------------------------------------------- */

#define NPROC		4
#define NKEYS		500
#define MP_FRAMES	64
#define MP_OPS		100000	/* per process; fewer finish within a time slice or two */
#define MP_HOT		16

enum
{
	E_TORN,						/* a cache copy was not a consistent node */
	E_WRONG,					/* a cache copy was another node */
	E_REMOTE,					/* a remote read (under its seqlock) was not the node */
	E_FILL,						/* remote memory changed while we held the I/O frame */
	E_STALE,					/* a locked frame differed from remote memory */
	E_WRITERS,					/* two writers wrote one remote node at once */
	E_BACKWARDS,				/* a process saw a node's counter go down */
	E_LEVEL,					/* copy reported a wrong level */
	E_STUCK,					/* an operation could not complete */
	NERR
};

static const char *const err_names[NERR] = {
	"torn cache copies", "copies of the wrong node", "bad remote reads", "remote changes during a fetch",
	"locked frames differing from remote", "concurrent remote writers", "counters going backwards",
	"wrong levels", "operations that never completed"
};

/* A node in "remote memory": a seqlock word, then the node. */
typedef struct remote_node
{
	uint64_t	seq;			/* odd while a write is in progress */
	uint8_t		pad[56];
	uint8_t		data[NS];
} remote_node;

typedef struct mp_shared
{
	uint32_t	ready;
	uint32_t	go;
	uint64_t	inc[NPROC][NKEYS];	/* increments each process made */
	uint64_t	err[NPROC][NERR];
	uint64_t	reads[NPROC],
				writes[NPROC],
				remote_reads[NPROC],
				fills[NPROC],	/* admissions by readers */
				wfills[NPROC];	/* admissions by writers (admit_finish keep_locked) */
	uint64_t	t_start[NPROC],
				t_end[NPROC];
	char		first_err[NPROC][160];
	remote_node remote[NKEYS];
} mp_shared;

/* Read remote memory the way a reader does: retry until no write overlapped. */
static void
remote_read(remote_node *r, uint8_t *buf)
{
	for (;;)
	{
		uint64_t	s1 = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);

		if (s1 & 1)
		{
			sched_yield();
			continue;
		}
		memcpy(buf, r->data, NS);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r->seq, __ATOMIC_RELAXED) == s1)
			return;
	}
}

/*
 * Read remote memory while holding the node's I/O frame: nobody may write
 * the node meanwhile (writers write only under a frame of the node, and
 * the mapping table holds one frame per node).  0 if a write overlapped.
 */
static int
remote_read_exclusive(remote_node *r, uint8_t *buf)
{
	uint64_t	s1 = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);

	memcpy(buf, r->data, NS);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return (s1 & 1) == 0 && __atomic_load_n(&r->seq, __ATOMIC_RELAXED) == s1;
}

/* Write-through; 0 if another writer was writing the node at the same time. */
static int
remote_write(remote_node *r, const uint8_t *node)
{
	uint64_t	s = __atomic_fetch_add(&r->seq, 1, __ATOMIC_ACQ_REL);

	memcpy(r->data, node, NS);
	__atomic_fetch_add(&r->seq, 1, __ATOMIC_RELEASE);
	return (s & 1) == 0;
}

typedef struct mp_child
{
	dm_cache   *c;
	mp_shared  *sh;
	uint64_t	tag;
	int			me;
	uint64_t	last[NKEYS];	/* highest counter this process saw per node */
} mp_child;

static void
mp_error(mp_child *x, int kind, int key, const char *what)
{
	if (x->sh->err[x->me][kind]++ == 0 && x->sh->first_err[x->me][0] == '\0')
		snprintf(x->sh->first_err[x->me], sizeof(x->sh->first_err[0]), "process %d, node %d: %s",
				 x->me, key, what);
}

/* A copy of node key was obtained (from the cache when from_cache): check it. */
static void
mp_seen(mp_child *x, int key, const uint8_t *buf, int from_cache)
{
	uint64_t	counter = 0;
	int			r = node_check(buf, NS, x->tag, ADDR(key), &counter);

	if (r != NODE_OK)
	{
		mp_error(x, !from_cache ? E_REMOTE : r == NODE_TORN ? E_TORN : E_WRONG, key,
				 r == NODE_TORN ? "torn copy" : "copy of another node");
		return;
	}
	if (counter < x->last[key])
		mp_error(x, E_BACKWARDS, key, "counter went backwards");
	else
		x->last[key] = counter;
}

static void
mp_read(mp_child *x, int key)
{
	dm_gaddr	addr = ADDR(key);
	uint8_t		buf[NS];

	for (int k = 0; k < 100000; k++)
	{
		uint32_t	f,
					existing;
		int			io,
					level,
					r;

		f = dm_cache_lookup(x->c, x->tag, addr, NONE, &io);
		if (f != NONE)
		{
			r = dm_cache_copy(x->c, f, x->tag, addr, buf, NS, NULL, &level);
			if (r == DM_CACHE_COPIED)
			{
				if (level != 0)
					mp_error(x, E_LEVEL, key, "copy reported a wrong level");
				mp_seen(x, key, buf, 1);
				return;
			}
			if (r == DM_CACHE_GONE)
				continue;		/* evicted meanwhile: look up again */
			/* BUSY: a writer holds it; read remotely */
		}
		else if (!io && dm_cache_should_admit(x->c, 0))
		{
			f = dm_cache_admit_begin(x->c, x->tag, addr, &existing);
			if (f != NONE)
			{
				/* we are the one fetcher: remote memory must hold still */
				if (!remote_read_exclusive(&x->sh->remote[key], buf))
				{
					mp_error(x, E_FILL, key, "remote node written during our fetch");
					remote_read(&x->sh->remote[key], buf);
				}
				mp_seen(x, key, buf, 0);
				dm_cache_admit_finish(x->c, f, buf, NS, 0, NONE, -1, 0);
				x->sh->fills[x->me]++;
				return;
			}
			if (existing != NONE)
				continue;		/* admitted by somebody else meanwhile: copy it */
		}
		/* being fetched, held by a writer, not admitted by the coin toss, or no frame: read remotely */
		remote_read(&x->sh->remote[key], buf);
		x->sh->remote_reads[x->me]++;
		mp_seen(x, key, buf, 0);
		return;
	}
	mp_error(x, E_STUCK, key, "read never completed");
}

static void
mp_write(mp_child *x, int key)
{
	dm_gaddr	addr = ADDR(key);
	remote_node *rn = &x->sh->remote[key];
	uint8_t		buf[NS],
				node[NS];
	uint32_t	f = NONE;
	uint64_t	counter = 0;
	int			k;

	/* get the node's frame, locked: either the cached one, or one we admit */
	for (k = 0; k < 1000000; k++)
	{
		uint32_t	existing;
		int			io;

		f = dm_cache_lookup(x->c, x->tag, addr, NONE, &io);
		if (f != NONE)
		{
			if (dm_cache_lock(x->c, f, x->tag, addr, buf, NS) == 0)
				break;
			continue;			/* evicted between lookup and lock */
		}
		if (!io)
		{
			f = dm_cache_admit_begin(x->c, x->tag, addr, &existing);
			if (f != NONE)
			{
				if (!remote_read_exclusive(rn, buf))
				{
					mp_error(x, E_FILL, key, "remote node written during our fetch (writer)");
					remote_read(rn, buf);
				}
				dm_cache_admit_finish(x->c, f, buf, NS, 0, NONE, -1, 1);
				x->sh->wfills[x->me]++;
				/* as the tree does: admitted only to be written, so first in line for eviction */
				if (!dm_cache_should_admit(x->c, 0))
					dm_cache_make_cold(x->c, f);
				break;
			}
			if (existing != NONE)
				continue;
		}
		sched_yield();			/* somebody is fetching it: wait for the frame */
	}
	if (k == 1000000)
	{
		mp_error(x, E_STUCK, key, "write never got the frame");
		return;
	}

	/* we hold the frame: it must equal remote memory, which nobody else may write now */
	if (memcmp(buf, rn->data, NS) != 0)
		mp_error(x, E_STALE, key, "locked frame differs from remote memory");
	if (node_check(buf, NS, x->tag, addr, &counter) != NODE_OK)
		mp_error(x, E_TORN, key, "locked frame holds no consistent copy");
	if (counter < x->last[key])
		mp_error(x, E_BACKWARDS, key, "counter went backwards (writer)");
	make_node(node, NS, 0, x->tag, addr, counter + 1);
	if (!remote_write(rn, node))
		mp_error(x, E_WRITERS, key, "another writer was writing the node");
	x->last[key] = counter + 1;
	x->sh->inc[x->me][key]++;
	x->sh->writes[x->me]++;
	/* now and then drop the frame instead of updating it: the next reader refetches */
	if (rnd_below(100) == 0)
		dm_cache_unlock_drop(x->c, f);
	else
		dm_cache_unlock(x->c, f, node, NS);
}

static void
mp_child_main(dm_cache *c, mp_shared *sh, uint64_t tag, int me)
{
	static mp_child x;
	uint64_t	deadline = now_ns() + UINT64_C(30000000000);

	x.c = dm_cache_attach(c);
	x.sh = sh;
	x.tag = tag;
	x.me = me;
	if (x.c == NULL)
		_exit(3);
	rng = UINT64_C(0xC0FFEE) + (uint64_t) me * 7919;
	/* start together, or the children would mostly run one after another */
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
	{
		if (now_ns() > deadline)
			_exit(4);
		sched_yield();
	}
	sh->t_start[me] = now_ns();
	for (int i = 0; i < MP_OPS; i++)
	{
		/* half the operations on 16 hot nodes: fetchers and writers meet on the same node */
		int			key = (int) (rnd_below(2) ? rnd_below(MP_HOT) : rnd_below(NKEYS));
		uint64_t	op = rnd_below(1000);

		if (op < 300)
			mp_write(&x, key);
		else if (op < 305)
			dm_cache_invalidate(x.c, tag, ADDR(key));	/* e.g. a node a bulk load replaced */
		else
		{
			mp_read(&x, key);
			sh->reads[me]++;
		}
	}
	sh->t_end[me] = now_ns();
	_exit(0);
}

/*
 * Optimistic reads against a busy writer: one process rewrites a few
 * cached nodes under their frame locks as fast as it can while the others
 * copy them.  A copy overlapping a rewrite must be retried (the version
 * changed) and never returned torn; each reader sees every node's counter
 * only grow.  The mixed workload above seldom overlaps a copy with a write;
 * here nearly every copy races one.
 */
#define TR_NODES	4
#define TR_READERS	3
#define TR_COPIES	30000		/* per reader */

static void
test_torn_reads(void)
{
	cache_map	m;
	dm_cache   *c = new_cache(&m, 16, DM_CACHE_DEX, 1000);
	uint64_t	tag = dm_cache_tree_tag(31, 1);
	uint32_t	fr[TR_NODES];

	/*
	 * Shared words: [0] go, [1] readers finished, [2] rewrites made,
	 * [4 + 4r ..] reader r: copies, BUSY, torn, backwards.
	 */
	uint64_t   *sh = test_shared_map(4096);
	pid_t		pids[1 + TR_READERS];
	uint64_t	copies = 0,
				busy = 0,
				torn = 0,
				backwards = 0,
				writes,
				counter = 0,
				t0;
	int			right = 0;

	for (int i = 0; i < TR_NODES; i++)
		fr[i] = admit(c, tag, ADDR(i), 0, 0, NONE, -1, NULL);
	/* the writer rewrites node n % TR_NODES with counter n until every reader is done */
	if ((pids[0] = test_fork()) == 0)
	{
		uint8_t		node[NS];
		uint64_t	n = 0;

		while (!__atomic_load_n(&sh[0], __ATOMIC_ACQUIRE))
			sched_yield();
		while (__atomic_load_n(&sh[1], __ATOMIC_ACQUIRE) < TR_READERS)
		{
			int			i = (int) (++n % TR_NODES);

			if (dm_cache_lock(c, fr[i], tag, ADDR(i), NULL, 0) != 0)
				_exit(1);
			make_node(node, NS, 0, tag, ADDR(i), n);
			dm_cache_unlock(c, fr[i], node, NS);
		}
		sh[2] = n;
		_exit(0);
	}
	for (int r = 0; r < TR_READERS; r++)
		if ((pids[1 + r] = test_fork()) == 0)
		{
			uint64_t   *out = &sh[4 + r * 4];
			uint64_t	last[TR_NODES] = {0};
			uint8_t		buf[NS];

			while (!__atomic_load_n(&sh[0], __ATOMIC_ACQUIRE))
				sched_yield();
			for (int n = 0; n < TR_COPIES; n++)
			{
				int			i = n % TR_NODES,
							rc = dm_cache_copy(c, fr[i], tag, ADDR(i), buf, NS, NULL, NULL);
				uint64_t	cnt = 0;

				out[0]++;
				if (rc == DM_CACHE_BUSY)
					out[1]++;
				else if (rc != DM_CACHE_COPIED || node_check(buf, NS, tag, ADDR(i), &cnt) != NODE_OK)
					out[2]++;
				else if (cnt < last[i])
					out[3]++;
				else
					last[i] = cnt;
			}
			__atomic_fetch_add(&sh[1], 1, __ATOMIC_ACQ_REL);
			_exit(0);
		}
	t0 = now_ns();
	__atomic_store_n(&sh[0], 1, __ATOMIC_RELEASE);
	CHECK(wait_children(pids, 1 + TR_READERS, 60) == 0, "a writer and %d readers x %d copies of %d nodes finished",
		  TR_READERS, TR_COPIES, TR_NODES);
	for (int r = 0; r < TR_READERS; r++)
	{
		copies += sh[4 + r * 4];
		busy += sh[5 + r * 4];
		torn += sh[6 + r * 4];
		backwards += sh[7 + r * 4];
	}
	writes = sh[2];
	tap_diag("%" PRIu64 " copies (%" PRIu64 " gave up BUSY) during %" PRIu64 " rewrites in %.2f s",
			 copies, busy, writes, (now_ns() - t0) / 1e9);
	CHECK(torn == 0 && backwards == 0 && copies == TR_READERS * TR_COPIES && writes > TR_NODES,
		  "no copy was torn (%" PRIu64 ") or older than one seen before (%" PRIu64 ")", torn, backwards);
	/* node i was last written with the largest n <= writes with n % TR_NODES == i */
	for (int i = 0; i < TR_NODES; i++)
		right += cached_node(c, tag, ADDR(i), &counter) == NODE_OK &&
			counter == writes - (writes + TR_NODES - (uint64_t) i) % TR_NODES;
	CHECK(right == TR_NODES, "each node holds its last rewrite (%d of %d)", right, TR_NODES);
	CHECK(check_ok(c), "check passes");
	munmap(sh, 4096);
	free_cache(&m);
}

static void
test_multiprocess(void)
{
	cache_map	m;
	dm_cache   *c = new_cache(&m, MP_FRAMES, DM_CACHE_DEX, 700);
	uint64_t	tag = dm_cache_tree_tag(30, 1);
	mp_shared  *sh = test_shared_map(sizeof(mp_shared));
	pid_t		pids[NPROC];
	uint64_t	errs[NERR] = {0},
				reads = 0,
				writes = 0,
				rreads = 0,
				fills = 0,
				wfills = 0,
				t0;
	int			lost = 0,
				cached = 0,
				differ = 0,
				left = 0;
	dm_cache_stats st;

	for (int k = 0; k < NKEYS; k++)
		make_node(sh->remote[k].data, NS, 0, tag, ADDR(k), 0);

	for (int i = 0; i < NPROC; i++)
		if ((pids[i] = test_fork()) == 0)
			mp_child_main(c, sh, tag, i);
	for (int k = 0; k < 10000 && __atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) < NPROC; k++)
		usleep(1000);
	t0 = now_ns();
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	CHECK(wait_children(pids, NPROC, 60) == 0, "%d processes x %d operations on %d nodes through %d frames finished",
		  NPROC, MP_OPS, NKEYS, MP_FRAMES);
	tap_diag("multi-process run took %.2f s", (now_ns() - t0) / 1e9);
	{
		uint64_t	last_start = 0,
					first_end = UINT64_MAX;

		for (int i = 0; i < NPROC; i++)
		{
			last_start = sh->t_start[i] > last_start ? sh->t_start[i] : last_start;
			first_end = sh->t_end[i] < first_end ? sh->t_end[i] : first_end;
		}
		CHECK(last_start < first_end, "the %d processes ran at the same time (overlap %.3f s)", NPROC,
			  last_start < first_end ? (first_end - last_start) / 1e9 : 0.0);
	}

	for (int i = 0; i < NPROC; i++)
	{
		for (int e = 0; e < NERR; e++)
			errs[e] += sh->err[i][e];
		if (sh->first_err[i][0])
			tap_diag("first error: %s", sh->first_err[i]);
		reads += sh->reads[i];
		writes += sh->writes[i];
		rreads += sh->remote_reads[i];
		fills += sh->fills[i];
		wfills += sh->wfills[i];
	}
	tap_diag("%" PRIu64 " reads (%" PRIu64 " remote, %" PRIu64 " fetches into the cache), %" PRIu64 " writes",
			 reads, rreads, fills, writes);
	for (int e = 0; e < NERR; e++)
		CHECK(errs[e] == 0, "no %s (%" PRIu64 ")", err_names[e], errs[e]);
	CHECK(reads + writes > (uint64_t) NPROC * MP_OPS * 9 / 10 && writes > 0 && fills > 0,
		  "the workload ran (%" PRIu64 " reads, %" PRIu64 " writes)", reads, writes);

	/* no lost update, and the cache ends equal to remote memory */
	for (int k = 0; k < NKEYS; k++)
	{
		uint64_t	sum = 0,
					counter = UINT64_MAX;
		uint32_t	f;

		for (int i = 0; i < NPROC; i++)
			sum += sh->inc[i][k];
		if (node_check(sh->remote[k].data, NS, tag, ADDR(k), &counter) != NODE_OK || counter != sum)
		{
			if (lost++ < 5)
				tap_diag("node %d: remote counter %" PRIu64 ", increments %" PRIu64, k, counter, sum);
		}
		f = dm_cache_lookup(c, tag, ADDR(k), NONE, NULL);
		if (f != NONE)
		{
			uint8_t		buf[NS];

			cached++;
			if (dm_cache_copy(c, f, tag, ADDR(k), buf, NS, NULL, NULL) != DM_CACHE_COPIED ||
				memcmp(buf, sh->remote[k].data, NS) != 0)
				differ++;
		}
	}
	CHECK(lost == 0, "every node's remote counter equals the increments made to it (%d differ)", lost);
	CHECK(differ == 0 && cached > 0, "all %d cached nodes equal remote memory (%d differ)", cached, differ);
	CHECK(check_ok(c), "check passes after the run");
	st = stats(c);
	diag_stats("multi-process", c);
	CHECK(st.evictions > 0 && st.admissions == fills + wfills && sum_levels(st.frames_used) <= MP_FRAMES,
		  "evictions happened (%" PRIu64 "); admissions = the %" PRIu64 " fetches; frames in use within capacity",
		  st.evictions, fills + wfills);

	/*
	 * Afterwards, a stream of new nodes must be able to push every old
	 * node out: a frame that the cooling map lost track of (cooled while
	 * a writer held it) would stay cached for ever.
	 */
	for (int i = 0; i < 30 * MP_FRAMES; i++)
		admit(c, tag, ADDR(100000 + i), 0, 0, NONE, -1, NULL);
	for (int k = 0; k < NKEYS; k++)
		left += dm_cache_lookup(c, tag, ADDR(k), NONE, NULL) != NONE;
	diag_stats("after the flush", c);
	CHECK(left == 0, "after %d new admissions none of the old nodes is still cached (%d are)",
		  30 * MP_FRAMES, left);
	CHECK(check_ok(c), "check passes after the flush");

	munmap(sh, sizeof(mp_shared));
	free_cache(&m);
}

int
main(void)
{
	uint64_t	t0 = now_ns();

	rng = 20240601;
	test_config();
	test_basics();
	test_eviction();
	test_cooling_map();
	test_path_cooling();
	test_torn_reads();
	test_multiprocess();
	tap_diag("test_cache: %.2f s", (now_ns() - t0) / 1e9);
	return tap_done();
}
