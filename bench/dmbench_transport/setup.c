/*
 * setup.c — what the cells need before they run: the chunk of remote memory
 * every client reads and CASes in (allocated, owned with --auth, filled with
 * a known pattern, freed at the end), the probe that tells whether the shm
 * backend can map the memnode's region, and the clock's own overhead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_region.h"
#include "testauth.h"
#include "testutil.h"

#include "transport_bench.h"

/* ---- setup: the chunk, the shm probe ---------------------------------------- */

/*
 * Allocate the chunk every cell works in, and fill it with a pattern so
 * reads copy real data.  The owner id only has to be unique: it sits in
 * the tree-id space (node id << 48 | sequence) at node id 0x7FFE, which no
 * memnode in a benchmark uses, plus our pid.
 */
int
setup_chunk(char *err, size_t errsz)
{
	dm_client_opts opts;
	dm_client  *c;
	uint16_t	node;
	int			st;
	uint8_t		pat[4096];
	uint64_t	off;
	size_t		i;

	memset(&opts, 0, sizeof(opts));
	opts.backend = DM_BACKEND_TCP;
	opts.name = "dmbench_transport-setup";
	apply_auth(&opts);
	c = dm_client_create(&opts);
	if (!c)
	{
		snprintf(err, errsz, "dm_client_create failed");
		return -1;
	}
	st = dm_client_connect(c, memnode_addr, &node);
	if (st != DM_OK)
	{
		snprintf(err, errsz, "connect %s: %s (%s)", memnode_addr, dm_strerror(st),
				 dm_client_error(c));
		dm_client_destroy(c);
		return -1;
	}
	owner_id = (UINT64_C(0x7FFE) << 48) | (uint64_t) getpid();
	if (with_auth)
	{
		/* with authentication a chunk's owner must be a tree of the caller */
		dm_tree_info ti;
		char		tn[64];

		snprintf(tn, sizeof(tn), "dmbench_transport-%d", (int) getpid());
		dm_tree_name_named(&auth_tree, tn);
		if ((st = dm_tree_create(c, node, &auth_tree, &ti)) != DM_OK)
		{
			snprintf(err, errsz, "dm_tree_create: %s (%s)", dm_strerror(st), dm_client_error(c));
			dm_client_destroy(c);
			return -1;
		}
		owner_id = ti.tree_id;
	}
	st = dm_chunk_alloc(c, node, owner_id, &chunk_base, &chunk_size);
	if (st != DM_OK)
	{
		snprintf(err, errsz, "dm_chunk_alloc: %s (%s)", dm_strerror(st), dm_client_error(c));
		dm_client_destroy(c);
		return -1;
	}
	if (chunk_size < (uint64_t) MAX_CLIENTS * CLIENT_AREA)
	{
		snprintf(err, errsz, "chunk of %" PRIu64 " B is smaller than the %u B needed",
				 chunk_size, MAX_CLIENTS * CLIENT_AREA);
		dm_chunk_free(c, chunk_base);
		dm_client_destroy(c);
		return -1;
	}
	for (i = 0; i < sizeof(pat); i++)
		pat[i] = pattern_byte(i);
	for (off = 0; off < (uint64_t) MAX_CLIENTS * CLIENT_AREA; off += sizeof(pat))
	{
		st = dm_write(c, chunk_base + off, pat, sizeof(pat));
		if (st != DM_OK)
		{
			snprintf(err, errsz, "dm_write: %s (%s)", dm_strerror(st), dm_client_error(c));
			dm_chunk_free(c, chunk_base);
			dm_client_destroy(c);
			return -1;
		}
	}
	/*
	 * Disconnect: an idle connection must not hold one of the memnode's
	 * threads (or its attention) while the cells run.
	 */
	dm_client_destroy(c);
	return 0;
}

void
free_chunk(void)
{
	dm_client_opts opts;
	dm_client  *c;
	uint16_t	node;
	uint64_t	nfreed;

	memset(&opts, 0, sizeof(opts));
	opts.backend = DM_BACKEND_TCP;
	opts.name = "dmbench_transport-cleanup";
	apply_auth(&opts);
	c = dm_client_create(&opts);
	if (!c)
		return;
	if (dm_client_connect(c, memnode_addr, &node) == DM_OK)
	{
		dm_chunk_free_owner(c, node, owner_id, &nfreed);
		if (with_auth)
			dm_tree_drop(c, node, &auth_tree, &nfreed);
	}
	dm_client_destroy(c);
}

/* Can this process map the memnode's region?  Returns DM_OK or why not. */
int
probe_shm(char *err, size_t errsz)
{
	dm_client_opts opts;
	dm_client  *c;
	uint16_t	node;
	int			st;

	memset(&opts, 0, sizeof(opts));
	opts.backend = DM_BACKEND_SHM;
	opts.name = "dmbench_transport-probe";
	apply_auth(&opts);
	c = dm_client_create(&opts);
	if (!c)
		return DM_ERR_NOMEM;
	st = dm_client_connect(c, memnode_addr, &node);
	if (st != DM_OK)
		snprintf(err, errsz, "%s", dm_client_error(c)[0] ? dm_client_error(c) : dm_strerror(st));
	dm_client_destroy(c);
	return st;
}

/* Mean cost of one clock_gettime(CLOCK_MONOTONIC), in ns. */
double
clock_overhead_ns(void)
{
	const int	n = 1000000;
	uint64_t	t0 = now_ns(),
				t1;
	volatile uint64_t sink = 0;
	int			i;

	for (i = 0; i < n; i++)
		sink += now_ns();
	t1 = now_ns();
	(void) sink;
	return (double) (t1 - t0) / n;
}
