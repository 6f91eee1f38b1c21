# 027_tree_errors.pl — an error of a remote tree operation names what
# failed: the memnode that refused (its address), never memnode "unknown".
#
# Why: dmindex_tree_error (src/pg/dmmeta.c) handed every status it had no
# case of to the transport's report with no address, so an index on a
# full memnode failed with 'memnode "unknown" has no free memory', and an
# error of the tree itself (not of any memnode) was reported as a request
# of memnode "unknown" with whatever the client's last message was.  Now
# the memnode is the one the client's message names, and an error of the
# tree itself is reported as the index's, with the tree's message.
#
# A memnode of 16 MiB in 64 KiB chunks fills up under inserts: the error
# must have SQLSTATE 53000 and name 127.0.0.1:PORT.  Afterwards the index
# still answers like a seq scan for what was committed.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '16M', '--chunk-size', '64K' ]);
my $node = new_dmindex_node('tree_errors', [$mn], conf => "autovacuum = off\n");

$node->safe_psql('postgres', q{
	CREATE TABLE t (k bigint);
	CREATE INDEX t_dm ON t USING dmindex (k);
});

# one transaction a batch, until the memnode is full
my ($ret, $out, $err);
my $batches = 0;
for my $b (0 .. 2000)
{
	($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nINSERT INTO t SELECT g FROM generate_series($b * 20000, $b * 20000 + 19999) g");
	last if $ret != 0;
	$batches++;
}
isnt($ret, 0, "inserts fail once the memnode is full (after $batches batches of 20000 rows)");
note $err;
like($err, qr/53000/, '... with SQLSTATE 53000 (insufficient resources)');
like($err, qr/memnode "127\.0\.0\.1:$mn->{port}" has no free memory/, '... naming the memnode that is full');
unlike($err, qr/"unknown"/, '... not memnode "unknown"');

is( $node->safe_psql('postgres', q{
	SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*) FROM t WHERE k >= 0}),
	$batches * 20000,
	'the index holds every committed row');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $batches * 20000, '... as the heap does');

$node->stop;
stop_memnode($mn);
done_testing();
