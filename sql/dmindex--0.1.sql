/*
 * dmindex--0.1.sql: the schema of dmindex 0.1, FROZEN.
 *
 * Installed databases may be at 0.1, so this file never changes again:
 * every later schema change goes into an upgrade script
 * (dmindex--0.1--0.2.sql, ...), and CREATE EXTENSION runs this file and
 * then the upgrade scripts in order.  C functions that an older script
 * names stay in the library, so a database not yet updated keeps working
 * with a newer library.  sql/am_upgrade.sql checks that an updated
 * database and a fresh one have the same objects.
 */

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

-- ==== the access method ===================================================
--
-- CREATE INDEX ... USING dmindex (col): a B+-tree whose nodes live in the
-- memory of dmindex-memnode processes (see dmindex.memnodes).
--
CREATE FUNCTION dmhandler(internal) RETURNS index_am_handler
AS 'MODULE_PATHNAME' LANGUAGE C;

CREATE ACCESS METHOD dmindex TYPE INDEX HANDLER dmhandler;
COMMENT ON ACCESS METHOD dmindex IS 'B+-tree index in disaggregated memory (memory nodes)';

--
-- dmindex_stats(index): the remote tree's shape and size.
--
CREATE FUNCTION dmindex_stats(index regclass,
	OUT height int, OUT leaf_nodes bigint, OUT inner_nodes bigint,
	OUT entries bigint, OUT leaf_fill float8, OUT remote_bytes bigint,
	OUT node_size int, OUT memnodes int)
AS 'MODULE_PATHNAME', 'dmindex_stats'
LANGUAGE C STRICT VOLATILE;

--
-- dmindex_check(index, heapallindexed): verify the remote tree's
-- invariants; with heapallindexed also that every visible row has its entry
-- and no entry is stale.  Raises an error (SQLSTATE XX002) on corruption.
--
CREATE FUNCTION dmindex_check(index regclass, heapallindexed bool DEFAULT false,
	OUT entries bigint, OUT heap_tuples bigint, OUT ok bool)
AS 'MODULE_PATHNAME', 'dmindex_check'
LANGUAGE C STRICT VOLATILE;

--
-- dmindex_gc(): free remote trees whose index no longer exists (dropped,
-- rebuilt, rolled back, or in a dropped database); returns how many.
--
CREATE FUNCTION dmindex_gc() RETURNS bigint
AS 'MODULE_PATHNAME', 'dmindex_gc'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION dmindex_gc() FROM PUBLIC;

--
-- The node cache of this server (shared by all its backends): capacity,
-- use by level (arrays are indexed by tree level + 1: leaves first), hits
-- and misses, admissions, evictions, cooling, and the remote round trips and
-- bytes it saved.
--
CREATE FUNCTION dmindex_cache_stats(
	OUT policy text, OUT capacity_frames bigint, OUT frame_size int,
	OUT frames_used bigint, OUT frames_cooling bigint,
	OUT hits bigint, OUT misses bigint, OUT hit_ratio float8,
	OUT swizzled_hits bigint, OUT admissions bigint, OUT admissions_skipped bigint,
	OUT evictions bigint, OUT coolings bigint, OUT cooling_promotions bigint,
	OUT io_waits bigint, OUT local_writes bigint,
	OUT round_trips_avoided bigint, OUT bytes_avoided bigint,
	OUT frames_used_by_level bigint[], OUT hits_by_level bigint[],
	OUT misses_by_level bigint[], OUT invalidations bigint)
AS 'MODULE_PATHNAME', 'dmindex_cache_stats'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION dmindex_cache_stats_reset() RETURNS void
AS 'MODULE_PATHNAME', 'dmindex_cache_stats_reset'
LANGUAGE C STRICT VOLATILE;

--
-- The partition map of an index: which instance (dmindex.instance_id) owns
-- which key range.  lo/hi are the order-preserving 64-bit encodings of the
-- bounds (hi exclusive; NULL = to the end, NULLs included), lo_value and
-- hi_value the same bounds as values of the indexed type where they are one.
--
CREATE FUNCTION dmindex_partitions(index regclass,
	OUT partition int, OUT instance int, OUT lo numeric, OUT hi numeric,
	OUT lo_value text, OUT hi_value text, OUT epoch bigint, OUT local bool)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'dmindex_partitions'
LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION dmindex_cache_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dmindex_cache_stats() TO pg_monitor;
REVOKE ALL ON FUNCTION dmindex_cache_stats_reset() FROM PUBLIC;
REVOKE ALL ON FUNCTION dmindex_partitions(regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dmindex_partitions(regclass) TO pg_monitor;

-- Like amcheck's functions, these lock the table without a privilege check
-- and read every row: superusers only by default; the shape of an index is
-- monitoring data.
REVOKE ALL ON FUNCTION dmindex_check(regclass, bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION dmindex_stats(regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dmindex_stats(regclass) TO pg_monitor;

-- ==== opclasses ==========================================================
--
-- Operator classes of the dmindex access method (created above).
--
-- dmindex keeps 64-bit unsigned keys.  Support function 1 of an operator
-- class ("encode") maps a value to a key that sorts exactly like the value
-- in its btree order; it returns the key's bits as an int8 (keys at or above
-- 2^63 show as negative numbers).  The types of one operator family share
-- one key domain, so cross-type comparisons (int4 column < int8 constant)
-- are exact.  Support function 2 ("decode") is the exact inverse, where one
-- exists; it allows index-only scans.  Floats have none: -0 and +0 share a
-- key, as they are equal.
--
-- The operators are btree's own, with btree's strategy numbers, so the
-- planner can use the index for ORDER BY.
--

CREATE FUNCTION dmindex_encode_int2(int2) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_encode_int4(int4) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_encode_int8(int8) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_encode_float4(float4) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_encode_float8(float8) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_encode_date(date) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_encode_timestamp(timestamp) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_encode_timestamptz(timestamptz) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_encode_time(time) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_encode_oid(oid) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_encode_bool(bool) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_encode_money(money) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION dmindex_decode_int2(int8) RETURNS int2
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_decode_int4(int8) RETURNS int4
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_decode_int8(int8) RETURNS int8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_decode_date(int8) RETURNS date
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_decode_timestamp(int8) RETURNS timestamp
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_decode_timestamptz(int8) RETURNS timestamptz
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_decode_time(int8) RETURNS time
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_decode_oid(int8) RETURNS oid
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_decode_bool(int8) RETURNS bool
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION dmindex_decode_money(int8) RETURNS money
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- integer_ops: int2, int4, int8 (key: value + 2^63), with every cross-type
-- operator btree's integer_ops has.
CREATE OPERATOR FAMILY integer_ops USING dmindex;

CREATE OPERATOR CLASS int2_ops
DEFAULT FOR TYPE int2 USING dmindex FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (int2) dmindex_encode_int2(int2),
	FUNCTION 2 (int2) dmindex_decode_int2(int8);

CREATE OPERATOR CLASS int4_ops
DEFAULT FOR TYPE int4 USING dmindex FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (int4) dmindex_encode_int4(int4),
	FUNCTION 2 (int4) dmindex_decode_int4(int8);

CREATE OPERATOR CLASS int8_ops
DEFAULT FOR TYPE int8 USING dmindex FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (int8) dmindex_encode_int8(int8),
	FUNCTION 2 (int8) dmindex_decode_int8(int8);

ALTER OPERATOR FAMILY integer_ops USING dmindex ADD
	OPERATOR 1 < (int2, int4),
	OPERATOR 2 <= (int2, int4),
	OPERATOR 3 = (int2, int4),
	OPERATOR 4 >= (int2, int4),
	OPERATOR 5 > (int2, int4),
	OPERATOR 1 < (int2, int8),
	OPERATOR 2 <= (int2, int8),
	OPERATOR 3 = (int2, int8),
	OPERATOR 4 >= (int2, int8),
	OPERATOR 5 > (int2, int8),
	OPERATOR 1 < (int4, int2),
	OPERATOR 2 <= (int4, int2),
	OPERATOR 3 = (int4, int2),
	OPERATOR 4 >= (int4, int2),
	OPERATOR 5 > (int4, int2),
	OPERATOR 1 < (int4, int8),
	OPERATOR 2 <= (int4, int8),
	OPERATOR 3 = (int4, int8),
	OPERATOR 4 >= (int4, int8),
	OPERATOR 5 > (int4, int8),
	OPERATOR 1 < (int8, int2),
	OPERATOR 2 <= (int8, int2),
	OPERATOR 3 = (int8, int2),
	OPERATOR 4 >= (int8, int2),
	OPERATOR 5 > (int8, int2),
	OPERATOR 1 < (int8, int4),
	OPERATOR 2 <= (int8, int4),
	OPERATOR 3 = (int8, int4),
	OPERATOR 4 >= (int8, int4),
	OPERATOR 5 > (int8, int4);

-- float_ops: float4, float8 (key: the order-preserving image of the value as
-- a double; a float4 converts to double exactly, as float48lt does).
CREATE OPERATOR FAMILY float_ops USING dmindex;

CREATE OPERATOR CLASS float4_ops
DEFAULT FOR TYPE float4 USING dmindex FAMILY float_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (float4) dmindex_encode_float4(float4);

CREATE OPERATOR CLASS float8_ops
DEFAULT FOR TYPE float8 USING dmindex FAMILY float_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (float8) dmindex_encode_float8(float8);

ALTER OPERATOR FAMILY float_ops USING dmindex ADD
	OPERATOR 1 < (float4, float8),
	OPERATOR 2 <= (float4, float8),
	OPERATOR 3 = (float4, float8),
	OPERATOR 4 >= (float4, float8),
	OPERATOR 5 > (float4, float8),
	OPERATOR 1 < (float8, float4),
	OPERATOR 2 <= (float8, float4),
	OPERATOR 3 = (float8, float4),
	OPERATOR 4 >= (float8, float4),
	OPERATOR 5 > (float8, float4);

-- One type each.  date, time, timestamp, timestamptz and money are signed
-- integers inside (key: value + 2^63; infinities are the extreme values and
-- sort right); oid is unsigned (key: the value); bool is 0 or 1.  Unlike
-- btree's datetime_ops, date and the timestamps are not one family: their
-- cross-type comparisons convert values (with the time zone, for
-- timestamptz), which a fixed per-type key cannot follow.

CREATE OPERATOR CLASS date_ops
DEFAULT FOR TYPE date USING dmindex AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (date) dmindex_encode_date(date),
	FUNCTION 2 (date) dmindex_decode_date(int8);

CREATE OPERATOR CLASS timestamp_ops
DEFAULT FOR TYPE timestamp USING dmindex AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (timestamp) dmindex_encode_timestamp(timestamp),
	FUNCTION 2 (timestamp) dmindex_decode_timestamp(int8);

CREATE OPERATOR CLASS timestamptz_ops
DEFAULT FOR TYPE timestamptz USING dmindex AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (timestamptz) dmindex_encode_timestamptz(timestamptz),
	FUNCTION 2 (timestamptz) dmindex_decode_timestamptz(int8);

CREATE OPERATOR CLASS time_ops
DEFAULT FOR TYPE time USING dmindex AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (time) dmindex_encode_time(time),
	FUNCTION 2 (time) dmindex_decode_time(int8);

CREATE OPERATOR CLASS oid_ops
DEFAULT FOR TYPE oid USING dmindex AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (oid) dmindex_encode_oid(oid),
	FUNCTION 2 (oid) dmindex_decode_oid(int8);

CREATE OPERATOR CLASS bool_ops
DEFAULT FOR TYPE bool USING dmindex AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (bool) dmindex_encode_bool(bool),
	FUNCTION 2 (bool) dmindex_decode_bool(int8);

CREATE OPERATOR CLASS money_ops
DEFAULT FOR TYPE money USING dmindex AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (money) dmindex_encode_money(money),
	FUNCTION 2 (money) dmindex_decode_money(int8);

-- ==== end of opclasses ===================================================
