--
-- am_hopscotch: indexes with hopscotch leaves (WITH (leaf_format =
-- 'hopscotch'), docs/design.md §5.1) answer every query family exactly
-- like a btree on the same rows, through bulk load, inserts, updates,
-- deletes, VACUUM, REINDEX and TRUNCATE; dmindex_check(index, true) passes
-- after each; dmindex_stats shows the format; the options and
-- dmindex.default_leaf_format are validated.
--
-- The pair of tables ah_dm / ah_bt holds the same rows: k (int8) with many
-- duplicates, the extremes of int8 and NULLs, and d (int4) with 10,000 rows
-- of one value (far more entries of one key than a neighbourhood or a leaf
-- has buckets: they overflow their home and span many leaves) and NULLs.
-- ah_dm has only hopscotch dmindex indexes, ah_bt only btrees.  dm_compare
-- (test_setup) runs each query on both with the scans of a mode forced.
--
-- Everything here names its leaf format explicitly (or sets the GUC
-- first), so the output is the same when the suite runs with
-- dmindex.default_leaf_format = hopscotch (test/run-tests.sh).
--

-- ---- options: what is refused, and how ----------------------------------
CREATE TABLE ah_dm (id int, k int8, d int4) WITH (autovacuum_enabled = false);
CREATE INDEX ah_bad ON ah_dm USING dmindex (k) WITH (leaf_format = 'hash');
CREATE INDEX ah_bad ON ah_dm USING dmindex (k) WITH (leaf_format = 4);
-- a neighbourhood only with leaf_format = 'hopscotch' given
CREATE INDEX ah_bad ON ah_dm USING dmindex (k) WITH (neighborhood = 4);
CREATE INDEX ah_bad ON ah_dm USING dmindex (k) WITH (leaf_format = 'sorted', neighborhood = 4);
SET dmindex.default_leaf_format = hopscotch;
CREATE INDEX ah_bad ON ah_dm USING dmindex (k) WITH (neighborhood = 4);
-- 2..16, and no more than a leaf has buckets (10 in 256 bytes)
CREATE INDEX ah_bad ON ah_dm USING dmindex (k) WITH (leaf_format = 'hopscotch', neighborhood = 1);
CREATE INDEX ah_bad ON ah_dm USING dmindex (k) WITH (leaf_format = 'hopscotch', neighborhood = 17);
CREATE INDEX ah_bad ON ah_dm USING dmindex (k) WITH (leaf_format = 'hopscotch', neighborhood = 'eight');
CREATE INDEX ah_bad ON ah_dm USING dmindex (k) WITH (leaf_format = 'hopscotch', node_size = 256, neighborhood = 11);
SET dmindex.default_leaf_format = 'hash';
SHOW dmindex.default_leaf_format;
SELECT count(*) AS refused_indexes_made FROM pg_class WHERE relname = 'ah_bad';

-- ---- the data --------------------------------------------------------------
SELECT setseed(0.1414);
-- k: half on -20..20, a tenth on the extremes of int8, 5% NULL, the rest
-- anywhere; d: 10,000 rows of 42 first, then 0..999 and NULLs
INSERT INTO ah_dm
SELECT g, CASE
	WHEN r < 0.50 THEN floor(random() * 41)::int8 - 20
	WHEN r < 0.60 THEN ('{-9223372036854775808, -9223372036854775807, 9223372036854775807,
	                      9223372036854775806, -1, 0, 1}'::int8[])[1 + floor(random() * 7)::int]
	WHEN r < 0.65 THEN NULL
	ELSE ((random() - 0.5) * 1.8e19)::int8
	END,
	CASE WHEN g <= 10000 THEN 42 WHEN random() < 0.05 THEN NULL ELSE floor(random() * 1000)::int4 END
FROM (SELECT g, random() AS r FROM generate_series(1, 13000) g) s;
-- bulk load: small nodes (10 buckets, H = 8), and H = 4 in 512-byte nodes
CREATE INDEX ah_dm_k ON ah_dm USING dmindex (k) WITH (leaf_format = 'hopscotch', node_size = 256);
CREATE INDEX ah_dm_d ON ah_dm USING dmindex (d) WITH (leaf_format = 'hopscotch', node_size = 512, neighborhood = 4);
SELECT c.relname, s.leaf_format, s.neighborhood, s.node_size, s.entries,
       s.leaf_fill > 0 AND s.leaf_fill <= 1 AS fill_in_range
FROM (VALUES ('ah_dm_k'), ('ah_dm_d')) c(relname), LATERAL dmindex_stats(c.relname::regclass) s;
-- 10,000 entries of one key overflow their homes
SELECT overflow_homes > 0 AS overflowed, leaf_nodes > 10000 / 26 AS spans_leaves
FROM dmindex_stats('ah_dm_d');
-- inserts after the build (flushed at commit into hopscotch leaves): more
-- of the duplicate key, keys between existing ones, NULLs
INSERT INTO ah_dm
SELECT g, CASE WHEN g % 11 = 0 THEN NULL ELSE (g % 57) - 28 END,
	CASE WHEN g % 3 = 0 THEN 42 WHEN g % 17 = 0 THEN NULL ELSE g % 1000 END
FROM generate_series(13001, 16000) g;
UPDATE ah_dm SET k = CASE WHEN k BETWEEN -1000 AND 1000 THEN k + 1 ELSE k END,
	d = CASE WHEN d = 42 THEN 43 ELSE d END
WHERE id % 10 = 7;
DELETE FROM ah_dm WHERE id % 10 = 3;
CREATE TABLE ah_bt WITH (autovacuum_enabled = false) AS SELECT * FROM ah_dm;
CREATE INDEX ah_bt_k ON ah_bt (k);
CREATE INDEX ah_bt_d ON ah_bt (d);
VACUUM ANALYZE ah_dm, ah_bt;
SELECT * FROM dmindex_check('ah_dm_k', true);
SELECT * FROM dmindex_check('ah_dm_d', true);
SELECT count(*) AS rows, count(*) FILTER (WHERE d = 42) AS d_42, count(*) FILTER (WHERE k IS NULL) AS k_null
FROM ah_dm;

-- ---- the queries -------------------------------------------------------------
CREATE TABLE ah_queries (n int PRIMARY KEY, label text, ordered bool, modes text[], q text);
INSERT INTO ah_queries VALUES
(1, 'k = 7', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = 7'),
(2, 'count k = -3', false, '{ios,bitmap}', 'SELECT count(*) FROM %1$s WHERE k = -3'),
(3, 'k = absent key', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = 123456789'),
(4, 'between', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k BETWEEN -5 AND 5'),
(5, 'k > 15', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k > 15'),
(6, 'k <= -15', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k <= -15'),
(7, 'is null', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE k IS NULL'),
(8, 'is not null', false, '{ios,bitmap}', 'SELECT count(*) FROM %1$s WHERE k IS NOT NULL'),
(9, '= -2^63', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = -9223372036854775808'),
(10, '= 2^63-1', false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = 9223372036854775807'),
(11, '= ANY', false, '{bitmap}', 'SELECT id, k FROM %1$s WHERE k = ANY (''{-20, 0, 20, 9223372036854775807, 5555}'')'),
(12, 'is null or k = 0', false, '{bitmap}', 'SELECT id, k FROM %1$s WHERE k IS NULL OR k = 0'),
(20, 'order by k', true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k'),
(21, 'order by k desc', true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k DESC'),
(22, 'order by k limit', true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k LIMIT 40'),
(23, 'order by k desc limit', true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k DESC LIMIT 40'),
(24, 'k > 0 desc limit offset', true, '{index,ios}', 'SELECT k FROM %1$s WHERE k > 0 ORDER BY k DESC LIMIT 30 OFFSET 20'),
(25, 'between desc', true, '{index,ios,bitmap}', 'SELECT k FROM %1$s WHERE k BETWEEN -3 AND 3 ORDER BY k DESC'),
(26, 'min, max', false, '{index,ios}', 'SELECT min(k), max(k) FROM %1$s'),
-- the key with thousands of entries
(40, 'd = 42', false, '{index,bitmap}', 'SELECT id, d FROM %1$s WHERE d = 42'),
(41, 'count d = 42', false, '{ios,bitmap}', 'SELECT count(*) FROM %1$s WHERE d = 42'),
(42, 'd = 43', false, '{index,bitmap}', 'SELECT id, d FROM %1$s WHERE d = 43'),
(43, 'd between 40 and 44', false, '{index,bitmap}', 'SELECT id, d FROM %1$s WHERE d BETWEEN 40 AND 44'),
(44, 'd >= 42 order by d limit', true, '{index,ios}', 'SELECT d FROM %1$s WHERE d >= 42 ORDER BY d LIMIT 50'),
(45, 'd <= 42 desc limit', true, '{index,ios}', 'SELECT d FROM %1$s WHERE d <= 42 ORDER BY d DESC LIMIT 50'),
(46, 'order by d desc', true, '{index,ios}', 'SELECT d FROM %1$s ORDER BY d DESC'),
(47, 'd is null', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE d IS NULL'),
(48, 'd = 42 or d = 7', false, '{bitmap}', 'SELECT id, d FROM %1$s WHERE d = 42 OR d = 7');

SELECT n, label, mode, c.*
FROM ah_queries, unnest(modes) AS mode, LATERAL dm_compare(q, ordered, mode, '{ah_dm}', '{ah_bt}') c
ORDER BY n, mode;

-- a scrollable cursor back and forth over the duplicates (index-only)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
BEGIN;
DECLARE ah_c_dm SCROLL CURSOR FOR SELECT d FROM ah_dm WHERE d BETWEEN 41 AND 43 ORDER BY d;
DECLARE ah_c_bt SCROLL CURSOR FOR SELECT d FROM ah_bt WHERE d BETWEEN 41 AND 43 ORDER BY d;
SELECT * FROM dm_moves('{5, "BACKWARD 3", 4000, "BACKWARD 2500", ALL, PRIOR, "BACKWARD ALL", NEXT,
                         "ABSOLUTE 7000", "RELATIVE -6990", LAST, "BACKWARD 20"}', 'ah_c_dm', 'ah_c_bt');
COMMIT;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- ---- VACUUM after deletes: most of the duplicate key, and a range of k -----
DELETE FROM ah_dm WHERE (d = 42 AND id % 4 <> 0) OR k BETWEEN 3 AND 12;
DELETE FROM ah_bt WHERE (d = 42 AND id % 4 <> 0) OR k BETWEEN 3 AND 12;
VACUUM ah_dm, ah_bt;
SELECT * FROM dmindex_check('ah_dm_k', true);
SELECT * FROM dmindex_check('ah_dm_d', true);
SELECT n, label, mode, c.*
FROM ah_queries, unnest(modes) AS mode, LATERAL dm_compare(q, ordered, mode, '{ah_dm}', '{ah_bt}') c
WHERE n IN (2, 4, 8, 20, 21, 40, 41, 42, 43, 45)
ORDER BY n, mode;

-- ---- REINDEX keeps the format the options give ------------------------------
SET dmindex.default_leaf_format = sorted;
REINDEX INDEX ah_dm_k;
REINDEX INDEX ah_dm_d;
SELECT c.relname, s.leaf_format, s.neighborhood
FROM (VALUES ('ah_dm_k'), ('ah_dm_d')) c(relname), LATERAL dmindex_stats(c.relname::regclass) s;
SELECT * FROM dmindex_check('ah_dm_k', true);
SELECT * FROM dmindex_check('ah_dm_d', true);
SELECT n, label, mode, c.*
FROM ah_queries, unnest(modes) AS mode, LATERAL dm_compare(q, ordered, mode, '{ah_dm}', '{ah_bt}') c
WHERE n IN (2, 21, 40, 44)
ORDER BY n, mode;

-- ---- TRUNCATE: new empty trees, same format; filled by inserts only -------
TRUNCATE ah_dm, ah_bt;
SELECT c.relname, s.leaf_format, s.neighborhood, s.entries
FROM (VALUES ('ah_dm_k'), ('ah_dm_d')) c(relname), LATERAL dmindex_stats(c.relname::regclass) s;
INSERT INTO ah_dm SELECT g, (g * 7919) % 3001 - 1500, CASE WHEN g % 2 = 0 THEN 42 ELSE g % 300 END
FROM generate_series(1, 6000) g;
INSERT INTO ah_bt SELECT * FROM ah_dm;
VACUUM ANALYZE ah_dm, ah_bt;
SELECT * FROM dmindex_check('ah_dm_k', true);
SELECT * FROM dmindex_check('ah_dm_d', true);
SELECT overflow_homes > 0 AS overflowed FROM dmindex_stats('ah_dm_d');
SELECT n, label, mode, c.*
FROM ah_queries, unnest(modes) AS mode, LATERAL dm_compare(q, ordered, mode, '{ah_dm}', '{ah_bt}') c
WHERE n IN (1, 4, 20, 21, 22, 23, 40, 41, 45, 46)
ORDER BY n, mode;

-- ---- dmindex.default_leaf_format: read when a tree is built ---------------
SET dmindex.default_leaf_format = hopscotch;
CREATE INDEX ah_dm_g ON ah_dm USING dmindex (d);
SELECT leaf_format, neighborhood FROM dmindex_stats('ah_dm_g');
SELECT n, label, mode, c.*
FROM ah_queries, unnest(modes) AS mode, LATERAL dm_compare(q, ordered, mode, '{ah_dm}', '{ah_bt}') c
WHERE n IN (41, 43)
ORDER BY n, mode;
-- without the option, a rebuild follows the setting of its session
SET dmindex.default_leaf_format = sorted;
REINDEX INDEX ah_dm_g;
SELECT leaf_format, neighborhood, overflow_homes FROM dmindex_stats('ah_dm_g');
SELECT * FROM dmindex_check('ah_dm_g', true);
DROP INDEX ah_dm_g;

-- ---- ALTER INDEX: the options are checked together, used at the next build --
ALTER INDEX ah_dm_d SET (leaf_format = 'sorted');
ALTER INDEX ah_dm_d SET (neighborhood = 16);
ALTER INDEX ah_dm_k SET (neighborhood = 2);
SELECT relname, reloptions FROM pg_class WHERE relname IN ('ah_dm_k', 'ah_dm_d') ORDER BY relname;
REINDEX INDEX ah_dm_k;
SELECT leaf_format, neighborhood FROM dmindex_stats('ah_dm_k');
ALTER INDEX ah_dm_k RESET (neighborhood);
ALTER INDEX ah_dm_k SET (leaf_format = 'sorted');
REINDEX INDEX ah_dm_k;
SELECT leaf_format, neighborhood, overflow_homes FROM dmindex_stats('ah_dm_k');
SELECT * FROM dmindex_check('ah_dm_k', true);
SELECT n, label, mode, c.*
FROM ah_queries, unnest(modes) AS mode, LATERAL dm_compare(q, ordered, mode, '{ah_dm}', '{ah_bt}') c
WHERE n IN (1, 21)
ORDER BY n, mode;

RESET dmindex.default_leaf_format;
DROP TABLE ah_dm, ah_bt, ah_queries;
