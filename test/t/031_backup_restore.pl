# 031_backup_restore.pl — a primary's base backup restored as a new primary
# (docs/design.md §7 Failover, src/pg/dmfailover.c "The server nonce").
#
# Why: restoring last night's base backup on a new machine is an everyday
# operation, and the copy's postgresql.conf still names the memnodes, so it
# finds the original's remote trees.  Recovered to the end of the backup
# without an archive, it stays on the original's timeline, and it used to
# carry the original's server nonce in its data directory: it then took the
# trees for its own, although the original went on writing them after the
# backup.  Entries of rows the copy does not have name tids its own new rows
# take (a lookup of such a key returns an unrelated row: scans do not
# recheck), and rows the original deleted and vacuumed after the backup are
# still alive in the copy but gone from the tree (missing rows).
#
# 1. After the backup the original inserts keys 200000.. and deletes and
#    vacuums keys < 500, then stops.  The restored copy (same instance id)
#    may neither read nor write the index (55000, hint REINDEX) and keeps
#    nothing it tried; after REINDEX its index equals its heap and a btree,
#    for the keys the original inserted, deleted and never touched, also
#    after new inserts that take the same tids; dmindex_check passes.
# 2. The original, started again, still has its index intact (the copy's
#    REINDEX did not free the original's tree).
# 3. Point-in-time recovery to a restore point from before the original's
#    last index writes (a new timeline that left the writer's before its
#    high-water mark): the index is refused (XX002), reads and writes.
# 4. Point-in-time recovery to a restore point after the original's last
#    index write: the recovered server takes the tree over and its index
#    equals its heap.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);
my $orig = new_dmindex_node(
	'orig', [$mn],
	init => { allows_streaming => 1, has_archiving => 1 },
	conf => "autovacuum = off\ndmindex.instance_id = 0\n");

$orig->safe_psql('postgres', q{
CREATE TABLE t (id bigserial PRIMARY KEY, k int, kb int GENERATED ALWAYS AS (k) STORED, pad text);
INSERT INTO t (k, pad) SELECT g, 'before' FROM generate_series(1, 3000) g;
CREATE INDEX t_k_dm ON t USING dmindex (k);
CREATE INDEX t_kb_bt ON t (kb);
VACUUM ANALYZE t;
});
$orig->backup('b');

# after the backup: new rows (new tids), rows deleted and their entries vacuumed away
$orig->safe_psql('postgres', q{
INSERT INTO t (k, pad) SELECT 200000 + g, 'after' FROM generate_series(1, 2000) g;
DELETE FROM t WHERE k < 500;
VACUUM t;
});
is($orig->safe_psql('postgres', 'SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM t WHERE k < 500 OR k > 200000'),
	'2000', 'the original: deleted keys gone, new keys there (through the index)');
$orig->stop;

my @conds = ('k < 500', 'k BETWEEN 500 AND 3000', 'k > 200000', 'k > 300000', 'k >= 0');

# ---- 1. the backup restored as a primary on the same timeline ------------------
my $copy = PostgreSQL::Test::Cluster->new('copy');
$copy->init_from_backup($orig, 'b');
# (its WAL must not reach the original's archive, which part 3 recovers from)
$copy->append_conf('postgresql.conf', "archive_mode = off\n");
$copy->start;
ok(!-f $copy->data_dir . '/dmindex_writer.1', 'the restored backup removed the nonce file it was copied with');
ok($copy->log_contains('dmindex: removed "dmindex_writer.1"'), '... and said so in the log');

my ($state, $err) = query_sqlstate($copy, 'postgres',
	"$DmindexTest::idx_only SELECT count(*) FROM t WHERE k < 500");
is($state, '55000', 'the copy may not read the original\'s index (55000)');
like($err, qr/index "t_k_dm" is written by another server/, '... naming the index');
like($err, qr/HINT:\s+REINDEX INDEX public\.t_k_dm/, '... with a hint to REINDEX');
($state, $err) = query_sqlstate($copy, 'postgres', "INSERT INTO t (k, pad) VALUES (300001, 'copy')");
is($state, '55000', 'the copy may not write the original\'s index (55000)');
is($copy->safe_psql('postgres', "SELECT count(*) FROM t WHERE pad = 'copy'"), '0', 'and its row is not there');

$copy->safe_psql('postgres', 'REINDEX INDEX t_k_dm');
ok(index_matches_seqscan($copy, 't', \@conds, 'copy after REINDEX'), 'after REINDEX the copy\'s index equals its heap');
is($copy->safe_psql('postgres', "$DmindexTest::idx_only SELECT count(*) FROM t WHERE k < 500"),
	'499', 'the rows the original deleted after the backup are found (the copy still has them)');
# new rows take the tids the original's rows after the backup had
$copy->safe_psql('postgres', "INSERT INTO t (k, pad) SELECT 300000 + g, 'copy' FROM generate_series(1, 2000) g");
ok(index_matches_seqscan($copy, 't', \@conds, 'copy after its own inserts'), 'after new inserts the copy\'s index equals its heap');
is($copy->safe_psql('postgres', "$DmindexTest::idx_only SELECT count(*) FROM t WHERE k > 200000 AND k < 300000"),
	'0', 'no key the original inserted after the backup is found in the copy');
is($copy->safe_psql('postgres', "SET enable_seqscan = off; SET enable_indexscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM t WHERE kb > 200000 AND kb < 300000"),
	'0', '... nor through the btree (the control)');
like(dmindex_check($copy, 'postgres', 't_k_dm', 1), qr/^5000\|5000\|t$/, 'dmindex_check passes on the copy');
$copy->stop;

# ---- 2. the original is intact ------------------------------------------------------
$orig->start;
ok(index_matches_seqscan($orig, 't', \@conds, 'original after the copy'), 'the original\'s index still equals its heap');
like(dmindex_check($orig, 'postgres', 't_k_dm', 1), qr/^4501\|4501\|t$/, 'dmindex_check passes on the original');

# ---- 3 and 4. point-in-time recovery --------------------------------------------------
# rp_before: then index writes; rp_after: then writes of another table only
$orig->safe_psql('postgres', "SELECT pg_create_restore_point('rp_before')");
$orig->safe_psql('postgres', q{
INSERT INTO t (k, pad) SELECT 400000 + g, 'late' FROM generate_series(1, 500) g;
DELETE FROM t WHERE k BETWEEN 500 AND 599;
VACUUM t;
CREATE TABLE other (v int);
});
$orig->safe_psql('postgres', "SELECT pg_create_restore_point('rp_after')");
$orig->safe_psql('postgres', 'INSERT INTO other SELECT generate_series(1, 1000)');
my $walfile = $orig->safe_psql('postgres', 'SELECT pg_walfile_name(pg_current_wal_lsn())');
$orig->safe_psql('postgres', 'SELECT pg_switch_wal()');
$orig->poll_query_until('postgres', "SELECT last_archived_wal >= '$walfile' FROM pg_stat_archiver")
  or die 'the WAL was not archived';
$orig->stop;

sub recover_to
{
	my ($name, $target) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($orig, 'b', has_restoring => 1);
	$node->append_conf('postgresql.conf',
		"recovery_target_name = '$target'\nrecovery_target_action = 'promote'\narchive_mode = off\n");
	$node->start;
	$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die "$name did not finish its recovery";
	return $node;
}

my $pitr = recover_to('pitr_before', 'rp_before');
is($pitr->safe_psql('postgres', 'SELECT timeline_id FROM pg_control_checkpoint()') > 1 ? 1 : 0,
	1, 'recovered to rp_before on a new timeline');
($state, $err) = query_sqlstate($pitr, 'postgres', "$DmindexTest::idx_only SELECT count(*) FROM t WHERE k > 400000");
is($state, 'XX002', 'recovered to before the last index writes: the index is refused (XX002)');
like($err, qr/cannot be used after failover/, '... as after a failover that lost writes');
($state, $err) = query_sqlstate($pitr, 'postgres', "INSERT INTO t (k, pad) VALUES (450000, 'pitr')");
is($state, 'XX002', '... and so is a write');
$pitr->stop;

$pitr = recover_to('pitr_after', 'rp_after');
ok(index_matches_seqscan($pitr, 't', [ @conds, 'k > 400000', 'k BETWEEN 500 AND 599' ], 'pitr after'),
	'recovered to after the last index writes: the tree is taken over and the index equals the heap');
$pitr->safe_psql('postgres', "INSERT INTO t (k, pad) SELECT 500000 + g, 'pitr' FROM generate_series(1, 100) g");
ok(index_matches_seqscan($pitr, 't', [ @conds, 'k > 500000' ], 'pitr after, own writes'), '... and after its own writes');
like(dmindex_check($pitr, 'postgres', 't_k_dm', 1), qr/\|t$/, 'dmindex_check passes');
$pitr->stop;

is(stop_memnode($mn), 0, 'memnode shuts down cleanly');
done_testing();
