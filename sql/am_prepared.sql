--
-- am_prepared: DROP INDEX, CREATE INDEX and TRUNCATE in prepared
-- transactions (PREPARE TRANSACTION; COMMIT/ROLLBACK PREPARED).
--
-- A dmindex index's tree lives on the memory nodes; dmgc.c frees a dropped
-- index's tree when the dropping transaction commits, and a new tree when
-- the creating one aborts.  A prepared transaction's outcome is decided
-- later, by COMMIT PREPARED or ROLLBACK PREPARED (in any session, or after
-- a restart: test/t/010_prepared_restart.pl), so neither free may happen
-- at PREPARE, nor at the next commit or abort of the session that
-- prepared.  A tree whose drop is finally committed, or whose creation is
-- finally rolled back, must still be freed, by the collector at the latest
-- (dmindex_gc()).
--
-- dm_agree(table, cond, index) (test_setup) runs "SELECT * FROM table
-- WHERE cond" as an index scan and a bitmap scan on index and as a
-- sequential scan: all must return the same rows (nrows = the sequential
-- scan's count).  dm_trees() counts the trees on the memory nodes.
--

SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() AS base \gset

CREATE TABLE ap (id int, k int4, j int8) WITH (autovacuum_enabled = false);
INSERT INTO ap SELECT g, g % 100, g % 7 FROM generate_series(1, 1000) g;
CREATE INDEX ap_k ON ap USING dmindex (k);
-- the session's other transactions write here
CREATE TABLE ap_other (x int);
SELECT dm_trees() - :base AS new_trees;

-- ---- DROP INDEX prepared, then rolled back ------------------------------------------
BEGIN;
DROP INDEX ap_k;
PREPARE TRANSACTION 'ap_drop';
SELECT dm_trees() - :base AS new_trees;
-- a commit, then an abort, in the session that prepared: nothing to free
INSERT INTO ap_other VALUES (1);
SELECT 1 / 0;
SELECT dm_trees() - :base AS new_trees;
ROLLBACK PREPARED 'ap_drop';
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dm_agree('ap', 'k = 42', 'ap_k');
SELECT * FROM dm_agree('ap', 'k >= 90', 'ap_k');
INSERT INTO ap VALUES (1001, 42, 0);
SELECT * FROM dm_agree('ap', 'k = 42', 'ap_k');
SELECT * FROM dmindex_check('ap_k', true);

-- ---- CREATE INDEX prepared, an abort in the session, then committed ---------------
BEGIN;
CREATE INDEX ap_j ON ap USING dmindex (j);
PREPARE TRANSACTION 'ap_create';
-- (the abort comes first: any transaction that ends, even a read-only
-- one, is the "next" transaction of the session)
BEGIN;
INSERT INTO ap_other VALUES (2);
ROLLBACK;
SELECT 1 / 0;
SELECT dm_trees() - :base AS new_trees;
-- the collector must not take it either: its creator may still commit
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
COMMIT PREPARED 'ap_create';
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dm_agree('ap', 'j = 3', 'ap_j');
INSERT INTO ap VALUES (1002, 43, 3);
SELECT * FROM dm_agree('ap', 'j = 3', 'ap_j');
SELECT * FROM dmindex_check('ap_j', true);

-- ---- TRUNCATE prepared (a new tree for each index), an abort, then committed ------
BEGIN;
TRUNCATE ap;
INSERT INTO ap SELECT g, g % 100, g % 7 FROM generate_series(1, 300) g;
PREPARE TRANSACTION 'ap_truncate';
SELECT 1 / 0;
COMMIT PREPARED 'ap_truncate';
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;
SELECT * FROM dm_agree('ap', 'k = 42', 'ap_k');
SELECT * FROM dm_agree('ap', 'j = 3', 'ap_j');
SELECT * FROM dmindex_check('ap_k', true);
SELECT * FROM dmindex_check('ap_j', true);

-- ---- rows inserted in a prepared transaction ------------------------------------------
BEGIN;
INSERT INTO ap SELECT g, 42, 3 FROM generate_series(301, 320) g;
PREPARE TRANSACTION 'ap_insert';
INSERT INTO ap_other VALUES (3);
COMMIT PREPARED 'ap_insert';
SELECT * FROM dm_agree('ap', 'k = 42', 'ap_k');
SELECT * FROM dm_agree('ap', 'j = 3', 'ap_j');
SELECT * FROM dmindex_check('ap_k', true);

-- ---- DROP INDEX prepared and committed: its tree is freed ---------------------------
BEGIN;
DROP INDEX ap_j;
PREPARE TRANSACTION 'ap_drop2';
INSERT INTO ap_other VALUES (4);
SELECT dm_trees() - :base AS new_trees;
COMMIT PREPARED 'ap_drop2';
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;

-- ---- CREATE INDEX prepared and rolled back: its tree is freed ----------------------
BEGIN;
CREATE INDEX ap_j ON ap USING dmindex (j);
PREPARE TRANSACTION 'ap_create2';
INSERT INTO ap_other VALUES (5);
SELECT dm_trees() - :base AS new_trees;
ROLLBACK PREPARED 'ap_create2';
SELECT dmindex_gc() >= 0 AS collected;
SELECT dm_trees() - :base AS new_trees;

-- the surviving index still answers like the heap
SELECT * FROM dm_agree('ap', 'k BETWEEN 40 AND 45', 'ap_k');
SELECT * FROM dmindex_check('ap_k', true);

DROP TABLE ap, ap_other;
SELECT dm_trees() - :base AS new_trees;
