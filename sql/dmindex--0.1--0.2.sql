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
