# 020_failover.pl — promoting a standby of a primary with dmindex indexes
# (src/pg/dmfailover.c, docs/design.md §7 Failover).
#
# 1. Synchronous replication: a primary with a synchronous standby, pgbench
#    inserting, moving and deleting rows with VACUUM running, is stopped
#    (immediate) under load; the standby is promoted and takes the remote
#    trees over without a rebuild.  On the new primary, for every key, the
#    rows found through the dmindex index equal those of a sequential scan
#    and of a btree on the same values; dmindex_check(idx, true) passes; new
#    writes and VACUUM work and are checked the same way.
# 2. Asynchronous replication, the standby cut off while the primary goes on
#    writing: the promoted server refuses the index (XX002, "cannot be used
#    after failover", hint REINDEX), and REINDEX makes it right.
# 3. The old primary kept running after a promotion: once the new primary
#    has taken the tree over, the old one's writes and reads of the index
#    fail (55000, "now written by another server"), its DROP INDEX does not
#    free the tree, and nothing it tried reached the tree: the new primary's
#    index still equals its heap.
# 4. A wait for the synchronous standbys cancelled before the remote write
#    is an error: the transaction rolls back and nothing reaches the tree.
# Each server has its own dmindex.instance_id.  The indexes have the key
# shape of DMINDEX_TAP_KEY (DmindexTest; text or multi: VAR trees), and every
# condition on k is written with key_sql.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;
use DmindexWorkload;

my $mn = start_memnode(args => [ '--size', '512M', '--shm', '--chunk-size', '1M' ]);
# primaries are instance 0 (which owns the key space of a new index);
# standbys get their own ids, and a promoted one inherits instance 0's ranges
my $instance = 0;

sub primary
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(allows_streaming => 1);
	$node->append_conf('postgresql.conf', <<"CONF");
shared_preload_libraries = 'dmindex'
dmindex.memnodes = '$mn->{address}'
dmindex.instance_id = 0
dmindex.cache_size = 1MB
log_min_messages = 'warning'
max_connections = 30
CONF
	$node->append_conf('postgresql.conf', $conf) if $conf;
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION dmindex');
	return $node;
}

sub standby
{
	my ($primary, $name) = @_;
	$primary->backup("${name}_backup");
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($primary, "${name}_backup", has_streaming => 1);
	$instance++;
	$node->append_conf('postgresql.conf', "dmindex.instance_id = $instance\n");
	$node->start;
	return $node;
}

sub make_table
{
	my ($node, $rows) = @_;
	$node->safe_psql('postgres', <<"SQL");
CREATE TABLE t (id bigserial PRIMARY KEY, k int, kb int GENERATED ALWAYS AS (k) STORED, pad text)
  WITH (autovacuum_enabled = off);
INSERT INTO t (k, pad) SELECT (g * 7919) % 100000, 'x' FROM generate_series(1, $rows) g;
CREATE INDEX t_k_dm ON t USING dmindex (@{[ key_columns('k') ]});
CREATE INDEX t_kb_bt ON t (@{[ key_columns('kb') ]});
SQL
}

# For every key: the ctids through the dmindex index, through the btree and
# by a sequential scan, as one string each.
my %plans = (
	dmindex => "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;",
	btree   => "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;",
	seqscan => "SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;",
);
my %queries = (
	dmindex => key_sql("SELECT md5(string_agg(k || ':' || ctid::text, ',' ORDER BY k, ctid)), count(*) FROM t WHERE [[k >= -1]]"),
	btree   => key_sql("SELECT md5(string_agg(kb || ':' || ctid::text, ',' ORDER BY kb, ctid)), count(*) FROM t WHERE [[kb >= -1]]"),
	seqscan => key_sql("SELECT md5(string_agg(k || ':' || ctid::text, ',' ORDER BY k, ctid)), count(*) FROM t WHERE [[k >= -1]]"),
);

sub plan_uses
{
	my ($node, $kind) = @_;
	my $plan = $node->safe_psql('postgres', "$plans{$kind} EXPLAIN $queries{$kind}");
	return $plan =~ /t_k_dm/ if $kind eq 'dmindex';
	return $plan =~ /t_kb_bt/ if $kind eq 'btree';
	return $plan =~ /Seq Scan/;
}

sub check_heap_equals_index
{
	my ($node, $what) = @_;
	my %r;
	for my $kind (qw(dmindex btree seqscan))
	{
		ok(plan_uses($node, $kind), "$what: the $kind query uses its access path");
		$r{$kind} = sql($node, 'postgres', "$plans{$kind} $queries{$kind}");
	}
	like($r{seqscan}, qr/^\w{32}\|\d+$/, "$what: seqscan answers ($r{seqscan})");
	is($r{dmindex}, $r{seqscan}, "$what: every key's rows through dmindex = seqscan");
	is($r{btree}, $r{seqscan}, "$what: btree = seqscan");
	# point and range queries through dmindex, each against the heap
	my $bad = sql($node, 'postgres', key_sql(<<'SQL'));
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM generate_series(0, 100000, 997) q
WHERE (SELECT count(*) FROM t WHERE [[k = q]]) <> (SELECT count(*) FROM t WHERE kb + 0 = q)
   OR (SELECT count(*) FROM t WHERE [[k BETWEEN q AND q + 500]]) <> (SELECT count(*) FROM t WHERE kb + 0 BETWEEN q AND q + 500);
SQL
	is($bad, '0', "$what: point and range lookups through dmindex agree with the heap");
	like(dmindex_check($node, 'postgres', 't_k_dm', 1), qr/\|t$/, "$what: dmindex_check(t_k_dm, true) passes");
}

my $write_sql = key_sql(<<'SQL');
\set k random(0, 99999)
BEGIN;
INSERT INTO t (k, pad) VALUES (:k, 'p'), (:k + 1, 'p');
UPDATE t SET k = k + 3 WHERE [[k = :k + 50]];
DELETE FROM t WHERE [[k = :k + 100]];
END;
SQL

# pgbench writing and VACUUMing in the background (the primary is stopped under it)
sub pgbench_start
{
	my ($node, $seconds) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir();
	append_to_file("$dir/write.sql", $write_sql);
	append_to_file("$dir/vacuum.sql", "VACUUM t;\n\\sleep 300 ms\n");
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'pgbench', '-n', '-c', '4', '-j', '2', '-T', $seconds,
			'-f', "$dir/write.sql\@10", '-f', "$dir/vacuum.sql\@1",
			'-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$out, '2>', \$err);
	return ($h, \$out, \$err);
}

sub promote
{
	my ($node) = @_;
	$node->promote;
	$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'promotion did not finish';
}

# ---- 1. synchronous replication: the promoted standby takes over ------------

{
	my $p = primary('sync_primary');
	my $s = standby($p, 'sync_standby');
	# synchronous only once the standby streams (CREATE EXTENSION would wait for it)
	$p->safe_psql('postgres',
		"ALTER SYSTEM SET synchronous_standby_names = 'sync_standby'; SELECT pg_reload_conf();");
	ok($p->poll_query_until('postgres', "SELECT sync_state = 'sync' FROM pg_stat_replication"),
		'the standby is synchronous');
	make_table($p, 20000);
	$p->wait_for_catchup($s);

	my ($h, $out, $err) = pgbench_start($p, 30);
	sleep 6;
	my $n = $p->safe_psql('postgres', "SELECT count(*) FROM t WHERE pad = 'p'");
	$p->stop('immediate');
	$h->finish;
	cmp_ok($n, '>', 100, "pgbench wrote rows before the primary stopped ($n rows)");

	promote($s);
	check_heap_equals_index($s, 'sync, after promotion');
	ok($s->log_contains(qr/took over the remote tree of index "t_k_dm"/), 'the new primary logged its takeover');

	# new writes and VACUUM on the new primary: nothing may fail
	run_pgbench_with_vacuum($s, 't',
		{ 'write.sql' => $write_sql, 'read.sql' => "\\set k random(0, 99999)\n" . key_sql("SELECT count(*) FROM t WHERE [[k BETWEEN :k AND :k + 100]];\n") },
		{ 'write.sql' => 10, 'read.sql' => 3 },
		duration => 4, pause => '300 ms', strict => 1);
	check_heap_equals_index($s, 'sync, new primary after its own writes');
	$s->stop;
}

# ---- 2. asynchronous replication, a lagging standby: refused, REINDEX ---------

{
	my $p = primary('async_primary');
	my $s = standby($p, 'async_standby');
	make_table($p, 5000);
	$p->wait_for_catchup($s);

	# cut the standby off, then write more on the primary: entries it never receives
	$s->safe_psql('postgres', "ALTER SYSTEM SET primary_conninfo = ''; SELECT pg_reload_conf();");
	$s->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_stat_wal_receiver')
	  or die 'the standby kept streaming';
	$p->safe_psql('postgres',
		"INSERT INTO t (k, pad) SELECT g % 100000, 'lost' FROM generate_series(1, 3000) g");
	$p->stop('immediate');

	promote($s);
	my ($state, $errmsg) = query_sqlstate($s, 'postgres',
		key_sql('SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM t WHERE [[k >= 0]]'));
	is($state, 'XX002', 'the promoted server refuses the index (XX002)');
	like($errmsg, qr/index "t_k_dm" cannot be used after failover/, '... "cannot be used after failover"');
	like($errmsg, qr/HINT:\s+REINDEX INDEX public\.t_k_dm/, '... with a REINDEX hint');
	($state) = query_sqlstate($s, 'postgres', "INSERT INTO t (k) VALUES (1)");
	is($state, 'XX002', 'writes through the index are refused too');

	is(sql($s, 'postgres', 'REINDEX INDEX t_k_dm'), '', 'REINDEX succeeds');
	check_heap_equals_index($s, 'async, after REINDEX');
	is(sql($s, 'postgres', "INSERT INTO t (k, pad) SELECT g, 'new' FROM generate_series(1, 500) g"), '',
		'writes work after REINDEX');
	check_heap_equals_index($s, 'async, writes after REINDEX');
	$s->stop;
}

# ---- 3. the old primary keeps running: fenced ---------------------------------

{
	my $p = primary('old_primary');
	my $s = standby($p, 'new_primary');
	make_table($p, 5000);
	$p->safe_psql('postgres', "INSERT INTO t (k, pad) SELECT g, 'more' FROM generate_series(1, 1000) g");
	$p->wait_for_catchup($s, 'replay');

	# a session of the old primary that has written (its tree handle is open)
	my $bg = $p->background_psql('postgres', on_error_stop => 0);
	$bg->query_safe("INSERT INTO t (k, pad) VALUES (424242, 'before')");
	$p->wait_for_catchup($s, 'replay');

	promote($s);
	check_heap_equals_index($s, 'switchover, new primary');
	my $count = $s->safe_psql('postgres', 'SELECT count(*) FROM t');

	# the old primary: new sessions and the old session are refused
	my ($state, $errmsg) = query_sqlstate($p, 'postgres', "INSERT INTO t (k, pad) VALUES (5, 'zombie')");
	is($state, '55000', 'a write on the old primary fails (55000)');
	like($errmsg, qr/index "t_k_dm" is now written by another server/, '... "now written by another server"');
	($state) = query_sqlstate($p, 'postgres',
		key_sql('SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM t WHERE [[k >= 0]]'));
	is($state, '55000', 'a read through the index on the old primary fails too');
	$bg->query("INSERT INTO t (k, pad) SELECT g, 'zombie' FROM generate_series(1, 200) g");
	like($bg->{stderr}, qr/now written by another server/, 'the old primary\'s open session is refused too');
	$bg->quit;
	is($p->safe_psql('postgres', "SELECT count(*) FROM t WHERE pad = 'zombie'"), '0',
		'the old session\'s write was rolled back');
	is(sql($p, 'postgres', 'DROP INDEX t_k_dm'), '', 'DROP INDEX on the old primary commits');
	sleep 1;

	is($s->safe_psql('postgres', 'SELECT count(*) FROM t'), $count, 'the new primary\'s heap is unchanged');
	check_heap_equals_index($s, 'new primary after the old one tried to write and drop');
	is(sql($s, 'postgres', "INSERT INTO t (k, pad) SELECT g, 'new' FROM generate_series(1, 300) g"), '',
		'the new primary writes');
	check_heap_equals_index($s, 'new primary after its writes');
	$p->stop;

	# ---- 4. a cancelled wait for the synchronous standbys writes nothing -----
	# (the new primary, with a synchronous standby that never comes)
	$s->safe_psql('postgres',
		"ALTER SYSTEM SET synchronous_standby_names = 'nobody'; SELECT pg_reload_conf();");
	$s->poll_query_until('postgres', "SELECT current_setting('synchronous_standby_names') = 'nobody'");
	my $before = $s->safe_psql('postgres', 'SELECT count(*) FROM t');
	my $waiter = $s->background_psql('postgres', on_error_stop => 0);
	$waiter->query_until(qr/sent/, "\\echo sent\nINSERT INTO t (k, pad) VALUES (777777, 'cancelled');\n");
	ok($s->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND query LIKE 'INSERT INTO t%'"),
		'the insert waits for the synchronous standby before writing its entry');
	$s->safe_psql('postgres',
		"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND query LIKE 'INSERT INTO t%'");
	$waiter->query('SELECT 1');
	like($waiter->{stderr}, qr/canceling the wait for synchronous replication before writing dmindex entries/,
		'the cancel is an error: nothing written, the transaction rolled back');
	$waiter->quit;
	$s->safe_psql('postgres', "ALTER SYSTEM RESET synchronous_standby_names; SELECT pg_reload_conf();");
	is($s->safe_psql('postgres', key_sql("SELECT count(*) FROM t WHERE [[k = 777777]]")), '0', 'the row is not there');
	is($s->safe_psql('postgres', 'SELECT count(*) FROM t'), $before, 'the table is unchanged');
	check_heap_equals_index($s, 'after a cancelled wait');
	$s->stop;
}

done_testing();
