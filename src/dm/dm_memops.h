/*
 * dm_memops.h — the one-sided operations executed on region memory: copies
 * with 8-byte atomicity and CAS / fetch-and-add / fetch-or.
 *
 * The same functions run in the memnode (executing a client's batch) and in
 * a shm client (operating on the mapped region directly), so both transports
 * give exactly the guarantee RDMA and CXL give: each aligned 8-byte word is
 * read or written atomically, a larger read or write is not (the copy may
 * use wider atomic accesses, never narrower or unaligned ones for a word).
 * In tear mode (a test mode) every copy is done one word at a time with a
 * yield between words, so that other processes' operations interleave and
 * readers do see torn data: the tree's validation is tested against that.
 */
#ifndef DM_MEMOPS_H
#define DM_MEMOPS_H

#include "dm_types.h"

extern void dm_mem_read(void *dst, const volatile uint8_t *src, uint32_t len, int tear);
extern void dm_mem_write(volatile uint8_t *dst, const void *src, uint32_t len, int tear);
/*
 * How the aligned middle of a copy is moved (dm_memops_wide.c): 8-byte
 * atomic accesses, or 16-byte ones where the CPU's manual makes aligned
 * SSE accesses atomic.  Either way no aligned 8-byte word is ever torn.
 * The mode is chosen at the first copy (DM_MEMCOPY=word in the environment
 * forces the 8-byte loop); dm_mem_set_copy_mode is for tests and
 * benchmarks (-1: not available on this CPU).
 */
#define DM_MEMCOPY_WORD 1
#define DM_MEMCOPY_WIDE 2
extern int	dm_mem_copy_mode(void);
extern int	dm_mem_set_copy_mode(int mode);
/* the 16-byte loops: region side 16-byte aligned, len a multiple of 16 */
extern void dm_mem_read_wide(uint8_t *dst, const volatile uint8_t *src, uint32_t len);
extern void dm_mem_write_wide(volatile uint8_t *dst, const uint8_t *src, uint32_t len);

extern uint64_t dm_mem_cas(volatile uint8_t *word, uint64_t expected, uint64_t desired);
extern uint64_t dm_mem_faa(volatile uint8_t *word, uint64_t add);
extern uint64_t dm_mem_fetch_or(volatile uint8_t *word, uint64_t mask);
extern uint64_t dm_mem_fetch_max(volatile uint8_t *word, uint64_t value);

#endif							/* DM_MEMOPS_H */
