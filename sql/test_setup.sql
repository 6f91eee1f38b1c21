--
-- test_setup: helper functions the later pg_regress tests share (runs first
-- in test/regress-schedule; a test run on its own needs it before).  They
-- compare what a dmindex index answers with a sequential scan or with a
-- btree on the same rows, and fail loudly when a plan does not use the
-- index it is meant to test.
--

-- dm_trees(): how many trees the memory nodes hold (for counting the trees
-- a statement creates or frees).
CREATE FUNCTION dm_trees() RETURNS bigint
LANGUAGE sql AS $$ SELECT sum(trees)::bigint FROM dmindex_memnodes() $$;

-- dm_rows(table, condition, mode[, index]): the rows of "SELECT * FROM table
-- WHERE condition" as sorted text, through a sequential scan (mode 'seq'),
-- an index scan ('index') or a bitmap scan ('bitmap').  An index or bitmap
-- plan must use the given index, or without one any dmindex index of the
-- table; otherwise it raises an error rather than compare the wrong thing.
-- The enable_* settings it changes are local to the transaction.
CREATE FUNCTION dm_rows(tbl regclass, cond text, mode text, idx name DEFAULT NULL)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	q text := format('SELECT * FROM %s WHERE %s', tbl, cond);
	names text := coalesce(idx,
		(SELECT string_agg(c.relname, '|') FROM pg_index i
		 JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
		 WHERE i.indrelid = tbl AND a.amname = 'dmindex'));
	res text[];
	plan text := '';
	line text;
BEGIN
	PERFORM set_config('enable_seqscan', (mode = 'seq')::text, true);
	PERFORM set_config('enable_indexscan', (mode = 'index')::text, true);
	PERFORM set_config('enable_indexonlyscan', 'off', true);
	PERFORM set_config('enable_bitmapscan', (mode = 'bitmap')::text, true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		plan := plan || line || E'\n';
	END LOOP;
	IF (mode = 'index' AND plan !~ ('Index Scan using (' || names || ') ')) OR
	   (mode = 'bitmap' AND plan !~ ('Bitmap Index Scan on (' || names || ')\M')) THEN
		RAISE EXCEPTION 'no % scan on % in the plan: %', mode, coalesce(names, 'a dmindex index'), plan;
	END IF;
	EXECUTE format('SELECT array_agg(s::text ORDER BY s::text) FROM (%s) s', q) INTO res;
	RETURN coalesce(res, '{}');
END
$$;

-- dm_agree(table, condition[, index][, modes]): nrows found by a sequential
-- scan, and whether the index scan and the bitmap scan (or just the modes
-- given: a condition with OR can only be a bitmap scan) return exactly those
-- rows.  The enable_* settings are back to on afterwards (it runs inside
-- transactions under test).
CREATE FUNCTION dm_agree(tbl regclass, cond text, idx name DEFAULT NULL,
	modes text[] DEFAULT '{index,bitmap}', OUT nrows int, OUT agree bool)
LANGUAGE plpgsql AS $$
DECLARE
	s text[] := dm_rows(tbl, cond, 'seq', idx);
	names text[] := '{enable_seqscan, enable_indexscan, enable_indexonlyscan, enable_bitmapscan}';
BEGIN
	nrows := cardinality(s);
	agree := true;
	FOR i IN 1 .. cardinality(modes) LOOP
		agree := agree AND dm_rows(tbl, cond, modes[i], idx) = s;
	END LOOP;
	FOR i IN 1 .. cardinality(names) LOOP
		PERFORM set_config(names[i], 'on', true);
	END LOOP;
END
$$;

-- dm_compare(query, ordered, mode, dmindex tables, btree tables): runs a
-- query template (%1$s, %2$s, ... name the tables) once on the dmindex
-- tables and once on their btree twins, and reports the plan's scan, join
-- and sort nodes (sorted, so a join's input order does not matter), the
-- number of rows, and the rows only one side returned (as multisets; with
-- ordered, each row's position is part of it, so the order must match too).
-- mode: 'index', 'ios' (index-only allowed), 'bitmap', 'merge' or
-- 'nestloop' (index scans under that join).  Settings are restored after.
CREATE FUNCTION dm_compare(q text, ordered bool, mode text, dm text[], bt text[],
	OUT plan text, OUT nrows bigint, OUT only_dm bigint, OUT only_bt bigint)
LANGUAGE plpgsql AS $$
DECLARE
	qdm text := format(q, VARIADIC dm);
	qbt text := format(q, VARIADIC bt);
	line text;
	m text[];
	nodes text[] := '{}';
	names text[] := '{enable_seqscan, enable_indexscan, enable_indexonlyscan, enable_bitmapscan,
					  enable_hashjoin, enable_hashagg, enable_memoize, enable_mergejoin, enable_nestloop}';
	saved text[];
BEGIN
	saved := ARRAY(SELECT current_setting(x) FROM unnest(names) x);
	PERFORM set_config('enable_seqscan', 'off', true);
	PERFORM set_config('enable_indexscan', (mode <> 'bitmap')::text, true);
	PERFORM set_config('enable_indexonlyscan', (mode = 'ios')::text, true);
	PERFORM set_config('enable_bitmapscan', (mode = 'bitmap')::text, true);
	PERFORM set_config('enable_hashjoin', 'off', true);
	PERFORM set_config('enable_hashagg', 'off', true);
	PERFORM set_config('enable_memoize', 'off', true);
	PERFORM set_config('enable_mergejoin', (mode <> 'nestloop')::text, true);
	PERFORM set_config('enable_nestloop', (mode <> 'merge')::text, true);
	IF ordered THEN
		qdm := format('SELECT row_number() OVER () AS pos, s.* FROM (%s) s', qdm);
		qbt := format('SELECT row_number() OVER () AS pos, s.* FROM (%s) s', qbt);
	END IF;
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || qdm LOOP
		-- plan nodes (property lines such as "Sort Key: ..." have a colon)
		m := regexp_match(line, '^\s*(?:->\s+)?(Index Only Scan Backward|Index Only Scan|Index Scan Backward|Index Scan|Bitmap Index Scan|Seq Scan|Merge(?: \w+)? Join|Nested Loop(?: \w+ Join)?|Incremental Sort|Sort|BitmapOr|BitmapAnd|Result)(?: using (\w+))?(?: on (\w+))?');
		IF m IS NOT NULL AND line !~ ':' THEN
			nodes := nodes || (m[1] || coalesce(' ' || coalesce(m[2], m[3]), ''));
		END IF;
	END LOOP;
	plan := (SELECT string_agg(x, ', ' ORDER BY x) FROM unnest(nodes) x);
	EXECUTE format('SELECT count(*) FROM (%s) s', qdm) INTO nrows;
	EXECUTE format('SELECT count(*) FROM (SELECT * FROM (%s) a EXCEPT ALL SELECT * FROM (%s) b) s',
				   qdm, qbt) INTO only_dm;
	EXECUTE format('SELECT count(*) FROM (SELECT * FROM (%s) a EXCEPT ALL SELECT * FROM (%s) b) s',
				   qbt, qdm) INTO only_bt;
	FOR i IN 1 .. cardinality(names) LOOP
		PERFORM set_config(names[i], saved[i], true);
	END LOOP;
END
$$;

-- dm_fetch(cursor, move): what one FETCH returns, one text per row (the
-- cursors fetch one column; r::text is "(value)").
CREATE FUNCTION dm_fetch(cur text, mv text) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	res text[] := '{}';
BEGIN
	FOR r IN EXECUTE format('FETCH %s FROM %I', mv, cur) LOOP
		res := res || coalesce(nullif(btrim(r::text, '()'), ''), 'null');
	END LOOP;
	RETURN res;
END
$$;

-- dm_moves(moves, dmindex cursor, btree cursor): the two cursors make the
-- same moves; each FETCH must return the same rows (same).  nrows, first and
-- last describe what the btree cursor returned.
CREATE FUNCTION dm_moves(moves text[], cur_dm text, cur_bt text, OUT n bigint, OUT move text,
	OUT nrows int, OUT first text, OUT last text, OUT same bool)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
	d text[];
	b text[];
BEGIN
	FOR n, move IN SELECT u.n, u.m FROM unnest(moves) WITH ORDINALITY AS u(m, n) LOOP
		d := dm_fetch(cur_dm, move);
		b := dm_fetch(cur_bt, move);
		nrows := cardinality(b);
		first := b[1];
		last := b[cardinality(b)];
		same := d = b;
		RETURN NEXT;
	END LOOP;
END
$$;
