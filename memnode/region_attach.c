/*
 * region_attach.c — starting a memnode on a region file that outlived the
 * previous memnode process (a crash, kill -9, SIGTERM for an upgrade):
 * deciding whether the region in it is intact, and what reattaching does
 * before anyone is served.  Keeping the incarnation is what keeps every
 * index on this memnode usable: clients compare it with the one they (and
 * each index's metapage) recorded.
 *
 * Intact means: the file has the size --size asks for, the superblock has
 * the magic, this binary's format version and a matching checksum, the
 * layout it describes is possible, the node id is --id, no later memnode
 * retired it, and — if it was not shut down cleanly — the machine has not
 * restarted since (after a crash of the machine, a file on a disk holds a
 * mix of pages written back at different times; a clean shutdown msyncs
 * the whole region first).  Anything else gets a fresh region under a new
 * incarnation (region_mem.c), as every start did before regions could be
 * kept.
 *
 * A region that was not shut down cleanly is reattached all the same: the
 * batches the dead memnode was executing are finished from the journal
 * (dm_journal.h), the allocator's and catalog's metadata are made
 * consistent (dm_region_recover.c, which says why that suffices), and
 * tree nodes are the tree protocol's business (locks of dead clients are
 * taken over, torn nodes repaired from redo slots).  Clients reconnect and
 * see the same incarnation.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dm_journal.h"
#include "memnode.h"

/* The kernel's id of this boot (a UUID), as two words; zeros if unknown. */
void
mn_boot_id(uint64_t out[2])
{
	char		buf[64];
	char		hex[33];
	int			fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t		n;
	int			k = 0;

	out[0] = out[1] = 0;
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	for (ssize_t i = 0; i < n && k < 32; i++)
		if ((buf[i] >= '0' && buf[i] <= '9') || (buf[i] >= 'a' && buf[i] <= 'f'))
			hex[k++] = buf[i];
	hex[k] = '\0';
	if (k != 32)
		return;
	out[1] = strtoull(hex + 16, NULL, 16);
	hex[16] = '\0';
	out[0] = strtoull(hex, NULL, 16);
}

const char *
mn_region_not_intact(const mn_state *mns, void *base, uint64_t file_size, uint64_t want_size)
{
	static char why[300];
	const dm_superblock *sb = base;
	dm_region	r;
	uint64_t	boot[2];

	if (file_size != want_size)
	{
		snprintf(why, sizeof(why), "its size is %llu bytes, --size asks for %llu",
				 (unsigned long long) file_size, (unsigned long long) want_size);
		return why;
	}
	if (sb->magic != DM_SB_MAGIC)
		return "its superblock has no dmindex magic number";
	if (sb->format_version != DM_FORMAT_VERSION)
	{
		snprintf(why, sizeof(why), "it has region format version %u, this memnode uses version %u",
				 sb->format_version, DM_FORMAT_VERSION);
		return why;
	}
	if (sb->sb_checksum != dm_region_sb_checksum(sb))
		return "its superblock checksum does not match";
	if (dm_region_attach(&r, base, file_size) != DM_OK)
		return "its superblock describes an impossible layout";
	if (sb->node_id != (uint32_t) mns->cfg.node_id)
	{
		snprintf(why, sizeof(why), "it belongs to memnode id %u, this one has --id %d",
				 sb->node_id, mns->cfg.node_id);
		return why;
	}
	if (sb->state == DM_SB_REPLACED)
		return "a later memnode retired it";
	mn_boot_id(boot);
	if (sb->clean != DM_SB_CLEAN && (boot[0] | boot[1]) != 0 &&
		(sb->boot_id[0] != boot[0] || sb->boot_id[1] != boot[1]))
		return "the machine restarted while a memnode was using it without a clean shutdown, "
			"so its pages may have been written back at different times";
	return NULL;
}

/* Finish the batches the previous memnode was executing; -1 if a journal is damaged. */
static int
replay_journal(dm_region *r, int was_clean)
{
	int			finished = 0;

	for (uint32_t k = 0; k < r->sb->journal_slots; k++)
	{
		dm_journal_replayed out;
		int			rc = dm_journal_replay(r, dm_journal_slot_at(r, k), &out);

		if (rc != DM_OK)
		{
			mn_log(LOG_ERROR, "journal slot %u holds a batch that does not decode or addresses what it may not", k);
			return -1;
		}
		if (out.state == DM_JOURNAL_UNLOGGED)
			mn_log(LOG_WARN, "journal slot %u: a batch too large to journal (over %llu bytes) was being executed when the memnode stopped: it may be partly applied",
				   k, (unsigned long long) DM_JOURNAL_BODY_MAX);
		else if (out.state == DM_JOURNAL_ACTIVE)
		{
			finished++;
			mn_log(LOG_INFO, "journal slot %u: finished an interrupted batch of %u ops (%u were done, %u applied now%s%s)",
				   k, out.nops, out.progress, out.applied,
				   out.in_doubt_kind >= 0 ? (out.in_doubt_applied ? ", the op in doubt taken as applied" : ", the op in doubt taken as not applied") : "",
				   out.guard_failed ? ", ended by a failed guard" : "");
		}
	}
	if (finished && was_clean)
		mn_log(LOG_WARN, "the region was marked clean but %d journaled batches were unfinished", finished);
	return 0;
}

int
mn_region_reattach(mn_state *mns, void *base, uint64_t size)
{
	dm_region  *r = &mns->region;
	dm_region_recovery rec;
	int			was_clean;
	uint64_t	boot[2];

	if (dm_region_attach(r, base, size) != DM_OK)
		return -1;
	was_clean = r->sb->clean == DM_SB_CLEAN;
	/* shm clients still mapping the file stop until the region is consistent */
	__atomic_store_n(&r->sb->state, DM_SB_RECOVERING, __ATOMIC_RELEASE);
	if (replay_journal(r, was_clean) < 0)
		return -1;
	if (dm_region_recover(r, &rec) != DM_OK)
	{
		mn_log(LOG_ERROR, "the region's catalog has %llu entries no memnode could have written",
			   (unsigned long long) rec.entries_bad);
		return -1;
	}
	if (rec.chunks_orphaned || rec.chunks_unused || rec.chunks_cleared || rec.lists_dropped ||
		rec.counters_fixed)
		mn_log(was_clean ? LOG_WARN : LOG_INFO,
			   "repaired the allocator's metadata: %llu chunks of dropped trees freed, %llu cut-short chunk allocations undone, %llu free chunk descriptors cleared, %llu damaged free lists dropped, %llu counters recomputed",
			   (unsigned long long) rec.chunks_orphaned, (unsigned long long) rec.chunks_unused,
			   (unsigned long long) rec.chunks_cleared, (unsigned long long) rec.lists_dropped,
			   (unsigned long long) rec.counters_fixed);
	mn_boot_id(boot);
	r->sb->boot_id[0] = boot[0];
	r->sb->boot_id[1] = boot[1];
	r->sb->attach_count++;
	r->sb->attach_unix_ns = mn_unix_ns();
	/* dirty until a clean shutdown says otherwise */
	__atomic_store_n(&r->sb->clean, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&r->sb->heartbeat_ns, mn_mono_ns(), __ATOMIC_RELEASE);
	__atomic_store_n(&r->sb->state, DM_SB_LIVE, __ATOMIC_RELEASE);
	mn_log(LOG_INFO, "reattached the region in \"%s\": incarnation %016llx kept, %llu trees, %llu of %llu chunks in use, start %llu of this region; %s",
		   mns->region_path, (unsigned long long) r->sb->incarnation,
		   (unsigned long long) r->sb->trees, (unsigned long long) r->sb->chunks_used,
		   (unsigned long long) r->sb->nchunks, (unsigned long long) r->sb->attach_count,
		   was_clean ? "it was shut down cleanly" :
		   "it was not shut down cleanly (the memnode was killed or crashed)");
	mns->reattached = 1;
	return 0;
}
