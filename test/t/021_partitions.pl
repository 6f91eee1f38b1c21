# 021_partitions.pl — key ranges per instance from SQL (docs/design.md §7,
# DEX §4) on a primary and two hot standbys, and instance claims.
#
# Why: the partition map decides which server caches which leaves and
# where applications send the reads of a key, while only the primary
# writes, every key.  A new map must reach running servers without a
# restart and must never cost correctness, also while the primary writes:
#
#   map          a 3-way map set from SQL on the primary under a pgbench
#                write load; every server sees the new epoch and marks its
#                own range; the same under a second re-partitioning;
#   queries      meanwhile point, range and ORDER BY queries on all three
#                servers, each compared with a seqscan in one snapshot;
#   nothing lost after the load: heap = index on every server, and
#                dmindex_check(idx, true) on the primary;
#   owner        dmindex_owner and dmindex_partitions agree on all servers;
#   refused      set_partitions on a standby (25006), by a non-owner;
#   claims       a standby started with an instance id another live server
#                holds is refused with 55006 (message, detail, hint), works
#                after its id is fixed and it restarts; a server stopped
#                without a clean shutdown leaves its claim until the lease
#                runs out, then another server takes it over; a clean
#                shutdown gives the claim up at once.
#
# DM_PARTITION_SECONDS sets the length of the load phase (default 16).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use DmindexTest;
use DmindexWorkload;

# key ranges per instance (dmindex_set_partitions) exist for FIXED8 indexes
# only: with DMINDEX_TAP_KEY=text or multi there is nothing to run
key_shape_needs_int8('key ranges per instance are not supported for VAR indexes');

my $duration = $ENV{DM_PARTITION_SECONDS} // 16;

my ($mn, $primary) = new_standby_primary(
	rows => 30000,
	slots => [ 's1', 's2', 's3' ],
	conf => "dmindex.partition_refresh_interval = 100\n");

# a lease of 10 s on standby 1, so that its claim outlives its crash long enough to be seen
my $s1 = new_dmindex_standby($primary, 'standby1', slot => 's1',
	conf => "dmindex.instance_id = 1\ndmindex.instance_lease = 10\n");
my $s2 = new_dmindex_standby($primary, 'standby2', slot => 's2', conf => "dmindex.instance_id = 2\n");
my @all = ($primary, $s1, $s2);

for my $node (@all)
{
	is(sql($node, 'postgres', "SELECT instance, epoch, local FROM dmindex_partitions('t_k_dm')"),
		'0|0|' . ($node == $primary ? 't' : 'f'),
		$node->name . ': the default map (all keys instance 0, epoch 0)');
}

# One REPEATABLE READ transaction: point, range, ascending and descending
# through the index, then the same by seqscan.
sub compare_once
{
	my ($node) = @_;
	my $p = int(rand(100000));
	my $a = int(rand(100000));
	my $b = $a + int(rand(5000));
	return compare_in_snapshot($node, $p, $a, $b);
}

# sessions open before any map change: they must pick the new maps up by themselves
my %sess;
for my $node (@all)
{
	$sess{ $node->name } = $node->background_psql('postgres');
	is($sess{ $node->name }->query_safe("SELECT dmindex_owner('t_k_dm', 40000)"), '0',
		$node->name . ': a session opened before any change routes key 40000 to instance 0');
}

# ---- maps set under a write load ---------------------------------------------------

my $load = start_write_load($primary, duration => $duration, lo => 1, hi => 100000, clients => 3, ins => 20, upd => 3, del => 20);

# the maps: [min, 33334) 0, [33334, 66667) 1, [66667, max] 2; then [min, 50000) 2, [50000, max] 1
my @maps = (
	[ "ARRAY[33334, 66667]", "ARRAY[0, 1, 2]", '1', { 0 => '1', 1 => '2', 2 => '3' } ],
	[ "ARRAY[50000]",        "ARRAY[2, 1]",    '2', { 0 => '',  1 => '2', 2 => '1' } ],);
my $t0 = time;
my $next_map = 0;
my %seen_owner;
my ($checks, $problems) = check_during_load(
	$load, \@all, \&compare_once,
	round => sub {
		my $elapsed = time - $t0;
		if ($next_map < @maps && $elapsed > 1 + $next_map * $duration / 2)
		{
			my ($b, $i, $epoch) = @{ $maps[$next_map] };
			is(sql($primary, 'postgres', "SELECT dmindex_set_partitions('t_k_dm', $b, $i)"),
				$epoch, "map $epoch set from SQL under load (epoch $epoch)");
			$next_map++;
		}
	},
	each => sub {
		my ($node) = @_;
		# the long-lived session's routing of key 40000, as the maps change
		my $o = $sess{ $node->name }->query_safe("SELECT dmindex_owner('t_k_dm', 40000)");
		push @{ $seen_owner{ $node->name } }, $o
		  unless @{ $seen_owner{ $node->name } // [] } && $seen_owner{ $node->name }[-1] eq $o;
	});
like(${$load->{out}}, qr/number of transactions actually processed: [1-9]/, 'pgbench wrote on the primary');
is($next_map, 2, 'both maps were set during the load');
ok((grep { $checks->{ $_->name } // 0 >= 3 } @all) == 3,
	'checks ran on every server (' . join(', ', map { $_->name . ' ' . ($checks->{ $_->name } // 0) } @all) . ')');
is(join("\n", @$problems), '',
	'under load and re-partitioning: every index answer on every server = its seqscan');
sleep 0.3;	# > dmindex.partition_refresh_interval
for my $node (@all)
{
	my $n = $node->name;
	my $now = $sess{$n}->query_safe("SELECT dmindex_owner('t_k_dm', 40000)");
	push @{ $seen_owner{$n} }, $now unless $seen_owner{$n}[-1] eq $now;
	is(join(',', @{ $seen_owner{$n} }), '0,1,2',
		"$n: the session opened before the changes followed both maps without a restart (owner of 40000)");
	$sess{$n}->quit;
}

# ---- nothing lost ----------------------------------------------------------------------

$primary->wait_for_catchup($_, 'replay') for ($s1, $s2);
my $q_all = "SELECT count(*), coalesce(sum(id), 0), coalesce(sum(k), 0) FROM t WHERE k >= 0";
my $heap = sql($primary, 'postgres', "$seq_only $q_all");
for my $node (@all)
{
	is(sql($node, 'postgres', "$idx_only $q_all"), $heap, $node->name . ": index = heap after the load ($heap)");
}
like(dmindex_check($primary, 'postgres', 't_k_dm', 1), qr/^\d+\|\d+\|t$/,
	'primary: dmindex_check(idx, true) passes after re-partitioning under load');

# ---- dmindex_partitions and dmindex_owner agree everywhere --------------------------

my @keys = (-1, 0, 1, 33333, 33334, 49999, 50000, 66666, 66667, 99999, 2000000000);
my $owner_q = "SELECT string_agg(dmindex_owner('t_k_dm', k)::text, ',' ORDER BY ord) "
  . "FROM unnest(ARRAY[" . join(',', @keys) . "]) WITH ORDINALITY AS u(k, ord)";
my $want_owner = join(',', map { $_ < 50000 ? 2 : 1 } @keys);
my $map_q = "SELECT string_agg(format('%s:%s:%s:%s', instance, coalesce(lo_value, '-'), coalesce(hi_value, '-'), epoch), ' ' ORDER BY partition) "
  . "FROM dmindex_partitions('t_k_dm')";
for my $node (@all)
{
	my $n = $node->name;
	is(sql($node, 'postgres', $owner_q), $want_owner, "$n: dmindex_owner routes by the current map");
	is(sql($node, 'postgres', "SELECT dmindex_owner('t_k_dm', NULL::int)"), '1', "$n: NULLs go to the last range");
	is(sql($node, 'postgres', $map_q), '2:-:50000:2 1:50000:-:2', "$n: dmindex_partitions shows the map");
}
is(sql($primary, 'postgres', "SELECT count(*) FILTER (WHERE local) FROM dmindex_partitions('t_k_dm')"),
	'0', 'primary (instance 0): no range of its own now');
is(sql($s1, 'postgres', "SELECT string_agg(instance::text, ',') FROM dmindex_partitions('t_k_dm') WHERE local"),
	'1', 'standby1 (instance 1): its row is marked local');
is(sql($s2, 'postgres', "SELECT string_agg(instance::text, ',') FROM dmindex_partitions('t_k_dm') WHERE local"),
	'2', 'standby2 (instance 2): its row is marked local');

# ---- refused ---------------------------------------------------------------------------

my ($state, $err) = query_sqlstate($s1, 'postgres',
	"SELECT dmindex_set_partitions('t_k_dm', ARRAY[10], ARRAY[0, 1])");
is($state, '25006', 'set_partitions on a standby: 25006');
like($err, qr/cannot change the partition map of an index during recovery/, '... with a clear message');
$primary->safe_psql('postgres', 'CREATE ROLE app LOGIN; GRANT SELECT ON t TO app;');
($state) = query_sqlstate($primary, 'postgres',
	"SET ROLE app; SELECT dmindex_set_partitions('t_k_dm', ARRAY[10], ARRAY[0, 1])");
is($state, '42501', 'set_partitions by a role that does not own the index: 42501');
is(sql($primary, 'postgres', "SET ROLE app; SELECT dmindex_owner('t_k_dm', 7)"), '2',
	'dmindex_owner for a role that may read the table');

# ---- instance claims ------------------------------------------------------------------

# standby 3 made as pg_basebackup makes it: then told to be instance 1, which standby 1 holds
my $s3 = new_dmindex_standby($primary, 'standby3', slot => 's3', feedback => 0,
	conf => "dmindex.instance_id = 1\n");
my $q_some = "$idx_only SELECT count(*) FROM t WHERE k BETWEEN 1000 AND 2000";
($state, $err) = query_sqlstate($s3, 'postgres', $q_some);
is($state, '55006', 'a second live server with instance id 1: 55006');
like($err, qr/dmindex instance 1 is already in use by another server/, '... message');
like($err, qr/DETAIL:\s+Memory node \d+ holds a claim of instance 1 by another server \(run [0-9a-f]+\) whose lease ends in \d+ s/,
	'... detail with the lease left');
like($err, qr/HINT:\s+Set a distinct "dmindex.instance_id" on each server \(a standby made by pg_basebackup copies the primary's\)/,
	'... hint');
($state) = query_sqlstate($s3, 'postgres', "SELECT * FROM dmindex_partitions('t_k_dm')");
is($state, '55006', 'dmindex_partitions is refused there too');
is(sql($s1, 'postgres', $q_some), sql($s1, 'postgres', "$seq_only SELECT count(*) FROM t WHERE k BETWEEN 1000 AND 2000"),
	'the holder, standby1, still answers');

# fixed: a distinct id after a restart
$s3->append_conf('postgresql.conf', "dmindex.instance_id = 3\n");
$s3->restart;
is(sql($s3, 'postgres', $q_some), sql($s3, 'postgres', "$seq_only SELECT count(*) FROM t WHERE k BETWEEN 1000 AND 2000"),
	'standby3 as instance 3 answers');
is(sql($s3, 'postgres', "SELECT count(*) FILTER (WHERE local) FROM dmindex_partitions('t_k_dm')"), '0',
	'and owns no range of the map');

# standby 1 dies without giving its claim up (lease 10 s): instance 1 stays taken until the lease ends
$s1->stop('immediate');
my $died = time;
$s3->append_conf('postgresql.conf', "dmindex.instance_id = 1\n");
$s3->restart;
($state, $err) = query_sqlstate($s3, 'postgres', $q_some);
my $refused_at = time - $died;
if ($refused_at < 8)
{
	is($state, '55006', sprintf('%.1f s after standby1 crashed its lease still holds instance 1', $refused_at));
}
else
{
	pass(sprintf('(the machine is slow: %.1f s passed before the check; the lease may have ended)', $refused_at));
}
my $took = 0;
for (1 .. 60)
{
	($state) = query_sqlstate($s3, 'postgres', $q_some);
	if ($state eq '')
	{
		$took = time - $died;
		last;
	}
	sleep 0.5;
}
# the keeper renews every third of the lease: at the crash 2/3 to all of the
# 10 s were left (lease ends are whole seconds: up to 1 s less)
ok($took >= 5 && $took < 20,
	sprintf('standby3 took instance 1 over once the lease ran out (%.1f s after the crash)', $took));
is(sql($s3, 'postgres', "SELECT string_agg(instance::text, ',') FROM dmindex_partitions('t_k_dm') WHERE local"),
	'1', 'standby3 now serves instance 1\'s range');

# standby 1 comes back as instance 1: refused while standby 3 holds it
$s1->start;
($state) = query_sqlstate($s1, 'postgres', $q_some);
is($state, '55006', 'standby1, back, is refused: standby3 holds instance 1 now');
# a clean shutdown of standby 3 gives the claim up at once
$s3->stop('fast');
my $stopped = time;
($state) = query_sqlstate($s1, 'postgres', $q_some);
ok($state eq '' && time - $stopped < 8, 'after standby3 stopped cleanly standby1 has instance 1 at once');
is(sql($s1, 'postgres', $q_some), sql($s1, 'postgres', "$seq_only SELECT count(*) FROM t WHERE k BETWEEN 1000 AND 2000"),
	'and answers right');

# a restarted server keeps its own claim (same host, port and data directory)
$s1->stop('immediate');
$s1->start;
is(sql($s1, 'postgres', "SELECT count(*) > 0 FROM t WHERE k >= 0"), 't',
	'standby1 restarted after a crash gets its own claim back at once');

$s1->stop;
$s2->stop;
$primary->stop;
is(stop_memnode($mn), 0, 'memnode shuts down cleanly');
done_testing();
