/*
 * dmfailover.c — which PostgreSQL server writes an index's remote tree,
 * and what makes it safe for a promoted standby to take the tree over
 * without a rebuild (docs/design.md §7, Failover).
 *
 * The hazard.  A primary writes remote entries at pre-commit (dminsert.c),
 * after flushing its WAL locally but before its commit record.  A standby
 * that never received the heap WAL of such an entry, once promoted, can put
 * another tuple at the same TID, and the stale entry then returns the wrong
 * row.  Entries removed by the old primary's VACUUM are the mirror image: a
 * row whose deleting transaction never reached the standby is alive there,
 * and its entry must not be gone.
 *
 * What the tree records (src/dm/dm_tree_writer.c, catalog meta words 8-9):
 *
 *   - the writer word: an epoch and the writing server's identity: the
 *     timeline it writes on, a random server nonce for that timeline (kept
 *     in the data directory, below) and its dmindex.instance_id (a claimed
 *     id, unique among running servers: dmclaim.c).  Every write batch is
 *     fenced by it, so once a promoted server has raised the epoch, the old primary, if it still
 *     runs, can write nothing more to the tree (its writes fail with 55000).
 *   - the high-water mark: before any remote write (entries at pre-commit
 *     and at early flushes, deletes by VACUUM), the writer raises it to the
 *     WAL position that write depends on — the end of the transaction's WAL,
 *     or for VACUUM the insert position when it starts deleting (every
 *     deleter's commit record is before it).  So every remote change of the
 *     tree depends only on WAL at or before the mark, on the writer's
 *     timeline.
 *
 * Taking over.  A server that is not in recovery and finds the tree written
 * from an older timeline in its own history (it was promoted, or restored
 * to a point in time) takes the tree over only if the mark is at or before
 * the point where its timeline left the writer's: then it has replayed every
 * WAL record any remote entry or removal depends on.  Otherwise the index is
 * refused with XX002 and a hint to REINDEX.  With synchronous replication
 * the writer waits, before each remote write, until the synchronous
 * standbys have its WAL up to the mark (SyncRepWaitForLSN), so a promoted
 * synchronous standby always passes the test; without it, a standby passes
 * only if it had caught up (a planned switchover), and fails otherwise.
 *
 * A server on a timeline that is not in the writer's past (the old primary,
 * after a standby took over) is refused, reads included: its heap and the
 * tree part ways from the takeover on.  Its backends notice within
 * RECHECK_MS (each re-reads the writer word at most that often); its writes
 * are refused at once by the fence.
 *
 * The server nonce.  Another identity on the writer's own timeline number
 * is this server restarted with another dmindex.instance_id, or split brain
 * (two standbys promoted to the same timeline number, whose WAL differs),
 * or a copy of the data directory started as a second primary.  The first
 * time a server needs its identity on timeline T it draws a random 16-bit
 * nonce and stores it in the file dmindex_writer.T (hex) in its data
 * directory, created once and atomically (link of a complete temporary
 * file), read by every later backend and after every restart.  A standby
 * made by a base backup writes only after its promotion, on a new
 * timeline, with a new nonce; so another nonce on the same timeline is
 * another server: it may read, not write.  The same nonce with another
 * instance id is this server or a copy of it (the copy has the file too):
 * it takes the tree over under its new identity only if the old instance
 * id is claimed by no other running server (a running original holds its
 * claim) and the tree's high-water mark is within its own WAL.  Otherwise,
 * and for another nonce on its own timeline, it may not use the tree at all,
 * reads included (55000, hint REINDEX): its heap is not the writer's (the
 * writer went on inserting, deleting and vacuuming after the copy was
 * made), so the entries name tids that hold other rows, or no longer name
 * rows the copy still has.  A restored base backup forgets the nonces it
 * was copied with (dmindex_writer_forget_copied_nonces: PostgreSQL 15
 * writes a backup_label only into a backup), so a backup recovered to its
 * end on the original's timeline is another server, not the original.
 * A copy made without a backup label (a file-system snapshot) started
 * after the original stopped for good, once it has written more WAL than
 * the original had, is not told apart: do not run such a copy of a
 * primary's data directory against its memnodes.  (Words written before nonces existed have nonce 0: the same
 * timeline and instance id is taken as this server.)  The identity holds
 * 16 bits of the timeline; timelines past 65535 are refused.
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "access/timeline.h"
#include "access/xlog_internal.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "miscadmin.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "dmam.h"

/* the server nonce of timeline T is in the file dmindex_writer.T (hex) */
#define NONCE_FILE_PREFIX "dmindex_writer."

/* how often a backend re-reads the writer word of a tree it uses */
#define RECHECK_MS 1000

/* Per tree handle: when this backend last confirmed it may use it. */
typedef struct WriterCheck
{
	dm_tree    *tree;			/* hash key */
	uint64		tree_id;
	uint64		word;			/* the writer word it was confirmed under */
	bool		replica;		/* confirmed as a standby's read-only handle */
	TimestampTz checked;
} WriterCheck;

static HTAB *checks = NULL;
static XLogRecPtr synced_upto = InvalidXLogRecPtr;

#define IDENT_TLI(w) ((TimeLineID) ((w) & 0xFFFF))
#define IDENT_NONCE(w) ((uint32) (((w) >> 16) & 0xFFFF))
#define IDENT_INSTANCE(w) ((int) (((w) >> 32) & 0xFFFF))
#define IDENT_SERVER(w) ((w) & 0xFFFFFFFF)	/* nonce and timeline */

/*
 * This server's nonce on timeline tli (see the file comment): read from
 * dmindex_writer.<tli> in the data directory, or drawn and stored there.
 */
static uint32
server_nonce(TimeLineID tli)
{
	static TimeLineID cached_tli = 0;
	static uint32 cached = 0;
	char		path[MAXPGPATH];
	char		tmp[MAXPGPATH];

	if (cached_tli == tli)
		return cached;
	snprintf(path, sizeof(path), NONCE_FILE_PREFIX "%X", tli);
	for (int attempt = 0;; attempt++)
	{
		FILE	   *f = AllocateFile(path, "r");
		unsigned int v = 0;
		uint16		draw;
		int			fd;
		char		buf[16];

		if (f != NULL)
		{
			int			n = fscanf(f, "%x", &v);

			FreeFile(f);
			if (n == 1 && v != 0 && v <= 0xFFFF)
			{
				cached_tli = tli;
				cached = v;
				return v;
			}
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("file \"%s\" does not hold a dmindex server nonce", path),
					 errhint("Remove the file if no dmindex index was written on timeline %u; otherwise REINDEX its dmindex indexes after removing it.", tli)));
		}
		if (errno != ENOENT)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", path)));
		if (attempt > 0)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not create file \"%s\"", path)));
		do
		{
			if (!pg_strong_random(&draw, sizeof(draw)))
				ereport(ERROR,
						(errcode(ERRCODE_INTERNAL_ERROR),
						 errmsg("could not generate a random dmindex server nonce")));
		} while (draw == 0);
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, MyProcPid);
		snprintf(buf, sizeof(buf), "%04X\n", draw);
		fd = OpenTransientFile(tmp, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
		if (fd < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not create file \"%s\": %m", tmp)));
		if (write(fd, buf, strlen(buf)) != (ssize_t) strlen(buf) || pg_fsync(fd) != 0)
		{
			int			save = errno ? errno : ENOSPC;

			CloseTransientFile(fd);
			unlink(tmp);
			errno = save;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", tmp)));
		}
		CloseTransientFile(fd);
		/* link() fails if another backend created it first: then read theirs */
		if (link(tmp, path) != 0 && errno != EEXIST)
		{
			int			save = errno;

			unlink(tmp);
			errno = save;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not link file \"%s\" to \"%s\": %m", tmp, path)));
		}
		unlink(tmp);
		fsync_fname(".", true);
	}
}

/* This server's identity in a writer word: instance id, nonce and timeline. */
static uint64
my_ident(void)
{
	TimeLineID	tli = GetWALInsertionTimeLine();

	if (tli > 0xFFFF)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("dmindex cannot write on timeline %u", tli),
				 errdetail("A dmindex writer identity holds timelines up to 65535.")));
	return ((uint64) (uint16) dmindex_instance_id << 32) | ((uint64) server_nonce(tli) << 16) | (uint64) tli;
}

/* Whether writer identity id has this server's timeline and nonce (maybe another instance id). */
static bool
same_server(uint64 id)
{
	uint64		mine = my_ident();

	if (IDENT_SERVER(id) == IDENT_SERVER(mine))
		return true;
	/* written before nonces: the same timeline and instance id */
	return IDENT_NONCE(id) == 0 && IDENT_TLI(id) == IDENT_TLI(mine) &&
		IDENT_INSTANCE(id) == IDENT_INSTANCE(mine);
}

/*
 * Called once at server start (the postmaster's _PG_init, in the data
 * directory): a data directory that starts with a backup_label is a
 * restored base backup — PostgreSQL 15 has no exclusive backups, so a
 * primary never leaves one in its own directory — and its nonce files are
 * the original server's.  Removed, so that this server draws its own: a
 * backup recovered to its end stays on the original's timeline, and with
 * the original's nonce it would take as its own the trees the original
 * went on writing after the backup (entries naming tids its own new rows
 * will take, entries of rows it still has already removed).  A standby
 * made from the backup loses nothing: it writes only after a promotion, on
 * a new timeline with a new nonce.
 */
void
dmindex_writer_forget_copied_nonces(void)
{
	DIR		   *dir;
	struct dirent *de;

	if (access(BACKUP_LABEL_FILE, F_OK) != 0)
		return;
	if ((dir = opendir(".")) == NULL)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open directory \"%s\": %m", DataDir)));
	while ((de = readdir(dir)) != NULL)
	{
		if (strncmp(de->d_name, NONCE_FILE_PREFIX, strlen(NONCE_FILE_PREFIX)) != 0)
			continue;
		if (unlink(de->d_name) != 0 && errno != ENOENT)
			ereport(FATAL,
					(errcode_for_file_access(),
					 errmsg("could not remove file \"%s\": %m", de->d_name),
					 errdetail("The data directory is a restored base backup; the file holds the dmindex server nonce of the server it was copied from."),
					 errhint("Remove the file, then start the server again.")));
		ereport(LOG,
				(errmsg("dmindex: removed \"%s\", the writer nonce of the server this base backup was taken from",
						de->d_name)));
	}
	closedir(dir);
}

uint64
dmindex_writer_initial(void)
{
	return DM_WRITER_MAKE(1, my_ident());
}

void
dmindex_writer_created(Relation index, dm_tree *tree)
{
	dm_partition_map m;
	int			rc;

	/*
	 * Without a stored map instance 0 owns every key.  A tree built by a
	 * server with another instance id (a promoted standby running REINDEX)
	 * is that server's to write: give it the whole key space.
	 */
	if (dmindex_instance_id == 0)
		return;
	memset(&m, 0, sizeof(m));
	m.n = 1;
	m.lo[0] = 0;
	m.instance[0] = (uint32) dmindex_instance_id;
	if ((rc = dm_tree_partitions_set(tree, &m)) != DM_OK)
		dmindex_tree_error(index, tree, rc);
}

/* Indexes whose heap is not WAL-logged are not replicated: nothing to guard. */
static bool
replicated(Relation index)
{
	return RelationNeedsWAL(index);
}

/*
 * Wait until the synchronous standbys have WAL up to lsn (flushed, or
 * written for synchronous_commit = remote_write).  Returns true if they
 * confirmed it, false if synchronous replication is not in use.
 *
 * SyncRepWaitForLSN itself turns a cancel into a WARNING (it is made for
 * commit records, which cannot be taken back) and returns; here nothing is
 * written yet, so a wait that ended unconfirmed while standbys are defined
 * becomes an error, and the transaction aborts.  A terminate request stays
 * pending and is serviced by CHECK_FOR_INTERRUPTS.
 */
static bool
wait_for_sync_standbys(XLogRecPtr lsn)
{
	int			mode;
	bool		defined;
	XLogRecPtr	confirmed;

	if (!SyncRepRequested())
		return false;
	mode = synchronous_commit == SYNCHRONOUS_COMMIT_REMOTE_WRITE ? SYNC_REP_WAIT_WRITE : SYNC_REP_WAIT_FLUSH;
	SyncRepWaitForLSN(lsn, false);
	CHECK_FOR_INTERRUPTS();
	LWLockAcquire(SyncRepLock, LW_SHARED);
	defined = (WalSndCtl->sync_standbys_status & SYNC_STANDBY_DEFINED) != 0;
	confirmed = WalSndCtl->lsn[mode];
	LWLockRelease(SyncRepLock);
	if (!defined)
		return false;
	if (confirmed < lsn)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("canceling the wait for synchronous replication before writing dmindex entries"),
				 errdetail("The synchronous standbys have not confirmed WAL up to %X/%X; no index entry was written and the transaction is rolled back.",
						   LSN_FORMAT_ARGS(lsn))));
	return true;
}

/*
 * The end of the WAL inserted so far, as a position XLogFlush can reach.
 * GetXLogInsertRecPtr() names where the next record would start: just past
 * the header of a page nothing is written on yet when the last record
 * ended at a page boundary, and XLogFlush to that position fails ("flushed
 * only to" the page start).  Every record inserted so far ends at or
 * before that page's start, so the page start is the end to flush to.
 */
XLogRecPtr
dmindex_wal_insert_end(void)
{
	XLogRecPtr	lsn = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(lsn, wal_segment_size) == SizeOfXLogLongPHD)
		return lsn - SizeOfXLogLongPHD;
	if (lsn % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		return lsn - SizeOfXLogShortPHD;
	return lsn;
}

void
dmindex_before_remote_write(Relation index, dm_tree *tree, XLogRecPtr lsn)
{
	if (!replicated(index) || lsn == InvalidXLogRecPtr)
		return;
	if (lsn > synced_upto)
	{
		XLogFlush(lsn);
		(void) wait_for_sync_standbys(lsn);
		synced_upto = lsn;
	}
	/* raised by the first write batch, which carries it: no round trip of its own */
	dm_tree_writer_require(tree, (uint64) lsn);
}

static void
refuse_not_writer(Relation index, dm_tree *tree, uint64 word)
{
	uint64		id = DM_WRITER_IDENT(word);

	dm_tree_writer_refuse(tree);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("index \"%s\" is now written by another server", RelationGetRelationName(index)),
			 errdetail("Its remote tree was taken over by dmindex instance %d on timeline %u (writer epoch %u); this server is instance %d on timeline %u.",
					   IDENT_INSTANCE(id), IDENT_TLI(id), DM_WRITER_EPOCH(word),
					   dmindex_instance_id, GetWALInsertionTimeLine()),
			 errhint("A standby was promoted in this server's place. Stop this server, or make it a standby of the new primary.")));
}

/*
 * Another server writes the tree and this one is not in its history (a copy
 * of the writer's data directory, or a server promoted to the writer's
 * timeline number): its heap is not the one the tree describes, so it may
 * neither write nor read the tree.
 */
static void
refuse_other_server(Relation index, dm_tree *tree, uint64 word)
{
	uint64		id = DM_WRITER_IDENT(word);

	dm_tree_writer_refuse(tree);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("index \"%s\" is written by another server", RelationGetRelationName(index)),
			 errdetail("Its remote tree is written by dmindex instance %d on timeline %u (writer epoch %u); this server (instance %d) is on that timeline without being that server: a copy of its data directory, or a standby promoted to the same timeline number. Its rows are not the ones the tree's entries name.",
					   IDENT_INSTANCE(id), IDENT_TLI(id), DM_WRITER_EPOCH(word), dmindex_instance_id),
			 errhint("REINDEX INDEX %s to give this server a tree of its own, or stop this server.",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
												RelationGetRelationName(index)))));
}

static void
refuse_after_failover(Relation index, dm_tree *tree, uint64 word, uint64 high_water, XLogRecPtr fork)
{
	dm_tree_writer_refuse(tree);
	if (high_water == DM_WRITER_POISON)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" cannot be used after failover", RelationGetRelationName(index)),
				 errdetail("This server took the index over, but the old primary wrote index entries at the same time that may not have reached this server."),
				 errhint("REINDEX INDEX %s",
						 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
													RelationGetRelationName(index)))));
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("index \"%s\" cannot be used after failover", RelationGetRelationName(index)),
			 errdetail("The old primary (timeline %u) wrote index entries that depend on WAL up to %X/%X, which may not have reached this server: its timeline left timeline %u at %X/%X.",
					   IDENT_TLI(DM_WRITER_IDENT(word)), LSN_FORMAT_ARGS((XLogRecPtr) high_water),
					   IDENT_TLI(DM_WRITER_IDENT(word)), LSN_FORMAT_ARGS(fork)),
			 errhint("REINDEX INDEX %s",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
												RelationGetRelationName(index)))));
}

/*
 * Where this server's timeline history left timeline tli; false if tli is
 * not an older timeline of its history.
 */
static bool
fork_point(TimeLineID tli, XLogRecPtr *fork)
{
	TimeLineID	mine = GetWALInsertionTimeLine();
	List	   *history;

	if (tli == 0 || tli >= mine)
		return false;
	history = readTimeLineHistory(mine);
	if (!tliInHistory(tli, history))
		return false;
	*fork = tliSwitchPoint(tli, history, NULL);
	return true;
}

/* Where this server's timeline began (0 on timeline 1); cached. */
static XLogRecPtr
timeline_start(void)
{
	static TimeLineID tli = 0;
	static XLogRecPtr start = InvalidXLogRecPtr;
	TimeLineID	mine = GetWALInsertionTimeLine();

	if (tli != mine)
	{
		List	   *history = readTimeLineHistory(mine);

		start = ((TimeLineHistoryEntry *) linitial(history))->begin;
		tli = mine;
	}
	return start;
}

/*
 * The new writer inherits the key ranges of the old one (by default the
 * whole key space belongs to instance 0): its instance id replaces the
 * old writer's in the partition map.
 */
static void
inherit_ranges(Relation index, dm_tree *tree, int old_instance)
{
	for (int k = 0; k < 10; k++)
	{
		dm_partition_map m;
		bool		changed = false;
		int			rc;

		if ((rc = dm_tree_partitions_get(tree, &m)) != DM_OK)
			dmindex_tree_error(index, tree, rc);
		for (int i = 0; i < m.n; i++)
			if (m.instance[i] == (uint32) old_instance && old_instance != dmindex_instance_id)
			{
				m.instance[i] = (uint32) dmindex_instance_id;
				changed = true;
			}
		if (!changed)
			return;
		rc = dm_tree_partitions_set(tree, &m);
		if (rc == DM_OK)
			return;
		if (rc != DM_ERR_EXISTS)
			dmindex_tree_error(index, tree, rc);
	}
}

/*
 * Decide whether this server writes under the tree's writer word, takes
 * the tree over, or must refuse it (raises an error).
 */
static void
decide(Relation index, dm_tree *tree)
{
	uint64		word, high_water, seen;
	int			rc;

	for (int k = 0; k < 100; k++)
	{
		XLogRecPtr	fork;

		if ((rc = dm_tree_writer_read(tree, &word, &high_water)) != DM_OK)
			dmindex_tree_error(index, tree, rc);
		if (DM_WRITER_IDENT(word) == my_ident())
		{
			/* a takeover of ours that found the old writer had gone further */
			if (high_water == DM_WRITER_POISON)
				refuse_after_failover(index, tree, word, high_water, InvalidXLogRecPtr);

			/*
			 * Our mark is at least the start of our timeline, except while
			 * another backend of ours is taking the tree over (it judges
			 * the old writer's final mark, then raises it): wait for it.
			 */
			if (high_water < (uint64) timeline_start())
			{
				if (k == 99)
					ereport(ERROR,
							(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
							 errmsg("the takeover of index \"%s\" by another backend of this server did not finish",
									RelationGetRelationName(index)),
							 errhint("Retry; if this persists, REINDEX INDEX %s.",
									 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
																RelationGetRelationName(index)))));
				pg_usleep(10000);
				continue;
			}
			dm_tree_writer_adopt(tree, word);
			/* the ranges this instance writes may have changed (a takeover by another backend) */
			if ((rc = dm_tree_partitions_refresh(tree, NULL)) != DM_OK)
				dmindex_tree_error(index, tree, rc);
			return;
		}
		if (same_server(DM_WRITER_IDENT(word)))
		{
			/*
			 * The same timeline and nonce, another instance id: this server
			 * restarted with a new dmindex.instance_id — or a copy of its
			 * data directory started as a second primary (the copy has the
			 * nonce file too).  Take the tree over under the new identity
			 * only if nothing says it is a copy: the old instance id is
			 * claimed by no other running server, and the tree depends on
			 * no WAL beyond ours.  Otherwise read, do not write.  The key
			 * ranges stay as they are (the operator chose the new id).
			 * A copy may not read the tree either (file comment).
			 */
			if (DM_WRITER_EPOCH(word) >= DM_WRITER_EPOCH_MAX ||
				high_water > (uint64) dmindex_wal_insert_end() ||
				dmindex_claim_held_by_other(dm_tree_client(tree), dm_tree_home(tree),
											IDENT_INSTANCE(DM_WRITER_IDENT(word))))
				refuse_other_server(index, tree, word);
			rc = dm_tree_writer_takeover(tree, word, DM_WRITER_MAKE(DM_WRITER_EPOCH(word) + 1, my_ident()),
										 (uint64) dmindex_wal_insert_end(), &seen);
			if (rc != DM_OK)
				dmindex_tree_error(index, tree, rc);
			continue;			/* decide again under the word now there */
		}
		if (!fork_point(IDENT_TLI(DM_WRITER_IDENT(word)), &fork))
		{
			/*
			 * The same timeline number, another server: split brain (two
			 * standbys promoted to the same timeline number, or a copied
			 * data directory): its heap is not the writer's, so it may
			 * neither write nor read the tree.
			 */
			if (IDENT_TLI(DM_WRITER_IDENT(word)) == GetWALInsertionTimeLine())
				refuse_other_server(index, tree, word);
			refuse_not_writer(index, tree, word);
		}
		if (high_water > (uint64) fork || DM_WRITER_EPOCH(word) >= DM_WRITER_EPOCH_MAX)
			refuse_after_failover(index, tree, word, high_water, fork);
		/* every change of the tree depends on WAL this server has replayed: take it over */
		rc = dm_tree_writer_takeover(tree, word, DM_WRITER_MAKE(DM_WRITER_EPOCH(word) + 1, my_ident()),
									 0, &seen);
		if (rc != DM_OK)
			dmindex_tree_error(index, tree, rc);
		if (seen == word && dm_tree_writer_high_water(tree) > (uint64) fork)
		{
			/*
			 * The old writer raised the mark (and may have written) between
			 * our look and our takeover: the tree is ours now but unusable.
			 * Poison the mark so that our other backends refuse it too.
			 */
			uint64		final = dm_tree_writer_high_water(tree);

			(void) dm_tree_writer_raise(tree, DM_WRITER_POISON);
			refuse_after_failover(index, tree, word, final, fork);
		}
		/*
		 * Mark the takeover done (a mark at least the start of our timeline:
		 * our other backends wait for it).  The flushed end, not the insert
		 * position: WAL inserted but not flushed may never reach a standby
		 * of ours, and if we die before it is flushed, that standby,
		 * promoted, must still find the mark within its fork point (it has
		 * everything the tree depends on: we wrote nothing yet).
		 */
		if (seen == word && (rc = dm_tree_writer_raise(tree, (uint64) GetFlushRecPtr(NULL))) != DM_OK)
			dmindex_tree_error(index, tree, rc);
		if (seen == word)
		{
			inherit_ranges(index, tree, IDENT_INSTANCE(DM_WRITER_IDENT(word)));
			if ((rc = dm_tree_partitions_refresh(tree, NULL)) != DM_OK)
				dmindex_tree_error(index, tree, rc);
			ereport(LOG,
					(errmsg("dmindex: took over the remote tree of index \"%s\" from instance %d on timeline %u (writer epoch %u)",
							RelationGetRelationName(index), IDENT_INSTANCE(DM_WRITER_IDENT(word)),
							IDENT_TLI(DM_WRITER_IDENT(word)), DM_WRITER_EPOCH(word) + 1)));
			return;
		}
		/* another backend (or server) got there first: look again */
	}
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("could not settle the writer of index \"%s\"", RelationGetRelationName(index))));
}

/*
 * A hot standby reads the tree its primary writes; it must not read a tree
 * written on a branch of history it is not on.  After a failover the
 * standbys that were ahead of the promoted one (asynchronous replication)
 * cannot follow the new timeline, and standbys of an old primary that was
 * kept running stay on the old one: each serves reads from its own heap
 * (plain PostgreSQL: stale but consistent), while the new primary deletes
 * entries of rows those heaps still have (missing rows; the removal
 * horizon does not catch it, as both branches hand out the same xids) and
 * inserts entries naming their tids.  Fine: the writer's timeline is ours,
 * or an older one of our history (our upstream has not taken the tree over
 * yet), or a newer one that left ours at or after the WAL we have replayed
 * (we lag, and will follow it: what we read ahead of our heap is sorted out
 * as for any lag, dmstandby.c); an older one only if its high-water mark is
 * at or before the point where our timeline left it (as for a takeover).
 * A newer one whose history we do not have yet is refused as a conflict
 * (40001, retry); one that left our timeline before what we replayed, or
 * does not descend from it, for good (55000).  Checked every RECHECK_MS,
 * like the old primary's reads.  Not told apart: two servers on the same
 * timeline number (split brain).
 */
static void
standby_check(Relation index, dm_tree *tree)
{
	uint64		word, high_water;
	TimeLineID	mine, tli;
	XLogRecPtr	replayed = GetXLogReplayRecPtr(&mine);
	List	   *history;
	int			rc;

	if ((rc = dm_tree_writer_read(tree, &word, &high_water)) != DM_OK)
		dmindex_tree_error(index, tree, rc);
	/* our primary took the tree over but found the old writer had gone further: unusable */
	if (high_water == DM_WRITER_POISON)
		refuse_after_failover(index, tree, word, high_water, InvalidXLogRecPtr);
	tli = IDENT_TLI(DM_WRITER_IDENT(word));
	if (tli == 0 || tli == mine)
		return;
	if (tli < mine)
	{
		/*
		 * An older timeline of ours, not taken over yet: fine if nothing
		 * was written there after our timeline left it (the test a
		 * takeover makes; past it, an old primary still writing).
		 */
		history = readTimeLineHistory(mine);
		if (tliInHistory(tli, history) && high_water <= (uint64) tliSwitchPoint(tli, history, NULL))
			return;
	}
	else
	{
		if (!existsTimeLineHistory(tli))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("canceling statement due to conflict with recovery"),
					 errdetail("Index \"%s\" is written on timeline %u, whose history this standby (timeline %u) has not received yet.",
							   RelationGetRelationName(index), tli, mine)));
		history = readTimeLineHistory(tli);
		if (tliInHistory(mine, history) && replayed <= tliSwitchPoint(mine, history, NULL))
			return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("index \"%s\" is written on another branch of history", RelationGetRelationName(index)),
			 errdetail("Its remote tree is written by dmindex instance %d on timeline %u; this standby has replayed timeline %u up to %X/%X, which is not in that timeline's history.",
					   IDENT_INSTANCE(DM_WRITER_IDENT(word)), tli, mine, LSN_FORMAT_ARGS(replayed)),
			 errhint("Make this server a standby of the current primary again (pg_rewind or a new base backup).")));
}

void
dmindex_writer_check(Relation index, dm_tree *tree)
{
	WriterCheck *wc;
	bool		found;
	TimestampTz now;
	bool		replica = RecoveryInProgress();

	if (!replicated(index))
		return;
	if (checks == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(dm_tree *);
		ctl.entrysize = sizeof(WriterCheck);
		ctl.hcxt = TopMemoryContext;
		checks = hash_create("dmindex writer checks", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	now = GetCurrentTimestamp();
	wc = hash_search(checks, &tree, HASH_ENTER, &found);
	/*
	 * (a new handle at a freed one's address adopted whatever word it found:
	 * decide again; after a promotion too, as replica differs)
	 */
	if (found && wc->tree_id == dm_tree_id(tree) && wc->word == dm_tree_writer_word(tree) &&
		wc->replica == replica &&
		!dm_tree_writer_refused(tree) && !TimestampDifferenceExceeds(wc->checked, now, RECHECK_MS))
		return;
	wc->tree_id = dm_tree_id(tree);
	wc->checked = 0;
	wc->word = 0;
	wc->replica = replica;
	if (replica)
		standby_check(index, tree);
	else
		decide(index, tree);
	wc->word = dm_tree_writer_word(tree);
	wc->checked = now;
}

bool
dmindex_writer_may_free(dm_tree *tree)
{
	uint64		word;
	bool		ok = false;

	if (RecoveryInProgress() || dm_tree_writer_read(tree, &word, NULL) != DM_OK)
		return false;
	if (DM_WRITER_IDENT(word) == my_ident())
		return true;

	/*
	 * Written from an older timeline of ours: we are its successor (the
	 * writer may not have noticed yet) — unless the writer still runs.  A
	 * point-in-time recovery of a running primary's backup (to get back
	 * rows deleted by mistake) is on a newer timeline too, and its
	 * collector finds the original's trees of indexes its catalog does not
	 * name (created after the target, or replaced by the REINDEX that the
	 * XX002 hint asks for): they are the running original's, not garbage.
	 * A writer that still holds its instance id's claim is alive; once it
	 * has stopped, its lease runs out and the tree is collected then.
	 * Anything else belongs to a server that took over from us, or to
	 * another branch of history.
	 */
	PG_TRY();
	{
		XLogRecPtr	fork;

		ok = fork_point(IDENT_TLI(DM_WRITER_IDENT(word)), &fork) &&
			!dmindex_claim_held_by_other(dm_tree_client(tree), dm_tree_home(tree),
										 IDENT_INSTANCE(DM_WRITER_IDENT(word)));
	}
	PG_CATCH();
	{
		FlushErrorState();
		ok = false;
	}
	PG_END_TRY();
	return ok;
}
