/*
 * region_mem.c — obtaining the memory node's region: anonymous memory, or a
 * shared-memory file that co-located clients map (--shm); optionally huge
 * pages and a NUMA node binding (a CPU-less NUMA node is how a CXL memory
 * expander appears).  Then formatting it with a fresh incarnation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "memnode.h"

#define HUGETLBFS_MAGIC 0x958458f6

static int	shm_fd = -1;

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
 * A region file left by a memnode that died without cleaning up may still
 * be mapped by clients.  Mark it REPLACED before unlinking it, so those
 * clients get "memnode restarted" instead of silently using orphaned memory.
 */
static int
retire_old_file(const char *path)
{
	int			fd = open(path, O_RDWR | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return 0;
	/* a live memnode holds a lock on its file: never take over a living region */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
	{
		mn_log(LOG_ERROR, "region file \"%s\" is in use by another running memnode", path);
		close(fd);
		return -1;
	}
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
	close(fd);
	return 0;
}

static int
hugetlbfs_dir(const char *dir)
{
	struct statfs sfs;

	return statfs(dir, &sfs) == 0 && (unsigned long) sfs.f_type == HUGETLBFS_MAGIC;
}

static void *
map_shm(uint64_t size)
{
	void	   *base;

	if (mn.cfg.shm_path[0])
		snprintf(mn.shm_path, sizeof(mn.shm_path), "%s", mn.cfg.shm_path);
	else if (mn.cfg.hugepages)
	{
		if (!hugetlbfs_dir("/dev/hugepages"))
		{
			mn_log(LOG_ERROR, "--hugepages on with --shm needs a hugetlbfs mount: /dev/hugepages is not one (give --shm-path on a hugetlbfs mount)");
			return NULL;
		}
		snprintf(mn.shm_path, sizeof(mn.shm_path), "/dev/hugepages/dmindex-memnode-%d", mn.cfg.listen_port);
	}
	else
		snprintf(mn.shm_path, sizeof(mn.shm_path), "/dev/shm/dmindex-memnode-%d", mn.cfg.listen_port);

	if (retire_old_file(mn.shm_path) < 0)
	{
		mn.shm_path[0] = '\0';
		return NULL;
	}
	shm_fd = open(mn.shm_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (shm_fd < 0 || flock(shm_fd, LOCK_EX | LOCK_NB) < 0)
	{
		mn_log(LOG_ERROR, "cannot create region file \"%s\": %s", mn.shm_path, strerror(errno));
		mn.shm_path[0] = '\0';
		return NULL;
	}
	if (ftruncate(shm_fd, (off_t) size) < 0)
	{
		mn_log(LOG_ERROR, "cannot size region file \"%s\" to %llu bytes: %s", mn.shm_path,
			   (unsigned long long) size, strerror(errno));
		return NULL;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0);
	if (base == MAP_FAILED)
	{
		mn_log(LOG_ERROR, "cannot map region file \"%s\": %s", mn.shm_path, strerror(errno));
		return NULL;
	}
	return base;
}

static void *
map_anon(uint64_t size)
{
	int			flags = MAP_PRIVATE | MAP_ANONYMOUS;
	void	   *base;

	/*
	 * Huge pages must be reserved at mmap time, so a short pool is a clear
	 * error now rather than SIGBUS at the first touch; ordinary pages are
	 * committed lazily.
	 */
	if (mn.cfg.hugepages)
		flags |= MAP_HUGETLB;
	else
		flags |= MAP_NORESERVE;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (base == MAP_FAILED)
	{
		if (mn.cfg.hugepages)
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
check_numa(void)
{
	long long	freemem = 0;

	if (mn.cfg.numa_node < 0)
		return 0;
	if (numa_available() < 0)
	{
		mn_log(LOG_ERROR, "--numa-node %d: this system does not support NUMA policies", mn.cfg.numa_node);
		return -1;
	}
	if (mn.cfg.numa_node > numa_max_node() ||
		!numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned) mn.cfg.numa_node))
	{
		mn_log(LOG_ERROR, "NUMA node %d does not exist (this machine has nodes 0-%d)",
			   mn.cfg.numa_node, numa_max_node());
		return -1;
	}
	if (numa_node_size64(mn.cfg.numa_node, &freemem) <= 0)
	{
		mn_log(LOG_ERROR, "NUMA node %d has no memory", mn.cfg.numa_node);
		return -1;
	}
	return 0;
}

int
mn_region_create(void)
{
	uint64_t	size = mn.cfg.size - mn.cfg.size % DM_REGION_ALIGN;
	int			rc;

	if (check_numa() < 0)
		return -1;
	mn.base = mn.cfg.shm ? map_shm(size) : map_anon(size);
	if (mn.base == NULL)
		return -1;
	/* bind before the first touch, or the pages land wherever we run */
	if (mn.cfg.numa_node >= 0)
	{
		numa_tonode_memory(mn.base, size, mn.cfg.numa_node);
		mn_log(LOG_INFO, "region bound to NUMA node %d", mn.cfg.numa_node);
	}
	rc = dm_region_format(&mn.region, mn.base, size, (uint16_t) mn.cfg.node_id,
						  mn.cfg.chunk_size, mn.cfg.catalog_capacity,
						  new_incarnation(), mn_unix_ns());
	if (rc != DM_OK)
	{
		mn_log(LOG_ERROR, "cannot lay out a region of %llu bytes with %llu-byte chunks and %u catalog entries: %s",
			   (unsigned long long) size, (unsigned long long) mn.cfg.chunk_size,
			   mn.cfg.catalog_capacity, dm_strerror(rc));
		return -1;
	}
	mn.region.sb->heartbeat_ns = mn_mono_ns();
	return 0;
}

void
mn_region_destroy(void)
{
	if (mn.base == NULL)
		return;
	/* shm clients see DEAD at their next operation */
	__atomic_store_n(&mn.region.sb->state, DM_SB_DEAD, __ATOMIC_RELEASE);
	if (mn.shm_path[0])
		unlink(mn.shm_path);
	munmap(mn.base, mn.region.size);
	if (shm_fd >= 0)
		close(shm_fd);
	mn.base = NULL;
}
