--
-- am_early_flush: paths where the insert buffer is written out before
-- commit (dmindex.insert_buffer reached, or a parallel plan) while a
-- savepoint may still bring an index's old tree back; ON CONFLICT entries
-- checked against the heap when index expressions run queries; and many
-- index-only scans open at once in one session.
--
-- dm_agree(table, cond) (test_setup) compares the rows found through the
-- table's dmindex index (index and bitmap scans) with a sequential scan.
--

CREATE TABLE ef_t (k int4);
CREATE INDEX ef_t_k ON ef_t USING dmindex (k);
CREATE TABLE ef_other (k int4);
CREATE INDEX ef_other_k ON ef_other USING dmindex (k);

-- TRUNCATE in a savepoint, then enough inserts for an early flush, then
-- ROLLBACK TO: the rows inserted before the savepoint must be indexed.
SET dmindex.insert_buffer = 10;
BEGIN;
INSERT INTO ef_t SELECT g FROM generate_series(1, 5) g;
SAVEPOINT s;
TRUNCATE ef_t;
INSERT INTO ef_t SELECT g FROM generate_series(100, 120) g;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM dm_agree('ef_t', 'k > 0');
SELECT entries, heap_tuples, ok FROM dmindex_check('ef_t_k', true);

-- REINDEX in a savepoint, an early flush by inserts into another table
BEGIN;
INSERT INTO ef_t SELECT g FROM generate_series(6, 10) g;
SAVEPOINT s;
REINDEX INDEX ef_t_k;
INSERT INTO ef_other SELECT g FROM generate_series(1, 20) g;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM dm_agree('ef_t', 'k > 0');
SELECT entries, heap_tuples, ok FROM dmindex_check('ef_t_k', true);

-- DROP INDEX in a savepoint, an early flush, ROLLBACK TO
BEGIN;
INSERT INTO ef_t SELECT g FROM generate_series(11, 15) g;
SAVEPOINT s;
DROP INDEX ef_t_k;
INSERT INTO ef_other SELECT g FROM generate_series(21, 40) g;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM dm_agree('ef_t', 'k > 0');
SELECT entries, heap_tuples, ok FROM dmindex_check('ef_t_k', true);

-- the same in a PL/pgSQL EXCEPTION block, with the rewrite released first
-- (a nested savepoint that commits into the one that rolls back)
DO $$
BEGIN
	INSERT INTO ef_t SELECT g FROM generate_series(16, 20) g;
	BEGIN
		BEGIN
			TRUNCATE ef_t;
		END;
		INSERT INTO ef_other SELECT g FROM generate_series(41, 60) g;
		RAISE EXCEPTION 'undo';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
END $$;
SELECT * FROM dm_agree('ef_t', 'k > 0');
SELECT entries, heap_tuples, ok FROM dmindex_check('ef_t_k', true);

-- a rewrite that stays: the rebuilt index has every row, nothing twice
BEGIN;
INSERT INTO ef_t SELECT g FROM generate_series(21, 25) g;
SAVEPOINT s;
REINDEX INDEX ef_t_k;
INSERT INTO ef_other SELECT g FROM generate_series(61, 80) g;
RELEASE SAVEPOINT s;
INSERT INTO ef_t SELECT g FROM generate_series(26, 30) g;
COMMIT;
SELECT * FROM dm_agree('ef_t', 'k > 0');
SELECT entries, heap_tuples, ok FROM dmindex_check('ef_t_k', true);
RESET dmindex.insert_buffer;

-- ON CONFLICT with an index expression that runs a query (not inlined):
-- the heap check evaluates it outside the statement too
CREATE FUNCTION ef_plus_one(int) RETURNS int8 IMMUTABLE LANGUAGE sql
	SET search_path = public AS 'SELECT $1::int8 + 1';
CREATE TABLE ef_u (id int PRIMARY KEY, v int);
CREATE INDEX ef_u_f ON ef_u USING dmindex (ef_plus_one(v));
INSERT INTO ef_u VALUES (1, 10), (2, 20);
INSERT INTO ef_u VALUES (3, 30) ON CONFLICT DO NOTHING;
INSERT INTO ef_u VALUES (1, 11), (4, 40) ON CONFLICT DO NOTHING;
INSERT INTO ef_u VALUES (2, 21) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
BEGIN;
INSERT INTO ef_u VALUES (5, 50) ON CONFLICT DO NOTHING;
SET LOCAL enable_seqscan = off;
SELECT id, v FROM ef_u WHERE ef_plus_one(v) BETWEEN 0 AND 100 ORDER BY 1;
COMMIT;
SELECT * FROM dm_agree('ef_u', 'ef_plus_one(v) BETWEEN 0 AND 100');
SELECT entries, heap_tuples, ok FROM dmindex_check('ef_u_f', true);

-- more index-only scans open at once than the server has pins for: none
-- fails (the extra ones share one pin per backend)
INSERT INTO ef_t SELECT g FROM generate_series(1000, 1100) g;
VACUUM (ANALYZE) ef_t;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT k FROM ef_t WHERE k > 1000;
BEGIN;
DO $$
DECLARE
	c refcursor;
	v int;
	total bigint := 0;
BEGIN
	FOR i IN 1 .. 1500 LOOP
		c := 'ef_c' || i;
		OPEN c FOR SELECT k FROM ef_t WHERE k > 1000 + i % 50;
		FETCH c INTO v;
		total := total + v;
	END LOOP;
	RAISE NOTICE 'opened 1500 index-only scans, sum of first keys %', total;
END $$;
FETCH 2 FROM ef_c1500;
COMMIT;
RESET enable_seqscan;
RESET enable_bitmapscan;

DROP TABLE ef_t, ef_other, ef_u;
DROP FUNCTION ef_plus_one(int);
