# 010_prepared_restart.pl — DROP INDEX and CREATE INDEX in prepared
# transactions whose outcome is decided after a server restart.
#
# dmgc.c frees a dropped index's remote tree when the dropping transaction
# commits, and a created one when the creating transaction aborts.  A
# prepared transaction is decided later by COMMIT/ROLLBACK PREPARED, which
# may come after a restart (the transaction is recovered from its state
# file; the memnode keeps running).  So: nothing may be freed at PREPARE or
# by later transactions of the session that prepared (sql/am_prepared.sql
# tests that without a restart; here the session ends with the restart);
# ROLLBACK PREPARED of a drop and COMMIT PREPARED of a creation must leave a
# working index; COMMIT PREPARED of a drop and ROLLBACK PREPARED of a
# creation must leave no tree behind once the collector (dmindex_gc()) ran.
# The collector itself must keep the tree of a prepared creation while it
# is undecided, also after the restart.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode();
my $node = new_dmindex_node('prepared', [$mn],
	conf => "max_prepared_transactions = 10\nautovacuum = off\n");

sub trees { return memnode_trees($node); }
my $indexscan = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';

# count(*), sum(id) of "WHERE cond" through index (forced) and by a seqscan
sub agree
{
	my ($idx, $cond) = @_;
	my $q = "SELECT count(*) || '/' || coalesce(sum(id), 0) FROM p WHERE $cond";
	my $plan = sql($node, 'postgres', "$indexscan EXPLAIN (COSTS OFF) $q");
	my $via = sql($node, 'postgres', "$indexscan $q");
	my $seq = sql($node, 'postgres',
		"SET enable_indexscan = off; SET enable_bitmapscan = off; $q");
	return ($plan =~ /using \Q$idx\E / ? '' : "plan does not use $idx: $plan")
	  . ($via eq $seq ? "same ($seq)" : "index: $via, heap: $seq");
}

$node->safe_psql(
	'postgres', q{
CREATE TABLE p (id int, k int4, j int8);
INSERT INTO p SELECT g, g % 100, g % 7 FROM generate_series(1, 2000) g;
CREATE INDEX p_k ON p USING dmindex (k);
CREATE TABLE other (x int);
});
my $base = trees();
is($base, '1', 'one index, one tree');

# ---- DROP INDEX prepared; a commit and an abort in the session; restart;
# ---- ROLLBACK PREPARED: the index must still work

$node->safe_psql(
	'postgres', q{
BEGIN;
DROP INDEX p_k;
PREPARE TRANSACTION 'drop_k';
INSERT INTO other VALUES (1);
BEGIN;
INSERT INTO other VALUES (2);
ROLLBACK;
});
is(trees(), $base, 'the tree of an index dropped by a prepared transaction stays');
$node->restart;
is(trees(), $base, 'and stays over the restart');
is($node->safe_psql('postgres', 'SELECT gid FROM pg_prepared_xacts'),
	'drop_k', 'the prepared transaction survived the restart');
$node->safe_psql('postgres', "ROLLBACK PREPARED 'drop_k'");
is(trees(), $base, 'ROLLBACK PREPARED keeps the tree');
is(agree('p_k', 'k = 42'), 'same (20/19840)', 'the index answers like the heap after ROLLBACK PREPARED');
is(sql($node, 'postgres', 'INSERT INTO p VALUES (2001, 42, 0)'), '', 'a new row is inserted');
is(agree('p_k', 'k = 42'), 'same (21/21841)', 'and takes new rows');
is(dmindex_check($node, 'postgres', 'p_k'), '2001|2001|t', 'dmindex_check passes');

# ---- CREATE INDEX prepared; an abort in the session; restart; the
# ---- collector runs; COMMIT PREPARED: the index must work

my ($ret, $out, $err) = $node->psql(
	'postgres', q{
BEGIN;
CREATE INDEX p_j ON p USING dmindex (j);
PREPARE TRANSACTION 'create_j';
SELECT 1 / 0;
});
like($err, qr/division by zero/, 'a transaction of the session that prepared aborts');
is(trees(), $base + 1, 'the tree of an index created by a prepared transaction stays after an abort in the session');
$node->restart;
$node->safe_psql('postgres', 'SELECT dmindex_gc()');
is(trees(), $base + 1, 'the collector keeps it after the restart (its creator is undecided)');
$node->safe_psql('postgres', "COMMIT PREPARED 'create_j'");
is(agree('p_j', 'j = 3'), 'same (286/286143)', 'the index answers like the heap after COMMIT PREPARED');
is(dmindex_check($node, 'postgres', 'p_j'), '2001|2001|t', 'dmindex_check passes');
$base = trees();

# ---- the other two outcomes: the trees must go.  (The creation is on
# ---- another table: a prepared CREATE INDEX holds a lock on its table
# ---- that DROP INDEX would wait for.  And dmindex_gc() runs only while
# ---- no DROP is prepared: it opens every dmindex index, and would wait for
# ---- the lock the prepared DROP holds until COMMIT/ROLLBACK PREPARED.)

$node->safe_psql(
	'postgres', q{
CREATE TABLE q (k int4);
INSERT INTO q SELECT g FROM generate_series(1, 500) g;
BEGIN;
CREATE INDEX q_k ON q USING dmindex (k);
PREPARE TRANSACTION 'create_q';
});
$node->restart;
$node->safe_psql('postgres', 'SELECT dmindex_gc()');
is(trees(), $base + 1, 'the collector keeps the tree of an undecided creation');
$node->safe_psql(
	'postgres', q{
BEGIN;
DROP INDEX p_j;
PREPARE TRANSACTION 'drop_j';
INSERT INTO other VALUES (3);
});
$node->restart;
is(trees(), $base + 1, 'a prepared drop and a prepared creation over a restart: nothing freed');
$node->safe_psql('postgres', "COMMIT PREPARED 'drop_j'");
$node->safe_psql('postgres', "ROLLBACK PREPARED 'create_q'");
$node->safe_psql('postgres', 'SELECT dmindex_gc()');
is(trees(), $base - 1,
	'after COMMIT PREPARED of the drop and ROLLBACK PREPARED of the creation, both trees are freed');
is(agree('p_k', 'k BETWEEN 10 AND 12'), 'same (60/57660)', 'the remaining index answers like the heap');
is(dmindex_check($node, 'postgres', 'p_k'), '2001|2001|t', 'and passes dmindex_check');
is($node->safe_psql('postgres', 'SELECT dmindex_gc()'), '0', 'nothing left to collect');

$node->stop;
is(stop_memnode($mn), 0, 'memnode shuts down cleanly');

done_testing();
