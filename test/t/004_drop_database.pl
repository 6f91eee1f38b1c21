# 004_drop_database.pl — no remote tree may outlive its index (DESIGN.md §8,
# src/pg/dmgc.c).
#
# A dmindex index's data lives in a memnode, outside PostgreSQL's files, so
# whatever removes or replaces an index must free its remote tree too, or
# the memnode's memory leaks.  The count of trees on the memnode
# (dmindex_memnodes().trees) is compared before and after: DROP DATABASE,
# DROP TABLE, DROP SCHEMA ... CASCADE, DROP INDEX [CONCURRENTLY] free the
# trees eagerly after commit; a rolled-back or failed CREATE INDEX, and a
# rolled-back TRUNCATE, free their new tree at abort; TRUNCATE, REINDEX
# [CONCURRENTLY] and a CREATE INDEX rolled back to a savepoint leave old
# trees to the collector (the background worker of dmgcworker.c, and
# dmindex_gc()).  A rolled-back
# DROP keeps the tree (the index still works).  A database copied by CREATE
# DATABASE must neither use nor free its template's trees.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode(
	args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);
my $node = new_dmindex_node('dropdb', [$mn]);

sub trees { return memnode_trees($node, $_[0] // 'postgres'); }

my $indexscan = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $base = trees();
is($base, '0', 'no tree on the memnode at the start');

# ---- DROP DATABASE -----------------------------------------------------------

$node->safe_psql('postgres', 'CREATE DATABASE d1');
$node->safe_psql(
	'd1', q{
CREATE EXTENSION dmindex;
CREATE TABLE a (k int);
INSERT INTO a SELECT g FROM generate_series(1, 5000) g;
CREATE INDEX a_k ON a USING dmindex (k);
CREATE TABLE b (k bigint);
INSERT INTO b SELECT g FROM generate_series(1, 100) g;
CREATE INDEX b_k ON b USING dmindex (k);
});
is(trees('d1'), $base + 2, 'two indexes in database d1: two trees');
is(trees(), $base + 2, 'the same count seen from database postgres');

# A copy of d1: its indexes name d1's trees, so it must not use them, and
# dropping them there must not free d1's trees.
$node->safe_psql('postgres', 'CREATE DATABASE d1copy TEMPLATE d1');
my ($state, $err) = query_sqlstate($node, 'd1copy',
	"$indexscan SELECT count(*) FROM a WHERE k < 10");
is($state, 'XX002', 'a copied database refuses to use its template\'s tree');
like($err, qr/REINDEX/, 'and hints to REINDEX');
$node->safe_psql('d1copy', 'DROP INDEX b_k');
$node->safe_psql('d1copy', 'REINDEX INDEX a_k');
is(sql($node, 'd1copy', "$indexscan SELECT count(*) FROM a WHERE k < 10"),
	'9', 'after REINDEX the copy has an index of its own');
is(sql($node, 'd1', "$indexscan SELECT count(*) FROM b WHERE k < 10"),
	'9', 'dropping the copied index did not free the template\'s tree');
is(dmindex_check($node, 'd1', 'b_k'), '100|100|t',
	'the template\'s index still passes dmindex_check');
is(trees(), $base + 3, 'the copy added one tree (its rebuilt index)');
$node->safe_psql('postgres', 'DROP DATABASE d1copy');
is(trees(), $base + 2, 'DROP DATABASE of the copy freed only its own tree');

$node->safe_psql('postgres', 'DROP DATABASE d1');
is(trees(), $base, 'DROP DATABASE frees the trees of its indexes at commit');
is($node->safe_psql('postgres', 'SELECT dmindex_gc()'),
	'0', 'dmindex_gc() finds nothing left to free');

# ---- drops in one database -----------------------------------------------------

$node->safe_psql(
	'postgres', q{
CREATE TABLE keep (k int);
INSERT INTO keep SELECT g FROM generate_series(1, 1000) g;
CREATE INDEX keep_k ON keep USING dmindex (k);
});
$base = trees();

$node->safe_psql(
	'postgres', q{
CREATE TABLE t1 (a int, b int);
INSERT INTO t1 SELECT g, -g FROM generate_series(1, 1000) g;
CREATE INDEX t1_a ON t1 USING dmindex (a);
CREATE INDEX t1_b ON t1 USING dmindex (b);
});
is(trees(), $base + 2, 'two new indexes, two new trees');
$node->safe_psql('postgres', 'DROP TABLE t1');
is(trees(), $base, 'DROP TABLE frees the trees of its indexes');

$node->safe_psql(
	'postgres', q{
CREATE SCHEMA s;
CREATE TABLE s.x (k int);
CREATE INDEX x_k ON s.x USING dmindex (k);
CREATE TABLE s.y (k int, l int);
INSERT INTO s.y SELECT g, g FROM generate_series(1, 100) g;
CREATE INDEX y_k ON s.y USING dmindex (k);
CREATE INDEX y_l ON s.y USING dmindex (l);
});
is(trees(), $base + 3, 'three indexes in schema s');
$node->safe_psql('postgres', 'DROP SCHEMA s CASCADE');
is(trees(), $base, 'DROP SCHEMA CASCADE frees them');

$node->safe_psql('postgres',
	'CREATE TABLE t2 (k int); INSERT INTO t2 SELECT g FROM generate_series(1, 1000) g; CREATE INDEX t2_k ON t2 USING dmindex (k)');
is(trees(), $base + 1, 'one more index');
$node->safe_psql('postgres', 'BEGIN; DROP INDEX t2_k; ROLLBACK');
is(trees(), $base + 1, 'a rolled-back DROP INDEX keeps the tree');
$node->safe_psql('postgres',
	'BEGIN; SAVEPOINT a; DROP TABLE t2; ROLLBACK TO SAVEPOINT a; COMMIT');
is(trees(), $base + 1, 'a DROP TABLE rolled back to a savepoint keeps the tree');
is(sql($node, 'postgres', "$indexscan SELECT count(*) FROM t2 WHERE k <= 10"),
	'10', 'and the index still works');
$node->safe_psql('postgres', 'DROP INDEX CONCURRENTLY t2_k');
is(trees(), $base, 'DROP INDEX CONCURRENTLY frees the tree');

# ---- creations that do not commit --------------------------------------------------

$node->safe_psql('postgres',
	'BEGIN; CREATE INDEX t2_k ON t2 USING dmindex (k); ROLLBACK');
is(trees(), $base, 'a rolled-back CREATE INDEX leaves no tree');

my ($ret, $out, $stderr) = $node->psql('postgres',
	'CREATE INDEX t2_bad ON t2 USING dmindex ((1000 / (k - 500)))');
like($stderr, qr/division by zero/, 'a CREATE INDEX that fails while building');
is(trees(), $base, 'a failed CREATE INDEX leaves no tree');

$node->safe_psql('postgres',
	'BEGIN; CREATE TABLE t3 (k int); CREATE INDEX t3_k ON t3 USING dmindex (k); ROLLBACK');
is(trees(), $base, 'a rolled-back CREATE TABLE + CREATE INDEX leaves no tree');

$node->safe_psql('postgres',
	'BEGIN; SAVEPOINT a; CREATE INDEX t2_k ON t2 USING dmindex (k); ROLLBACK TO SAVEPOINT a; COMMIT'
);
$node->safe_psql('postgres', 'SELECT dmindex_gc()');
is(trees(), $base,
	'a CREATE INDEX rolled back to a savepoint leaves no tree (after dmindex_gc())');

# ---- rewrites: TRUNCATE, REINDEX ----------------------------------------------------

$node->safe_psql('postgres', 'CREATE INDEX t2_k ON t2 USING dmindex (k)');
$base = trees();

$node->safe_psql('postgres', 'BEGIN; TRUNCATE t2; ROLLBACK');
is(trees(), $base, 'a rolled-back TRUNCATE leaves no new tree');
is(sql($node, 'postgres', "$indexscan SELECT count(*) FROM t2 WHERE k <= 10"),
	'10', 'and the index keeps its entries');

$node->safe_psql('postgres', 'TRUNCATE t2');
$node->safe_psql('postgres', 'SELECT dmindex_gc()');
is(trees(), $base, 'TRUNCATE leaves no old tree behind (after dmindex_gc())');
$node->safe_psql('postgres',
	'INSERT INTO t2 SELECT g FROM generate_series(1, 500) g');
is(sql($node, 'postgres', "$indexscan SELECT count(*) FROM t2 WHERE k <= 10"),
	'10', 'the index works after TRUNCATE');

$node->safe_psql('postgres', 'REINDEX INDEX t2_k');
$node->safe_psql('postgres', 'SELECT dmindex_gc()');
is(trees(), $base, 'REINDEX leaves no old tree behind (after dmindex_gc())');

$node->safe_psql('postgres', 'REINDEX TABLE t2');
$node->safe_psql('postgres', 'SELECT dmindex_gc()');
is(trees(), $base, 'REINDEX TABLE leaves no old tree behind (after dmindex_gc())');

$node->safe_psql('postgres', 'REINDEX INDEX CONCURRENTLY t2_k');
$node->safe_psql('postgres', 'SELECT dmindex_gc()');
is(trees(), $base, 'REINDEX CONCURRENTLY leaves no old tree behind');
is(dmindex_check($node, 'postgres', 't2_k'), '500|500|t',
	'the rebuilt index passes dmindex_check');

$node->safe_psql('postgres', 'CREATE INDEX CONCURRENTLY t2_k2 ON t2 USING dmindex (k)');
is(trees(), $base + 1, 'CREATE INDEX CONCURRENTLY makes one tree');
is(dmindex_check($node, 'postgres', 't2_k2'), '500|500|t',
	'the concurrently built index passes dmindex_check');
$node->safe_psql('postgres', 'DROP INDEX t2_k2');
is(trees(), $base, 'and DROP INDEX frees it');

is(sql($node, 'postgres', "$indexscan SELECT count(*) FROM keep WHERE k <= 10"),
	'10', 'an unrelated index survived all of this');
is($node->safe_psql('postgres', 'SELECT dmindex_gc()'),
	'0', 'dmindex_gc() finds nothing left to free at the end');

$node->stop;
is(stop_memnode($mn), 0, 'memnode shuts down cleanly');

done_testing();
