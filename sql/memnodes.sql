--
-- memnodes: the dmindex.* settings and the functions that show and probe
-- memnodes.  The test harness starts a memnode and puts its address into
-- dmindex.memnodes in the server configuration; nothing here depends on
-- the port (or on how many memnodes are configured).
--

-- The configured memnodes are all reachable and look sane.
SELECT count(*) > 0 AS some_memnodes,
       bool_and(reachable) AS all_reachable,
       bool_and(node_id BETWEEN 0 AND 32767) AS node_ids,
       bool_and(backend IN ('tcp', 'shm', 'ucx')) AS backends,
       bool_and(incarnation ~ '^[0-9a-f]{16}$') AS incarnations,
       bool_and(region_size > 0) AS region_sizes,
       bool_and(chunks_total > 0) AS chunks_total,
       bool_and(chunks_used BETWEEN 0 AND chunks_total) AS chunks_used,
       bool_and(trees >= 0) AS trees,
       bool_and(error IS NULL) AS no_errors
FROM dmindex_memnodes();
-- (shows why, should one not be reachable)
SELECT address, error FROM dmindex_memnodes() WHERE NOT reachable;

-- A second call reuses this backend's connections: same memnodes, same
-- incarnations.
CREATE TEMP TABLE first_call AS SELECT * FROM dmindex_memnodes();
SELECT count(*) = (SELECT count(*) FROM first_call) AS same_count,
       bool_and(f.node_id = s.node_id AND f.incarnation = s.incarnation) AS same_nodes
FROM first_call f JOIN dmindex_memnodes() s USING (address);

-- Changing the transport rebuilds the client.
SET dmindex.transport = tcp;
SELECT bool_and(reachable AND backend = 'tcp') AS all_tcp FROM dmindex_memnodes();
RESET dmindex.transport;
SET dmindex.connect_timeout = '2s';
SHOW dmindex.connect_timeout;
SELECT bool_and(reachable) AS still_reachable FROM dmindex_memnodes();
RESET dmindex.connect_timeout;

-- An explicit list uses a throwaway client and sees the same memnodes.
SELECT count(*) = (SELECT count(*) FROM first_call) AS same_count,
       bool_and(s.reachable) AS all_reachable,
       bool_and(f.node_id = s.node_id AND f.incarnation = s.incarnation) AS same_nodes
FROM first_call f
     JOIN dmindex_memnodes(current_setting('dmindex.memnodes')) s USING (address);

-- An unreachable memnode is a row with the reason, not an error.
SELECT address, node_id, reachable, backend, incarnation, region_size,
       chunks_total, chunks_used, trees, error <> '' AS has_error
FROM dmindex_memnodes('127.0.0.1:1');
SELECT count(*) FILTER (WHERE reachable) = (SELECT count(*) FROM first_call) AS good,
       count(*) FILTER (WHERE NOT reachable) AS bad
FROM dmindex_memnodes(current_setting('dmindex.memnodes') || ', 127.0.0.1:1');
SELECT count(*) AS no_memnodes FROM dmindex_memnodes('  ');

-- dmindex_memnode_ping()
SELECT dmindex_memnode_ping(split_part(current_setting('dmindex.memnodes'), ',', 1)) >= 0
       AS ping_ok;
\set VERBOSITY terse
SELECT dmindex_memnode_ping('127.0.0.1:1');
\set VERBOSITY default
DO $$
BEGIN
	PERFORM dmindex_memnode_ping('127.0.0.1:1');
EXCEPTION WHEN connection_failure THEN
	RAISE NOTICE 'connection_failure: %', SQLERRM;
END
$$;
SELECT dmindex_memnode_ping('127.0.0.1:1, 127.0.0.1:2');

-- Malformed memnode lists.
SELECT * FROM dmindex_memnodes('nohost');
SELECT * FROM dmindex_memnodes('host:99999');
SELECT * FROM dmindex_memnodes('host:');
SELECT * FROM dmindex_memnodes(':7400');
SELECT * FROM dmindex_memnodes('host:74x0');
SELECT * FROM dmindex_memnodes('h_st ok:7400');
SELECT * FROM dmindex_memnodes('::1:7400');
SELECT * FROM dmindex_memnodes('[::1]7400');
SELECT * FROM dmindex_memnodes('a:1,,b:2');
SELECT * FROM dmindex_memnodes('a:1,');
SELECT * FROM dmindex_memnodes('Host:1, host:1');

-- dmindex.memnodes is the same for all sessions of a server: it cannot be
-- SET, and the server configuration rejects bad values (ALTER SYSTEM runs
-- the same check as a reload, without writing anything on failure).
SET dmindex.memnodes = '127.0.0.1:1';
ALTER SYSTEM SET dmindex.memnodes = 'nohost';
ALTER SYSTEM SET dmindex.memnodes = 'host:99999';
ALTER SYSTEM SET dmindex.memnodes = 'host:';
ALTER SYSTEM SET dmindex.memnodes = '127.0.0.1:7400', '127.0.0.1:7400';

-- The other settings.
SET dmindex.transport = rdma;
SET dmindex.op_timeout = 0;
SET dmindex.connect_timeout = '2h';
SET dmindex.no_such_setting = 1;
SELECT name,
       CASE WHEN name IN ('dmindex.memnodes', 'dmindex.cache_size', 'dmindex.gc_naptime', 'dmindex.transport', 'dmindex.offload',
                    'dmindex.default_leaf_format') THEN '(set by the harness)' ELSE setting END
       AS setting,
       unit, context, vartype, boot_val, min_val, max_val, enumvals
FROM pg_settings WHERE name LIKE 'dmindex.%' ORDER BY name;

-- Who may call what.
SELECT p.oid::regprocedure AS function,
       has_function_privilege('pg_monitor', p.oid, 'EXECUTE') AS pg_monitor,
       has_function_privilege('pg_read_all_settings', p.oid, 'EXECUTE') AS other_roles
FROM pg_proc p
WHERE p.proname LIKE 'dmindex%'
ORDER BY 1::text;
