--
-- am_offload: the access method's paths with dmindex.offload = always (DEX
-- §6; src/pg/dmoffload.c): the insert buffer's flushes and VACUUM's deletes
-- go through the memnode's executor entry by entry (what it declines, a
-- split, goes one-sided), forward scans read batches of the executor
-- (dmscan.c), backward scans read one-sided.  Every query family, asked of
-- a dmindex index and of a btree over the same rows, must give the same
-- rows (in the same order where ordered), after inserts, updates, deletes
-- and VACUUM; the server's counters (dmindex_offload_stats) must show that
-- each path offloaded — except over ucx, where nothing may be (the
-- executor's atomics are not a NIC's: src/dm/dm_offload.c) — and
-- dmindex_check must pass.
--
SELECT current_setting('dmindex.transport') = 'ucx' AS over_ucx \gset
SET dmindex.offload = always;
SHOW dmindex.offload;
SELECT mode FROM dmindex_offload_stats();

-- ---- the data: the same rows and the same changes on both tables ---------------
CREATE TABLE off_dm (id int, v int8) WITH (autovacuum_enabled = false);
CREATE TABLE off_bt (id int, v int8) WITH (autovacuum_enabled = false);
INSERT INTO off_dm SELECT g, CASE WHEN g % 53 = 0 THEN NULL ELSE (g * 7919) % 3000 END
FROM generate_series(1, 15000) g;
INSERT INTO off_bt SELECT * FROM off_dm;
CREATE INDEX off_dm_v ON off_dm USING dmindex (v) WITH (node_size = 256);
CREATE INDEX off_bt_v ON off_bt (v);

-- inserts after the build: the flushes offload
SELECT dmindex_offload_stats_reset();
INSERT INTO off_dm SELECT g, (g::int8 * 104729) % 3000 FROM generate_series(15001, 25000) g;
INSERT INTO off_bt SELECT g, (g::int8 * 104729) % 3000 FROM generate_series(15001, 25000) g;
-- single-row transactions too (one entry per flush)
INSERT INTO off_dm VALUES (25001, 17);
INSERT INTO off_dm VALUES (25002, 2999);
INSERT INTO off_bt VALUES (25001, 17);
INSERT INTO off_bt VALUES (25002, 2999);
SELECT CASE WHEN :'over_ucx'::bool THEN offloads = 0 AND decided_offload = 0 AND rpcs = 0
            ELSE offloads > 0 AND decided_offload > 0 AND invalidated > 0 AND avg_rpc_us > 0 END
         AS inserts_offloaded, lost_writes = 0 AS none_lost, rpcs >= offloads + fallbacks AS rpcs_counted
FROM dmindex_offload_stats();

-- updates and deletes, then VACUUM: its deletes offload
UPDATE off_dm SET v = v + 1 WHERE id % 7 = 0;
UPDATE off_bt SET v = v + 1 WHERE id % 7 = 0;
DELETE FROM off_dm WHERE id % 11 = 0 OR v BETWEEN 1000 AND 1100;
DELETE FROM off_bt WHERE id % 11 = 0 OR v BETWEEN 1000 AND 1100;
SELECT dmindex_offload_stats_reset();
VACUUM off_dm;
SELECT CASE WHEN :'over_ucx'::bool THEN offloads = 0 ELSE offloads > 0 END AS vacuum_deletes_offloaded,
       lost_writes = 0 AS none_lost
FROM dmindex_offload_stats();
VACUUM ANALYZE off_bt;
ANALYZE off_dm;
SELECT * FROM dmindex_check('off_dm_v', true);
SELECT count(*) AS rows, count(v) AS not_null FROM off_dm;

-- ---- the queries --------------------------------------------------------------------
SELECT dmindex_offload_stats_reset();
CREATE TABLE off_queries (n int PRIMARY KEY, label text, ordered bool, modes text[], q text);
INSERT INTO off_queries VALUES
(1, 'point', false, '{index,bitmap}', 'SELECT id, v FROM %1$s WHERE v = 1234'),
(2, 'point, count', false, '{ios,bitmap}', 'SELECT count(*) FROM %1$s WHERE v = 17'),
(3, 'points = ANY', false, '{bitmap}', 'SELECT id, v FROM %1$s WHERE v = ANY (''{0, 1, 17, 1050, 2999, 5000}'')'),
(4, 'range', false, '{index,bitmap}', 'SELECT id, v FROM %1$s WHERE v BETWEEN 100 AND 900'),
(5, 'range over the deleted band', false, '{index,bitmap}', 'SELECT id, v FROM %1$s WHERE v BETWEEN 990 AND 1110'),
(6, 'open range', false, '{index,bitmap}', 'SELECT id, v FROM %1$s WHERE v > 2500'),
(7, 'is null', false, '{index,bitmap}', 'SELECT id FROM %1$s WHERE v IS NULL'),
(8, 'everything, ordered', true, '{index}', 'SELECT v FROM %1$s ORDER BY v'),
(9, 'order by, limit', true, '{index,ios}', 'SELECT v FROM %1$s WHERE v >= 500 ORDER BY v LIMIT 300'),
(10, 'order by desc, limit', true, '{index,ios}', 'SELECT v FROM %1$s WHERE v <= 2500 ORDER BY v DESC LIMIT 300'),
(11, 'order by desc, nulls', true, '{index}', 'SELECT v FROM %1$s ORDER BY v DESC'),
(12, 'limit 1', true, '{index}', 'SELECT v FROM %1$s WHERE v > 1500 ORDER BY v LIMIT 1'),
(13, 'index-only sum', false, '{ios}', 'SELECT count(*), sum(v) FROM %1$s WHERE v BETWEEN 10 AND 2000'),
(14, 'min, max', false, '{ios}', 'SELECT min(v), max(v) FROM %1$s'),
(15, 'nested loop (rescans)', false, '{nestloop}',
 'SELECT a.id, b.id FROM %1$s a JOIN %1$s b ON b.v = a.v WHERE a.id < 300'),
(16, 'merge join', true, '{merge}', 'SELECT a.v FROM %1$s a JOIN %1$s b ON b.v = a.v AND b.id = a.id ORDER BY a.v');

SELECT n, label, mode, c.*
FROM off_queries, unnest(modes) AS mode, LATERAL dm_compare(q, ordered, mode, '{off_dm}', '{off_bt}') c
ORDER BY n, mode;
SELECT CASE WHEN :'over_ucx'::bool THEN offloads = 0 ELSE offloads > 0 END AS scans_offloaded
FROM dmindex_offload_stats();

-- ---- a scrollable cursor: forward (batches) and backward (one-sided) in turn ------------
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_indexonlyscan = off;
BEGIN;
DECLARE off_c_dm SCROLL CURSOR FOR SELECT v FROM off_dm WHERE v BETWEEN 200 AND 2200 ORDER BY v;
DECLARE off_c_bt SCROLL CURSOR FOR SELECT v FROM off_bt WHERE v BETWEEN 200 AND 2200 ORDER BY v;
SELECT * FROM dm_moves('{10, "BACKWARD 4", 100, "BACKWARD 150", "FORWARD 1", 2000, PRIOR,
                         "BACKWARD 3", NEXT, "BACKWARD ALL", NEXT, LAST, PRIOR, FIRST,
                         "ABSOLUTE 3000", "RELATIVE -700", ALL, "BACKWARD 5"}', 'off_c_dm', 'off_c_bt');
COMMIT;
-- the transaction's own buffered entries merge with the executor's batches
BEGIN;
INSERT INTO off_dm SELECT g, 1500 FROM generate_series(30001, 30100) g;
INSERT INTO off_bt SELECT g, 1500 FROM generate_series(30001, 30100) g;
SELECT (SELECT string_agg(id::text, ',' ORDER BY id) FROM off_dm WHERE v = 1500) =
       (SELECT string_agg(id::text, ',' ORDER BY id) FROM off_bt WHERE v = 1500) AS own_rows_seen,
       (SELECT count(*) FROM off_dm WHERE v BETWEEN 1400 AND 1600) =
       (SELECT count(*) FROM off_bt WHERE v BETWEEN 1400 AND 1600) AS range_same;
COMMIT;
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_indexonlyscan;
SELECT * FROM dmindex_check('off_dm_v', true);

-- ---- off: nothing offloads --------------------------------------------------------------
SET dmindex.offload = off;
SELECT dmindex_offload_stats_reset();
INSERT INTO off_dm SELECT g, g % 3000 FROM generate_series(40001, 41000) g;
SELECT count(*) FROM off_dm WHERE v BETWEEN 100 AND 200;
SELECT mode, offloads, decided_offload, rpcs FROM dmindex_offload_stats();
RESET dmindex.offload;

-- only pg_monitor members read the counters, only superusers reset them
SET ROLE pg_monitor;
SELECT count(*) = 1 AS monitor_reads_stats FROM dmindex_offload_stats();
SELECT dmindex_offload_stats_reset();
RESET ROLE;

DROP TABLE off_dm, off_bt, off_queries;
