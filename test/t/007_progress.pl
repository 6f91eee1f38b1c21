# 007_progress.pl — CREATE INDEX reports its progress.
#
# Why: building a large dmindex index takes a while (heap scan, sort, bulk
# load into the memnode) and operators watch pg_stat_progress_create_index
# like for any index.  A second session polls the view while the build runs
# and must see dmindex's own phases, and the loading phase must count tuples
# towards the total.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use IPC::Run;
use DmindexTest;

my $mn = start_memnode(args => [ '--size', '512M', '--shm' ]);
my $node = new_dmindex_node('progress', [$mn]);
$node->safe_psql('postgres', q{
CREATE TABLE big (k int8);
INSERT INTO big SELECT (g::int8 * 7919) % 3000017 FROM generate_series(1, 3000000) g;
});

my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', 'CREATE INDEX big_k_dm ON big USING dmindex (k)' ],
	'>', \$out, '2>', \$err);
my %phases;
my $max_done = 0;
my $total = 0;
while ($h->pumpable)
{
	my $row = $node->safe_psql('postgres',
		"SELECT phase, tuples_total, tuples_done FROM pg_stat_progress_create_index WHERE relid = 'big'::regclass");
	if ($row ne '')
	{
		my ($phase, $t, $d) = split /\|/, $row;
		$phases{$phase} = 1;
		if ($phase =~ /loading tree/)
		{
			$total = $t;
			$max_done = $d if $d > $max_done;
		}
	}
	last unless $h->pumpable;
	$h->pump_nb;
	sleep 0.02;
}
$h->finish;
is($err, '', 'CREATE INDEX succeeded');
note('phases seen: ' . join(', ', sort keys %phases));
ok(scalar(grep { /^building index: (scanning table|sorting entries|loading tree)$/ } keys %phases) >= 1,
	'dmindex build phases appear in pg_stat_progress_create_index');
ok(!grep({ /building index: $/ } keys %phases), 'every phase has a name');
is($node->safe_psql('postgres', "SELECT entries FROM dmindex_stats('big_k_dm')"), '3000000', 'the index holds every row');
SKIP:
{
	skip 'the loading phase was too short to be observed', 1 unless $total;
	is($total, '3000000', 'the loading phase counts towards all 3000000 tuples');
}

is(stop_memnode($mn), 0, 'memnode exits cleanly');
$node->stop;
done_testing();
