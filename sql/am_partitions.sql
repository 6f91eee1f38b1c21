--
-- am_partitions: key ranges per instance from SQL (src/pg/dmpartition.c).
-- dmindex_set_partitions validates and installs a map and bumps the epoch;
-- dmindex_partitions shows it; dmindex_owner routes a key.  This server is
-- instance 0 and the only writer: it writes keys of every range (those of
-- other instances as foreign nodes, not cached), and the index stays exact.
--
CREATE TABLE pt (id int, v int4) WITH (autovacuum_enabled = false);
INSERT INTO pt SELECT g, g FROM generate_series(1, 3000) g;
CREATE INDEX pt_v ON pt USING dmindex (v) WITH (node_size = 256);

SELECT partition, instance, lo_value, hi_value, epoch, local FROM dmindex_partitions('pt_v');

-- three ranges: [min, 1000) instance 0, [1000, 2000) instance 1, [2000, max] and NULLs instance 2
SELECT dmindex_set_partitions('pt_v', ARRAY[1000, 2000], ARRAY[0, 1, 2]) AS epoch;
SELECT partition, instance, lo_value, hi_value, epoch, local FROM dmindex_partitions('pt_v');
SELECT v, dmindex_owner('pt_v', v) FROM (VALUES (-5), (0), (999), (1000), (1999), (2000), (2147483647)) x(v);
SELECT dmindex_owner('pt_v', NULL::int4) AS null_owner;
-- values of the operator family's other types route the same way
SELECT dmindex_owner('pt_v', 1500::int8) AS int8_key, dmindex_owner('pt_v', 999::int2) AS int2_key;

-- the writer writes every range; answers stay exact
INSERT INTO pt SELECT g, g FROM generate_series(3001, 4000) g;
INSERT INTO pt VALUES (1, NULL);
UPDATE pt SET v = v + 1 WHERE id % 7 = 0;
DELETE FROM pt WHERE id % 11 = 0;
VACUUM pt;
SET enable_seqscan = off;
SELECT count(*), sum(v) FROM pt WHERE v BETWEEN 500 AND 2500;
SELECT count(*) FROM pt WHERE v IS NULL;
RESET enable_seqscan;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT count(*), sum(v) FROM pt WHERE v BETWEEN 500 AND 2500;
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT entries, heap_tuples, ok FROM dmindex_check('pt_v', true);

-- re-partitioning moves no data and bumps the epoch; ROLLBACK does not undo it
BEGIN;
SELECT dmindex_set_partitions('pt_v', ARRAY[2500], ARRAY[2, 0]) AS epoch;
ROLLBACK;
SELECT partition, instance, lo_value, hi_value, epoch, local FROM dmindex_partitions('pt_v');
SELECT dmindex_owner('pt_v', 1500) AS owner_1500, dmindex_owner('pt_v', 3000) AS owner_3000;
-- boundaries of another type of the family
SELECT dmindex_set_partitions('pt_v', ARRAY[100::int8, 200::int8], ARRAY[5, 0, 5]) AS epoch;
SELECT partition, instance, lo_value, hi_value, epoch, local FROM dmindex_partitions('pt_v');
SELECT entries, heap_tuples, ok FROM dmindex_check('pt_v', true);
-- one range: everything back to instance 0
SELECT dmindex_set_partitions('pt_v', '{}'::int4[], ARRAY[0]) AS epoch;
SELECT partition, instance, lo, hi, epoch, local FROM dmindex_partitions('pt_v');

-- refused
SELECT dmindex_set_partitions('pt_v', ARRAY[2000, 1000], ARRAY[0, 1, 2]);
SELECT dmindex_set_partitions('pt_v', ARRAY[1000, 1000], ARRAY[0, 1, 2]);
SELECT dmindex_set_partitions('pt_v', ARRAY[1000], ARRAY[0, 1, 2]);
SELECT dmindex_set_partitions('pt_v', ARRAY[1000, NULL], ARRAY[0, 1, 2]);
SELECT dmindex_set_partitions('pt_v', ARRAY[1000], ARRAY[0, NULL]);
SELECT dmindex_set_partitions('pt_v', ARRAY[1000], ARRAY[0, 65536]);
SELECT dmindex_set_partitions('pt_v', ARRAY[1000], ARRAY[-1, 0]);
SELECT dmindex_set_partitions('pt_v', ARRAY['-9223372036854775808'::int8], ARRAY[0, 1]);
SELECT dmindex_set_partitions('pt_v', ARRAY[1.5::float8], ARRAY[0, 1]);
SELECT dmindex_set_partitions('pt_v', ARRAY[[1], [2]], ARRAY[0, 1, 2]);
SELECT dmindex_set_partitions('pt_v', (SELECT array_agg(g * 10) FROM generate_series(1, 64) g),
                              (SELECT array_agg(0) FROM generate_series(0, 64) g));
SELECT dmindex_set_partitions('pt', ARRAY[1], ARRAY[0, 1]);
CREATE ROLE pt_other;
GRANT SELECT ON pt TO pt_other;
SET ROLE pt_other;
SELECT dmindex_set_partitions('pt_v', ARRAY[1000], ARRAY[0, 1]);
SELECT dmindex_owner('pt_v', 5) AS owner_for_a_reader;
RESET ROLE;
REVOKE SELECT ON pt FROM pt_other;
SET ROLE pt_other;
SELECT dmindex_owner('pt_v', 5);
RESET ROLE;
DROP ROLE pt_other;
SELECT partition, instance, epoch FROM dmindex_partitions('pt_v');

DROP TABLE pt;
