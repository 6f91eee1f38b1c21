# 005_cancel_timeout.pl — waits on a memnode are interruptible and bounded
# (DESIGN.md §8 "Connections").
#
# A memnode that stops answering (SIGSTOP: alive, connection open, no
# replies) must never hang a backend.  Why: a backend waits for the memnode
# inside the access method; if that wait ignored PostgreSQL's interrupts, a
# stuck memnode would make queries uncancellable.  So: statement_timeout and
# pg_cancel_backend end the wait with SQLSTATE 57014; dmindex.op_timeout
# ends it with a connection failure (08006) naming the memnode; and once the
# memnode answers again the same session works (it reconnects).  The
# session uses the tcp transport, where every operation waits for the
# memnode (over shm the backend reads the memory itself).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use IPC::Run;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '128M', '--shm', '--chunk-size', '1M' ]);
my $node = new_dmindex_node('cancel', [$mn],
	conf => "dmindex.op_timeout = 60000\ndmindex.connect_timeout = 60000\n");

$node->safe_psql('postgres', q{
CREATE TABLE t (k int);
INSERT INTO t SELECT g FROM generate_series(1, 5000) g;
CREATE INDEX t_k_dm ON t USING dmindex (k);
ANALYZE t;
});

my $setup = 'SET dmindex.transport = tcp; SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $query = 'SELECT count(*) FROM t WHERE k BETWEEN 10 AND 20';

is(sql($node, 'postgres', "$setup $query"), '11', 'index scan over tcp works');

kill 'STOP', $mn->{pid};

# statement_timeout
my $t0 = time;
my ($state, $err) = query_sqlstate($node, 'postgres', "$setup SET statement_timeout = 500; $query");
my $elapsed = time - $t0;
is($state, '57014', 'statement_timeout interrupts a wait on a stalled memnode');
like($err, qr/statement timeout/, '... reported as a statement timeout');
ok($elapsed < 10, sprintf('... promptly (%.1f s, op_timeout is 60 s)', $elapsed));

# pg_cancel_backend from another session
my ($out, $errout) = ('', '');
my $h = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', "$setup SET application_name = 'victim'; $query" ],
	'>', \$out, '2>', \$errout);
my $waiting = 0;
for (1 .. 100)
{
	$waiting = $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'victim' AND state = 'active' AND wait_event_type = 'Extension'");
	last if $waiting eq '1';
	sleep 0.1;
}
is($waiting, '1', 'the query waits on the memnode (wait_event_type Extension)');
$t0 = time;
$node->safe_psql('postgres', "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'victim'");
$h->finish;
$elapsed = time - $t0;
like($errout, qr/canceling statement due to user request/, 'pg_cancel_backend interrupts the wait');
ok($elapsed < 10, sprintf('... promptly (%.1f s)', $elapsed));

# dmindex.op_timeout (a changed timeout reconnects, so connect_timeout bounds the handshake)
$t0 = time;
($state, $err) = query_sqlstate($node, 'postgres', "$setup SET dmindex.op_timeout = 1000; SET dmindex.connect_timeout = 1000; $query");
$elapsed = time - $t0;
is($state, '08006', 'dmindex.op_timeout ends the wait with a connection failure');
like($err, qr/\Q$mn->{address}\E/, '... naming the memnode');
ok($elapsed >= 0.9 && $elapsed < 10, sprintf('... after about the timeout (%.1f s)', $elapsed));

kill 'CONT', $mn->{pid};

is(sql($node, 'postgres', "$setup $query"), '11', 'once the memnode answers again, queries work');
is(dmindex_check($node, 'postgres', 't_k_dm'), '5000|5000|t', 'and the index is intact');

is(stop_memnode($mn), 0, 'memnode exits cleanly');
$node->stop;
done_testing();
