# 009_cache_config.pl — node cache settings and key ownership of a server.
#
# Why: the cache lives in shared memory sized at server start, so bad
# settings must stop the server with a clear message rather than run with a
# cache that cannot work; and a server whose dmindex.instance_id owns no key
# range of an index reads and writes it (in PostgreSQL only the primary
# writes, so it writes every key) but caches none of its nodes.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '256M', '--shm', '--chunk-size', '1M' ]);

# ---- settings that stop the server -------------------------------------------

my $node = new_dmindex_node('cachecfg', [$mn]);
is($node->safe_psql('postgres', 'SELECT policy, frame_size FROM dmindex_cache_stats()'),
	'dex|1024', 'default: DEX policy with 1 kB frames');
my $frames = $node->safe_psql('postgres', 'SELECT capacity_frames FROM dmindex_cache_stats()');
ok($frames > 50000 && $frames < 70000, "default 64MB cache holds ~60k frames ($frames)");
$node->stop;

sub fails_to_start
{
	my ($conf, $pattern, $label) = @_;
	$node->append_conf('postgresql.conf', $conf);
	my $ok = $node->start(fail_ok => 1);
	ok(!$ok, "$label: the server does not start");
	like(slurp_file($node->logfile), $pattern, "$label: the log says why");
	$node->stop('fast') if $ok;
}

fails_to_start("dmindex.cache_size = 16kB\n",
	qr/"dmindex.cache_size" is too small: 16 kB hold \d+ frames of 1024 bytes/,
	'a cache too small to work');
like(slurp_file($node->logfile), qr/HINT:\s+Set "dmindex.cache_size" to 0 to run without a cache, or raise it/,
	'... with a hint');
# A bad value of a custom setting in postgresql.conf is, as for every
# extension's setting, reported and replaced by the default (the server
# starts): check both.
sub bad_value_uses_default
{
	my ($conf, $pattern, $query, $expect, $label) = @_;
	$node->append_conf('postgresql.conf', $conf);
	$node->start;
	like(slurp_file($node->logfile), $pattern, "$label: the log reports the bad value");
	is($node->safe_psql('postgres', $query), $expect, "$label: the default is in effect");
	$node->stop;
}
bad_value_uses_default("dmindex.cache_size = 1MB\ndmindex.cache_frame_size = 1000\n",
	qr/invalid value for parameter "dmindex.cache_frame_size": 1000/,
	'SELECT frame_size FROM dmindex_cache_stats()', '1024',
	'a frame size that is not a power of two');
bad_value_uses_default("dmindex.cache_frame_size = 1024\ndmindex.cache_policy = lru\n",
	qr/invalid value for parameter "dmindex.cache_policy": "lru"/,
	'SELECT policy FROM dmindex_cache_stats()', 'dex',
	'an unknown policy');

# cache off: size 0 or policy off
$node->append_conf('postgresql.conf', "dmindex.cache_policy = dex\ndmindex.cache_size = 0\n");
$node->start;
is($node->safe_psql('postgres',
		'SELECT policy, capacity_frames, hits, hit_ratio IS NULL FROM dmindex_cache_stats()'),
	'off|0|0|t', 'dmindex.cache_size = 0: no cache');
$node->safe_psql('postgres', q{
	CREATE TABLE t0 (v int);
	INSERT INTO t0 SELECT g FROM generate_series(1, 3000) g;
	CREATE INDEX t0_v ON t0 USING dmindex (v);
	INSERT INTO t0 SELECT g FROM generate_series(3001, 4000) g;
});
is($node->safe_psql('postgres',
		'SET enable_seqscan = off; SELECT count(*) FROM t0 WHERE v BETWEEN 10 AND 3500'),
	'3491', 'an index works without a cache');
is(dmindex_check($node, 'postgres', 't0_v'), '4000|4000|t', 'and passes dmindex_check');
$node->stop;

# ---- a server that owns no key range ---------------------------------------------

# Instance 1 of an index whose partition map (the default) gives every key
# to instance 0.  In PostgreSQL only the primary writes, so the map says
# what a server caches, not what it may write: instance 1 writes every key,
# under the remote lock, and keeps no leaf of another range in its cache
# (inner nodes it caches: as the only writer it sees every change of them).
$node->append_conf('postgresql.conf', "dmindex.cache_size = 1MB\ndmindex.instance_id = 1\n");
$node->start;
is($node->safe_psql('postgres', 'SELECT instance, local FROM dmindex_partitions(\'t0_v\')'),
	'0|f', 'instance 1 sees the map: everything belongs to instance 0');
is($node->safe_psql('postgres',
		'SET enable_seqscan = off; SELECT count(*) FROM t0 WHERE v BETWEEN 10 AND 3500'),
	'3491', 'instance 1 reads the index');
is($node->safe_psql('postgres', 'SELECT frames_used_by_level[1], frames_used > 0 FROM dmindex_cache_stats()'),
	'0|t', 'and caches inner nodes but none of its leaves (they are all of another instance\'s range)');
is(sql($node, 'postgres', 'INSERT INTO t0 VALUES (5000)'), '', 'an insert of a key instance 0 owns works');
is(sql($node, 'postgres', 'UPDATE t0 SET v = v + 1 WHERE v = 7'), '', 'so does an update');
is($node->safe_psql('postgres', 'SELECT frames_used_by_level[1] FROM dmindex_cache_stats()'),
	'0', 'the foreign leaves written were not kept in the cache');
is(dmindex_check($node, 'postgres', 't0_v'), '4002|4001|t', 'the index passes dmindex_check (the updated row\'s old entry stays until VACUUM)');
$node->stop;

# back as instance 0: the index is intact and writable
$node->append_conf('postgresql.conf', "dmindex.instance_id = 0\n");
$node->start;
$node->safe_psql('postgres', 'INSERT INTO t0 VALUES (5001)');
is(dmindex_check($node, 'postgres', 't0_v'), '4003|4002|t',
	'instance 0 writes again and the index passes dmindex_check');
$node->stop;

# Another server on the same timeline number (split brain: two standbys
# promoted to one timeline number) has another server nonce: its heap is
# not the writer's, so it may neither read nor write the index.  Simulated
# by setting this server's nonce file aside.
my $nonce_file = $node->data_dir . '/dmindex_writer.1';
ok(-f $nonce_file, 'the server keeps its writer nonce for timeline 1 in its data directory');
rename($nonce_file, "$nonce_file.saved") or die "rename: $!";
$node->start;
my ($state, $err) = query_sqlstate($node, 'postgres',
	'SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM t0 WHERE v BETWEEN 10 AND 3500');
is($state, '55000', 'a server with another nonce on the writer\'s timeline may not read the index (55000)');
like($err, qr/index "t0_v" is written by another server/, '... naming the index');
($state, $err) = query_sqlstate($node, 'postgres', 'INSERT INTO t0 VALUES (5002)');
is($state, '55000', 'and its write is refused with 55000');
like($err, qr/t0_v/, '... naming the index');
is($node->safe_psql('postgres', "$DmindexTest::seq_only SELECT count(*) FROM t0 WHERE v = 5002"), '0', 'and the row is not there');
$node->stop;
rename("$nonce_file.saved", $nonce_file) or die "rename: $!";
$node->start;
$node->safe_psql('postgres', 'INSERT INTO t0 VALUES (5003)');
is(dmindex_check($node, 'postgres', 't0_v'), '4004|4003|t',
	'with its own nonce back the server writes again and the index passes dmindex_check');
$node->stop;

# A copy of a primary's data directory started as a second primary (not a
# standby: no standby.signal), here from a base backup: it forgets the
# nonce it was copied with, so it is another server on the original's
# timeline.  Its heap is not the original's: it may neither read nor write
# the index (with another instance id, while the original runs).  The
# original is not disturbed.
my $orig = new_dmindex_node('orig', [$mn], init => { allows_streaming => 1 });
$orig->safe_psql('postgres', q{
	CREATE TABLE c (v int8);
	INSERT INTO c SELECT g FROM generate_series(1, 2000) g;
	CREATE INDEX c_v ON c USING dmindex (v);
	INSERT INTO c VALUES (5000);
});
ok(-f $orig->data_dir . '/dmindex_writer.1', 'the original has its writer nonce');
$orig->backup('copy_backup');
my $copy = PostgreSQL::Test::Cluster->new('copy');
$copy->init_from_backup($orig, 'copy_backup');
$copy->append_conf('postgresql.conf', "dmindex.instance_id = 1\n");
$copy->start;
ok(!-f $copy->data_dir . '/dmindex_writer.1', 'the restored backup removed the nonce file it was copied with');
($state, $err) = query_sqlstate($copy, 'postgres',
	'SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM c WHERE v BETWEEN 100 AND 5000');
is($state, '55000', 'the copy may not read the index (55000)');
($state, $err) = query_sqlstate($copy, 'postgres', 'INSERT INTO c VALUES (5001)');
is($state, '55000', 'the copy may not write (55000)');
$orig->safe_psql('postgres', 'INSERT INTO c VALUES (5002)');
is($orig->safe_psql('postgres', 'SET enable_seqscan = off; SELECT count(*) FROM c WHERE v >= 5000'),
	'2', 'the original still writes');
is(dmindex_check($orig, 'postgres', 'c_v'), '2002|2002|t', 'and its index passes dmindex_check');
$copy->stop;
$orig->stop;

is(stop_memnode($mn), 0, 'memnode shuts down cleanly');
done_testing();
