# 006_preload.pl — dmindex requires shared_preload_libraries.
#
# Why: the node cache and key ownership of an instance live in shared
# memory, which only a library loaded at server start can create.  Without
# the preload, CREATE EXTENSION (and LOAD) must fail with a clear message
# and a hint, instead of running without the shared state.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('nopreload');
$node->init;
$node->start;

my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nCREATE EXTENSION dmindex");
isnt($ret, 0, 'CREATE EXTENSION fails without the preload');
like($err, qr/55000: dmindex must be loaded via shared_preload_libraries/, '... with SQLSTATE 55000 and a clear message');
like($err, qr/HINT:\s+Add dmindex to shared_preload_libraries/, '... and a hint');
($ret, $out, $err) = $node->psql('postgres', 'LOAD \'dmindex\'');
like($err, qr/must be loaded via shared_preload_libraries/, 'LOAD fails the same way');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'dmindex'"), '0',
	'nothing was created');

$node->stop;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'dmindex'\n");
$node->start;
($ret, $out, $err) = $node->psql('postgres', 'CREATE EXTENSION dmindex');
is($ret, 0, 'with the preload CREATE EXTENSION works');
$node->stop;
done_testing();
