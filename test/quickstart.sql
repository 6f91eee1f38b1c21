-- The main job of the quickstart: a table, a dmindex index whose B+-tree
-- lives in the memnode, and a range query answered through it.
\set ON_ERROR_STOP 1
CREATE EXTENSION IF NOT EXISTS dmindex;
\echo 'memnodes this instance uses:'
SELECT address, node_id, reachable, backend, incarnation FROM dmindex_memnodes();

DROP TABLE IF EXISTS orders;
CREATE TABLE orders (id int8, amount int4, placed date);
INSERT INTO orders
  SELECT g, (g * 7919) % 100000, date '2026-01-01' + (g % 365)
  FROM generate_series(1, 200000) g;
\timing on
CREATE INDEX orders_amount_dm ON orders USING dmindex (amount);
\timing off
ANALYZE orders;
\echo 'the remote tree:'
SELECT * FROM dmindex_stats('orders_amount_dm');

\echo 'a range query through the index:'
EXPLAIN (COSTS OFF) SELECT id, amount FROM orders WHERE amount BETWEEN 5000 AND 5010 ORDER BY amount;
SELECT id, amount FROM orders WHERE amount BETWEEN 5000 AND 5010 ORDER BY amount;

\echo 'the index agrees with the table:'
SELECT * FROM dmindex_check('orders_amount_dm', true);

\echo '2000 point queries through the index, then this server''s node cache:'
SELECT dmindex_cache_stats_reset();
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS rows_found
FROM generate_series(1, 2000) g, LATERAL (SELECT id FROM orders WHERE amount = (g * 37) % 100000) o;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT policy, capacity_frames, frames_used, hits, misses, round(hit_ratio::numeric, 3) AS hit_ratio,
       round_trips_avoided
FROM dmindex_cache_stats();
\echo 'who owns which keys of the index:'
SELECT partition, instance, lo_value, hi_value, epoch, local FROM dmindex_partitions('orders_amount_dm');
