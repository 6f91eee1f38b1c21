/*
 * region_mem.c — obtaining the memory node's region: anonymous memory, or a
 * file — the shared-memory file co-located clients map (--shm, in /dev/shm
 * by default) or any file given with --region-file (a plain file system, a
 * DAX mount) — optionally on huge pages and bound to a NUMA node (a
 * CPU-less NUMA node is how a CXL memory expander appears).
 *
 * Anonymous memory dies with the process: every start formats a fresh
 * region under a new incarnation.  A region in a file outlives the
 * process, so a start first tries to reattach to it and keep its
 * incarnation (region_attach.c decides whether it is intact); only if it
 * is not, or --fresh-region is given, is the old file retired and a fresh
 * one formatted.  A clean shutdown (mn_region_close) leaves the file in
 * place, marked clean and written back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "dm_journal.h"
#include "memnode.h"

#define HUGETLBFS_MAGIC 0x958458f6

static int	region_fd = -1;
static uint64_t region_bytes;	/* the mapping's length */

static uint64_t
new_incarnation(void)
{
	uint64_t	v = 0;

	while (v == 0)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = mn_mono_ns() ^ ((uint64_t) getpid() << 32);
	return v;
}

/*
 * Retire a region file we will not reattach: mark it REPLACED before
 * unlinking it, so clients still mapping it get "memnode restarted" instead
 * of silently using orphaned memory.  fd is open and flock()ed by us.
 */
static void
retire_file(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && (size_t) st.st_size >= sizeof(dm_superblock))
	{
		dm_superblock *sb = mmap(NULL, sizeof(*sb), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (sb != MAP_FAILED)
		{
			if (sb->magic == DM_SB_MAGIC)
			{
				__atomic_store_n(&sb->state, DM_SB_REPLACED, __ATOMIC_RELEASE);
				mn_log(LOG_INFO, "retired region file \"%s\" of incarnation %016llx",
					   path, (unsigned long long) sb->incarnation);
			}
			munmap(sb, sizeof(*sb));
		}
	}
	unlink(path);
}

static int
hugetlbfs_dir(const char *dir)
{
	struct statfs sfs;

	return statfs(dir, &sfs) == 0 && (unsigned long) sfs.f_type == HUGETLBFS_MAGIC;
}

/* Which file the region lives in: --region-file, else the --shm export. */
static int
choose_path(mn_state *mns)
{
	if (mns->cfg.region_file[0])
		snprintf(mns->region_path, sizeof(mns->region_path), "%s", mns->cfg.region_file);
	else if (mns->cfg.shm_path[0])
		snprintf(mns->region_path, sizeof(mns->region_path), "%s", mns->cfg.shm_path);
	else if (mns->cfg.hugepages)
	{
		if (!hugetlbfs_dir("/dev/hugepages"))
		{
			mn_log(LOG_ERROR, "--hugepages on with --shm needs a hugetlbfs mount: /dev/hugepages is not one (give --shm-path on a hugetlbfs mount)");
			return -1;
		}
		snprintf(mns->region_path, sizeof(mns->region_path), "/dev/hugepages/dmindex-memnode-%d", mns->cfg.listen_port);
	}
	else
		snprintf(mns->region_path, sizeof(mns->region_path), "/dev/shm/dmindex-memnode-%d", mns->cfg.listen_port);
	return 0;
}

/*
 * Open an existing region file and reattach to it if it is intact.
 * Returns the mapping, NULL if there is nothing to reattach (the file is
 * then retired or absent), or MAP_FAILED on a hard error.
 */
static void *
reattach_file(mn_state *mns, uint64_t size)
{
	struct stat st;
	void	   *base;
	const char *why;
	int			fd = open(mns->region_path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
	{
		if (errno != ENOENT)
		{
			mn_log(LOG_ERROR, "cannot open region file \"%s\": %s", mns->region_path, strerror(errno));
			return MAP_FAILED;
		}
		mn_log(LOG_INFO, "no region file at \"%s\": starting a fresh region", mns->region_path);
		return NULL;
	}
	/* a live memnode holds a lock on its file: never take over a living region */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
	{
		mn_log(LOG_ERROR, "region file \"%s\" is in use by another running memnode", mns->region_path);
		close(fd);
		return MAP_FAILED;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
	{
		mn_log(LOG_ERROR, "region file \"%s\" is not a regular file", mns->region_path);
		close(fd);
		return MAP_FAILED;
	}
	if (mns->cfg.fresh_region)
	{
		mn_log(LOG_INFO, "--fresh-region: not reattaching the region in \"%s\"", mns->region_path);
		retire_file(fd, mns->region_path);
		close(fd);
		return NULL;
	}
	base = (uint64_t) st.st_size >= 4096 ?
		mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
	why = base == MAP_FAILED ? "it is too small to hold a superblock" :
		mn_region_not_intact(mns, base, (uint64_t) st.st_size, size);
	if (why == NULL && mn_region_reattach(mns, base, size) < 0)
		why = "its metadata could not be made consistent";
	if (why != NULL)
	{
		mn_log(LOG_WARN, "region file \"%s\" cannot be reattached: %s; starting a fresh region under a new incarnation (indexes stored on this memnode must be rebuilt)",
			   mns->region_path, why);
		if (base != MAP_FAILED)
			munmap(base, (size_t) st.st_size);
		retire_file(fd, mns->region_path);
		close(fd);
		return NULL;
	}
	region_fd = fd;
	return base;
}

/* A new, empty region file of size bytes, mapped. */
static void *
create_file(mn_state *mns, uint64_t size)
{
	void	   *base;

	region_fd = open(mns->region_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (region_fd < 0 || flock(region_fd, LOCK_EX | LOCK_NB) < 0)
	{
		mn_log(LOG_ERROR, "cannot create region file \"%s\": %s", mns->region_path, strerror(errno));
		return NULL;
	}
	if (ftruncate(region_fd, (off_t) size) < 0)
	{
		mn_log(LOG_ERROR, "cannot size region file \"%s\" to %llu bytes: %s", mns->region_path,
			   (unsigned long long) size, strerror(errno));
		return NULL;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, region_fd, 0);
	if (base == MAP_FAILED)
	{
		mn_log(LOG_ERROR, "cannot map region file \"%s\": %s", mns->region_path, strerror(errno));
		return NULL;
	}
	return base;
}

static void *
map_anon(mn_state *mns, uint64_t size)
{
	int			flags = MAP_PRIVATE | MAP_ANONYMOUS;
	void	   *base;

	/*
	 * Huge pages must be reserved at mmap time, so a short pool is a clear
	 * error now rather than SIGBUS at the first touch; ordinary pages are
	 * committed lazily.
	 */
	/*
	 * --ucx: memory UCX allocates is what its shared-memory transports can
	 * reach one-sidedly (ucx.c); huge pages keep to mmap (registered).
	 */
	if (mns->cfg.ucx && !mns->cfg.hugepages && (base = mn_ucx_alloc(mns, size)) != NULL)
		return base;
	if (mns->cfg.hugepages)
		flags |= MAP_HUGETLB;
	else
		flags |= MAP_NORESERVE;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (base == MAP_FAILED)
	{
		if (mns->cfg.hugepages)
			mn_log(LOG_ERROR, "cannot allocate %llu bytes of huge pages: %s (reserve them first, e.g. sysctl vm.nr_hugepages=%llu)",
				   (unsigned long long) size, strerror(errno),
				   (unsigned long long) (size >> 21));
		else
			mn_log(LOG_ERROR, "cannot allocate a region of %llu bytes: %s",
				   (unsigned long long) size, strerror(errno));
		return NULL;
	}
	return base;
}

/* Validate --numa-node before anything is allocated. */
static int
check_numa(mn_state *mns)
{
	long long	freemem = 0;

	if (mns->cfg.numa_node < 0)
		return 0;
	if (numa_available() < 0)
	{
		mn_log(LOG_ERROR, "--numa-node %d: this system does not support NUMA policies", mns->cfg.numa_node);
		return -1;
	}
	if (mns->cfg.numa_node > numa_max_node() ||
		!numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned) mns->cfg.numa_node))
	{
		mn_log(LOG_ERROR, "NUMA node %d does not exist (this machine has nodes 0-%d)",
			   mns->cfg.numa_node, numa_max_node());
		return -1;
	}
	if (numa_node_size64(mns->cfg.numa_node, &freemem) <= 0)
	{
		mn_log(LOG_ERROR, "NUMA node %d has no memory", mns->cfg.numa_node);
		return -1;
	}
	return 0;
}

int
mn_region_create(mn_state *mns)
{
	uint64_t	size = mns->cfg.size - mns->cfg.size % DM_REGION_ALIGN;
	int			in_file = mns->cfg.shm || mns->cfg.region_file[0];
	uint32_t	slots = 0;
	int			rc;

	region_bytes = size;
	if (check_numa(mns) < 0)
		return -1;
	if (in_file)
	{
		if (choose_path(mns) < 0)
			return -1;
		mns->base = reattach_file(mns, size);
		if (mns->base == MAP_FAILED)
		{
			mns->base = NULL;
			mns->region_path[0] = '\0';
			return -1;
		}
		if (mns->base == NULL && (mns->base = create_file(mns, size)) == NULL)
			return -1;
		if (mns->cfg.shm)
			snprintf(mns->shm_path, sizeof(mns->shm_path), "%s", mns->region_path);
		/* one journal slot per worker: only a region that outlives us needs one */
		slots = mns->cfg.threads > DM_JOURNAL_MAX_SLOTS ? DM_JOURNAL_MAX_SLOTS : (uint32_t) mns->cfg.threads;
	}
	else
		mns->base = map_anon(mns, size);
	if (mns->base == NULL)
		return -1;
	/* bind before the first touch, or the pages land wherever we run */
	if (mns->cfg.numa_node >= 0)
	{
		numa_tonode_memory(mns->base, size, mns->cfg.numa_node);
		mn_log(LOG_INFO, "region bound to NUMA node %d", mns->cfg.numa_node);
	}
	if (!mns->reattached)
	{
		uint64_t	boot[2];

		rc = dm_region_format(&mns->region, mns->base, size, (uint16_t) mns->cfg.node_id,
							  mns->cfg.chunk_size, mns->cfg.catalog_capacity, slots,
							  new_incarnation(), mn_unix_ns());
		if (rc != DM_OK)
		{
			mn_log(LOG_ERROR, "cannot lay out a region of %llu bytes with %llu-byte chunks and %u catalog entries: %s",
				   (unsigned long long) size, (unsigned long long) mns->cfg.chunk_size,
				   mns->cfg.catalog_capacity, dm_strerror(rc));
			return -1;
		}
		mn_boot_id(boot);
		mns->region.sb->boot_id[0] = boot[0];
		mns->region.sb->boot_id[1] = boot[1];
		mns->region.sb->heartbeat_ns = mn_mono_ns();
	}
	else if (mns->region.sb->chunk_size != mns->cfg.chunk_size ||
			 mns->region.sb->catalog_capacity != mns->cfg.catalog_capacity)
		mn_log(LOG_INFO, "keeping the region's layout (%llu-byte chunks, %llu catalog entries): --chunk-size and --catalog-size apply to fresh regions",
			   (unsigned long long) mns->region.sb->chunk_size,
			   (unsigned long long) mns->region.sb->catalog_capacity);
	/* more workers than the region has journal slots: they share them */
	if (mns->region.sb->journal_slots > 0 && (uint64_t) mns->cfg.threads > mns->region.sb->journal_slots)
	{
		mns->journal_locks = calloc(mns->region.sb->journal_slots, sizeof(pthread_mutex_t));
		if (mns->journal_locks == NULL)
			return -1;
		for (uint64_t k = 0; k < mns->region.sb->journal_slots; k++)
			pthread_mutex_init(&mns->journal_locks[k], NULL);
	}
	return 0;
}

void
mn_region_close(mn_state *mns, int clean)
{
	dm_superblock *sb = mns->region.sb;

	if (mns->base == NULL)
		return;
	if (sb != NULL)
	{
		/* shm clients see DEAD at their next operation */
		__atomic_store_n(&sb->state, DM_SB_DEAD, __ATOMIC_RELEASE);
		if (mns->region_path[0] && clean)
		{
			/*
			 * shm clients store into the region themselves and look at the
			 * state once per batch: give a batch begun before DEAD time to
			 * end before the region is written back and called clean.
			 */
			if (mns->shm_path[0] || mns->ucx_blob)
				usleep(100 * 1000);
			/*
			 * Every worker has stopped, so no batch is half done: say so, and
			 * write the region back, so that even a restart of the machine
			 * (for a file on a disk or a DAX mount) finds it intact.
			 */
			__atomic_store_n(&sb->clean, DM_SB_CLEAN, __ATOMIC_RELEASE);
			if (msync(mns->base, mns->region.size, MS_SYNC) < 0 || fsync(region_fd) < 0)
				mn_log(LOG_WARN, "cannot write back region file \"%s\": %s", mns->region_path, strerror(errno));
			mn_log(LOG_INFO, "region file \"%s\" kept for the next start (incarnation %016llx, shut down cleanly)",
				   mns->region_path, (unsigned long long) sb->incarnation);
		}
	}
	/* memory from ucp_mem_map stays mapped until exit (ucx.c) */
	if (!mns->ucx_allocated)
		munmap(mns->base, region_bytes);
	if (region_fd >= 0)
		close(region_fd);
	region_fd = -1;
	mns->base = NULL;
}
