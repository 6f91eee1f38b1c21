# 026_offload_drain.pl — an offloaded write whose client gave up, still
# running on the memnode, must not leave a stale copy in the node cache
# (docs/design.md, "Writes of unknown outcome"; src/pg/dmmeta.c settles the
# drains at every index open).
#
# Why: a one-row INSERT's flush at commit is offloaded (dmindex.offload =
# always); the memnode runs it late (its test hook makes every offloaded
# write wait 5 s; the backend gives up after dmindex.op_timeout = 1 s and
# the transaction aborts, its heap tuple dead).  Another session then reads
# the leaf and caches it.  Without the drain, that copy lacks the entry that
# lands a moment later, and owned copies are trusted for good: VACUUM's
# delete through the cache finds nothing, the entry stays in remote memory,
# the heap reuses the dead tuple's tid for another key, and once the copy is
# gone (a restart) an index scan for the aborted key returns that other row.
# With the drain, the reader's index open waits until the write has run.
# Compared with a seqscan on the same data; dmindex_check afterwards.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use DmindexTest;

$ENV{DMINDEX_MEMNODE_TEST_WRITE_DELAY_MS} = '5000';
my $mn = start_memnode(args => [ '--size', '128M', '--shm', '--chunk-size', '1M' ]);
delete $ENV{DMINDEX_MEMNODE_TEST_WRITE_DELAY_MS};

my $node = new_dmindex_node('drain', [$mn],
	conf => "autovacuum = off\n"
	  . "dmindex.transport = tcp\n"
	  . "dmindex.offload = off\n"
	  . "dmindex.cache_policy = dex\n"
	  . "dmindex.cache_size = 4MB\n"
	  . "dmindex.cache_frame_size = 256\n"
	  . "dmindex.cache_leaf_admission = 1.0\n");

# one heap page: ten rows at (0,1)..(0,10); the aborted insert gets (0,11)
$node->safe_psql('postgres', q{
CREATE TABLE t (k int8, v int) WITH (autovacuum_enabled = off);
INSERT INTO t SELECT g * 10, 0 FROM generate_series(1, 10) g;
CREATE INDEX t_k_dm ON t USING dmindex (k) WITH (node_size = 256);
});
$node->restart;    # an empty cache: the writer's path is not cached, so it offloads

my $key = 55;      # the aborted row's key
my $other = 77;    # the key of the row that reuses its tid

# the writer: its flush at commit is offloaded, and it gives up after 1 s
my $t0 = time;
my ($state, $err) = query_sqlstate($node, 'postgres',
	"SET dmindex.offload = always; SET dmindex.op_timeout = 1000; INSERT INTO t VALUES ($key, 1)");
my $gave_up = time - $t0;
isnt($state, '', "the offloaded insert's commit fails when the memnode does not answer in time ($state)");
like($err, qr/memory node|memnode/, '... naming the memory node');
ok($gave_up < 4.5, sprintf('... before the memnode ran the write (%.1f s)', $gave_up));
is($node->safe_psql('postgres', "SELECT count(*) FROM t WHERE k = $key"), '0', 'the row is not there (aborted)');

# the reader, while the write still waits on the memnode: it reads the leaf
# and caches it; its index open drains the write first
my $t1 = time;
is($node->safe_psql('postgres', "$idx_only SELECT count(*) FROM t WHERE k = $key"), '0',
	'an index scan for the key finds no visible row');
my $since = time - $t0;
ok($t1 - $t0 < 5, sprintf('the reader came while the write still waited (%.1f s after the insert began)', $t1 - $t0));
ok($since >= 4.5, sprintf('... and its index open waited until the write had run (%.1f s after the insert began)', $since));

sleep(5.5 - (time - $t0)) if time - $t0 < 5.5;    # the write has landed by now

# VACUUM removes the dead tuple and its index entry; the heap reuses the tid
$node->safe_psql('postgres', 'VACUUM (INDEX_CLEANUP ON) t');
$node->safe_psql('postgres', "INSERT INTO t VALUES ($other, 2)");
is($node->safe_psql('postgres', "SELECT ctid FROM t WHERE k = $other"), '(0,11)',
	'the new row took the aborted row\'s tid (0,11)');

# a restart drops every cached copy: the index answers from remote memory
$node->restart;
for my $k ($key, $other, 10, 100)
{
	my $seq = $node->safe_psql('postgres', "$seq_only SELECT count(*) || ':' || coalesce(sum(v), 0) FROM t WHERE k = $k");
	my $idx = $node->safe_psql('postgres', "$idx_only SELECT count(*) || ':' || coalesce(sum(v), 0) FROM t WHERE k = $k");
	is($idx, $seq, "key $k: the index scan answers as the seqscan ($seq)");
}
like(dmindex_check($node, 'postgres', 't_k_dm', 1), qr/\|t$/, 'dmindex_check(t_k_dm, true) passes');

$node->stop;
is(stop_memnode($mn), 0, 'memnode exits cleanly');
done_testing();
