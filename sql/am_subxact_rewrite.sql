--
-- am_subxact_rewrite: an index rewritten (new relfilenode) inside a
-- subtransaction that rolls back, or moved to another tablespace, in a
-- transaction whose entries are still in dmindex's insert buffer.
--
-- dmindex buffers a transaction's entries until commit (dminsert.c).
-- TRUNCATE, REINDEX INDEX and REINDEX TABLE give the index a new
-- relfilenode and a new tree; when they run in a savepoint (or a PL/pgSQL
-- EXCEPTION block) that rolls back, the old relfilenode comes back, and the
-- entries the parent had buffered for it must still be written at commit.
-- ALTER INDEX ... SET TABLESPACE copies the index to a new relfilenode that
-- keeps the same remote tree: entries buffered before it must not be lost
-- either.  A released savepoint keeps the rewrite: the index must then hold
-- exactly the rows the rewrite left.
--
-- Every check compares the dmindex index with the heap: dm_agree (test_setup)
-- runs "SELECT * FROM sr WHERE cond" as an index scan and as a bitmap scan
-- on sr_k and as a sequential scan; all three must return the same rows
-- (nrows = the sequential scan's count).  dmindex_check(sr_k, true) must
-- find one entry per row (no VACUUM is needed: no row is ever deleted, and
-- rolled-back rows' entries go with their subtransaction).
--

-- 100 committed rows, k in 0..49
CREATE TABLE sr (id int, k int4) WITH (autovacuum_enabled = false);
INSERT INTO sr SELECT g, g % 50 FROM generate_series(1, 100) g;
CREATE INDEX sr_k ON sr USING dmindex (k) WITH (node_size = 256);
CREATE VIEW sr_report AS
SELECT c.cond, a.* FROM unnest(ARRAY['k = 7', 'k BETWEEN 10 AND 12', 'k >= 0']) AS c(cond),
	LATERAL dm_agree('sr', c.cond, 'sr_k') a;
SELECT * FROM sr_report;

-- ---- TRUNCATE rolled back to a savepoint -------------------------------------------
BEGIN;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(101, 200) g;
SAVEPOINT s;
TRUNCATE sr;
INSERT INTO sr VALUES (-1, 7);
ROLLBACK TO SAVEPOINT s;
-- the transaction's own rows, still buffered, are seen by its scans
SELECT * FROM sr_report;
COMMIT;
SELECT * FROM sr_report;
SELECT * FROM dmindex_check('sr_k', true);

-- ---- REINDEX INDEX rolled back to a savepoint ---------------------------------------
BEGIN;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(201, 300) g;
SAVEPOINT s;
REINDEX INDEX sr_k;
ROLLBACK TO SAVEPOINT s;
SELECT * FROM sr_report;
COMMIT;
SELECT * FROM sr_report;
SELECT * FROM dmindex_check('sr_k', true);

-- ---- REINDEX TABLE rolled back to a savepoint, rows added on both sides ------------
BEGIN;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(301, 350) g;
SAVEPOINT s;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(351, 360) g;
REINDEX TABLE sr;
INSERT INTO sr VALUES (-2, 7);
ROLLBACK TO SAVEPOINT s;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(361, 400) g;
SELECT * FROM sr_report;
COMMIT;
SELECT * FROM sr_report;
SELECT * FROM dmindex_check('sr_k', true);

-- ---- the same in PL/pgSQL EXCEPTION blocks (an implicit savepoint each) ------------
BEGIN;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(401, 450) g;
DO $$
BEGIN
	TRUNCATE sr;
	INSERT INTO sr VALUES (-3, 7);
	RAISE EXCEPTION 'undo the truncation';
EXCEPTION WHEN raise_exception THEN
	RAISE NOTICE 'caught: %', SQLERRM;
END
$$;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(451, 500) g;
DO $$
BEGIN
	REINDEX INDEX sr_k;
	RAISE EXCEPTION 'undo the reindex';
EXCEPTION WHEN raise_exception THEN
	RAISE NOTICE 'caught: %', SQLERRM;
END
$$;
DO $$
BEGIN
	REINDEX TABLE sr;
	PERFORM 1 / 0;
EXCEPTION WHEN division_by_zero THEN
	RAISE NOTICE 'caught: %', SQLERRM;
END
$$;
SELECT * FROM sr_report;
COMMIT;
SELECT * FROM sr_report;
SELECT * FROM dmindex_check('sr_k', true);

-- ---- nested: the rewrite in an inner savepoint, the outer one released ------------
BEGIN;
SAVEPOINT outer_s;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(501, 520) g;
SAVEPOINT inner_s;
TRUNCATE sr;
ROLLBACK TO SAVEPOINT inner_s;
RELEASE SAVEPOINT outer_s;
COMMIT;
SELECT * FROM sr_report;
SELECT * FROM dmindex_check('sr_k', true);

-- ---- released savepoints: the rewrite stands -----------------------------------------
-- REINDEX in a released savepoint rebuilds from the heap, which has the
-- buffered rows; rows inserted after it go to the new tree.
BEGIN;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(521, 540) g;
SAVEPOINT s;
REINDEX INDEX sr_k;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(541, 560) g;
RELEASE SAVEPOINT s;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(561, 580) g;
COMMIT;
SELECT * FROM sr_report;
SELECT * FROM dmindex_check('sr_k', true);
-- TRUNCATE in a released savepoint: only the rows inserted after it remain
BEGIN;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(581, 600) g;
SAVEPOINT s;
TRUNCATE sr;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(1, 30) g;
RELEASE SAVEPOINT s;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(31, 60) g;
COMMIT;
SELECT * FROM sr_report;
SELECT * FROM dmindex_check('sr_k', true);

-- ---- ALTER INDEX ... SET TABLESPACE with buffered entries --------------------------
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE sr_ts LOCATION '';
RESET allow_in_place_tablespaces;
-- rows buffered before the move, and after it
BEGIN;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(61, 100) g;
ALTER INDEX sr_k SET TABLESPACE sr_ts;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(101, 120) g;
SELECT * FROM sr_report;
COMMIT;
SELECT * FROM sr_report;
SELECT * FROM dmindex_check('sr_k', true);
-- and back, in a savepoint that is released
BEGIN;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(121, 140) g;
SAVEPOINT s;
ALTER INDEX sr_k SET TABLESPACE pg_default;
RELEASE SAVEPOINT s;
COMMIT;
SELECT * FROM sr_report;
SELECT * FROM dmindex_check('sr_k', true);
-- a move rolled back to a savepoint
BEGIN;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(141, 160) g;
SAVEPOINT s;
ALTER INDEX sr_k SET TABLESPACE sr_ts;
INSERT INTO sr VALUES (-4, 7);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM sr_report;
SELECT * FROM dmindex_check('sr_k', true);
-- the table and its index moved together (ALTER TABLE ... SET TABLESPACE
-- moves only the table; ALTER INDEX ALL IN TABLESPACE moves the index)
BEGIN;
INSERT INTO sr SELECT g, g % 50 FROM generate_series(161, 180) g;
ALTER TABLE sr SET TABLESPACE sr_ts;
ALTER INDEX ALL IN TABLESPACE pg_default SET TABLESPACE sr_ts;
COMMIT;
SELECT pg_relation_filepath('sr_k') ~ 'pg_tblspc' AS moved;
SELECT * FROM sr_report;
SELECT * FROM dmindex_check('sr_k', true);

DROP VIEW sr_report;
DROP TABLE sr;
DROP TABLESPACE sr_ts;
SELECT dmindex_gc() >= 0 AS collected;
