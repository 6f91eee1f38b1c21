/*
 * dm_shm.c — the shm backend: map a co-located memnode's exported region
 * and execute one-sided operations on it directly (CXL-style access).
 *
 * The memnode is not involved in these operations, so the client itself
 * enforces what the memnode would: bounds (the same dm_region_check_op),
 * all-or-nothing batches (a failed guard CAS ends one, as there), and liveness — the superblock tells whether the
 * memnode is alive (heartbeat), shut down (DEAD), reattaching to the region
 * after a restart (RECOVERING) or replaced by a new incarnation (REPLACED),
 * so a dead memnode is an error, not silent use of an orphaned mapping.  A
 * memnode that restarts on the same region file keeps its incarnation:
 * the mapping (the same file) stays valid, and a connection broken by the
 * restart is simply reopened (dm_client_check, dm_client_reconnect).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dm_client_int.h"
#include "dm_memops.h"

int
dm_shm_map(dm_client *c, dm_conn *cn)
{
	int			fd;
	struct stat st;
	void	   *base;
	int			rc;

	if (!cn->shm_offered)
		return dm_fail(c, cn, DM_ERR_NOSHM, "memnode does not export its region (start it with --shm)");
	fd = open(cn->shm_path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return dm_fail(c, cn, DM_ERR_NOSHM, "cannot open shared region \"%s\": %s",
					   cn->shm_path, strerror(errno));
	if (fstat(fd, &st) < 0 || (uint64_t) st.st_size != cn->region_size)
	{
		close(fd);
		return dm_fail(c, cn, DM_ERR_NOSHM, "shared region \"%s\" has the wrong size", cn->shm_path);
	}
	base = mmap(NULL, cn->region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return dm_fail(c, cn, DM_ERR_NOSHM, "cannot map shared region \"%s\": %s",
					   cn->shm_path, strerror(errno));
	/*
	 * The file at that path might belong to another memnode (same path on
	 * another host, or a stale file): only the incarnation proves it is the
	 * region we just shook hands with.
	 */
	rc = dm_region_attach(&cn->shm_region, base, cn->region_size);
	if (rc != DM_OK || cn->shm_region.sb->incarnation != cn->seen_incarnation ||
		cn->shm_region.node_id != cn->node_id)
	{
		munmap(base, cn->region_size);
		return dm_fail(c, cn, DM_ERR_NOSHM,
					   "shared region \"%s\" is not this memnode's region", cn->shm_path);
	}
	cn->shm_base = base;
	cn->shm_attach_count = __atomic_load_n(&cn->shm_region.sb->attach_count, __ATOMIC_ACQUIRE);
	return DM_OK;
}

void
dm_shm_unmap(dm_conn *cn)
{
	if (cn->shm_base != NULL)
		munmap(cn->shm_base, cn->region_size);
	cn->shm_base = NULL;
}

static uint64_t
coarse_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int
check_alive(dm_client *c, dm_conn *cn)
{
	const volatile dm_superblock *sb = cn->shm_region.sb;
	uint64_t	state = __atomic_load_n(&sb->state, __ATOMIC_ACQUIRE);
	uint64_t	hb = __atomic_load_n(&sb->heartbeat_ns, __ATOMIC_RELAXED);
	uint64_t	now;

	if (state == DM_SB_REPLACED || sb->incarnation != cn->incarnation)
		return dm_fail(c, cn, DM_ERR_INCARNATION, "memnode was restarted: region contents are gone");
	if (state == DM_SB_RECOVERING)
		return dm_fail(c, cn, DM_ERR_CLOSED, "memnode is reattaching to its region");
	if (state != DM_SB_LIVE)
		return dm_fail(c, cn, DM_ERR_CLOSED, "memnode has shut down");
	/*
	 * The memnode beats every 50 ms; allow at least 500 ms so a short
	 * op_timeout or a busy machine does not declare a healthy memnode dead.
	 * The coarse clock lags by a few ms at most; a heartbeat "ahead" is fresh.
	 */
	now = coarse_mono_ns();
	if (now > hb && now - hb > (uint64_t) (c->opts.op_timeout_ms > 500 ? c->opts.op_timeout_ms : 500) * 1000000u)
		return dm_fail(c, cn, DM_ERR_TIMEOUT, "memnode has not shown a heartbeat for %llu ms",
					   (unsigned long long) ((now - hb) / 1000000u));
	return DM_OK;
}

int
dm_shm_check(dm_client *c, dm_conn *cn)
{
	int			rc = check_alive(c, cn);

	if (rc != DM_OK)
		return rc;
	/*
	 * Every memnode start on a region counts in its superblock: another
	 * count means the process we shook hands with is gone and another
	 * reattached to the region, so our socket leads nowhere.
	 */
	if (__atomic_load_n(&cn->shm_region.sb->attach_count, __ATOMIC_ACQUIRE) != cn->shm_attach_count)
		return dm_fail(c, cn, DM_ERR_CLOSED, "memnode was restarted on its region");
	return DM_OK;
}

int
dm_shm_poll_due(dm_conn *cn)
{
	uint64_t	now = coarse_mono_ns();

	if (cn->polled_ns != 0 && now - cn->polled_ns < (uint64_t) DM_SHM_POLL_INTERVAL_MS * 1000000u)
		return 0;
	cn->polled_ns = now;
	return 1;
}

int
dm_shm_post(dm_client *c, dm_conn *cn, dm_op *ops, int *bad_index)
{
	uint8_t    *base = cn->shm_base;
	int			rc;

	if ((rc = check_alive(c, cn)) != DM_OK)
		return rc;
	/* validate everything first: a rejected batch applies nothing */
	for (int k = 0; k < cn->nidx; k++)
	{
		dm_op	   *op = &ops[cn->idx[k]];
		uint64_t	off = dm_gaddr_offset(op->addr);
		uint32_t	len = op->kind == DM_OP_READ || op->kind == DM_OP_WRITE ? op->len : 8;

		if (op->kind < DM_OP_READ || op->kind > DM_OP_KIND_MAX ||
			((op->kind == DM_OP_READ || op->kind == DM_OP_WRITE) && (op->len == 0 || op->buf == NULL)))
			rc = DM_ERR_INVALID;
		else
			rc = dm_region_check_op(&cn->shm_region, op->kind, off, len);
		if (rc != DM_OK)
		{
			if (bad_index)
				*bad_index = cn->idx[k];
			snprintf(c->err, sizeof(c->err), "memnode %s: operation %d (kind %d, address 0x%llx, length %u) rejected: %s",
					 cn->address, cn->idx[k], op->kind, (unsigned long long) op->addr, len, dm_strerror(rc));
			return rc;
		}
	}
	return dm_shm_exec(c, cn, base, ops);
}

/*
 * Execute a validated batch (cn->idx) on a local mapping of the region:
 * the shm backend's mapping, or the one UCX gives over shared memory
 * (dm_ucx.c, ucp_rkey_ptr).  Ops in order; a failed guard ends the batch.
 */
int
dm_shm_exec(dm_client *c, dm_conn *cn, uint8_t *base, dm_op *ops)
{
	int			tear = (c->opts.flags & DM_CLIENT_TEAR) != 0;

	for (int k = 0, skip = 0; k < cn->nidx; k++)
	{
		dm_op	   *op = &ops[cn->idx[k]];
		uint8_t    *p = base + dm_gaddr_offset(op->addr);

		if (skip)
		{
			/* as the memnode does after a failed guard: nothing more */
			op->result = 0;
			continue;
		}
		/* READ and WRITE first, as branches: a jump table cost ~2 ns an op in profiles */
		if (op->kind == DM_OP_READ)
		{
			dm_mem_read(op->buf, p, op->len, tear);
			cn->ctr.bytes_read += op->len;
		}
		else if (op->kind == DM_OP_WRITE)
		{
			if (c->kill_mid_armed)
			{
				/* fault injection: die between two stores */
				if ((uint64_t) c->kill_mid_words * 8 < op->len)
				{
					if (c->kill_mid_words > 0)
						dm_mem_write(p, op->buf, c->kill_mid_words * 8, tear);
					raise(SIGKILL);
				}
				c->kill_mid_words -= (op->len + 7) / 8;
			}
			dm_mem_write(p, op->buf, op->len, tear);
			cn->ctr.bytes_written += op->len;
		}
		else if (op->kind == DM_OP_CAS)
		{
			op->result = dm_mem_cas(p, op->arg0, op->arg1);
			skip = (op->flags & DM_OPF_GUARD) && op->result != op->arg0;
		}
		else if (op->kind == DM_OP_FAA)
			op->result = dm_mem_faa(p, op->arg0);
		else if (op->kind == DM_OP_FETCH_OR)
			op->result = dm_mem_fetch_or(p, op->arg0);
		else
			op->result = dm_mem_fetch_max(p, op->arg0);
		cn->ctr.ops[op->kind]++;
	}
	if (c->kill_mid_armed)
		raise(SIGKILL);			/* the step stored fewer words than the fault wanted */
	cn->ctr.round_trips++;
	return DM_OK;
}
