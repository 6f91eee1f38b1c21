/*
 * clock.c — the memnode's clocks: monotonic nanoseconds (timeouts, uptime,
 * the heartbeat, log timestamps) and wall-clock nanoseconds (creation times
 * in the catalog, the boot id).  Every memnode file reads them from here;
 * the fuzz targets link their own instead (test/fuzz/fuzz_memnode.c: a
 * fixed wall clock), as they replace main.c.
 */
#include <time.h>

#include "memnode.h"

uint64_t
mn_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

uint64_t
mn_unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}
