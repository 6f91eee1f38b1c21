# 002_crash.pl — crash consistency of dmindex (DESIGN.md §8, WAL-first rule).
#
# PostgreSQL is stopped with -m immediate (a crash: no shutdown checkpoint,
# WAL not yet written is lost) while pgbench clients write and while other
# sessions hold transactions open: one with entries only in its insert
# buffer, one whose buffer was flushed early (dmindex.insert_buffer), one
# open UPDATE of the indexed column, one open DELETE.  The memnode keeps
# running, so the remote tree survives the crash while the heap is
# recovered from WAL.  Why: a remote entry must never point at a heap tuple
# the crash lost (its tid would be reused), and no committed row may lose its
# entry.  After the restart dmindex_check(idx, true) must find no stale and no
# missing entry, the index must answer like a sequential scan, and VACUUM
# must remove the entries of the transactions the crash aborted.  A second
# round crashes while VACUUM runs concurrently.  An unlogged table's dmindex
# index must come back empty and usable, without leaking its old tree.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use DmindexTest;

my $mn = start_memnode(
	args => [ '--size', '512M', '--shm', '--chunk-size', '1M' ]);
my $node = new_dmindex_node('crash', [$mn], conf => "autovacuum = off\n");

# the indexes in the key shape of DMINDEX_TAP_KEY (DmindexTest): with text
# or multi, VAR trees; every condition on k below is written with key_sql
my $kcols = key_columns('k');
$node->safe_psql(
	'postgres', qq{
CREATE TABLE t (id bigserial, k int, pad text);
INSERT INTO t (k, pad) SELECT (g * 7919) % 100000, 'initial' FROM generate_series(1, 20000) g;
-- rows pgbench never touches, for the transactions left open at the crash
INSERT INTO t (k, pad) SELECT 200000 + g, 'fixed' FROM generate_series(1, 1000) g;
CREATE INDEX t_k_dm ON t USING dmindex ($kcols);
CREATE TABLE c (k int);
INSERT INTO c SELECT g FROM generate_series(1, 1000) g;
CREATE UNLOGGED TABLE u (k int);
INSERT INTO u SELECT g FROM generate_series(1, 5000) g;
CREATE INDEX u_k_dm ON u USING dmindex ($kcols);
VACUUM ANALYZE t;
VACUUM ANALYZE u;
});

# the conditions below reach the dmindex indexes in every key shape
for my $q ([ 't_k_dm', 'SELECT id FROM t WHERE [[k BETWEEN 1 AND 3000]]' ],
	[ 'u_k_dm', 'SELECT k FROM u WHERE [[k BETWEEN 1000001 AND 1000005]]' ])
{
	like($node->safe_psql('postgres', key_sql("$idx_only EXPLAIN (COSTS OFF) $q->[1]")),
		qr/Index Scan using $q->[0]/, "$q->[0] answers the conditions on k (key shape " . key_shape() . ')');
}

my $dir = $node->basedir;
my %scripts = (
	'insert.sql' => q{
\set k random(1, 100000)
INSERT INTO t (k, pad) VALUES (:k, 'one');
INSERT INTO u VALUES (:k);
},
	'multi.sql' => q{
\set k random(1, 100000)
INSERT INTO t (k, pad) SELECT :k + g, 'multi' FROM generate_series(0, 19) g;
},
	'update.sql' => q{
\set k random(1, 100000)
\set newk random(1, 100000)
UPDATE t SET k = :newk WHERE [[k BETWEEN :k AND :k + 3]];
},
	'delete.sql' => q{
\set k random(1, 100000)
DELETE FROM t WHERE [[k BETWEEN :k AND :k + 20]];
},
	# a transaction that flushes entries early, then stays open a while
	'slow.sql' => q{
\set k random(1, 100000)
BEGIN;
SET LOCAL dmindex.insert_buffer = 8;
INSERT INTO t (k, pad) SELECT :k + g, 'slow' FROM generate_series(0, 29) g;
\sleep 20 ms
UPDATE t SET k = k + 1 WHERE [[k BETWEEN :k + 100 AND :k + 105]];
COMMIT;
},);
for my $name (sort keys %scripts)
{
	append_to_file("$dir/$name", key_sql($scripts{$name}));
}
append_to_file("$dir/vacuum.sql", "VACUUM t;\n\\sleep 100 ms\n");

sub start_pgbench
{
	my ($file_args, $clients) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'pgbench', '-n', '-c', $clients, '-j', '1', '-T', '120',
			@$file_args, '-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$out, '2>', \$err, IPC::Run::timeout(180));
	return { h => $h, out => \$out, err => \$err };
}

sub finish_pgbench
{
	my ($b) = @_;
	eval { $b->{h}->finish; };
	eval { $b->{h}->kill_kill; } if $@;
	note "pgbench output: ${ $b->{out} }\n${ $b->{err} }";
	my ($processed) = ${ $b->{out} } =~ /actually processed: (\d+)/;
	return $processed // 0;
}

# Compare what the index returns with a sequential scan, for several ranges.
sub index_equals_seqscan
{
	my ($label) = @_;
	ok(index_matches_seqscan($node, 't',
		[ map { key_sql("[[$_]]") } 'k BETWEEN 1 AND 3000', 'k BETWEEN 40000 AND 41000', 'k > 99000',
		  'k >= 0', 'k BETWEEN 200001 AND 201000', 'k >= 500000', 'k > 1000000' ], $label),
		"$label: index scans return the same rows as sequential scans");
}

sub check_index
{
	my ($label, %p) = @_;
	my $res = dmindex_check($node, 'postgres', 't_k_dm');
	like($res, qr/^\d+\|\d+\|t$/, "$label: dmindex_check(t_k_dm, true) passes");
	my ($entries, $heap) = map { $_ // '?' } (split /\|/, $res)[ 0, 1 ];
	if ($p{exact})
	{
		ok($heap =~ /^\d+$/ && $entries == $heap,
			"$label: exactly one entry per row ($entries entries, $heap rows)");
	}
	return ($entries, $heap);
}

my $trees_before = memnode_trees($node);

for my $round (1, 2)
{
	my $trees_round = memnode_trees($node);
	my @files =
	  map { ('-f', "$dir/$_") } sort keys %scripts;
	my $bench = start_pgbench(\@files, 3);
	my $vac;
	$vac = start_pgbench([ '-f', "$dir/vacuum.sql" ], 1) if $round == 2;

	# let the load run for a moment before the crash
	sleep 2;

	# transactions left open at the crash
	my $committed = $node->background_psql('postgres');
	$committed->query_safe(
		"INSERT INTO t (k, pad) SELECT 500000 + g, 'committed-$round' FROM generate_series(0, 99) g"
	);
	my $open_buffered = $node->background_psql('postgres');
	$open_buffered->query_safe(
		"BEGIN; INSERT INTO t (k, pad) SELECT 600000 + g, 'open' FROM generate_series(0, 199) g"
	);
	my $open_flushed = $node->background_psql('postgres');
	$open_flushed->query_safe(
		"BEGIN; SET LOCAL dmindex.insert_buffer = 10; INSERT INTO t (k, pad) SELECT 700000 + g, 'flushed' FROM generate_series(0, 499) g"
	);
	my $open_update = $node->background_psql('postgres');
	$open_update->query_safe(
		key_sql("BEGIN; SET LOCAL dmindex.insert_buffer = 10; UPDATE t SET k = k + 2000000 WHERE [[k BETWEEN 200001 AND 200300]]")
	);
	my $open_delete = $node->background_psql('postgres');
	$open_delete->query_safe(
		key_sql("BEGIN; DELETE FROM t WHERE [[k BETWEEN 200501 AND 200800]]"));
	# a CREATE INDEX the crash interrupts: its tree exists, its index never will
	my $open_create = $node->background_psql('postgres');
	$open_create->query_safe(
		"BEGIN; CREATE INDEX c_k ON c USING dmindex ($kcols)");
	# the early-flushed entries are remote now, and their rows' WAL too
	my $flushed_entries = $node->safe_psql('postgres',
		"SELECT entries FROM dmindex_stats('t_k_dm')");
	note "entries before the crash: $flushed_entries";
	sleep 1;

	$node->stop('immediate');
	my $processed = finish_pgbench($bench);
	cmp_ok($processed, '>', 100,
		"round $round: pgbench was writing when the server crashed ($processed transactions)");
	if ($vac)
	{
		my $vacuums = finish_pgbench($vac);
		cmp_ok($vacuums, '>', 3,
			"round $round: VACUUM was running repeatedly when the server crashed ($vacuums)");
	}
	for my $s ($committed, $open_buffered, $open_flushed, $open_update,
		$open_delete, $open_create)
	{
		eval { $s->quit; };
	}
	ok(memnode_alive($mn), "round $round: the memnode survived the crash");

	$node->start;

	check_index("round $round, after the crash");
	is( sql($node, 'postgres',
			key_sql("SET enable_seqscan = off; SELECT count(*) FROM t WHERE [[k BETWEEN 500000 AND 500099]] AND pad = 'committed-$round'")
		),
		'100',
		"round $round: rows committed before the crash are found through the index");
	is( sql($node, 'postgres',
			key_sql("SET enable_seqscan = off; SELECT count(*) FROM t WHERE [[k >= 600000]]")),
		'0',
		"round $round: rows of transactions open at the crash are gone (index)");
	is( sql($node, 'postgres',
			"SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off; SELECT count(*) FROM t WHERE k >= 600000 OR pad IN ('open', 'flushed')"
		),
		'0',
		"round $round: rows of transactions open at the crash are gone (seq scan)");
	is( sql($node, 'postgres',
			key_sql("SET enable_seqscan = off; SELECT count(*), min(k), max(k) FROM t WHERE [[k BETWEEN 200001 AND 201000]]")
		),
		'1000|200001|201000',
		"round $round: rows updated or deleted by transactions open at the crash are unchanged");
	index_equals_seqscan("round $round, after the crash");

	# the tree of the CREATE INDEX cut short by the crash is garbage now
	$node->safe_psql('postgres', 'SELECT dmindex_gc()');
	is(memnode_trees($node), $trees_round,
		"round $round: dmindex_gc() frees the tree of the interrupted CREATE INDEX");

	# the aborted transactions' entries go with VACUUM; then one entry per row
	is(sql($node, 'postgres', 'VACUUM t'), '', "round $round: VACUUM succeeds after the crash");
	check_index("round $round, after VACUUM", exact => 1);
	index_equals_seqscan("round $round, after VACUUM");

	# new rows reuse the line pointers VACUUM freed: no entry may point at them
	$node->safe_psql('postgres',
		"INSERT INTO t (k, pad) SELECT (g * 31) % 100000, 'reuse-$round' FROM generate_series(1, 5000) g"
	);
	check_index("round $round, after reusing freed space", exact => 1);
	index_equals_seqscan("round $round, after reusing freed space");

	# the unlogged table was reset by the crash, its index with it; the
	# index's first use after the crash gives it a new tree: let several
	# backends race for that
	$node->pgbench(
		'-n -c 4 -j 2 -t 25',
		0,
		[qr/number of failed transactions: 0 \(/],
		[qr/^$/],
		"round $round: concurrent first use of the reset unlogged index",
		{
			"u_first_use_$round.sql" =>
			  "INSERT INTO u SELECT 1000000 + g FROM generate_series(1, 10) g;\n"
		});
	is( sql($node, 'postgres',
			key_sql("SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*), sum(k) FROM u WHERE [[k BETWEEN 1000001 AND 1000005]]")
		),
		'500|500001500',
		"round $round: the unlogged table's index finds every row inserted after the crash");
	is(dmindex_check($node, 'postgres', 'u_k_dm'),
		'1000|1000|t',
		"round $round: dmindex_check passes on the unlogged table's index");
}

# The crashes must not leak remote trees: the unlogged index got a new tree
# after each crash, the old one has to go (at the latest with dmindex_gc()).
$node->safe_psql('postgres', 'SELECT dmindex_gc()');
is(memnode_trees($node), $trees_before,
	'no remote tree leaked by the crashes (after dmindex_gc())');

$node->stop;
is(stop_memnode($mn), 0, 'memnode shuts down cleanly');

done_testing();
