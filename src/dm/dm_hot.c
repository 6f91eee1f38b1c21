/*
 * dm_hot.c — the hotspot buffer's table (dm_hot.h): set-associative slots,
 * each a seqlock, shared by the processes of a compute instance (in the
 * node cache's memory) or private to a handle; the same code for both.
 *
 * Readers never write the tuple and never wait: a slot whose sequence word
 * is odd, or changes while it is read, is a miss.  Writers take a slot by
 * a CAS of its sequence word from even to odd (one that fails leaves the
 * slot to the other writer: a lost pin is only a lost hit), store the
 * tuple's words, and store the next even value.  A reader's copy is
 * therefore one writer's whole tuple: the sequence word read before the
 * copy (acquire) is even and the one read after it (behind an acquire
 * fence) equal, so no writer held the slot in between.  What a torn tuple
 * could claim, and why that matters, is in dm_hot.h.  A writer killed
 * half way leaves its slot odd: that way is lost (a miss for ever, never a
 * wrong answer) until the cache is made again, as PostgreSQL does when it
 * reinitialises shared memory after a backend's crash.
 *
 * Replacement is frequency-based (CHIME §4.3 uses LFU): a hit counts up to
 * DM_HOT_FREQ_MAX; a key that wants a way in a full set ages the set's
 * counts by one and takes a way whose count reached zero, so a one-off
 * lookup cannot push out a hot key.  The counts are plain racy atomics.
 */
#include <string.h>

#include "dm_hot.h"

void		(*dm_hot_test_store_hook) (dm_hot_slot *s, int word) = NULL;
void		(*dm_hot_test_read_hook) (dm_hot_slot *s, int word) = NULL;

/* Tests only (dm_hot.h): a reader stopped after each word it copied. */
#define RHOOK(s, w) do { if (dm_hot_test_read_hook) dm_hot_test_read_hook((s), (w)); } while (0)

#define LD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static dm_hot_slot *
set_of(dm_hot_table *ht, uint64_t tag, uint64_t key)
{
	uint64_t	x = (key ^ (tag * UINT64_C(0xC2B2AE3D27D4EB4F))) * UINT64_C(0x9E3779B97F4A7C15);

	return &ht->slots[(size_t) (((x >> 32) * ht->nsets) >> 32) * DM_HOT_WAYS];
}

/* A consistent copy of slot s (1), or 0 if a writer held it or changed it meanwhile. */
static int
read_slot(dm_hot_slot *s, dm_hot_ent *e)
{
	for (int k = 0; k < 2; k++)
	{
		uint64_t	s1 = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);

		if (s1 & 1)
			return 0;
		e->tag = LD(&s->tag);
		RHOOK(s, 0);
		e->key = LD(&s->key);
		RHOOK(s, 1);
		e->addr = LD(&s->addr);
		RHOOK(s, 2);
		e->version = LD(&s->version);
		RHOOK(s, 3);
		e->checksum = LD(&s->checksum);
		RHOOK(s, 4);
		e->tid = LD(&s->tid);
		e->ntids = LD(&s->ntids);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (LD(&s->seq) == s1)
			return 1;
	}
	return 0;
}

static int
slot_lock(dm_hot_slot *s, uint64_t *seq)
{
	uint64_t	v = LD(&s->seq);

	if ((v & 1) ||
		!__atomic_compare_exchange_n(&s->seq, &v, v + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	/* no store of the tuple may become visible before the odd sequence word */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*seq = v + 1;
	return 1;
}

static void
slot_unlock(dm_hot_slot *s, uint64_t seq)
{
	__atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELEASE);
}

#define HOOK(s, w) do { if (dm_hot_test_store_hook) dm_hot_test_store_hook((s), (w)); } while (0)

static void
write_tuple(dm_hot_slot *s, uint64_t tag, uint64_t key, dm_gaddr addr, uint64_t version, uint64_t checksum,
			uint32_t n, uint64_t tid)
{
	ST(&s->tag, tag);
	HOOK(s, 0);
	ST(&s->key, key);
	HOOK(s, 1);
	ST(&s->addr, addr);
	HOOK(s, 2);
	ST(&s->version, version);
	HOOK(s, 3);
	ST(&s->checksum, checksum);
	HOOK(s, 4);
	ST(&s->tid, tid);
	ST(&s->ntids, n);
	HOOK(s, 5);
}

int
dm_hot_find(dm_hot_table *ht, uint64_t tag, uint64_t key, dm_hot_ent *out)
{
	dm_hot_slot *set;

	if (ht == NULL || ht->nsets == 0)
		return 0;
	set = set_of(ht, tag, key);
	for (int w = 0; w < DM_HOT_WAYS; w++)
		if (read_slot(&set[w], out) && out->addr != 0 && out->key == key && out->tag == tag)
		{
			out->way = (uint32_t) (&set[w] - ht->slots);
			return 1;
		}
	return 0;
}

void
dm_hot_hit(dm_hot_table *ht, const dm_hot_ent *e)
{
	uint32_t   *f = &ht->slots[e->way].freq;
	uint32_t	v = LD(f);

	if (v < DM_HOT_FREQ_MAX)
		ST(f, v + 1);
}

void
dm_hot_store(dm_hot_table *ht, uint64_t tag, uint64_t key, dm_gaddr addr, uint64_t version,
			 uint64_t checksum, uint32_t n, uint64_t tid)
{
	dm_hot_slot *set,
			   *s = NULL;
	dm_hot_ent	e;
	uint64_t	seq;
	int			fresh = 0;

	if (ht == NULL || ht->nsets == 0 || addr == 0)
		return;
	set = set_of(ht, tag, key);
	for (int w = 0; w < DM_HOT_WAYS && s == NULL; w++)
		if (read_slot(&set[w], &e) && e.addr != 0 && e.key == key && e.tag == tag)
			s = &set[w];
	for (int w = 0; w < DM_HOT_WAYS && s == NULL; w++)
		if (read_slot(&set[w], &e) && e.addr == 0)
			s = &set[w], fresh = 1;
	if (s == NULL)
	{
		/* a full set: age it; a way whose count is spent goes to the newcomer */
		for (int w = 0; w < DM_HOT_WAYS; w++)
		{
			uint32_t	f = LD(&set[w].freq);

			if (f > 0)
				ST(&set[w].freq, f - 1);
			else if (s == NULL)
				s = &set[w], fresh = 1;
		}
		if (s == NULL)
			return;
	}
	if (!slot_lock(s, &seq))
		return;					/* another writer has it: this pin is lost */
	write_tuple(s, tag, key, addr, version, checksum, n, n == 1 ? tid : 0);
	if (fresh)
		ST(&s->freq, 1);
	else if (LD(&s->freq) < DM_HOT_FREQ_MAX)
		ST(&s->freq, LD(&s->freq) + 1);
	slot_unlock(s, seq);
}

void
dm_hot_unpin(dm_hot_table *ht, const dm_hot_ent *e, uint64_t mark)
{
	dm_hot_slot *s = &ht->slots[e->way];
	uint64_t	seq;

	if (!slot_lock(s, &seq))
		return;
	/* only if the slot still holds that tuple (a writer may have replaced it) */
	if (LD(&s->tag) == e->tag && LD(&s->key) == e->key && LD(&s->addr) == e->addr &&
		LD(&s->version) == e->version)
		ST(&s->version, mark);
	slot_unlock(s, seq);
}

void
dm_hot_forget(dm_hot_table *ht, uint64_t tag, uint64_t key)
{
	dm_hot_ent	e;
	dm_hot_slot *s;
	uint64_t	seq;

	if (!dm_hot_find(ht, tag, key, &e))
		return;
	s = &ht->slots[e.way];
	if (!slot_lock(s, &seq))
		return;
	if (LD(&s->tag) == tag && LD(&s->key) == key)
		ST(&s->addr, 0);
	slot_unlock(s, seq);
}
