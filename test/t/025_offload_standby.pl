# 025_offload_standby.pl — a primary that offloads every index write and
# forward scan to the memnode's executor (dmindex.offload = always, DEX §6;
# src/pg/dmoffload.c), and a hot standby that reads the same tree with its
# node cache on (docs/design.md §7 and §8 "Offloading").
#
# Why: offloaded writes land through the memnode's executor, not through
# the primary's own batches, so they reach the standbys' caches only if the
# primary's write log names the nodes the executor changed (dm_offload.c
# adds them; dmwal.c logs the list before the commit record).  And the
# primary's own cache must drop its copies of those nodes, or its next
# scan reads a stale leaf.  (While both servers use one partition map the
# primary offloads only into its own ranges and the standby caches only
# leaves of its own, so a missing record would not show in the standby's
# answers here — it matters once a range moves to the primary, docs/design.md
# §8 — hence the WAL itself is read.)
#
#   wal      one-row transactions into the primary's range, with room in
#            their leaves: most are offloaded (counters), and every one of
#            them is followed by a NODES_WRITTEN record in the WAL
#            (pg_walinspect), which names at least one node;
#   load     pgbench inserts, updates and deletes over both ranges (the
#            primary's, offloaded; the standby's, one-sided because the
#            primary does not own it) with VACUUM every second, while the
#            standby and the primary compare index answers with their
#            seqscans (point, range, ORDER BY both ways) in one snapshot;
#   after    both indexes = seqscan; dmindex_check(idx, true) on both (the
#            standby's cached leaves never newer than, and the primary's
#            owned ones identical to, remote memory); the primary's
#            counters show offloads, none lost; the standby offloaded
#            nothing (a replica never does), its cache served hits.
#
# DM_OFFLOAD_STANDBY_SECONDS sets the length of the load phase (default 10).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;
use DmindexWorkload;

# key ranges per instance (dmindex_set_partitions) exist for FIXED8 indexes
# only: with DMINDEX_TAP_KEY=text or multi there is nothing to run
key_shape_needs_int8('key ranges per instance are not supported for VAR indexes');

my $duration = $ENV{DM_OFFLOAD_STANDBY_SECONDS} // 10;

my $mn = start_memnode(
	args => [ '--size', '512M', '--shm', '--chunk-size', '1M', '--offload-threads', '2' ]);

my $cache_conf = "dmindex.cache_policy = dex\n"
  . "dmindex.cache_size = 8MB\n"
  . "dmindex.cache_frame_size = 1024\n"
  . "dmindex.cache_leaf_admission = 1.0\n"
  . "dmindex.partition_refresh_interval = 100\n"
  . "dmindex.offload = always\n";

my $primary = new_dmindex_node(
	'primary', [$mn],
	init => { allows_streaming => 1 },
	conf => "max_connections = 30\nautovacuum = off\ndmindex.instance_id = 0\n" . $cache_conf);
$primary->safe_psql(
	'postgres', q{
	CREATE EXTENSION pg_walinspect;
	CREATE TABLE t (id bigserial, k int, pad text);
	INSERT INTO t (k, pad) SELECT (g * 7919) % 100000, 'initial' FROM generate_series(1, 30000) g;
	CREATE INDEX t_k_dm ON t USING dmindex (k) WITH (node_size = 1024, fillfactor = 50);
	VACUUM ANALYZE t;
	SELECT pg_create_physical_replication_slot('s1', true);
	SELECT dmindex_set_partitions('t_k_dm', ARRAY[50000], ARRAY[0, 1]);
});
$primary->backup('b');
my $s1 = PostgreSQL::Test::Cluster->new('standby1');
$s1->init_from_backup($primary, 'b', has_streaming => 1);
$s1->append_conf('postgresql.conf',
	"primary_slot_name = 's1'\nhot_standby_feedback = on\ndmindex.instance_id = 1\n");
$s1->start;
$primary->wait_for_catchup($s1, 'replay');

my $idx_only = "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;";
my $seq_only = "SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;";

sub offload_stats
{
	my ($node) = @_;
	my $r = $node->safe_psql('postgres',
		"SELECT mode, offloads, fallbacks, lost_writes, invalidated FROM dmindex_offload_stats()");
	my @v = split /\|/, $r;
	return { mode => $v[0], offloads => $v[1], fallbacks => $v[2], lost => $v[3], invalidated => $v[4] };
}

sub both
{
	my ($node, $q) = @_;
	return (sql($node, 'postgres', "$idx_only $q"), sql($node, 'postgres', "$seq_only $q"));
}

is(sql($s1, 'postgres', "SELECT instance, lo_value FROM dmindex_partitions('t_k_dm') WHERE local"),
	'1|50000', 'the standby is instance 1 and owns [50000, max]');

# ---- wal: every offloaded write is in the WAL --------------------------------------------

# warm the primary's cache: the inner nodes of its range (offloads start at the first miss)
sql($primary, 'postgres', "$idx_only SELECT sum((SELECT count(*) FROM t WHERE k = (g * 13) % 50000)) FROM generate_series(1, 2000) g");
$primary->safe_psql('postgres', 'SELECT dmindex_offload_stats_reset()');
my $lsn0 = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
my $ntx = 120;
# one row per transaction (autocommit), keys spread over the primary's range
$primary->safe_psql('postgres',
	join('', map { "INSERT INTO t (k, pad) VALUES (" . (($_ * 409) % 50000) . ", 'one');\n" } 1 .. $ntx));
my $lsn1 = $primary->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn()');
my $st = offload_stats($primary);
note "one-row transactions: $st->{offloads} offloaded, $st->{fallbacks} fell back";
ok($st->{offloads} >= $ntx / 2,
	"most of the $ntx one-row inserts were offloaded ($st->{offloads}, $st->{fallbacks} fell back)");
my $recs = $primary->safe_psql('postgres',
	"SELECT count(*), count(*) FILTER (WHERE description ~ ': [1-9][0-9]* nodes\$') "
	  . "FROM pg_get_wal_records_info('$lsn0', '$lsn1') "
	  . "WHERE resource_manager = 'dmindex' AND record_type = 'NODES_WRITTEN'");
is($recs, "$ntx|$ntx",
	"each of the $ntx transactions logged the nodes it wrote, offloaded or not, before its commit");
$primary->wait_for_catchup($s1, 'replay');
my $range = "SELECT count(*), coalesce(sum(id), 0) FROM t WHERE k BETWEEN 0 AND 99999";
my ($i, $s) = both($s1, $range);
is($i, $s, "standby: index = seqscan after the offloaded inserts ($s)");

# ---- load --------------------------------------------------------------------------------

sub compare_once
{
	my ($node) = @_;
	my $p = int(rand(100000));
	my $a = int(rand(99000));
	my $b = $a + int(rand(1000));
	my @q = (
		"SELECT 'point', count(*), coalesce(sum(id), 0) FROM t WHERE k = $p",
		"SELECT 'range', count(*), coalesce(sum(id), 0) FROM t WHERE k BETWEEN $a AND $b",
		"SELECT 'asc', string_agg(k::text, ',') FROM (SELECT k FROM t WHERE k >= $a ORDER BY k LIMIT 100) s",
		"SELECT 'desc', string_agg(k::text, ',') FROM (SELECT k FROM t WHERE k <= $b ORDER BY k DESC LIMIT 100) s",
	);
	my $script = "BEGIN ISOLATION LEVEL REPEATABLE READ;\n"
	  . "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off;\n"
	  . join(";\n", @q) . ";\n"
	  . "SET LOCAL enable_indexscan = off; SET LOCAL enable_seqscan = on;\n"
	  . join(";\n", @q) . ";\nCOMMIT;\n";
	my ($ret, $out, $err) = $node->psql('postgres', $script);
	return (0, $err) if $ret != 0;
	my @l = split /\n/, $out;
	return (0, "expected 8 result lines, got: $out") if @l != 8;
	for my $k (0 .. 3)
	{
		return (0, "index: $l[$k] vs seqscan: $l[4 + $k]") if $l[$k] ne $l[ 4 + $k ];
	}
	return (1, '');
}

$s1->safe_psql('postgres', 'SELECT dmindex_cache_stats_reset(), dmindex_offload_stats_reset()');
$primary->safe_psql('postgres', 'SELECT dmindex_offload_stats_reset()');
my $load = start_write_load($primary, duration => $duration, lo => 0, hi => 99999, clients => 2, ins => 10, upd => 2, del => 5);
my ($bench, $vac) = ($load->{bench}, $load->{vac});
my ($checks, $pchecks, @problems) = (0, 0);
while ($bench->pumpable || $vac->pumpable)
{
	my ($ok, $why) = compare_once($s1);
	$checks++;
	push @problems, "standby: $why" unless $ok;
	($ok, $why) = compare_once($primary);
	$pchecks++;
	push @problems, "primary: $why" unless $ok;
	$bench->pump_nb if $bench->pumpable;
	$vac->pump_nb if $vac->pumpable;
	last if @problems > 5;
}
$bench->finish;
$vac->finish;
note "pgbench: ${$load->{out}} ${$load->{err}}";
like(${$load->{out}}, qr/number of transactions actually processed: [1-9]/, 'pgbench wrote on the primary');
ok($checks >= 5 && $pchecks >= 5, "$checks comparisons on the standby, $pchecks on the primary");
is(join("\n", @problems), '', 'under load: every index answer = the seqscan, on the standby and on the primary');

# ---- after -------------------------------------------------------------------------------

$primary->wait_for_catchup($s1, 'replay');
($i, $s) = both($s1, $range);
is($i, $s, "after the load: standby index = its seqscan ($s)");
is(sql($primary, 'postgres', "$idx_only $range"), $s, 'and = the primary\'s index');
($i, $s) = both($s1, "SELECT count(*), md5(string_agg(k::text, ',')) FROM (SELECT k FROM t WHERE k >= 20000 ORDER BY k LIMIT 3000) x");
is($i, $s, 'ORDER BY through the primary\'s offloaded range on the standby = seqscan');
($i, $s) = both($primary, "SELECT count(*), md5(string_agg(k::text, ',')) FROM (SELECT k FROM t ORDER BY k DESC) x");
is($i, $s, 'the whole index backward on the primary = seqscan');
$st = offload_stats($primary);
note "primary during the load: $st->{offloads} offloads, $st->{fallbacks} fallbacks, "
  . "$st->{invalidated} cached nodes invalidated";
ok($st->{mode} eq 'always' && $st->{offloads} > 0 && $st->{invalidated} > 0,
	"the primary offloaded ($st->{offloads}) and dropped the nodes the executor wrote from its cache ($st->{invalidated})");
is($st->{lost}, '0', 'no offloaded write of unknown outcome');
my $sst = offload_stats($s1);
is("$sst->{mode}|$sst->{offloads}", 'always|0', 'the standby (dmindex.offload = always too) offloaded nothing');
my $hits = $s1->safe_psql('postgres', 'SELECT coalesce(hits_by_level[1], 0) FROM dmindex_cache_stats()');
ok($hits > 0, "the standby's cache served leaves during the load ($hits leaf hits)");
like(dmindex_check($s1, 'postgres', 't_k_dm', 1), qr/^\d+\|\d+\|t$/, 'dmindex_check(idx, true) on the standby');
like(dmindex_check($primary, 'postgres', 't_k_dm', 1), qr/^\d+\|\d+\|t$/, 'dmindex_check(idx, true) on the primary');

$s1->stop;
$primary->stop;
is(stop_memnode($mn), 0, 'memnode shuts down cleanly');
done_testing();
