# 022_standby_cache.pl — a hot standby caches the leaves of its own key
# range and stays exact while the primary changes them (docs/design.md §7,
# src/pg/dmwal.c).
#
# Why: a standby's cache learns of the primary's writes only through WAL:
# the primary logs the nodes each flush and each VACUUM batch wrote, before
# the commit record (or before VACUUM frees the tids), and the standby's
# redo drops them, with a generation check so that a copy read before the
# redo is never admitted after it.  A missed invalidation shows up as a
# standby index answer that differs from its seqscan, or as a cached node
# that dmindex_check finds newer than or different from what it may be.
#
#   warm     the standby (instance 1, owning [50000, max]) reads its range
#            until its leaves are cached; hits on leaves are counted;
#   changed  the primary updates, deletes and inserts keys of that range,
#            VACUUMs: the standby's index answers = its seqscan;
#   load     pgbench changes the range on the primary while the standby
#            queries it (point, range, ORDER BY, each compared with a
#            seqscan in one snapshot); VACUUM every second;
#   after    dmindex_check(idx, true) on the standby (its cached leaves are
#            all its own and never newer than remote memory); the cache hit
#            ratio on the standby > 0, leaves among the hits, and
#            invalidations counted; leaves of the other range never cached.
#
# DM_STANDBY_CACHE_SECONDS sets the length of the load phase (default 10).

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

my $duration = $ENV{DM_STANDBY_CACHE_SECONDS} // 10;

my ($mn, $primary) = new_standby_primary(
	rows => 30000,
	slots => [ 's1' ],
	max_connections => 30,
	conf => "dmindex.partition_refresh_interval = 100\n",
	sql => "SELECT dmindex_set_partitions('t_k_dm', ARRAY[50000], ARRAY[0, 1]);\n");
my $s1 = new_dmindex_standby($primary, 'standby1', slot => 's1', conf => "dmindex.instance_id = 1\n");

sub stats
{
	my ($node) = @_;
	my $r = $node->safe_psql('postgres',
		"SELECT coalesce(frames_used_by_level[1], 0), coalesce(hits_by_level[1], 0), hits, misses, "
		  . "coalesce(hit_ratio, 0), invalidations FROM dmindex_cache_stats()");
	my @v = split /\|/, $r;
	return { leaf_frames => $v[0], leaf_hits => $v[1], hits => $v[2], misses => $v[3],
		ratio => $v[4], invalidations => $v[5] };
}

sub both
{
	my ($node, $q) = @_;
	return (sql($node, 'postgres', "$idx_only $q"), sql($node, 'postgres', "$seq_only $q"));
}

# ---- warm ------------------------------------------------------------------------------

is(sql($s1, 'postgres', "SELECT instance, lo_value FROM dmindex_partitions('t_k_dm') WHERE local"),
	'1|50000', 'the standby is instance 1 and owns [50000, max]');
my $range = "SELECT count(*), coalesce(sum(id), 0) FROM t WHERE k BETWEEN 50000 AND 99999";
my ($i, $s) = both($s1, $range);
is($i, $s, "standby: its range through the index = seqscan ($s)");
$s1->safe_psql('postgres', 'SELECT dmindex_cache_stats_reset()');
# point lookups over the range, twice: the second round hits cached leaves
my $points = "SELECT sum((SELECT count(*) FROM t WHERE k = 50000 + (g * 7) % 50000)) FROM generate_series(1, 3000) g";
sql($s1, 'postgres', "$idx_only $points") for 1 .. 2;
my $st = stats($s1);
ok($st->{leaf_frames} > 20, "the standby caches leaves of its range ($st->{leaf_frames} leaf frames)");
ok($st->{leaf_hits} > 0 && $st->{ratio} > 0,
	"and reads them from the cache (leaf hits $st->{leaf_hits}, hit ratio $st->{ratio})");
like(dmindex_check($s1, 'postgres', 't_k_dm', 1), qr/^\d+\|\d+\|t$/,
	'dmindex_check on the standby: cached leaves are its own, none newer than remote memory');

# the other range: read, but its leaves are not kept
sql($s1, 'postgres', "$idx_only SELECT sum((SELECT count(*) FROM t WHERE k = (g * 7) % 50000)) FROM generate_series(1, 2000) g");
like(dmindex_check($s1, 'postgres', 't_k_dm', 0), qr/^\d+\|\|t$/,
	'after reading the primary\'s range too, still only its own leaves are cached');

# ---- changed on the primary -----------------------------------------------------------

my $inv0 = $st->{invalidations};
$primary->safe_psql('postgres', q{
	UPDATE t SET k = k + 1 WHERE k BETWEEN 50000 AND 99998 AND id % 2 = 0;
	DELETE FROM t WHERE k BETWEEN 60000 AND 70000 AND id % 3 = 0;
	INSERT INTO t (k, pad) SELECT 50000 + (g * 13) % 50000, 'new' FROM generate_series(1, 3000) g;
	VACUUM t;
});
$primary->wait_for_catchup($s1, 'replay');
($i, $s) = both($s1, $range);
is($i, $s, "after updates, deletes, inserts and VACUUM on the primary: standby index = its seqscan ($s)");
my $pts = "SELECT string_agg(c::text, ',') FROM (SELECT (SELECT count(*) FROM t WHERE k = 50000 + g * 37) c FROM generate_series(0, 1300) g) x";
($i, $s) = both($s1, $pts);
is($i, $s, 'point lookups over the range = seqscan');
($i, $s) = both($s1, "SELECT string_agg(k::text, ',') FROM (SELECT k FROM t WHERE k >= 64000 ORDER BY k LIMIT 200) x");
is($i, $s, 'ORDER BY through the changed leaves = seqscan');
$st = stats($s1);
ok($st->{invalidations} > $inv0, "the standby's redo invalidated cached nodes ($inv0 -> $st->{invalidations})");

# ---- under load ---------------------------------------------------------------------------

sub compare_once
{
	my ($node) = @_;
	my $p = 50000 + int(rand(50000));
	my $a = 50000 + int(rand(49000));
	my $b = $a + int(rand(1000));
	return compare_in_snapshot($node, $p, $a, $b);
}

$s1->safe_psql('postgres', 'SELECT dmindex_cache_stats_reset()');
my $load = start_write_load($primary, duration => $duration, lo => 50000, hi => 99999, clients => 2, ins => 10, upd => 2, del => 5);
my ($checks, $problems) = check_during_load($load, [$s1], \&compare_once);
like(${$load->{out}}, qr/number of transactions actually processed: [1-9]/, 'pgbench changed the standby\'s range on the primary');
ok($checks->{standby1} >= 5, "$checks->{standby1} comparisons on the standby");
is(join("\n", @$problems), '', 'under load: every standby index answer = its seqscan');

# ---- after -------------------------------------------------------------------------------

$primary->wait_for_catchup($s1, 'replay');
($i, $s) = both($s1, $range);
is($i, $s, "after the load: standby index = its seqscan ($s)");
is(sql($primary, 'postgres', "$idx_only $range"), $s, 'and = the primary\'s index');
$st = stats($s1);
note "standby cache during the load: hits $st->{hits}, misses $st->{misses}, ratio $st->{ratio}, "
  . "leaf hits $st->{leaf_hits}, leaf frames $st->{leaf_frames}, invalidations $st->{invalidations}";
ok($st->{ratio} > 0 && $st->{leaf_hits} > 0,
	"the standby's cache served reads during the load (hit ratio $st->{ratio}, leaf hits $st->{leaf_hits})");
ok($st->{invalidations} > 0, "with invalidations from the primary's WAL ($st->{invalidations})");
like(dmindex_check($s1, 'postgres', 't_k_dm', 1), qr/^\d+\|\d+\|t$/, 'dmindex_check(idx, true) on the standby');
like(dmindex_check($primary, 'postgres', 't_k_dm', 1), qr/^\d+\|\d+\|t$/, 'dmindex_check(idx, true) on the primary');

# ---- reclaimed leaves ----------------------------------------------------------------------
# VACUUM takes emptied leaves out of the tree (parent loses the downlink,
# the leaf is marked dead, its left neighbour takes its range): the standby
# must drop its copies of all three, or its cached parent leads to a dead
# leaf (descents that never converge) or its cached empty leaf hides keys
# the primary later inserts into the widened neighbour.

my $band = "SELECT count(*), coalesce(sum(id), 0) FROM t WHERE k BETWEEN 78000 AND 92000";
# warm the standby's cache on the band (its leaves and the inner nodes above them)
sql($s1, 'postgres', "$idx_only SELECT sum((SELECT count(*) FROM t WHERE k = 78000 + g)) FROM generate_series(0, 14000, 3) g")
  for 1 .. 2;
$primary->safe_psql('postgres', 'DELETE FROM t WHERE k BETWEEN 80000 AND 90000');
# the standby's feedback (hot_standby_feedback) holds the rows until it reports a newer xmin
my $reclaimed = 0;
for (1 .. 30)
{
	$primary->wait_for_catchup($s1, 'replay');
	my ($vret, $vout, $verr) = $primary->psql('postgres', 'VACUUM (VERBOSE) t');
	$reclaimed += $1 while $verr =~ /index "t_k_dm": pages: \d+ in total, (\d+) newly deleted/g;
	last if $reclaimed > 0;
	sleep 1;
}
cmp_ok($reclaimed, '>', 0, "the primary's VACUUM reclaimed emptied leaves ($reclaimed)");
$primary->wait_for_catchup($s1, 'replay');
($i, $s) = both($s1, $band);
is($i, $s, "after the reclaim: standby index over the band = its seqscan ($s)");
$primary->safe_psql('postgres',
	"INSERT INTO t (k, pad) SELECT 80000 + (g * 31) % 10000, 'back' FROM generate_series(1, 2000) g");
$primary->wait_for_catchup($s1, 'replay');
($i, $s) = both($s1, $band);
is($i, $s, "keys inserted again where leaves were reclaimed: standby index = its seqscan ($s)");
($i, $s) = both($s1, "SELECT string_agg(c::text, ',') FROM (SELECT (SELECT count(*) FROM t WHERE k = 80000 + g * 17) c FROM generate_series(0, 588) g) x");
is($i, $s, 'point lookups there = seqscan');
like(dmindex_check($s1, 'postgres', 't_k_dm', 1), qr/^\d+\|\d+\|t$/, 'dmindex_check(idx, true) on the standby after the reclaim');

# ---- a cached leaf carries its removal horizon -----------------------------------------------
# Without feedback the primary's VACUUM may remove entries an old standby
# snapshot still needs; the standby learns so from the removal horizon it
# reads with every node, and cancels the query (40001).  A leaf admitted to
# the cache by one session after such a removal (replay held back, so the
# invalidation has not come yet) must carry that horizon to the sessions
# that read it from the cache: else an old snapshot silently misses rows.

$s1->append_conf('postgresql.conf', "hot_standby_feedback = off\nmax_standby_streaming_delay = -1\n");
$s1->restart;					# (an empty cache: the leaf below is admitted after the removal)
$primary->poll_query_until('postgres', "SELECT xmin IS NULL FROM pg_replication_slots WHERE slot_name = 's1'")
  or die 'the slot keeps an xmin';
$primary->wait_for_catchup($s1, 'replay');
my $key = $primary->safe_psql('postgres',
	'SELECT k FROM t WHERE k BETWEEN 60000 AND 70000 GROUP BY k HAVING count(*) >= 1 ORDER BY k LIMIT 1');
my $q_key = "SELECT count(*), coalesce(sum(id), 0) FROM t WHERE k = $key";
my $old = $s1->background_psql('postgres', on_error_stop => 0);
$old->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
my $ref = $old->query_safe("$seq_only $q_key");
ok($ref !~ /^0\|/, "an old standby snapshot sees the rows of key $key ($ref)");
# the old session opens the index now (its handle learns the horizon of this moment)
$old->query_safe("$idx_only SELECT count(*) FROM t WHERE k > 99000");
$s1->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$primary->safe_psql('postgres', "DELETE FROM t WHERE k = $key");
$primary->safe_psql('postgres', 'VACUUM t');
# another session reads the leaf remotely after the removal and admits it (it may be cancelled itself)
query_sqlstate($s1, 'postgres', "$idx_only $q_key");
my $got = $old->query("\\set VERBOSITY verbose\n$idx_only $q_key");
my $err = $old->{stderr};
if ($err =~ /ERROR:\s+40001: canceling statement due to conflict with recovery/)
{
	pass('the old snapshot reading the cached leaf is cancelled with 40001');
}
else
{
	is($got, $ref, 'the old snapshot reading the cached leaf gets its seqscan\'s answer');
}
note "old snapshot through the cache: ($got) $err";
$old->query('ROLLBACK');
$old->quit;
$s1->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
$primary->wait_for_catchup($s1, 'replay');
($i, $s) = both($s1, $q_key);
is($i, $s, "after replay: key $key through the index = seqscan ($s)");

$s1->stop;
$primary->stop;
is(stop_memnode($mn), 0, 'memnode shuts down cleanly');
done_testing();
