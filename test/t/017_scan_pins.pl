# 017_scan_pins.pl — the lifetime of the pins that make VACUUM wait for
# index-only scans (src/pg/dmscanpin.c).
#
# Why: an index-only scan keeps a private copy of a leaf between fetches;
# VACUUM must not let the heap free the tids of entries it deleted while such
# a copy can still return them, or the scan returns deleted rows without a
# heap visit.  The pin must therefore live exactly as long as the copy:
#  - a cursor declared outside a savepoint and first fetched inside it keeps
#    its copy after ROLLBACK TO: its pin must survive the rollback (VACUUM
#    waits; the cursor returns no deleted row);
#  - a scan that ran off its end holds nothing: VACUUM must not wait for it
#    (btree would not), or an idle cursor blocks VACUUM forever.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '128M', '--shm', '--chunk-size', '1M' ]);
my $node = new_dmindex_node('pins', [$mn], conf => "autovacuum = off\n");

my $ios = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';

sub setup_table
{
	$node->safe_psql('postgres', q{
DROP TABLE IF EXISTS p;
CREATE TABLE p (k int4) WITH (autovacuum_enabled = off);
INSERT INTO p SELECT g FROM generate_series(1, 2000) g;
CREATE INDEX p_k ON p USING dmindex (k) WITH (node_size = 256);
VACUUM (FREEZE) p;
});
}

# ---- a cursor's first fetch in a savepoint that rolls back ---------------------
setup_table();
is($node->safe_psql('postgres',
	"$ios EXPLAIN (COSTS OFF) SELECT k FROM p WHERE k >= 1 ORDER BY k"),
	"Index Only Scan using p_k on p\n  Index Cond: (k >= 1)", 'the cursor is an index-only scan');
# rows deleted (and committed) before the cursor's snapshot, not yet vacuumed
$node->safe_psql('postgres', 'DELETE FROM p WHERE k BETWEEN 2 AND 500');

my $cur = $node->background_psql('postgres');
$cur->query_safe("$ios BEGIN; DECLARE c CURSOR FOR SELECT k FROM p WHERE k >= 1 ORDER BY k");
$cur->query_safe('SAVEPOINT s');
is($cur->query_safe('FETCH 1 FROM c'), '1', 'first fetch inside a savepoint');
$cur->query_safe('ROLLBACK TO SAVEPOINT s');

my ($state) = query_sqlstate($node, 'postgres', "SET statement_timeout = '3s'; VACUUM p");
is($state, '57014', 'VACUUM waits for the cursor that still holds deleted entries (cancelled by statement_timeout)');
is($cur->query_safe('FETCH 5 FROM c'), join("\n", 501 .. 505),
	'the cursor returns no deleted row after the savepoint rolled back');
$cur->query_safe('COMMIT');

my $t0 = time;
($state) = query_sqlstate($node, 'postgres', "SET statement_timeout = '30s'; VACUUM p");
is($state, '', 'once the cursor is gone VACUUM finishes');
ok(time - $t0 < 20, '... promptly');
is(dmindex_check($node, 'postgres', 'p_k'), '1501|1501|t', 'dmindex_check passes');

# ---- a cursor that ran off its end ----------------------------------------------
setup_table();
$cur->query_safe("$ios BEGIN; DECLARE c CURSOR FOR SELECT k FROM p WHERE k >= 1 ORDER BY k");
is($cur->query_safe('MOVE ALL IN c'), '', 'an index-only cursor runs off its end');
# entries of rows that never committed (written early, then rolled back):
# VACUUM removes them at once, inside the range the cursor scanned
$node->safe_psql('postgres', q{
SET dmindex.insert_buffer = 10;
BEGIN;
INSERT INTO p SELECT g FROM generate_series(5000, 5100) g;
ROLLBACK;
});
$t0 = time;
($state) = query_sqlstate($node, 'postgres', "SET statement_timeout = '20s'; VACUUM p");
is($state, '', 'VACUUM does not wait for a cursor that ran off its end');
ok(time - $t0 < 15, sprintf('... and finishes promptly (%.1f s)', time - $t0));
# the cursor, moved back, reads again (a new pin) and sees the committed rows only
is($cur->query_safe('FETCH BACKWARD 2 FROM c'), "2000\n1999", 'the cursor scans backwards again');
$cur->query_safe('COMMIT');
$cur->quit;
is(dmindex_check($node, 'postgres', 'p_k'), '2000|2000|t', 'dmindex_check passes');

$node->stop;
stop_memnode($mn);
done_testing();
