# 030_keyenc_libc.pl — the byte key encoding (src/pg/dmkeyenc.c) refuses a
# libc collation whose order is not byte order, with 0A000 and a hint,
# both as a named collation and as a database's default; it accepts "C"
# and ICU collations in the same server.
#
# The machines this runs on have only the C, C.UTF-8 and POSIX locales,
# which all order by bytes (sql/keyenc.sql covers them), so the test
# compiles en_US.UTF-8 with localedef into a directory of its own and runs
# the server with LOCPATH pointing there: the system's locales are not
# touched.  The cluster's own locale is C, which needs no locale files.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use DmindexTest;

my $localedef = `command -v localedef 2>/dev/null`;
chomp $localedef;
if (!$localedef || !-e '/usr/share/i18n/locales/en_US')
{
	plan skip_all => 'localedef or the en_US locale source is missing (Debian: apt-get install locales)';
}

my $locdir = PostgreSQL::Test::Utils::tempdir();
# localedef exits 1 for warnings it still writes the locale after
system($localedef, '-i', 'en_US', '-f', 'UTF-8', "$locdir/en_US.UTF-8");
ok(-d "$locdir/en_US.UTF-8", 'localedef compiled en_US.UTF-8 into the test directory');
$ENV{LOCPATH} = $locdir;

my $mn = start_memnode();
my $node = new_dmindex_node('keyenc_libc', [$mn],
	init => { extra => [ '--locale=C', '--encoding=UTF8' ] });

$node->safe_psql('postgres',
	"CREATE COLLATION keyenc_en (provider = libc, locale = 'en_US.UTF-8')");
# the locale really is one with rules: it puts 'a' before 'B', bytes do not
is( $node->safe_psql(
		'postgres',
		"SELECT 'a' < 'B' COLLATE keyenc_en, 'a' < 'B' COLLATE \"C\""),
	't|f',
	'en_US.UTF-8 orders by its rules, "C" by bytes');

my ($state, $err) = query_sqlstate($node, 'postgres',
	"SELECT dmindex_key_encode('a'::text COLLATE keyenc_en)");
is($state, '0A000', 'a libc collation with rules is refused with 0A000');
like($err, qr/dmindex cannot encode strings under collation "keyenc_en"/,
	'the error names the collation');
like($err, qr/HINT:\s+Use COLLATE "C" or an ICU collation/,
	'the hint names COLLATE "C" and ICU collations');

($state, $err) = query_sqlstate($node, 'postgres',
	"SELECT dmindex_key_encode(1, 'x'::bpchar COLLATE keyenc_en)");
is($state, '0A000', 'so is a bpchar column under it');

is( $node->safe_psql(
		'postgres',
		"SELECT dmindex_key_encode('ab'::text COLLATE \"C\"), "
		  . "dmindex_key_encode('a'::text COLLATE \"und-x-icu\") < dmindex_key_encode('B'::text COLLATE \"und-x-icu\")"),
	'\x0161620000|t',
	'"C" and ICU collations are encoded in the same server');

# a database whose default collation is that locale
$node->safe_psql('postgres',
	"CREATE DATABASE keyenc_en TEMPLATE template0 LOCALE 'en_US.UTF-8' ENCODING 'UTF8'");
$node->safe_psql('keyenc_en', 'CREATE EXTENSION dmindex');
($state, $err) = query_sqlstate($node, 'keyenc_en',
	"SELECT dmindex_key_encode('a'::text)");
is($state, '0A000', 'the default collation of an en_US.UTF-8 database is refused');
like($err, qr/under collation "default"/, 'the error names the default collation');
is($node->safe_psql('keyenc_en', "SELECT dmindex_key_encode('ab'::text COLLATE \"C\")"),
	'\x0161620000', 'COLLATE "C" works in that database');
is($node->safe_psql('keyenc_en', 'SELECT dmindex_key_encode(7)'),
	'\x018000000000000007', 'and keys without strings need no collation');

$node->stop;
done_testing();
