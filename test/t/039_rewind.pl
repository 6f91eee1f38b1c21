# 039_rewind.pl — pg_rewind of an old primary after a
# failover: pg_rewind copies the new primary's non-relation files (its
# dmindex_writer.<tli> nonce files too) and leaves a backup_label, so the
# rewound server forgets them at start.  (a) As a standby of the new primary
# it reads the index right; (b) started by mistake as a primary (no
# standby.signal) it is another server on the new primary's timeline and is
# refused the tree (55000), never given the new primary's identity.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Copy;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);
my $p = new_dmindex_node('p', [$mn], init => { allows_streaming => 1 },
	conf => "autovacuum = off\ndmindex.instance_id = 0\nwal_log_hints = on\nwal_keep_size = 256MB\n");
$p->safe_psql('postgres', q{
CREATE TABLE t (id bigserial PRIMARY KEY, k int);
INSERT INTO t (k) SELECT g FROM generate_series(1, 3000) g;
CREATE INDEX t_k_dm ON t USING dmindex (k);
VACUUM ANALYZE t;
});
$p->backup('b');
my $s1 = streaming_standby($p, 'b', 's1', "dmindex.instance_id = 1\n");
# P's WAL goes on past S1's end (no index write): a rewind is needed
$s1->stop('fast');
$p->safe_psql('postgres', 'CREATE TABLE other (v int); INSERT INTO other SELECT generate_series(1, 1000)');
$p->stop('fast');
$s1->start;
$s1->promote;
$s1->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die;
$s1->safe_psql('postgres', "DELETE FROM t WHERE k <= 100; INSERT INTO t (k) SELECT 10000 + g FROM generate_series(1, 300) g; VACUUM t");
$s1->safe_psql('postgres', 'CHECKPOINT');
ok(-f $s1->data_dir . '/dmindex_writer.2', 'the new primary has its nonce for timeline 2');
my $conds = [ 'k <= 100', 'k BETWEEN 101 AND 3000', 'k > 10000' ];
ok(index_matches_seqscan($s1, 't', $conds, 's1'), 'new primary: index = heap');

my $pd = $p->data_dir;
command_ok([ 'pg_rewind', '--target-pgdata', $pd, '--source-server', $s1->connstr('postgres') ], 'pg_rewind');
ok(-f "$pd/backup_label", 'pg_rewind left a backup_label');
ok(-f "$pd/dmindex_writer.2", '... and copied the new primary\'s nonce file');
# pg_rewind copied the source's postgresql.conf: its port and its dmindex.instance_id
$p->append_conf('postgresql.conf', "port = " . $p->port . "\ndmindex.instance_id = 0\n");
my $saved = "$pd.saved";
system('cp', '-a', $pd, $saved) == 0 or die;

# (a) as a standby of the new primary
$p->append_conf('postgresql.conf', "primary_conninfo = 'port=" . $s1->port . " host=" . $s1->host . "'\n");
$p->set_standby_mode;
$p->start;
$s1->wait_for_catchup($p, 'replay');
ok(!-f "$pd/dmindex_writer.2", 'the rewound server forgot the copied nonce file');
ok(index_matches_seqscan($p, 't', $conds, 'rewound standby'), 'rewound old primary as a standby: index = heap');
$p->stop;

# (b) the same rewound directory started as a primary by mistake
system('rm', '-rf', $pd) == 0 or die;
system('mv', $saved, $pd) == 0 or die;
$p->start;
ok(!-f "$pd/dmindex_writer.2" || $p->safe_psql('postgres', 'SELECT 1') eq '1', 'started');
my ($state) = query_sqlstate($p, 'postgres', "$DmindexTest::idx_only SELECT count(*) FROM t WHERE k > 10000");
is($state, '55000', 'a rewound server started as a primary is refused the new primary\'s tree (55000)');
($state) = query_sqlstate($p, 'postgres', "INSERT INTO t (k) VALUES (99999)");
is($state, '55000', '... and its writes');
ok(index_matches_seqscan($s1, 't', $conds, 's1 after'), 'the new primary\'s index still = heap');
$p->stop;
$s1->stop;
done_testing();
