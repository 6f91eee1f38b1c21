/*
 * log.c — the memnode's log: timestamped lines on stderr, filtered by
 * --log-level, and a rate-limited variant for messages hostile clients can
 * trigger at will (so garbage traffic cannot flood the log).
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "memnode.h"

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

/* The configuration lines follow (mn_log_init); before it, a zeroed one. */
static const mn_config no_cfg;
static const mn_config *log_cfg = &no_cfg;

void
mn_log_init(const mn_config *cfg)
{
	log_cfg = cfg;
}

static void
vlog(int level, const char *fmt, va_list ap)
{
	char		line[1024];
	char		ts[32];
	struct timespec now;
	struct tm	tm;
	int			n;

	clock_gettime(CLOCK_REALTIME, &now);
	localtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s.%03ld memnode[%d] %s: ", ts, now.tv_nsec / 1000000,
				 log_cfg->node_id, level_names[level]);
	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	/* one write per line so lines from several threads do not interleave */
	fprintf(stderr, "%s\n", line);
}

void
mn_log(int level, const char *fmt,...)
{
	va_list		ap;

	if (level > log_cfg->log_level)
		return;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void
mn_log_limited(const char *fmt,...)
{
	static uint64_t window;
	static int	count;
	static int	suppressed;
	uint64_t	sec = mn_mono_ns() / 1000000000u;
	va_list		ap;

	if (LOG_WARN > log_cfg->log_level)
		return;
	/* approximate under races, which is fine for a log limiter */
	if (__atomic_load_n(&window, __ATOMIC_RELAXED) != sec)
	{
		int			s = __atomic_exchange_n(&suppressed, 0, __ATOMIC_RELAXED);

		__atomic_store_n(&window, sec, __ATOMIC_RELAXED);
		__atomic_store_n(&count, 0, __ATOMIC_RELAXED);
		if (s > 0)
			mn_log(LOG_WARN, "%d similar messages suppressed", s);
	}
	if (__atomic_fetch_add(&count, 1, __ATOMIC_RELAXED) >= 10)
	{
		__atomic_fetch_add(&suppressed, 1, __ATOMIC_RELAXED);
		return;
	}
	va_start(ap, fmt);
	vlog(LOG_WARN, fmt, ap);
	va_end(ap);
}
