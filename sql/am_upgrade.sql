--
-- am_upgrade: the extension's version discipline.  A database created at
-- 0.1 keeps working with this library (the C functions its schema names are
-- still there), ALTER EXTENSION UPDATE brings it to the current version
-- without touching its indexes, and the updated database has exactly the
-- objects of a fresh install (names, signatures, bodies, properties and
-- grants), so an upgrade script cannot drift from a fresh install.
--

-- This database (created by pg_regress at the default version).
SELECT current_database() AS regress_db \gset
SELECT extversion = dmindex_version() AS library_matches_schema
FROM pg_extension WHERE extname = 'dmindex';

-- The extension's members, one line each, as a digest and a count (a psql
-- variable, because it must run in other databases).
\set members 'SELECT md5(string_agg(m, E''\n'' ORDER BY m)) AS digest, count(*) AS n FROM (SELECT pg_describe_object(d.classid, d.objid, d.objsubid) || coalesce('' | '' || pg_get_function_result(p.oid) || '' | '' || p.provolatile::text || p.proparallel::text || p.proisstrict::text || '' | '' || p.prosrc || '' | '' || coalesce(p.proacl::text, ''-''), '''') AS m FROM pg_depend d LEFT JOIN pg_proc p ON d.classid = ''pg_proc''::regclass AND p.oid = d.objid WHERE d.refclassid = ''pg_extension''::regclass AND d.deptype = ''e'' AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = ''dmindex'')) s'

CREATE DATABASE dm_upgrade_old;
CREATE DATABASE dm_upgrade_mid;
CREATE DATABASE dm_upgrade_03;
CREATE DATABASE dm_upgrade_04;
CREATE DATABASE dm_upgrade_05;
CREATE DATABASE dm_upgrade_new;

-- ---- a database at 0.1 with an index, then updated ----------------------
\c dm_upgrade_old
CREATE EXTENSION dmindex VERSION '0.1';
SELECT extversion FROM pg_extension WHERE extname = 'dmindex';
-- 0.2's function is not there yet.
SELECT count(*) AS has_version_function FROM pg_proc WHERE proname = 'dmindex_version';
CREATE TABLE up (id int, v int8);
INSERT INTO up SELECT g, g % 100 FROM generate_series(1, 2000) g;
CREATE INDEX up_v ON up USING dmindex (v);
INSERT INTO up SELECT g, g % 100 FROM generate_series(2001, 3000) g;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*), sum(id) FROM up WHERE v BETWEEN 10 AND 19;
SELECT * FROM dmindex_check('up_v', true);
-- 0.1 declares dmindex_stats with 8 columns: this library fills those.
SELECT entries, node_size, memnodes FROM dmindex_stats('up_v');

ALTER EXTENSION dmindex UPDATE;
SELECT extversion = dmindex_version() AS updated
FROM pg_extension WHERE extname = 'dmindex';
-- The update leaves the index alone; it is still written and read.
INSERT INTO up SELECT g, g % 100 FROM generate_series(3001, 3500) g;
SELECT count(*), sum(id) FROM up WHERE v BETWEEN 10 AND 19;
SELECT * FROM dmindex_check('up_v', true);
-- (built without the option: the leaf format the server defaults to)
SELECT entries, node_size, leaf_format = current_setting('dmindex.default_leaf_format') AS default_format,
       (neighborhood IS NULL) = (leaf_format = 'sorted') AS neighborhood_if_hopscotch
FROM dmindex_stats('up_v');
:members \gset old_
DROP TABLE up;

-- ---- a database at 0.2, updated: 0.3 adds the offload counters -----------
\c dm_upgrade_mid
CREATE EXTENSION dmindex VERSION '0.2';
SELECT count(*) AS has_offload_stats FROM pg_proc WHERE proname = 'dmindex_offload_stats';
CREATE TABLE up (id int, v int8);
INSERT INTO up SELECT g, g % 100 FROM generate_series(1, 2000) g;
CREATE INDEX up_v ON up USING dmindex (v);
ALTER EXTENSION dmindex UPDATE;
SELECT extversion = dmindex_version() AS updated
FROM pg_extension WHERE extname = 'dmindex';
SELECT count(*) AS has_offload_stats FROM pg_proc WHERE proname = 'dmindex_offload_stats';
SET dmindex.offload = always;
SELECT dmindex_offload_stats_reset();
INSERT INTO up SELECT g, g % 100 FROM generate_series(2001, 2500) g;
-- (over ucx nothing is offloaded: src/dm/dm_offload.c)
SELECT mode, CASE WHEN current_setting('dmindex.transport') = 'ucx' THEN offloads = 0 ELSE offloads > 0 END
         AS offloaded
FROM dmindex_offload_stats();
RESET dmindex.offload;
SELECT * FROM dmindex_check('up_v', true);
:members \gset mid_
DROP TABLE up;

-- ---- a database at 0.3, updated: 0.4 adds the leaf format to dmindex_stats --
\c dm_upgrade_03
CREATE EXTENSION dmindex VERSION '0.3';
CREATE TABLE up (id int, v int8);
INSERT INTO up SELECT g, g % 100 FROM generate_series(1, 2000) g;
-- the reloption is the library's: a 0.3 schema may have hopscotch indexes
CREATE INDEX up_v ON up USING dmindex (v) WITH (leaf_format = 'hopscotch', neighborhood = 4);
SELECT 'leaf_format' = ANY (proargnames) AS has_leaf_format, cardinality(proargnames) AS arguments
FROM pg_proc WHERE proname = 'dmindex_stats';
SELECT entries, node_size FROM dmindex_stats('up_v');
ALTER EXTENSION dmindex UPDATE;
SELECT extversion = dmindex_version() AS updated
FROM pg_extension WHERE extname = 'dmindex';
SELECT entries, leaf_format, neighborhood, overflow_homes >= 0 AS counts_overflow
FROM dmindex_stats('up_v');
INSERT INTO up SELECT g, g % 100 FROM generate_series(2001, 2500) g;
SELECT * FROM dmindex_check('up_v', true);
:members \gset v03_
DROP TABLE up;

-- ---- a database at 0.4, updated: 0.5 adds the byte key encoding functions --
\c dm_upgrade_04
CREATE EXTENSION dmindex VERSION '0.4';
CREATE TABLE up (id int, v int8);
INSERT INTO up SELECT g, g % 100 FROM generate_series(1, 2000) g;
CREATE INDEX up_v ON up USING dmindex (v);
SELECT count(*) AS has_key_functions FROM pg_proc WHERE proname LIKE 'dmindex\_key\_%';
ALTER EXTENSION dmindex UPDATE;
SELECT extversion = dmindex_version() AS updated
FROM pg_extension WHERE extname = 'dmindex';
SELECT count(*) AS has_key_functions FROM pg_proc WHERE proname LIKE 'dmindex\_key\_%';
SELECT dmindex_key_encode(1, 'a'::text COLLATE "C") AS key,
       dmindex_key_prefix_successor(dmindex_key_encode(1)) AS successor;
INSERT INTO up SELECT g, g % 100 FROM generate_series(2001, 2500) g;
SELECT count(*), sum(id) FROM up WHERE v BETWEEN 10 AND 19;
SELECT * FROM dmindex_check('up_v', true);
:members \gset v04_
DROP TABLE up;

-- ---- a database at 0.5, updated: 0.6 adds the operator classes of byte keys --
-- (text, name, bpchar, bytea, uuid, numeric); a FIXED8 index built at 0.5
-- is the same index after the update, and a multi-column one can be built
\c dm_upgrade_05
CREATE EXTENSION dmindex VERSION '0.5';
CREATE TABLE up (id int, v int8, t text COLLATE "C");
INSERT INTO up SELECT g, g % 100, 't' || (g % 37) FROM generate_series(1, 2000) g;
CREATE INDEX up_v ON up USING dmindex (v);
CREATE INDEX up_t ON up USING dmindex (t);
SELECT count(*) AS byte_key_opclasses FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
WHERE a.amname = 'dmindex' AND c.opcname IN ('text_ops', 'numeric_ops', 'uuid_ops');
ALTER EXTENSION dmindex UPDATE;
SELECT extversion = dmindex_version() AS updated
FROM pg_extension WHERE extname = 'dmindex';
SELECT count(*) AS byte_key_opclasses FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
WHERE a.amname = 'dmindex' AND c.opcname IN ('text_ops', 'numeric_ops', 'uuid_ops');
CREATE INDEX up_t ON up USING dmindex (t);
CREATE INDEX up_vt ON up USING dmindex (v, t);
INSERT INTO up SELECT g, g % 100, 't' || (g % 37) FROM generate_series(2001, 2500) g;
SET enable_seqscan = off;
SELECT count(*), sum(id) FROM up WHERE v BETWEEN 10 AND 19;
SELECT count(*), sum(id) FROM up WHERE v = 10 AND t > 't2';
SELECT count(*), sum(id) FROM up WHERE t = 't7';
RESET enable_seqscan;
SELECT count(*), sum(id) FROM up WHERE v = 10 AND t > 't2';
SELECT * FROM dmindex_check('up_v', true);
SELECT * FROM dmindex_check('up_vt', true);
:members \gset v05_
DROP TABLE up;

-- ---- a fresh install at the default version ------------------------------
\c dm_upgrade_new
CREATE EXTENSION dmindex;
SELECT extversion = dmindex_version() AS fresh_at_library_version
FROM pg_extension WHERE extname = 'dmindex';
:members \gset new_

SELECT :'old_digest' = :'new_digest' AS same_objects,
       :old_n = :new_n AS same_count, :new_n > 50 AS has_members;
SELECT :'mid_digest' = :'new_digest' AS same_objects_from_02, :mid_n = :new_n AS same_count_from_02;
SELECT :'v03_digest' = :'new_digest' AS same_objects_from_03, :v03_n = :new_n AS same_count_from_03;
SELECT :'v04_digest' = :'new_digest' AS same_objects_from_04, :v04_n = :new_n AS same_count_from_04;
SELECT :'v05_digest' = :'new_digest' AS same_objects_from_05, :v05_n = :new_n AS same_count_from_05;

\c :regress_db
DROP DATABASE dm_upgrade_old;
DROP DATABASE dm_upgrade_mid;
DROP DATABASE dm_upgrade_03;
DROP DATABASE dm_upgrade_04;
DROP DATABASE dm_upgrade_05;
DROP DATABASE dm_upgrade_new;
