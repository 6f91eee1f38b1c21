# 008_cache_pgbench.pl — the concurrent pgbench workload of 001 through a
# node cache of about 1% of the index, which evicts constantly.
#
# Why: with the cache, every backend writes the nodes of the index through
# the same shared frames under local locks only (no remote lock), admits
# and evicts nodes while others read them, and reads leaves partly from
# frames and partly from the memnode.  A lost update, a stale frame served,
# or an entry written around the cache shows up as a missing or stale entry
# in dmindex_check(idx, true), as an answer different from the btree's, or
# as a cached node that differs from remote memory (dmindex_check compares
# every cached node with its remote copy).  Run once with the DEX policy
# (leaves admitted with probability 0.5, to churn them) and once with the
# inner-only policy (leaves always written under the remote lock), and with
# the DEX policy over tcp, where every write-through is a network round trip
# made while the frame's local lock is held.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;
use DmindexWorkload;

my $duration = $ENV{DM_PGBENCH_SECONDS} // 15;

my $mn = start_memnode(
	args => [ '--size', '512M', '--shm', '--chunk-size', '1M' ]);

for my $run ([ 'dex', 'shm' ], [ 'inner', 'shm' ], [ 'dex', 'tcp' ])
{
	my ($policy, $transport) = @$run;
	note "---- policy $policy over $transport";
	# 256-byte nodes and frames: 60,000 rows make ~8,000 nodes, of which
	# the 160 kB cache holds about 1%.  A key shape whose keys need larger
	# nodes (DMINDEX_TAP_KEY=icu: key_with) gets frames of its node size
	# (a node larger than a frame is never cached): its longer keys make
	# about as many nodes, so the same 160 kB in fewer frames hold less.
	my ($node_size) = key_with('WITH (node_size = 256)') =~ /node_size = (\d+)/;
	my $node = new_dmindex_node(
		"cache_${policy}_$transport",
		[$mn],
		conf => "max_connections = 30\n"
		  . "dmindex.transport = $transport\n"
		  . "dmindex.cache_policy = $policy\n"
		  . "dmindex.cache_size = 160kB\n"
		  . "dmindex.cache_frame_size = $node_size\n"
		  . "dmindex.cache_leaf_admission = 0.5\n");

	pgbench_consistency(
		$node,
		rows     => 60000,
		with     => "WITH (node_size = $node_size)",
		duration => $duration);

	my ($frames, $nodes) = split /\|/, $node->safe_psql('postgres',
		"SELECT capacity_frames, (SELECT leaf_nodes + inner_nodes FROM dmindex_stats('t_k_dm')) "
		  . "FROM dmindex_cache_stats()");
	note "cache: $frames frames for an index of $nodes nodes";
	ok($frames > 0 && $frames * 100 <= 3 * $nodes,
		"$policy/$transport: the cache holds at most 3% of the index ($frames frames, $nodes nodes; the index size depends on how many pgbench transactions ran)");

	my $st = $node->safe_psql('postgres',
		"SELECT policy, hits, misses, evictions, coolings, cooling_promotions, local_writes, "
		  . "frames_used_by_level[1], admissions, round_trips_avoided FROM dmindex_cache_stats()");
	note "cache stats: $st";
	my ($pol, $hits, $misses, $evictions, $coolings, $promotions, $local,
		$leaf_frames, $admissions, $avoided)
	  = split /\|/, $st;
	is($pol, $policy, "$policy/$transport: dmindex_cache_stats() reports the policy");
	ok($hits > 1000 && $misses > 1000,
		"$policy/$transport: the cache was used and missed ($hits hits, $misses misses)");
	ok($evictions > 100 && $coolings > 100,
		"$policy/$transport: the cache evicted constantly ($evictions evictions, $coolings coolings)");
	ok($local > 100,
		"$policy/$transport: writes of owned nodes took no remote lock ($local local writes)");
	ok($avoided >= $hits, "$policy/$transport: round trips avoided counted ($avoided)");
	if ($policy eq 'inner')
	{
		is($leaf_frames // 0, 0, 'inner: no leaf is cached');
	}
	else
	{
		ok($leaf_frames > 0, "$policy/$transport: leaves are cached ($leaf_frames frames)");
	}

	# a fresh cache (restart) gives the same answers: nothing lived only in it
	$node->restart;
	like(dmindex_check($node, 'postgres', 't_k_dm'),
		qr/^\d+\|\d+\|t$/, "$policy/$transport: after a restart (empty cache) dmindex_check passes");
	$node->stop;
}

is(stop_memnode($mn), 0, 'memnode shuts down cleanly');

done_testing();
