/*
 * dmindex--0.4--0.5.sql: schema changes from 0.4 to 0.5.
 *
 * Run by ALTER EXTENSION dmindex UPDATE on a 0.1 to 0.4 database, and by
 * CREATE EXTENSION dmindex after the scripts before it (there is no
 * separate full script, so the paths cannot drift apart).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dmindex UPDATE TO '0.5'" to load this file. \quit

--
-- The byte key encoding of variable-length and multi-column keys
-- (docs/design.md §5.2 and §8, src/pg/dmkeyenc.c), callable on its own so
-- that its order can be checked against the types' comparisons.  Not
-- strict: NULL arguments are NULL key columns.  Strings are encoded under
-- the call's collation.
--
CREATE FUNCTION dmindex_key_encode(VARIADIC "any") RETURNS bytea
AS 'MODULE_PATHNAME', 'dmindex_key_encode'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- options: per column 'asc' or 'desc', optionally 'nulls first|last'
CREATE FUNCTION dmindex_key_encode_with(options text[], VARIADIC "any") RETURNS bytea
AS 'MODULE_PATHNAME', 'dmindex_key_encode_with'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- the smallest byte string above every string with this prefix (NULL: none)
CREATE FUNCTION dmindex_key_prefix_successor(prefix bytea) RETURNS bytea
AS 'MODULE_PATHNAME', 'dmindex_key_prefix_successor'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
