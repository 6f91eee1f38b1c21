--
-- am_btree_compare: every query family, asked of a dmindex index and of a
-- btree index over the same random data, must give the same rows (and for
-- ORDER BY queries, the same rows in the same order).
--
-- The tables come in pairs with the same contents: ac_dm / ac_bt (int8 keys:
-- many duplicates, so runs of equal keys span many 256-byte nodes; values
-- at and near -2^63 and 2^63-1; NULLs; keys spread over the whole int8
-- range), ac2_dm / ac2_bt (a smaller table to join with), and acb_dm /
-- acb_bt (50,000 rows in 256-byte nodes: a tall tree).  The *_dm tables
-- have only dmindex indexes and the *_bt tables only btree indexes.
--
-- dm_compare (test_setup) runs each query template (%1$s, %2$s and %3$s
-- stand for the three tables) on both sets of tables, with sequential scans
-- off and the scans of mode forced: 'index' (plain index scans), 'ios'
-- (index-only scans allowed), 'bitmap', 'merge' (merge joins) or
-- 'nestloop' (nested loops with parameterized inner scans).  It reports
-- the nodes of the dmindex plan, the number of rows, and how many rows only
-- one side returned (both must be 0).  With ordered, each row is numbered
-- in the order it came, so the order must match too.
--

CREATE TABLE ac_queries (n int PRIMARY KEY, label text, ordered bool, modes text[], q text);

-- ---- the data -------------------------------------------------------------
SELECT setseed(0.4242);
CREATE TABLE ac_dm (id int, k int8) WITH (autovacuum_enabled = false);
CREATE TABLE ac2_dm (id int, k int8) WITH (autovacuum_enabled = false);
CREATE TABLE acb_dm (id int, v int4) WITH (autovacuum_enabled = false);
-- ac: half the rows on -20..20, an eighth on the extremes and around
-- 0 and 2^31, 5% NULL, the rest anywhere in the int8 range
INSERT INTO ac_dm
SELECT g, CASE
	WHEN r < 0.50 THEN floor(random() * 41)::int8 - 20
	WHEN r < 0.62 THEN ('{-9223372036854775808, -9223372036854775807, -9223372036854775806,
	                      9223372036854775807, 9223372036854775806, 9223372036854775805,
	                      -1, 0, 1, -2147483649, -2147483648, 2147483647, 2147483648}'::int8[])
	                   [1 + floor(random() * 13)::int]
	WHEN r < 0.67 THEN NULL
	ELSE ((random() - 0.5) * 1.8e19)::int8
	END
FROM (SELECT g, random() AS r FROM generate_series(1, 3000) g) s;
CREATE INDEX ac_dm_k ON ac_dm USING dmindex (k) WITH (node_size = 256);
-- more rows after the build: inserted into the tree
INSERT INTO ac_dm
SELECT g, CASE
	WHEN r < 0.50 THEN floor(random() * 41)::int8 - 20
	WHEN r < 0.62 THEN ('{-9223372036854775808, -9223372036854775807, 9223372036854775807,
	                      9223372036854775806, 0}'::int8[])[1 + floor(random() * 5)::int]
	WHEN r < 0.67 THEN NULL
	ELSE ((random() - 0.5) * 1.8e19)::int8
	END
FROM (SELECT g, random() AS r FROM generate_series(3001, 4500) g) s;
-- and some updates and deletes
UPDATE ac_dm SET k = k + 1 WHERE id % 10 = 7 AND k BETWEEN -30 AND 30;
DELETE FROM ac_dm WHERE id % 10 = 3;
INSERT INTO ac2_dm
SELECT g, CASE WHEN random() < 0.9 THEN floor(random() * 61)::int8 - 30
	ELSE ('{-9223372036854775808, 9223372036854775807, NULL}'::int8[])[1 + floor(random() * 3)::int] END
FROM generate_series(1, 600) g;
CREATE INDEX ac2_dm_k ON ac2_dm USING dmindex (k);
-- acb: 25,000 rows before the build, 25,000 after (flushed in several
-- batches of dmindex.insert_buffer entries)
INSERT INTO acb_dm
SELECT g, CASE WHEN random() < 0.01 THEN NULL ELSE floor(random() * 20000)::int4 END
FROM generate_series(1, 25000) g;
CREATE INDEX acb_dm_v ON acb_dm USING dmindex (v) WITH (node_size = 256, fillfactor = 70);
INSERT INTO acb_dm
SELECT g, CASE WHEN random() < 0.01 THEN NULL ELSE floor(random() * 20000)::int4 END
FROM generate_series(25001, 50000) g;
DELETE FROM acb_dm WHERE id % 97 = 0;
-- the btree copies
CREATE TABLE ac_bt WITH (autovacuum_enabled = false) AS SELECT * FROM ac_dm;
CREATE TABLE ac2_bt WITH (autovacuum_enabled = false) AS SELECT * FROM ac2_dm;
CREATE TABLE acb_bt WITH (autovacuum_enabled = false) AS SELECT * FROM acb_dm;
CREATE INDEX ac_bt_k ON ac_bt (k);
CREATE INDEX ac2_bt_k ON ac2_bt (k);
CREATE INDEX acb_bt_v ON acb_bt (v);
VACUUM ANALYZE ac_dm, ac2_dm, acb_dm, ac_bt, ac2_bt, acb_bt;

-- what the data looks like
SELECT count(*) AS rows, count(k) AS not_null, count(DISTINCT k) AS distinct_keys,
       count(*) FILTER (WHERE k = -9223372036854775808) AS at_min,
       count(*) FILTER (WHERE k = 9223372036854775807) AS at_max,
       max(c) AS most_per_key
FROM ac_dm, LATERAL (SELECT count(*) AS c FROM ac_dm x WHERE x.k = ac_dm.k) s;
SELECT count(*) AS rows, count(v) AS not_null FROM acb_dm;
-- both trees are consistent with their tables; acb's tree is tall
SELECT * FROM dmindex_check('ac_dm_k', true);
SELECT * FROM dmindex_check('ac2_dm_k', true);
SELECT * FROM dmindex_check('acb_dm_v', true);
SELECT height >= 4 AS tall, leaf_nodes > 1000 AS many_leaves, entries, node_size
FROM dmindex_stats('acb_dm_v');
SELECT height >= 3 AS tall, entries, node_size FROM dmindex_stats('ac_dm_k');

-- ---- the queries ------------------------------------------------------------
INSERT INTO ac_queries VALUES
-- comparisons
(1, 'k = 7', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = 7'),
(2, 'count k = -3', false, '{ios,bitmap}', 'SELECT count(*) FROM %1$s WHERE k = -3'),
(3, 'k < -15', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k < -15'),
(4, 'k <= -15', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k <= -15'),
(5, 'k > 15', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k > 15'),
(6, 'k >= 15', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k >= 15'),
(7, 'between', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k BETWEEN -5 AND 5'),
(8, 'between, reversed', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k BETWEEN 5 AND -5'),
(9, 'between symmetric', false, '{bitmap}', 'SELECT id, k FROM %1$s WHERE k BETWEEN SYMMETRIC 5 AND -5'),
(10, 'not between', false, '{bitmap}', 'SELECT id, k FROM %1$s WHERE k NOT BETWEEN -18 AND 18'),
(11, 'is null', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE k IS NULL'),
(12, 'is not null', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k IS NOT NULL'),
(13, 'is null or k = 0', false, '{bitmap}', 'SELECT id, k FROM %1$s WHERE k IS NULL OR k = 0'),
(14, 'k > NULL', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k > NULL'),
(15, 'k = run-time NULL', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = (SELECT NULL::int8)'),
(16, '= ANY', false, '{index,bitmap}',
 'SELECT id, k FROM %1$s WHERE k = ANY (''{-20, 0, 20, 9223372036854775807, -9223372036854775808, 12345}'')'),
(17, 'IN with NULL', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k IN (1, NULL, -1)'),
(18, '<> with a range', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k > -10 AND k < 10 AND k <> 0'),
(19, '>= and <= the same', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k >= 5 AND k <= 5'),
(20, 'empty range', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k > 5 AND k < 5'),
(21, 'two lower bounds', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k > 3 AND k > 7 AND k < 12'),
(22, 'two upper bounds', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k < 3 AND k <= -7 AND k >= -12'),
(23, 'is null and k > 0', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k IS NULL AND k > 0'),
(24, 'is not null and k >= -5', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k IS NOT NULL AND k >= -5'),
-- the extremes of int8
(30, '= -2^63', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = -9223372036854775808'),
(31, '= 2^63-1', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = 9223372036854775807'),
(32, '< -2^63+1', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k < -9223372036854775807'),
(33, '<= -2^63+1', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k <= -9223372036854775807'),
(34, '> 2^63-2', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k > 9223372036854775806'),
(35, '>= 2^63-2', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k >= 9223372036854775806'),
(36, '> 2^63-1', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k > 9223372036854775807'),
(37, '< -2^63', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k < -9223372036854775808'),
(38, '>= -2^63', false, '{ios,bitmap}', 'SELECT count(*) FROM %1$s WHERE k >= -9223372036854775808'),
(39, '<= 2^63-1', false, '{ios,bitmap}', 'SELECT count(*) FROM %1$s WHERE k <= 9223372036854775807'),
(40, 'between -2^63 and -2^63+2', false, '{index,bitmap}',
 'SELECT id, k FROM %1$s WHERE k BETWEEN -9223372036854775808 AND -9223372036854775806'),
(41, 'between 2^63-3 and 2^63-1', false, '{index,bitmap}',
 'SELECT id, k FROM %1$s WHERE k BETWEEN 9223372036854775805 AND 9223372036854775807'),
(42, '> 2^31-1 (int4)', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k > 2147483647::int4 AND k < 2147483649'),
(43, '< -2^31 (int4)', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k < (-2147483648)::int4 AND k > -2147483650'),
(44, '= 2^31-1 (int4)', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = 2147483647::int4'),
(45, '<= 7 (int2)', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k <= 7::int2 AND k >= (-7)::int2'),
-- ORDER BY, LIMIT, OFFSET
(50, 'order by k', true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k'),
(51, 'order by k desc', true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k DESC'),
(52, 'order by k limit', true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k LIMIT 60'),
(53, 'order by k desc limit', true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k DESC LIMIT 60'),
(54, 'k > 0 desc limit offset', true, '{index,ios}', 'SELECT k FROM %1$s WHERE k > 0 ORDER BY k DESC LIMIT 30 OFFSET 20'),
(55, 'k < 0 limit offset', true, '{index,ios}', 'SELECT k FROM %1$s WHERE k < 0 ORDER BY k LIMIT 25 OFFSET 100'),
(56, 'between desc', true, '{index,ios,bitmap}', 'SELECT k FROM %1$s WHERE k BETWEEN -3 AND 3 ORDER BY k DESC'),
(57, 'near 2^63-1', true, '{index,ios}', 'SELECT k FROM %1$s WHERE k >= 9223372036854775805 ORDER BY k'),
(58, 'near 2^63-1 desc', true, '{index,ios}', 'SELECT k FROM %1$s WHERE k >= 9223372036854775805 ORDER BY k DESC'),
(59, 'near -2^63 desc', true, '{index,ios}', 'SELECT k FROM %1$s WHERE k <= -9223372036854775806 ORDER BY k DESC'),
(60, 'nulls first', true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k DESC LIMIT 300'),
(61, 'desc nulls last', true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k DESC NULLS LAST LIMIT 10'),
(62, 'is not null desc', true, '{index,ios}', 'SELECT k FROM %1$s WHERE k IS NOT NULL ORDER BY k DESC LIMIT 10'),
(63, 'offset past the end', true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k LIMIT 10 OFFSET 100000'),
(64, 'min, max', false, '{index,ios}', 'SELECT min(k), max(k) FROM %1$s'),
(65, 'order by k, id', true, '{index}', 'SELECT k, id FROM %1$s WHERE k BETWEEN -2 AND 2 ORDER BY k, id'),
-- joins
(70, 'merge join', false, '{merge}', 'SELECT a.id, b.id FROM %1$s a JOIN %2$s b ON a.k = b.k'),
(71, 'merge join, ordered', true, '{merge}', 'SELECT a.k FROM %1$s a JOIN %2$s b ON a.k = b.k ORDER BY a.k'),
(72, 'nested loop', false, '{nestloop}', 'SELECT a.id, b.id FROM %2$s a JOIN %1$s b ON b.k = a.k'),
(73, 'nested loop, range', false, '{nestloop}',
 'SELECT a.id, b.id FROM %2$s a JOIN %1$s b ON b.k > a.k AND b.k <= least(a.k, 1000) + 2 WHERE a.id <= 100'),
(74, 'lateral, desc limit', false, '{nestloop}',
 'SELECT a.id, s.k FROM %2$s a, LATERAL (SELECT k FROM %1$s b WHERE b.k < a.k ORDER BY b.k DESC LIMIT 3) s'),
(75, 'semi join', false, '{nestloop,merge}',
 'SELECT count(*) FROM %2$s a WHERE EXISTS (SELECT 1 FROM %1$s b WHERE b.k = a.k)'),
(76, 'anti join', false, '{nestloop,merge}',
 'SELECT a.id FROM %2$s a WHERE NOT EXISTS (SELECT 1 FROM %1$s b WHERE b.k = a.k)'),
-- the tall tree
(80, 'count between', false, '{ios,bitmap}', 'SELECT count(*) FROM %3$s WHERE v BETWEEN 5000 AND 5100'),
(81, 'between', false, '{index,bitmap}', 'SELECT id, v FROM %3$s WHERE v BETWEEN 12000 AND 12050'),
(82, 'order by v', true, '{index,ios}', 'SELECT v FROM %3$s ORDER BY v'),
(83, 'order by v desc', true, '{ios}', 'SELECT v FROM %3$s ORDER BY v DESC'),
(84, 'desc limit offset', true, '{index,ios}', 'SELECT v FROM %3$s ORDER BY v DESC LIMIT 100 OFFSET 20000'),
(85, 'v > 19000 desc', true, '{index,ios}', 'SELECT v FROM %3$s WHERE v > 19000 ORDER BY v DESC'),
(86, '= ANY (300 values)', false, '{index,bitmap}',
 'SELECT id, v FROM %3$s WHERE v = ANY (ARRAY(SELECT g * 37 FROM generate_series(1, 300) g))'),
(87, 'is null', false, '{index,bitmap}', 'SELECT id FROM %3$s WHERE v IS NULL'),
(88, 'min, max', false, '{ios}', 'SELECT min(v), max(v) FROM %3$s'),
(89, 'v < 100 or v > 19900', false, '{bitmap}', 'SELECT id, v FROM %3$s WHERE v < 100 OR v > 19900'),
-- "= ANY(array)" read by the index itself (amsearcharray): one range per
-- distinct element, in order, both directions
(90, '= ANY order by', true, '{index,ios}',
 'SELECT k FROM %1$s WHERE k = ANY (''{20, -20, 0, 0, 9223372036854775807, -9223372036854775808, 12345, NULL}'') ORDER BY k'),
(91, '= ANY order by desc', true, '{index,ios}',
 'SELECT k FROM %1$s WHERE k = ANY (''{20, -20, 0, 0, 9223372036854775807, -9223372036854775808, 12345, NULL}'') ORDER BY k DESC'),
(92, '= ANY and a range', false, '{index,bitmap}',
 'SELECT id, k FROM %1$s WHERE k = ANY (''{-20, -5, 0, 5, 20}'') AND k > -5 AND k <= 5'),
(93, 'two = ANY', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = ANY (''{1, 2, 3, 4}'') AND k = ANY (''{3, 4, 5}'')'),
(94, '= ANY empty', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = ANY (''{}''::int8[])'),
(95, '= ANY only NULLs', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = ANY (''{NULL, NULL}''::int8[])'),
(96, '= ANY NULL array', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = ANY (NULL::int8[])'),
(97, '< ANY', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k < ANY (''{-15, -18, NULL}'')'),
(98, '>= ANY', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k >= ANY (''{18, 15}'')'),
(99, 'int4 = ANY on int8, desc', true, '{index,ios}',
 'SELECT k FROM %1$s WHERE k = ANY (''{3, -3, 2147483647, -2147483648}''::int4[]) ORDER BY k DESC'),
(100, 'IN, limit', true, '{index,ios}', 'SELECT k FROM %1$s WHERE k IN (7, -7, 1, 19) ORDER BY k LIMIT 30'),
(101, 'nested loop, = ANY of the outer row', false, '{nestloop}',
 'SELECT a.id, b.id FROM %2$s a JOIN %1$s b ON b.k = ANY (ARRAY[a.k, a.k / 2, NULL])'),
(102, '= ANY (300 values) desc', true, '{index,ios}',
 'SELECT v FROM %3$s WHERE v = ANY (ARRAY(SELECT g * 37 FROM generate_series(1, 300) g)) ORDER BY v DESC');

SELECT n, label, mode, c.*
FROM ac_queries, unnest(modes) AS mode, LATERAL dm_compare(q, ordered, mode, '{ac_dm, ac2_dm, acb_dm}', '{ac_bt, ac2_bt, acb_bt}') c
ORDER BY n, mode;

-- ---- scrollable cursors ---------------------------------------------------------
-- Two cursors, one on each table, make the same moves; each FETCH must
-- return the same rows (same).  nrows, first and last describe what the
-- btree cursor returned.  (Only the key is fetched: rows with equal keys
-- may come in another order.)

SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_indexonlyscan = off;
BEGIN;
EXPLAIN (COSTS OFF) SELECT k FROM ac_dm WHERE k BETWEEN -10 AND 10 ORDER BY k;
DECLARE ac_c_dm SCROLL CURSOR FOR SELECT k FROM ac_dm WHERE k BETWEEN -10 AND 10 ORDER BY k;
DECLARE ac_c_bt SCROLL CURSOR FOR SELECT k FROM ac_bt WHERE k BETWEEN -10 AND 10 ORDER BY k;
SELECT * FROM dm_moves('{10, "BACKWARD 4", 100, "BACKWARD 150", "FORWARD 1", ALL, PRIOR,
                         "BACKWARD 3", NEXT, "BACKWARD ALL", NEXT, LAST, PRIOR, FIRST,
                         "ABSOLUTE 300", "RELATIVE -7", "ABSOLUTE -1", NEXT, NEXT, PRIOR}', 'ac_c_dm', 'ac_c_bt');
CLOSE ac_c_dm;
CLOSE ac_c_bt;
-- descending, over NULLs and both extremes
EXPLAIN (COSTS OFF) SELECT k FROM ac_dm ORDER BY k DESC;
DECLARE ac_c_dm SCROLL CURSOR FOR SELECT k FROM ac_dm ORDER BY k DESC;
DECLARE ac_c_bt SCROLL CURSOR FOR SELECT k FROM ac_bt ORDER BY k DESC;
SELECT * FROM dm_moves('{200, "BACKWARD 150", "BACKWARD 100", 5, ALL, "BACKWARD 1000",
                         PRIOR, NEXT, "BACKWARD ALL", "FORWARD 3", "BACKWARD 2", LAST,
                         "RELATIVE -500", "RELATIVE 499", NEXT, PRIOR}', 'ac_c_dm', 'ac_c_bt');
COMMIT;
-- index-only scans, on the tall tree
SET enable_indexonlyscan = on;
BEGIN;
EXPLAIN (COSTS OFF) SELECT v FROM acb_dm WHERE v > 15000 ORDER BY v;
DECLARE ac_c_dm SCROLL CURSOR FOR SELECT v FROM acb_dm WHERE v > 15000 ORDER BY v;
DECLARE ac_c_bt SCROLL CURSOR FOR SELECT v FROM acb_bt WHERE v > 15000 ORDER BY v;
SELECT * FROM dm_moves('{1000, "BACKWARD 500", 3000, "BACKWARD 10", ALL, PRIOR,
                         "BACKWARD ALL", NEXT, "ABSOLUTE 5000", "ABSOLUTE -5000", PRIOR,
                         "FORWARD ALL", "BACKWARD 2"}', 'ac_c_dm', 'ac_c_bt');
COMMIT;

-- "= ANY": moving back and forth across the elements' ranges (one absent)
SET enable_indexonlyscan = off;
BEGIN;
EXPLAIN (COSTS OFF) SELECT k FROM ac_dm WHERE k = ANY ('{-20, -3, 0, 555, 4, 7, 9223372036854775807}') ORDER BY k;
DECLARE ac_c_dm SCROLL CURSOR FOR SELECT k FROM ac_dm WHERE k = ANY ('{-20, -3, 0, 555, 4, 7, 9223372036854775807}') ORDER BY k;
DECLARE ac_c_bt SCROLL CURSOR FOR SELECT k FROM ac_bt WHERE k = ANY ('{-20, -3, 0, 555, 4, 7, 9223372036854775807}') ORDER BY k;
SELECT * FROM dm_moves('{5, "BACKWARD 3", 40, "BACKWARD 60", NEXT, ALL, PRIOR, "BACKWARD 10",
                         LAST, "RELATIVE -20", FIRST, "ABSOLUTE 25", PRIOR, "FORWARD ALL",
                         "BACKWARD ALL", NEXT, "ABSOLUTE -1", "BACKWARD 2", "FORWARD 3"}', 'ac_c_dm', 'ac_c_bt');
COMMIT;
-- ... and with this transaction's own rows still in the insert buffer
BEGIN;
INSERT INTO ac_dm SELECT 100000 + g, (g % 5) * 5 - 10 FROM generate_series(1, 40) g;
INSERT INTO ac_bt SELECT 100000 + g, (g % 5) * 5 - 10 FROM generate_series(1, 40) g;
SELECT n, label, mode, c.*
FROM ac_queries, unnest(modes) AS mode, LATERAL dm_compare(q, ordered, mode, '{ac_dm, ac2_dm, acb_dm}', '{ac_bt, ac2_bt, acb_bt}') c
WHERE n IN (90, 91, 92, 100)
ORDER BY n, mode;
ROLLBACK;
-- ... with no rows for the smallest and the largest elements: a reversal
-- off either end first opens those elements' ranges, which the last
-- returned row leaves empty (this crashed the server)
BEGIN;
DECLARE ac_c_dm SCROLL CURSOR FOR SELECT k FROM ac_dm WHERE k = ANY ('{-1000, -3, 4, 1000}') ORDER BY k;
DECLARE ac_c_bt SCROLL CURSOR FOR SELECT k FROM ac_bt WHERE k = ANY ('{-1000, -3, 4, 1000}') ORDER BY k;
SELECT * FROM dm_moves('{LAST, PRIOR, NEXT, NEXT, PRIOR, FIRST, PRIOR, NEXT, PRIOR, PRIOR,
                         NEXT, ALL, "BACKWARD ALL", "FORWARD 2"}', 'ac_c_dm', 'ac_c_bt');
DECLARE ac_d_dm SCROLL CURSOR FOR SELECT k FROM ac_dm WHERE k = ANY ('{-1000, -3, 4, 1000}') ORDER BY k DESC;
DECLARE ac_d_bt SCROLL CURSOR FOR SELECT k FROM ac_bt WHERE k = ANY ('{-1000, -3, 4, 1000}') ORDER BY k DESC;
SELECT * FROM dm_moves('{LAST, PRIOR, NEXT, NEXT, FIRST, PRIOR, NEXT, ALL, "BACKWARD ALL",
                         "FORWARD 2"}', 'ac_d_dm', 'ac_d_bt');
COMMIT;
-- a nested loop rescans once per outer row with a new array: the ranges of
-- the last one are all the scan keeps
BEGIN;
SET LOCAL enable_hashjoin = off;
SET LOCAL enable_mergejoin = off;
SET LOCAL enable_material = off;
EXPLAIN (COSTS OFF) SELECT b.k FROM generate_series(1, 20000) o(a)
JOIN ac_dm b ON b.k = ANY (ARRAY(SELECT o.a % 40 - 20 + x FROM generate_series(1, 60) x));
DECLARE ac_mem NO SCROLL CURSOR FOR SELECT b.k FROM generate_series(1, 20000) o(a)
JOIN ac_dm b ON b.k = ANY (ARRAY(SELECT o.a % 40 - 20 + x FROM generate_series(1, 60) x));
MOVE ALL IN ac_mem;
SELECT sum(total_bytes) < 2 * 1024 * 1024 AS bounded
FROM pg_backend_memory_contexts WHERE name IN ('ExecutorState', 'dmindex scan keys');
COMMIT;
SET enable_indexonlyscan = on;

-- an index-only scan over the whole tall tree does not use memory per row
BEGIN;
EXPLAIN (COSTS OFF) SELECT v FROM acb_dm WHERE v IS NOT NULL;
DECLARE ac_mem NO SCROLL CURSOR FOR SELECT v FROM acb_dm WHERE v IS NOT NULL;
MOVE ALL IN ac_mem;
SELECT max(total_bytes) < 512 * 1024 AS bounded
FROM pg_backend_memory_contexts WHERE name = 'ExecutorState';
COMMIT;

RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_indexonlyscan;
DROP TABLE ac_dm, ac2_dm, acb_dm, ac_bt, ac2_bt, acb_bt, ac_queries;
