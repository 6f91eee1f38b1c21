--
-- am_maint: UPDATE, DELETE, VACUUM, REINDEX, TRUNCATE, DROP and the other
-- commands that rebuild or remove indexes, with dmindex_stats() and
-- dmindex_check() after each, and the number of remote trees on the memory
-- nodes (dmindex_memnodes().trees) to show that none is left behind.
--
-- DROP INDEX, DROP TABLE and a rolled-back CREATE INDEX free their trees
-- when the transaction ends.  REINDEX, TRUNCATE and the like leave the old
-- tree to the collector (its background worker, dmindex_gc()); the worker
-- may collect it at any moment, so the counts are taken after dmindex_gc()
-- there.
--
-- dm_agree(table, condition) (test_setup) runs "SELECT * FROM table WHERE condition"
-- as an index scan, as a bitmap scan and as a sequential scan; the first
-- two must use a dmindex index and all three must return the same rows.
--

-- Start from a clean slate: no garbage trees.
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() AS base \gset

-- ---- the table -----------------------------------------------------------------
-- Room on each page (fillfactor 60) so that updates of other columns are HOT;
-- no autovacuum, which would remove dead rows' entries at any moment (the
-- tables here all have it off).
CREATE TABLE am_t (id int, k int8, pad text) WITH (fillfactor = 60, autovacuum_enabled = false);
INSERT INTO am_t SELECT g, g % 100, 'x' FROM generate_series(1, 3000) g;
INSERT INTO am_t SELECT 3000 + g, NULL, 'x' FROM generate_series(1, 30) g;
CREATE INDEX am_t_k ON am_t USING dmindex (k) WITH (node_size = 256);
SELECT dm_trees() - :base AS new_trees;
SELECT height >= 3 AS tall, entries, node_size, memnodes FROM dmindex_stats('am_t_k');
SELECT * FROM dmindex_check('am_t_k', true);
SELECT * FROM dm_agree('am_t', 'k BETWEEN 10 AND 12 OR k IS NULL', modes => '{bitmap}');

-- ---- UPDATE --------------------------------------------------------------------
-- the key changes: a new entry for each new row version
UPDATE am_t SET k = k + 1000 WHERE id % 10 = 1;
SELECT entries FROM dmindex_stats('am_t_k');
SELECT * FROM dmindex_check('am_t_k', true);
SELECT * FROM dm_agree('am_t', 'k BETWEEN 1000 AND 1010');
SELECT * FROM dm_agree('am_t', 'k < 5');
-- another column changes: HOT updates, no new entries
UPDATE am_t SET pad = 'y' WHERE id % 10 = 2;
SELECT entries FROM dmindex_stats('am_t_k');
SELECT * FROM dmindex_check('am_t_k', true);
SELECT * FROM dm_agree('am_t', 'k = 2 OR k = 12', modes => '{bitmap}');
-- updates that are rolled back leave nothing behind
BEGIN;
UPDATE am_t SET k = -k WHERE id <= 500;
SELECT * FROM dm_agree('am_t', 'k < 0');
ROLLBACK;
SELECT entries FROM dmindex_stats('am_t_k');
SELECT * FROM dm_agree('am_t', 'k < 0');

-- ---- DELETE and VACUUM ------------------------------------------------------------
DELETE FROM am_t WHERE id % 10 = 3;
-- the entries of deleted rows stay until VACUUM
SELECT entries FROM dmindex_stats('am_t_k');
SELECT * FROM dmindex_check('am_t_k', true);
SELECT * FROM dm_agree('am_t', 'k BETWEEN 20 AND 25');
VACUUM am_t;
SELECT entries, (SELECT count(*) FROM am_t) AS table_rows FROM dmindex_stats('am_t_k');
SELECT * FROM dmindex_check('am_t_k', true);
SELECT * FROM dm_agree('am_t', 'k BETWEEN 20 AND 25');
SELECT * FROM dm_agree('am_t', 'k >= 1000');
-- once more, nothing to delete
VACUUM am_t;
SELECT entries FROM dmindex_stats('am_t_k');
-- rows deleted and re-inserted: the heap reuses the line pointers VACUUM freed
DELETE FROM am_t WHERE k BETWEEN 50 AND 59;
VACUUM am_t;
INSERT INTO am_t SELECT 5000 + g, 500 + g % 10, 'z' FROM generate_series(1, 300) g;
SELECT * FROM dmindex_check('am_t_k', true);
SELECT * FROM dm_agree('am_t', 'k BETWEEN 50 AND 59');
SELECT * FROM dm_agree('am_t', 'k BETWEEN 500 AND 509');
SELECT dm_trees() - :base AS new_trees;

-- ---- VACUUM that skips the indexes -------------------------------------------------
-- When fewer than 2% of a table's pages hold dead rows, VACUUM (INDEX_CLEANUP
-- AUTO, the default) leaves the indexes alone: the dead rows' line pointers
-- stay LP_DEAD, so the heap cannot give them to new rows, and their entries
-- stay until a VACUUM that does clean the indexes.  The entries lead nowhere
-- meanwhile (no scan returns them) and dmindex_check accepts them.
CREATE TABLE am_bp (id int, k int8) WITH (autovacuum_enabled = false);
INSERT INTO am_bp SELECT g, g FROM generate_series(1, 20000) g;
CREATE INDEX am_bp_k ON am_bp USING dmindex (k);
SELECT pg_relation_size('am_bp') / current_setting('block_size')::int > 60 AS pages_enough;
DELETE FROM am_bp WHERE id <= 5;
VACUUM am_bp;
SELECT entries, (SELECT count(*) FROM am_bp) AS table_rows FROM dmindex_stats('am_bp_k');
SELECT * FROM dmindex_check('am_bp_k', true);
SELECT * FROM dm_agree('am_bp', 'k <= 10');
INSERT INTO am_bp SELECT 100000 + g, g FROM generate_series(1, 5) g;
SELECT * FROM dm_agree('am_bp', 'k <= 10');
VACUUM (INDEX_CLEANUP ON) am_bp;
SELECT entries, (SELECT count(*) FROM am_bp) AS table_rows FROM dmindex_stats('am_bp_k');
SELECT * FROM dmindex_check('am_bp_k', true);
SELECT * FROM dm_agree('am_bp', 'k <= 10');
DROP TABLE am_bp;

-- ---- REINDEX ------------------------------------------------------------------------
REINDEX INDEX am_t_k;
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
SELECT entries, (SELECT count(*) FROM am_t) AS table_rows FROM dmindex_stats('am_t_k');
SELECT * FROM dmindex_check('am_t_k', true);
SELECT * FROM dm_agree('am_t', 'k BETWEEN 500 AND 509');
CREATE INDEX am_t_id ON am_t USING dmindex (id);
SELECT dm_trees() - :base AS new_trees;
REINDEX TABLE am_t;
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dmindex_check('am_t_k', true);
SELECT * FROM dmindex_check('am_t_id', true);
-- REINDEX CONCURRENTLY builds a new index and drops the old one: its tree
-- goes at once
REINDEX INDEX CONCURRENTLY am_t_k;
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dmindex_check('am_t_k', true);
SELECT * FROM dm_agree('am_t', 'k BETWEEN 40 AND 45');
-- a REINDEX that rolls back frees its new tree
BEGIN;
REINDEX INDEX am_t_k;
SELECT dm_trees() - :base AS new_trees;
ROLLBACK;
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dmindex_check('am_t_k', true);
-- reloptions apply when the tree is built
ALTER INDEX am_t_k SET (node_size = 1024, fillfactor = 50);
SELECT node_size FROM dmindex_stats('am_t_k');
REINDEX INDEX am_t_k;
SELECT node_size FROM dmindex_stats('am_t_k');
SELECT * FROM dmindex_check('am_t_k', true);
SELECT dmindex_gc() >= 0 AS collected;

-- ---- DROP -------------------------------------------------------------------------
SELECT dm_trees() - :base AS new_trees;
-- a DROP that rolls back keeps the tree, and so does one in a rolled-back
-- savepoint
BEGIN;
DROP INDEX am_t_id;
ROLLBACK;
BEGIN;
SAVEPOINT s;
DROP INDEX am_t_id;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dmindex_check('am_t_id', true);
SELECT * FROM dm_agree('am_t', 'id BETWEEN 100 AND 110');
-- DROP INDEX frees the tree at commit: nothing left to collect
DROP INDEX am_t_id;
SELECT dm_trees() - :base AS new_trees;
SELECT dmindex_gc();
CREATE INDEX am_t_id ON am_t USING dmindex (id);
DROP INDEX CONCURRENTLY am_t_id;
SELECT dm_trees() - :base AS new_trees;
SELECT dmindex_gc();

-- dmindex_gc() in a transaction that rebuilt or dropped an index must not
-- free the old tree, which a rollback brings back (it may refuse to run)
CREATE INDEX am_t_id ON am_t USING dmindex (id);
BEGIN;
REINDEX INDEX am_t_id;
DO $$ BEGIN PERFORM dmindex_gc(); EXCEPTION WHEN OTHERS THEN NULL; END $$;
ROLLBACK;
SELECT * FROM dmindex_check('am_t_id', true);
BEGIN;
DROP INDEX am_t_id;
DO $$ BEGIN PERFORM dmindex_gc(); EXCEPTION WHEN OTHERS THEN NULL; END $$;
ROLLBACK;
SELECT * FROM dmindex_check('am_t_id', true);
SELECT * FROM dm_agree('am_t', 'id BETWEEN 100 AND 110');
DROP INDEX am_t_id;
SELECT dm_trees() - :base AS new_trees;
SELECT dmindex_gc();

-- ---- rolled-back and failed CREATE INDEX ----------------------------------------------
BEGIN;
CREATE INDEX am_t_id ON am_t USING dmindex (id);
SELECT dm_trees() - :base AS new_trees;
ROLLBACK;
SELECT dm_trees() - :base AS new_trees;
-- fails on a row, after the tree was made
\set VERBOSITY terse
CREATE INDEX am_t_bad ON am_t USING dmindex ((1 / (k - 500)));
\set VERBOSITY default
SELECT dm_trees() - :base AS new_trees;
SELECT dmindex_gc();
-- a CREATE INDEX in a rolled-back savepoint: its tree is garbage once the
-- transaction ends
BEGIN;
SAVEPOINT s;
CREATE INDEX am_t_id ON am_t USING dmindex (id);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
-- CREATE INDEX CONCURRENTLY
INSERT INTO am_t SELECT 6000 + g, 600, 'c' FROM generate_series(1, 50) g;
CREATE INDEX CONCURRENTLY am_t_id ON am_t USING dmindex (id);
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dmindex_check('am_t_id', true);
SELECT * FROM dm_agree('am_t', 'id > 6040');

-- ---- TRUNCATE ----------------------------------------------------------------------
CREATE TABLE am_u (id int, k int4) WITH (autovacuum_enabled = false);
INSERT INTO am_u SELECT g, g % 10 FROM generate_series(1, 1000) g;
CREATE INDEX am_u_k ON am_u USING dmindex (k);
SELECT dm_trees() - :base AS new_trees;
-- a TRUNCATE that rolls back frees its new tree and keeps the old one
BEGIN;
TRUNCATE am_u;
SELECT dm_trees() - :base AS new_trees;
ROLLBACK;
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dmindex_check('am_u_k', true);
SELECT * FROM dm_agree('am_u', 'k = 3');
TRUNCATE am_u;
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
SELECT entries FROM dmindex_stats('am_u_k');
SELECT * FROM dm_agree('am_u', 'k = 3');
INSERT INTO am_u SELECT g, g % 10 FROM generate_series(1, 100) g;
SELECT * FROM dmindex_check('am_u_k', true);
SELECT * FROM dm_agree('am_u', 'k = 3');
-- TRUNCATE twice in one transaction: the second rewrites the index in place
CREATE TABLE am_w (id int, k int4) WITH (autovacuum_enabled = false);
INSERT INTO am_w SELECT g, g % 10 FROM generate_series(1, 100) g;
CREATE INDEX am_w_k ON am_w USING dmindex (k);
BEGIN;
INSERT INTO am_w SELECT g, g % 10 FROM generate_series(101, 200) g;
TRUNCATE am_w;
INSERT INTO am_w SELECT g, g % 10 FROM generate_series(1, 2000) g;
TRUNCATE am_w;
INSERT INTO am_w SELECT g, g % 5 FROM generate_series(1, 20) g;
SELECT * FROM dm_agree('am_w', 'k = 3');
COMMIT;
SELECT * FROM dmindex_check('am_w_k', true);
SELECT * FROM dm_agree('am_w', 'k = 3');
SELECT * FROM dm_agree('am_w', 'k > 4');
DROP TABLE am_w;
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
-- a table created, indexed, filled and truncated in one transaction
BEGIN;
CREATE TABLE am_v (id int, k int4) WITH (autovacuum_enabled = false);
CREATE INDEX am_v_k ON am_v USING dmindex (k);
INSERT INTO am_v SELECT g, g FROM generate_series(1, 3000) g;
TRUNCATE am_v;
INSERT INTO am_v SELECT g, g + 10000 FROM generate_series(1, 10) g;
SELECT * FROM dm_agree('am_v', 'k > 0');
COMMIT;
SELECT * FROM dmindex_check('am_v_k', true);
SELECT * FROM dm_agree('am_v', 'k > 0');
SELECT * FROM dm_agree('am_v', 'k BETWEEN 1 AND 3000');
DROP TABLE am_v;
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;

-- ---- table rewrites ------------------------------------------------------------------
-- VACUUM FULL and CLUSTER (on a btree index of the table) rebuild every index
CREATE INDEX am_u_id_btree ON am_u (id);
VACUUM FULL am_u;
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dmindex_check('am_u_k', true);
CLUSTER am_u USING am_u_id_btree;
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dmindex_check('am_u_k', true);
SELECT * FROM dm_agree('am_u', 'k = 3');
-- a new column type: the index is dropped and made again
ALTER TABLE am_u ALTER COLUMN k TYPE int8;
SELECT dm_trees() - :base AS new_trees;
SELECT pg_get_indexdef('am_u_k'::regclass);
SELECT * FROM dmindex_check('am_u_k', true);
SELECT * FROM dm_agree('am_u', 'k = 3');
-- unlogged and back
ALTER TABLE am_u SET UNLOGGED;
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dmindex_check('am_u_k', true);
SELECT * FROM dm_agree('am_u', 'k = 3');
ALTER TABLE am_u SET LOGGED;
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dmindex_check('am_u_k', true);
SELECT * FROM dm_agree('am_u', 'k = 3');

-- ---- another tablespace ---------------------------------------------------------------
-- Moving the index copies its files under a new relfilenode; its tree must
-- survive the collector.
SET allow_in_place_tablespaces = true;
CREATE TABLESPACE am_ts LOCATION '';
ALTER INDEX am_u_k SET TABLESPACE am_ts;
SELECT dmindex_gc() >= 0 AS collected;
SELECT * FROM dmindex_check('am_u_k', true);
SELECT * FROM dm_agree('am_u', 'k = 3');
INSERT INTO am_u VALUES (9999, 3);
SELECT * FROM dm_agree('am_u', 'k = 3');
SELECT dm_trees() - :base AS new_trees;
ALTER INDEX am_u_k SET TABLESPACE pg_default;
SELECT dmindex_gc() >= 0 AS collected;
SELECT * FROM dmindex_check('am_u_k', true);
SELECT * FROM dm_agree('am_u', 'k = 3');
SELECT dm_trees() - :base AS new_trees;
-- REINDEX into a tablespace builds a new tree
REINDEX (TABLESPACE am_ts) INDEX am_u_k;
SELECT dmindex_gc() >= 0 AS collected;
SELECT * FROM dmindex_check('am_u_k', true);
SELECT dm_trees() - :base AS new_trees;
DROP INDEX am_u_k;
DROP TABLESPACE am_ts;
SELECT dm_trees() - :base AS new_trees;

-- ---- unlogged tables ---------------------------------------------------------------------
CREATE UNLOGGED TABLE am_ul (id int, k int4) WITH (autovacuum_enabled = false);
INSERT INTO am_ul SELECT g, g % 50 FROM generate_series(1, 2000) g;
CREATE INDEX am_ul_k ON am_ul USING dmindex (k);
SELECT dm_trees() - :base AS new_trees;
INSERT INTO am_ul SELECT g, g % 50 FROM generate_series(2001, 2500) g;
SELECT entries FROM dmindex_stats('am_ul_k');
SELECT * FROM dmindex_check('am_ul_k', true);
SELECT * FROM dm_agree('am_ul', 'k = 7');
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT k FROM am_ul ORDER BY k DESC LIMIT 2;
RESET enable_seqscan;
RESET enable_bitmapscan;
DELETE FROM am_ul WHERE id % 2 = 0;
VACUUM am_ul;
SELECT entries FROM dmindex_stats('am_ul_k');
SELECT * FROM dmindex_check('am_ul_k', true);
TRUNCATE am_ul;
INSERT INTO am_ul VALUES (1, 7), (2, 8);
SELECT * FROM dmindex_check('am_ul_k', true);
SELECT * FROM dm_agree('am_ul', 'k = 7');
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
-- an unlogged table indexed while empty
CREATE UNLOGGED TABLE am_ul2 (k int4) WITH (autovacuum_enabled = false);
CREATE INDEX am_ul2_k ON am_ul2 USING dmindex (k);
INSERT INTO am_ul2 SELECT g FROM generate_series(1, 100) g;
SELECT * FROM dmindex_check('am_ul2_k', true);
SELECT * FROM dm_agree('am_ul2', 'k > 95');
SELECT dm_trees() - :base AS new_trees;

-- ---- databases ---------------------------------------------------------------------------
-- DROP DATABASE frees the trees of the database's indexes.  CREATE DATABASE
-- copies indexes file by file: a copy must not use the original's tree,
-- and dropping the copy must not free it.
SELECT current_database() AS regress_db \gset
CREATE DATABASE am_db1;
\c am_db1
CREATE EXTENSION dmindex;
CREATE TABLE t (k int4);
INSERT INTO t SELECT g FROM generate_series(1, 100) g;
CREATE INDEX t_k ON t USING dmindex (k);
\c :regress_db
SELECT dm_trees() - :base AS new_trees;
CREATE DATABASE am_db2 TEMPLATE am_db1;
\c am_db2
SET enable_seqscan = off;
\set VERBOSITY terse
SELECT count(*) FROM t WHERE k > 90;
\set VERBOSITY default
DROP TABLE t;
\c am_db1
SET enable_seqscan = off;
SELECT count(*) FROM t WHERE k > 90;
SELECT * FROM dmindex_check('t_k', true);
\c :regress_db
SELECT dm_trees() - :base AS new_trees;
DROP DATABASE am_db2;
DROP DATABASE am_db1;
SELECT dm_trees() - :base AS new_trees;
SELECT dmindex_gc();

-- ---- DROP TABLE, DROP SCHEMA -------------------------------------------------------------
DROP TABLE am_ul, am_ul2;
SELECT dm_trees() - :base AS new_trees;
CREATE SCHEMA am_s;
CREATE TABLE am_s.t (k int4);
CREATE INDEX t_k1 ON am_s.t USING dmindex (k);
CREATE INDEX t_k2 ON am_s.t USING dmindex (k) WITH (node_size = 512);
SELECT dm_trees() - :base AS new_trees;
DROP SCHEMA am_s CASCADE;
SELECT dm_trees() - :base AS new_trees;
-- am_t (two indexes) and am_u (none left)
DROP TABLE am_t, am_u;
SELECT dm_trees() - :base AS new_trees;
SELECT dmindex_gc();

