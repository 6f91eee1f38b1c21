/*
 * test_memops.c — the copies of src/dm/dm_memops.c (dm_mem_read and
 * dm_mem_write, which the memnode's executor, the shm backend and UCX's
 * mapping of the region use) in both modes, the 8-byte loop and the
 * 16-byte SSE one (dm_memops_wide.c):
 *   (a) every alignment of source and destination and every length up to
 *       300 bytes copies exactly what memcpy would, and nothing outside;
 *   (b) while a writer thread rewrites a 4 KiB block with patterned words
 *       (each word 8 equal bytes; 8-byte atomic stores, then 16-byte pairs
 *       through dm_mem_write), no aligned word a copy returns is ever
 *       torn, whatever the alignment of the read;
 *   (c) the same check, with a byte-wise copy in place of dm_mem_read,
 *       does find torn words: the check can fail.
 * Why: the tree reads version and lock words and hopscotch neighbourhoods
 * with plain READs and relies on every aligned 8-byte word being whole.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dm_memops.h"
#include "testutil.h"

#define BLOCK 4096
#define WORDS (BLOCK / 8)

/* ---- (a) exact copies ---------------------------------------------------- */

static void
test_exact(int mode, const char *name)
{
	static uint8_t region[512] __attribute__((aligned(64)));
	static uint8_t buf[512] __attribute__((aligned(64)));
	static uint8_t want[512];
	int			bad_read = 0,
				bad_write = 0,
				n = 0;

	dm_mem_set_copy_mode(mode);
	for (uint32_t so = 0; so < 32; so++)
		for (uint32_t dof = 0; dof < 16; dof += 3)
			for (uint32_t len = 0; len <= 300; len += (len < 80 ? 1 : 7))
			{
				for (int i = 0; i < 512; i++)
				{
					region[i] = (uint8_t) (i * 7 + so);
					buf[i] = (uint8_t) (0xA5 ^ i);
				}
				/* read: region + so -> buf + dof */
				memcpy(want, buf, sizeof(buf));
				memcpy(want + dof, region + so, len);
				dm_mem_read(buf + dof, region + so, len, 0);
				bad_read += memcmp(want, buf, sizeof(buf)) != 0;
				/* write: buf + dof -> region + so */
				memcpy(want, region, sizeof(region));
				memcpy(want + so, buf + dof, len);
				dm_mem_write(region + so, buf + dof, len, 0);
				bad_write += memcmp(want, region, sizeof(region)) != 0;
				n++;
			}
	CHECK(bad_read == 0, "%s: dm_mem_read copies exactly at every alignment and length (%d of %d wrong)",
		  name, bad_read, n);
	CHECK(bad_write == 0, "%s: dm_mem_write copies exactly at every alignment and length (%d of %d wrong)",
		  name, bad_write, n);
}

/* ---- (b), (c) concurrent writer -------------------------------------------- */

static uint8_t shared[BLOCK] __attribute__((aligned(64)));
static volatile int stop;
static volatile uint64_t gens_written;

/* word k of generation g: 8 equal bytes, so a torn word has unequal ones */
static uint64_t
pattern(uint64_t g, uint32_t k)
{
	return (uint64_t) (uint8_t) (g * 31 + k) * UINT64_C(0x0101010101010101);
}

static void *
writer(void *arg)
{
	static uint64_t img[WORDS];

	for (uint64_t g = 1; !stop; g++)
	{
		if (g & 1)
		{
			/* single 8-byte atomic stores */
			for (uint32_t k = 0; k < WORDS; k++)
				__atomic_store_n((volatile uint64_t *) (shared + 8 * k), pattern(g, k), __ATOMIC_RELAXED);
		}
		else
		{
			/* the whole block through dm_mem_write: 16-byte pairs in the wide mode */
			for (uint32_t k = 0; k < WORDS; k++)
				img[k] = pattern(g, k);
			dm_mem_write(shared, img, BLOCK, 0);
		}
		__atomic_store_n(&gens_written, g, __ATOMIC_RELAXED);
	}
	return NULL;
}

typedef void (*copy_fn) (void *dst, const volatile uint8_t *src, uint32_t len);

static void
copy_dm(void *dst, const volatile uint8_t *src, uint32_t len)
{
	dm_mem_read(dst, src, len, 0);
}

/*
 * The deliberately tearing copy: one byte at a time, yielding in the middle
 * of every 64th word, so that the writer gets in between even when both
 * threads share one CPU (a loaded machine, a sanitizer build).
 */
static void
copy_bytes(void *dst, const volatile uint8_t *src, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
	{
		((uint8_t *) dst)[i] = src[i];
		if ((i & 511) == 3)
			sched_yield();
	}
}

/*
 * Read the block with copy for ms milliseconds, longer (up to 3 s) until
 * 20 reads overlapped a write (a loaded machine may run both threads on
 * one CPU, where a read rarely straddles a write), or until stop_torn
 * torn words were seen, if > 0, at source offsets 0, 8 (the head word
 * before 16-byte alignment) and 3 (bytes, then words), into a destination
 * that is not aligned.  Count reads, torn aligned words, and reads mixing
 * generations (evidence that the writer ran during the read).
 */
static void
run_concurrent(copy_fn copy, int ms, long stop_torn, long *reads, long *torn, long *mixed, uint64_t *gens)
{
	static uint8_t out[BLOCK + 16];
	static const uint32_t offs[] = {0, 8, 3};
	pthread_t	th;
	uint64_t	end,
				cap;
	uint64_t	g0;

	*reads = *torn = *mixed = 0;
	stop = 0;
	memset(shared, 0, sizeof(shared));
	gens_written = 0;
	if (pthread_create(&th, NULL, writer, NULL) != 0)
	{
		tap_diag("pthread_create failed");
		return;
	}
	/* the window starts once the writer runs (a loaded machine may delay it) */
	while (__atomic_load_n(&gens_written, __ATOMIC_RELAXED) == 0)
		sched_yield();
	g0 = gens_written;
	end = now_ns() + (uint64_t) ms * 1000000u;
	cap = end + UINT64_C(3000000000) - (uint64_t) ms * 1000000u;
	for (long r = 0; (stop_torn <= 0 || *torn < stop_torn); r++)
	{
		uint32_t	so = offs[r % 3];
		uint32_t	len = BLOCK - so - (r & 8 ? 5 : 0);
		uint8_t    *d = out + 1;	/* the private side needs no alignment */
		int			first = -1,
					mix = 0;

		copy(d, shared + so, len);
		/* the aligned words of the region the read covered whole */
		for (uint32_t k = (so + 7) / 8; 8 * k + 8 <= so + len; k++)
		{
			uint64_t	w;
			int			gen;

			memcpy(&w, d + 8 * k - so, 8);
			if (w != (uint64_t) (uint8_t) w * UINT64_C(0x0101010101010101))
			{
				(*torn)++;
				continue;
			}
			gen = (uint8_t) ((uint8_t) w - k);	/* g * 31 mod 256 */
			if (first < 0)
				first = gen;
			else if (gen != first)
				mix = 1;
		}
		*mixed += mix;
		(*reads)++;
		if ((r & 63) == 0)
		{
			uint64_t	now = now_ns();

			if (now >= cap || (now >= end && *mixed >= 20))
				break;
		}
	}
	stop = 1;
	pthread_join(th, NULL);
	*gens = gens_written - g0;
}

static void
test_concurrent(int mode, const char *name)
{
	long		reads,
				torn,
				mixed;
	uint64_t	gens;

	dm_mem_set_copy_mode(mode);
	run_concurrent(copy_dm, 600, 0, &reads, &torn, &mixed, &gens);
	tap_diag("%s: %ld reads of 4 KiB, %ld mixing generations, %llu generations written, %ld torn words",
			 name, reads, mixed, (unsigned long long) gens, torn);
	CHECK(mixed > 0 && gens > 100, "%s: the writer ran during the reads (%ld of %ld reads saw two generations)",
		  name, mixed, reads);
	CHECK(torn == 0, "%s: no aligned 8-byte word torn under a concurrent writer (%ld torn in %ld reads)",
		  name, torn, reads);
}

int
main(void)
{
	int			wide = dm_mem_set_copy_mode(DM_MEMCOPY_WIDE) == 0;
	long		reads,
				torn,
				mixed;
	uint64_t	gens;

	if (!wide)
		tap_diag("this CPU does not guarantee atomic 16-byte SSE accesses: the 8-byte loop only");
	else if (getenv("DM_MEMCOPY") == NULL)
	{
		dm_mem_set_copy_mode(0);	/* rejected: the mode stays */
		CHECK(dm_mem_copy_mode() == DM_MEMCOPY_WIDE, "the 16-byte copy is available on this CPU");
	}

	test_exact(DM_MEMCOPY_WORD, "8-byte loop");
	if (wide)
		test_exact(DM_MEMCOPY_WIDE, "16-byte loop");

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
	{
		tap_diag("one CPU: no concurrent reader and writer, (b) and (c) skipped");
		return tap_done();
	}
	test_concurrent(DM_MEMCOPY_WORD, "8-byte loop");
	if (wide)
		test_concurrent(DM_MEMCOPY_WIDE, "16-byte loop");

	/* (c): the check does see a copy that tears words */
	run_concurrent(copy_bytes, 600, 50, &reads, &torn, &mixed, &gens);
	tap_diag("byte-wise copy: %ld torn words in %ld reads", torn, reads);
	CHECK(torn > 0, "the check finds torn words in a byte-wise copy (%ld in %ld reads)", torn, reads);
	return tap_done();
}
