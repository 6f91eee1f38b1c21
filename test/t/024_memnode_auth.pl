# 024_memnode_auth.pl — PostgreSQL servers on a memnode that requires
# authentication (--auth-file; README "Security", docs/design.md §3).
#
# A server whose dmindex.memnode_auth_file holds one of the memnode's
# identities with its secret works as without authentication: CREATE INDEX,
# inserts, range queries equal to a sequential scan, dmindex_check, over tcp
# and shm.  A server with a wrong secret, with no auth file, or with an
# auth file others may read gets a clear error (SQLSTATE 28000, or F0000
# for the unusable file) and creates nothing on the memnode.  Two servers
# with two identities share one memnode, each with its own index; neither
# lists the other's trees.  The setting is hidden from non-superusers, and
# the memnode's refusals show in dmindex_memnodes().

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $secret_a = 'cluster-a-secret-0123456789abcdef';
my $secret_b = 'cluster-b-secret-fedcba9876543210';

sub write_file_mode
{
	my ($path, $content, $mode) = @_;
	open(my $fh, '>', $path) or die "$path: $!";
	print $fh $content;
	close($fh);
	chmod($mode, $path) or die "chmod $path: $!";
	return $path;
}

my $mn_file = write_file_mode("$dir/memnode.auth",
	"# identities of the servers using this memnode\ncluster-a $secret_a\ncluster-b $secret_b\n", 0600);
my $a_file = write_file_mode("$dir/a.auth", "cluster-a $secret_a\n", 0600);
my $b_file = write_file_mode("$dir/b.auth", "cluster-b $secret_b\n", 0600);
my $wrong_file = write_file_mode("$dir/wrong.auth", "cluster-b not-the-secret-of-cluster-b\n", 0600);
my $open_file = write_file_mode("$dir/open.auth", "cluster-b $secret_b\n", 0644);

my $mn = start_memnode(
	args => [ '--size', '256M', '--shm', '--chunk-size', '1M', '--auth-file', $mn_file ]);

# ---- the server with the right credentials
my $a = new_dmindex_node('auth_a', [$mn],
	conf => "dmindex.memnode_auth_file = '$a_file'\ndmindex.transport = tcp\n");
$a->safe_psql(
	'postgres', q{
CREATE TABLE t (id int, k int);
INSERT INTO t SELECT g, (g * 37) % 10000 FROM generate_series(1, 5000) g;
CREATE INDEX t_k_dm ON t USING dmindex (k);
INSERT INTO t SELECT g, (g * 91) % 10000 FROM generate_series(5001, 8000) g;
VACUUM ANALYZE t;
});
my $indexscan = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $seqscan = 'SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;';
my $q = "SELECT count(*), sum(id) FROM t WHERE k BETWEEN 100 AND 2500";
my $expected = $a->safe_psql('postgres', "$seqscan $q");
like($a->safe_psql('postgres', "$indexscan EXPLAIN $q"),
	qr/Index Scan using t_k_dm/, 'the query uses the dmindex index');
is($a->safe_psql('postgres', "$indexscan $q"),
	$expected, 'authenticated over tcp: the index answers a range query like a seq scan');
is($a->safe_psql('postgres', "SET dmindex.transport = shm; $indexscan $q"),
	$expected, 'authenticated, then the shm transport: same answer');
is(dmindex_check($a, 'postgres', 't_k_dm'), '8000|8000|t', 'dmindex_check passes');

# ---- a wrong secret, no credentials, an auth file others may read
my $b = new_dmindex_node('auth_b', [$mn],
	conf => "dmindex.memnode_auth_file = '$wrong_file'\n");
$b->safe_psql('postgres', 'CREATE TABLE u (k int); INSERT INTO u SELECT g FROM generate_series(1, 1000) g');
my ($state, $err) = query_sqlstate($b, 'postgres', 'CREATE INDEX u_k_dm ON u USING dmindex (k)');
is($state, '28000', 'a wrong secret: CREATE INDEX fails with SQLSTATE 28000');
like($err, qr/authentication with memnode "127\.0\.0\.1:\d+" failed/, '... "authentication with memnode ... failed"');
like($err, qr/refused \(wrong secret or unknown identity\)/, '... the detail says why');
like($err, qr/HINT:.*dmindex\.memnode_auth_file/, '... and the hint names the setting');

$b->safe_psql('postgres', "ALTER SYSTEM SET dmindex.memnode_auth_file = ''; SELECT pg_reload_conf()");
$b->poll_query_until('postgres', "SELECT current_setting('dmindex.memnode_auth_file') = ''")
  or die 'reload did not happen';
($state, $err) = query_sqlstate($b, 'postgres', 'CREATE INDEX u_k_dm ON u USING dmindex (k)');
is($state, '28000', 'no credentials: SQLSTATE 28000');
like($err, qr/requires authentication/, '... the memnode requires authentication');

$b->safe_psql('postgres', "ALTER SYSTEM SET dmindex.memnode_auth_file = '$open_file'; SELECT pg_reload_conf()");
$b->poll_query_until('postgres', "SELECT current_setting('dmindex.memnode_auth_file') <> ''")
  or die 'reload did not happen';
($state, $err) = query_sqlstate($b, 'postgres', 'CREATE INDEX u_k_dm ON u USING dmindex (k)');
is($state, 'F0000', 'an auth file others may read: SQLSTATE F0000');
like($err, qr/could not use "dmindex\.memnode_auth_file".*\n.*group or world access/,
	'... saying the file has group or world access');
is($b->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'u_k_dm'}),
	'0', 'no index was created by the refused attempts');

# ---- the second identity: its own index beside the first server's
$b->safe_psql('postgres', "ALTER SYSTEM SET dmindex.memnode_auth_file = '$b_file'; SELECT pg_reload_conf()");
$b->poll_query_until('postgres', "SELECT current_setting('dmindex.memnode_auth_file') = '$b_file'")
  or die 'reload did not happen';
$b->safe_psql('postgres', 'CREATE INDEX u_k_dm ON u USING dmindex (k)');
is($b->safe_psql('postgres', "$indexscan SELECT count(*) FROM u WHERE k BETWEEN 10 AND 19"),
	'10', 'the second server, right secret after a reload: its index works');
is($a->safe_psql('postgres', "$indexscan $q"), $expected, 'the first server still gets the same answer');
is( $b->safe_psql('postgres', 'SELECT trees FROM dmindex_memnodes()'),
	'2', 'the memnode holds two trees (one per server)');
ok( $b->safe_psql('postgres', 'SELECT auth_failures >= 2 FROM dmindex_memnodes()') eq 't',
	'dmindex_memnodes() shows the refused authentications');
# the collector lists this database's trees on the memnode: it sees only its own
is($b->safe_psql('postgres', 'SELECT dmindex_gc()'), '0',
	'the collector of the second server finds nothing of the first to free');
is($a->safe_psql('postgres', "$indexscan $q"), $expected, '... and the first server\'s index is intact');

# ---- the setting is for superusers only
$a->safe_psql('postgres', 'CREATE ROLE plain LOGIN');
($state, $err) = query_sqlstate($a, 'postgres', 'SET ROLE plain; SHOW dmindex.memnode_auth_file');
is($state, '42501', 'a non-superuser cannot see dmindex.memnode_auth_file');

$a->stop;
$b->stop;
stop_memnode($mn);
done_testing();
