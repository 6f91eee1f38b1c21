# 018_memnode_durable.pl — a memnode restart loses nothing (DESIGN.md §3).
#
# The memnode keeps its region in its --shm file, which outlives the
# process.  While pgbench writes through dmindex indexes — one table over
# the shm transport, one over tcp, at the same time — the memnode is killed
# with SIGKILL and started again on the same file: it must reattach under
# the same incarnation.  Why: indexes must survive a memnode crash or
# upgrade without REINDEX.  Statements in flight when it died may fail
# with a connection error, but never with XX002 (index lost); afterwards
# new sessions and sessions that used the index before work without any
# error, each index answers exactly like a sequential scan of its heap,
# dmindex_check(idx, true) passes, and a VACUUM leaves exactly one entry
# per row.  The same after SIGTERM (a clean shutdown, as for an upgrade).
# A region file whose superblock was damaged is not reattached: the memnode
# starts empty under a new incarnation and the indexes report XX002 with a
# hint to REINDEX, as before regions were kept; REINDEX brings them back.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep time);
use DmindexTest;

my $mn = start_memnode(
	args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);
is($mn->{start}, 'fresh', 'the memnode starts on a fresh region');
ok($mn->{region} ne '-' && -f $mn->{region},
	"its region lives in a file ($mn->{region})");
my $node = new_dmindex_node('durable', [$mn],
	conf => "dmindex.connect_timeout = 2000\ndmindex.op_timeout = 5000\nautovacuum = off\n");

my %transport = (ts => 'shm', tt => 'tcp');
for my $t (sort keys %transport)
{
	$node->safe_psql(
		'postgres', qq{
	CREATE TABLE $t (id bigserial, k int, pad text);
	INSERT INTO $t (k, pad) SELECT (g * 7919) % 100000, 'initial' FROM generate_series(1, 20000) g;
	SET dmindex.transport = $transport{$t};
	CREATE INDEX ${t}_k_dm ON $t USING dmindex (k);
	VACUUM ANALYZE $t;
	});
}

my $dir = $node->basedir;
for my $t (sort keys %transport)
{
	append_to_file("$dir/$t.sql", qq{
\\set k random(1, 100000)
\\set newk random(1, 100000)
INSERT INTO $t (k, pad) VALUES (:k, 'one');
INSERT INTO $t (k, pad) SELECT :k + g, 'multi' FROM generate_series(0, 9) g;
UPDATE $t SET k = :newk WHERE k BETWEEN :k AND :k + 2;
DELETE FROM $t WHERE k BETWEEN :newk AND :newk + 5;
SET enable_seqscan = off;
SELECT count(*) FROM $t WHERE k BETWEEN :k AND :k + 100;
});
}

# pgbench on each table through its transport, for $secs seconds
sub start_load
{
	my ($secs) = @_;
	my @runs;
	for my $t (sort keys %transport)
	{
		my ($out, $err) = ('', '');
		my $conn = sprintf("host=%s port=%d dbname=postgres options='-c dmindex.transport=%s'",
			$node->host, $node->port, $transport{$t});
		my $h = IPC::Run::start(
			[ 'pgbench', '-n', '-c', '3', '-j', '1', '-T', $secs, '-f', "$dir/$t.sql", $conn ],
			'>', \$out, '2>', \$err);
		push @runs, { t => $t, h => $h, out => \$out, err => \$err, end => time + $secs };
	}
	return \@runs;
}

# What every client backend is doing, with a backtrace of the busy ones
# where gdb is installed: printed when a pgbench run does not end, so that a hang seen
# once in CI says where it is.
sub diag_stuck_backends
{
	my $act = $node->safe_psql('postgres',
		"SELECT pid, state, wait_event_type, wait_event, now() - query_start, left(query, 80) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
	diag "client backends:\n$act";
	return unless -x '/usr/bin/gdb';
	for my $line (split /\n/, $act)
	{
		my ($pid, $state) = split /\|/, $line;
		next unless $pid && $pid =~ /^\d+$/ && $state ne 'idle';
		my $bt = `gdb -p $pid -batch -ex bt 2>/dev/null`;
		diag "backtrace of $pid:\n" . join("\n", grep { /^#/ } split /\n/, $bt);
	}
}

# Wait for the pgbench runs; returns (transactions, all output).  A run
# still going 60 s after its end is reported (with what the backends are
# doing) and killed: the statement it waits for is hung.
sub finish_load
{
	my ($runs) = @_;
	my ($n, $all) = (0, '');
	for my $r (@$runs)
	{
		my $deadline = $r->{end} + 60;
		while ($r->{h}->pumpable && time < $deadline)
		{
			$r->{h}->pump_nb;
			usleep(100_000);
		}
		if ($r->{h}->pumpable)
		{
			fail("pgbench on $r->{t} ended within 60 s of its duration");
			diag_stuck_backends();
			$r->{h}->kill_kill;
		}
		eval { $r->{h}->finish; };
		my ($p) = ${ $r->{out} } =~ /actually processed: (\d+)/;
		$n += $p // 0;
		$all .= "[$r->{t}] ${ $r->{out} }\n${ $r->{err} }\n";
	}
	return ($n, $all);
}

sub index_equals_seqscan
{
	my ($t, $label) = @_;
	ok(index_matches_seqscan($node, $t, [ 'k BETWEEN 1 AND 5000', 'k BETWEEN 40000 AND 41000', 'k > 95000', 'k >= 0' ],
		$label, "SET dmindex.transport = $transport{$t};"),
		"$label: $t ($transport{$t}): index scans return exactly the rows of sequential scans");
}

sub check_indexes
{
	my ($label) = @_;
	for my $t (sort keys %transport)
	{
		index_equals_seqscan($t, $label);
		like(dmindex_check($node, 'postgres', "${t}_k_dm"),
			qr/^\d+\|\d+\|t$/, "$label: dmindex_check(${t}_k_dm, true) passes");
	}
}

# sessions that use the indexes before the restart and after it
my %session;
for my $t (sort keys %transport)
{
	$session{$t} = $node->background_psql('postgres', on_error_stop => 0);
	$session{$t}->query_safe("SET dmindex.transport = $transport{$t}; SET enable_seqscan = off; SET enable_bitmapscan = off;");
	like($session{$t}->query("SELECT count(*) FROM $t WHERE k < 1000"),
		qr/^\d+$/, "a long-lived $transport{$t} session uses $t before the restarts");
}

# ---- kill -9 and SIGTERM under load ----------------------------------------------

for my $how ('SIGKILL', 'SIGTERM')
{
	my $log_offset = -s $node->logfile;
	my $runs = start_load(6);
	sleep 2;
	my $status = $how eq 'SIGKILL' ? kill_memnode($mn) : stop_memnode($mn);
	if ($how eq 'SIGKILL')
	{
		ok(defined $status && ($status & 127) == 9, 'the memnode was killed by SIGKILL mid-load');
	}
	else
	{
		is($status, 0, 'the memnode exits 0 on SIGTERM mid-load');
	}
	my $mn2 = restart_memnode($mn);
	is($mn2->{start}, 'reattached', "after $how the memnode reattaches its region file");
	is($mn2->{incarnation}, $mn->{incarnation},
		"after $how it keeps its incarnation ($mn->{incarnation})");
	$mn = $mn2;
	my ($n, $out) = finish_load($runs);
	note "pgbench during the $how:\n$out";
	ok($n > 0, "$how: pgbench wrote through both indexes around the restart ($n transactions)");
	unlike($out, qr/XX002|lost its data|lost the data/,
		"$how: no statement failed with XX002 (index lost)");
	my $log = slurp_file($node->logfile, $log_offset);
	unlike($log, qr/lost its data|restarted and lost/, "$how: the server log has no lost index either");

	# every session works again, the old ones included, without an error
	($n, $out) = finish_load(start_load(3));
	note "pgbench after the $how:\n$out";
	ok($n > 0 && $out !~ /aborted|ERROR/,
		"after $how new sessions write through both indexes without any error ($n transactions)");
	for my $t (sort keys %transport)
	{
		my ($res, $failed) = $session{$t}->query("SELECT count(*) FROM $t WHERE k < 1000");
		ok(!$failed && $res =~ /^\d+$/,
			"after $how the long-lived $transport{$t} session reconnects transparently")
		  or diag $session{$t}->{stderr};
		$session{$t}->{stderr} = '';
	}
	check_indexes("after $how");
}

# More restarts at random moments of the load, alternating SIGKILL and
# SIGTERM: a restart can land in any step of an operation (an offloaded
# write through the node cache whose reply never comes once hung a backend
# forever, holding its row locks; it showed in one run of this test in
# twenty).  Each round: the region is reattached, a load afterwards runs
# without any error.
for my $round (1 .. 8)
{
	my $how = $round % 2 ? 'SIGKILL' : 'SIGTERM';
	my $runs = start_load(4);
	usleep(500_000 + int(rand(2_500_000)));
	my $status = $how eq 'SIGKILL' ? kill_memnode($mn) : stop_memnode($mn);
	my $mn2 = restart_memnode($mn);
	$mn = $mn2;
	my (undef, $during) = finish_load($runs);
	my ($n, $out) = finish_load(start_load(2));
	ok( $mn2->{start} eq 'reattached' && $during !~ /XX002|lost its data|lost the data/
		  && $n > 0 && $out !~ /aborted|ERROR/,
		"restart round $round ($how): reattached, then $n transactions without an error")
	  or diag "start: $mn2->{start}\nduring:\n$during\nafter:\n$out";
}
check_indexes('after the restart rounds');

for my $t (sort keys %transport)
{
	# INDEX_CLEANUP ON: with dead rows on under 2% of the pages, a default
	# VACUUM would leave the indexes (and those rows' entries) alone
	is(sql($node, 'postgres', "VACUUM (INDEX_CLEANUP ON) $t"), '', "VACUUM $t after the restarts");
	is( sql($node, 'postgres',
			"SELECT entries = heap_tuples, ok FROM dmindex_check('${t}_k_dm', true)"),
		't|t', "$t: after VACUUM exactly one entry per row");
}

# ---- a damaged superblock: a fresh region, and XX002 as before --------------------

is(stop_memnode($mn), 0, 'SIGTERM before damaging the region file');
{
	# one byte of the superblock's chunk size (offset 32): its checksum no longer matches
	open(my $fh, '+<', $mn->{region}) or die "open $mn->{region}: $!";
	binmode $fh;
	seek($fh, 34, 0);
	read($fh, my $b, 1);
	seek($fh, 34, 0);
	print $fh chr(ord($b) ^ 0x5A);
	close $fh;
}
my $mn3 = restart_memnode($mn);
is($mn3->{start}, 'fresh', 'a damaged superblock is not reattached');
isnt($mn3->{incarnation}, $mn->{incarnation},
	"the memnode starts under a new incarnation ($mn3->{incarnation})");
my $mnlog = slurp_file("$PostgreSQL::Test::Utils::tmp_check/memnode-$mn3->{port}.log");
like($mnlog, qr/cannot be reattached: its superblock checksum does not match/,
	'the memnode log says why');
for my $t (sort keys %transport)
{
	my ($state, $err) = query_sqlstate($node, 'postgres',
		"SET dmindex.transport = $transport{$t}; SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM $t WHERE k < 1000");
	is($state, 'XX002', "$t ($transport{$t}): the index reports XX002 on the new incarnation");
	like($err, qr/HINT:\s+REINDEX/, "$t: with a hint to REINDEX");
	is(sql($node, 'postgres', "REINDEX INDEX ${t}_k_dm"), '', "REINDEX INDEX ${t}_k_dm");
}
check_indexes('after REINDEX on the new incarnation');

$_->quit for values %session;
$node->stop;
done_testing();
