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
