/*
 * dmindex--0.3--0.4.sql: schema changes from 0.3 to 0.4.
 *
 * Run by ALTER EXTENSION dmindex UPDATE on a 0.1 to 0.3 database, and by
 * CREATE EXTENSION dmindex after the scripts before it (there is no
 * separate full script, so the paths cannot drift apart).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dmindex UPDATE TO '0.4'" to load this file. \quit

--
-- dmindex_stats(index) gains the leaf format (docs/design.md §5.1): its
-- name ('sorted' or 'hopscotch'), the hopscotch neighbourhood and the home
-- buckets flagged as overflowed (both NULL for sorted leaves).  leaf_fill
-- is the load factor of either format: entries / capacity of the leaves,
-- which for hopscotch leaves is occupied buckets / buckets.  New OUT
-- columns change the result type, so the function is dropped and created
-- again (a view over the 0.3 function must be dropped first).  The C
-- function fills as many columns as the declaration has, so a database
-- still at an older version keeps working with this library.
--
DROP FUNCTION dmindex_stats(regclass);
CREATE FUNCTION dmindex_stats(index regclass,
	OUT height int, OUT leaf_nodes bigint, OUT inner_nodes bigint,
	OUT entries bigint, OUT leaf_fill float8, OUT remote_bytes bigint,
	OUT node_size int, OUT memnodes int,
	OUT leaf_format text, OUT neighborhood int, OUT overflow_homes bigint)
AS 'MODULE_PATHNAME', 'dmindex_stats'
LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION dmindex_stats(regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dmindex_stats(regclass) TO pg_monitor;
