# 034_standby_other_branch.pl — a hot standby left on
# the old timeline after a failover keeps reading the tree the promoted
# server now writes.
#
# P (instance 0) has two async standbys, S1 (instance 1) and S2 (instance
# 2, no feedback).  S1 stops receiving; P deletes rows (no remote write:
# entries go only at VACUUM, so the high-water mark stays at or before S1's
# end) and commits a few more transactions, which S2 replays.  P dies; S1 is
# promoted and takes the tree over (mark <= fork).  S2 is ahead of S1's fork
# point, so it cannot follow timeline 2: it stays a hot standby on timeline
# 1 serving reads (as plain PostgreSQL allows: stale, but self-consistent).
# S1 deletes and vacuums other rows: their entries leave the tree.  S2's
# heap still has those rows, its snapshot xmin is past S1's removal horizon
# (the two branches' xids overlap), and its reads are not checked against
# the writer word (dmindex_writer_check returns early in recovery).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Copy;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);
my $p = new_dmindex_node('p', [$mn], init => { allows_streaming => 1 },
	conf => "autovacuum = off\ndmindex.instance_id = 0\n");
$p->safe_psql('postgres', q{
CREATE TABLE t (id bigserial PRIMARY KEY, k int, kb int GENERATED ALWAYS AS (k) STORED, pad text);
INSERT INTO t (k, pad) SELECT g, 'x' FROM generate_series(1, 5000) g;
CREATE INDEX t_k_dm ON t USING dmindex (k);
CREATE INDEX t_kb_bt ON t (kb);
VACUUM ANALYZE t;
});
$p->backup('b');
my @s;
for my $i (1, 2, 3)
{
	push @s, streaming_standby($p, 'b', "s$i", "dmindex.instance_id = $i\nhot_standby_feedback = off\n");
}
my ($s1, $s2, $s3) = @s;

my $q = "SELECT count(*) || ':' || coalesce(md5(string_agg(id::text, ',' ORDER BY id)), '-') FROM t WHERE k BETWEEN 1001 AND 2000";
is(sql($s2, 'postgres', "$DmindexTest::idx_only $q"), sql($s2, 'postgres', "$DmindexTest::seq_only $q"),
	'S2 before the failover: index = seqscan');

# S1 (and S3, which will follow S1) stop receiving; P goes on (heap changes
# only) and S2 replays them
$s1->stop('fast');
$s3->stop('fast');
$p->safe_psql('postgres', 'DELETE FROM t WHERE k <= 1000');
$p->safe_psql('postgres', 'SELECT txid_current()') for 1 .. 30;
$p->wait_for_catchup($s2, 'replay');
$p->stop('immediate');

$s1->start;
$s1->promote;
$s1->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die;
is(sql($s1, 'postgres', "$DmindexTest::idx_only $q"), sql($s1, 'postgres', "$DmindexTest::seq_only $q"),
	'S1 promoted: takes the tree over, index = seqscan');
$s1->safe_psql('postgres', 'DELETE FROM t WHERE k BETWEEN 1001 AND 2000');
$s1->safe_psql('postgres', 'VACUUM t');
is(sql($s1, 'postgres', "$DmindexTest::idx_only $q"), '0:-', 'S1: the rows are gone, index and heap');

# S2: still a hot standby of timeline 1; its heap has the rows
ok($s2->safe_psql('postgres', 'SELECT pg_is_in_recovery()') eq 't', 'S2 still in recovery on the old timeline');
my $seq = sql($s2, 'postgres', "$DmindexTest::seq_only $q");
like($seq, qr/^1000:/, 'S2 heap: 1000 rows (its branch never deleted them)');
my $idx = sql($s2, 'postgres', "$DmindexTest::idx_only $q");
ok($idx eq $seq || $idx =~ /FAILED/, "S2 through dmindex: a right answer or an error, never missing rows (index '$idx', seqscan '$seq')");
like($idx, qr/index "t_k_dm" is written on another branch of history|Index "t_k_dm" is written on timeline 2, whose history this standby \(timeline 1\) has not received/,
	'S2 refuses the index (without timeline 2\'s history: as a recovery conflict)');
# given that history (S2's restore_command or a connection to S1 would fetch it), for good
copy($s1->data_dir . '/pg_wal/00000002.history', $s2->data_dir . '/pg_wal/00000002.history') or die "copy: $!";
system('chown', '--reference=' . $s2->data_dir . '/pg_wal', $s2->data_dir . '/pg_wal/00000002.history');
like(sql($s2, 'postgres', "$DmindexTest::idx_only $q"), qr/ERROR:  index "t_k_dm" is written on another branch of history/,
	'with the history of timeline 2: refused as another branch (55000)');
my $bt = sql($s2, 'postgres', "SET enable_seqscan = off; SET enable_bitmapscan = off; " .
	"SELECT count(*) || ':' || coalesce(md5(string_agg(id::text, ',' ORDER BY id)), '-') FROM t WHERE kb BETWEEN 1001 AND 2000");
is($bt, $seq, 'S2 btree = seqscan');

# S3 was behind the fork point: pointed at S1, it follows timeline 2 and
# reads the tree S1 writes, as any standby of S1
$s3->append_conf('postgresql.conf', "primary_conninfo = 'port=" . $s1->port . " host=" . $s1->host . "'\n");
$s3->start;
$s1->wait_for_catchup($s3, 'replay');
is(sql($s3, 'postgres', "$DmindexTest::idx_only $q"), sql($s3, 'postgres', "$DmindexTest::seq_only $q"),
	'S3, following the new timeline: index = seqscan');
my $all = "SELECT count(*) || ':' || coalesce(md5(string_agg(id::text, ',' ORDER BY id)), '-') FROM t WHERE k <= 3000";
is(sql($s3, 'postgres', "$DmindexTest::idx_only $all"), sql($s3, 'postgres', "$DmindexTest::seq_only $all"),
	'S3: index = seqscan for keys 1..3000');

$s3->stop;
$s2->stop('immediate');
$s1->stop;
done_testing();
