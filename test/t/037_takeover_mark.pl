# 037_takeover_mark.pl — the takeover raises the
# high-water mark to GetXLogInsertRecPtr(), WAL that may not be flushed nor
# sent to any standby.  If the promoted server dies before that WAL is
# flushed, its own (synchronous) standby, promoted in turn, finds the mark
# beyond its fork point and refuses an index the first promoted server never
# wrote (XX002, REINDEX), although it has every WAL record the tree depends
# on.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);
my $p = new_dmindex_node('p', [$mn], init => { allows_streaming => 1 },
	conf => "autovacuum = off\ndmindex.instance_id = 0\n");
$p->safe_psql('postgres', q{
CREATE TABLE t (id bigserial PRIMARY KEY, k int);
INSERT INTO t (k) SELECT g FROM generate_series(1, 3000) g;
CREATE INDEX t_k_dm ON t USING dmindex (k);
CREATE TABLE big (v int8, pad text);
});
$p->backup('b');
my $s1 = streaming_standby($p, 'b', 's1', "dmindex.instance_id = 1\nwal_writer_delay = '10s'\n");
$s1->backup('b1');
my $s3 = PostgreSQL::Test::Cluster->new('s3');
$s3->init_from_backup($s1, 'b1', has_streaming => 1);
$s3->append_conf('postgresql.conf', "dmindex.instance_id = 3\n");
$s3->start;
$p->wait_for_catchup($s1, 'replay');
$s1->wait_for_catchup($s3, 'replay', $s1->lsn('replay'));

$p->stop('fast');
$s1->append_conf('postgresql.conf', "synchronous_standby_names = '*'\n");
$s1->promote;
$s1->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die;
$s1->safe_psql('postgres', 'CHECKPOINT');

# a long transaction on S1 inserts WAL that nobody flushes yet (no commit)
my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start([ 'psql', '-XAtq', '-d', $s1->connstr('postgres'), '-f', '-' ],
	'<', \$in, '>', \$out, '2>', \$err);
$in .= "BEGIN; INSERT INTO big SELECT g, repeat('x', 200) FROM generate_series(1, 100000) g; SELECT 'inserted';\n";
$h->pump until $out =~ /inserted/;
my ($flush, $insert) = split /\|/, $s1->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn(), pg_current_wal_insert_lsn()');
note "S1 flushed $flush, inserted $insert";
$s1->wait_for_catchup($s3, 'replay', $flush);
# first use of the index on S1: the takeover (a read, no index write)
is($s1->safe_psql('postgres', "$DmindexTest::idx_only SELECT count(*) FROM t WHERE k <= 100"), '100', 'S1 took the index over');
$s1->stop('immediate');
$h->kill_kill;

$s3->promote;
$s3->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die;
my ($state, $e2) = query_sqlstate($s3, 'postgres', "$DmindexTest::idx_only SELECT count(*) FROM t WHERE k <= 100");
is($state, '', "S3 (had all S1 flushed, S1 never wrote the index) keeps the index: $e2");
ok(index_matches_seqscan($s3, 't', [ 'k <= 100', 'k >= 0' ], 's3'), 'S3: index = seqscan');
$s3->stop;
done_testing();
