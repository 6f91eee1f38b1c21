--
-- am_paths: everyday PostgreSQL paths that reach the index in less common
-- ways (docs/pg-paths.md): cursors held past their commit, functions and
-- triggers that query the index inside the statement that writes it, and
-- partitions attached with or without an index of their own and detached.
-- Every answer is compared with a btree on the same rows (dm_compare of
-- test_setup, or both sides shown).
--
CREATE TABLE ap_dm (id int, k int) WITH (autovacuum_enabled = false);
CREATE TABLE ap_bt (id int, k int) WITH (autovacuum_enabled = false);
INSERT INTO ap_dm SELECT g, g % 100 FROM generate_series(1, 2000) g;
INSERT INTO ap_bt SELECT * FROM ap_dm;
CREATE INDEX ap_dm_k ON ap_dm USING dmindex (k) WITH (node_size = 256);
CREATE INDEX ap_bt_k ON ap_bt (k);
VACUUM ANALYZE ap_dm, ap_bt;

-- All rows a cursor still has, as "count:md5" (same rows in the same order give the same text).
CREATE FUNCTION ap_drain(c refcursor) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r record;
	acc text := '';
	n int := 0;
BEGIN
	LOOP
		FETCH c INTO r;
		EXIT WHEN NOT FOUND;
		n := n + 1;
		acc := acc || r::text;
	END LOOP;
	RETURN n || ':' || md5(acc);
END $$;

-- ---- 1. cursors WITH HOLD ------------------------------------------------------
-- Opened through the index in a transaction that wrote (its own entries
-- still buffered), partly read, held past the commit; then the rows go
-- and VACUUM removes their entries: the cursor keeps what it had.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id, k FROM ap_dm WHERE k BETWEEN 5 AND 8 ORDER BY k, id;
BEGIN;
INSERT INTO ap_dm VALUES (5001, 7), (5002, 7);
INSERT INTO ap_bt VALUES (5001, 7), (5002, 7);
DECLARE hdm SCROLL CURSOR WITH HOLD FOR SELECT id, k FROM ap_dm WHERE k BETWEEN 5 AND 8 ORDER BY k, id;
DECLARE hbt SCROLL CURSOR WITH HOLD FOR SELECT id, k FROM ap_bt WHERE k BETWEEN 5 AND 8 ORDER BY k, id;
FETCH 3 FROM hdm;
FETCH 3 FROM hbt;
COMMIT;
DELETE FROM ap_dm WHERE k = 7;
DELETE FROM ap_bt WHERE k = 7;
VACUUM ap_dm;
VACUUM ap_bt;
FETCH LAST FROM hdm;
FETCH LAST FROM hbt;
FETCH BACKWARD 2 FROM hdm;
FETCH BACKWARD 2 FROM hbt;
MOVE ABSOLUTE 3 IN hdm;
MOVE ABSOLUTE 3 IN hbt;
SELECT ap_drain('hdm') AS dmindex, ap_drain('hbt') AS btree;
CLOSE hdm;
CLOSE hbt;
-- the same held cursor through an index-only scan (keys only)
VACUUM ap_dm;
VACUUM ap_bt;
BEGIN;
DECLARE idm CURSOR WITH HOLD FOR SELECT k FROM ap_dm WHERE k >= 90 ORDER BY k DESC;
DECLARE ibt CURSOR WITH HOLD FOR SELECT k FROM ap_bt WHERE k >= 90 ORDER BY k DESC;
COMMIT;
DELETE FROM ap_dm WHERE k = 95;
DELETE FROM ap_bt WHERE k = 95;
VACUUM ap_dm;
VACUUM ap_bt;
SELECT ap_drain('idm') AS dmindex, ap_drain('ibt') AS btree;
CLOSE idm;
CLOSE ibt;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- ---- 2. functions and triggers that query the index while it is written -------
-- A BEFORE ROW trigger counts, through the index, the rows of the new row's
-- key: a volatile function sees the rows its own statement inserted before
-- (buffered entries, not yet on the memnode), in the order they came.
CREATE TABLE ap_log (tbl text, id int, k int, seen bigint);
CREATE FUNCTION ap_count(tbl regclass, key int) RETURNS bigint LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off AS $$
DECLARE
	n bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM %s WHERE k = $1', tbl) INTO n USING key;
	RETURN n;
END $$;
CREATE FUNCTION ap_trg() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ap_log VALUES (TG_TABLE_NAME, NEW.id, NEW.k, ap_count(TG_RELID::regclass, NEW.k));
	RETURN NEW;
END $$;
CREATE TRIGGER ap_dm_trg BEFORE INSERT ON ap_dm FOR EACH ROW EXECUTE FUNCTION ap_trg();
CREATE TRIGGER ap_bt_trg BEFORE INSERT ON ap_bt FOR EACH ROW EXECUTE FUNCTION ap_trg();
-- ids 6001..6030: keys 200, 201, 202 ten times each, interleaved; twice in one transaction
BEGIN;
INSERT INTO ap_dm SELECT 6000 + g, 200 + g % 3 FROM generate_series(1, 30) g ORDER BY g;
INSERT INTO ap_bt SELECT 6000 + g, 200 + g % 3 FROM generate_series(1, 30) g ORDER BY g;
SAVEPOINT s;
INSERT INTO ap_dm SELECT 7000 + g, 200 + g % 3 FROM generate_series(1, 6) g ORDER BY g;
INSERT INTO ap_bt SELECT 7000 + g, 200 + g % 3 FROM generate_series(1, 6) g ORDER BY g;
ROLLBACK TO s;
INSERT INTO ap_dm SELECT 8000 + g, 200 + g % 3 FROM generate_series(1, 6) g ORDER BY g;
INSERT INTO ap_bt SELECT 8000 + g, 200 + g % 3 FROM generate_series(1, 6) g ORDER BY g;
COMMIT;
-- what each trigger saw, side by side (rows logged in the rolled-back savepoint are gone with it)
SELECT d.id, d.k, d.seen AS dmindex_seen, b.seen AS btree_seen
FROM ap_log d FULL JOIN ap_log b ON b.tbl = 'ap_bt' AND b.id = d.id
WHERE d.tbl = 'ap_dm' AND (d.id % 10 IN (1, 5) OR d.id > 8000 OR d.seen IS DISTINCT FROM b.seen)
ORDER BY d.id;
SELECT count(*) AS logged, count(*) FILTER (WHERE d.seen IS DISTINCT FROM b.seen) AS differ
FROM ap_log d FULL JOIN ap_log b ON b.tbl = 'ap_bt' AND b.id = d.id
WHERE d.tbl = 'ap_dm' OR b.tbl = 'ap_bt';
DROP TRIGGER ap_dm_trg ON ap_dm;
DROP TRIGGER ap_bt_trg ON ap_bt;
-- a function in the WHERE clause of the statement that changes the rows it counts
UPDATE ap_dm SET k = k + 1000 WHERE k BETWEEN 200 AND 202 AND ap_count('ap_dm', k) >= 10;
UPDATE ap_bt SET k = k + 1000 WHERE k BETWEEN 200 AND 202 AND ap_count('ap_bt', k) >= 10;
SELECT n, mode, plan, nrows, only_dm, only_bt
FROM (VALUES (1, 'SELECT id, k FROM %1$s WHERE k >= 200'), (2, 'SELECT id, k FROM %1$s WHERE k BETWEEN 5 AND 9')) q(n, q),
	 unnest('{index,bitmap}'::text[]) mode, LATERAL dm_compare(q.q, false, mode, '{ap_dm}', '{ap_bt}')
ORDER BY n, mode;
SELECT entries, heap_tuples, ok FROM dmindex_check('ap_dm_k', true);

-- ---- 3. ATTACH and DETACH PARTITION ---------------------------------------------
CREATE TABLE pa_dm (id int, k int) PARTITION BY RANGE (k);
CREATE TABLE pa_bt (id int, k int) PARTITION BY RANGE (k);
CREATE TABLE pa_dm_1 PARTITION OF pa_dm FOR VALUES FROM (0) TO (1000);
CREATE TABLE pa_bt_1 PARTITION OF pa_bt FOR VALUES FROM (0) TO (1000);
CREATE INDEX pa_dm_k ON pa_dm USING dmindex (k);
CREATE INDEX pa_bt_k ON pa_bt (k);
INSERT INTO pa_dm SELECT g, g % 1000 FROM generate_series(1, 3000) g;
INSERT INTO pa_bt SELECT g, g % 1000 FROM generate_series(1, 3000) g;
-- a table with a matching dmindex index of its own: attaching adopts that index (no rebuild)
CREATE TABLE pa_dm_2 (id int, k int);
CREATE TABLE pa_bt_2 (id int, k int);
INSERT INTO pa_dm_2 SELECT g, 1000 + g % 1000 FROM generate_series(1, 3000) g;
INSERT INTO pa_bt_2 SELECT g, 1000 + g % 1000 FROM generate_series(1, 3000) g;
CREATE INDEX pa_dm_2_own ON pa_dm_2 USING dmindex (k);
CREATE INDEX pa_bt_2_own ON pa_bt_2 (k);
ALTER TABLE pa_dm ATTACH PARTITION pa_dm_2 FOR VALUES FROM (1000) TO (2000);
ALTER TABLE pa_bt ATTACH PARTITION pa_bt_2 FOR VALUES FROM (1000) TO (2000);
-- a table without an index: attaching builds one
CREATE TABLE pa_dm_3 (id int, k int);
CREATE TABLE pa_bt_3 (id int, k int);
INSERT INTO pa_dm_3 SELECT g, 2000 + g % 1000 FROM generate_series(1, 3000) g;
INSERT INTO pa_bt_3 SELECT g, 2000 + g % 1000 FROM generate_series(1, 3000) g;
ALTER TABLE pa_dm ATTACH PARTITION pa_dm_3 FOR VALUES FROM (2000) TO (3000);
ALTER TABLE pa_bt ATTACH PARTITION pa_bt_3 FOR VALUES FROM (2000) TO (3000);
SELECT c.relname AS partition_index, a.amname
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_am a ON a.oid = c.relam
WHERE i.inhparent = 'pa_dm_k'::regclass ORDER BY 1;
-- writes through the parent reach every partition's index
INSERT INTO pa_dm SELECT 10000 + g, g * 7 % 3000 FROM generate_series(1, 600) g;
INSERT INTO pa_bt SELECT 10000 + g, g * 7 % 3000 FROM generate_series(1, 600) g;
DELETE FROM pa_dm WHERE k % 10 = 3;
DELETE FROM pa_bt WHERE k % 10 = 3;
VACUUM ANALYZE pa_dm;
VACUUM ANALYZE pa_bt;
CREATE TABLE pa_queries (n int PRIMARY KEY, ordered bool, modes text[], q text);
INSERT INTO pa_queries VALUES
(1, false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k = 1500'),
(2, false, '{index,bitmap}', 'SELECT id, k FROM %1$s WHERE k BETWEEN 990 AND 2010'),
(3, true, '{index,ios}', 'SELECT k FROM %1$s WHERE k BETWEEN 995 AND 2005 ORDER BY k'),
(4, true, '{index,ios}', 'SELECT k FROM %1$s ORDER BY k DESC LIMIT 30');
SELECT n, mode, plan, nrows, only_dm, only_bt
FROM pa_queries, unnest(modes) mode, LATERAL dm_compare(q, ordered, mode, '{pa_dm}', '{pa_bt}')
ORDER BY n, mode;
SELECT relname, (dmindex_check(oid, true)).ok FROM pg_class WHERE relname IN ('pa_dm_1_k_idx', 'pa_dm_2_own', 'pa_dm_3_k_idx') ORDER BY 1;
-- detached, the partition keeps its index as a plain one
ALTER TABLE pa_dm DETACH PARTITION pa_dm_2;
ALTER TABLE pa_bt DETACH PARTITION pa_bt_2;
INSERT INTO pa_dm_2 VALUES (99999, 1234), (99998, 5000);
INSERT INTO pa_bt_2 VALUES (99999, 1234), (99998, 5000);
SELECT n, mode, nrows, only_dm, only_bt
FROM pa_queries, unnest(modes) mode, LATERAL dm_compare(q, ordered, mode, '{pa_dm_2}', '{pa_bt_2}')
ORDER BY n, mode;
SELECT n, mode, nrows, only_dm, only_bt
FROM pa_queries, unnest(modes) mode, LATERAL dm_compare(q, ordered, mode, '{pa_dm}', '{pa_bt}')
WHERE n IN (2, 3) ORDER BY n, mode;
SELECT entries, heap_tuples, ok FROM dmindex_check('pa_dm_2_own', true);

-- ---- 4. what the planner picks -------------------------------------------------------
-- A selective condition uses the index; one that reads most of the table
-- does not; with a btree on the same column the btree wins (dmindex costs
-- a little more per page, dmcost.c), and dropping it brings dmindex back.
ANALYZE ap_dm;
EXPLAIN (COSTS OFF) SELECT * FROM ap_dm WHERE k = 5;
EXPLAIN (COSTS OFF) SELECT * FROM ap_dm WHERE k BETWEEN 5 AND 6 ORDER BY k;
EXPLAIN (COSTS OFF) SELECT * FROM ap_dm WHERE k >= 1;
CREATE INDEX ap_dm_k_bt ON ap_dm (k);
EXPLAIN (COSTS OFF) SELECT * FROM ap_dm WHERE k BETWEEN 5 AND 6 ORDER BY k;
DROP INDEX ap_dm_k_bt;
EXPLAIN (COSTS OFF) SELECT * FROM ap_dm WHERE k BETWEEN 5 AND 6 ORDER BY k;

DROP TABLE pa_dm, pa_bt, pa_dm_2, pa_bt_2, pa_queries, ap_log;
DROP FUNCTION ap_trg, ap_count, ap_drain;
DROP TABLE ap_dm, ap_bt;
