# 038_old_writer_standby.pl — the old primary kept
# running after a promotion goes on writing an index the new primary has
# not used yet (so it is not fenced for it), and a standby of the new
# primary reads that tree: rows the old primary deleted and vacuumed after
# the fork are gone from the tree but alive in the standby's heap.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);
my $p = new_dmindex_node('p', [$mn], init => { allows_streaming => 1 },
	conf => "autovacuum = off\ndmindex.instance_id = 0\n");
$p->safe_psql('postgres', q{
CREATE TABLE t (id bigserial PRIMARY KEY, k int, kb int GENERATED ALWAYS AS (k) STORED);
INSERT INTO t (k) SELECT g FROM generate_series(1, 3000) g;
CREATE INDEX t_k_dm ON t USING dmindex (k);
CREATE INDEX t_kb_bt ON t (kb);
VACUUM ANALYZE t;
});
$p->backup('b');
my $s1 = streaming_standby($p, 'b', 's1', "dmindex.instance_id = 1\n");
$s1->backup('b1');
my $s3 = streaming_standby($s1, 'b1', 's3', "dmindex.instance_id = 3\nhot_standby_feedback = off\n");

# promotion while P keeps running (S1 does not touch t_k_dm)
$s1->promote;
$s1->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die;
$s1->safe_psql('postgres', 'SELECT txid_current()') for 1 .. 30;
$s1->wait_for_catchup($s3, 'replay');
# the old primary deletes and vacuums: entries leave the tree
$p->safe_psql('postgres', 'DELETE FROM t WHERE k <= 100');
$p->safe_psql('postgres', 'VACUUM t');

my $q = "SELECT count(*) || ':' || coalesce(md5(string_agg(id::text, ',' ORDER BY id)), '-') FROM t WHERE k <= 100";
my $seq = sql($s3, 'postgres', "$DmindexTest::seq_only $q");
like($seq, qr/^100:/, 'S3 (standby of the new primary): 100 rows in its heap');
my $idx = sql($s3, 'postgres', "$DmindexTest::idx_only $q");
ok($idx eq $seq || $idx =~ /FAILED/, "S3 through dmindex: a right answer or an error, never missing rows (index '$idx')");
# the new primary itself refuses the tree (the mark is past its fork point)
my ($state) = query_sqlstate($s1, 'postgres', "$DmindexTest::idx_only $q");
is($state, 'XX002', 'the new primary refuses the index (XX002)');
$s3->stop;
$s1->stop;
$p->stop;
done_testing();
