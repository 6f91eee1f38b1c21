/*
 * dmpartition.c — key ranges per instance (DESIGN.md §7, DEX §4): how
 * running servers pick up a new partition map (when an index is opened,
 * dmmeta.c).  The SQL functions that set and show maps,
 * dmindex_set_partitions(), dmindex_partitions() and dmindex_owner(), are
 * in dmpartfuncs.c.
 *
 * In PostgreSQL the instances of one index are a primary and its hot
 * standbys, and only the primary writes.  So the partition map does not
 * say who may write a key (the primary writes every key: keys of other
 * instances' ranges go to foreign nodes, under the remote lock, not kept
 * in its cache; dm_tree_write_any_key), but which instance caches which
 * leaves, and where applications and poolers send reads of a key
 * (dmindex_owner).
 *
 * Re-partitioning is DEX §4's: install a new map (a new block, CAS on the
 * tree's meta word 7), which bumps the epoch; no data moves and nothing is
 * flushed.  Every backend checks the map word when it opens the index, at
 * most every dmindex.partition_refresh_interval ms (one 8-byte remote read),
 * and on a new epoch drops the tree's cached frames (the core's
 * dm_tree_partitions_refresh) and classifies nodes by the new map.
 *
 * Why a stale map (a backend that has not looked yet) costs at most cache
 * hits, never a wrong answer:
 *  - On the primary every write of a node at a cached level goes through
 *    that node's frame under the frame's lock, whatever the writer thinks
 *    the node's class is (write-allocate, dm_node_wlock), and every write is
 *    fenced by the node's version guard.  Backends of the primary share one
 *    cache, so a cached copy is never older than remote memory whichever
 *    map a backend uses; the map only decides what stays cached.  Nobody
 *    else writes, so no other server's write can bypass those frames.
 *  - A standby never writes.  Until standbys learn of the primary's writes
 *    through WAL, its cache keeps no leaves at all and treats inner nodes
 *    as shared (may be stale: a descent that a stale inner node sends the
 *    wrong way notices it by fences and refreshes it), whatever the map
 *    says; so its map only decides which reads applications route to it.
 */
#include "postgres.h"

#include "utils/guc.h"
#include "utils/timestamp.h"

#include "dmam.h"

int			dmindex_partition_refresh_ms = 1000;

void
dmindex_partition_init(void)
{
	DefineCustomIntVariable("dmindex.partition_refresh_interval",
							"How often a session checks whether an index's partition map changed.",
							"Checked when the session uses the index, at most this often; a new map "
							"then drops the index's nodes from the node cache. 0 checks at every use.",
							&dmindex_partition_refresh_ms,
							1000,
							0,
							3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}

void
dmindex_partitions_maybe_refresh(Relation index, dm_tree *tree, TimestampTz *last_check)
{
	TimestampTz now = GetCurrentTimestamp();
	int			rc;

	if (*last_check != 0 &&
		!TimestampDifferenceExceeds(*last_check, now, dmindex_partition_refresh_ms))
		return;
	if ((rc = dm_tree_partitions_refresh(tree, NULL)) != DM_OK)
		dmindex_tree_error(index, tree, rc);
	*last_check = now;
}
