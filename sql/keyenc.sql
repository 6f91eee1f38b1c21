--
-- keyenc: the byte key encoding of variable-length and multi-column keys
-- (src/pg/dmkeyenc.c; docs/design.md §5.2 is its contract with the core),
-- checked without any index against the types' own comparisons: for every
-- type and collation, ordering by the key equals ordering by the value in
-- both directions with NULLs first and last, keys are equal exactly when
-- the values are, no key is a proper prefix of another, multi-column keys
-- order like ORDER BY a, b DESC, c ..., key prefixes and prefix successors
-- delimit the keys with given leading values.
--

-- keyenc_check(tab): tab (a table, or a subquery with an alias) has one column v.  The ranks of the rows ordered by
-- v and ordered by the key agree exactly when the key orders like v and is
-- equal exactly for equal values (peers share a rank); prefix_pairs counts
-- keys that are a proper prefix of another (ASC and DESC keys).
CREATE FUNCTION keyenc_check(tab text,
	OUT n bigint, OUT distinct_values bigint, OUT distinct_keys bigint,
	OUT asc_last bool, OUT asc_first bool, OUT desc_first bool, OUT desc_last bool,
	OUT prefix_pairs bigint)
LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE format($q$
		CREATE TEMP TABLE keyenc_k AS
		SELECT v,
		       dmindex_key_encode(v) AS al,
		       dmindex_key_encode_with('{asc nulls first}', v) AS af,
		       dmindex_key_encode_with('{desc}', v) AS df,
		       dmindex_key_encode_with('{DESC NULLS LAST}', v) AS dl
		FROM %s$q$, tab);
	SELECT count(*),
	       count(DISTINCT v) + (count(*) > count(v))::int,
	       count(DISTINCT al),
	       bool_and(r_al = rk_al), bool_and(r_af = rk_af),
	       bool_and(r_df = rk_df), bool_and(r_dl = rk_dl)
	INTO n, distinct_values, distinct_keys, asc_last, asc_first, desc_first, desc_last
	FROM (SELECT v, al,
	             rank() OVER (ORDER BY v ASC NULLS LAST) AS r_al, rank() OVER (ORDER BY al) AS rk_al,
	             rank() OVER (ORDER BY v ASC NULLS FIRST) AS r_af, rank() OVER (ORDER BY af) AS rk_af,
	             rank() OVER (ORDER BY v DESC NULLS FIRST) AS r_df, rank() OVER (ORDER BY df) AS rk_df,
	             rank() OVER (ORDER BY v DESC NULLS LAST) AS r_dl, rank() OVER (ORDER BY dl) AS rk_dl
	      FROM keyenc_k) r;
	SELECT count(*) INTO prefix_pairs
	FROM keyenc_k a, keyenc_k b
	WHERE (octet_length(a.al) < octet_length(b.al) AND substr(b.al, 1, octet_length(a.al)) = a.al)
	   OR (octet_length(a.df) < octet_length(b.df) AND substr(b.df, 1, octet_length(a.df)) = a.df);
	DROP TABLE keyenc_k;
END
$f$;

-- ---- the format, on a few values ---------------------------------------------

-- marker 01 then the value; NULL is 02 (NULLS LAST) or 00 (NULLS FIRST);
-- DESC complements the value, not the marker
SELECT dmindex_key_encode(1) AS int_1, dmindex_key_encode(-1::int8) AS int_minus_1,
       dmindex_key_encode(NULL::int) AS null_last,
       dmindex_key_encode_with('{asc nulls first}', NULL::int) AS null_first,
       dmindex_key_encode_with('{desc}', 1) AS desc_1;
-- bytes escaped (00 -> 00 ff) and terminated (00 00)
SELECT dmindex_key_encode('\x610062'::bytea) AS bytea_a0b, dmindex_key_encode(''::bytea) AS bytea_empty,
       dmindex_key_encode('ab'::text COLLATE "C") AS text_ab;
-- numeric: class, exponent + 2^31, digit pairs + 1, 00; negatives complemented
SELECT dmindex_key_encode(123.450) AS n_123_45, dmindex_key_encode(-123.45) AS n_minus_123_45,
       dmindex_key_encode(0.0) AS n_zero, dmindex_key_encode('NaN'::numeric) AS n_nan,
       dmindex_key_encode('-Infinity'::numeric) AS n_minus_inf;
-- lengths (what the access method will compare with its maximum)
SELECT octet_length(dmindex_key_encode(1::int2)) AS int2, octet_length(dmindex_key_encode(true)) AS bool,
       octet_length(dmindex_key_encode(1::oid)) AS oid,
       octet_length(dmindex_key_encode('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid)) AS uuid,
       octet_length(dmindex_key_encode(repeat('x', 1000) COLLATE "C")) AS text_1000,
       octet_length(dmindex_key_encode(1, 'abc'::text COLLATE "C", 2.5)) AS three_columns;
-- explicit VARIADIC arrays are columns too
SELECT dmindex_key_encode(VARIADIC ARRAY[1, 2]) = dmindex_key_encode(1, 2) AS variadic_array,
       dmindex_key_encode(VARIADIC NULL::int[]) IS NULL AS variadic_null;

-- ---- integers: one domain --------------------------------------------------------

CREATE TABLE ke_int (v int8);
INSERT INTO ke_int VALUES (-9223372036854775808), (9223372036854775807), (-2147483648),
	(2147483647), (-32768), (32767), (0), (0), (1), (-1), (255), (256), (-256), (65536),
	(NULL), (NULL);
INSERT INTO ke_int SELECT (g * 2654435761) % 1000003 - 500000 FROM generate_series(1, 150) g;
SELECT * FROM keyenc_check('ke_int');
-- int2, int4 and int8 of equal values encode equally, and order across types
CREATE TABLE ke_int3 AS
SELECT v::int2 AS i2, v::int4 AS i4, v::int8 AS i8 FROM ke_int WHERE v BETWEEN -32768 AND 32767;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE dmindex_key_encode(i2) <> dmindex_key_encode(i4)
                           OR dmindex_key_encode(i4) <> dmindex_key_encode(i8)) AS unequal
FROM ke_int3;
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE (a.i2 < b.i8) <> (dmindex_key_encode(a.i2) < dmindex_key_encode(b.i8))
                           OR (a.i4 = b.i2) <> (dmindex_key_encode(a.i4) = dmindex_key_encode(b.i2))) AS wrong
FROM ke_int3 a, ke_int3 b;
SELECT * FROM keyenc_check('(SELECT i2 AS v FROM ke_int3) s');
SELECT * FROM keyenc_check('(SELECT i4 AS v FROM ke_int3) s');

-- ---- floats: one domain; -0 = +0; every NaN equal and above +Infinity -----------

CREATE TABLE ke_float (v float8);
INSERT INTO ke_float VALUES ('-Infinity'), (-1.7976931348623157e308), (-1e100), (-1.5),
	(-1e-320), ('-0'), (0), (1e-320), (2.2250738585072014e-308), (0.1), (0.5), (1),
	(1.5), (1e100), (1.7976931348623157e308), ('Infinity'), ('NaN'), (NULL);
INSERT INTO ke_float VALUES ('NaN'::float8 * -1), ('Infinity'::float8 - 'Infinity'::float8);
INSERT INTO ke_float SELECT ((g * 7919) % 2003 - 1000) / 7.0 FROM generate_series(1, 100) g;
SELECT * FROM keyenc_check('ke_float');
SELECT dmindex_key_encode('-0'::float8) = dmindex_key_encode(0::float8) AS minus_zero,
       dmindex_key_encode('NaN'::float8 * -1) = dmindex_key_encode('NaN'::float4) AS nans,
       dmindex_key_encode(1.5::float4) = dmindex_key_encode(1.5::float8) AS float4_float8,
       (dmindex_key_encode(1.1::float4) > dmindex_key_encode(1.1::float8)) = (1.1::float4 > 1.1::float8)
         AS float4_float8_order;
-- (the values a float4 holds: no overflow, no underflow)
CREATE TABLE ke_float2 AS SELECT v::float4 AS f4, v AS f8 FROM ke_float
WHERE v IS NULL OR v = 'NaN' OR v = 0 OR abs(v) = 'Infinity' OR abs(v) BETWEEN 1e-37 AND 3e38;
SELECT * FROM keyenc_check('(SELECT f4 AS v FROM ke_float2) s');
SELECT count(*) FILTER (WHERE (a.f4 < b.f8) <> (dmindex_key_encode(a.f4) < dmindex_key_encode(b.f8))
                           OR (a.f4 = b.f8) <> (dmindex_key_encode(a.f4) = dmindex_key_encode(b.f8))) AS wrong
FROM ke_float2 a, ke_float2 b;

-- ---- date and time types, money, oid, bool ---------------------------------------

CREATE TABLE ke_date (v date);
INSERT INTO ke_date VALUES ('-infinity'), ('4713-01-01 BC'), ('0001-01-01'), ('1999-12-31'),
	('2000-01-01'), ('2000-01-01'), ('5874897-12-31'), ('infinity'), (NULL);
INSERT INTO ke_date SELECT '2000-01-01'::date + (g * 7919) % 20000 - 10000 FROM generate_series(1, 50) g;
SELECT * FROM keyenc_check('ke_date');
CREATE TABLE ke_ts (v timestamp);
INSERT INTO ke_ts VALUES ('-infinity'), ('4713-01-01 00:00 BC'), ('2000-01-01'),
	('2000-01-01 00:00:00.000001'), ('1999-12-31 23:59:59.999999'), ('294276-12-31 23:59:59'),
	('infinity'), (NULL);
INSERT INTO ke_ts SELECT '2000-01-01'::timestamp + ((g * 7919) % 20000 - 10000) * interval '1 hour 1.5 s'
FROM generate_series(1, 50) g;
SELECT * FROM keyenc_check('ke_ts');
CREATE TABLE ke_tstz (v timestamptz);
INSERT INTO ke_tstz SELECT v AT TIME ZONE 'UTC' FROM ke_ts;
INSERT INTO ke_tstz VALUES ('2000-01-01 00:00+02'), ('2000-01-01 00:00-02'), ('1999-12-31 22:00+00');
SELECT * FROM keyenc_check('ke_tstz');
CREATE TABLE ke_time (v time);
INSERT INTO ke_time VALUES ('00:00'), ('24:00'), ('12:00'), ('12:00:00.000001'), ('11:59:59.999999'), (NULL);
INSERT INTO ke_time SELECT '00:00'::time + (g * 7919 % 86400) * interval '1 s' FROM generate_series(1, 50) g;
SELECT * FROM keyenc_check('ke_time');
CREATE TABLE ke_money (v money);
INSERT INTO ke_money VALUES ('-92233720368547758.08'), ('92233720368547758.07'), (0), (0.01),
	(-0.01), (1), (NULL);
INSERT INTO ke_money SELECT ((g * 7919) % 2003 - 1000)::numeric / 100 FROM generate_series(1, 50) g;
SELECT * FROM keyenc_check('ke_money');
CREATE TABLE ke_oid (v oid);
INSERT INTO ke_oid VALUES (0), (1), (2147483647), (2147483648), (4294967295), (4294967295), (NULL);
INSERT INTO ke_oid SELECT (g * 2654435761) % 4294967296 FROM generate_series(1, 50) g;
SELECT * FROM keyenc_check('ke_oid');
CREATE TABLE ke_bool (v bool);
INSERT INTO ke_bool VALUES (true), (false), (NULL), (true), (false);
SELECT * FROM keyenc_check('ke_bool');

-- ---- uuid, bytea -------------------------------------------------------------------

CREATE TABLE ke_uuid (v uuid);
INSERT INTO ke_uuid VALUES ('00000000-0000-0000-0000-000000000000'), ('ffffffff-ffff-ffff-ffff-ffffffffffff'),
	('00000000-0000-0000-0000-000000000001'), ('80000000-0000-0000-0000-000000000000'),
	('7fffffff-ffff-ffff-ffff-ffffffffffff'), (NULL);
INSERT INTO ke_uuid SELECT md5(g::text)::uuid FROM generate_series(1, 100) g;
INSERT INTO ke_uuid SELECT md5(g::text)::uuid FROM generate_series(1, 10) g;
SELECT * FROM keyenc_check('ke_uuid');

CREATE TABLE ke_bytea (v bytea);
INSERT INTO ke_bytea VALUES ('\x'), ('\x00'), ('\x0000'), ('\x000000'), ('\x0001'), ('\x00ff'),
	('\x00ff00'), ('\x01'), ('\x0100'), ('\xff'), ('\xffff'), ('\xff00'), ('\xff0000'), ('\xfe'),
	('\x61'), ('\x6100'), ('\x610000'), ('\x6101'), ('\x6162'), ('\x61ff'), ('\x00'), (NULL);
INSERT INTO ke_bytea SELECT substr(sha256(g::text::bytea), 1, g % 7) FROM generate_series(1, 80) g;
INSERT INTO ke_bytea SELECT set_byte(substr(sha256(g::text::bytea), 1, 4), g % 4, 0) FROM generate_series(1, 40) g;
INSERT INTO ke_bytea VALUES (decode(repeat('00', 3000), 'hex')), (decode(repeat('00', 2999), 'hex')),
	(decode(repeat('00', 2999) || '01', 'hex')), (decode(repeat('ab', 5000), 'hex'));
SELECT * FROM keyenc_check('ke_bytea');

-- ---- numeric: exact, whatever the scale ----------------------------------------------

CREATE TABLE ke_num (v numeric);
INSERT INTO ke_num VALUES ('NaN'), ('Infinity'), ('-Infinity'), ('NaN'), (0), (-0.0), (0.000),
	(1), (1.0), (1.00), (-1), (-1.000), (10), (100), (1e3), (1000.000), (0.1), (0.10), (0.01),
	(0.011), (0.0101), (1.01), (1.1), (11), (101), (110), (9.99), (10.01), (99), (999.999),
	(5), (0.5), (0.05), (50), (55), (5.5), (0.55), (505), (5.05), (-0.5), (-5), (-50), (-55),
	(-5.5), (-0.55), (-0.05), (-505), (123456789.123456789), (-123456789.123456789),
	(123456789.12345679), (1e100), (1e-100), (-1e100), (-1e-100), (9.9e99), (1.01e-100), (NULL),
	-- digit pairs 00 inside the digits
	(10000), (10001), (-10000), (-10001), (1.00001), (100.001), (0.00100001), (1000001), (1000000.1);
INSERT INTO ke_num VALUES (('1' || repeat('0', 131071))::numeric), (('9' || repeat('9', 131071))::numeric),
	(-('1' || repeat('0', 131071))::numeric), (('0.' || repeat('0', 16382) || '1')::numeric),
	(-('0.' || repeat('0', 16382) || '1')::numeric), (('0.' || repeat('0', 16381) || '10')::numeric);
INSERT INTO ke_num SELECT ((g * 7919) % 20011 - 10000)::numeric / 10::numeric ^ (g % 9) FROM generate_series(1, 150) g;
INSERT INTO ke_num SELECT round(((g * 7919) % 20011 - 10000)::numeric / 10::numeric ^ (g % 5), 6) FROM generate_series(1, 60) g;
SELECT * FROM keyenc_check('ke_num');
SELECT dmindex_key_encode(1.0) = dmindex_key_encode(1.00::numeric(10,5)) AS scale_ignored,
       dmindex_key_encode(-0.0) = dmindex_key_encode(0::numeric) AS zero,
       dmindex_key_encode('NaN'::numeric) > dmindex_key_encode('Infinity'::numeric) AS nan_above_inf;

-- ---- strings -----------------------------------------------------------------------

CREATE TABLE ke_strs (s text);
INSERT INTO ke_strs VALUES (''), (' '), ('  '), ('a'), ('a'), ('A'), ('b'), ('B'), ('ab'), ('aB'),
	('Ab'), ('AB'), ('a b'), ('a '), ('a  '), ('ab' || chr(1)), ('abc'), ('abd'), ('ß'), ('ss'),
	('SS'), ('é'), ('e' || U&'\0301'), ('É'), ('e'), ('E'), ('f'), ('z'), ('Z'), ('日本'),
	('日本語'), ('🙂'), ('Ω'), ('ω'), ('0'), ('9'), ('10'), ('-'), ('_'), ('ａ'), (chr(127)),
	(chr(128)), (chr(255)), (chr(65533)), ('x'), ('xx'), (repeat('x', 3000)),
	(repeat('x', 3000) || 'y'), (repeat('x', 2999)), (repeat('é', 1500)), (NULL), (NULL);
INSERT INTO ke_strs SELECT md5(g::text) FROM generate_series(1, 40) g;
INSERT INTO ke_strs SELECT upper(md5(g::text)) FROM generate_series(1, 20) g;
INSERT INTO ke_strs SELECT left(md5(g::text), g % 5) FROM generate_series(1, 30) g;

CREATE COLLATION keyenc_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE ke_text_c (v text COLLATE "C");
INSERT INTO ke_text_c SELECT s FROM ke_strs;
SELECT * FROM keyenc_check('ke_text_c');
CREATE TABLE ke_text_posix (v text COLLATE "POSIX");
INSERT INTO ke_text_posix SELECT s FROM ke_strs;
SELECT * FROM keyenc_check('ke_text_posix');
-- glibc's C.utf8 has no collation rules: strcoll is strcmp, so bytes
CREATE TABLE ke_text_cutf8 (v text COLLATE "C.utf8");
INSERT INTO ke_text_cutf8 SELECT s FROM ke_strs;
SELECT * FROM keyenc_check('ke_text_cutf8');
CREATE TABLE ke_text_icu (v text COLLATE "en-x-icu");
INSERT INTO ke_text_icu SELECT s FROM ke_strs;
SELECT * FROM keyenc_check('ke_text_icu');
-- ICU calls these two equal (see keyenc_ci below), PostgreSQL breaks the tie
-- of a deterministic collation by their bytes: so must the keys
SELECT 'é'::text COLLATE "en-x-icu" = 'e' || U&'\0301' COLLATE "en-x-icu" AS postgres_equal,
       dmindex_key_encode('é'::text COLLATE "en-x-icu") <> dmindex_key_encode('e' || U&'\0301' COLLATE "en-x-icu") AS tiebreak;
CREATE TABLE ke_text_ci (v text COLLATE keyenc_ci);
INSERT INTO ke_text_ci SELECT s FROM ke_strs;
SELECT * FROM keyenc_check('ke_text_ci');
SELECT dmindex_key_encode('Abc'::text COLLATE keyenc_ci) = dmindex_key_encode('aBC'::text COLLATE keyenc_ci) AS ci_equal,
       dmindex_key_encode('é'::text COLLATE keyenc_ci) = dmindex_key_encode('e' || U&'\0301' COLLATE keyenc_ci) AS ci_canonical;
-- ICU collations whose sort keys disagree with ucol_strcoll (PostgreSQL's
-- comparison) are refused.  Shifted variable characters: PostgreSQL calls
-- '-' ZWSP U+0308 and '-' different, their sort keys are equal; backwards
-- secondaries ("fr-CA"): 'ñ' < 'ñ' ZWJ U+030A, but not by sort key.
CREATE COLLATION keyenc_shifted (provider = icu, locale = 'und-u-ka-shifted-ks-level2', deterministic = false);
CREATE COLLATION keyenc_backwards (provider = icu, locale = 'fr-CA');
SELECT U&'-\200B\0308' COLLATE keyenc_shifted = '-' AS shifted_equal,
       U&'\00F1' COLLATE keyenc_backwards < U&'\00F1\200D\030A' AS backwards_less;
SELECT dmindex_key_encode(U&'-\200B\0308'::text COLLATE keyenc_shifted);
SELECT dmindex_key_encode(U&'\00F1'::text COLLATE keyenc_backwards);
DROP COLLATION keyenc_shifted;
DROP COLLATION keyenc_backwards;
-- the database's default collation, whatever it is here
CREATE TABLE ke_text_default (v text);
INSERT INTO ke_text_default SELECT s FROM ke_strs;
SELECT * FROM keyenc_check('ke_text_default');
CREATE TABLE ke_varchar (v varchar(4000) COLLATE "und-x-icu");
INSERT INTO ke_varchar SELECT s FROM ke_strs;
SELECT * FROM keyenc_check('ke_varchar');
-- name: its own type, in text's domain (text_ops has name = text)
CREATE TABLE ke_name (v name COLLATE "C");
INSERT INTO ke_name SELECT s FROM ke_strs WHERE octet_length(s) < 64;
SELECT * FROM keyenc_check('ke_name');
CREATE TABLE ke_name_icu (v name COLLATE "en-x-icu");
INSERT INTO ke_name_icu SELECT s FROM ke_strs WHERE octet_length(s) < 64;
SELECT * FROM keyenc_check('ke_name_icu');
SELECT count(*) FILTER (WHERE dmindex_key_encode(v) <> dmindex_key_encode(v::text)) AS name_text_differ
FROM ke_name_icu;
-- bpchar: trailing spaces do not count
CREATE TABLE ke_bpchar_c (v bpchar COLLATE "C");
INSERT INTO ke_bpchar_c SELECT s FROM ke_strs;
INSERT INTO ke_bpchar_c SELECT s || '   ' FROM ke_strs WHERE length(s) < 5;
SELECT * FROM keyenc_check('ke_bpchar_c');
CREATE TABLE ke_bpchar_icu (v bpchar COLLATE "en-x-icu");
INSERT INTO ke_bpchar_icu SELECT v FROM ke_bpchar_c;
SELECT * FROM keyenc_check('ke_bpchar_icu');
CREATE TABLE ke_bpchar_ci (v char(12) COLLATE keyenc_ci);
INSERT INTO ke_bpchar_ci SELECT v FROM ke_bpchar_c WHERE length(v) <= 12;
SELECT * FROM keyenc_check('ke_bpchar_ci');
SELECT dmindex_key_encode('ab  '::bpchar COLLATE "C") = dmindex_key_encode('ab'::char(7) COLLATE "C") AS bpchar_spaces,
       dmindex_key_encode('ab  '::text COLLATE "C") = dmindex_key_encode('ab'::text COLLATE "C") AS text_spaces;

-- a database whose default collation is ICU's (PostgreSQL 15): "default"
-- is then encoded through ICU sort keys
SELECT current_database() AS keyenc_db \gset
CREATE DATABASE keyenc_icu_default TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'
	LOCALE_PROVIDER icu ICU_LOCALE 'en';
\c keyenc_icu_default
CREATE EXTENSION dmindex;
CREATE TABLE ke_def (v text);
INSERT INTO ke_def VALUES (''), ('a'), ('A'), ('b'), ('B'), ('ab'), ('a b'), ('é'), ('e' || U&'\0301'),
	('e'), ('E'), ('ß'), ('ss'), ('日本'), ('a'), (NULL);
INSERT INTO ke_def SELECT md5(g::text) FROM generate_series(1, 30) g;
SELECT count(*) AS n, bool_and(r_v = r_k) AS ranks_agree,
       bool_and(r_vd = r_kd) AS desc_ranks_agree
FROM (SELECT rank() OVER (ORDER BY v) AS r_v, rank() OVER (ORDER BY dmindex_key_encode(v)) AS r_k,
             rank() OVER (ORDER BY v DESC) AS r_vd,
             rank() OVER (ORDER BY dmindex_key_encode_with('{desc}', v)) AS r_kd
      FROM ke_def) s;
SELECT 'a' < 'B'::text AS icu_order, dmindex_key_encode('a'::text) < dmindex_key_encode('B'::text) AS key_order;
\c :keyenc_db
DROP DATABASE keyenc_icu_default;

-- ---- three columns: ORDER BY with directions and NULL placements -------------------------

CREATE TABLE ke_multi (a int, b text COLLATE "en-x-icu", c numeric);
INSERT INTO ke_multi
SELECT a, b, c
FROM unnest(ARRAY[NULL, -1, 0, 1]) a,
     unnest(ARRAY[NULL, '', 'a', 'A', 'b', 'a b', 'a' || chr(1)]) b,
     unnest(ARRAY[NULL, -1.5, 0, 1.0, 1.00, 2, 'NaN', '-Infinity']::numeric[]) c;
INSERT INTO ke_multi SELECT * FROM ke_multi WHERE a = 0;

-- keyenc_multi(order_by, options): the rows ranked by ORDER BY order_by and
-- by their key with those column options; key prefixes of one and two columns
-- are prefixes of the key; no key is a proper prefix of another.
CREATE FUNCTION keyenc_multi(order_by text, opts text[],
	OUT n bigint, OUT ranks_agree bool, OUT distinct_keys bigint,
	OUT key_prefixes bool, OUT prefix_pairs bigint)
LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE format($q$
		SELECT count(*), bool_and(r_v = r_k), count(DISTINCT k),
		       bool_and(substr(k, 1, octet_length(k1)) = k1 AND substr(k, 1, octet_length(k2)) = k2
		                AND octet_length(k1) < octet_length(k2) AND octet_length(k2) < octet_length(k))
		FROM (SELECT k, k1, k2, rank() OVER (ORDER BY %s) AS r_v, rank() OVER (ORDER BY k) AS r_k
		      FROM (SELECT *, dmindex_key_encode_with(%L, a, b, c) AS k,
		                   dmindex_key_encode_with(%L, a) AS k1,
		                   dmindex_key_encode_with(%L, a, b) AS k2
		            FROM ke_multi) s) r$q$,
		order_by, opts, opts[1:1], opts[1:2])
	INTO n, ranks_agree, distinct_keys, key_prefixes;
	EXECUTE format($q$
		WITH k AS (SELECT dmindex_key_encode_with(%L, a, b, c) AS k FROM ke_multi)
		SELECT count(*) FROM k x, k y
		WHERE octet_length(x.k) < octet_length(y.k) AND substr(y.k, 1, octet_length(x.k)) = x.k$q$, opts)
	INTO prefix_pairs;
END
$f$;
SELECT count(*) AS rows, count(DISTINCT (a, b, c)) AS distinct_rows FROM ke_multi;
SELECT * FROM keyenc_multi('a, b, c', '{asc,asc,asc}');
SELECT * FROM keyenc_multi('a, b DESC NULLS FIRST, c', '{asc,desc nulls first,asc}');
SELECT * FROM keyenc_multi('a, b DESC NULLS LAST, c NULLS FIRST', '{asc,desc nulls last,asc nulls first}');
SELECT * FROM keyenc_multi('a DESC, b, c DESC NULLS LAST', '{desc,asc,desc nulls last}');
SELECT * FROM keyenc_multi('a NULLS FIRST, b DESC, c DESC', '{asc nulls first,desc,desc}');
SELECT * FROM keyenc_multi('a DESC NULLS LAST, b NULLS FIRST, c', '{desc nulls last,asc nulls first,asc}');

-- ---- prefix successors -------------------------------------------------------------

SELECT p, dmindex_key_prefix_successor(p) AS successor
FROM unnest(ARRAY['\x', '\xff', '\xffff', '\x00', '\x01ff', '\x12fe', '\x12ffff', '\x00ff00']::bytea[]) p;
-- "leading columns = X" as [prefix(X), successor(prefix(X))): exactly the
-- rows whose leading values equal X (NULL = NULL here), for one and two
-- leading columns and every direction
CREATE FUNCTION keyenc_successors(opts text[], OUT prefixes bigint, OUT wrong bigint)
LANGUAGE sql AS $f$
	WITH k AS (SELECT a, b, c, dmindex_key_encode_with(opts, a, b, c) AS k FROM ke_multi),
	     p AS (SELECT DISTINCT a, NULL::text COLLATE "en-x-icu" AS b, false AS two,
	                  dmindex_key_encode_with(opts[1:1], a) AS p FROM ke_multi
	           UNION ALL
	           SELECT DISTINCT a, b, true, dmindex_key_encode_with(opts[1:2], a, b) FROM ke_multi),
	     ps AS (SELECT *, dmindex_key_prefix_successor(p) AS s FROM p)
	SELECT (SELECT count(*) FROM ps),
	       count(*) FILTER (WHERE (k.k >= ps.p AND (ps.s IS NULL OR k.k < ps.s))
	                              <> (k.a IS NOT DISTINCT FROM ps.a
	                                  AND (NOT ps.two OR k.b IS NOT DISTINCT FROM ps.b)))
	FROM k, ps
$f$;
SELECT * FROM keyenc_successors('{asc,asc,asc}');
SELECT * FROM keyenc_successors('{desc,desc nulls last,asc}');
SELECT * FROM keyenc_successors('{asc nulls first,desc,desc}');

-- ---- errors ------------------------------------------------------------------------

SELECT dmindex_key_encode(point '(1,2)');
SELECT dmindex_key_encode(1, 'abc');
SELECT dmindex_key_encode_with('{sideways}', 1);
SELECT dmindex_key_encode_with('{desc nulls}', 1);
SELECT dmindex_key_encode_with('{asc nulls first last}', 1);
SELECT dmindex_key_encode_with('{asc}', 1, 2);
SELECT dmindex_key_encode_with('{{asc},{asc}}', 1, 2);
-- strings of two different implicit collations: none to encode them under
CREATE TABLE ke_two (x text COLLATE "C", y text COLLATE "en-x-icu");
INSERT INTO ke_two VALUES ('a', 'b');
SELECT dmindex_key_encode(x, y) FROM ke_two;
-- a column option of NULL or '' is the default
SELECT dmindex_key_encode_with('{NULL,""}', 1, 2) = dmindex_key_encode(1, 2) AS defaults,
       dmindex_key_encode_with(NULL, 1, 2) = dmindex_key_encode(1, 2) AS null_options;

DROP TABLE ke_int, ke_int3, ke_float, ke_float2, ke_date, ke_ts, ke_tstz, ke_time, ke_money,
	ke_oid, ke_bool, ke_uuid, ke_bytea, ke_num, ke_strs, ke_text_c, ke_text_posix,
	ke_text_cutf8, ke_text_icu, ke_text_ci, ke_text_default, ke_varchar, ke_name, ke_name_icu,
	ke_bpchar_c, ke_bpchar_icu, ke_bpchar_ci, ke_multi, ke_two;
DROP FUNCTION keyenc_check(text), keyenc_multi(text, text[]), keyenc_successors(text[]);
DROP COLLATION keyenc_ci;
