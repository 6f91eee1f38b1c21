/*
 * ucx.c — the memnode's UCX export (--ucx): the region registered with
 * UCX (on InfiniBand/RoCE: rdma-core verbs; here: UCX's tcp and shared
 * memory transports), its packed rkey and our worker address handed to
 * clients by the UCX_ATTACH RPC (exec.c; only after the handshake, so
 * only to authenticated clients), and a thread progressing the worker.
 * RPCs over UCX active messages arrive on the same worker (ucx_rpc.c); the
 * progress thread only queues them for the server's workers.
 *
 * Where the region comes from decides how one-sided the shared-memory
 * transports are: memory from U.ucp_mem_map(UCP_MEM_MAP_ALLOCATE) is a
 * posix/sysv segment that a co-located client maps, so its get, put and
 * atomics run on the client's CPU (~0.05 µs); an existing mapping that is
 * only registered (a region file: --shm, --region-file) is reached
 * through cma and active messages (~1.3 µs) instead.  So an anonymous
 * region is allocated here; a file-backed region is registered, keeping
 * its durability (reattach after a restart) at the price of emulated
 * shared-memory access.  On RDMA hardware both are one-sided.
 *
 * Over UCX's tcp transport every get and atomic is executed by this
 * worker (active-message emulation), so the progress thread must run
 * whenever a client waits: it polls for --poll-us after activity, then
 * sleeps on the worker's wake-up fd.
 *
 * Atomics: the context asks for UCX_ATOMIC_MODE=cpu, so every remote
 * atomic UCX performs on the region is atomic with respect to this
 * memnode's CPU atomics (tcp batches, RPCs, recovery: dm_memops.c) —
 * transports whose atomics run in a NIC without that guarantee are not
 * used for atomics; UCX then emulates them on this worker with CPU atomics.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "dm_ucx.h"
#include "memnode.h"

static ucp_context_h ctx;
static ucp_worker_h worker;
static ucp_mem_h memh;
static int	worker_efd = -1;
static pthread_t progress_thread;
static int	progress_started;
static volatile int progress_stop;

int
mn_ucx_init(mn_state *mns, mn_ucx_post_fn post)
{
	ucp_config_t *config;
	ucp_params_t params;
	ucp_worker_params_t wp;
	ucs_status_t st;

	const char *why;

	if ((why = dm_ucx_load()) != NULL)
	{
		mn_log(LOG_ERROR, "%s", why);
		return -1;
	}
	if ((st = U.ucp_config_read(NULL, NULL, &config)) != UCS_OK)
	{
		mn_log(LOG_ERROR, "cannot read the UCX configuration: %s", U.ucs_status_string(st));
		return -1;
	}
	/* remote atomics must agree with our CPU's atomics on the same lock words */
	if (getenv("UCX_ATOMIC_MODE") == NULL)
		U.ucp_config_modify(config, "ATOMIC_MODE", "cpu");
	memset(&params, 0, sizeof(params));
	params.field_mask = UCP_PARAM_FIELD_FEATURES;
	params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
	st = U.ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &ctx);
	U.ucp_config_release(config);
	if (st != UCS_OK)
	{
		mn_log(LOG_ERROR, "cannot initialise UCX: %s", U.ucs_status_string(st));
		return -1;
	}
	memset(&wp, 0, sizeof(wp));
	wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
	/* the progress thread, and the server's workers for RPCs over UCX (ucx_rpc.c) */
	wp.thread_mode = UCS_THREAD_MODE_MULTI;
	if ((st = U.ucp_worker_create(ctx, &wp, &worker)) != UCS_OK ||
		(st = U.ucp_worker_get_efd(worker, &worker_efd)) != UCS_OK)
	{
		mn_log(LOG_ERROR, "cannot create a UCX worker: %s", U.ucs_status_string(st));
		return -1;
	}
	return mn_ucx_rpc_init(mns, worker, post);
}

void *
mn_ucx_alloc(mn_state *mns, uint64_t size)
{
	ucp_mem_map_params_t mp;
	ucp_mem_attr_t attr;
	ucs_status_t st;

	memset(&mp, 0, sizeof(mp));
	mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
	mp.length = size;
	mp.flags = UCP_MEM_MAP_ALLOCATE;
	if ((st = U.ucp_mem_map(ctx, &mp, &memh)) != UCS_OK)
	{
		mn_log(LOG_WARN, "UCX cannot allocate the region (%s): registering anonymous memory instead",
			   U.ucs_status_string(st));
		memh = NULL;
		return NULL;
	}
	attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
	if (U.ucp_mem_query(memh, &attr) != UCS_OK || attr.length < size)
	{
		U.ucp_mem_unmap(ctx, memh);
		memh = NULL;
		return NULL;
	}
	/* the memory domains UCX allocates from (posix, sysv, mmap) hand out zeroed pages, as mmap does */
	mns->ucx_allocated = 1;
	return attr.address;
}

static void *
progress_main(void *arg)
{
	mn_state   *mns = arg;
	uint64_t	poll_until = 0;

	while (!progress_stop)
	{
		if (U.ucp_worker_progress(worker) != 0)
		{
			/* more may follow within microseconds: keep polling a while */
			if (mns->cfg.poll_us > 0)
				poll_until = mn_mono_ns() + (uint64_t) mns->cfg.poll_us * 1000u;
			continue;
		}
		if (mn_mono_ns() < poll_until)
		{
			sched_yield();		/* a client on this core must run */
			continue;
		}
		if (U.ucp_worker_arm(worker) == UCS_OK)
		{
			struct pollfd p = {.fd = worker_efd, .events = POLLIN};

			poll(&p, 1, 100);	/* 100 ms: notice the stop flag */
		}
	}
	return NULL;
}

int
mn_ucx_export(mn_state *mns, void *base, uint64_t size)
{
	ucp_mem_map_params_t mp;
	ucs_status_t st;
	void	   *rkey = NULL;
	size_t		rkey_len = 0;
	ucp_address_t *addr = NULL;
	size_t		addr_len = 0;
	dm_rpc_ucx_rep rep;
	uint8_t    *blob;

	if (memh == NULL)
	{
		memset(&mp, 0, sizeof(mp));
		mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
		mp.address = base;
		mp.length = size;
		if ((st = U.ucp_mem_map(ctx, &mp, &memh)) != UCS_OK)
		{
			mn_log(LOG_ERROR, "cannot register the region with UCX: %s", U.ucs_status_string(st));
			return -1;
		}
	}
	if ((st = U.ucp_rkey_pack(ctx, memh, &rkey, &rkey_len)) != UCS_OK ||
		(st = U.ucp_worker_get_address(worker, &addr, &addr_len)) != UCS_OK)
	{
		mn_log(LOG_ERROR, "cannot pack the UCX rkey or worker address: %s", U.ucs_status_string(st));
		return -1;
	}
	if (rkey_len + addr_len > DM_UCX_BLOB_MAX)
	{
		mn_log(LOG_ERROR, "UCX rkey and worker address take %zu bytes, more than %d: restrict UCX_TLS",
			   rkey_len + addr_len, DM_UCX_BLOB_MAX);
		return -1;
	}
	memset(&rep, 0, sizeof(rep));
	rep.base = (uint64_t) (uintptr_t) base;
	rep.rkey_len = (uint32_t) rkey_len;
	rep.addr_len = (uint32_t) addr_len;
	rep.flags = mns->ucx_allocated ? DM_UCX_ALLOCATED : 0;
	if ((blob = malloc(sizeof(rep) + rkey_len + addr_len)) == NULL)
		return -1;
	memcpy(blob, &rep, sizeof(rep));
	memcpy(blob + sizeof(rep), rkey, rkey_len);
	memcpy(blob + sizeof(rep) + rkey_len, addr, addr_len);
	U.ucp_rkey_buffer_release(rkey);
	U.ucp_worker_release_address(worker, addr);
	if (pthread_create(&progress_thread, NULL, progress_main, mns) != 0)
	{
		free(blob);
		return -1;
	}
	progress_started = 1;
	mns->ucx_bind = mn_ucx_bind;
	mns->ucx_blob_len = (uint32_t) (sizeof(rep) + rkey_len + addr_len);
	__atomic_store_n(&mns->ucx_blob, blob, __ATOMIC_RELEASE);
	mn_log(LOG_INFO, "region exported through UCX (%s, rkey %zu bytes, worker address %zu bytes)",
		   mns->ucx_allocated ? "allocated by ucp_mem_map" : "registered", rkey_len, addr_len);
	return 0;
}

void
mn_ucx_stop(void)
{
	if (!progress_started)
		return;
	progress_stop = 1;
	pthread_join(progress_thread, NULL);
	progress_started = 0;
	/*
	 * The worker, the registration and an allocated region stay until the
	 * process exits: mn_region_close may still write the region back.
	 */
}
