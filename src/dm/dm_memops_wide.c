/*
 * dm_memops_wide.c — how dm_memops.c moves the aligned middle of a READ
 * or WRITE: 8-byte atomic loads/stores everywhere, or, on x86-64 CPUs
 * whose manuals make aligned 16-byte SSE accesses atomic, 16-byte ones
 * (about twice as fast for a node-sized block: the shm backend, UCX's
 * mapping of the region and the memnode's executor all copy here).
 *
 * Why not memcpy or rep movsb: neither promises anything about the width
 * or the atomicity of the accesses it makes, and the tree relies on every
 * aligned 8-byte word of a read being one the writer stored (version and
 * lock words, hopscotch neighbourhoods read as a seqlock; dm_memops.h).
 *
 * The guarantee used (checked at the first copy, per process):
 *   Intel 64 and IA-32 Architectures SDM, Vol. 3A, §9.1.1 "Guaranteed
 *   Atomic Operations" (§8.1.1 in older editions): processors that
 *   enumerate AVX (CPUID.01H:ECX.AVX[bit 28]) carry out the 16-byte memory
 *   operations of MOVAPD, MOVAPS and MOVDQA (and their VEX.128 forms)
 *   atomically; the operand must be 16-byte aligned.
 *   AMD64 Architecture Programmer's Manual, Vol. 2, §7.3.2 "Access
 *   Atomicity": on processors with CPUID Fn0000_0001_ECX[AVX] (bit 28) = 1,
 *   cacheable, naturally aligned single loads and stores of up to a double
 *   quadword (16 bytes) are atomic.
 * So the region side of every 16-byte access below is a MOVDQA on a
 * 16-byte-aligned address (the region is ordinary write-back memory);
 * the private buffer's side may be unaligned (MOVDQU: nobody else sees
 * it).  Inline assembly, so that the compiler can neither split the
 * accesses nor turn the loop into a memcpy call.  Other vendors, other
 * architectures and DM_MEMCOPY=word in the environment keep the 8-byte
 * loop (dm_memops.c); so do unaligned heads and tails.
 */
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "dm_memops.h"

static int	copy_mode;			/* 0 until the first copy decides */

/* May this CPU use the 16-byte copy (see the manuals cited above)? */
static int
wide_supported(void)
{
#if defined(__x86_64__)
	unsigned int eax, ebx, ecx, edx;
	char		vendor[13];

	if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx))
		return 0;
	memcpy(vendor, &ebx, 4);
	memcpy(vendor + 4, &edx, 4);
	memcpy(vendor + 8, &ecx, 4);
	vendor[12] = '\0';
	/* the two manuals that state the guarantee */
	if (strcmp(vendor, "GenuineIntel") != 0 && strcmp(vendor, "AuthenticAMD") != 0)
		return 0;
	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		return 0;
	return (ecx & bit_AVX) != 0;
#else
	return 0;
#endif
}

int
dm_mem_copy_mode(void)
{
	int			mode = __atomic_load_n(&copy_mode, __ATOMIC_RELAXED);

	if (mode == 0)
	{
		const char *env = getenv("DM_MEMCOPY");

		/* every thread computes the same value: a race only repeats the work */
		mode = (env == NULL || strcmp(env, "word") != 0) && wide_supported() ?
			DM_MEMCOPY_WIDE : DM_MEMCOPY_WORD;
		__atomic_store_n(&copy_mode, mode, __ATOMIC_RELAXED);
	}
	return mode;
}

int
dm_mem_set_copy_mode(int mode)
{
	if (mode != DM_MEMCOPY_WORD && mode != DM_MEMCOPY_WIDE)
		return -1;
	if (mode == DM_MEMCOPY_WIDE && !wide_supported())
		return -1;
	__atomic_store_n(&copy_mode, mode, __ATOMIC_RELAXED);
	return 0;
}

#if defined(__x86_64__)

/* src (region) 16-byte aligned, len a multiple of 16 */
void
dm_mem_read_wide(uint8_t *dst, const volatile uint8_t *src, uint32_t len)
{
	uint32_t	i = 0;

	for (; i + 64 <= len; i += 64)
		__asm__ volatile("movdqa   (%[s]), %%xmm0\n\t"
						 "movdqa 16(%[s]), %%xmm1\n\t"
						 "movdqa 32(%[s]), %%xmm2\n\t"
						 "movdqa 48(%[s]), %%xmm3\n\t"
						 "movdqu %%xmm0,   (%[d])\n\t"
						 "movdqu %%xmm1, 16(%[d])\n\t"
						 "movdqu %%xmm2, 32(%[d])\n\t"
						 "movdqu %%xmm3, 48(%[d])"
						 :
						 :[s] "r"(src + i),[d] "r"(dst + i)
						 :"xmm0", "xmm1", "xmm2", "xmm3", "memory");
	for (; i < len; i += 16)
		__asm__ volatile("movdqa (%[s]), %%xmm0\n\t"
						 "movdqu %%xmm0, (%[d])"
						 :
						 :[s] "r"(src + i),[d] "r"(dst + i)
						 :"xmm0", "memory");
}

/* dst (region) 16-byte aligned, len a multiple of 16 */
void
dm_mem_write_wide(volatile uint8_t *dst, const uint8_t *src, uint32_t len)
{
	uint32_t	i = 0;

	for (; i + 64 <= len; i += 64)
		__asm__ volatile("movdqu   (%[s]), %%xmm0\n\t"
						 "movdqu 16(%[s]), %%xmm1\n\t"
						 "movdqu 32(%[s]), %%xmm2\n\t"
						 "movdqu 48(%[s]), %%xmm3\n\t"
						 "movdqa %%xmm0,   (%[d])\n\t"
						 "movdqa %%xmm1, 16(%[d])\n\t"
						 "movdqa %%xmm2, 32(%[d])\n\t"
						 "movdqa %%xmm3, 48(%[d])"
						 :
						 :[s] "r"(src + i),[d] "r"(dst + i)
						 :"xmm0", "xmm1", "xmm2", "xmm3", "memory");
	for (; i < len; i += 16)
		__asm__ volatile("movdqu (%[s]), %%xmm0\n\t"
						 "movdqa %%xmm0, (%[d])"
						 :
						 :[s] "r"(src + i),[d] "r"(dst + i)
						 :"xmm0", "memory");
}

#else

/* never chosen (wide_supported is 0): the 8-byte loop does everything */
void
dm_mem_read_wide(uint8_t *dst, const volatile uint8_t *src, uint32_t len)
{
	abort();
}

void
dm_mem_write_wide(volatile uint8_t *dst, const uint8_t *src, uint32_t len)
{
	abort();
}

#endif
