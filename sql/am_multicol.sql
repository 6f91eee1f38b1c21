--
-- am_multicol: indexes of key format VAR (docs/design.md §5.2, §8): several
-- columns, DESC / NULLS FIRST columns, and text, varchar, bpchar, name,
-- bytea, uuid and numeric keys.  Every query is asked of a dmindex index
-- and of a btree index over the same data (dm_compare, test_setup), which
-- must give the same rows, in the same order for ORDER BY queries.  Then
-- the limits: keys at the maximum length and one byte over (54000, nothing
-- written), and VACUUM, REINDEX, TRUNCATE with dmindex_check.
--
SELECT setseed(0.1616);
CREATE TABLE mc_queries (n int PRIMARY KEY, label text, ordered bool, modes text[], q text);

-- ---- three columns: (a int4, b text, c numeric) -----------------------------
-- few distinct a (runs of equal prefixes across many 512-byte nodes), b
-- strings of 0..12 characters with shared prefixes, c numeric with
-- 1.0 / 1.00, -0, NaN, infinities; NULLs in every column.
CREATE TABLE mc_dm (id int, a int4, b text COLLATE "C", c numeric) WITH (autovacuum_enabled = false);
CREATE FUNCTION mc_row(g int) RETURNS mc_dm LANGUAGE sql AS $$
SELECT g,
	CASE WHEN random() < 0.05 THEN NULL ELSE floor(random() * 8)::int4 - 2 END,
	CASE WHEN random() < 0.05 THEN NULL
		 ELSE substr('ab' || md5((floor(random() * 300))::text), 1, floor(random() * 13)::int) END,
	CASE WHEN random() < 0.05 THEN NULL
		 ELSE ('{1.0, 1.00, -0, 0, NaN, Infinity, -Infinity, 2.5, -2.50, 1e-20, 123456789.123456789}'::numeric[])
			  [1 + floor(random() * 11)::int] END
$$;
INSERT INTO mc_dm SELECT (mc_row(g)).* FROM generate_series(1, 3000) g;
-- built on a populated table, then inserted into, updated and deleted from
CREATE INDEX mc_dm_abc ON mc_dm USING dmindex (a, b, c) WITH (node_size = 512);
INSERT INTO mc_dm SELECT (mc_row(g)).* FROM generate_series(3001, 4500) g;
UPDATE mc_dm SET c = c + 1 WHERE id % 10 = 7;
DELETE FROM mc_dm WHERE id % 10 = 3;
-- the same data with DESC and NULLS FIRST columns
CREATE TABLE mcd_dm WITH (autovacuum_enabled = false) AS SELECT * FROM mc_dm;
CREATE INDEX mcd_dm_abc ON mcd_dm USING dmindex (a DESC NULLS LAST, b NULLS FIRST, c DESC)
	WITH (node_size = 512);
CREATE TABLE mc_bt WITH (autovacuum_enabled = false) AS SELECT * FROM mc_dm;
CREATE TABLE mcd_bt WITH (autovacuum_enabled = false) AS SELECT * FROM mc_dm;
CREATE INDEX mc_bt_abc ON mc_bt (a, b, c);
CREATE INDEX mcd_bt_abc ON mcd_bt (a DESC NULLS LAST, b NULLS FIRST, c DESC);
VACUUM ANALYZE mc_dm, mcd_dm, mc_bt, mcd_bt;

SELECT * FROM dmindex_check('mc_dm_abc', true);
SELECT * FROM dmindex_check('mcd_dm_abc', true);
SELECT height >= 3 AS tall, entries FROM dmindex_stats('mc_dm_abc');
SELECT count(*) AS rows, count(DISTINCT (a, b)) AS ab, count(*) FILTER (WHERE c = 1) AS c_one,
	count(*) FILTER (WHERE c = 'NaN') AS c_nan FROM mc_dm;

INSERT INTO mc_queries VALUES
-- leading prefixes
(1, 'a =', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 3'),
(2, 'a = and b =', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 1 AND b = ''ab'''),
(3, 'a, b, c =', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 0 AND b = ''ab'' AND c = 1'),
(4, 'c = 1.00 is c = 1.0', false, '{index,bitmap}', 'SELECT id, c::text FROM %1$s WHERE a = 2 AND b = ''a'' AND c = 1.00'),
(5, 'c = -0', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 1 AND b = ''ab'' AND c = 0'),
(6, 'c = NaN', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 4 AND b = '''' AND c = ''NaN'''),
-- a range on the column after the prefix
(10, 'a <', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a < 1'),
(11, 'a >= and a <', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a >= 0 AND a < 2'),
(12, 'a = and b >', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 3 AND b > ''ab5'''),
(13, 'a = and b between', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = -1 AND b BETWEEN ''ab2'' AND ''ab7'''),
(14, 'a = and b <=', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = -1 AND b <= ''ab3'''),
(15, 'a, b = and c >', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 1 AND b = ''ab'' AND c > 1'),
(16, 'a, b = and c <= -0', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 2 AND b = ''ab'' AND c <= 0'),
(17, 'a, b = and c >= Infinity', false, '{index,bitmap}', 'SELECT id, c::text FROM %1$s WHERE a = 0 AND b = ''a'' AND c >= ''Infinity'''),
(18, 'b = only (no leading column)', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE b = ''ab'''),
(19, 'a = and c = (b skipped)', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 1 AND c = 2.5'),
(20, 'a > and b =', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a > 3 AND b = ''ab'''),
(21, 'contradiction', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 1 AND a = 2'),
(22, 'empty range on b', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 1 AND b > ''z'' AND b < ''a'''),
(23, 'b = empty string', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 2 AND b = '''''),
-- NULLs per column
(30, 'a IS NULL', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a IS NULL'),
(31, 'a IS NULL and b =', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a IS NULL AND b = ''ab'''),
(32, 'a = and b IS NULL', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 2 AND b IS NULL'),
(33, 'a = and b IS NOT NULL', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 2 AND b IS NOT NULL'),
(34, 'a, b = and c IS NULL', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 0 AND b = ''ab'' AND c IS NULL'),
(35, 'a IS NOT NULL and a < 0', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a IS NOT NULL AND a < 0'),
(36, 'a = NULL', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = NULL::int4'),
-- = ANY
(40, 'a = ANY', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = ANY (''{-2, 1, 5, 99, NULL}'')'),
(41, 'a = ANY and b = ANY', false, '{index,bitmap}',
 'SELECT id FROM %1$s WHERE a = ANY (''{0, 3}'') AND b = ANY (''{ab, a, "", ab1}'')'),
(42, 'a = and b = ANY and c >', false, '{index,bitmap}',
 'SELECT id FROM %1$s WHERE a = 1 AND b = ANY (''{ab, a}'') AND c > 0'),
(43, 'a = ANY empty', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = ANY (''{}'')'),
(44, 'b < ANY', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 2 AND b < ANY (''{ab3, ab1}'')'),
(45, 'b >= ANY', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = 2 AND b >= ANY (''{ab3, ab8}'')'),
(46, 'a = ANY, two arrays', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE a = ANY (''{0,1,2}'') AND a = ANY (''{2,3}'')'),
-- ORDER BY on a prefix, both directions, with LIMIT
(50, 'order by a, b', true, '{index}', 'SELECT a, b FROM %1$s ORDER BY a, b LIMIT 200'),
(51, 'order by a desc, b desc', true, '{index}', 'SELECT a, b FROM %1$s ORDER BY a DESC, b DESC LIMIT 200'),
(52, 'a = order by b, c', true, '{index}', 'SELECT b, c::text FROM %1$s WHERE a = 1 ORDER BY b, c LIMIT 100'),
(53, 'a = order by b desc, c desc', true, '{index}', 'SELECT b, c::text FROM %1$s WHERE a = 1 ORDER BY b DESC, c DESC LIMIT 100'),
(54, 'a = ANY order by a', true, '{index}', 'SELECT a FROM %1$s WHERE a = ANY (''{3, -1, 2}'') ORDER BY a'),
(55, 'a = ANY order by a desc', true, '{index}', 'SELECT a FROM %1$s WHERE a = ANY (''{3, -1, 2}'') ORDER BY a DESC'),
(56, 'a >= order by a, b, c', true, '{index}', 'SELECT a, b, c::text FROM %1$s WHERE a >= 4 ORDER BY a, b, c'),
(57, 'a, b = order by c desc', true, '{index}', 'SELECT c::text FROM %1$s WHERE a = 0 AND b = ''ab'' ORDER BY c DESC'),
(58, 'order by a nulls first', true, '{index}', 'SELECT a, b FROM %1$s ORDER BY a DESC NULLS FIRST, b DESC NULLS FIRST LIMIT 300'),
-- joins: parameterized inner scans on two columns
(60, 'nested loop on (a, b)', false, '{nestloop}',
 'SELECT x.id, y.id FROM %1$s x JOIN %1$s y ON y.a = x.a AND y.b = x.b WHERE x.id < 200');

SELECT n, label, mode, c.*
FROM mc_queries, unnest(modes) AS mode,
	LATERAL dm_compare(q, ordered, mode, '{mc_dm}', '{mc_bt}') c
ORDER BY n, mode;

-- the DESC / NULLS FIRST index: its own order, and the reverse
DELETE FROM mc_queries WHERE n >= 50;
INSERT INTO mc_queries VALUES
(70, 'order by a desc nulls last, b nulls first', true, '{index}',
 'SELECT a, b FROM %1$s ORDER BY a DESC NULLS LAST, b NULLS FIRST, c DESC LIMIT 200'),
(71, 'reverse order', true, '{index}',
 'SELECT a, b FROM %1$s ORDER BY a NULLS FIRST, b DESC NULLS LAST, c LIMIT 200'),
(72, 'a = order by b nulls first', true, '{index}',
 'SELECT b, c::text FROM %1$s WHERE a = 2 ORDER BY a DESC, b NULLS FIRST, c DESC'),
(73, 'a = ANY order by a desc', true, '{index}',
 'SELECT a, b FROM %1$s WHERE a = ANY (''{3, -1, 2}'') ORDER BY a DESC NULLS LAST, b NULLS FIRST');
SELECT n, label, mode, c.*
FROM mc_queries, unnest(modes) AS mode,
	LATERAL dm_compare(q, ordered, mode, '{mcd_dm}', '{mcd_bt}') c
ORDER BY n, mode;

-- ---- scrollable cursors ---------------------------------------------------------
-- the same moves on a cursor over each index: every FETCH returns the same
-- rows (a direction change goes on from the last returned entry, whose key
-- the scan keeps a copy of; the key (a, b, c) is fetched, so ties of equal
-- keys cannot reorder)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_sort = off;
BEGIN;
DECLARE mc_c_dm SCROLL CURSOR FOR SELECT a, b, c::text FROM mc_dm WHERE a >= 0 ORDER BY a, b, c;
DECLARE mc_c_bt SCROLL CURSOR FOR SELECT a, b, c::text FROM mc_bt WHERE a >= 0 ORDER BY a, b, c;
SELECT * FROM dm_moves('{10, "BACKWARD 4", 100, "BACKWARD 150", "FORWARD 1", ALL, PRIOR,
                         "BACKWARD 3", NEXT, "BACKWARD ALL", NEXT, LAST, PRIOR, FIRST,
                         "ABSOLUTE 300", "RELATIVE -7", "ABSOLUTE -1", NEXT, NEXT, PRIOR}', 'mc_c_dm', 'mc_c_bt');
CLOSE mc_c_dm;
CLOSE mc_c_bt;
-- over "= ANY" ranges, descending
DECLARE mc_c_dm SCROLL CURSOR FOR SELECT a, b, c::text FROM mcd_dm WHERE a = ANY ('{3, -1, 2}')
	ORDER BY a DESC NULLS LAST, b NULLS FIRST, c DESC;
DECLARE mc_c_bt SCROLL CURSOR FOR SELECT a, b, c::text FROM mcd_bt WHERE a = ANY ('{3, -1, 2}')
	ORDER BY a DESC NULLS LAST, b NULLS FIRST, c DESC;
SELECT * FROM dm_moves('{200, "BACKWARD 150", "BACKWARD 100", 5, ALL, "BACKWARD 1000",
                         PRIOR, NEXT, "BACKWARD ALL", "FORWARD 3", "BACKWARD 2", LAST,
                         "RELATIVE -500", "RELATIVE 499", NEXT, PRIOR}', 'mc_c_dm', 'mc_c_bt');
COMMIT;
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_sort;

-- ---- one column of each new type -------------------------------------------------
CREATE TABLE vt_dm (id int, tc text COLLATE "C", ti text COLLATE "und-x-icu",
	vc varchar(20) COLLATE "C", bc char(6) COLLATE "C", nm name, bt bytea, u uuid, nu numeric)
	WITH (autovacuum_enabled = false);
INSERT INTO vt_dm
SELECT g, s, s, s, s, s, convert_to(s, 'UTF8') || '\x00ff'::bytea,
	CASE WHEN g % 11 = 0 THEN NULL ELSE md5((g % 500)::text)::uuid END,
	CASE WHEN g % 13 = 0 THEN NULL ELSE ((g % 300) - 150) / 7.0 END
FROM (SELECT g, CASE WHEN g % 17 = 0 THEN NULL
		WHEN g % 19 = 0 THEN ''
		ELSE (ARRAY['a', 'B', 'b', 'é', 'e', 'Z', 'ab ', 'a b', 'ä'])[1 + g % 9] || (g % 40)::text END AS s
	  FROM generate_series(1, 2000) g) s;
CREATE TABLE vt_bt WITH (autovacuum_enabled = false) AS SELECT * FROM vt_dm;
CREATE INDEX vt_dm_tc ON vt_dm USING dmindex (tc) WITH (node_size = 256);
CREATE INDEX vt_dm_ti ON vt_dm USING dmindex (ti);
CREATE INDEX vt_dm_vc ON vt_dm USING dmindex (vc) WITH (node_size = 256);
CREATE INDEX vt_dm_bc ON vt_dm USING dmindex (bc) WITH (node_size = 256);
CREATE INDEX vt_dm_nm ON vt_dm USING dmindex (nm) WITH (node_size = 256);
CREATE INDEX vt_dm_bt ON vt_dm USING dmindex (bt) WITH (node_size = 256);
CREATE INDEX vt_dm_u ON vt_dm USING dmindex (u);
CREATE INDEX vt_dm_nu ON vt_dm USING dmindex (nu);
CREATE INDEX vt_bt_tc ON vt_bt (tc);
CREATE INDEX vt_bt_ti ON vt_bt (ti);
CREATE INDEX vt_bt_vc ON vt_bt (vc);
CREATE INDEX vt_bt_bc ON vt_bt (bc);
CREATE INDEX vt_bt_nm ON vt_bt (nm);
CREATE INDEX vt_bt_bt ON vt_bt (bt);
CREATE INDEX vt_bt_u ON vt_bt (u);
CREATE INDEX vt_bt_nu ON vt_bt (nu);
-- more rows after the builds, and the numeric corner cases
INSERT INTO vt_bt SELECT * FROM vt_dm WHERE id % 5 = 0;
INSERT INTO vt_dm SELECT * FROM vt_dm WHERE id % 5 = 0;
INSERT INTO vt_dm (id, nu) VALUES (9001, 1.0), (9002, 1.00), (9003, -0.0), (9004, 'NaN'),
	(9005, 'Infinity'), (9006, '-Infinity'), (9007, 1e-30), (9008, -1e30);
INSERT INTO vt_bt (id, nu) VALUES (9001, 1.0), (9002, 1.00), (9003, -0.0), (9004, 'NaN'),
	(9005, 'Infinity'), (9006, '-Infinity'), (9007, 1e-30), (9008, -1e30);
VACUUM ANALYZE vt_dm, vt_bt;
SELECT i.indexrelid::regclass AS index, c.*
FROM pg_index i, LATERAL dmindex_check(i.indexrelid, true) c
WHERE i.indrelid = 'vt_dm'::regclass ORDER BY 1;

-- each column x each comparison, both directions of ORDER BY
CREATE TABLE vt_cases (col text, v text);
INSERT INTO vt_cases VALUES
('tc', '''b1'''), ('ti', '''b1'''), ('vc', '''b1'''), ('bc', '''ab 3'''), ('nm', '''é2'''),
('bt', '''\x6231''::bytea'), ('u', 'md5(''7'')::uuid'), ('nu', '1.0');
DELETE FROM mc_queries;
INSERT INTO mc_queries
SELECT 100 + 10 * row_number() OVER () + k, col || ' ' || op, ord, modes,
	format('SELECT %s FROM %%1$s WHERE %s', sel, cond)
FROM (SELECT col, v, row_number() OVER () AS r FROM vt_cases) c,
LATERAL (VALUES
	(0, '=', false, '{index,bitmap}'::text[], 'id', format('%s = %s', col, v)),
	(1, '<', false, '{index,bitmap}', 'id', format('%s < %s', col, v)),
	(2, '>=', false, '{index,bitmap}', 'id', format('%s >= %s', col, v)),
	(3, 'is null', false, '{index,bitmap}', 'id', format('%s IS NULL', col)),
	(4, 'order by', true, '{index}', format('%s::text', col), format('%s > %s ORDER BY %s LIMIT 300', col, v, col)),
	(5, 'order by desc', true, '{index}', format('%s::text', col), format('%s <= %s ORDER BY %s DESC LIMIT 300', col, v, col)),
	(6, '= ANY', false, '{index,bitmap}', 'id', format('%s = ANY (ARRAY[%s, NULL, (SELECT %s FROM %%1$s WHERE %s IS NOT NULL ORDER BY 1 LIMIT 1)])', col, v, col, col))
) AS q(k, op, ord, modes, sel, cond);
SELECT n, label, mode, c.*
FROM mc_queries, unnest(modes) AS mode,
	LATERAL dm_compare(q, ordered, mode, '{vt_dm}', '{vt_bt}') c
ORDER BY n, mode;
-- numeric: 1.0 and 1.00 are one key, so both rows; -0 is 0; NaN above Infinity
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id, nu::text FROM vt_dm WHERE nu = 1 ORDER BY id;
SELECT id, nu::text FROM vt_dm WHERE nu = 0 AND id > 9000 ORDER BY id;
SELECT nu::text FROM vt_dm WHERE nu >= 'Infinity' ORDER BY nu;
SELECT nu::text FROM vt_dm WHERE nu IS NOT NULL ORDER BY nu LIMIT 2;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- ---- the longest key ----------------------------------------------------------------
-- 256-byte nodes hold keys of up to 20 bytes (three in a node, with room for
-- the fences): a text column in "C" takes its bytes plus a marker and a
-- two-byte terminator, so 17 characters fit and 18 do not.  The refused row
-- leaves nothing behind.
CREATE TABLE mk (t text COLLATE "C", n int) WITH (autovacuum_enabled = false);
CREATE INDEX mk_t ON mk USING dmindex (t) WITH (node_size = 256);
INSERT INTO mk VALUES (repeat('x', 17), 1);
INSERT INTO mk VALUES (repeat('y', 18), 2);
INSERT INTO mk VALUES (repeat('z', 10000000), 3);
SELECT length(t), dmindex_key_encode(t) IS NOT NULL AS encodes FROM mk;
SELECT length(dmindex_key_encode(repeat('x', 17) COLLATE "C")) AS max_key_bytes;
SELECT * FROM dmindex_check('mk_t', true);
-- many rows of the longest key: the inner levels hold at least two of them
INSERT INTO mk SELECT repeat('x', 17), g FROM generate_series(2, 400) g;
INSERT INTO mk SELECT lpad(g::text, 17, 'm'), g FROM generate_series(1, 400) g;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM mk WHERE t = repeat('x', 17);
SELECT count(*), min(n), max(n) FROM mk WHERE t > lpad('3', 17, 'm') AND t < repeat('n', 3);
SELECT * FROM dmindex_check('mk_t', true);
DELETE FROM mk WHERE n > 1;
-- also at CREATE INDEX, and in a multi-column key
INSERT INTO mk SELECT repeat('w', 5), g FROM generate_series(1, 3) g;
CREATE INDEX mk_tn ON mk USING dmindex (t, n) WITH (node_size = 256);
DELETE FROM mk WHERE length(t) = 17;
CREATE INDEX mk_tn ON mk USING dmindex (t, n) WITH (node_size = 256);
SELECT * FROM dmindex_check('mk_tn', true);
-- what the larger nodes allow
DROP INDEX mk_t, mk_tn;
CREATE INDEX mk_t4 ON mk USING dmindex (t) WITH (node_size = 4096);
INSERT INTO mk VALUES (repeat('v', 785), 4);
INSERT INTO mk VALUES (repeat('v', 786), 5);
SELECT * FROM dmindex_check('mk_t4', true);
-- ALTER INDEX ... SET (node_size) shapes the next build, not the tree: keys
-- stay bounded by the tree's nodes until a rebuild (a scan fitted to the
-- new option's maximum missed the tree's longer keys)
INSERT INTO mk SELECT repeat('u', 30) || g, g FROM generate_series(1, 50) g;
ALTER INDEX mk_t4 SET (node_size = 256);
SELECT count(*) FROM mk WHERE t = repeat('u', 30) || '7';
SELECT count(*) FROM mk WHERE t = repeat('v', 785);
SELECT count(*), min(n), max(n) FROM mk WHERE t > repeat('u', 30) || '3';
SELECT count(*) FROM mk WHERE t >= repeat('u', 30);
INSERT INTO mk VALUES (repeat('s', 100), 6);
SELECT count(*) FROM mk WHERE t = repeat('s', 100);
SELECT * FROM dmindex_check('mk_t4', true);
-- REINDEX builds 256-byte nodes now: the longer keys are refused then
REINDEX INDEX mk_t4;
DELETE FROM mk WHERE length(t) > 17;
REINDEX INDEX mk_t4;
INSERT INTO mk VALUES (repeat('s', 18), 7);
SELECT t, n FROM mk WHERE t > 'a' ORDER BY t;
SELECT * FROM dmindex_check('mk_t4', true);
RESET enable_seqscan;
RESET enable_bitmapscan;

-- ---- the insert buffer's memory ----------------------------------------------------
-- a key's suffix lives as long as its entry in the buffer: a transaction
-- inserting many rows, flushed early every dmindex.insert_buffer entries,
-- holds one buffer's suffixes, not every row's (40,000 rows of 40-byte keys
-- kept about 2.5 MB in the transaction's memory)
CREATE TABLE mm (t text COLLATE "C") WITH (autovacuum_enabled = false);
CREATE INDEX mm_t ON mm USING dmindex (t);
SET dmindex.insert_buffer = 1000;
BEGIN;
INSERT INTO mm SELECT lpad(g::text, 40, 'p') FROM generate_series(1, 40000) g;
SELECT sum(total_bytes) < 512 * 1024 AS bounded FROM pg_backend_memory_contexts
 WHERE name = 'TopTransactionContext' OR parent = 'TopTransactionContext';
COMMIT;
RESET dmindex.insert_buffer;
SELECT count(*) FROM mm WHERE t > 'p';
SELECT * FROM dmindex_check('mm_t', true);
-- a VAR tree's leaf fill counts bytes (a build fills leaves to the
-- fillfactor, 90): counted as entries of 8-byte keys it read about 0.25
REINDEX INDEX mm_t;
SELECT leaf_fill BETWEEN 0.8 AND 0.95 AS fill_by_bytes FROM dmindex_stats('mm_t');
DROP TABLE mm;

-- a scan that stays open while its transaction writes the buffer early (the
-- flush frees the buffer's suffixes): the scan's own copy of the buffered
-- entries must not lose its keys, or they come back twice (or never)
CREATE TABLE mf (a text COLLATE "C", b int);
INSERT INTO mf SELECT 'k' || (g % 10), g FROM generate_series(1, 2000) g;
CREATE INDEX mf_ab ON mf USING dmindex (a, b);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
BEGIN;
SET LOCAL dmindex.insert_buffer = 50;
INSERT INTO mf SELECT 'k3', 10000 + g FROM generate_series(1, 40) g;
EXPLAIN (COSTS OFF) INSERT INTO mf SELECT 'k3copy', b FROM mf WHERE a = 'k3';
INSERT INTO mf SELECT 'k3copy', b FROM mf WHERE a = 'k3';
SELECT count(*) AS copied, count(DISTINCT b) AS distinct_b FROM mf WHERE a = 'k3copy';
ROLLBACK;
-- the same with a cursor, and with a savepoint rolled back while it is open
CREATE FUNCTION mf_fetch(mv text, OUT fetched int, OUT distinct_b int, OUT first_b int, OUT last_b int)
LANGUAGE plpgsql AS $$
DECLARE r record; bs int[] := '{}';
BEGIN
  FOR r IN EXECUTE 'FETCH ' || mv || ' FROM mfc' LOOP bs := bs || r.b; END LOOP;
  fetched := cardinality(bs);
  distinct_b := (SELECT count(DISTINCT x) FROM unnest(bs) x);
  first_b := bs[1];
  last_b := bs[cardinality(bs)];
END $$;
BEGIN;
SET LOCAL dmindex.insert_buffer = 50;
INSERT INTO mf SELECT 'k3', 10000 + g FROM generate_series(1, 40) g;
DECLARE mfc SCROLL CURSOR FOR SELECT b FROM mf WHERE a = 'k3' ORDER BY a, b;
SELECT * FROM mf_fetch('FORWARD 150');
INSERT INTO mf SELECT 'k4', 20000 + g FROM generate_series(1, 100) g;
SELECT * FROM mf_fetch('FORWARD 20');
SAVEPOINT s;
INSERT INTO mf SELECT 'k5', g FROM generate_series(1, 20) g;
ROLLBACK TO s;
SELECT * FROM mf_fetch('FORWARD ALL');
SELECT * FROM mf_fetch('BACKWARD 45');
COMMIT;
DROP FUNCTION mf_fetch(text);
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE mf;

-- ---- maintenance -------------------------------------------------------------------
DELETE FROM mc_dm WHERE id % 4 = 1;
VACUUM mc_dm;
SELECT * FROM dmindex_check('mc_dm_abc', true);
DELETE FROM mc_bt WHERE id % 4 = 1;
SELECT c.* FROM dm_compare('SELECT id, a, b FROM %1$s WHERE a = 1 AND b >= ''ab3''', false, 'index', '{mc_dm}', '{mc_bt}') c;
REINDEX INDEX mc_dm_abc;
SELECT * FROM dmindex_check('mc_dm_abc', true);
SELECT c.* FROM dm_compare('SELECT a, b FROM %1$s ORDER BY a DESC, b DESC LIMIT 500', true, 'index', '{mc_dm}', '{mc_bt}') c;
BEGIN;
TRUNCATE mcd_dm;
INSERT INTO mcd_dm SELECT * FROM mc_dm WHERE a = 2;
SELECT count(*) = (SELECT count(*) FROM mc_dm WHERE a = 2) AS same FROM mcd_dm WHERE a = 2;
COMMIT;
SELECT * FROM dmindex_check('mcd_dm_abc', true);
-- key ranges per instance are for one fixed-width column
SELECT dmindex_set_partitions('mc_dm_abc', ARRAY[1], ARRAY[0, 1]);
SELECT dmindex_owner('mc_dm_abc', 1);
SELECT count(*) AS ranges FROM dmindex_partitions('mc_dm_abc');
-- hopscotch leaves hold 8-byte keys only
CREATE INDEX mk_hop ON mk USING dmindex (t) WITH (leaf_format = hopscotch);
-- a key column dmindex cannot encode
CREATE COLLATION mk_shifted (provider = icu, locale = 'und-u-ka-shifted');
CREATE INDEX mk_bad ON mk USING dmindex (t COLLATE mk_shifted, n);
DROP COLLATION mk_shifted;

DROP FUNCTION mc_row(int);
DROP TABLE mc_dm, mcd_dm, mc_bt, mcd_bt, vt_dm, vt_bt, vt_cases, mk, mc_queries;
