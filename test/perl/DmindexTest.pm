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
  memnode_alive new_dmindex_node new_standby_primary new_dmindex_standby streaming_standby
  memnode_trees query_sqlstate sql dmindex_check index_matches_seqscan $idx_only $seq_only
  key_shape key_columns key_with key_sql key_shape_needs_int8);

# Prefixes that leave a query one plan: a plain index scan, or a seqscan
# (tests compare the two answers).
our $idx_only = "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;";
our $seq_only = "SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;";

# ---- key shapes -------------------------------------------------------------
# DMINDEX_TAP_KEY picks the shape of the dmindex indexes the tests build
# over their integer key column (k, an int4 column; docs/design.md §8 "Key
# formats"):
#   int8  (default) the column itself: a FIXED8 tree, the tests as always;
#   text  one text expression of k whose order is k's order (ten digits of
#         k - int4's minimum, COLLATE "C"): a VAR tree;
#   multi two columns: the text (eight digits, COLLATE "C") of k / 100,
#         then k itself: a VAR tree whose range queries are ranges on the
#         leading column (the index applies no condition on the second, the
#         recheck does), whose point queries and ranges inside one group of
#         100 are equality on the leading column and a condition on the
#         second (short enough for 256-byte nodes' 20-byte keys);
#   icu   the text of "text" under the ICU collation "und-x-icu" (a non-C
#         collation: ICU sort keys; the nodes are initialized with UTF8 for
#         it).  Its keys (sort key and the string as tiebreak) are longer
#         than 256-byte nodes allow (20 bytes), so key_with raises a
#         smaller node_size to 1024.
# A test writes its index as "USING dmindex (" . key_columns('k') . ") "
# . key_with('WITH (...)'), and its conditions on k and its ORDER BY k
# through key_sql, so that in every shape the planner can answer them from
# that index.
my $key_shape = $ENV{DMINDEX_TAP_KEY} // 'int8';
die "DMINDEX_TAP_KEY must be int8, text, multi or icu, not \"$key_shape\"\n"
  unless $key_shape =~ /^(int8|text|multi|icu)$/;

sub key_shape { return $key_shape; }

# A test that cannot use a VAR index (e.g. the partition functions refuse
# one) skips itself in a VAR run instead of silently testing int8 again.
sub key_shape_needs_int8
{
	my ($why) = @_;
	plan skip_all => "DMINDEX_TAP_KEY=$key_shape: $why" if $key_shape ne 'int8';
	return;
}

my %key_collation = (text => 'C', multi => 'C', icu => 'und-x-icu');

# the text of the int4 value $x: fixed width, so that its byte order (and
# any collation's) is the integers' order, negative values included
sub _key_text
{
	my ($x) = @_;
	return "lpad(((($x))::bigint + 2147483648)::text, 10, '0')";
}

# the leading column of the multi shape: integer division keeps the order,
# the offset makes every int4's quotient eight non-negative digits
sub _key_lead
{
	my ($x) = @_;
	return "(lpad(((($x) / 100)::bigint + 21474837)::text, 8, '0') COLLATE \"C\")";
}

# The index's column list for key column $col (e.g. also for a btree twin
# on a copy of the column, to compare with).
sub key_columns
{
	my ($col) = @_;
	return $col if $key_shape eq 'int8';
	return _key_lead($col) . ", $col" if $key_shape eq 'multi';
	return '(' . _key_text($col) . ") COLLATE \"$key_collation{$key_shape}\"";
}

# key_with($with): the index's WITH clause for the current shape: for icu,
# a node_size below 1024 raised to 1024 (its keys do not fit smaller nodes).
sub key_with
{
	my ($with) = @_;
	$with =~ s/\bnode_size\s*=\s*(\d+)/'node_size = ' . ($1 < 1024 ? 1024 : $1)/e
	  if $key_shape eq 'icu';
	return $with;
}

# the operand of a condition or ORDER BY in the text and icu shapes: the
# indexed text expression with its collation
sub _key_operand
{
	my ($x) = @_;
	return '(' . _key_text($x) . " COLLATE \"$key_collation{$key_shape}\")";
}

# One marked condition, e.g. "k BETWEEN :k AND :k + 30" or "k >= 10", or
# "ORDER BY k DESC", in the current shape.  For multi, a condition on k
# stays and gets its consequence for the leading column (a strict bound
# loosened: k > a implies k / 100 >= a / 100); a BETWEEN of two literals in
# one group of 100 becomes equality on the leading column (a prefix and a
# range inside it).
sub _key_rewrite
{
	my ($m) = @_;
	if ($m =~ /^ORDER BY (\w+)((?:\s+(?:ASC|DESC))?)$/)
	{
		my ($col, $dir) = ($1, $2);
		return "ORDER BY $col$dir" if $key_shape eq 'int8';
		return 'ORDER BY ' . _key_operand($col) . $dir if $key_shape ne 'multi';
		return 'ORDER BY ' . _key_lead($col) . "$dir, $col$dir";
	}
	if ($m =~ /^(\w+) BETWEEN (.+?) AND (.+)$/)
	{
		my ($col, $a, $b) = ($1, $2, $3);
		return $m if $key_shape eq 'int8';
		return _key_operand($col) . ' BETWEEN ' . _key_operand($a) . ' AND ' . _key_operand($b)
		  if $key_shape ne 'multi';
		my $lead =
		  ($a =~ /^-?\d+$/ && $b =~ /^-?\d+$/ && int($a / 100) == int($b / 100) && $a * $b >= 0)
		  ? _key_lead($col) . ' = ' . _key_lead($a)
		  : _key_lead($col) . ' BETWEEN ' . _key_lead($a) . ' AND ' . _key_lead($b);
		return "$lead AND $m";
	}
	if ($m =~ /^(\w+) (=|<|<=|>|>=) (.+)$/)
	{
		my ($col, $op, $x) = ($1, $2, $3);
		return $m if $key_shape eq 'int8';
		return _key_operand($col) . " $op " . _key_operand($x) if $key_shape ne 'multi';
		(my $lop = $op) =~ s/^([<>])$/$1=/;
		return _key_lead($col) . " $lop " . _key_lead($x) . " AND $m";
	}
	die "key_sql: cannot rewrite [[$m]]\n";
}

# key_sql($sql): $sql with each [[condition]] and [[ORDER BY col [DIR]]]
# written for the current key shape (for int8, just the marks removed).
sub key_sql
{
	my ($sql) = @_;
	$sql =~ s/\[\[(.+?)\]\]/_key_rewrite($1)/ge;
	return $sql;
}

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
	my %init = %{ $p{init} // {} };
	# the icu key shape's collation needs an encoding ICU supports
	$init{extra} = [ @{ $init{extra} // [] }, '--encoding=UTF8', '--locale=C' ]
	  if $key_shape eq 'icu';
	$node->init(%init);
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
	check_pgoptions($node);
	return $node;
}

# A variant run (test/run-tests.sh) sets dmindex.* in PGOPTIONS for every
# session: make sure the sessions really have them, or the variant would
# silently test the defaults.
sub check_pgoptions
{
	my ($node) = @_;
	my $opts = $ENV{PGOPTIONS} // '';
	while ($opts =~ /-c\s*(dmindex\.\w+)=(\S+)/g)
	{
		my ($name, $value) = ($1, $2);
		is($node->safe_psql('postgres', "SHOW $name"),
			$value, "PGOPTIONS reaches the sessions: $name = $value");
	}
}

# The primary of the standby tests (019, 021, 022): a memnode (512 MB,
# --shm, 1 MB chunks) and a node with streaming allowed, autovacuum off,
# dmindex.instance_id 0, max_connections $p{max_connections} (default 40)
# and a DEX cache of 8 MB in 256-byte frames that admits every leaf read,
# plus $p{conf}; then table t (id bigserial, k int, pad text) with
# $p{rows} rows of scattered keys, its dmindex index t_k_dm on k
# (256-byte nodes), one physical slot per name in $p{slots} (reserving WAL
# at once: a standby started late must still find it), $p{sql}, and a
# backup 'b' to start the standbys from.  Returns ($memnode, $primary).
sub new_standby_primary
{
	my (%p) = @_;
	my $mn = start_memnode(
		args => [ '--size', '512M', '--shm', '--chunk-size', '1M' ]);
	my $primary = new_dmindex_node(
		'primary', [$mn],
		init => { allows_streaming => 1 },
		conf => 'max_connections = ' . ($p{max_connections} // 40) . "\n"
		  . "autovacuum = off\n"
		  . "dmindex.instance_id = 0\n"
		  . "dmindex.cache_policy = dex\n"
		  . "dmindex.cache_size = 8MB\n"
		  . "dmindex.cache_frame_size = 256\n"
		  . "dmindex.cache_leaf_admission = 1.0\n"
		  . ($p{conf} // ''));
	my $slots = join('',
		map { "SELECT pg_create_physical_replication_slot('$_', true);\n" } @{ $p{slots} });
	$primary->safe_psql(
		'postgres', qq{
	CREATE TABLE t (id bigserial, k int, pad text);
	INSERT INTO t (k, pad) SELECT (g * 7919) % 100000, 'initial' FROM generate_series(1, $p{rows}) g;
	CREATE INDEX t_k_dm ON t USING dmindex (@{[ key_columns('k') ]}) @{[ key_with('WITH (node_size = 256)') ]};
	VACUUM ANALYZE t;
	$slots} . ($p{sql} // ''));
	$primary->backup('b');
	return ($mn, $primary);
}

# A hot standby $name of $primary, from its backup 'b', streaming through
# physical slot $p{slot} with hot_standby_feedback on (off with
# feedback => 0), plus $p{conf}; started, and once it has replayed what
# the primary wrote so far (unless wait => 0), returned.
sub new_dmindex_standby
{
	my ($primary, $name, %p) = @_;
	my $s = PostgreSQL::Test::Cluster->new($name);
	$s->init_from_backup($primary, 'b', has_streaming => 1);
	$s->append_conf('postgresql.conf',
		"primary_slot_name = '$p{slot}'\n"
		  . (($p{feedback} // 1) ? "hot_standby_feedback = on\n" : '')
		  . ($p{conf} // ''));
	$s->start;
	$primary->wait_for_catchup($s, 'replay') if $p{wait} // 1;
	return $s;
}

# streaming_standby($upstream, $backup, $name, $conf): a streaming standby
# $name made from $upstream's backup $backup with $conf appended (its
# dmindex.instance_id, at least), started, and once it has replayed what
# $upstream has (written, or replayed if $upstream is a standby itself),
# returned.
sub streaming_standby
{
	my ($upstream, $backup, $name, $conf) = @_;
	my $s = PostgreSQL::Test::Cluster->new($name);
	$s->init_from_backup($upstream, $backup, has_streaming => 1);
	$s->append_conf('postgresql.conf', $conf);
	$s->start;
	if ($upstream->safe_psql('postgres', 'SELECT pg_is_in_recovery()') eq 't')
	{
		$upstream->wait_for_catchup($s, 'replay', $upstream->lsn('replay'));
	}
	else
	{
		$upstream->wait_for_catchup($s, 'replay');
	}
	return $s;
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

# index_matches_seqscan($node, $table, \@where, $label, $prefix, $dbname):
# for each condition, the rows of $table (their count and the md5 of their
# ids, so the table needs an id column) as a plain index scan returns them
# (after $prefix, e.g. a SET of the transport) and as a sequential scan does,
# in database $dbname (postgres); a diag for each that differs.  1 if every
# condition agrees.
sub index_matches_seqscan
{
	my ($node, $table, $where, $label, $prefix, $dbname) = @_;
	$prefix //= '';
	$dbname //= 'postgres';
	my $all = 1;
	for my $w (@$where)
	{
		my $q = "SELECT count(*) || ':' || coalesce(md5(string_agg(id::text, ',' ORDER BY id)), '-') FROM $table WHERE $w";
		my $via_index = sql($node, $dbname, "$prefix $idx_only $q");
		my $via_heap = sql($node, $dbname, "$seq_only $q");
		next if $via_index eq $via_heap;
		diag "$label, $table: $w: index $via_index, seq scan $via_heap";
		$all = 0;
	}
	return $all;
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
