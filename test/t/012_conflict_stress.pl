# 012_conflict_stress.pl — INSERT ... ON CONFLICT racing itself, savepoints
# and VACUUM, then every key's answer through the dmindex indexes compared
# with the heap.
#
# Four pgbench clients upsert into a small, hot key range (DO NOTHING and DO
# UPDATE, one row and many), so speculative insertions often lose and are
# super-deleted after dmindex has buffered their entries; they do so in
# transactions that stay open a moment and roll back to savepoints, while
# a fifth client VACUUMs every 50 ms (freeing the tids of super-deleted
# and deleted tuples, which new rows take) and deletes make room.  The
# table has a unique btree (the arbiter) and dmindex indexes on the same
# column and on another one.  Afterwards no client may have failed;
# dmindex_check(idx, true) must pass (no missing, no stale entry); for
# every key, the rows an index scan and a bitmap scan through each dmindex
# index return must be exactly those a sequential scan returns (EXCEPT
# ALL both ways).
#
# 30 seconds by default; DMINDEX_STRESS_SECONDS sets another duration
# (several minutes for a long run).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;
use DmindexWorkload;

my $duration = $ENV{DMINDEX_STRESS_SECONDS} // 30;
# keys 1..$keys initially and from most scripts; race.sql uses 3001..5001
my $keys = 3000;
my $max_key = 5001;

my $mn = start_memnode(
	args => [ '--size', '512M', '--shm', '--chunk-size', '1M' ]);
my $node = new_dmindex_node('conflict', [$mn],
	conf => "max_connections = 30\nautovacuum = off\n");

$node->safe_psql(
	'postgres', qq{
CREATE TABLE cs (u int NOT NULL, v int, n int DEFAULT 0, pad text) WITH (autovacuum_enabled = false);
INSERT INTO cs (u, v, pad) SELECT g, g % 97, 'initial' FROM generate_series(1, $keys, 3) g;
CREATE INDEX cs_u_dm ON cs USING dmindex (u);
CREATE INDEX cs_v_dm ON cs USING dmindex (v) WITH (node_size = 512);
-- evaluated after the dmindex indexes received a row's entries and before
-- the unique btree checks it (indexes are inserted into in OID order): a
-- wider window for a concurrent insert of the same key to win the race
CREATE FUNCTION cs_slow(u int) RETURNS int LANGUAGE plpgsql IMMUTABLE
	AS 'BEGIN PERFORM pg_sleep(0.002); RETURN u; END';
CREATE INDEX cs_slow_bt ON cs (cs_slow(u));
CREATE UNIQUE INDEX cs_u_unique ON cs (u);
VACUUM ANALYZE cs;
});

my %scripts = (
	# one row, mostly hot keys
	'nothing.sql' => qq{
\\set u random_exponential(1, $keys, 5)
\\set v random(0, 1000)
INSERT INTO cs (u, v, pad) VALUES (:u, :v, 'nothing') ON CONFLICT (u) DO NOTHING;
},
	'update.sql' => qq{
\\set u random_exponential(1, $keys, 5)
\\set v random(0, 1000)
INSERT INTO cs (u, v, pad) VALUES (:u, :v, 'update') ON CONFLICT (u) DO UPDATE SET v = excluded.v, n = cs.n + 1;
},
	# many rows in one statement, in a transaction that stays open a moment
	# (a loser's super-deleted tuple can be vacuumed before it commits) and
	# rolls a part back
	'batch.sql' => qq{
\\set u random(1, $keys - 20)
\\set v random(0, 1000)
BEGIN;
INSERT INTO cs (u, v, pad) SELECT :u + g, :v + g, 'batch' FROM generate_series(0, 9) g ON CONFLICT (u) DO NOTHING;
SELECT pg_sleep(0.02);
SAVEPOINT s;
INSERT INTO cs (u, v, pad) SELECT :u + g, :v, 'savepoint' FROM generate_series(5, 14) g
	ON CONFLICT (u) DO UPDATE SET v = excluded.v;
ROLLBACK TO SAVEPOINT s;
INSERT INTO cs (u, v, pad) SELECT :u + g, :v - g, 'after' FROM generate_series(10, 19) g
	ON CONFLICT (u) DO UPDATE SET n = cs.n + 1;
SELECT pg_sleep(0.02);
COMMIT;
},
	# the hottest keys, deleted and inserted again by every client at once,
	# one transaction open a moment across its upserts
	'hot.sql' => q{
\set u random(1, 40)
DELETE FROM cs WHERE u = :u;
BEGIN;
INSERT INTO cs (u, v, pad) VALUES (:u, 1, 'hot') ON CONFLICT (u) DO NOTHING;
INSERT INTO cs (u, v, pad) VALUES (:u + 1, 2, 'hot') ON CONFLICT (u) DO UPDATE SET n = cs.n + 1;
SELECT pg_sleep(0.1);
COMMIT;
},
	# every client upserts the same fresh key (the clock's current 50 ms)
	# at once: losers of the speculative insertion race are super-deleted,
	# their transactions stay open while VACUUM frees the tids and others
	# insert rows that take them
	'race.sql' => q{
SELECT (extract(epoch FROM clock_timestamp()) * 20)::bigint % 2000 + 3001 AS u \gset
BEGIN;
INSERT INTO cs (u, v, pad) VALUES (:u, 3, 'race') ON CONFLICT (u) DO NOTHING;
SELECT pg_sleep(0.05);
INSERT INTO cs (u, v, pad) VALUES (:u + 1, 3, 'race') ON CONFLICT (u) DO UPDATE SET n = cs.n + 1;
COMMIT;
},
	# room for new rows (and tids for VACUUM to free)
	'delete.sql' => qq{
\\set u random_exponential(1, $keys, 5)
DELETE FROM cs WHERE u BETWEEN :u AND :u + 4;
},);
my %weights = (
	'nothing.sql' => 4,
	'update.sql'  => 3,
	'batch.sql'   => 2,
	'hot.sql'     => 3,
	'delete.sql'  => 3,
	'race.sql'    => 4,);

run_pgbench_with_vacuum($node, 'cs', \%scripts, \%weights, duration => $duration, pause => '50 ms');
note 'rows: ' . $node->safe_psql('postgres', 'SELECT count(*) FROM cs');

# ---- afterwards: heap = index ------------------------------------------------------

for my $idx ('cs_u_dm', 'cs_v_dm')
{
	like(dmindex_check($node, 'postgres', $idx), qr/^\d+\|\d+\|t$/,
		"dmindex_check($idx, true) passes");
}

# The rows of "col = key" for every key: through the index (the unique
# btree dropped inside the transaction, so the planner takes cs_u_dm)
# against a sequential scan, as (key, ctid, u, v) rows; EXCEPT ALL both
# ways must be empty.
my $modes = {
	'index scan' =>
	  'SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off;',
	'bitmap scan' =>
	  'SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; SET LOCAL enable_indexonlyscan = off;',
};
my $seq = 'SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off;';
for my $col ('u', 'v')
{
	my $idx = "cs_${col}_dm";
	my $range = $col eq 'u' ? "1, $max_key" : '-100, 1100';
	my $per_key = "SELECT g, c.tid, c.u, c.v FROM generate_series($range) g, LATERAL (SELECT ctid::text AS tid, u, v FROM cs WHERE $col = g) c";
	for my $mode (sort keys %$modes)
	{
		my $plan = $node->safe_psql('postgres',
			"BEGIN; DROP INDEX cs_u_unique; $modes->{$mode} EXPLAIN (COSTS OFF) $per_key; ROLLBACK");
		like($plan, qr/\Q$idx\E/, "$col, $mode: the plan uses $idx");
		my $res = sql(
			$node, 'postgres', qq{
BEGIN;
DROP INDEX cs_u_unique;
$modes->{$mode}
CREATE TEMP TABLE via ON COMMIT DROP AS $per_key;
SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = on;
CREATE TEMP TABLE heap ON COMMIT DROP AS $per_key;
SELECT (SELECT count(*) FROM heap) || ' rows, '
	|| (SELECT count(*) FROM (TABLE via EXCEPT ALL TABLE heap) x) || ' only through the index, '
	|| (SELECT count(*) FROM (TABLE heap EXCEPT ALL TABLE via) x) || ' only in the heap';
ROLLBACK;
});
		like($res, qr/^\d+ rows, 0 only through the index, 0 only in the heap$/,
			"$col, $mode: every key's rows through $idx are the heap's ($res)");
	}
}
my $total = $node->safe_psql('postgres', 'SELECT count(*) FROM cs');
is( $node->safe_psql('postgres',
		"BEGIN; DROP INDEX cs_u_unique; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; "
		  . "SELECT count(*) FROM cs WHERE u >= 0; ROLLBACK"),
	$total,
	'a whole-range scan of cs_u_dm counts the heap\'s rows');

$node->stop;
is(stop_memnode($mn), 0, 'memnode shuts down cleanly');

done_testing();
