# 035_pitr_copy_gc.pl — a point-in-time recovery
# made while the original still runs (the everyday "get back the rows
# deleted by mistake" restore), refused with XX002 and a hint to REINDEX:
# following the hint frees the running original's tree.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);
my $orig = new_dmindex_node('orig', [$mn],
	init => { allows_streaming => 1, has_archiving => 1 },
	conf => "autovacuum = off\ndmindex.instance_id = 0\n");
$orig->safe_psql('postgres', q{
CREATE TABLE t (id bigserial PRIMARY KEY, k int, pad text);
INSERT INTO t (k, pad) SELECT g, 'before' FROM generate_series(1, 3000) g;
CREATE INDEX t_k_dm ON t USING dmindex (k);
VACUUM ANALYZE t;
});
$orig->backup('b');
$orig->safe_psql('postgres', "SELECT pg_create_restore_point('rp')");
# the mistake, then more index writes
$orig->safe_psql('postgres', "DELETE FROM t WHERE k <= 100; INSERT INTO t (k, pad) SELECT 10000 + g, 'after' FROM generate_series(1, 500) g; VACUUM t");
my $walfile = $orig->safe_psql('postgres', 'SELECT pg_walfile_name(pg_current_wal_lsn())');
$orig->safe_psql('postgres', 'SELECT pg_switch_wal()');
$orig->poll_query_until('postgres', "SELECT last_archived_wal >= '$walfile' FROM pg_stat_archiver") or die;
my $conds = [ 'k <= 100', 'k BETWEEN 101 AND 3000', 'k > 10000' ];
ok(index_matches_seqscan($orig, 't', $conds, 'orig'), 'original: index = heap');

# the original keeps running; the recovered copy gets an instance id of its own
my $pitr = PostgreSQL::Test::Cluster->new('pitr');
$pitr->init_from_backup($orig, 'b', has_restoring => 1);
$pitr->append_conf('postgresql.conf',
	"recovery_target_name = 'rp'\nrecovery_target_action = 'promote'\narchive_mode = off\ndmindex.instance_id = 7\n");
$pitr->start;
$pitr->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die;
my ($state, $err) = query_sqlstate($pitr, 'postgres', "$DmindexTest::idx_only SELECT count(*) FROM t WHERE k <= 100");
is($state, 'XX002', 'the recovered copy refuses the index (XX002)');
like($err, qr/HINT:\s+REINDEX/, '... with a hint to REINDEX');
$pitr->safe_psql('postgres', 'REINDEX INDEX t_k_dm');
ok(index_matches_seqscan($pitr, 't', $conds, 'pitr'), 'after REINDEX the copy\'s index = its heap');
is($pitr->safe_psql('postgres', "$DmindexTest::idx_only SELECT count(*) FROM t WHERE k <= 100"), '100', 'the deleted rows are back in the copy');

# the copy's collector (its worker runs it every dmindex.gc_naptime): the
# original's tree is not named by the copy's catalog any more
my $freed = $pitr->safe_psql('postgres', 'SELECT dmindex_gc()');
note "dmindex_gc() on the copy freed $freed trees";
# the original, still running, must be untouched
sleep 2;
ok(index_matches_seqscan($orig, 't', $conds, 'orig after the copy\'s REINDEX'), 'the original\'s index still equals its heap');
like(dmindex_check($orig, 'postgres', 't_k_dm', 1), qr/\|t$/, 'dmindex_check passes on the original');
$orig->safe_psql('postgres', "INSERT INTO t (k, pad) VALUES (20000, 'x')");
is(sql($orig, 'postgres', "$DmindexTest::idx_only SELECT count(*) FROM t WHERE k = 20000"), '1', 'the original still writes its index');
$pitr->stop;
$orig->stop;
done_testing();
