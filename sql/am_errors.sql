--
-- am_errors: what dmindex refuses, and how.  Invalid reloptions, types
-- without an operator class, temporary tables, what the access method does
-- not support (several columns, UNIQUE, INCLUDE, CLUSTER, exclusion
-- constraints), and the SQL functions on things that are not dmindex
-- indexes.  (An unreachable dmindex.memnodes is covered by memnodes.sql.)
--

CREATE TABLE ae (a int4, b int4, t text, n numeric, f float8);
INSERT INTO ae SELECT g, g, g::text, g, g FROM generate_series(1, 100) g;

-- ---- reloptions -----------------------------------------------------------------
-- node_size: a power of two from 256 to 4096
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (node_size = 100);
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (node_size = 128);
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (node_size = 300);
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (node_size = 1000);
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (node_size = 8192);
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (node_size = -256);
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (node_size = 'big');
-- fillfactor: 10 to 100
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (fillfactor = 5);
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (fillfactor = 101);
-- placement_level: 0 to 8
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (placement_level = -1);
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (placement_level = 9);
-- memnodes: a host:port list
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (memnodes = 'nohost');
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (memnodes = 'host:99999');
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (memnodes = 'host:');
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (memnodes = 'a:1,,b:2');
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (memnodes = 'Host:1, host:1');
-- ...that are reachable
\set VERBOSITY terse
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (memnodes = '127.0.0.1:1');
\set VERBOSITY default
-- An empty list names no memnode at all: refused, or taken to mean all of
-- dmindex.memnodes; either way no index may be left that cannot be used.
DO $$
BEGIN
	CREATE INDEX ae_i ON ae USING dmindex (a) WITH (memnodes = '');
	INSERT INTO ae VALUES (101, 101);
	PERFORM * FROM dmindex_check('ae_i', true);
	RAISE NOTICE 'memnodes = '''': accepted, index works';
EXCEPTION WHEN invalid_parameter_value THEN
	RAISE NOTICE 'memnodes = '''': refused';
END
$$;
SET client_min_messages = warning;
DROP INDEX IF EXISTS ae_i;
RESET client_min_messages;
DELETE FROM ae WHERE a > 100;
-- unknown options
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (no_such_option = 1);
CREATE INDEX ae_i ON ae USING dmindex (a) WITH (deduplicate_items = off);

-- valid options, at their limits
CREATE INDEX ae_i1 ON ae USING dmindex (a) WITH (node_size = 256, fillfactor = 10, placement_level = 0);
CREATE INDEX ae_i2 ON ae USING dmindex (a) WITH (node_size = 4096, fillfactor = 100, placement_level = 8);
SELECT node_size, entries FROM dmindex_stats('ae_i1');
SELECT node_size, entries FROM dmindex_stats('ae_i2');
SELECT * FROM dmindex_check('ae_i1', true);
SELECT * FROM dmindex_check('ae_i2', true);
-- the memnodes option may name the configured memnodes (set by the harness:
-- built here without showing the address)
DO $$
BEGIN
	EXECUTE format('CREATE INDEX ae_i3 ON ae USING dmindex (a) WITH (memnodes = %L)',
				   current_setting('dmindex.memnodes'));
END
$$;
SELECT node_size, entries, memnodes FROM dmindex_stats('ae_i3');
SELECT * FROM dmindex_check('ae_i3', true);
-- ALTER INDEX checks the values the same way
ALTER INDEX ae_i1 SET (node_size = 333);
ALTER INDEX ae_i1 SET (fillfactor = 0);
ALTER INDEX ae_i1 SET (memnodes = 'nohost');
ALTER INDEX ae_i1 SET (node_size = 512);
ALTER INDEX ae_i1 RESET (node_size, fillfactor, placement_level);
SELECT reloptions FROM pg_class WHERE relname = 'ae_i1';
DROP INDEX ae_i1, ae_i2, ae_i3;

-- ---- what the access method cannot do ---------------------------------------------
-- types without an operator class
CREATE INDEX ae_i ON ae USING dmindex ((point(a, a)));
CREATE INDEX ae_i ON ae USING dmindex ((n::text::jsonb));
CREATE INDEX ae_i ON ae USING dmindex ((int4range(a, a + 1)));
-- an operator class of another type
CREATE INDEX ae_i ON ae USING dmindex (a int8_ops);
CREATE INDEX ae_i ON ae USING dmindex (t int4_ops);
-- amcanunique, amcaninclude are false
CREATE INDEX ae_i ON ae USING dmindex (a, b);	-- several columns: key format VAR (am_multicol)
DROP INDEX ae_i;
CREATE UNIQUE INDEX ae_i ON ae USING dmindex (a);
CREATE INDEX ae_i ON ae USING dmindex (a) INCLUDE (b);
-- amclusterable is false
CREATE INDEX ae_i ON ae USING dmindex (a);
CLUSTER ae USING ae_i;
ALTER TABLE ae CLUSTER ON ae_i;
DROP INDEX ae_i;
-- Exclusion constraints check other transactions' entries, which dmindex
-- keeps in the inserting backend until commit: refused.
DO $$
BEGIN
	ALTER TABLE ae ADD CONSTRAINT ae_ex EXCLUDE USING dmindex (a WITH =);
	RAISE NOTICE 'exclusion constraint accepted';
EXCEPTION WHEN feature_not_supported THEN
	RAISE NOTICE 'exclusion constraint refused';
END
$$;
SELECT count(*) AS exclusion_constraints FROM pg_constraint WHERE conrelid = 'ae'::regclass;

-- ---- temporary tables ---------------------------------------------------------------
-- Their index would live in memory every session and server shares.
CREATE TEMP TABLE ae_temp (a int4);
CREATE INDEX ae_temp_a ON ae_temp USING dmindex (a);
\set VERBOSITY terse
CREATE INDEX ae_temp_a ON ae_temp USING dmindex (a) WITH (node_size = 256);
\set VERBOSITY default

-- ---- the SQL functions on other relations ----------------------------------------------
CREATE INDEX ae_btree ON ae (a);
SELECT * FROM dmindex_stats('ae_btree');
SELECT * FROM dmindex_check('ae_btree');
SELECT * FROM dmindex_stats('ae');
SELECT * FROM dmindex_check('ae', true);
SELECT * FROM dmindex_stats('pg_class');
SELECT * FROM dmindex_stats('no_such_index');
SELECT * FROM dmindex_stats(NULL);
SELECT * FROM dmindex_check(NULL, true);
SELECT * FROM dmindex_check('ae_btree', NULL);
-- not for everyone
CREATE ROLE ae_user;
SET ROLE ae_user;
SELECT dmindex_gc();
RESET ROLE;
DROP ROLE ae_user;

-- ---- amvalidate, and the handler -------------------------------------------------------
SELECT count(*) > 0 AS has_opclasses, bool_and(amvalidate(oid)) AS all_valid
FROM pg_opclass WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'dmindex');
SELECT amname, amhandler, amtype FROM pg_am WHERE amname = 'dmindex';
SELECT p.name, pg_indexam_has_property(a.oid, p.name)
FROM pg_am a, unnest(ARRAY['can_order', 'can_unique', 'can_multi_col', 'can_include']) p(name)
WHERE a.amname = 'dmindex';
CREATE INDEX ae_i ON ae USING dmindex (a);
SELECT p.name, pg_index_has_property('ae_i'::regclass, p.name)
FROM unnest(ARRAY['clusterable', 'index_scan', 'bitmap_scan', 'backward_scan']) p(name);
SELECT p.name, pg_index_column_has_property('ae_i'::regclass, 1, p.name)
FROM unnest(ARRAY['asc', 'desc', 'nulls_first', 'nulls_last', 'orderable', 'distance_orderable',
                  'returnable', 'search_array', 'search_nulls']) p(name);
DROP INDEX ae_i;

DROP TABLE ae;
