# DmindexTest — helpers shared by the TAP tests in test/t: run a
# dmindex-memnode next to a PostgreSQL::Test::Cluster node, and a few SQL
# shortcuts.
#
# A memnode runs as the same OS user as the test (and so as the cluster),
# which its --shm export needs: the backends map the region file it creates.
# Every memnode started here is killed when the test script exits, whatever
# happens, so no server outlives a test, and its region file (which outlives
# a memnode on purpose: a restart reattaches to it) is removed then.

package DmindexTest;

use strict;
use warnings;

use Exporter 'import';
use POSIX ();
use Time::HiRes qw(usleep time);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(start_memnode restart_memnode kill_memnode stop_memnode
  memnode_alive new_dmindex_node memnode_trees query_sqlstate sql
  dmindex_check);

# memnodes still running, by pid (value: their region file): killed at exit
my %running;
# region files of stopped or killed memnodes: removed at exit
my %region_files;

# A test killed by a signal (e.g. run-tap-tests.sh's timeout) still runs the
# END blocks that stop its servers.
$SIG{TERM} = $SIG{INT} = sub { die "killed by signal $_[0]\n" };

sub memnode_binary
{
	return $ENV{DM_MEMNODE} if $ENV{DM_MEMNODE};
	return 'dmindex-memnode';
}

# start_memnode(port => P, args => [...]): start a memnode listening on
# 127.0.0.1:P (a free port, and a fresh region, by default) and wait for its
# ready line.  Returns
# a hash: pid, port, address, incarnation, shm, region (its region file or
# '-'), start ('fresh' or 'reattached'), ready (the whole line), args.
sub start_memnode
{
	my (%p) = @_;
	my $port = $p{port} // PostgreSQL::Test::Cluster::get_free_port();
	my @args = @{ $p{args} // [ '--size', '256M', '--shm', '--chunk-size', '1M' ] };
	# a first start on a new port must not reattach a region file an earlier,
	# killed test left under that port's name; a restart (port given) may
	my @fresh = defined $p{port} ? () : ('--fresh-region');
	my $dir = $PostgreSQL::Test::Utils::tmp_check;
	my $out = "$dir/memnode-$port.out";
	my $log = "$dir/memnode-$port.log";
	my $deadline = time() + 30;

	# a restart on the same port may briefly find the port busy: retry
	for (;;)
	{
		unlink $out;
		my $pid = fork();
		die "fork: $!" unless defined $pid;
		if ($pid == 0)
		{
			open(STDOUT, '>', $out) or POSIX::_exit(126);
			open(STDERR, '>>', $log) or POSIX::_exit(126);
			exec(memnode_binary(), '--listen', "127.0.0.1:$port", @args, @fresh)
			  or POSIX::_exit(127);
		}
		while (time() < $deadline)
		{
			my $line = -e $out ? slurp_file($out) : '';
			if ($line =~ /^(dmindex-memnode ready .*)$/m)
			{
				my $ready = $1;
				my %mn = (
					pid     => $pid,
					port    => $port,
					address => "127.0.0.1:$port",
					ready   => $ready,
					args    => \@args);
				($mn{incarnation}) = $ready =~ /incarnation=(\S+)/;
				($mn{shm})         = $ready =~ /shm=(\S+)/;
				($mn{region})      = $ready =~ /region=(\S+)/;
				($mn{start})       = $ready =~ /start=(\S+)/;
				$mn{region} //= $mn{shm};
				$running{$pid} = $mn{region};
				note "memnode started: $ready (pid $pid)";
				return \%mn;
			}
			last if waitpid($pid, POSIX::WNOHANG()) == $pid;
			usleep(50_000);
		}
		kill 'KILL', $pid;
		waitpid($pid, 0);
		my $err = -e $log ? slurp_file($log) : '';
		if (time() >= $deadline || $err !~ /in use|bind/i)
		{
			diag "memnode on port $port did not start:\n$err";
			BAIL_OUT("memnode did not start");
		}
		usleep(200_000);
	}
}

sub memnode_alive
{
	my ($mn) = @_;
	return 0 unless exists $running{ $mn->{pid} };
	return waitpid($mn->{pid}, POSIX::WNOHANG()) == 0;
}

# Wait for the memnode to exit (at most $timeout s); returns its wait status
# ($? style), or undef if it is still running.
sub _reap
{
	my ($mn, $timeout) = @_;
	my $deadline = time() + $timeout;
	while (time() < $deadline)
	{
		my $r = waitpid($mn->{pid}, POSIX::WNOHANG());
		if ($r == $mn->{pid} || $r == -1)
		{
			my $status = $r == -1 ? undef : $?;
			delete $running{ $mn->{pid} };
			return $status;
		}
		usleep(20_000);
	}
	return undef;
}

# SIGKILL (a crash).  Returns the wait status.  Its region file stays, as
# after a real crash: a memnode started on it reattaches (restart_memnode),
# or with --fresh-region marks it REPLACED (so that backends still mapping it
# notice) and replaces it; the END block removes it.
sub kill_memnode
{
	my ($mn) = @_;
	kill 'KILL', $mn->{pid};
	my $status = _reap($mn, 30);
	$region_files{ $mn->{region} } = 1 if $mn->{region} && $mn->{region} ne '-';
	return $status;
}

# SIGTERM, a clean shutdown.  Returns the wait status (0 = exit code 0), or
# undef if it did not stop within 30 s (it is then killed).
sub stop_memnode
{
	my ($mn) = @_;
	kill 'TERM', $mn->{pid};
	my $status = _reap($mn, 30);
	$region_files{ $mn->{region} } = 1 if $mn->{region} && $mn->{region} ne '-';
	if (!defined $status)
	{
		kill_memnode($mn);
		return undef;
	}
	return $status;
}

# The same memnode, started again on the same port with the same flags: it
# reattaches to its region file if it has one and it is intact.  With
# fresh => 1 it is given --fresh-region (a new, empty region).
sub restart_memnode
{
	my ($mn, %p) = @_;
	my @args = @{ $mn->{args} };
	my $mn2 = start_memnode(port => $mn->{port},
		args => [ @args, $p{fresh} ? ('--fresh-region') : () ]);
	$mn2->{args} = \@args;
	return $mn2;
}

# A cluster whose dmindex.memnodes lists the given memnodes, started, with
# the extension created in the postgres database.
sub new_dmindex_node
{
	my ($name, $memnodes, %p) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $p{init} // {} });
	my $list = join(',', map { $_->{address} } @$memnodes);
	$node->append_conf('postgresql.conf', <<"CONF");
shared_preload_libraries = 'dmindex'
dmindex.memnodes = '$list'
log_statement = 'none'
log_min_messages = 'warning'
CONF
	$node->append_conf('postgresql.conf', $p{conf}) if $p{conf};
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION dmindex');
	return $node;
}

# Total number of trees on the configured memnodes (through dbname).
sub memnode_trees
{
	my ($node, $dbname) = @_;
	return $node->safe_psql($dbname // 'postgres',
		'SELECT coalesce(sum(trees), -1) FROM dmindex_memnodes()');
}

# The output of sql, or on failure its error message (so that is() shows
# the error instead of the test dying as with safe_psql).
sub sql
{
	my ($node, $dbname, $query) = @_;
	my ($ret, $out, $err) = $node->psql($dbname, $query);
	return $out if $ret == 0;
	$err =~ s/^psql:<stdin>:\d+: //mg;
	chomp $err;
	return "FAILED: $err";
}

# dmindex_check(index, heapallindexed) as "entries|heap_tuples|ok", or the
# error it raised.
sub dmindex_check
{
	my ($node, $dbname, $index, $heapallindexed) = @_;
	$heapallindexed = 1 unless defined $heapallindexed;
	return sql($node, $dbname,
		"SELECT entries, heap_tuples, ok FROM dmindex_check('$index', "
		  . ($heapallindexed ? 'true' : 'false') . ")");
}

# Run sql expecting an error: returns (sqlstate, whole stderr).  The
# sqlstate is '' when the statement succeeded.
sub query_sqlstate
{
	my ($node, $dbname, $sql) = @_;
	my ($ret, $out, $err) =
	  $node->psql($dbname, "\\set VERBOSITY verbose\n$sql");
	my ($state) = $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ($state // '', $err, $ret, $out);
}

END
{
	my $code = $?;
	for my $pid (keys %running)
	{
		kill 'KILL', $pid;
		waitpid($pid, 0);
		my $shm = $running{$pid};
		unlink $shm if $shm && $shm ne '-';
	}
	unlink $_ for keys %region_files;
	$? = $code;
}

1;
