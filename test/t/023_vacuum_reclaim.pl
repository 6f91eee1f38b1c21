# 023_vacuum_reclaim.pl — VACUUM takes empty leaves out of a dmindex tree
# and later inserts reuse their nodes, so a table whose rows are deleted and
# replaced by rows with other keys keeps a bounded index.
#
# Rounds: insert 6,000 rows into one of three key ranges, delete every row
# outside that range, VACUUM.  Before src/dm/dm_tree_reclaim.c the emptied
# leaves stayed in the tree for ever (each round's deletes left their leaves
# behind and the splits of the next range took new memory: the memnode grew
# every round).  Now the memnode's use (chunks_used, in 64 KiB chunks) after
# the last round must not exceed its use after the third (every range has
# been filled once by then) by more than two chunks, VACUUM VERBOSE must
# report deleted index "pages" (reclaimed leaves), dmindex_check(idx, true)
# must pass after every round, and the index must answer like a seq scan.
# A second table gets ever new key ranges (as with increasing ids): there
# the memnode must grow by under half a chunk per round (a round's rows
# take about two).  On the code before reclamation the leaf count, the
# reported deleted pages and this growth all fail.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $rounds = 12;
my $per = 6000;
my $chunk = 65536;

my $mn = start_memnode(args => [ '--size', '256M', '--shm', '--chunk-size', '64K' ]);
my $node = new_dmindex_node('reclaim', [$mn], conf => "autovacuum = off\n");

$node->safe_psql('postgres', q{
	CREATE TABLE t (id bigserial PRIMARY KEY, v bigint);
	CREATE INDEX t_dm ON t USING dmindex (v);
});

my $chunks_sql = 'SELECT sum(chunks_used) FROM dmindex_memnodes()';
my (@chunks, @leaves);
my $deleted_pages = 0;
my $check_ok = 1;
for my $r (0 .. $rounds - 1)
{
	my $lo = ($r % 3) * 1_000_000_000;
	my $hi = $lo + 1_000_000_000;
	$node->safe_psql('postgres', qq{
		INSERT INTO t (v) SELECT $lo + i * 7 + (random() * 6)::int FROM generate_series(1, $per) i;
		DELETE FROM t WHERE v < $lo OR v >= $hi;
	});
	my ($ret, $out, $err) = $node->psql('postgres', 'VACUUM (VERBOSE) t');
	# PostgreSQL 15: index "t_dm": pages: N in total, N newly deleted, ...
	$deleted_pages += $1 while $err =~ /index "t_dm": pages: \d+ in total, (\d+) newly deleted/g;
	push @chunks, $node->safe_psql('postgres', $chunks_sql);
	push @leaves, $node->safe_psql('postgres', "SELECT leaf_nodes FROM dmindex_stats('t_dm')");
	my $chk = dmindex_check($node, 'postgres', 't_dm', 1);
	if ($chk ne "$per|$per|t")
	{
		$check_ok = 0;
		diag "round $r: dmindex_check: $chk";
	}
}
note "memnode chunks (64 KiB) after each round: @chunks";
note "leaves after each round: @leaves";
note "index pages VACUUM reported newly deleted: $deleted_pages";
ok($check_ok, "dmindex_check(t_dm, true) passes after each of $rounds rounds");
cmp_ok($deleted_pages, '>', 0, 'VACUUM reports reclaimed leaves as deleted index pages');
cmp_ok($chunks[-1], '<=', $chunks[2] + 2,
	"memnode use stays bounded: $chunks[-1] chunks after round $rounds, $chunks[2] after round 3");
# (before reclamation: 104 208 312 341 363 389 399 415 423 431 439 446)
cmp_ok($leaves[-1], '<=', $leaves[2] * 1.1 + 5,
	"the tree keeps its size: $leaves[-1] leaves after round $rounds, $leaves[2] after round 3");

# the index answers like a seq scan, in the live range and the emptied ones
my @ranges = ([ 0, 3e9 ], [ 0, 1e9 ], [ 1e9, 2e9 ], [ 2e9, 3e9 ], [ 2e9 + 1000, 2e9 + 20000 ]);
for (1 .. 8)
{
	my $a = int(rand(3e9));
	push @ranges, [ $a, $a + int(rand(1e8)) ];
}
my $queries = join("\n",
	(map { "SELECT count(*), sum(id), sum(v) FROM t WHERE v BETWEEN $_->[0] AND $_->[1];" } @ranges),
	"SELECT string_agg(v::text, ',') FROM (SELECT v FROM t WHERE v > 2000000100 ORDER BY v LIMIT 40) s;",
	"SELECT string_agg(v::text, ',') FROM (SELECT v FROM t WHERE v < 2000090000 ORDER BY v DESC LIMIT 40) s;");
my $via_index = $node->safe_psql('postgres',
	"BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;\n$queries\nROLLBACK;");
my $via_seq = $node->safe_psql('postgres',
	"BEGIN; SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off;\n$queries\nROLLBACK;");
like($node->safe_psql('postgres', "BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;
	EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE v BETWEEN 0 AND 1e9; ROLLBACK;"), qr/t_dm/,
	'the index queries use t_dm');
is($via_index, $via_seq, 'the index answers like a seq scan (' . (scalar(@ranges) + 2) . ' queries)');

# ever new ranges: growth per round far below the tree's own size per round
$node->safe_psql('postgres', q{
	CREATE TABLE q (id bigserial PRIMARY KEY, v bigint);
	CREATE INDEX q_dm ON q USING dmindex (v);
});
my @qchunks;
for my $r (0 .. $rounds - 1)
{
	my $lo = $r * 1_000_000_000;
	$node->safe_psql('postgres', qq{
		INSERT INTO q (v) SELECT $lo + i * 7 FROM generate_series(1, $per) i;
		DELETE FROM q WHERE v < $lo;
		VACUUM q;
	});
	push @qchunks, $node->safe_psql('postgres', $chunks_sql);
}
my $tree_chunks = $node->safe_psql('postgres',
	"SELECT ceil((leaf_nodes + inner_nodes) * node_size / ${chunk}::numeric) FROM dmindex_stats('q_dm')");
note "ever new ranges: memnode chunks after each round: @qchunks; the tree itself: $tree_chunks chunks";
# a round's rows fill about two chunks of leaves; before reclamation the
# memnode grew by about that much every round (10 12 14 15 17 ... 29)
cmp_ok($qchunks[-1] - $qchunks[2], '<=', ($rounds - 3) / 2,
	'ever new ranges: the memnode grows by under half a chunk per round, '
	  . ($qchunks[-1] - $qchunks[2]) . ' chunks in ' . ($rounds - 3) . ' rounds');
is(dmindex_check($node, 'postgres', 'q_dm', 1), "$per|$per|t", 'dmindex_check(q_dm, true) passes');

$node->stop;
stop_memnode($mn);
done_testing();
