--
-- am_xact: a transaction sees its own inserts before they reach the memory
-- nodes.  dmindex buffers the entries of a transaction and writes them at
-- commit (or earlier, once dmindex.insert_buffer entries are pending); the
-- transaction's index scans, index-only scans and bitmap scans merge the
-- buffer with the remote tree.  Rolled-back subtransactions take their
-- entries out of the buffer; entries already written for rows that end up
-- rolled back stay until VACUUM, which must not upset dmindex_check().
--
-- ax_dm has a dmindex index and ax_bt a btree index; every change is made
-- to both, and dm_compare (test_setup) compares their answers as in
-- am_btree_compare (%1$s stands for the table).
--

-- The query families, each in the modes that apply.
CREATE TABLE ax_queries (n int PRIMARY KEY, ordered bool, modes text[], q text);
INSERT INTO ax_queries VALUES
(1, false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = 7'),
(2, false, '{ios,bitmap}', 'SELECT count(*) FROM %1$s WHERE k BETWEEN 50 AND 59'),
(3, false, '{bitmap}', 'SELECT id, k FROM %1$s WHERE k < 5 OR k > 195'),
(4, false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE k IS NULL'),
(5, false, '{bitmap}', 'SELECT id, k FROM %1$s WHERE k = ANY (''{0, 13, 199, 2147483647, -2147483648}'')'),
(6, false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k >= 10000'),
(7, true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k'),
(8, true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k DESC'),
(9, true, '{index,ios}', 'SELECT k FROM %1$s WHERE k BETWEEN 20 AND 40 ORDER BY k DESC LIMIT 50'),
(10, true, '{index,ios}', 'SELECT k FROM %1$s WHERE k > 150 ORDER BY k LIMIT 40 OFFSET 30'),
(11, false, '{ios}', 'SELECT min(k), max(k) FROM %1$s');
CREATE VIEW ax_compare AS
SELECT n, mode, c.* FROM ax_queries, unnest(modes) AS mode, LATERAL dm_compare(q, ordered, mode, '{ax_dm}', '{ax_bt}') c;
-- ...with one line per query when all is well
CREATE VIEW ax_summary AS
SELECT count(*) AS runs, sum(nrows) AS rows,
       count(*) FILTER (WHERE only_dm <> 0 OR only_bt <> 0) AS mismatches,
       bool_and(plan ~ 'ax_dm_k' AND plan !~ 'Seq Scan') AS all_use_dmindex
FROM ax_compare;

-- The committed rows: k on 0..199, some NULLs.  (No autovacuum: the entry
-- counts below include those of dead rows until VACUUM.)
SELECT setseed(0.77);
CREATE TABLE ax_dm (id int, k int4) WITH (autovacuum_enabled = false);
INSERT INTO ax_dm SELECT g, CASE WHEN random() < 0.03 THEN NULL ELSE floor(random() * 200)::int4 END
FROM generate_series(1, 2000) g;
CREATE TABLE ax_bt WITH (autovacuum_enabled = false) AS SELECT * FROM ax_dm;
CREATE INDEX ax_dm_k ON ax_dm USING dmindex (k) WITH (node_size = 256);
CREATE INDEX ax_bt_k ON ax_bt (k);
VACUUM ANALYZE ax_dm, ax_bt;
SELECT * FROM ax_summary;

-- ---- own inserts, all still buffered ------------------------------------------
BEGIN;
CREATE TEMP TABLE ax_new AS
SELECT 2000 + g AS id,
       CASE WHEN g % 50 = 0 THEN NULL
            WHEN g % 50 = 1 THEN 2147483647
            WHEN g % 50 = 2 THEN -2147483648
            ELSE (g * 7) % 200 END AS k
FROM generate_series(1, 500) g;
INSERT INTO ax_dm SELECT * FROM ax_new;
INSERT INTO ax_bt SELECT * FROM ax_new;
-- nothing has reached the memory node yet
SELECT entries FROM dmindex_stats('ax_dm_k');
SELECT count(*) FROM ax_dm WHERE k = 7;
SELECT count(*) FROM ax_dm WHERE k = 2147483647;
SELECT k FROM ax_dm ORDER BY k LIMIT 3;
SELECT k FROM ax_dm WHERE k IS NOT NULL ORDER BY k DESC LIMIT 3;
SELECT * FROM ax_compare ORDER BY n, mode;
COMMIT;
SELECT entries FROM dmindex_stats('ax_dm_k');
SELECT * FROM dmindex_check('ax_dm_k', true);
SELECT * FROM ax_summary;

-- ---- a small insert buffer: part written mid-transaction ------------------------
SET dmindex.insert_buffer = 40;
BEGIN;
SELECT entries AS before FROM dmindex_stats('ax_dm_k') \gset
INSERT INTO ax_dm SELECT 3000 + g, (g * 13) % 200 FROM generate_series(1, 150) g;
INSERT INTO ax_bt SELECT 3000 + g, (g * 13) % 200 FROM generate_series(1, 150) g;
SELECT entries > :before AS some_written, entries < :before + 150 AS some_buffered
FROM dmindex_stats('ax_dm_k');
SELECT * FROM ax_summary;
-- changes to rows the transaction inserted, and to committed rows
UPDATE ax_dm SET k = k + 1 WHERE id BETWEEN 3001 AND 3060;
UPDATE ax_bt SET k = k + 1 WHERE id BETWEEN 3001 AND 3060;
UPDATE ax_dm SET k = 199 - k WHERE id BETWEEN 1 AND 300;
UPDATE ax_bt SET k = 199 - k WHERE id BETWEEN 1 AND 300;
DELETE FROM ax_dm WHERE id BETWEEN 3100 AND 3120 OR id BETWEEN 400 AND 450;
DELETE FROM ax_bt WHERE id BETWEEN 3100 AND 3120 OR id BETWEEN 400 AND 450;
-- a statement that reads the index while its own inserts are written out
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
EXPLAIN (COSTS OFF) INSERT INTO ax_dm SELECT id + 100000, k FROM ax_dm WHERE k BETWEEN 90 AND 110;
INSERT INTO ax_dm SELECT id + 100000, k FROM ax_dm WHERE k BETWEEN 90 AND 110;
INSERT INTO ax_bt SELECT id + 100000, k FROM ax_bt WHERE k BETWEEN 90 AND 110;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT * FROM ax_compare ORDER BY n, mode;
COMMIT;
SELECT * FROM dmindex_check('ax_dm_k', true);
SELECT * FROM ax_summary;
RESET dmindex.insert_buffer;
VACUUM ax_dm;
SELECT (SELECT entries FROM dmindex_stats('ax_dm_k')) = (SELECT count(*) FROM ax_dm) AS one_entry_per_row;

-- ---- savepoints ---------------------------------------------------------------------
-- Batches of rows with keys 10000+, 20000+, ... show which are visible.
CREATE VIEW ax_batches AS
SELECT k / 10000 AS batch, count(*) FROM ax_dm WHERE k BETWEEN 10000 AND 999999 GROUP BY 1 ORDER BY 1;
CREATE FUNCTION ax_add(b int, n int) RETURNS void LANGUAGE sql AS $$
	INSERT INTO ax_dm SELECT 10000 * b + g, 10000 * b + g % 7 FROM generate_series(1, n) g;
	INSERT INTO ax_bt SELECT 10000 * b + g, 10000 * b + g % 7 FROM generate_series(1, n) g;
$$;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT * FROM ax_batches;
BEGIN;
SELECT ax_add(1, 10);
SAVEPOINT s1;
SELECT ax_add(2, 20);
SELECT * FROM ax_batches;
ROLLBACK TO SAVEPOINT s1;
SELECT * FROM ax_batches;
SAVEPOINT s2;
SELECT ax_add(3, 30);
RELEASE SAVEPOINT s2;
SAVEPOINT s3;
SELECT ax_add(4, 40);
SAVEPOINT s4;
SELECT ax_add(5, 50);
RELEASE SAVEPOINT s4;
SELECT * FROM ax_batches;
ROLLBACK TO SAVEPOINT s3;
SELECT * FROM ax_batches;
SELECT ax_add(6, 60);
-- a PL/pgSQL exception block is a subtransaction too
DO $$
BEGIN
	PERFORM ax_add(7, 70);
	PERFORM 1 / 0;
EXCEPTION WHEN division_by_zero THEN
	RAISE NOTICE 'batch 7 rolled back';
END
$$;
DO $$
BEGIN
	PERFORM ax_add(8, 80);
EXCEPTION WHEN division_by_zero THEN
	RAISE NOTICE 'not reached';
END
$$;
SELECT * FROM ax_batches;
-- bitmap scans see the same
SET LOCAL enable_indexscan = off;
SET LOCAL enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT * FROM ax_batches;
SELECT * FROM ax_batches;
RESET enable_indexscan;
SET LOCAL enable_bitmapscan = off;
SELECT * FROM ax_compare ORDER BY n, mode;
COMMIT;
SELECT * FROM ax_batches;
-- none of the rolled-back batches was written: the tree has one entry per row
SELECT (SELECT entries FROM dmindex_stats('ax_dm_k')) = (SELECT count(*) FROM ax_dm) AS one_entry_per_row;
SELECT * FROM dmindex_check('ax_dm_k', true);
SELECT * FROM ax_summary;

-- The same with a small insert buffer: rolled-back rows were partly written
-- already.  Their entries stay until VACUUM, but no scan returns them, and
-- dmindex_check() accepts them (their heap tuples are still there).
SET dmindex.insert_buffer = 25;
BEGIN;
SELECT ax_add(11, 10);
SAVEPOINT s1;
SELECT ax_add(12, 100);
SELECT * FROM ax_batches;
ROLLBACK TO s1;
SAVEPOINT s2;
SELECT ax_add(13, 30);
SAVEPOINT s3;
SELECT ax_add(14, 45);
ROLLBACK TO s3;
RELEASE s2;
SELECT * FROM ax_batches;
SELECT * FROM ax_compare ORDER BY n, mode;
COMMIT;
SELECT * FROM ax_batches;
SELECT (SELECT entries FROM dmindex_stats('ax_dm_k')) > (SELECT count(*) FROM ax_dm) AS stale_entries_left;
SELECT * FROM dmindex_check('ax_dm_k', true);
SELECT * FROM ax_summary;
VACUUM ax_dm;
SELECT (SELECT entries FROM dmindex_stats('ax_dm_k')) = (SELECT count(*) FROM ax_dm) AS one_entry_per_row;
SELECT * FROM dmindex_check('ax_dm_k', true);
RESET dmindex.insert_buffer;

-- ---- a transaction that rolls back ----------------------------------------------------
BEGIN;
SELECT ax_add(15, 40);
SELECT * FROM ax_batches;
-- dmindex_check() writes the transaction's buffered entries out first
SELECT * FROM dmindex_check('ax_dm_k', true);
SELECT ax_add(16, 5);
SELECT * FROM ax_batches;
ROLLBACK;
SELECT * FROM ax_batches;
SELECT * FROM dmindex_check('ax_dm_k', true);
VACUUM ax_dm;
SELECT (SELECT entries FROM dmindex_stats('ax_dm_k')) = (SELECT count(*) FROM ax_dm) AS one_entry_per_row;

-- ---- a scrollable cursor over committed and own rows -------------------------------
BEGIN;
SELECT ax_add(17, 35);
INSERT INTO ax_dm SELECT 5000 + g, g % 40 + 80 FROM generate_series(1, 120) g;
INSERT INTO ax_bt SELECT 5000 + g, g % 40 + 80 FROM generate_series(1, 120) g;
EXPLAIN (COSTS OFF) SELECT k FROM ax_dm WHERE k > 60 ORDER BY k;
DECLARE ax_c_dm SCROLL CURSOR FOR SELECT k FROM ax_dm WHERE k > 60 ORDER BY k;
DECLARE ax_c_bt SCROLL CURSOR FOR SELECT k FROM ax_bt WHERE k > 60 ORDER BY k;
-- (more own rows after the cursors opened: invisible to them)
SELECT ax_add(18, 5);
SELECT * FROM dm_moves('{100, "BACKWARD 30", 200, "BACKWARD 120", 75, PRIOR, NEXT,
                         "FORWARD 500", "BACKWARD 250", "ABSOLUTE 400", "RELATIVE -100",
                         "RELATIVE 30", "BACKWARD 5", "FORWARD 20"}', 'ax_c_dm', 'ax_c_bt');
COMMIT;
SELECT * FROM dmindex_check('ax_dm_k', true);

-- ---- parallel workers --------------------------------------------------------------
-- A parallel worker runs in the transaction of its leader and sees the
-- leader's uncommitted rows in the heap; it must find them in the index too.
BEGIN;
SELECT ax_add(19, 25);
SET LOCAL force_parallel_mode = on;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ax_dm WHERE k BETWEEN 190000 AND 199999;
SELECT count(*) FROM ax_dm WHERE k BETWEEN 190000 AND 199999;
SET LOCAL enable_indexscan = off;
SET LOCAL enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ax_dm WHERE k BETWEEN 190000 AND 199999;
SELECT count(*) FROM ax_dm WHERE k BETWEEN 190000 AND 199999;
COMMIT;
SELECT count(*) FROM ax_dm WHERE k BETWEEN 190000 AND 199999;

-- ---- an index created in the transaction that fills its table -----------------------
BEGIN;
CREATE TABLE ax_new_dm (id int, k int4) WITH (autovacuum_enabled = false);
INSERT INTO ax_new_dm SELECT g, g % 10 FROM generate_series(1, 100) g;
CREATE INDEX ax_new_dm_k ON ax_new_dm USING dmindex (k);
INSERT INTO ax_new_dm SELECT g, g % 10 FROM generate_series(101, 150) g;
EXPLAIN (COSTS OFF) SELECT k, count(*) FROM ax_new_dm WHERE k < 3 GROUP BY k ORDER BY k;
SELECT k, count(*) FROM ax_new_dm WHERE k < 3 GROUP BY k ORDER BY k;
SELECT k FROM ax_new_dm ORDER BY k DESC LIMIT 3;
COMMIT;
SELECT * FROM dmindex_check('ax_new_dm_k', true);

RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_hashagg;
DROP VIEW ax_batches, ax_summary, ax_compare;
DROP TABLE ax_dm, ax_bt, ax_queries, ax_new_dm;
DROP FUNCTION ax_add(int, int);
