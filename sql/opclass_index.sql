--
-- opclass_index: a dmindex index on every operator class's type, compared
-- with a btree over the same rows.  For each type there is a pair of
-- tables with the same contents (random values with duplicates, the type's
-- extreme and special values, NULLs): opx_dm_<type> has only a dmindex
-- index and opx_bt_<type> only a btree.
--
-- opx_check(type, constants) asks both tables the same questions: each
-- comparison operator against each constant (constants may be of another
-- type of the family, or a subquery, which makes a run-time key; a NULL one
-- matches nothing), BETWEEN, contradictory and redundant ranges, IS [NOT]
-- NULL, and ORDER BY ASC/DESC with and without LIMIT.  It runs them once
-- with plain and index-only scans and once with bitmap scans, and counts
-- the rows only one side returned (for ORDER BY: results that differ in
-- order), and lists the conditions for which the plan on the dmindex
-- table does not use the dmindex.
--
-- The second part looks at the planner's choices with sequential scans
-- allowed: dmindex should get the plans a btree gets, and lose to a btree
-- on the same column.
--

CREATE FUNCTION opx_check(tag text, consts text[],
	OUT queries int, OUT dm_rows bigint, OUT mismatches int, OUT without_dmindex text[])
LANGUAGE plpgsql AS $$
DECLARE
	dm text := 'opx_dm_' || tag;
	bt text := 'opx_bt_' || tag;
	conds text[] := ARRAY['v IS NULL', 'v IS NOT NULL', 'v IS NULL AND v IS NOT NULL'];
	orders text[] := ARRAY['ORDER BY v', 'ORDER BY v DESC',
						   'ORDER BY v LIMIT 17', 'ORDER BY v DESC LIMIT 17',
						   'WHERE v IS NOT NULL ORDER BY v DESC LIMIT 3',
						   'WHERE v IS NULL ORDER BY v LIMIT 3'];
	c text;
	op text;
	cond text;
	sel text;
	mode text;
	q text;
	n bigint;
	differ bool;
	i int;
BEGIN
	FOREACH c IN ARRAY consts LOOP
		FOREACH op IN ARRAY ARRAY['<', '<=', '=', '>=', '>'] LOOP
			conds := conds || format('v %s %s', op, c);
		END LOOP;
		conds := conds || format('v >= %s AND v <= %s', c, c)
			|| format('v > %s AND v >= %s AND v IS NOT NULL', c, c)
			|| format('v = %s AND v IS NULL', c);
		orders := orders || format('WHERE v > %s ORDER BY v LIMIT 5', c)
			|| format('WHERE v <= %s ORDER BY v DESC LIMIT 5', c);
	END LOOP;
	FOR i IN 1 .. array_length(consts, 1) - 1 LOOP
		-- consecutive pairs in both orders: ranges and empty ranges
		conds := conds || format('v BETWEEN %s AND %s', consts[i], consts[i + 1])
			|| format('v BETWEEN %s AND %s', consts[i + 1], consts[i])
			|| format('v > %s AND v < %s', consts[i], consts[i + 1]);
	END LOOP;

	queries := 0;
	dm_rows := 0;
	mismatches := 0;
	without_dmindex := '{}';
	FOREACH mode IN ARRAY ARRAY['index', 'bitmap'] LOOP
		PERFORM set_config('enable_seqscan', 'off', true);
		PERFORM set_config('enable_indexscan', (mode = 'index')::text, true);
		PERFORM set_config('enable_indexonlyscan', (mode = 'index')::text, true);
		PERFORM set_config('enable_bitmapscan', (mode = 'bitmap')::text, true);

		-- sets of rows: with the heap tuple's id, and (for plain scans) the
		-- value alone, which allows index-only scans
		FOREACH cond IN ARRAY conds LOOP
			FOREACH sel IN ARRAY CASE mode WHEN 'index' THEN ARRAY['id, v', 'v']
									  ELSE ARRAY['id, v'] END LOOP
				q := 'SELECT ' || sel || ' FROM %I WHERE ' || cond;
				EXECUTE format('SELECT count(*) FROM (' || q || ') s', dm) INTO n;
				dm_rows := dm_rows + n;
				EXECUTE format('SELECT count(*) FROM ((' || q || ') EXCEPT ALL (' || q || ')) s',
							   dm, bt) INTO n;
				mismatches := mismatches + n;
				EXECUTE format('SELECT count(*) FROM ((' || q || ') EXCEPT ALL (' || q || ')) s',
							   bt, dm) INTO n;
				mismatches := mismatches + n;
				queries := queries + 1;
				SELECT NOT bool_or(position(dm || '_v' IN p) > 0) INTO STRICT differ
				FROM opx_explain(format(q, dm)) p;
				IF differ AND NOT cond = ANY (without_dmindex) THEN
					without_dmindex := without_dmindex || cond;
				END IF;
			END LOOP;
		END LOOP;

		-- sequences: the same values in the same order
		FOREACH cond IN ARRAY orders LOOP
			q := 'SELECT array_agg(v) FROM (SELECT v FROM %I ' || cond || ') s';
			EXECUTE format('SELECT (' || q || ') IS DISTINCT FROM (' || q || ')', dm, bt)
				INTO differ;
			mismatches := mismatches + differ::int;
			EXECUTE format('SELECT coalesce(array_length((' || q || '), 1), 0)', dm) INTO n;
			dm_rows := dm_rows + n;
			queries := queries + 1;
			SELECT NOT bool_or(position(dm || '_v' IN p) > 0) INTO STRICT differ
			FROM opx_explain(format('SELECT v FROM %I ' || cond, dm)) p;
			IF differ AND NOT cond = ANY (without_dmindex) THEN
				without_dmindex := without_dmindex || cond;
			END IF;
		END LOOP;
	END LOOP;
END
$$;

-- the lines of a query's plan
CREATE FUNCTION opx_explain(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || q;
END
$$;

-- make the btree copy of opx_dm_<tag> and index both
CREATE FUNCTION opx_setup(tag text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE TABLE %I AS SELECT * FROM %I', 'opx_bt_' || tag, 'opx_dm_' || tag);
	EXECUTE format('CREATE INDEX %I ON %I USING dmindex (v)', 'opx_dm_' || tag || '_v', 'opx_dm_' || tag);
	EXECUTE format('CREATE INDEX %I ON %I USING btree (v)', 'opx_bt_' || tag || '_v', 'opx_bt_' || tag);
END
$$;

-- ---- the data ----------------------------------------------------------------
SELECT setseed(0.25);

CREATE TABLE opx_dm_int2 (id serial, v int2);
INSERT INTO opx_dm_int2 (v)
SELECT CASE WHEN random() < 0.03 THEN NULL ELSE (random() * 2000 - 1000)::int2 END
FROM generate_series(1, 3000);
INSERT INTO opx_dm_int2 (v) VALUES (-32768), (-32768), (32767), (0), (NULL);

CREATE TABLE opx_dm_int4 (id serial, v int4);
INSERT INTO opx_dm_int4 (v)
SELECT CASE WHEN random() < 0.03 THEN NULL ELSE (random() * 20000 - 10000)::int4 END
FROM generate_series(1, 20000);
INSERT INTO opx_dm_int4 (v) VALUES (-2147483648), (2147483647), (2147483647), (0), (NULL);

CREATE TABLE opx_dm_int8 (id serial, v int8);
INSERT INTO opx_dm_int8 (v)
SELECT CASE WHEN r < 0.03 THEN NULL
	WHEN r < 0.5 THEN (random() * 200 - 100)::int8
	ELSE ((random() - 0.5) * 1.8e19)::numeric::int8 END
FROM (SELECT random() AS r FROM generate_series(1, 3000)) s;
INSERT INTO opx_dm_int8 (v) VALUES ('-9223372036854775808'), (9223372036854775807),
	(-2147483649), (2147483648), (0), (NULL);

CREATE TABLE opx_dm_float4 (id serial, v float4);
INSERT INTO opx_dm_float4 (v)
SELECT CASE WHEN random() < 0.03 THEN NULL ELSE round((random() * 200 - 100)::numeric, 1)::float4 END
FROM generate_series(1, 3000);
INSERT INTO opx_dm_float4 (v) VALUES ('-0'), ('0'), ('-0'), ('NaN'), ('NaN'), ('Infinity'),
	('-Infinity'), ('0.1'), ('3.4028235e38'), ('-3.4028235e38'), ('1.4e-45'), (NULL);

CREATE TABLE opx_dm_float8 (id serial, v float8);
INSERT INTO opx_dm_float8 (v)
SELECT CASE WHEN random() < 0.03 THEN NULL ELSE round((random() * 200 - 100)::numeric, 1)::float8 END
FROM generate_series(1, 3000);
INSERT INTO opx_dm_float8 (v) VALUES ('-0'), ('0'), ('-0'), ('NaN'), (-('NaN'::float8)),
	('Infinity'), ('-Infinity'), ('0.1'), ('1.7976931348623157e308'), ('5e-324'), (NULL);

CREATE TABLE opx_dm_date (id serial, v date);
INSERT INTO opx_dm_date (v)
SELECT CASE WHEN random() < 0.03 THEN NULL ELSE '2000-01-01'::date + (random() * 4000)::int END
FROM generate_series(1, 3000);
INSERT INTO opx_dm_date (v) VALUES ('infinity'), ('-infinity'), ('infinity'),
	('4714-11-24 BC'), ('5874897-12-31'), (NULL);

CREATE TABLE opx_dm_timestamp (id serial, v timestamp);
INSERT INTO opx_dm_timestamp (v)
SELECT CASE WHEN random() < 0.03 THEN NULL
	ELSE '2000-01-01'::timestamp + (random() * 1e5)::int * interval '1 hour' END
FROM generate_series(1, 3000);
INSERT INTO opx_dm_timestamp (v) VALUES ('infinity'), ('-infinity'), ('-infinity'),
	('4714-11-24 00:00:00 BC'), ('294276-12-31 23:59:59.999999'), (NULL);

CREATE TABLE opx_dm_timestamptz (id serial, v timestamptz);
INSERT INTO opx_dm_timestamptz (v) SELECT v AT TIME ZONE 'UTC' FROM opx_dm_timestamp ORDER BY id;

CREATE TABLE opx_dm_time (id serial, v time);
INSERT INTO opx_dm_time (v)
SELECT CASE WHEN random() < 0.03 THEN NULL
	ELSE '00:00'::time + (random() * 86400)::int * interval '1 second' END
FROM generate_series(1, 3000);
INSERT INTO opx_dm_time (v) VALUES ('00:00'), ('24:00'), ('23:59:59.999999'), (NULL);

CREATE TABLE opx_dm_oid (id serial, v oid);
INSERT INTO opx_dm_oid (v)
SELECT CASE WHEN r < 0.03 THEN NULL
	WHEN r < 0.5 THEN (random() * 1000)::int8::oid
	ELSE (random() * 4294967295)::int8::oid END
FROM (SELECT random() AS r FROM generate_series(1, 3000)) s;
INSERT INTO opx_dm_oid (v) VALUES (0), (4294967295), (2147483648), (NULL);

CREATE TABLE opx_dm_bool (id serial, v bool);
INSERT INTO opx_dm_bool (v)
SELECT CASE WHEN r < 0.03 THEN NULL ELSE r < 0.3 END
FROM (SELECT random() AS r FROM generate_series(1, 3000)) s;

CREATE TABLE opx_dm_money (id serial, v money);
INSERT INTO opx_dm_money (v)
SELECT CASE WHEN random() < 0.03 THEN NULL
	ELSE ((random() - 0.5) * 2000)::numeric(10, 0)::money END
FROM generate_series(1, 3000);
INSERT INTO opx_dm_money (v) VALUES ('-92233720368547758.08'), ('92233720368547758.07'),
	('0'), ('0.01'), (NULL);

SELECT opx_setup(t) FROM unnest(ARRAY['int2', 'int4', 'int8', 'float4', 'float8', 'date',
	'timestamp', 'timestamptz', 'time', 'oid', 'bool', 'money']) t;
VACUUM ANALYZE;

-- ---- the same answers as btree ---------------------------------------------------
-- (no mismatches, and every query uses the dmindex)

-- integers, with constants of all three types (cross-type operators)
SELECT * FROM opx_check('int2', ARRAY['(-32768)::int2', '-1000', '-5::int8', '0::int2',
	'17', '999::int8', '40000', '32767::int2', '(SELECT 3::int2)', '(SELECT NULL::int2)']);
SELECT * FROM opx_check('int4', ARRAY['(-3000000000)::int8', '(-2147483648)::int4',
	'-10000::int2', '-17', '0::int8', '42', '9999::int8', '3000000000::int8',
	'2147483647', '(SELECT 5::int8)', '(SELECT NULL::int4)']);
SELECT * FROM opx_check('int8', ARRAY['(-9223372036854775808)::int8', '(-2147483648)::int4',
	'-100::int2', '-1', '0::int4', '99::int2', '2147483648', '9223372036854775807',
	'(SELECT 50::int4)', '(SELECT NULL::int8)']);

-- floats, with constants of both types; 0.1::float8 is no float4 value
SELECT * FROM opx_check('float4', ARRAY[$$'-Infinity'::float4$$, '-50.5::float8',
	'-0::float4', '0::float8', '0.1::float8', '0.1::float4', '33.3', '1e30::float8',
	$$'Infinity'::float8$$, $$'NaN'::float4$$, '(SELECT NULL::float4)']);
SELECT * FROM opx_check('float8', ARRAY[$$'-Infinity'::float8$$, '-50.5::float4',
	$$'-0'::float8$$, '0::float4', '5e-324', '0.1::float4', '0.1', '77.7',
	$$'Infinity'::float4$$, $$'NaN'::float8$$, '(SELECT NULL::float8)']);

SELECT * FROM opx_check('date', ARRAY[$$'-infinity'::date$$, $$'4714-11-24 BC'::date$$,
	$$'2000-01-01'::date$$, $$'2005-06-07'::date$$, $$'2010-12-31'::date$$,
	$$'infinity'::date$$, $$(SELECT '2003-03-03'::date)$$, '(SELECT NULL::date)']);
SELECT * FROM opx_check('timestamp', ARRAY[$$'-infinity'::timestamp$$,
	$$'2000-01-01 00:00'::timestamp$$, $$'2005-06-07 08:00'::timestamp$$,
	$$'2005-06-07 08:30'::timestamp$$, $$'294276-12-31 23:59:59.999999'::timestamp$$,
	$$'infinity'::timestamp$$, '(SELECT NULL::timestamp)']);
SELECT * FROM opx_check('timestamptz', ARRAY[$$'-infinity'::timestamptz$$,
	$$'2000-01-01 00:00+00'::timestamptz$$, $$'2005-06-07 08:00+00'::timestamptz$$,
	$$'2005-06-07 10:30+02:30'::timestamptz$$, $$'infinity'::timestamptz$$,
	'(SELECT now())', '(SELECT NULL::timestamptz)']);
SELECT * FROM opx_check('time', ARRAY[$$'00:00'::time$$, $$'06:30:01'::time$$,
	$$'12:00'::time$$, $$'23:59:59.999999'::time$$, $$'24:00'::time$$,
	'(SELECT NULL::time)']);
SELECT * FROM opx_check('oid', ARRAY['0::oid', '17::oid', '999::oid', '2147483648::oid',
	'4294967295::oid', '(SELECT NULL::oid)']);
-- PostgreSQL 15 turns "v = true" into "v" and "v = false" into "NOT v",
-- and matches those forms only to btree's and hash's own boolean operator
-- families (IsBooleanOpfamily), so these two cannot use a dmindex.
SELECT * FROM opx_check('bool', ARRAY['false', 'true', '(SELECT NULL::bool)']);
SELECT * FROM opx_check('money', ARRAY[$$'-92233720368547758.08'::money$$,
	$$'-500'::money$$, $$'0'::money$$, $$'0.01'::money$$, $$'123'::money$$,
	$$'92233720368547758.07'::money$$, '(SELECT NULL::money)']);

-- ---- plans -------------------------------------------------------------------------

-- With only a dmindex on the column, the plans it gets (sequential scans
-- allowed) are the ones a btree gets on the same data: opx_plans shows the
-- dmindex plan, with names made generic, and whether the btree plan has the
-- same shape.
CREATE FUNCTION opx_plans(tag text, q text, OUT same_as_btree bool, OUT plan text)
LANGUAGE plpgsql AS $$
DECLARE
	dm text;
	bt text;
BEGIN
	SELECT string_agg(replace(p, 'opx_dm_' || tag, 'T'), E'\n') INTO dm
	FROM opx_explain(format(q, 'opx_dm_' || tag)) p;
	SELECT string_agg(replace(p, 'opx_bt_' || tag, 'T'), E'\n') INTO bt
	FROM opx_explain(format(q, 'opx_bt_' || tag)) p;
	same_as_btree := dm = bt;
	plan := dm;
END
$$;

SELECT q, (opx_plans('int4', q)).* FROM unnest(ARRAY[
	'SELECT * FROM %I WHERE v = 42',
	'SELECT * FROM %I WHERE v = 42::int8',
	'SELECT * FROM %I WHERE v BETWEEN 100 AND 130',
	'SELECT * FROM %I WHERE v < -9900',
	'SELECT * FROM %I WHERE v > 0',
	'SELECT * FROM %I WHERE v IS NULL',
	'SELECT * FROM %I ORDER BY v LIMIT 10',
	'SELECT * FROM %I ORDER BY v DESC LIMIT 10',
	'SELECT * FROM %I WHERE v > 5000 ORDER BY v LIMIT 10',
	'SELECT v FROM %I WHERE v BETWEEN 100 AND 200',
	'SELECT count(*) FROM %I WHERE v < 0',
	'SELECT * FROM %I WHERE v + 0 = 42']) q;

-- The same for a few other types.
SELECT q, (opx_plans(t, q)).*
FROM (VALUES
	('float8', 'SELECT * FROM %I WHERE v = 0.1'),
	('float4', 'SELECT * FROM %I WHERE v > 99.5::float8'),
	('date', $$SELECT * FROM %I WHERE v = 'infinity'$$),
	('timestamp', 'SELECT * FROM %I ORDER BY v DESC LIMIT 3'),
	('oid', 'SELECT * FROM %I WHERE v = 4294967295'),
	('bool', 'SELECT count(*) FROM %I WHERE v > false'),
	('bool', 'SELECT * FROM %I WHERE v'),
	('money', 'SELECT * FROM %I WHERE v IS NULL')) s(t, q);

-- A join on the column: nested loop with the index on the inner side.
SELECT (opx_plans('int4',
	'SELECT * FROM (VALUES (1), (2), (3)) x(a) JOIN %I ON v = a')).*;

-- With a btree and a dmindex on the same column, the btree wins, every time.
CREATE TABLE opx_both AS SELECT * FROM opx_dm_int4;
CREATE INDEX opx_both_dm ON opx_both USING dmindex (v);
CREATE INDEX opx_both_bt ON opx_both USING btree (v);
ANALYZE opx_both;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both WHERE v = 42;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both WHERE v BETWEEN 100 AND 130;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both ORDER BY v LIMIT 10;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both WHERE v IS NULL;
-- without the btree, the dmindex takes its place
DROP INDEX opx_both_bt;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both WHERE v = 42;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both WHERE v BETWEEN 100 AND 130;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both ORDER BY v LIMIT 10;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both ORDER BY v DESC LIMIT 10;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both WHERE v IS NULL;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both WHERE v = 42::int8;
-- but not for a query that reads most of the table
EXPLAIN (COSTS OFF) SELECT * FROM opx_both WHERE v > -9000;
-- unless sequential scans are off
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both WHERE v > -9000;
RESET enable_seqscan;
-- an expression index and a partial index
CREATE INDEX opx_both_expr ON opx_both USING dmindex ((v / 10));
CREATE INDEX opx_both_part ON opx_both USING dmindex (v) WHERE v > 9000;
ANALYZE opx_both;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both WHERE v / 10 = 42;
EXPLAIN (COSTS OFF) SELECT * FROM opx_both WHERE v > 9990 ORDER BY v LIMIT 5;
SELECT count(*) FROM opx_both WHERE v / 10 = 42;
SELECT count(*) FROM opx_both WHERE v > 9990;
DROP INDEX opx_both_expr, opx_both_part;
SELECT count(*) FROM opx_both WHERE v = 2147483647::int8;
SELECT count(*) FROM opx_both WHERE v >= 2147483647::int8 AND v < 2147483648::int8;
SELECT count(*) FROM opx_both WHERE v = 2147483648::int8;
-- NULLs come last, so first backwards, as with btree
SELECT v FROM opx_both ORDER BY v DESC LIMIT 3;
SELECT v FROM opx_both ORDER BY v LIMIT 3;

DROP TABLE opx_both;

-- On a table so small that both trees are a single leaf, still the btree.
CREATE TABLE opx_small (v int4);
INSERT INTO opx_small SELECT g FROM generate_series(1, 20) g;
CREATE INDEX opx_small_dm ON opx_small USING dmindex (v);
CREATE INDEX opx_small_bt ON opx_small USING btree (v);
ANALYZE opx_small;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM opx_small WHERE v = 7;
EXPLAIN (COSTS OFF) SELECT * FROM opx_small ORDER BY v;
RESET enable_seqscan;
DROP TABLE opx_small;
-- A family with an operator for a type it cannot encode: the scan fails
-- cleanly; once the function is added it works, and after it is dropped it
-- fails again (the per-backend cache follows pg_amproc).
CREATE OPERATOR FAMILY opx_bad_ops USING dmindex;
CREATE OPERATOR CLASS opx_bad_int4_ops FOR TYPE int4 USING dmindex FAMILY opx_bad_ops AS
	OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
	FUNCTION 1 (int4) dmindex_encode_int4(int4);
ALTER OPERATOR FAMILY opx_bad_ops USING dmindex ADD OPERATOR 1 < (int4, int8);
CREATE TABLE opx_bad (v int4);
INSERT INTO opx_bad SELECT g FROM generate_series(1, 10) g;
CREATE INDEX opx_bad_v ON opx_bad USING dmindex (v opx_bad_int4_ops);
SET enable_seqscan = off;
SELECT count(*) FROM opx_bad WHERE v < 5::int8;
SELECT count(*) FROM opx_bad WHERE v < 5;
ALTER OPERATOR FAMILY opx_bad_ops USING dmindex ADD
	FUNCTION 1 (int8) dmindex_encode_int8(int8);
SELECT count(*) FROM opx_bad WHERE v < 5::int8;
ALTER OPERATOR FAMILY opx_bad_ops USING dmindex DROP FUNCTION 1 (int8, int8);
SELECT count(*) FROM opx_bad WHERE v < 5::int8;
RESET enable_seqscan;
DROP TABLE opx_bad;
DROP OPERATOR FAMILY opx_bad_ops USING dmindex CASCADE;

DROP TABLE opx_dm_int2, opx_dm_int4, opx_dm_int8, opx_dm_float4, opx_dm_float8,
	opx_dm_date, opx_dm_timestamp, opx_dm_timestamptz, opx_dm_time, opx_dm_oid,
	opx_dm_bool, opx_dm_money;
DROP TABLE opx_bt_int2, opx_bt_int4, opx_bt_int8, opx_bt_float4, opx_bt_float8,
	opx_bt_date, opx_bt_timestamp, opx_bt_timestamptz, opx_bt_time, opx_bt_oid,
	opx_bt_bool, opx_bt_money;
DROP FUNCTION opx_check(text, text[]), opx_explain(text), opx_setup(text),
	opx_plans(text, text);
