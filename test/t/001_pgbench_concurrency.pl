# 001_pgbench_concurrency.pl — dmindex under concurrent writers.
#
# Several pgbench clients run at once, against one table with a dmindex
# index: single- and multi-row inserts, range deletes, point and range
# selects through the index (plain and ordered), updates that move rows to
# another key and HOT updates, transactions that read their own buffered
# entries (some larger than dmindex.insert_buffer, so flushed early), with
# savepoints and rollbacks; a separate client runs VACUUM every half second.
# Why: the per-transaction insert buffer, the flush at pre-commit, the
# merge of a transaction's own entries into its scans and bulk delete all
# race with each other here.  Afterwards no client may have failed,
# dmindex_check(idx, true) must pass (no missing and no stale entry), and the
# dmindex index must answer a set of range queries exactly like a btree on
# the same values (a stored generated column, so both indexes see every
# change in the same transaction).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;
use DmindexWorkload;

my $duration = $ENV{DM_PGBENCH_SECONDS} // 20;

my $mn = start_memnode(
	args => [ '--size', '512M', '--shm', '--chunk-size', '1M' ]);
# the node cache is off here (008 runs the same workload through a small one)
my $node = new_dmindex_node('concurrency', [$mn],
	conf => "max_connections = 30\ndmindex.cache_policy = off\n");

pgbench_consistency($node, rows => 20000, duration => $duration);

$node->stop;
is(stop_memnode($mn), 0, 'memnode shuts down cleanly');

done_testing();
