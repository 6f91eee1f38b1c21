/*
 * test_hot.c — the hotspot buffer's table (dm_hot.c) on its own, in the
 * node cache's shared memory as a compute instance uses it.  No memnode:
 * "remote memory" is a shared array of leaves (a version word, a checksum
 * word) and the truth of every key (its tid or none), changed by writers
 * the way the tree changes a leaf (version odd while they write, the next
 * even value after).
 *
 *   1. sizes: the cache's buffer by configuration (none, the default, a
 *      given size), refusal above the maximum;
 *   2. one process: store, find, hit, unpin, forget; trees (tags) never
 *      answer for each other; a full set takes the way whose count ran out;
 *   3. torn entries, by hand: a test hook stops a writer after each word
 *      of the tuple it stores (a re-pin of the same key to another leaf,
 *      and another key replacing a way); at every stop no reader may find
 *      a tuple that is not one whole tuple (dm_hot_find must miss);
 *   4. stress: processes look up overlapping keys through the shared table
 *      as dm_tree_hop.c does (speculate: the pinned leaf's version and
 *      checksum unchanged, else read the leaf as a seqlock and pin the
 *      answer), unpinning on a failed speculation, while writer processes
 *      change leaves and the truth; a tiny table makes keys fight for
 *      ways.  Every answer is compared with the truth read under the same
 *      unchanged leaf version: a torn tuple believed (a key with another
 *      key's leaf and answer) is a wrong answer here;
 *   5. a writer killed after each word of a tuple (a backend dying during
 *      a pin): its slot is a miss for good, never a torn tuple; the key is
 *      pinned again whole in another way and the set's other ways serve;
 *   6. a whole write run while a reader is stopped after each word of its
 *      copy (a test hook): the copy is still one whole tuple, which only
 *      the reader's second sequence read can ensure (the stress of 4 does
 *      not reliably hit that window).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_cache.h"
#include "dm_hot.h"
#include "testutil.h"

#define FS 256
#define TAG UINT64_C(0x7A61)
#define MARK (UINT64_C(1) << 63)	/* the tree's DM_VERSION_DIRTY: no leaf version equals it */
#define NLEAF 8
#define NKEY 48
#define LEAF_ADDR(l) (UINT64_C(0x300000000) + (uint64_t) (l) * 1024)
#define NREADERS 3
#define NWRITERS 1

typedef struct leaf
{
	uint64_t	version;		/* odd: a writer is changing the leaf */
	uint64_t	checksum;		/* a function of (leaf, version) */
} leaf;

typedef struct shared
{
	leaf		leaves[NLEAF];
	uint64_t	truth[NKEY];	/* 0: absent; else the key's one tid */
	uint64_t	stop;
	uint64_t	lookups[NREADERS];
	uint64_t	spec_hits[NREADERS];
	uint64_t	spec_stale[NREADERS];
	uint64_t	writes;
	uint64_t	bad;
	char		why[256];
} shared;

static shared *sh;

/* xorshift64*: each process its own stream */
static uint64_t
rnd64(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(0x2545F4914F6CDD1D);
}

static uint64_t
csum(int l, uint64_t v)
{
	uint64_t	x = ((uint64_t) l << 40) ^ v ^ UINT64_C(0xA5A5A5A5);

	x *= UINT64_C(0x9E3779B97F4A7C15);
	return x ^ (x >> 29);
}

static int
leaf_of(int k)
{
	return k % NLEAF;
}

static dm_cache *
new_cache(uint32_t hotspot, size_t *len)
{
	dm_cache_config cfg = {FS, 16, DM_CACHE_INNER, 0, 10, hotspot};
	void	   *mem;

	*len = dm_cache_shmem_size(&cfg);
	if (*len == 0)
		return NULL;
	mem = test_shared_map(*len);
	return dm_cache_init(mem, *len, &cfg);
}

static dm_hot_table
table_of(dm_cache *c)
{
	dm_hot_table ht;

	ht.slots = dm_cache_hotspot(c, &ht.nsets);
	return ht;
}

/* ---- 1. sizes ---------------------------------------------------------------- */

static void
test_sizes(void)
{
	size_t		l0,
				ld,
				l100;
	dm_cache   *none = new_cache(DM_CACHE_HOTSPOT_NONE, &l0),
			   *def = new_cache(0, &ld),
			   *hundred = new_cache(100, &l100);
	dm_hot_table t0,
				td,
				t100;
	dm_cache_config big = {FS, 16, DM_CACHE_INNER, 0, 10, DM_CACHE_HOTSPOT_MAX + 1};

	if (!CHECK(none && def && hundred, "caches with no, the default and a 100-key hotspot buffer"))
		return;
	t0 = table_of(none);
	td = table_of(def);
	t100 = table_of(hundred);
	CHECK(t0.slots == NULL && t0.nsets == 0, "no buffer: no slots");
	CHECK(td.slots != NULL && td.nsets * DM_HOT_WAYS == DM_CACHE_HOTSPOT_DEFAULT, "default: %u keys",
		  td.nsets * DM_HOT_WAYS);
	CHECK(t100.nsets == 25 && l100 - l0 >= 100 * sizeof(dm_hot_slot) && ld - l0 >= DM_CACHE_HOTSPOT_DEFAULT * 64u,
		  "100 keys: 25 sets; the buffer's memory comes on top of the frames (%zu, %zu, %zu bytes)", l0, l100, ld);
	CHECK(sizeof(dm_hot_slot) == 64, "a slot is one cache line");
	CHECK(dm_cache_shmem_size(&big) == 0, "a buffer above DM_CACHE_HOTSPOT_MAX is refused");
}

/* ---- 2. one process ------------------------------------------------------------ */

static void
test_basic(void)
{
	size_t		len;
	dm_cache   *c = new_cache(4, &len);	/* one set of 4 ways */
	dm_hot_table ht;
	dm_hot_ent	e;
	int			ok;

	if (!CHECK(c != NULL, "a cache with a one-set buffer"))
		return;
	ht = table_of(c);
	CHECK(ht.nsets == 1 && !dm_hot_find(&ht, TAG, 7, &e), "empty: nothing found");
	dm_hot_store(&ht, TAG, 7, LEAF_ADDR(1), 4, 99, 1, 1234);
	ok = dm_hot_find(&ht, TAG, 7, &e);
	CHECK(ok && e.key == 7 && e.tag == TAG && e.addr == LEAF_ADDR(1) && e.version == 4 && e.checksum == 99 &&
		  e.ntids == 1 && e.tid == 1234, "a stored tuple is found whole");
	CHECK(!dm_hot_find(&ht, TAG + 1, 7, &e), "another tree's tag does not find it");
	dm_hot_store(&ht, TAG + 1, 7, LEAF_ADDR(2), 6, 98, 0, 0);
	CHECK(dm_hot_find(&ht, TAG + 1, 7, &e) && e.addr == LEAF_ADDR(2) && e.ntids == 0 &&
		  dm_hot_find(&ht, TAG, 7, &e) && e.addr == LEAF_ADDR(1) && e.tid == 1234,
		  "the same key of two trees: two tuples, each answers for its own tree");
	dm_hot_store(&ht, TAG, 7, LEAF_ADDR(3), 8, 97, 1, 4321);
	CHECK(dm_hot_find(&ht, TAG, 7, &e) && e.addr == LEAF_ADDR(3) && e.version == 8 && e.tid == 4321,
		  "a re-pin replaces the key's tuple");
	dm_hot_unpin(&ht, &e, MARK);
	CHECK(dm_hot_find(&ht, TAG, 7, &e) && e.version == MARK && e.addr == LEAF_ADDR(3),
		  "unpin: the way stays, its version can match no leaf");
	{
		dm_hot_ent	old = e;

		old.version = 8;		/* a tuple the slot no longer holds */
		dm_hot_store(&ht, TAG, 7, LEAF_ADDR(4), 10, 96, 1, 5);
		dm_hot_unpin(&ht, &old, MARK);
		CHECK(dm_hot_find(&ht, TAG, 7, &e) && e.version == 10,
			  "unpin of a tuple since replaced leaves the new one alone");
	}
	dm_hot_forget(&ht, TAG, 7);
	CHECK(!dm_hot_find(&ht, TAG, 7, &e) && dm_hot_find(&ht, TAG + 1, 7, &e), "forget: that tree's key only");
	/* replacement: a full set of counted ways keeps them against one newcomer */
	dm_hot_forget(&ht, TAG + 1, 7);
	for (uint64_t k = 1; k <= 4; k++)
		dm_hot_store(&ht, TAG, k, LEAF_ADDR(k), 2, k, 1, k);
	for (int i = 0; i < 3; i++)
		if (dm_hot_find(&ht, TAG, 1, &e))
			dm_hot_hit(&ht, &e);
	dm_hot_store(&ht, TAG, 50, LEAF_ADDR(5), 2, 5, 1, 50);
	CHECK(!dm_hot_find(&ht, TAG, 50, &e), "a full set: the first newcomer only ages the counts");
	dm_hot_store(&ht, TAG, 50, LEAF_ADDR(5), 2, 5, 1, 50);
	ok = 1;
	for (uint64_t k = 1; k <= 4; k++)
		ok &= dm_hot_find(&ht, TAG, k, &e) == (k != 2);
	CHECK(ok && dm_hot_find(&ht, TAG, 50, &e) && dm_hot_find(&ht, TAG, 1, &e),
		  "the second takes the first way whose count ran out; the hot key stays");
}

/* ---- 3. torn entries by hand ------------------------------------------------------ */

static dm_hot_table hook_ht;
static dm_hot_ent hook_old,
			hook_new;
static int	hook_calls,
			hook_bad;
static char hook_why[200];

static int
same_tuple(const dm_hot_ent *a, const dm_hot_ent *b)
{
	return a->tag == b->tag && a->key == b->key && a->addr == b->addr && a->version == b->version &&
		a->checksum == b->checksum && a->ntids == b->ntids && a->tid == b->tid;
}

/* At every word a writer stored: what a reader finds must be a whole tuple, or nothing. */
static void
torn_hook(dm_hot_slot *s, int word)
{
	const dm_hot_ent *want[2] = {&hook_old, &hook_new};

	(void) s;
	hook_calls++;
	for (int i = 0; i < 2; i++)
	{
		dm_hot_ent	e;

		if (dm_hot_find(&hook_ht, want[i]->tag, want[i]->key, &e) &&
			!same_tuple(&e, &hook_old) && !same_tuple(&e, &hook_new) && !hook_bad)
		{
			hook_bad = 1;
			snprintf(hook_why, sizeof(hook_why),
					 "after word %d a lookup of key %" PRIu64 " found leaf %" PRIx64 " v%" PRIu64 " tid %" PRIu64
					 ", which no writer stored", word, want[i]->key, e.addr, e.version, e.tid);
		}
	}
}

static void
ent(dm_hot_ent *e, uint64_t key, int l, uint64_t v, uint64_t tid)
{
	memset(e, 0, sizeof(*e));
	e->tag = TAG;
	e->key = key;
	e->addr = LEAF_ADDR(l);
	e->version = v;
	e->checksum = csum(l, v);
	e->ntids = 1;
	e->tid = tid;
}

static void
store_ent(const dm_hot_ent *e)
{
	dm_hot_store(&hook_ht, e->tag, e->key, e->addr, e->version, e->checksum, e->ntids, e->tid);
}

static void
test_torn_hook(void)
{
	size_t		len;
	dm_cache   *c = new_cache(4, &len);
	dm_hot_ent	e;

	if (!CHECK(c != NULL, "a cache with a one-set buffer"))
		return;
	hook_ht = table_of(c);

	/* the same key pinned again to another leaf: half way it would claim the new leaf at the old version */
	ent(&hook_old, 11, 1, 2, 1111);
	ent(&hook_new, 11, 2, 6, 2222);
	store_ent(&hook_old);
	hook_calls = hook_bad = 0;
	dm_hot_test_store_hook = torn_hook;
	store_ent(&hook_new);
	dm_hot_test_store_hook = NULL;
	CHECK(hook_calls == 6 && !hook_bad, "a re-pin stopped after each of its %d words: never a torn tuple found%s%s",
		  hook_calls, hook_bad ? ": " : "", hook_why);
	CHECK(dm_hot_find(&hook_ht, TAG, 11, &e) && same_tuple(&e, &hook_new), "after it the new tuple is found whole");

	/*
	 * another key replacing a way: half way it would claim key 44 with key
	 * 12's leaf and tid (key 11, counted twice, outlives key 12's single count)
	 */
	for (uint64_t k = 12; k <= 14; k++)
	{
		dm_hot_ent	f;

		ent(&f, k, 3, 2, k);
		store_ent(&f);
	}
	ent(&hook_old, 12, 3, 2, 12);
	ent(&hook_new, 44, 4, 8, 4444);
	store_ent(&hook_new);		/* the set is full: this ages it */
	CHECK(!dm_hot_find(&hook_ht, TAG, 44, &e), "the set is full: the first store of key 44 only aged it");
	hook_calls = hook_bad = 0;
	dm_hot_test_store_hook = torn_hook;
	store_ent(&hook_new);		/* takes key 12's way (way 1: the first whose count is spent) */
	dm_hot_test_store_hook = NULL;
	CHECK(hook_calls == 6 && !hook_bad, "key 44 replacing key 12's way, stopped after each of its %d words: never a "
		  "torn tuple found%s%s", hook_calls, hook_bad ? ": " : "", hook_why);
	CHECK(dm_hot_find(&hook_ht, TAG, 44, &e) && same_tuple(&e, &hook_new) && !dm_hot_find(&hook_ht, TAG, 12, &e) &&
		  dm_hot_find(&hook_ht, TAG, 11, &e), "after it key 44's tuple is found whole, key 12 is gone, key 11 stays");
}

/* ---- 4. stress ------------------------------------------------------------------------- */

static void
fail(const char *fmt, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	if (__atomic_exchange_n(&sh->bad, 1, __ATOMIC_ACQ_REL) == 0)
		snprintf(sh->why, sizeof(sh->why), fmt, a, b, c, d);
}

static void
writer(int idx)
{
	uint64_t	rng = 0x1234 + (uint64_t) idx;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE))
	{
		int			k = (int) (rnd64(&rng) % NKEY);
		leaf	   *lf = &sh->leaves[leaf_of(k)];
		uint64_t	v = __atomic_load_n(&lf->version, __ATOMIC_RELAXED);

		if ((v & 1) || !__atomic_compare_exchange_n(&lf->version, &v, v + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&sh->truth[k], rnd64(&rng) % 3 == 0 ? 0 : 1 + rnd64(&rng) % 1000000, __ATOMIC_RELAXED);
		__atomic_store_n(&lf->checksum, csum(leaf_of(k), v + 2), __ATOMIC_RELAXED);
		__atomic_store_n(&lf->version, v + 2, __ATOMIC_RELEASE);
		sh->writes++;
		for (int i = 0; i < 200; i++)	/* let the readers pin and hit between changes */
			__asm__ __volatile__("" ::: "memory");
	}
}

/*
 * One lookup as dm_tree_hop.c makes it.  Its answer is checked against the
 * truth read while the leaf showed the version the answer claims.
 */
static void
reader_lookup(dm_hot_table *ht, int idx, int k)
{
	dm_hot_ent	e;
	int			l = leaf_of(k);
	leaf	   *lf = &sh->leaves[l];

	if (dm_hot_find(ht, TAG, (uint64_t) k, &e) && !(e.version & MARK))
	{
		/* e.addr names the leaf the tuple claims (a torn tuple may name another key's) */
		int			el = (int) ((e.addr - LEAF_ADDR(0)) / 1024);
		leaf	   *pl;
		uint64_t	v,
					cs,
					t,
					v2;

		if (el < 0 || el >= NLEAF || e.addr != LEAF_ADDR(el))
		{
			fail("key %" PRIu64 ": a tuple names leaf address %" PRIx64 " nobody stored (%" PRIu64 " %" PRIu64 ")",
				 (uint64_t) k, e.addr, 0, 0);
			return;
		}
		pl = &sh->leaves[el];
		v = __atomic_load_n(&pl->version, __ATOMIC_ACQUIRE);
		cs = __atomic_load_n(&pl->checksum, __ATOMIC_RELAXED);
		if (v == e.version && cs == e.checksum)
		{
			uint64_t	got = e.ntids ? e.tid : 0;

			/* the speculation is believed: the truth under that version must be its answer */
			t = __atomic_load_n(&sh->truth[k], __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			v2 = __atomic_load_n(&pl->version, __ATOMIC_RELAXED);
			if (v2 == v && got != t)
				fail("key %" PRIu64 ": a speculative read answered %" PRIu64 ", the truth is %" PRIu64
					 " (leaf v%" PRIu64 ")", (uint64_t) k, got, t, v);
			if (el != l)
				fail("key %" PRIu64 ": a believed tuple names leaf %" PRIu64 ", the key's leaf is %" PRIu64
					 " (%" PRIu64 ")", (uint64_t) k, (uint64_t) el, (uint64_t) l, 0);
			dm_hot_hit(ht, &e);
			sh->spec_hits[idx]++;
			return;
		}
		dm_hot_unpin(ht, &e, MARK);
		sh->spec_stale[idx]++;
	}
	/* the ordinary read: the leaf as a seqlock, then pin what it answered */
	for (;;)
	{
		uint64_t	v = __atomic_load_n(&lf->version, __ATOMIC_ACQUIRE),
					cs,
					t;

		if (v & 1)
			continue;
		t = __atomic_load_n(&sh->truth[k], __ATOMIC_RELAXED);
		cs = __atomic_load_n(&lf->checksum, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&lf->version, __ATOMIC_RELAXED) != v)
			continue;
		dm_hot_store(ht, TAG, (uint64_t) k, LEAF_ADDR(l), v, cs, t ? 1 : 0, t);
		return;
	}
}

static void
reader(dm_hot_table *ht, int idx)
{
	uint64_t	rng = 0x9876 + (uint64_t) idx;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE) && !__atomic_load_n(&sh->bad, __ATOMIC_RELAXED))
	{
		/* skewed: a few keys are hot, the rest fight for ways */
		int			k = (int) (rnd64(&rng) % 4 == 0 ? rnd64(&rng) % NKEY : rnd64(&rng) % 6);

		reader_lookup(ht, idx, k);
		sh->lookups[idx]++;
	}
}

static void
test_stress(void)
{
	size_t		len;
	dm_cache   *c = new_cache(8, &len);	/* 2 sets of 4 ways for 48 keys */
	dm_hot_table ht;
	pid_t		pids[NREADERS + NWRITERS];
	int			clean = 1;
	uint64_t	lookups = 0,
				hits = 0,
				stale = 0;
	int			ms = 2000;

	if (!CHECK(c != NULL, "a cache with a two-set buffer"))
		return;
	ht = table_of(c);
	memset(sh, 0, sizeof(*sh));
	for (int l = 0; l < NLEAF; l++)
		sh->leaves[l].checksum = csum(l, 0);
	for (int k = 0; k < NKEY; k++)
		sh->truth[k] = (uint64_t) k + 1;
	for (int i = 0; i < NREADERS + NWRITERS; i++)
		if ((pids[i] = test_fork()) == 0)
		{
			if (i < NREADERS)
				reader(&ht, i);
			else
				writer(i);
			_exit(0);
		}
	usleep((useconds_t) ms * 1000);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NREADERS + NWRITERS; i++)
	{
		int			st = 0;

		waitpid(pids[i], &st, 0);
		clean &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	for (int i = 0; i < NREADERS; i++)
	{
		lookups += sh->lookups[i];
		hits += sh->spec_hits[i];
		stale += sh->spec_stale[i];
	}
	tap_diag("stress: %" PRIu64 " lookups, %" PRIu64 " speculative hits, %" PRIu64 " rejected, %" PRIu64
			 " leaf changes", lookups, hits, stale, sh->writes);
	CHECK(clean && !sh->bad, "%d processes looking up %d keys through one shared 8-key buffer while a writer changes "
		  "leaves: every answer is the truth%s%s", NREADERS, NKEY, sh->bad ? ": " : "", sh->why);
	CHECK(hits > 1000 && stale > 0 && sh->writes > 100,
		  "the speculation had work: hits, rejections and leaf changes all happened");
}

/* ---- 5. a writer killed half way ----------------------------------------------- */

static int	die_at;

static void
die_hook(dm_hot_slot *s, int word)
{
	(void) s;
	if (word == die_at)
		_exit(0);
}

/*
 * A process that dies while it stores a tuple (a backend killed during a
 * pin) leaves its slot odd: for every word it may have stopped after, the
 * slot must be a miss (neither the old tuple, now partly overwritten, nor
 * the half-written one), the key can be pinned again in another way and
 * is then found whole, and the stuck way costs that way only.
 */
static void
test_killed_writer(void)
{
	for (die_at = 0; die_at <= 5; die_at++)
	{
		size_t		len;
		dm_cache   *c = new_cache(4, &len);	/* one set of 4 ways */
		dm_hot_table ht;
		dm_hot_ent	e;
		pid_t		pid;
		int			st = 0,
					ok;

		if (!CHECK(c != NULL, "killed writer: a one-set buffer"))
			return;
		ht = table_of(c);
		dm_hot_store(&ht, TAG, 7, LEAF_ADDR(1), 4, 99, 1, 1234);
		if ((pid = test_fork()) == 0)
		{
			dm_hot_test_store_hook = die_hook;
			dm_hot_store(&ht, TAG, 7, LEAF_ADDR(2), 6, 98, 1, 4321);
			_exit(1);			/* the hook did not stop it */
		}
		waitpid(pid, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "killed writer: the child died after word %d", die_at);
		CHECK(!dm_hot_find(&ht, TAG, 7, &e), "killed writer (word %d): the slot it held is a miss", die_at);
		dm_hot_unpin(&ht, &(dm_hot_ent) {TAG, 7, LEAF_ADDR(1), 4, 99, 1234, 1, 0}, MARK);
		dm_hot_forget(&ht, TAG, 7);
		dm_hot_store(&ht, TAG, 7, LEAF_ADDR(3), 8, 97, 1, 555);
		ok = dm_hot_find(&ht, TAG, 7, &e);
		CHECK(ok && e.addr == LEAF_ADDR(3) && e.version == 8 && e.checksum == 97 && e.tid == 555 && e.way != 0,
			  "killed writer (word %d): the key pinned again lives whole in another way", die_at);
		for (uint64_t k = 20; k < 22; k++)
			dm_hot_store(&ht, TAG, k, LEAF_ADDR(k), 2, k, 1, k);
		ok = dm_hot_find(&ht, TAG, 20, &e) && e.tid == 20 && dm_hot_find(&ht, TAG, 21, &e) && e.tid == 21 &&
			dm_hot_find(&ht, TAG, 7, &e) && e.tid == 555;
		CHECK(ok, "killed writer (word %d): the set's three other ways still serve", die_at);
	}
}

/* ---- 6. a whole write in the middle of a reader's copy ------------------------- */

static dm_hot_table mid_ht;
static int	mid_at,
			mid_fired;

/* The reader stopped after word mid_at: the key is pinned again, start to end, right now. */
static void
mid_hook(dm_hot_slot *s, int word)
{
	(void) s;
	if (word != mid_at || mid_fired)
		return;
	mid_fired = 1;
	dm_hot_store(&mid_ht, TAG, 7, LEAF_ADDR(2), 6, 98, 1, 4321);
}

/*
 * The writer's odd sequence word is over before the reader looks again, so
 * only the reader's second sequence read (changed) shows that the words it
 * copied before the stop are the old tuple's and those after it the new
 * one's: e.g. leaf 1 with the re-pin's version 6, checksum and tid, which
 * leaf 1 at version 6 would confirm.  The copy must be one whole tuple.
 */
static void
test_write_mid_read(void)
{
	dm_hot_ent	old = {TAG, 7, LEAF_ADDR(1), 4, 99, 1234, 1, 0},
				new = {TAG, 7, LEAF_ADDR(2), 6, 98, 4321, 1, 0};

	for (mid_at = 0; mid_at <= 4; mid_at++)
	{
		size_t		len;
		dm_cache   *c = new_cache(4, &len);
		dm_hot_ent	e;
		int			ok;

		if (!CHECK(c != NULL, "write mid-read: a one-set buffer"))
			return;
		mid_ht = table_of(c);
		dm_hot_store(&mid_ht, TAG, 7, LEAF_ADDR(1), 4, 99, 1, 1234);
		mid_fired = 0;
		dm_hot_test_read_hook = mid_hook;
		ok = dm_hot_find(&mid_ht, TAG, 7, &e);
		dm_hot_test_read_hook = NULL;
		CHECK(mid_fired && ok && (same_tuple(&e, &old) || same_tuple(&e, &new)),
			  "a re-pin run whole while a reader copied word %d: the reader's copy is one whole tuple (leaf %" PRIx64
			  " v%" PRIu64 " tid %" PRIu64 ")", mid_at, ok ? e.addr : 0, ok ? e.version : 0, ok ? e.tid : 0);
	}
}

int
main(void)
{
	sh = test_shared_map(sizeof(shared));
	test_sizes();
	test_basic();
	test_torn_hook();
	test_stress();
	test_killed_writer();
	test_write_mid_read();
	return tap_done();
}
