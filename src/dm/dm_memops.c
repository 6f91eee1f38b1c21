/*
 * dm_memops.c — one-sided operations on region memory with exactly the
 * atomicity RDMA/CXL give (see dm_memops.h), shared by the memnode's
 * executor and the shm client.
 */
#include <sched.h>
#include <string.h>

#include "dm_memops.h"

/*
 * Aligned words are moved with relaxed 8-byte atomic loads/stores, or, for
 * a long enough aligned middle on a CPU that makes them atomic, 16-byte
 * ones (dm_memops_wide.c): that is what makes each word untearable (memcpy
 * may use any access width, and concurrent memcpy on the same bytes is a
 * data race in C's model).  The unaligned head/tail bytes carry no
 * atomicity promise.  In tear mode we yield between words so other
 * processes get in between.
 */

/* below this many bytes the 8-byte loop is as fast (one or two words) */
#define WIDE_MIN 32
void
dm_mem_read(void *dst, const volatile uint8_t *src, uint32_t len, int tear)
{
	uint8_t    *d = dst;
	uint32_t	i = 0;

	/*
	 * Tear mode reads backwards: writers go forwards, so a reader and a
	 * writer on the same bytes cross instead of moving in step, and the
	 * reader does see a mix of old and new words.
	 */
	if (tear)
	{
		uint32_t	head = (uint32_t) ((8 - ((uintptr_t) src & 7)) & 7);
		uint32_t	end;

		if (head > len)
			head = len;
		end = head + (len - head) / 8 * 8;
		for (uint32_t k = len; k > end; k--)
			d[k - 1] = src[k - 1];
		for (uint32_t k = end; k > head; k -= 8)
		{
			uint64_t	w = __atomic_load_n((const volatile uint64_t *) (src + k - 8), __ATOMIC_RELAXED);

			memcpy(d + k - 8, &w, 8);
			sched_yield();
		}
		for (uint32_t k = head; k > 0; k--)
			d[k - 1] = src[k - 1];
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		return;
	}

	while (i < len && (((uintptr_t) (src + i)) & 7) != 0)
	{
		d[i] = src[i];
		i++;
	}
	if (len - i >= WIDE_MIN && dm_mem_copy_mode() == DM_MEMCOPY_WIDE)
	{
		uint32_t	n;

		/* one word to 16-byte alignment, then 16-byte atomic loads */
		if (((uintptr_t) (src + i)) & 15)
		{
			uint64_t	w = __atomic_load_n((const volatile uint64_t *) (src + i), __ATOMIC_RELAXED);

			memcpy(d + i, &w, 8);
			i += 8;
		}
		n = (len - i) & ~(uint32_t) 15;
		dm_mem_read_wide(d + i, src + i, n);
		i += n;
	}
	for (; i + 8 <= len; i += 8)
	{
		uint64_t	w = __atomic_load_n((const volatile uint64_t *) (src + i), __ATOMIC_RELAXED);

		memcpy(d + i, &w, 8);
	}
	for (; i < len; i++)
		d[i] = src[i];
	/* order the copy before anything the caller does with it */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
}

void
dm_mem_write(volatile uint8_t *dst, const void *src, uint32_t len, int tear)
{
	const uint8_t *s = src;
	uint32_t	i = 0;

	__atomic_thread_fence(__ATOMIC_RELEASE);
	while (i < len && (((uintptr_t) (dst + i)) & 7) != 0)
	{
		dst[i] = s[i];
		i++;
	}
	if (!tear && len - i >= WIDE_MIN && dm_mem_copy_mode() == DM_MEMCOPY_WIDE)
	{
		uint32_t	n;

		if (((uintptr_t) (dst + i)) & 15)
		{
			uint64_t	w;

			memcpy(&w, s + i, 8);
			__atomic_store_n((volatile uint64_t *) (dst + i), w, __ATOMIC_RELAXED);
			i += 8;
		}
		n = (len - i) & ~(uint32_t) 15;
		dm_mem_write_wide(dst + i, s + i, n);
		i += n;
	}
	for (; i + 8 <= len; i += 8)
	{
		uint64_t	w;

		memcpy(&w, s + i, 8);
		__atomic_store_n((volatile uint64_t *) (dst + i), w, __ATOMIC_RELAXED);
		if (tear)
			sched_yield();
	}
	for (; i < len; i++)
		dst[i] = s[i];
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

uint64_t
dm_mem_cas(volatile uint8_t *word, uint64_t expected, uint64_t desired)
{
	uint64_t	old = expected;

	__atomic_compare_exchange_n((volatile uint64_t *) word, &old, desired, 0,
								__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return old;
}

uint64_t
dm_mem_faa(volatile uint8_t *word, uint64_t add)
{
	return __atomic_fetch_add((volatile uint64_t *) word, add, __ATOMIC_SEQ_CST);
}

uint64_t
dm_mem_fetch_or(volatile uint8_t *word, uint64_t mask)
{
	return __atomic_fetch_or((volatile uint64_t *) word, mask, __ATOMIC_SEQ_CST);
}

uint64_t
dm_mem_fetch_max(volatile uint8_t *word, uint64_t value)
{
	uint64_t	old = __atomic_load_n((volatile uint64_t *) word, __ATOMIC_SEQ_CST);

	/* a failed exchange reloads old: the loop ends once old >= value or ours landed */
	while (old < value &&
		   !__atomic_compare_exchange_n((volatile uint64_t *) word, &old, value, 0,
										__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	return old;
}
