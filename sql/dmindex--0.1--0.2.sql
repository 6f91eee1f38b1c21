/*
 * dmindex--0.1--0.2.sql: schema changes from 0.1 to 0.2.
 *
 * Run by ALTER EXTENSION dmindex UPDATE on a 0.1 database, and by CREATE
 * EXTENSION dmindex after dmindex--0.1.sql (there is no separate full
 * script for 0.2, so the two paths cannot drift apart).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dmindex UPDATE TO '0.2'" to load this file. \quit

--
-- dmindex_version(): the version of the loaded shared library.  When it
-- differs from pg_extension.extversion, ALTER EXTENSION dmindex UPDATE is
-- due (the library still serves the older schema meanwhile).
--
CREATE FUNCTION dmindex_version() RETURNS text
AS 'MODULE_PATHNAME', 'dmindex_version'
LANGUAGE C STRICT PARALLEL SAFE;

--
-- dmindex_set_partitions(index, boundaries, instances): the partition map
-- of the index (DEX §4): range i holds the keys from boundaries[i-1] (the
-- lowest value for the first range) up to, not including, boundaries[i],
-- and is cached by instance instances[i] (dmindex.instance_id); the last
-- range also holds the NULLs.  Boundaries are values of the indexed type
-- (or a type of its operator family), distinct and ascending.  Primary
-- only; the index's owner or a superuser.  Installs the map at once (not
-- undone by ROLLBACK), moves no data, and returns the new epoch; running
-- servers pick it up within dmindex.partition_refresh_interval.
--
CREATE FUNCTION dmindex_set_partitions(index regclass, boundaries anyarray, instances int[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'dmindex_set_partitions'
LANGUAGE C STRICT VOLATILE;

--
-- dmindex_owner(index, value): which instance's range holds value (a NULL
-- value: the owner of the NULLs), for routing reads by key.  Needs SELECT
-- on the table.
--
CREATE FUNCTION dmindex_owner(index regclass, value anyelement)
RETURNS int
AS 'MODULE_PATHNAME', 'dmindex_owner'
LANGUAGE C CALLED ON NULL INPUT STABLE;

-- dmindex_memnodes() and dmindex_memnodes(text) gain two columns: the
-- memnode's counts of connections refused at authentication and of requests
-- refused for touching another identity's memory or trees (both 0 on a
-- memnode without --auth-file; README "Security").  A function's result
-- type cannot be altered, so both are dropped and created again, with the
-- grants of 0.1.  (The library fills the new columns only where the
-- schema has them, so a 0.1 database keeps working.)
--
DROP FUNCTION dmindex_memnodes();
DROP FUNCTION dmindex_memnodes(text);

CREATE FUNCTION dmindex_memnodes()
RETURNS TABLE (
	address text,
	node_id int,
	reachable bool,
	backend text,
	incarnation text,
	region_size bigint,
	chunks_total bigint,
	chunks_used bigint,
	trees bigint,
	error text,
	auth_failures bigint,
	access_denied bigint)
AS 'MODULE_PATHNAME', 'dmindex_memnodes'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION dmindex_memnodes(memnodes text)
RETURNS TABLE (
	address text,
	node_id int,
	reachable bool,
	backend text,
	incarnation text,
	region_size bigint,
	chunks_total bigint,
	chunks_used bigint,
	trees bigint,
	error text,
	auth_failures bigint,
	access_denied bigint)
AS 'MODULE_PATHNAME', 'dmindex_memnodes'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

REVOKE ALL ON FUNCTION dmindex_memnodes() FROM PUBLIC;
REVOKE ALL ON FUNCTION dmindex_memnodes(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dmindex_memnodes() TO pg_monitor;
