--
-- am_basic: the dmindex access method on small tables whose answers can be
-- read off: building an index, NULLs, the three kinds of scans (EXPLAIN
-- shows which one runs), ORDER BY in both directions with LIMIT/OFFSET,
-- BETWEEN, NOT BETWEEN, = ANY, IS [NOT] NULL, comparisons with NULL,
-- scrollable cursors, expression, partial and partitioned indexes, and index
-- options.  (am_btree_compare checks the same query families against btree
-- on random data.)
--
-- The plans are made deterministic with the enable_* settings.
--

-- ab(id, v): v = id % 7 for id 1..20 (0..6, 2-3 rows each), and two NULLs.
CREATE TABLE ab (id int, v int8, w int4) WITH (autovacuum_enabled = false);
INSERT INTO ab SELECT g, g % 7, g FROM generate_series(1, 20) g;
INSERT INTO ab VALUES (21, NULL, 21), (22, NULL, 22);
CREATE INDEX ab_v ON ab USING dmindex (v) WITH (node_size = 256);
VACUUM ANALYZE ab;

-- The index and its remote tree.
SELECT c.relname, a.amname, pg_get_indexdef(c.oid) AS definition
FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'ab_v';
SELECT height >= 1 AS has_height, leaf_nodes >= 1 AS has_leaves, entries,
       remote_bytes > 0 AS has_bytes, node_size, memnodes
FROM dmindex_stats('ab_v');
SELECT * FROM dmindex_check('ab_v');
SELECT * FROM dmindex_check('ab_v', true);

SET enable_seqscan = off;

-- ---- bitmap scans ----------------------------------------------------------
SET enable_indexscan = off;
SET enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT id, v FROM ab WHERE v = 3 ORDER BY id;
SELECT id, v FROM ab WHERE v = 3 ORDER BY id;
SELECT id, v FROM ab WHERE v < 2 ORDER BY id;
SELECT id, v FROM ab WHERE v <= 1 ORDER BY id;
SELECT id, v FROM ab WHERE v > 5 ORDER BY id;
SELECT id, v FROM ab WHERE v >= 6 ORDER BY id;
SELECT id, v FROM ab WHERE v BETWEEN 2 AND 3 ORDER BY id;
SELECT id, v FROM ab WHERE v BETWEEN 3 AND 2 ORDER BY id;
SELECT id, v FROM ab WHERE v BETWEEN SYMMETRIC 3 AND 2 ORDER BY id;
EXPLAIN (COSTS OFF) SELECT id, v FROM ab WHERE v NOT BETWEEN 1 AND 5 ORDER BY id;
SELECT id, v FROM ab WHERE v NOT BETWEEN 1 AND 5 ORDER BY id;
EXPLAIN (COSTS OFF) SELECT id, v FROM ab WHERE v = ANY ('{1,4,NULL,99}') ORDER BY id;
SELECT id, v FROM ab WHERE v = ANY ('{1,4,NULL,99}') ORDER BY id;
SELECT id, v FROM ab WHERE v IN (0, 6) ORDER BY id;
SELECT id, v FROM ab WHERE v = ANY ('{}') ORDER BY id;
SELECT id, v FROM ab WHERE v < ANY ('{1,2}') ORDER BY id;
EXPLAIN (COSTS OFF) SELECT id, v FROM ab WHERE v IS NULL ORDER BY id;
SELECT id, v FROM ab WHERE v IS NULL ORDER BY id;
SELECT count(*) FROM ab WHERE v IS NOT NULL;
EXPLAIN (COSTS OFF) SELECT id, v FROM ab WHERE v IS NULL OR v = 0 ORDER BY id;
SELECT id, v FROM ab WHERE v IS NULL OR v = 0 ORDER BY id;
SELECT id, v FROM ab WHERE v > 1 AND v < 4 AND v <> 2 ORDER BY id;
SELECT id, v FROM ab WHERE v > 3 AND v < 3 ORDER BY id;
SELECT id, v FROM ab WHERE v IS NULL AND v = 1 ORDER BY id;
-- cross-type comparisons (int8 column, int2 and int4 constants)
SELECT id, v FROM ab WHERE v = 5::int2 ORDER BY id;
SELECT id, v FROM ab WHERE v > 4::int4 ORDER BY id;
-- A comparison with NULL matches nothing: folded by the planner, or
-- (with a run-time NULL) answered by the index without reading anything.
EXPLAIN (COSTS OFF) SELECT id, v FROM ab WHERE v > NULL;
SELECT id, v FROM ab WHERE v > NULL;
SELECT id, v FROM ab WHERE v = NULL;
EXPLAIN (COSTS OFF) SELECT id, v FROM ab WHERE v > (SELECT NULL::int8);
SELECT id, v FROM ab WHERE v > (SELECT NULL::int8);
SELECT id, v FROM ab WHERE v = ANY ('{NULL}');
-- two dmindex indexes combined
CREATE INDEX ab_w ON ab USING dmindex (w);
SELECT id, v, w FROM ab WHERE v = 2 AND w > 10;
EXPLAIN (COSTS OFF) SELECT id, v, w FROM ab WHERE v = 2 OR w = 1 ORDER BY id;
SELECT id, v, w FROM ab WHERE v = 2 OR w = 1 ORDER BY id;
DROP INDEX ab_w;

-- ---- plain index scans: ordered, both directions ---------------------------
SET enable_indexscan = on;
SET enable_bitmapscan = off;
SET enable_indexonlyscan = off;
EXPLAIN (COSTS OFF) SELECT id, v FROM ab WHERE v = 3;
SELECT id, v FROM ab WHERE v = 3;
EXPLAIN (COSTS OFF) SELECT v, id FROM ab ORDER BY v;
SELECT v FROM ab ORDER BY v;
-- NULLs sort last ascending, first descending (a backward scan)
EXPLAIN (COSTS OFF) SELECT v, id FROM ab ORDER BY v DESC;
SELECT v FROM ab ORDER BY v DESC;
EXPLAIN (COSTS OFF) SELECT v, id FROM ab ORDER BY v LIMIT 4;
SELECT v FROM ab ORDER BY v LIMIT 4;
SELECT v FROM ab ORDER BY v DESC LIMIT 4;
SELECT v FROM ab ORDER BY v LIMIT 4 OFFSET 17;
SELECT v FROM ab ORDER BY v DESC LIMIT 3 OFFSET 2;
SELECT v FROM ab ORDER BY v LIMIT 5 OFFSET 30;
SELECT v FROM ab WHERE v > 4 ORDER BY v;
SELECT v FROM ab WHERE v > 4 ORDER BY v DESC;
SELECT v FROM ab WHERE v >= 2 AND v < 4 ORDER BY v DESC;
SELECT v FROM ab WHERE v IS NOT NULL ORDER BY v DESC LIMIT 3;
SELECT v FROM ab WHERE v IS NULL ORDER BY v;
SELECT v FROM ab WHERE v <= 1 ORDER BY v DESC;
-- NULLs on the other side than the index keeps them: a sort
EXPLAIN (COSTS OFF) SELECT v, id FROM ab ORDER BY v DESC NULLS LAST LIMIT 3;
SELECT v FROM ab ORDER BY v DESC NULLS LAST LIMIT 3;
SELECT v FROM ab ORDER BY v NULLS FIRST LIMIT 3;
-- min/max use the index
EXPLAIN (COSTS OFF) SELECT min(v), max(v) FROM ab;
SELECT min(v), max(v) FROM ab;
-- a generic plan with a parameter, and a NULL parameter
PREPARE ab_q(int8) AS SELECT v FROM ab WHERE v >= $1 ORDER BY v;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE ab_q(5);
EXECUTE ab_q(5);
EXECUTE ab_q(NULL);
RESET plan_cache_mode;
DEALLOCATE ab_q;

-- ---- index-only scans --------------------------------------------------------
SET enable_indexonlyscan = on;
EXPLAIN (COSTS OFF) SELECT v FROM ab WHERE v BETWEEN 1 AND 2 ORDER BY v;
SELECT v FROM ab WHERE v BETWEEN 1 AND 2 ORDER BY v;
EXPLAIN (COSTS OFF) SELECT v FROM ab ORDER BY v DESC LIMIT 5;
SELECT v FROM ab ORDER BY v DESC LIMIT 5;
SELECT v FROM ab WHERE v IS NULL;
SELECT count(*) FROM ab WHERE v IS NOT NULL;
SELECT count(*) FROM ab WHERE v < 100;

-- ---- joins ----------------------------------------------------------------
CREATE TABLE ab2 (k int8, label text) WITH (autovacuum_enabled = false);
INSERT INTO ab2 VALUES (0, 'zero'), (3, 'three'), (3, 'drei'), (6, 'six'), (9, 'nine'), (NULL, 'null');
CREATE INDEX ab2_k ON ab2 USING dmindex (k);
VACUUM ANALYZE ab2;
-- a merge join reads both indexes in order (which side is outer is up to
-- the planner)
CREATE FUNCTION ab_plan(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || q; END $$;
SET enable_hashjoin = off;
SET enable_nestloop = off;
SET enable_sort = off;
SELECT bool_or(p ~ 'Merge Join') AS merge_join,
       bool_or(p ~ 'Index Scan using ab_v on ab') AS ab_v_scan,
       bool_or(p ~ 'Index Scan using ab2_k on ab2') AS ab2_k_scan,
       bool_and(p !~ 'Sort') AS no_sort
FROM ab_plan('SELECT ab.id, ab2.label FROM ab JOIN ab2 ON ab.v = ab2.k ORDER BY ab.v') p;
SELECT ab.v, ab2.label, count(*) FROM ab JOIN ab2 ON ab.v = ab2.k GROUP BY 1, 2 ORDER BY 1, 2;
RESET enable_sort;
RESET enable_hashjoin;
RESET enable_nestloop;
-- a parameterized inner scan, rescanned for each outer row
SET enable_memoize = off;
EXPLAIN (COSTS OFF)
SELECT ab2.label, s.v FROM ab2, LATERAL (SELECT v FROM ab WHERE ab.v <= ab2.k ORDER BY v DESC LIMIT 2) s;
SELECT ab2.label, s.v FROM ab2, LATERAL (SELECT v FROM ab WHERE ab.v <= ab2.k ORDER BY v DESC LIMIT 2) s;
SELECT ab2.label, s.v FROM ab2, LATERAL (SELECT v FROM ab WHERE ab.v >= ab2.k ORDER BY v LIMIT 2) s;
RESET enable_memoize;

-- ---- scrollable cursors: direction changes, and past either end -------------
-- Each FETCH must return what it would with a btree index (the same rows as
-- with no index at all).
CREATE TABLE ab_cur (v int4, tag text) WITH (autovacuum_enabled = false);
INSERT INTO ab_cur SELECT g * 10, 'r' || g FROM generate_series(1, 8) g;
INSERT INTO ab_cur VALUES (NULL, 'null');
CREATE INDEX ab_cur_v ON ab_cur USING dmindex (v);
VACUUM ANALYZE ab_cur;
SET enable_indexonlyscan = off;
BEGIN;
EXPLAIN (COSTS OFF) DECLARE c SCROLL CURSOR FOR SELECT v, tag FROM ab_cur WHERE v > 10 ORDER BY v;
DECLARE c SCROLL CURSOR FOR SELECT v, tag FROM ab_cur WHERE v > 10 ORDER BY v;
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
FETCH 4 FROM c;
FETCH PRIOR FROM c;
FETCH RELATIVE 2 FROM c;
FETCH ALL FROM c;
FETCH BACKWARD 2 FROM c;
FETCH NEXT FROM c;
FETCH NEXT FROM c;
FETCH PRIOR FROM c;
FETCH BACKWARD ALL FROM c;
FETCH NEXT FROM c;
FETCH LAST FROM c;
FETCH FIRST FROM c;
FETCH ABSOLUTE 5 FROM c;
FETCH ABSOLUTE -2 FROM c;
FETCH FORWARD 10 FROM c;
FETCH PRIOR FROM c;
MOVE BACKWARD ALL IN c;
FETCH NEXT FROM c;
CLOSE c;
-- all rows, NULL included, backward
EXPLAIN (COSTS OFF) DECLARE c SCROLL CURSOR FOR SELECT v, tag FROM ab_cur ORDER BY v DESC;
DECLARE c SCROLL CURSOR FOR SELECT v, tag FROM ab_cur ORDER BY v DESC;
FETCH 2 FROM c;
FETCH PRIOR FROM c;
FETCH PRIOR FROM c;
FETCH NEXT FROM c;
FETCH ALL FROM c;
FETCH PRIOR FROM c;
FETCH BACKWARD ALL FROM c;
FETCH NEXT FROM c;
CLOSE c;
-- the same with an index-only scan
SET LOCAL enable_indexonlyscan = on;
EXPLAIN (COSTS OFF) DECLARE c SCROLL CURSOR FOR SELECT v FROM ab_cur WHERE v < 70 ORDER BY v DESC;
DECLARE c SCROLL CURSOR FOR SELECT v FROM ab_cur WHERE v < 70 ORDER BY v DESC;
FETCH 4 FROM c;
FETCH BACKWARD 3 FROM c;
FETCH ALL FROM c;
FETCH PRIOR FROM c;
FETCH BACKWARD ALL FROM c;
FETCH NEXT FROM c;
FETCH LAST FROM c;
FETCH PRIOR FROM c;
COMMIT;
-- a filter on another column: the scan returns entries the cursor skips
SET enable_indexonlyscan = off;
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT v, tag FROM ab_cur WHERE tag <> 'r8' ORDER BY v;
FETCH ALL FROM c;
FETCH BACKWARD 2 FROM c;
FETCH BACKWARD ALL FROM c;
FETCH 2 FROM c;
COMMIT;

-- ---- expression, partial and partitioned indexes ------------------------------
DROP INDEX ab_v;
CREATE INDEX ab_expr ON ab USING dmindex ((w * 10 + v));
EXPLAIN (COSTS OFF) SELECT id FROM ab WHERE w * 10 + v BETWEEN 100 AND 130 ORDER BY w * 10 + v;
SELECT id FROM ab WHERE w * 10 + v BETWEEN 100 AND 130 ORDER BY w * 10 + v;
SELECT * FROM dmindex_check('ab_expr', true);
DROP INDEX ab_expr;
CREATE INDEX ab_part ON ab USING dmindex (w) WHERE v = 1;
EXPLAIN (COSTS OFF) SELECT id, w FROM ab WHERE v = 1 AND w > 5 ORDER BY w;
SELECT id, w FROM ab WHERE v = 1 AND w > 5 ORDER BY w;
SELECT * FROM dmindex_check('ab_part', true);
INSERT INTO ab VALUES (23, 1, 23), (24, 2, 24);
SELECT id, w FROM ab WHERE v = 1 AND w > 5 ORDER BY w;
SELECT * FROM dmindex_check('ab_part', true);
DROP INDEX ab_part;

CREATE TABLE ab_parted (id int, v int4) PARTITION BY RANGE (id);
CREATE TABLE ab_parted1 PARTITION OF ab_parted FOR VALUES FROM (0) TO (100);
CREATE TABLE ab_parted2 PARTITION OF ab_parted FOR VALUES FROM (100) TO (200);
INSERT INTO ab_parted SELECT g, g % 10 FROM generate_series(0, 199) g;
CREATE INDEX ab_parted_v ON ab_parted USING dmindex (v);
CREATE TABLE ab_parted3 PARTITION OF ab_parted FOR VALUES FROM (200) TO (300);
INSERT INTO ab_parted VALUES (250, 3), (251, 11);
EXPLAIN (COSTS OFF) SELECT count(*) FROM ab_parted WHERE v = 3;
SELECT count(*) FROM ab_parted WHERE v = 3;
SELECT id FROM ab_parted WHERE v > 9;
SELECT c.relname, (dmindex_check(c.oid, true)).*
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'ab_parted_v'::regclass ORDER BY 1;

-- ---- index options: DESC and NULLS FIRST ------------------------------------
-- dmindex keeps its entries ascending with NULLs last.  An index declared
-- otherwise must either be refused or be scanned so that the answers are
-- right; the queries below must give the right rows either way.
CREATE TABLE ab_desc (v int4);
INSERT INTO ab_desc SELECT g FROM generate_series(1, 10) g;
INSERT INTO ab_desc VALUES (NULL);
DO $$
BEGIN
	CREATE INDEX ab_desc_v ON ab_desc USING dmindex (v DESC);
EXCEPTION WHEN feature_not_supported THEN
	NULL;
END
$$;
SELECT v FROM ab_desc ORDER BY v DESC LIMIT 3;
SELECT v FROM ab_desc ORDER BY v LIMIT 3;
SELECT v FROM ab_desc WHERE v > 5 ORDER BY v DESC LIMIT 3;
SELECT v FROM ab_desc WHERE v < 5 ORDER BY v LIMIT 3;
SET client_min_messages = warning;
DROP INDEX IF EXISTS ab_desc_v;
RESET client_min_messages;
DO $$
BEGIN
	CREATE INDEX ab_desc_v ON ab_desc USING dmindex (v NULLS FIRST);
EXCEPTION WHEN feature_not_supported THEN
	NULL;
END
$$;
SELECT v FROM ab_desc ORDER BY v NULLS FIRST LIMIT 3;
SELECT v FROM ab_desc ORDER BY v LIMIT 3;
SELECT v FROM ab_desc ORDER BY v DESC NULLS LAST LIMIT 3;
SET client_min_messages = warning;
DROP INDEX IF EXISTS ab_desc_v;
RESET client_min_messages;
DO $$
BEGIN
	CREATE INDEX ab_desc_v ON ab_desc USING dmindex (v DESC NULLS LAST);
EXCEPTION WHEN feature_not_supported THEN
	NULL;
END
$$;
SELECT v FROM ab_desc ORDER BY v DESC NULLS LAST LIMIT 3;
SELECT v FROM ab_desc ORDER BY v NULLS FIRST LIMIT 3;
SET client_min_messages = warning;
DROP INDEX IF EXISTS ab_desc_v;
RESET client_min_messages;

RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_indexonlyscan;
RESET enable_bitmapscan;
DROP TABLE ab, ab2, ab_cur, ab_parted, ab_desc;
DROP FUNCTION ab_plan(text);
