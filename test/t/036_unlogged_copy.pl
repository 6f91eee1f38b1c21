# 036_unlogged_copy.pl — an unlogged table's dmindex
# index on a server whose data directory came from a base backup: the reset
# index (UNLOGGED_INIT, dmmeta.c) frees the trees of its relfilenode first
# (dmindex_gc_free_relfilenode), and those include the original's tree,
# which this server may not free (dmindex_writer_may_free).
#  1. a backup restored as a primary on the original's timeline (the
#     original still running): the copy must be able to use its own
#     (empty, rebuilt) unlogged index, and the original's must be intact;
#     Also a logged index the copy REINDEXes (as the 55000 hint asks): the
#     copy's collector then meets the original's tree, which its catalog no
#     longer names; it must skip it (not its garbage), not fail every pass.
#  2. a standby promoted while the old primary's claim is still valid
#     (killed, lease not yet run out): the same.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);
my $orig = new_dmindex_node('orig', [$mn], init => { allows_streaming => 1 },
	conf => "autovacuum = off\ndmindex.instance_id = 0\ndmindex.instance_lease = 600\n");
$orig->safe_psql('postgres', q{
CREATE UNLOGGED TABLE u (id bigserial PRIMARY KEY, k int);
INSERT INTO u (k) SELECT g FROM generate_series(1, 2000) g;
CREATE INDEX u_k_dm ON u USING dmindex (k);
CREATE TABLE l (id bigserial PRIMARY KEY, k int);
INSERT INTO l (k) SELECT g FROM generate_series(1, 2000) g;
CREATE INDEX l_k_dm ON l USING dmindex (k);
});
$orig->backup('b');
my $conds = [ 'k <= 100', 'k > 1500', 'k >= 0' ];

# ---- 1. a copy on the same timeline while the original runs
my $copy = PostgreSQL::Test::Cluster->new('copy');
$copy->init_from_backup($orig, 'b');
$copy->append_conf('postgresql.conf', "dmindex.instance_id = 3\n");
$copy->start;
is(sql($copy, 'postgres', 'SELECT count(*) FROM u'), '0', 'the copy\'s unlogged table is empty');
is(sql($copy, 'postgres', "INSERT INTO u (k) SELECT g FROM generate_series(1, 50) g"), '',
	'the copy writes its unlogged table (its index reset)');
ok(index_matches_seqscan($copy, 'u', $conds, 'copy'), 'the copy\'s unlogged index = its heap');
ok(index_matches_seqscan($orig, 'u', $conds, 'orig'), 'the original\'s unlogged index = its heap');
$copy->safe_psql('postgres', 'REINDEX INDEX l_k_dm');
like(sql($copy, 'postgres', 'SELECT dmindex_gc()'), qr/^\d+$/, 'the copy\'s collector runs (skips the original\'s tree)');
ok(index_matches_seqscan($copy, 'l', $conds, 'copy'), 'the copy\'s reindexed index = its heap');
ok(index_matches_seqscan($orig, 'l', $conds, 'orig'), 'the original\'s index = its heap');
$copy->stop;

# ---- 2. a standby promoted, the old primary killed (its claim still valid)
my $s = streaming_standby($orig, 'b', 's', "dmindex.instance_id = 4\n");
$orig->stop('immediate');
$s->promote;
$s->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die;
is(sql($s, 'postgres', "INSERT INTO u (k) SELECT g FROM generate_series(1, 70) g"), '',
	'the promoted standby writes its unlogged table (its index reset)');
ok(index_matches_seqscan($s, 'u', $conds, 'promoted'), 'its unlogged index = its heap');
$s->stop;
done_testing();
