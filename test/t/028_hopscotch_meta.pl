# 028_hopscotch_meta.pl — the leaf format an index's tree has is the one its
# build chose, whatever the session that uses it later has set, and the
# metapage's record of it is checked (docs/design.md §5.1, src/pg/dmmeta.c).
#
# 1. An unlogged table's index built with dmindex.default_leaf_format =
#    hopscotch (no option): after a crash the table is empty and the first
#    user makes the index a fresh tree.  That user's session has set
#    sorted leaves as its default; the new tree must still have hopscotch
#    leaves (the init fork recorded the build's choice), and answer like a
#    seqscan.
# 2. A metapage whose recorded format differs from its tree's (patched on
#    disk while the server is down): every use is XX002 with a hint to
#    REINDEX, never an answer; REINDEX repairs it.  The same restart with
#    the metapage untouched works (the control).
# 3. The same for the key format (docs/design.md §5.2): a text index's
#    metapage patched to say FIXED8 keys, and an int8 index's to say byte
#    keys — XX002 naming the three records (metapage, tree, definition),
#    never an answer read with the wrong key format; REINDEX repairs both.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode();
my $node = new_dmindex_node('hopmeta', [$mn], conf => "autovacuum = off\n");

# ---- 1. an unlogged index across a crash ---------------------------------
$node->safe_psql(
	'postgres', q{
SET dmindex.default_leaf_format = hopscotch;
CREATE UNLOGGED TABLE u (k int);
CREATE INDEX u_k ON u USING dmindex (k) WITH (node_size = 256);
INSERT INTO u SELECT g % 50 FROM generate_series(1, 2000) g;
});
is($node->safe_psql('postgres', "SELECT leaf_format, neighborhood FROM dmindex_stats('u_k')"),
	'hopscotch|8', 'the unlogged index was built with hopscotch leaves');

$node->stop('immediate');
$node->start;
# the first use makes the new tree, in a session whose default is sorted
is( $node->safe_psql(
		'postgres',
		"SET dmindex.default_leaf_format = sorted; $idx_only SELECT count(*) FROM u WHERE k = 7"),
	'0',
	'the first use after the crash (a session defaulting to sorted leaves) finds the index empty');
is($node->safe_psql('postgres', "SELECT leaf_format, neighborhood FROM dmindex_stats('u_k')"),
	'hopscotch|8', 'its new tree has the leaves the build chose');
$node->safe_psql('postgres',
	'INSERT INTO u SELECT g % 37 FROM generate_series(1, 3000) g');
is($node->safe_psql('postgres', "$idx_only SELECT count(*), sum(k) FROM u WHERE k BETWEEN 5 AND 9"),
	$node->safe_psql('postgres', "$seq_only SELECT count(*), sum(k) FROM u WHERE k BETWEEN 5 AND 9"),
	'it answers like a seqscan');
is(dmindex_check($node, 'postgres', 'u_k'), '3000|3000|t', 'and passes dmindex_check');

# ---- 2. a metapage that does not match its tree ----------------------------
$node->safe_psql(
	'postgres', q{
CREATE TABLE t (k int8);
INSERT INTO t SELECT g % 400 FROM generate_series(1, 4000) g;
CREATE INDEX t_k ON t USING dmindex (k) WITH (leaf_format = 'hopscotch', neighborhood = 6);
CHECKPOINT;
});
my $path = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('t_k')");

# the control: a clean restart, the metapage as written
$node->restart;
is($node->safe_psql('postgres', "$idx_only SELECT count(*) FROM t WHERE k = 17"),
	'10', 'after a restart the index answers');

# node_size, fillfactor, placement_level, flags, leaf_format, neighborhood
# (DmMetaPageData in src/pg/dmam.h) as they follow each other in block 0
my $fields = pack('V6', 1024, 90, 1, 0, 1, 6);
$node->stop;
open(my $fh, '+<:raw', $path) or die "open $path: $!";
my $page;
sysread($fh, $page, 8192) == 8192 or die "short read of $path";
my $at = index($page, $fields);
ok($at > 0 && index($page, $fields, $at + 1) < 0, 'the metapage records hopscotch, neighbourhood 6');
substr($page, $at + 16, 8) = pack('V2', 0, 0);	# now it says: sorted leaves
sysseek($fh, 0, 0);
syswrite($fh, $page) == 8192 or die "write $path: $!";
close($fh);
$node->start;

my ($state, $err) = query_sqlstate($node, 'postgres', "$idx_only SELECT count(*) FROM t WHERE k = 17");
is($state, 'XX002', 'a metapage that disagrees with its tree is index corruption');
like($err, qr/does not have the leaf format its metapage records/, 'named as such');
like($err, qr/HINT:\s+REINDEX/, 'with a hint to REINDEX');
($state) = query_sqlstate($node, 'postgres', "SELECT * FROM dmindex_stats('t_k')");
is($state, 'XX002', 'dmindex_stats refuses it too');

$node->safe_psql('postgres', 'REINDEX INDEX t_k');
is($node->safe_psql('postgres', "SELECT leaf_format, neighborhood FROM dmindex_stats('t_k')"),
	'hopscotch|6', 'REINDEX builds the format the options give');
is($node->safe_psql('postgres', "$idx_only SELECT count(*) FROM t WHERE k = 17"),
	'10', 'and the index answers again');
is(dmindex_check($node, 'postgres', 't_k'), '4000|4000|t', 'and passes dmindex_check');

# ---- 3. a metapage whose key format is not its tree's ----------------------
$node->safe_psql(
	'postgres', q{
CREATE TABLE tv (s text COLLATE "C", k int8);
INSERT INTO tv SELECT 'key' || (g % 300), g % 300 FROM generate_series(1, 3000) g;
CREATE INDEX tv_s ON tv USING dmindex (s) WITH (node_size = 512);
CREATE INDEX tv_k ON tv USING dmindex (k) WITH (node_size = 2048);
CHECKPOINT;
});
$node->stop;
# node_size, fillfactor, placement_level, flags, leaf_format, neighborhood,
# key_format: each index's own node size makes its record unique
for my $case ([ 'tv_s', 512, 1, 0 ], [ 'tv_k', 2048, 0, 1 ])
{
	my ($idx, $size, $has, $patched) = @$case;
	$node->start;
	my $file = $node->data_dir . '/'
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$idx')");
	$node->stop;
	open(my $kf, '+<:raw', $file) or die "open $file: $!";
	my $blk;
	sysread($kf, $blk, 8192) == 8192 or die "short read of $file";
	my $rec = pack('V7', $size, 90, 1, 0, 0, 0, $has);
	my $pos = index($blk, $rec);
	ok($pos > 0 && index($blk, $rec, $pos + 1) < 0, "the metapage of $idx records key format $has");
	substr($blk, $pos + 24, 4) = pack('V', $patched);
	sysseek($kf, 0, 0);
	syswrite($kf, $blk) == 8192 or die "write $file: $!";
	close($kf);
}
$node->start;
for my $q ([ 'tv_s', "SELECT count(*) FROM tv WHERE s = 'key17'" ],
	[ 'tv_k', "SELECT count(*) FROM tv WHERE k = 17" ])
{
	my ($idx, $sql) = @$q;
	my ($st, $msg) = query_sqlstate($node, 'postgres', "$idx_only $sql");
	is($st, 'XX002', "$idx: a metapage whose key format is not its tree's is index corruption");
	like($msg, qr/key format of index "$idx" is inconsistent/, "$idx: named as such");
	like($msg, qr/HINT:\s+REINDEX/, "$idx: with a hint to REINDEX");
	$node->safe_psql('postgres', "REINDEX INDEX $idx");
	is($node->safe_psql('postgres', "$idx_only $sql"), '10', "$idx: after REINDEX it answers");
	is(dmindex_check($node, 'postgres', $idx), '3000|3000|t', "$idx: and passes dmindex_check");
}

done_testing();
