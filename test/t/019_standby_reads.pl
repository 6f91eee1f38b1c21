# 019_standby_reads.pl — hot standbys read their primary's remote trees
# directly (docs/design.md §7): a primary and two streaming standbys
# (physical slots, hot_standby_feedback), one of them replaying 3 s late.
#
# Why: a standby's heap lags the remote tree, which the primary changes at
# once, and a standby must still answer exactly what its own heap and
# snapshot say.  Each way that can go wrong has a phase:
#
#   copied id    a standby with the configuration pg_basebackup copied (the
#                primary's dmindex.instance_id) would take the primary's
#                ranges for its own (the reported bug): refused with 55006;
#   hot leaves   as instance 1 (no range of its own) it reads every leaf,
#                then the primary changes half the keys: its index scans
#                must equal its seqscans, and its cache must hold no leaf
#                (a standby's own leaves: 022_standby_cache.pl);
#   under load   pgbench inserts, updates keys and deletes on the primary,
#                with VACUUM every second, while both standbys run point,
#                range, ORDER BY (both directions) and bitmap queries, each
#                compared with a seqscan in the same REPEATABLE READ
#                transaction (one snapshot); EXPLAIN shows the dmindex path;
#                with feedback no query may fail;
#   ahead        rows in new heap pages on the primary that the delayed
#                standby has not replayed: its index scans skip their
#                entries (no "could not read block"), answers = its heap;
#   old snapshot without feedback, a standby transaction holds a snapshot
#                while the primary deletes rows and VACUUMs them out of the
#                index: the transaction's index scans either answer exactly
#                what its seqscan answered or fail with 40001, never a
#                missing row; afterwards fresh queries answer right;
#   check        dmindex_check(idx, true), dmindex_stats() and
#                dmindex_partitions() on the standbys; dmindex_gc() refused.
#
# DM_STANDBY_SECONDS sets the length of the load phase (default 15).
# DMINDEX_TAP_KEY=text or multi runs it all against a VAR index
# (DmindexTest's key shapes): every condition on k is written with key_sql.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;
use DmindexWorkload;

my $duration = $ENV{DM_STANDBY_SECONDS} // 15;

# its cache admits every leaf read: a standby that kept leaves would keep them all
my ($mn, $primary) = new_standby_primary(rows => 20000, slots => [ 's1', 's2' ]);

# standby 1: what pg_basebackup gives (the primary's instance id 0), no delay
my $s1 = new_dmindex_standby($primary, 'standby1', slot => 's1');

# standby 2: its own instance id, replaying 3 s behind
my $s2 = new_dmindex_standby($primary, 'standby2', slot => 's2',
	conf => "recovery_min_apply_delay = '3s'\ndmindex.instance_id = 2\n");

# count and sum of ids of the rows with k >= 0, through the index and by seqscan
sub both_counts
{
	my ($node) = @_;
	my $q = key_sql("SELECT count(*), coalesce(sum(id), 0) FROM t WHERE [[k >= 0]]");
	my $i = sql($node, 'postgres', "$idx_only $q");
	my $s = sql($node, 'postgres', "$seq_only $q");
	return ($i, $s);
}

sub leaf_frames
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(frames_used_by_level[1], 0) FROM dmindex_cache_stats()");
}

# ---- a standby with the copied instance id (the reported bug) -------------------

# It would take the primary's ranges for its own: refused (src/pg/dmclaim.c)
my ($cstate, $cerr) = query_sqlstate($s1, 'postgres', key_sql("$idx_only SELECT count(*) FROM t WHERE [[k >= 0]]"));
is($cstate, '55006', 'a standby with the copied instance id 0 is refused (the primary holds it)');
like($cerr, qr/dmindex instance 0 is already in use by another server/, '... with a clear message');

# from here on, standby 1 is instance 1
$s1->append_conf('postgresql.conf', "dmindex.instance_id = 1\n");
$s1->restart;

# ---- hot leaves: the standby owns no range, so it keeps no leaf ------------------

my ($i, $s) = both_counts($s1);
is($i, $s, "standby: index = seqscan before any change ($i)");
both_counts($s1) for 1 .. 3;
is(leaf_frames($s1), 0, 'a standby keeps no leaf in its cache');
$primary->safe_psql('postgres',
	"UPDATE t SET k = k + 200000 WHERE id % 2 = 0; "
	  . "INSERT INTO t (k, pad) SELECT g, 'new' FROM generate_series(1, 3000) g;");
$primary->wait_for_catchup($s1, 'replay');
($i, $s) = both_counts($s1);
is($i, $s, "after the primary changed half the keys: standby index = its seqscan ($s)");
is(leaf_frames($s1), 0, 'and still no leaf cached');


# ---- EXPLAIN: each kind of query takes the dmindex path it is meant to ----------

my %plans = (
	'index'          => [ $idx_only, "SELECT count(*) FROM t WHERE [[k BETWEEN 10 AND 500]]", qr/Index Scan using t_k_dm/ ],
	'index forward'  => [ $idx_only, "SELECT k FROM t WHERE [[k >= 10]] [[ORDER BY k]] LIMIT 30", qr/Index Scan using t_k_dm/ ],
	'index backward' => [ $idx_only, "SELECT k FROM t WHERE [[k <= 900]] [[ORDER BY k DESC]] LIMIT 30", qr/Index Scan Backward using t_k_dm/ ],
	'bitmap' => [
		"SET enable_seqscan = off; SET enable_indexscan = off; SET enable_indexonlyscan = off;",
		"SELECT count(*) FROM t WHERE [[k BETWEEN 10 AND 500]]", qr/Bitmap Index Scan on t_k_dm/ ],
	'no index-only scan' => [ "SET enable_seqscan = off; SET enable_bitmapscan = off;",
		"SELECT k FROM t WHERE [[k BETWEEN 10 AND 500]]", qr/Index Scan using t_k_dm/ ],
	'seqscan' => [ $seq_only, "SELECT count(*) FROM t WHERE [[k BETWEEN 10 AND 500]]", qr/Seq Scan on t/ ],);
for my $node ($s1, $s2)
{
	for my $p (sort keys %plans)
	{
		my ($set, $q, $re) = @{ $plans{$p} };
		like(sql($node, 'postgres', key_sql("$set EXPLAIN (COSTS OFF) $q")),
			$re, $node->name . ": EXPLAIN uses the $p plan");
	}
}

# ---- under load: every kind of query = seqscan, in one snapshot ---------------------

# One REPEATABLE READ transaction: point, range, ascending, descending through
# the index, the range through a bitmap, then all of them by seqscan.
sub compare_once
{
	my ($node) = @_;
	my $p = int(rand(100000));
	my $a = int(rand(100000));
	my $b = $a + int(rand(3000));
	return compare_in_snapshot($node, $p, $a, $b, bitmap => 1);
}

snapshot_plans_use_index($_, $_->name) for ($s1, $s2);
my $load = start_write_load($primary, duration => $duration, lo => 1, hi => 100000, clients => 3, ins => 20, upd => 3, del => 20);
my ($checks, $problems) = check_during_load($load, [ $s1, $s2 ], \&compare_once);
like(${$load->{out}}, qr/number of transactions actually processed: [1-9]/, 'pgbench wrote on the primary');
ok($checks->{standby1} >= 5 && $checks->{standby2} >= 5,
	"checks ran on both standbys ($checks->{standby1} and $checks->{standby2})");
is(join("\n", @$problems), '',
	'under load, with feedback: every index and bitmap answer on both standbys = their seqscan, no error');

# ---- entries ahead of the delayed standby's heap -------------------------------------

$primary->wait_for_catchup($s2, 'replay');
my $before = $s2->safe_psql('postgres', key_sql("$seq_only SELECT count(*) FROM t WHERE [[k BETWEEN 300000 AND 400000]]"));
is($before, 0, 'no row in the new key range yet');
# new rows in new heap pages: remote entries at once, heap pages 3 s later on standby 2
$primary->safe_psql('postgres',
	"INSERT INTO t (k, pad) SELECT 300000 + g, repeat('x', 200) FROM generate_series(1, 4000) g");
my $q_ahead = key_sql("SELECT count(*), coalesce(sum(id), 0) FROM t WHERE [[k BETWEEN 300000 AND 400000]]");
# index, bitmap and seqscan in one snapshot, taken before the 3 s of delay are over
my ($ret, $out, $err) = $s2->psql('postgres',
	"BEGIN ISOLATION LEVEL REPEATABLE READ;\n"
	  . "$seq_only $q_ahead;\n"
	  . "SET enable_seqscan = off; SET enable_indexscan = on; $q_ahead;\n"
	  . "SET enable_indexscan = off; SET enable_bitmapscan = on; $q_ahead;\n"
	  . "COMMIT;");
my ($ahead_seq, $ahead_idx, $ahead_bm) = split /\n/, $out;
$ahead_seq //= "FAILED: $err";
is($ahead_seq, "$before|0", "delayed standby: the new rows are not replayed yet ($before rows)");
is($ahead_idx, $ahead_seq, "delayed standby, entries ahead of its heap: index scan = its heap $err");
is($ahead_bm, $ahead_seq, 'and the bitmap scan too');
$primary->wait_for_catchup($s2, 'replay');
is(sql($s2, 'postgres', "$idx_only $q_ahead"), sql($s2, 'postgres', "$seq_only $q_ahead"),
	'once replayed, the rows are found through the index');
like(sql($s2, 'postgres', "$idx_only $q_ahead"), qr/^4000\|/, 'all 4000 of them');

# ---- a tree the primary freed before the delayed standby replayed the REINDEX ----------

# a session that has the tree open already, and one that opens it afterwards
my $held = $s2->background_psql('postgres', on_error_stop => 0);
$held->query_safe(key_sql("$idx_only SELECT count(*) FROM t WHERE [[k BETWEEN 10 AND 20]]"));
my $q_re = key_sql("SELECT count(*), coalesce(sum(id), 0) FROM t WHERE [[k BETWEEN 1000 AND 9000]]");
# replay held still on standby 2 until both queries ran; REINDEX leaves the
# old tree to the collector: run it at once
$s2->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$primary->safe_psql('postgres', 'REINDEX INDEX t_k_dm');
is($primary->safe_psql('postgres', 'SELECT dmindex_gc()'), '1', 'the primary frees the old tree at once');
for my $who ('open handle', 'new session')
{
	my ($got, $err);
	if ($who eq 'open handle')
	{
		$got = $held->query("\\set VERBOSITY verbose\n$idx_only $q_re");
		$err = $held->{stderr};
	}
	else
	{
		(undef, $err, undef, $got) = query_sqlstate($s2, 'postgres', "$idx_only $q_re");
	}
	if ($err =~ /ERROR/)
	{
		like($err, qr/40001: the remote tree of index "t_k_dm" no longer exists/,
			"REINDEX not replayed yet, $who: 40001, the tree no longer exists");
	}
	else
	{
		is($got, sql($s2, 'postgres', "$seq_only $q_re"), "REINDEX not replayed yet, $who: a right answer");
	}
	note "freed tree, $who: $got $err";
	# a new session finds no tree of that name; an open handle reads the catalog entry after every leaf
	like($err, qr/40001/, "REINDEX not replayed yet, $who: 40001 (freed memory is never used)");
}
$held->quit;
$s2->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
$primary->wait_for_catchup($s2, 'replay');
is(sql($s2, 'postgres', "$idx_only $q_re"), sql($s2, 'postgres', "$seq_only $q_re"),
	'once the REINDEX is replayed, the new tree answers right');

# ---- dmindex_check and the functions on the standbys ---------------------------------

$primary->wait_for_catchup($s1, 'replay');
for my $node ($s1, $s2)
{
	my $n = $node->name;
	like(dmindex_check($node, 'postgres', 't_k_dm', 1), qr/^\d+\|\d+\|t$/, "$n: dmindex_check(idx, true) passes");
	like(dmindex_check($node, 'postgres', 't_k_dm', 0), qr/^\d+\|\|t$/, "$n: dmindex_check(idx, false) passes");
	like(sql($node, 'postgres', "SELECT height > 0, leaf_nodes > 0 FROM dmindex_stats('t_k_dm')"),
		qr/^t\|t$/, "$n: dmindex_stats() works");
	like(sql($node, 'postgres', "SELECT count(*) FROM dmindex_partitions('t_k_dm')"),
		qr/^1$/, "$n: dmindex_partitions() works");
	my ($state) = query_sqlstate($node, 'postgres', 'SELECT dmindex_gc()');
	is($state, '55000', "$n: dmindex_gc() is refused during recovery");
}
is(leaf_frames($s1) . '|' . leaf_frames($s2), '0|0', 'neither standby cached a leaf');

# ---- an old snapshot without feedback: 40001 or the right answer, never a wrong one --

for my $node ($s1, $s2)
{
	$node->append_conf('postgresql.conf',
		"hot_standby_feedback = off\nmax_standby_streaming_delay = -1\n");
	$node->reload;
}
$primary->poll_query_until('postgres',
	"SELECT bool_and(xmin IS NULL) FROM pg_replication_slots WHERE slot_name IN ('s1', 's2')")
  or die 'the slots keep an xmin';
$primary->wait_for_catchup($s1, 'replay');

my $q_old = key_sql("SELECT count(*), coalesce(sum(id), 0) FROM t WHERE [[k BETWEEN 0 AND 60000]]");
my %sess;
my %ref;
for my $kind ('index', 'bitmap')
{
	$sess{$kind} = $s1->background_psql('postgres', on_error_stop => 0);
	$sess{$kind}->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
	$ref{$kind} = $sess{$kind}->query_safe("$seq_only $q_old");
}
$primary->safe_psql('postgres', key_sql("DELETE FROM t WHERE [[k BETWEEN 0 AND 60000]] AND id % 3 = 0"));
$primary->safe_psql('postgres', "VACUUM t");
my $removed = $primary->safe_psql('postgres', key_sql("SELECT count(*) FROM t WHERE [[k BETWEEN 0 AND 60000]] AND id % 3 = 0"));
is($removed, 0, 'the primary deleted and vacuumed rows the old standby snapshot still sees');

my %outcome;
for my $kind ('index', 'bitmap')
{
	my $set = $kind eq 'index' ? "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off; SET enable_indexscan = on;"
	  : "SET enable_seqscan = off; SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = on;";
	my $explain = $sess{$kind}->query("$set EXPLAIN (COSTS OFF) $q_old");
	like($explain, $kind eq 'index' ? qr/Index Scan using t_k_dm/ : qr/Bitmap Index Scan on t_k_dm/,
		"old snapshot: the $kind query uses the index");
	my $got = $sess{$kind}->query("\\set VERBOSITY verbose\n$q_old");
	my $err = $sess{$kind}->{stderr};
	if ($err =~ /ERROR:\s+40001: canceling statement due to conflict with recovery/)
	{
		$outcome{$kind} = '40001';
		like($err, qr/t_k_dm/, "$kind: the 40001 names the index");
		like($err, qr/hot_standby_feedback/, "$kind: and hints at hot_standby_feedback");
	}
	else
	{
		$outcome{$kind} = 'answer';
		is($got, $ref{$kind}, "$kind: the old snapshot's answer through the index = its seqscan ($ref{$kind})");
	}
	note "old snapshot, $kind: $outcome{$kind} ($got) $err";
	$sess{$kind}->query('ROLLBACK');
	$sess{$kind}->quit;
}
# the horizon makes the outcome certain here: the VACUUM raised it above the snapshot
is("$outcome{index}|$outcome{bitmap}", '40001|40001', 'both old-snapshot scans were cancelled with 40001');

$primary->safe_psql('postgres', "INSERT INTO t (k, pad) VALUES (-1, 'advance')");
$primary->wait_for_catchup($s1, 'replay');
$primary->wait_for_catchup($s2, 'replay');
for my $node ($s1, $s2)
{
	is(sql($node, 'postgres', "$idx_only $q_old"), sql($node, 'postgres', "$seq_only $q_old"),
		$node->name . ': after replay, fresh snapshots answer right through the index');
	like(dmindex_check($node, 'postgres', 't_k_dm', 1), qr/^\d+\|\d+\|t$/,
		$node->name . ': dmindex_check(idx, true) passes');
}
like(dmindex_check($primary, 'postgres', 't_k_dm', 1), qr/^\d+\|\d+\|t$/, 'primary: dmindex_check(idx, true) passes');

$s1->stop;
$s2->stop;
$primary->stop;
done_testing();
