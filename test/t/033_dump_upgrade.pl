# 033_dump_upgrade.pl — pg_dump / pg_restore and pg_upgrade of a database
# with dmindex indexes (docs/pg-paths.md "pg_dump / pg_restore",
# "pg_upgrade").
#
# Why: both are how operators move and upgrade databases.  A dump holds the
# index definition, so a restore builds a new remote tree: its answers must
# equal the heap's.  pg_upgrade copies the index files, metapages included,
# into a cluster with another system identifier: a metapage naming the old
# cluster's tree must never answer for the new cluster's heap unchecked; the
# index fails with a clear error (XX002, hint REINDEX) until REINDEX, and
# after REINDEX answers exactly.  The old cluster keeps its tree (pg_upgrade
# in copy mode leaves it usable).
#
# 1. pg_dump -Fc of a database with a dmindex index (options, an
#    expression-free multi-type schema: int8 and float8 keys), pg_restore
#    into a new database: indexes built, each = seqscan, dmindex_check.
# 2. pg_upgrade (copy mode, 15 -> 15) of that cluster: the index in the new
#    cluster is refused until REINDEX; after REINDEX = seqscan; the old
#    cluster, started again, still answers from its tree.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);
my $old = new_dmindex_node('old', [$mn], conf => "autovacuum = off\n");

$old->safe_psql('postgres', q{
CREATE TABLE t (id bigserial, k int8, f float8, pad text);
INSERT INTO t (k, f, pad) SELECT (g * 7919) % 50000, g / 7.0, 'x' FROM generate_series(1, 20000) g;
INSERT INTO t (k, f, pad) VALUES (NULL, NULL, 'null');
CREATE INDEX t_k ON t USING dmindex (k) WITH (node_size = 256);
CREATE INDEX t_f ON t USING dmindex (f);
DELETE FROM t WHERE k % 17 = 0;
VACUUM ANALYZE t;
});
my @conds = ('k < 100', 'k BETWEEN 20000 AND 21000', 'k IS NULL', 'k = 7919', 'f > 2000', 'f BETWEEN 10 AND 11.5');

# ---- 1. pg_dump / pg_restore -------------------------------------------------------
my $dump = $old->basedir . '/db.dump';
$old->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $old->connstr('postgres') ], 'pg_dump -Fc');
$old->safe_psql('postgres', 'CREATE DATABASE restored');
$old->command_ok([ 'pg_restore', '-d', $old->connstr('restored'), $dump ], 'pg_restore into a new database');
is($old->safe_psql('restored', "SELECT string_agg(indexrelid::regclass || ':' || am.amname, ',' ORDER BY indexrelid::regclass::text)
	FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam WHERE indrelid = 't'::regclass"),
	't_f:dmindex,t_k:dmindex', 'the restored table has both dmindex indexes');
is($old->safe_psql('restored', "SELECT reloptions FROM pg_class WHERE relname = 't_k'"), '{node_size=256}',
	'... with their options');
ok(index_matches_seqscan($old, 't', \@conds, 'restored', '', 'restored'),
	'every condition through the restored indexes equals the seqscan');
like(dmindex_check($old, 'restored', 't_k', 1), qr/\|t$/, 'dmindex_check passes on the restored index');
is($old->safe_psql('postgres', "$DmindexTest::idx_only SELECT count(*) FROM t WHERE k < 100"),
	$old->safe_psql('postgres', "$DmindexTest::seq_only SELECT count(*) FROM t WHERE k < 100"),
	'the original database is unchanged');

# ---- 2. pg_upgrade -------------------------------------------------------------------
my $old_answer = $old->safe_psql('postgres', "$DmindexTest::idx_only SELECT count(*) || ':' || sum(id) FROM t WHERE k BETWEEN 1000 AND 9000");
$old->safe_psql('postgres', 'DROP DATABASE restored');
$old->stop;
my $new = PostgreSQL::Test::Cluster->new('new');
$new->init;
$new->append_conf('postgresql.conf', "shared_preload_libraries = 'dmindex'\ndmindex.memnodes = '$mn->{address}'\nautovacuum = off\n");
my $bindir = $old->config_data('--bindir');
my $work = PostgreSQL::Test::Utils::tempdir();
my $rc = system("cd $work && pg_upgrade --no-sync -d " . $old->data_dir . ' -D ' . $new->data_dir
	  . " -b $bindir -B $bindir -s " . $new->host . ' -p ' . $old->port . ' -P ' . $new->port
	  . " >$work/upgrade.out 2>&1");
is($rc, 0, 'pg_upgrade (copy mode) succeeds') or diag(slurp_file("$work/upgrade.out"));
$new->start;
my ($state, $err) = query_sqlstate($new, 'postgres', "$DmindexTest::idx_only SELECT count(*) FROM t WHERE k < 100");
is($state, 'XX002', 'the upgraded cluster refuses the index copied from the old one (XX002)');
like($err, qr/HINT:.*REINDEX/, '... with a hint to REINDEX');
$new->safe_psql('postgres', 'REINDEX TABLE t');
ok(index_matches_seqscan($new, 't', \@conds, 'upgraded, after REINDEX'), 'after REINDEX the indexes equal the heap');
like(dmindex_check($new, 'postgres', 't_k', 1), qr/\|t$/, 'dmindex_check passes after the upgrade and REINDEX');
$new->stop;

# copy mode: the old cluster still runs on its own tree
$old->start;
is($old->safe_psql('postgres', "$DmindexTest::idx_only SELECT count(*) || ':' || sum(id) FROM t WHERE k BETWEEN 1000 AND 9000"),
	$old_answer, 'the old cluster still answers from its tree');
like(dmindex_check($old, 'postgres', 't_k', 1), qr/\|t$/, 'and its index passes dmindex_check');
$old->stop;

is(stop_memnode($mn), 0, 'memnode shuts down cleanly');
done_testing();
