# 015_collector.pl — orphaned remote trees are collected by a background
# worker, and VACUUM of one table no longer touches other indexes.
#
# Why: VACUUM used to run the whole-database collector, which opens every
# dmindex index of the database; DDL holding a lock on an unrelated index
# then made a VACUUM of another table wait (or fail).  Orphans — trees whose
# index is gone: a CREATE INDEX rolled back to a savepoint, a prepared
# DROP INDEX that commits later — are now freed by the collector worker
# every dmindex.gc_naptime seconds, which waits for no lock (an index under
# DDL makes it try again next round) and never runs on a standby.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '128M', '--shm', '--chunk-size', '1M' ]);
my $node = new_dmindex_node('collector', [$mn],
	conf => "dmindex.gc_naptime = 1\nmax_prepared_transactions = 5\n");

$node->safe_psql('postgres', q{
CREATE TABLE a (k int4);
INSERT INTO a SELECT g FROM generate_series(1, 3000) g;
CREATE INDEX a_k ON a USING dmindex (k);
CREATE TABLE b (k int4);
INSERT INTO b SELECT g FROM generate_series(1, 3000) g;
CREATE INDEX b_k ON b USING dmindex (k);
});

# Wait up to $secs for memnode_trees() to become $want.
sub trees_become
{
	my ($want, $secs) = @_;
	my $deadline = time + $secs;
	my $now;
	while (1)
	{
		$now = memnode_trees($node);
		return $now if $now == $want || time > $deadline;
		sleep 0.2;
	}
}

my $base = memnode_trees($node);
is($base, 2, 'two indexes, two trees');

# A CREATE INDEX rolled back to a savepoint leaves an orphan that only the
# collector frees (the transaction goes on).
$node->safe_psql('postgres',
	'BEGIN; SAVEPOINT s; CREATE INDEX a_k2 ON a USING dmindex (k); ROLLBACK TO s; COMMIT');
is(memnode_trees($node), $base + 1, 'a CREATE INDEX rolled back to a savepoint leaves a tree');
is(trees_become($base, 30), $base, 'the collector worker frees it');

# VACUUM of one table while DDL holds an exclusive lock on an unrelated
# dmindex index (an uncommitted DROP INDEX): VACUUM must not wait for it.
my $ddl = $node->background_psql('postgres');
$ddl->query_safe('BEGIN; DROP INDEX b_k');
$node->safe_psql('postgres', 'DELETE FROM a WHERE k <= 100');
my $t0 = time;
my ($state, $err) = query_sqlstate($node, 'postgres', "SET statement_timeout = '20s'; VACUUM a");
my $elapsed = time - $t0;
is($state, '', 'VACUUM of a table is not blocked by a lock on an unrelated dmindex index')
  or diag $err;
ok($elapsed < 15, sprintf('... and finishes promptly (%.1f s)', $elapsed));

# An orphan made while b is locked: the collector may not open b's index,
# so it waits for the next round instead of blocking; after the lock goes
# it is freed.
$node->safe_psql('postgres',
	'BEGIN; SAVEPOINT s; CREATE INDEX a_k3 ON a USING dmindex (k); ROLLBACK TO s; COMMIT');
sleep 3;
is(memnode_trees($node), $base + 1, 'the collector leaves the orphan alone while an index is under DDL');
my $blocked = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dmindex collector' AND wait_event_type = 'Lock'");
is($blocked, '0', '... and does not wait for the lock');
$ddl->query_safe('ROLLBACK');
$ddl->quit;
is(trees_become($base, 30), $base, '... and frees it once the lock is gone');

# the DDL's open transaction kept the deleted rows alive; now VACUUM removes their entries
$node->safe_psql('postgres', 'VACUUM a');
is(dmindex_check($node, 'postgres', 'a_k'), '2900|2900|t', 'VACUUM removed the dead entries of its own index');

# A prepared DROP INDEX frees nothing until it commits; a later commit in
# the same session must not free it either.
$node->safe_psql('postgres', 'BEGIN; DROP INDEX b_k; PREPARE TRANSACTION \'d\'');
$node->safe_psql('postgres', 'CREATE TABLE c (k int4)');
sleep 3;
is(memnode_trees($node), $base, 'a prepared DROP INDEX keeps the tree (collector and later commits alike)');
my ($gstate, $gerr, $gret, $gout) = query_sqlstate($node, 'postgres',
	"SET statement_timeout = '10s'; SELECT dmindex_gc()");
is("$gstate/$gout", '/0', 'dmindex_gc() does not wait for the prepared transaction\'s lock');
like($gerr, qr/index "b_k" is locked/, '... and says why it collected nothing');
$node->restart;
sleep 3;
is(memnode_trees($node), $base, '... also across a restart while prepared');
$node->safe_psql('postgres', "COMMIT PREPARED 'd'");
is(trees_become($base - 1, 30), $base - 1, 'after COMMIT PREPARED the collector frees the tree');

# the surviving index is intact
is(dmindex_check($node, 'postgres', 'a_k'), '2900|2900|t', 'dmindex_check passes');

# With dmindex.gc_naptime = 0 nothing is collected in the background, and
# dmindex_gc() still works.
$node->append_conf('postgresql.conf', "dmindex.gc_naptime = 0\n");
$node->reload;
sleep 1;
$node->safe_psql('postgres',
	'BEGIN; SAVEPOINT s; CREATE INDEX a_k4 ON a USING dmindex (k); ROLLBACK TO s; COMMIT');
sleep 3;
is(memnode_trees($node), $base, 'gc_naptime = 0: the orphan stays');
is($node->safe_psql('postgres', 'SELECT dmindex_gc()'), '1', 'dmindex_gc() frees it on demand');
is(memnode_trees($node), $base - 1, '... and it is gone');

$node->stop;
stop_memnode($mn);
done_testing();
