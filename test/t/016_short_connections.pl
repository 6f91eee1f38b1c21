# 016_short_connections.pl — many short connections must not fill the memnode.
#
# Short connections (pgbench -C: a new connection for every transaction),
# each inserting one row through a dmindex index and disconnecting: 2,500 by
# default, which keeps the test near a minute (a connection costs ~30 ms of
# PostgreSQL start-up on a 2-core machine); DM_SHORT_CONNECTIONS=10000 runs
# the 10,000 of the issue (about 5 minutes there).  Every backend that
# splits a node asks the memnode for space; what it was granted and did not
# use stays with it when it exits (a closed handle gives nothing back), so
# the grants must be small: before dm_tree_alloc.c's growing
# grants every such backend took a 64 KiB slab of its own, and the memnode
# filled at a chunk per splitting backend.  Here the memnode runs with 64 KiB
# chunks, so its chunks_used counts memory in 64 KiB steps, and its growth
# over the run must stay within twice the tree's own size (the tree's nodes
# plus the rests of the last grants; see test_tree_alloc.c for the exact
# count).  Then the index must agree with the heap: dmindex_check(idx, true)
# and the same answers as a btree on the same column (and a seq scan).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $connections = $ENV{DM_SHORT_CONNECTIONS} // 2500;
my $clients = 4;
my $per_client = int($connections / $clients);
$connections = $per_client * $clients;
my $chunk = 65536;

my $mn = start_memnode(
	args => [ '--size', '512M', '--shm', '--chunk-size', '64K' ]);
my $node = new_dmindex_node('shortconn', [$mn],
	conf => "max_connections = 20\n");

$node->safe_psql('postgres', q{
	CREATE TABLE t (id bigserial PRIMARY KEY, v bigint);
	CREATE INDEX t_dm ON t USING dmindex (v);
	CREATE INDEX t_bt ON t (v);
});

my $chunks_sql = 'SELECT sum(chunks_used) FROM dmindex_memnodes()';
my $chunks_before = $node->safe_psql('postgres', $chunks_sql);

# one row per connection: random keys (splits all over the tree), 5% NULLs
my $dir = $node->basedir;
append_to_file("$dir/insert.sql", <<'SQL');
\set r random(1, 20)
INSERT INTO t (v) VALUES (CASE WHEN :r = 1 THEN NULL ELSE (random() * 1e12)::bigint END);
SQL
my $t0 = time();
my ($bench_out, $bench_err) = ('', '');
my $ok = IPC::Run::run(
	[
		'pgbench', '-n', '-C', '-c', $clients, '-j', '2', '-t', $per_client,
		'-f', "$dir/insert.sql", '-h', $node->host, '-p', $node->port, 'postgres'
	],
	'>', \$bench_out, '2>', \$bench_err);
note "pgbench stdout:\n$bench_out\npgbench stderr:\n$bench_err";
note sprintf('%d connections in %d s', $connections, time() - $t0);
ok($ok, "pgbench -C ran $connections one-row connections");
like($bench_out, qr/number of transactions actually processed: $connections\//,
	"every one of the $connections transactions was processed");
unlike($bench_out . $bench_err, qr/aborted|ERROR/, 'no connection hit an error');

is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $connections,
	"the table has $connections rows");

# memnode use: bounded by the tree's size, not by the number of connections
my $chunks_after = $node->safe_psql('postgres', $chunks_sql);
my ($nodes, $node_size, $entries) = split /\|/, $node->safe_psql('postgres',
	"SELECT leaf_nodes + inner_nodes, node_size, entries FROM dmindex_stats('t_dm')");
is($entries, $connections, "the tree has $connections entries");
my $tree_bytes = $nodes * $node_size;
my $grown = ($chunks_after - $chunks_before) * $chunk;
note "memnode: $chunks_before chunks of 64 KiB before, $chunks_after after "
  . "(grew by $grown bytes); tree: $nodes nodes of $node_size bytes = $tree_bytes bytes";
cmp_ok($grown, '<=', 2 * $tree_bytes + 2 * $chunk,
	"the memnode grew by $grown bytes: at most twice the tree ($tree_bytes bytes) plus two chunks");
cmp_ok($grown, '<', $connections * 1024,
	"less than 1 KiB per connection");

# the index agrees with the heap
is(dmindex_check($node, 'postgres', 't_dm', 1), "$connections|$connections|t",
	'dmindex_check(t_dm, heapallindexed) passes');

# the same answers through dmindex (the btree dropped in a transaction that
# rolls back), through the btree (likewise without dmindex) and by seq scan
my @ranges = ([ 0, 1e12 ], [ 0, 1e9 ], [ 5e11, 5e11 + 1e10 ], [ 999e9, 1e12 ]);
for (1 .. 12)
{
	my $lo = int(rand(1e12));
	push @ranges, [ $lo, $lo + int(rand(1e11)) ];
}
my $queries = join("\n",
	"SELECT count(*), sum(id) FROM t WHERE v IS NULL;",
	(map { "SELECT count(*), sum(id), sum(v) FROM t WHERE v BETWEEN $_->[0] AND $_->[1];" } @ranges),
	"SELECT string_agg(id::text, ',') FROM (SELECT id FROM t WHERE v > 7e11 ORDER BY v LIMIT 50) s;");
my %answer;
for my $via ([ 'dmindex', 't_bt', 't_dm' ], [ 'btree', 't_dm', 't_bt' ],
	[ 'seqscan', undef, undef ])
{
	my ($name, $drop, $used) = @$via;
	my $setup = defined $drop
	  ? "DROP INDEX $drop; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;"
	  : "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off;";
	$answer{$name} = $node->safe_psql('postgres', "BEGIN; $setup\n$queries\nROLLBACK;");
	if (defined $used)
	{
		my $plan = $node->safe_psql('postgres', "BEGIN; $setup
			EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE v BETWEEN 0 AND 1e9; ROLLBACK;");
		like($plan, qr/\b$used\b/, "the $name queries use $used");
	}
}
is($answer{dmindex}, $answer{btree}, 'dmindex answers like the btree (' . (scalar(@ranges) + 2) . ' queries)');
is($answer{dmindex}, $answer{seqscan}, 'dmindex answers like a seq scan');
is(dmindex_check($node, 'postgres', 't_dm', 1), "$connections|$connections|t",
	'dmindex_check still passes after the rolled-back DROPs');

$node->stop;
is(stop_memnode($mn), 0, 'memnode shuts down cleanly');

done_testing();
