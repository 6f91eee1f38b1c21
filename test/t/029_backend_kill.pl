# 029_backend_kill.pl — backends killed (SIGKILL) in the middle of their
# work over shm, again and again (docs/design.md §5, "Torn nodes").
#
# Why: over shm a backend stores a node's new bytes itself, word by word; a
# backend killed between two stores leaves the node DIRTY (torn).  Whoever
# needs the node next takes the dead writer's lock over and finishes the
# write from the writer's redo slot (dm_tree_redo.c).  The C tests kill
# writers after every single word (test_tree_faults); this test kills real
# PostgreSQL backends at random moments of an insert/delete load (most
# kills land between two node writes rather than inside one, so this is
# about everything around them: a flush cut short, an insert buffer lost
# with its backend, crash recovery beside a remote tree that kept what
# landed, the node cache reinitialised): each kill
# makes the postmaster restart every backend (shared memory, the node cache
# with it, is reinitialised), and the heap is recovered from WAL while the
# remote tree keeps what landed.  Afterwards the index must answer like a
# sequential scan, VACUUM must clean what aborted transactions left, and
# dmindex_check(idx, true) must find no stale and no missing entry.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep time);
use DmindexTest;

my $rounds = $ENV{DM_KILL_ROUNDS} // 12;
my $mn = start_memnode(args => [ '--size', '1G', '--shm', '--chunk-size', '1M' ]);
my $node = new_dmindex_node('kill', [$mn],
	conf => "autovacuum = off\n"
	  . "restart_after_crash = on\n"
	  . "dmindex.transport = shm\n"
	  . "dmindex.cache_policy = dex\n"
	  . "dmindex.cache_size = 2MB\n"
	  . "dmindex.cache_frame_size = 256\n");

$node->safe_psql('postgres', q{
CREATE TABLE t (id bigserial, k int, pad text);
INSERT INTO t (k, pad) SELECT (g * 7919) % 100000, 'initial' FROM generate_series(1, 20000) g;
CREATE INDEX t_k_dm ON t USING dmindex (k) WITH (node_size = 256);
VACUUM ANALYZE t;
});

my $dir = $node->basedir;
append_to_file("$dir/insert.sql", q{
\set k random(1, 100000)
INSERT INTO t (k, pad) SELECT :k + g, 'multi' FROM generate_series(0, 9) g;
});
append_to_file("$dir/delete.sql", q{
\set k random(1, 100000)
DELETE FROM t WHERE k BETWEEN :k AND :k + 30;
});
append_to_file("$dir/point.sql", q{
\set k random(1, 100000)
SELECT count(*) FROM t WHERE k = :k;
});

my $killed = 0;
for my $round (1 .. $rounds)
{
	my ($out, $err) = ('', '');
	# the harness names every session after the test: a name of pgbench's own tells its backends apart
	my $h = IPC::Run::start(
		[
			'env', 'PGAPPNAME=dmkill', 'pgbench', '-n', '-c', '4', '-j', '1', '-T', '5',
			'-f', "$dir/insert.sql\@4", '-f', "$dir/delete.sql\@1", '-f', "$dir/point.sql\@2",
			'-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$out, '2>', \$err, IPC::Run::timeout(60));
	# let the load run a random while, then kill one of its busy backends
	usleep(300_000 + int(rand(1_200_000)));
	my $pid = '';
	for (1 .. 40)
	{
		(undef, $pid) = $node->psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE application_name = 'dmkill' AND state = 'active' "
			  . "AND pid <> pg_backend_pid() ORDER BY random() LIMIT 1");
		$pid //= '';
		last if $pid =~ /^\d+$/;
		usleep(50_000);
	}
	if ($pid =~ /^\d+$/)
	{
		kill 'KILL', $pid;
		$killed++;
	}
	eval { $h->finish; };
	eval { $h->kill_kill; } if $@;
	# the postmaster restarts every backend after the kill: wait until it serves again
	my $up = 0;
	for (1 .. 300)
	{
		my ($ret) = $node->psql('postgres', 'SELECT 1');
		if ($ret == 0) { $up = 1; last; }
		usleep(100_000);
	}
	ok($up, "round $round: the server serves again after backend $pid was killed");
	last unless $up;
}
cmp_ok($killed, '>=', $rounds - 2, "backends killed under load: $killed of $rounds rounds");
note 'the index after the kills: ' . $node->safe_psql('postgres', 'SELECT row_to_json(s) FROM dmindex_stats(\'t_k_dm\') s');

my @where = ('k BETWEEN 1 AND 3000', 'k BETWEEN 40000 AND 41000', 'k > 99000', 'k >= 0', 'k > 1000000');
ok(index_matches_seqscan($node, 't', \@where, 'after the kills'),
	'after the kills: index scans return exactly the rows of sequential scans');
is($node->safe_psql('postgres', 'VACUUM t'), '', 'VACUUM runs');
ok(index_matches_seqscan($node, 't', \@where, 'after VACUUM'),
	'after VACUUM: index scans return exactly the rows of sequential scans');
like(dmindex_check($node, 'postgres', 't_k_dm', 1), qr/^\d+\|\d+\|t$/,
	'dmindex_check(t_k_dm, true): no stale and no missing entry');

# the cache comes back cold after each restart: once more with a warm one
$node->restart;
ok(index_matches_seqscan($node, 't', \@where, 'after a clean restart'),
	'after a clean restart: index scans return exactly the rows of sequential scans');

$node->stop;
is(stop_memnode($mn), 0, 'memnode exits cleanly');
done_testing();
