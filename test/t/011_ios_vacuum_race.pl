# 011_ios_vacuum_race.pl — an index-only scan must not return a row that
# VACUUM removed while the scan held a copy of the leaf that pointed to it.
#
# The race (PostgreSQL fixed it for GiST and SP-GiST): rows are deleted and
# the deletion commits; a cursor then opens an index-only scan, whose
# snapshot does not see those rows.  The scan reads the first leaf — dmindex
# copies the whole leaf, entries of the dead rows included — and returns
# the first rows.  VACUUM then removes the dead rows' entries and heap
# tuples (they are dead to every snapshot, the cursor's too) and, the page
# now holding only frozen rows, marks it all-visible.  When the cursor goes
# on, the entries of its copy that point to the removed rows find the page
# all-visible and are returned without a visit to the heap: deleted keys.
#
# btree avoids it by keeping its pin on the leaf during an index-only scan:
# VACUUM waits for a cleanup lock until the cursor has left the leaf.
# dmindex needs an equivalent interlock; VACUUM may wait for such a scan as
# btree's does.  So this test starts VACUUM in the background, gives it up
# to 5 seconds (whether it finishes or waits is only reported: both may be
# right), lets the cursor fetch the rest, which must be exactly the live
# rows, commits, and then requires VACUUM to finish and leave the page
# all-visible, the index passing dmindex_check.  The very same steps run
# first on a btree index, the reference: there VACUUM must wait (which shows
# the steps build the race), and the cursor must return the live rows.
#
# The race is run twice more with every row on one key (an equality scan,
# point => 1): on hopscotch leaves its index-only scan holds the key's tids
# from one point lookup (src/pg/dmscan.c), a copy that must be pinned like a
# leaf copy, again with btree as the reference.
#
# And once more on one key asked for with "k = ANY ('{0, 1, 2}')" (any =>
# 1): the scan reads one range per element (src/pg/dmscankey.c), an empty
# one first; the copy of the second must be pinned as well.
#
# (The same race for a plain index scan needs a non-MVCC snapshot, which
# SQL reaches through exclusion constraints and the like; dmindex refuses
# exclusion constraints, and no other SQL path scans a dmindex index with
# one, so it is not tested here.)

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use DmindexTest;

my $mn = start_memnode();
my $node = new_dmindex_node('iosrace', [$mn], conf => "autovacuum = off\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_visibility');

sub race
{
	my ($table, $using, %p) = @_;
	my $index = "${table}_k";
	my $point = $p{point} // 0;
	my $any = $p{any} // 0;
	my $key = $point ? '1' : 'g';

	# Two rows per heap page (3000 uncompressed bytes each): keys 1 and 2
	# on page 0, the dead keys 3..6 on pages 1 and 2.  Page 0 stays
	# all-visible, so the cursor's first rows come without a heap visit and
	# it pins no heap page (a pin would keep VACUUM from pruning pages 1 and
	# 2 at all).  Small dmindex nodes: the first leaf holds keys 1.., the
	# dead keys right after the two fetched ones.
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE $table (k int4, pad text) WITH (autovacuum_enabled = false);
ALTER TABLE $table ALTER COLUMN pad SET STORAGE PLAIN;
INSERT INTO $table SELECT $key, repeat('x', 3000) FROM generate_series(1, 40) g;
CREATE INDEX $index ON $table USING $using;
VACUUM (FREEZE) $table;
});
	is($node->safe_psql('postgres',
			"SELECT string_agg(k::text, ',' ORDER BY k) FROM $table WHERE ctid >= '(1,0)' AND ctid < '(3,0)'"),
		$point ? '1,1,1,1' : '3,4,5,6', "$using: the rows to delete are alone on pages 1 and 2");
	# committed before the cursor opens: dead to its snapshot, and to VACUUM's
	$node->safe_psql('postgres', "DELETE FROM $table WHERE ctid >= '(1,0)' AND ctid < '(3,0)'");
	my $dead_pages_visible =
	  "SELECT bool_and(all_visible) FROM pg_visibility_map('$table') WHERE blkno IN (1, 2)";
	my $settings = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
	my $q =
	    $any   ? "SELECT k FROM $table WHERE k = ANY ('{0, 1, 2}') ORDER BY k"
	  : $point ? "SELECT k FROM $table WHERE k = 1"
	  :          "SELECT k FROM $table WHERE k > 0 ORDER BY k";
	like($node->safe_psql('postgres', "$settings EXPLAIN (COSTS OFF) $q"),
		qr/Index Only Scan using $index on $table/,
		"$using: the cursor's query is an index-only scan on $index");

	my $cursor = $node->background_psql('postgres', timeout => 120);
	my $vacuum = $node->background_psql('postgres', timeout => 120);
	my $vpid = $vacuum->query_safe('SELECT pg_backend_pid()');

	$cursor->query_safe("BEGIN; $settings DECLARE c CURSOR FOR $q;");
	is($cursor->query_safe('FETCH 2 FROM c'), $point ? "1\n1" : "1\n2", "$using: the cursor returns the first two keys");

	# VACUUM in the background
	$vacuum->query_until(qr/vacuum_started/,
		"\\echo vacuum_started\nVACUUM (INDEX_CLEANUP ON) $table;\n");
	my $finished = 0;
	my $deadline = time() + 5;
	while (time() < $deadline)
	{
		my $active = $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid = $vpid AND state = 'active'");
		if ($active eq '0')
		{
			$finished = 1;
			last;
		}
		usleep(100_000);
	}
	note "$using: VACUUM " . ($finished ? 'finished' : 'is still waiting') . ' while the cursor sits on the first leaf';
	if ($using =~ /^btree/)
	{
		is($finished, 0, "$using: VACUUM waits for the cursor (the steps build the race)");
	}
	if ($finished)
	{
		is($node->safe_psql('postgres', $dead_pages_visible),
			't', "$using: VACUUM left the dead rows' pages all-visible (the cursor will not visit them)");
	}

	my $rest = $cursor->query_safe('FETCH ALL FROM c');
	my $heap = $node->safe_psql('postgres',
		"SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = off; "
		  . "$q OFFSET 2");
	tr/\n/,/ for $rest, $heap;
	is($rest, $heap, "$using: the cursor returns the live rows only, no deleted key");
	$cursor->query_safe('COMMIT');
	$cursor->quit;

	# VACUUM must be done now (the query waits for it)
	my ($out, $failed) = $vacuum->query('SELECT 1');
	is($failed . $vacuum->{stderr}, '0', "$using: VACUUM finished without error once the cursor closed");
	$vacuum->quit;
	is($node->safe_psql('postgres', $dead_pages_visible),
		't', "$using: the dead rows' pages are all-visible after VACUUM");
	is($node->safe_psql('postgres', "$settings SELECT string_agg(k::text, ',' ORDER BY k) FROM $table"),
		join(',', $point ? ((1) x 36) : (1, 2, 7 .. 40)), "$using: a new index-only scan returns the live rows");
}

race('rb', 'btree (k)');
race('rd', 'dmindex (k) WITH (node_size = 256)');
is(dmindex_check($node, 'postgres', 'rd_k'), '36|36|t', 'dmindex_check passes');
race('pb', 'btree (k)', point => 1);
race('pd', "dmindex (k) WITH (node_size = 256, leaf_format = 'hopscotch')", point => 1);
is(dmindex_check($node, 'postgres', 'pd_k'), '36|36|t', 'dmindex_check passes on the one-key index');
race('ab', 'btree (k)', point => 1, any => 1);
race('ad', 'dmindex (k) WITH (node_size = 256)', point => 1, any => 1);
race('ah', "dmindex (k) WITH (node_size = 256, leaf_format = 'hopscotch')", point => 1, any => 1);
is(dmindex_check($node, 'postgres', 'ah_k'), '36|36|t', 'dmindex_check passes on the one-key index read by = ANY');

$node->stop;
is(stop_memnode($mn), 0, 'memnode shuts down cleanly');

done_testing();
