--
-- am_cache: the node cache of this server (dmindex_cache_stats), the
-- partition map of an index (dmindex_partitions), and answers through a
-- cache far smaller than the index.  The regression suite runs with
-- dmindex.cache_size = 128kB (about 100 frames of 1 kB), so every test's
-- indexes go through a cache that evicts; here we check that it is really
-- used and that a cached index answers like btree while rows change.
--
-- Offloading is off here (the suite also runs with dmindex.offload =
-- always): an offloaded operation runs on the memnode past the first
-- cache miss and never reads through the cache, whose counters this test
-- measures (am_offload tests offloading).
SET dmindex.offload = off;

SELECT policy, capacity_frames BETWEEN 64 AND 200 AS small_cache, frame_size
FROM dmindex_cache_stats();

-- a table whose dmindex index is ~30 times the cache
CREATE TABLE cc (id int, v int4, v2 int4 GENERATED ALWAYS AS (v) STORED)
  WITH (autovacuum_enabled = false);
INSERT INTO cc (id, v) SELECT g, (g * 7919) % 50000 FROM generate_series(1, 30000) g;
CREATE INDEX cc_v ON cc USING dmindex (v) WITH (node_size = 256);
CREATE INDEX cc_v2 ON cc (v2);
VACUUM ANALYZE cc;
SELECT (leaf_nodes + inner_nodes) > 10 * (SELECT capacity_frames FROM dmindex_cache_stats())
       AS index_much_larger_than_cache
FROM dmindex_stats('cc_v');

-- the whole key space belongs to this server (instance 0) by default
SELECT partition, instance, lo, hi, lo_value, hi_value, epoch, local
FROM dmindex_partitions('cc_v');

SELECT dmindex_cache_stats_reset();
SELECT hits, misses, evictions FROM dmindex_cache_stats();

-- point queries, twice: the second round finds the upper levels in the cache
SET enable_seqscan = off;
SET enable_bitmapscan = off;
CREATE FUNCTION cc_probe(n int) RETURNS bigint LANGUAGE sql AS $$
  SELECT sum((SELECT count(*) FROM cc WHERE v = (g * 104729) % 50000)) FROM generate_series(1, n) g
$$;
SELECT cc_probe(2000) = (SELECT sum((SELECT count(*) FROM cc WHERE v2 = (g * 104729) % 50000))
                         FROM generate_series(1, 2000) g) AS probes_match_btree;
SELECT hits > 0 AS hits, misses > 0 AS misses, evictions > 0 AS evicted,
       coolings > 0 AS cooled, hit_ratio > 0.3 AS upper_levels_cached,
       hits_by_level[2] > 0 AS inner_hits, frames_used <= capacity_frames AS within_capacity,
       round_trips_avoided >= hits AS avoided_counted, bytes_avoided >= 256 * hits AS bytes_counted,
       array_length(frames_used_by_level, 1) >= 2 AS levels_reported
FROM dmindex_cache_stats();

-- changes go through the cache (written through to the memnode)
DELETE FROM cc WHERE id % 3 = 0;
UPDATE cc SET v = v + 1 WHERE id % 5 = 0;
INSERT INTO cc (id, v) SELECT g, (g * 31) % 50000 FROM generate_series(30001, 36000) g;
SELECT local_writes > 0 AS local_writes FROM dmindex_cache_stats();

-- answers equal the btree's, for ranges, both orders, and points
SELECT (SELECT string_agg(id::text, ',' ORDER BY id) FROM cc WHERE v BETWEEN 1000 AND 1400)
     = (SELECT string_agg(id::text, ',' ORDER BY id) FROM cc WHERE v2 BETWEEN 1000 AND 1400) AS range_equal;
SELECT (SELECT string_agg(v::text, ',') FROM (SELECT v FROM cc WHERE v > 40000 ORDER BY v LIMIT 300) s)
     = (SELECT string_agg(v2::text, ',') FROM (SELECT v2 FROM cc WHERE v2 > 40000 ORDER BY v2 LIMIT 300) s)
       AS ascending_equal;
SELECT (SELECT string_agg(v::text, ',') FROM (SELECT v FROM cc WHERE v < 9000 ORDER BY v DESC LIMIT 300) s)
     = (SELECT string_agg(v2::text, ',') FROM (SELECT v2 FROM cc WHERE v2 < 9000 ORDER BY v2 DESC LIMIT 300) s)
       AS descending_equal;
SELECT cc_probe(1000) = (SELECT sum((SELECT count(*) FROM cc WHERE v2 = (g * 104729) % 50000))
                         FROM generate_series(1, 1000) g) AS probes_match_btree;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- the tree's invariants, every row's entry, and every cached node equal to
-- its copy on the memnode
VACUUM cc;
SELECT entries = heap_tuples AS one_entry_per_row, ok FROM dmindex_check('cc_v', true);

-- an index whose nodes are larger than a frame is not cached, and works
CREATE TABLE cbig (v int8);
INSERT INTO cbig SELECT g FROM generate_series(1, 5000) g;
CREATE INDEX cbig_v ON cbig USING dmindex (v) WITH (node_size = 4096);
SELECT dmindex_cache_stats_reset();
SET enable_seqscan = off;
SELECT count(*) FROM cbig WHERE v BETWEEN 100 AND 199;
RESET enable_seqscan;
SELECT hits + misses AS accesses FROM dmindex_cache_stats();
SELECT ok FROM dmindex_check('cbig_v', true);

-- dropping an index frees its frames at once (they could never be hit again)
CREATE TEMP TABLE frames_before AS SELECT frames_used FROM dmindex_cache_stats();
DROP INDEX cc_v;
SELECT s.frames_used < b.frames_used AS frames_freed_by_drop
FROM dmindex_cache_stats() s, frames_before b;
CREATE INDEX cc_v ON cc USING dmindex (v) WITH (node_size = 256);

-- who may call what
SET ROLE pg_monitor;
SELECT count(*) >= 0 AS monitor_reads_stats FROM dmindex_cache_stats();
SELECT count(*) = 1 AS monitor_reads_partitions FROM dmindex_partitions('cc_v');
SELECT dmindex_cache_stats_reset();
RESET ROLE;

-- errors
SELECT * FROM dmindex_partitions('cc');
SELECT * FROM dmindex_partitions('cc_v2');

DROP FUNCTION cc_probe(int);
DROP TABLE cc, cbig;
