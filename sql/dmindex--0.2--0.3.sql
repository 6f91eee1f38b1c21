/*
 * dmindex--0.2--0.3.sql: schema changes from 0.2 to 0.3.
 *
 * Run by ALTER EXTENSION dmindex UPDATE on a 0.1 or 0.2 database, and by
 * CREATE EXTENSION dmindex after the scripts before it (there is no
 * separate full script, so the paths cannot drift apart).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dmindex UPDATE TO '0.3'" to load this file. \quit

--
-- dmindex_offload_stats(): offloading to the memory nodes' CPUs (DEX §6;
-- dmindex.offload) by every backend of this server since it started or
-- since dmindex_offload_stats_reset(): operations the memnodes' executors
-- did (offloads), offloads they declined and the client then did itself
-- (fallbacks), the policy's decisions at node cache misses (to offload, or
-- to read one-sided; explored: the contrary choice taken to keep the
-- estimates fresh), memnode load reports read, cached nodes dropped because
-- an executor wrote them, offloaded writes whose outcome was unknown (the
-- RPC failed; standbys then drop the whole tree), the average offload RPC
-- and one-sided round trip in microseconds, the last memnode executor busy
-- ratio seen (percent), and the number of offload RPCs.  mode is this
-- session's dmindex.offload.
--
CREATE FUNCTION dmindex_offload_stats(
	OUT mode text, OUT offloads bigint, OUT fallbacks bigint,
	OUT decided_offload bigint, OUT decided_one_sided bigint, OUT explored bigint,
	OUT load_reports bigint, OUT invalidated bigint, OUT lost_writes bigint,
	OUT avg_rpc_us float8, OUT avg_read_us float8, OUT memnode_busy_pct int,
	OUT rpcs bigint)
AS 'MODULE_PATHNAME', 'dmindex_offload_stats'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION dmindex_offload_stats_reset() RETURNS void
AS 'MODULE_PATHNAME', 'dmindex_offload_stats_reset'
LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION dmindex_offload_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dmindex_offload_stats() TO pg_monitor;
REVOKE ALL ON FUNCTION dmindex_offload_stats_reset() FROM PUBLIC;
