/* dmindex--0.1.sql: first version: memnode status functions (no AM yet). */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION dmindex" to load this file. \quit

--
-- dmindex_memnodes(): one row per entry of dmindex.memnodes, reachable or
-- not.  The backend's persistent memnode client is used, so calling it also
-- (re)establishes this backend's connections.
--
-- dmindex_memnodes(memnodes text): the same for an explicit list, with a
-- throwaway client; lets an administrator check memnodes before adding them
-- to dmindex.memnodes (which is PGC_SIGHUP and cannot be SET).
--
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
	error text)
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
	error text)
AS 'MODULE_PATHNAME', 'dmindex_memnodes'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

--
-- dmindex_memnode_ping(address): connect to one memnode with a throwaway
-- client and return the round-trip time of a PING in milliseconds.  An
-- unreachable memnode raises an error (SQLSTATE 08006).
--
CREATE FUNCTION dmindex_memnode_ping(address text)
RETURNS double precision
AS 'MODULE_PATHNAME', 'dmindex_memnode_ping'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

-- The explicit-address functions make the server open TCP connections to
-- any host and port, so only superusers get them by default.  The status of
-- the configured memnodes is monitoring data.
REVOKE ALL ON FUNCTION dmindex_memnodes() FROM PUBLIC;
REVOKE ALL ON FUNCTION dmindex_memnodes(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION dmindex_memnode_ping(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dmindex_memnodes() TO pg_monitor;
