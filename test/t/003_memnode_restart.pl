# 003_memnode_restart.pl — losing a memory node's data (DESIGN.md §8).
#
# A memnode restarted on its region file reattaches it and loses nothing
# (018_memnode_durable.pl).  But a region can still be lost: a machine
# restart empties /dev/shm, a damaged superblock or another --size is not
# reattached, an operator starts with --fresh-region.  Here the memnode is
# killed (SIGKILL) and started again on the same port with --fresh-region:
# it comes back empty under a new incarnation.
# Why: an index built before then has lost its data, and must say so —
# every use (scans of each kind, inserts, dmindex_check), from new sessions
# and from a session that used the index before the restart, fails with
# SQLSTATE XX002 (ERRCODE_INDEX_CORRUPTED) and a hint to REINDEX, and never
# returns wrong rows or commits a row the index does not have.  REINDEX must
# then give a working index again (results equal a sequential scan).  Also:
# the memnode exits 0 on SIGTERM, and a query on an index whose memnode is
# down fails with a connection error instead of hanging.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode(
	args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);
my $node = new_dmindex_node('restart', [$mn],
	conf => "dmindex.connect_timeout = 2000\ndmindex.op_timeout = 5000\n");

$node->safe_psql(
	'postgres', q{
CREATE TABLE t (id int, k int);
INSERT INTO t SELECT g, (g * 37) % 10000 FROM generate_series(1, 10000) g;
CREATE INDEX t_k_dm ON t USING dmindex (k);
CREATE TABLE t2 (k bigint);
INSERT INTO t2 SELECT g FROM generate_series(1, 1000) g;
CREATE INDEX t2_k_dm ON t2 USING dmindex (k);
VACUUM ANALYZE t;
VACUUM ANALYZE t2;
});

my $indexscan = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $bitmapscan = 'SET enable_seqscan = off; SET enable_indexscan = off; SET enable_indexonlyscan = off;';
my $seqscan = 'SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;';
my $q = "SELECT count(*), sum(id) FROM t WHERE k BETWEEN 100 AND 2000";

my $expected = $node->safe_psql('postgres', "$seqscan $q");
is($node->safe_psql('postgres', "$indexscan $q"),
	$expected, 'before the restart the index answers like a seq scan');
like($node->safe_psql('postgres', "$indexscan EXPLAIN $q"),
	qr/Index Scan using t_k_dm/, 'the query uses the dmindex index');

# a session that has the index's tree open when the memnode goes away
my $old_session = $node->background_psql('postgres', on_error_stop => 0);
is($old_session->query("$indexscan $q"),
	$expected, 'a long-lived session uses the index before the restart');
my $old_session2 = $node->background_psql('postgres', on_error_stop => 0);
is($old_session2->query("$indexscan SELECT count(*) FROM t2 WHERE k < 100"),
	'99', 'another long-lived session uses the other index before the restart');

my $status = kill_memnode($mn);
ok(defined $status && ($status & 127) == 9, 'the memnode was killed by SIGKILL');
my $mn2 = restart_memnode($mn, fresh => 1);
is($mn2->{start}, 'fresh', 'restarted with --fresh-region, it does not reattach its region file');
isnt($mn2->{incarnation}, $mn->{incarnation},
	"the restarted memnode has a new incarnation ($mn->{incarnation} -> $mn2->{incarnation})");
is( $node->safe_psql('postgres',
		"SELECT reachable, incarnation, trees FROM dmindex_memnodes()"),
	"t|$mn2->{incarnation}|0",
	'dmindex_memnodes() shows the new, empty incarnation');

# every way of using the index now fails with XX002 and a hint to REINDEX
my %uses = (
	'index scan'    => "$indexscan $q",
	'bitmap scan'   => "$bitmapscan $q",
	'ordered scan'  => "$indexscan SELECT k FROM t WHERE k > 10 ORDER BY k LIMIT 5",
	'insert'        => "INSERT INTO t VALUES (-1, 4242)",
	'update of key' => "UPDATE t SET k = k + 1 WHERE id = 17",
	'dmindex_check' => "SELECT * FROM dmindex_check('t_k_dm', true)",
	'dmindex_stats' => "SELECT * FROM dmindex_stats('t_k_dm')",
	'VACUUM'        => "DELETE FROM t WHERE id = 18; VACUUM t",);
for my $use (sort keys %uses)
{
	my ($state, $err) = query_sqlstate($node, 'postgres', $uses{$use});
	is($state, 'XX002', "$use after the memnode restart fails with SQLSTATE XX002");
	like($err, qr/HINT:\s+REINDEX/, "$use: the error has a hint to REINDEX")
	  or diag $err;
}
like((query_sqlstate($node, 'postgres', "$indexscan $q"))[1],
	qr/lost its data|restarted/, 'the message says the memnode restarted');

# no row committed without its entry (a DELETE needs no entry: it commits)
is($node->safe_psql('postgres', "$seqscan SELECT count(*) FROM t WHERE id = -1"),
	'0', 'the failed INSERT did not commit');
is($node->safe_psql('postgres', "$seqscan SELECT k FROM t WHERE id = 17"),
	'629', 'the failed UPDATE did not commit');
$expected = $node->safe_psql('postgres', "$seqscan $q");

# the session that used the index before: an error, never rows
my ($out, $failed) = $old_session->query("$indexscan $q");
ok($failed, 'the long-lived session gets an error, not rows')
  or diag "it returned: $out";
like($old_session->{stderr}, qr/ERROR/, 'the long-lived session reports an ERROR');
$old_session->{stderr} = '';
($out, $failed) = $old_session->query("\\set VERBOSITY verbose\n$indexscan $q");
like($old_session->{stderr}, qr/ERROR:\s+XX002/,
	'the long-lived session gets XX002 when it retries');
$old_session->{stderr} = '';

# REINDEX brings the index back
my ($ret, $stdout, $stderr) = $node->psql('postgres', 'REINDEX INDEX t_k_dm');
is($ret, 0, 'REINDEX INDEX succeeds on the new incarnation') or diag $stderr;
is(sql($node, 'postgres', "$indexscan $q"),
	$expected, 'after REINDEX an index scan answers like a seq scan');
is(sql($node, 'postgres', "$bitmapscan $q"),
	$expected, 'after REINDEX a bitmap scan answers like a seq scan');
is(dmindex_check($node, 'postgres', 't_k_dm'),
	'9999|9999|t', 'after REINDEX dmindex_check passes');
is(sql($node, 'postgres',
	"INSERT INTO t VALUES (-2, 4243); $indexscan SELECT id FROM t WHERE k = 4243 AND id < 0"),
	'-2', 'after REINDEX inserts are found through the index');

($out, $failed) = $old_session->query("$indexscan $q");
ok(!$failed, 'the long-lived session uses the rebuilt index')
  or diag $old_session->{stderr};
is($out, $expected, 'the long-lived session gets the right rows');
$old_session->quit;

# the other index is still lost until it is rebuilt too
my ($state) = query_sqlstate($node, 'postgres',
	"$indexscan SELECT count(*) FROM t2 WHERE k < 100");
is($state, 'XX002', 'an index not yet rebuilt still fails with XX002');
# ... which a session that knew the old incarnation can do as well (its
# first attempt may fail on the connection to the dead memnode)
$old_session2->query('REINDEX TABLE t2');
if ($old_session2->{stderr} ne '')
{
	note "first REINDEX in the old session: $old_session2->{stderr}";
	$old_session2->{stderr} = '';
	$old_session2->query('REINDEX TABLE t2');
}
is($old_session2->{stderr}, '',
	'REINDEX TABLE succeeds in a session opened before the memnode restart');
$old_session2->quit;
$node->safe_psql('postgres', 'REINDEX TABLE t2') if $old_session2->{stderr} ne '';
is(sql($node, 'postgres', "$indexscan SELECT count(*) FROM t2 WHERE k < 100"),
	'99', 'REINDEX TABLE rebuilds it');
is(memnode_trees($node), 2, 'the new incarnation holds the two rebuilt trees');

# a clean shutdown of the memnode
my $old_session3 = $node->background_psql('postgres', on_error_stop => 0);
is($old_session3->query("$indexscan $q"), $expected,
	'a session uses the rebuilt index before the memnode shuts down');
is(stop_memnode($mn2), 0, 'the memnode exits with status 0 on SIGTERM');
($out, $failed) = $old_session3->query("\\set VERBOSITY verbose\n$indexscan $q");
ok($failed && $old_session3->{stderr} =~ /ERROR:\s+08\d\d\d/,
	'that session then gets a connection error, not rows')
  or diag "stdout: $out, stderr: $old_session3->{stderr}";
$old_session3->quit;
my $start = time();
my $err;
($state, $err) = query_sqlstate($node, 'postgres', "$indexscan $q");
like($state, qr/^08/, 'with the memnode down, a query fails with a connection error')
  or diag $err;
cmp_ok(time() - $start, '<', 60, 'and does not hang');
is($node->safe_psql('postgres', "$seqscan $q"),
	$expected, 'the table itself is still readable without the index');

$node->stop;
done_testing();
