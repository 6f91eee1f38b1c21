--
-- opclasses: the operator classes of dmindex and their support functions,
-- without any index: the catalog entries, amvalidate(), and the encodings
-- (order preservation, shared domains within a family, -0/NaN/infinities,
-- exact round trips through the decode functions).
--
-- Keys are unsigned 64-bit integers returned as int8 bits, so they are
-- compared here after flipping the sign bit.
--
CREATE FUNCTION opc_ucmp(a int8, b int8) RETURNS int
LANGUAGE sql IMMUTABLE STRICT AS $$
	SELECT CASE WHEN (a # '-9223372036854775808'::int8) < (b # '-9223372036854775808'::int8) THEN -1
	            WHEN a = b THEN 0 ELSE 1 END
$$;

-- ---- catalog -----------------------------------------------------------

-- Every operator class is valid, and its family too.
SELECT c.opcname, f.opfname, c.opcintype::regtype, c.opcdefault,
       amvalidate(c.oid) AS valid
FROM pg_opclass c JOIN pg_opfamily f ON f.oid = c.opcfamily
WHERE c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'dmindex')
ORDER BY f.opfname, c.opcname;

-- Members per family: operators, and support functions 1 and 2.
SELECT f.opfname,
       (SELECT count(*) FROM pg_amop o WHERE o.amopfamily = f.oid) AS operators,
       (SELECT count(*) FROM pg_amproc p WHERE p.amprocfamily = f.oid AND p.amprocnum = 1) AS encode,
       (SELECT count(*) FROM pg_amproc p WHERE p.amprocfamily = f.oid AND p.amprocnum = 2) AS decode
FROM pg_opfamily f
WHERE f.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'dmindex')
ORDER BY f.opfname;

-- Every operator is a btree operator with the same strategy number, which
-- is how the planner connects the index to ORDER BY.  (No rows expected.)
SELECT a.amopopr::regoperator, a.amopstrategy
FROM pg_amop a
WHERE a.amopmethod = (SELECT oid FROM pg_am WHERE amname = 'dmindex')
  AND NOT EXISTS (SELECT 1 FROM pg_amop b
                  WHERE b.amopmethod = (SELECT oid FROM pg_am WHERE amname = 'btree')
                    AND b.amopopr = a.amopopr AND b.amopstrategy = a.amopstrategy);

-- The support functions are registered for (type, type) with matching
-- signatures.  (No rows expected.)
SELECT p.amproc::regprocedure, p.amproclefttype::regtype, p.amprocrighttype::regtype
FROM pg_amproc p JOIN pg_proc f ON f.oid = p.amproc
WHERE p.amprocfamily IN (SELECT oid FROM pg_opfamily
                         WHERE opfmethod = (SELECT oid FROM pg_am WHERE amname = 'dmindex'))
  AND NOT (p.amproclefttype = p.amprocrighttype
           AND ((p.amprocnum = 1 AND f.prorettype = 'int8'::regtype
                 AND f.proargtypes[0] = p.amproclefttype)
             OR (p.amprocnum = 2 AND f.prorettype = p.amproclefttype
                 AND f.proargtypes[0] = 'int8'::regtype)));

-- ---- amvalidate on broken operator classes --------------------------------

CREATE OPERATOR FAMILY opc_bad_ops USING dmindex;
-- strategy 1 only; decode of the wrong type
CREATE OPERATOR CLASS opc_bad_int4_ops FOR TYPE int4 USING dmindex FAMILY opc_bad_ops AS
	OPERATOR 1 <,
	FUNCTION 1 (int4) dmindex_encode_int4(int4),
	FUNCTION 2 (int4) dmindex_decode_int2(int8);
-- a cross-type group without an encode function for int8, and an encode
-- function registered for two types
ALTER OPERATOR FAMILY opc_bad_ops USING dmindex ADD
	OPERATOR 1 < (int4, int8),
	OPERATOR 2 <= (int4, int8),
	OPERATOR 3 = (int4, int8),
	OPERATOR 4 >= (int4, int8),
	OPERATOR 5 > (int4, int8),
	FUNCTION 1 (int2, int8) dmindex_encode_int2(int2);
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'opc_bad_int4_ops';
-- an operator class whose type has no operators and no encode function
CREATE OPERATOR CLASS opc_bad_text_ops FOR TYPE text USING dmindex FAMILY opc_bad_ops AS
	FUNCTION 2 (int8) dmindex_decode_int8(int8);
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'opc_bad_text_ops';
DROP OPERATOR CLASS opc_bad_int4_ops USING dmindex;
DROP OPERATOR CLASS opc_bad_text_ops USING dmindex;
DROP OPERATOR FAMILY opc_bad_ops USING dmindex;

-- ORDER BY operators and out-of-range numbers are refused when created.
CREATE OPERATOR CLASS opc_bad_ops FOR TYPE int4 USING dmindex AS
	OPERATOR 1 < FOR ORDER BY integer_ops;
CREATE OPERATOR CLASS opc_bad_ops FOR TYPE int4 USING dmindex AS
	OPERATOR 6 <>;
CREATE OPERATOR CLASS opc_bad_ops FOR TYPE int4 USING dmindex AS
	FUNCTION 3 dmindex_encode_int4(int4);

-- ---- integers: one domain, value + 2^63 --------------------------------------

SELECT to_hex(dmindex_encode_int8('-9223372036854775808')) AS int8_min,
       to_hex(dmindex_encode_int8(-1)) AS minus_one,
       to_hex(dmindex_encode_int8(0)) AS zero,
       to_hex(dmindex_encode_int8(1)) AS one,
       to_hex(dmindex_encode_int8(9223372036854775807)) AS int8_max;

CREATE TABLE opc_ints (v int8);
SELECT setseed(0.1);
INSERT INTO opc_ints
SELECT v FROM unnest(ARRAY[-9223372036854775808, -9223372036854775807,
                           -2147483649, -2147483648, -2147483647, -32769, -32768,
                           -32767, -1, 0, 1, 32766, 32767, 32768, 2147483646,
                           2147483647, 2147483648, 9223372036854775806,
                           9223372036854775807]::int8[]) v
UNION ALL
SELECT (random() * 200 - 100)::int8 FROM generate_series(1, 40)
UNION ALL
SELECT (random() * 70000 - 35000)::int8 FROM generate_series(1, 40)
UNION ALL
SELECT ((random() - 0.5) * 1.8e19)::numeric::int8 FROM generate_series(1, 40);

-- order preserved, for each type and across types (no rows expected)
SELECT a.v, b.v FROM opc_ints a, opc_ints b
WHERE opc_ucmp(dmindex_encode_int8(a.v), dmindex_encode_int8(b.v))
      <> (a.v > b.v)::int - (a.v < b.v)::int;
SELECT a.v, b.v FROM opc_ints a, opc_ints b
WHERE a.v BETWEEN -2147483648 AND 2147483647
  AND opc_ucmp(dmindex_encode_int4(a.v::int4), dmindex_encode_int8(b.v))
      <> (a.v::int4 > b.v)::int - (a.v::int4 < b.v)::int;
SELECT a.v, b.v FROM opc_ints a, opc_ints b
WHERE a.v BETWEEN -32768 AND 32767 AND b.v BETWEEN -2147483648 AND 2147483647
  AND opc_ucmp(dmindex_encode_int2(a.v::int2), dmindex_encode_int4(b.v::int4))
      <> (a.v::int2 > b.v::int4)::int - (a.v::int2 < b.v::int4)::int;
-- equal values have equal keys in all three types
SELECT count(*) AS int2_int4_int8_equal FROM opc_ints
WHERE v BETWEEN -32768 AND 32767
  AND dmindex_encode_int2(v::int2) = dmindex_encode_int8(v)
  AND dmindex_encode_int4(v::int4) = dmindex_encode_int8(v);
SELECT count(*) AS int2_range FROM opc_ints WHERE v BETWEEN -32768 AND 32767;
-- round trips
SELECT count(*) FILTER (WHERE dmindex_decode_int8(dmindex_encode_int8(v)) = v) AS int8_ok,
       count(*) FILTER (WHERE v BETWEEN -2147483648 AND 2147483647
                        AND dmindex_decode_int4(dmindex_encode_int4(v::int4)) = v) AS int4_ok,
       count(*) FILTER (WHERE v BETWEEN -32768 AND 32767
                        AND dmindex_decode_int2(dmindex_encode_int2(v::int2)) = v) AS int2_ok,
       count(*) AS total
FROM opc_ints;
-- a key outside the type's range does not decode
SELECT dmindex_decode_int2(dmindex_encode_int4(32768));
SELECT dmindex_decode_int4(dmindex_encode_int8(-2147483649));

-- ---- floats: one domain for float4 and float8 ---------------------------------

-- -0 and +0 share a key; every NaN has one key, above +Infinity
SELECT to_hex(dmindex_encode_float8('-Infinity')) AS minus_inf,
       to_hex(dmindex_encode_float8(-1)) AS minus_one,
       to_hex(dmindex_encode_float8('-0')) AS minus_zero,
       to_hex(dmindex_encode_float8(0)) AS zero,
       to_hex(dmindex_encode_float8(1)) AS one,
       to_hex(dmindex_encode_float8('Infinity')) AS inf,
       to_hex(dmindex_encode_float8('NaN')) AS nan;
SELECT dmindex_encode_float8(-('NaN'::float8)) = dmindex_encode_float8('NaN') AS negative_nan,
       dmindex_encode_float4('NaN') = dmindex_encode_float8('NaN') AS float4_nan,
       dmindex_encode_float4(-('NaN'::float4)) = dmindex_encode_float8('NaN') AS float4_negative_nan,
       dmindex_encode_float4('-0') = dmindex_encode_float8(0) AS float4_minus_zero,
       dmindex_encode_float4('Infinity') = dmindex_encode_float8('Infinity') AS float4_inf,
       dmindex_encode_float4('-Infinity') = dmindex_encode_float8('-Infinity') AS float4_minus_inf,
       dmindex_encode_float4(0.5) = dmindex_encode_float8(0.5) AS float4_half;

CREATE TABLE opc_floats (v float8);
SELECT setseed(0.2);
INSERT INTO opc_floats
SELECT v FROM unnest(ARRAY['-Infinity', '-1.7976931348623157e308', '-3.4028235e38',
                           '-1', '-1.17549435e-38', '-2.2250738585072014e-308',
                           '-5e-324', '-0', '0', '5e-324', '2.2250738585072014e-308',
                           '1.4e-45', '0.1', '1', '3.4028235e38',
                           '1.7976931348623157e308', 'Infinity', 'NaN']::float8[]) v
UNION ALL
SELECT -('NaN'::float8)
UNION ALL
SELECT (random() - 0.5) * 100 FROM generate_series(1, 50)
UNION ALL
SELECT (random() - 0.5) * power(10, (random() * 600 - 300)::int) FROM generate_series(1, 50);

-- float8 against float8, float4 against float8, float4 against float4
-- (no rows expected); PostgreSQL orders NaN above everything
SELECT a.v, b.v FROM opc_floats a, opc_floats b
WHERE opc_ucmp(dmindex_encode_float8(a.v), dmindex_encode_float8(b.v))
      <> (a.v > b.v)::int - (a.v < b.v)::int;
CREATE TABLE opc_floats4 AS
SELECT v::float4 AS v FROM opc_floats
WHERE v = 'NaN' OR v = 0 OR v IN ('Infinity', '-Infinity') OR abs(v) BETWEEN 1e-37 AND 3e38;
SELECT a.v, b.v FROM opc_floats4 a, opc_floats b
WHERE opc_ucmp(dmindex_encode_float4(a.v), dmindex_encode_float8(b.v))
      <> (a.v > b.v)::int - (a.v < b.v)::int;
SELECT a.v, b.v FROM opc_floats4 a, opc_floats4 b
WHERE opc_ucmp(dmindex_encode_float4(a.v), dmindex_encode_float4(b.v))
      <> (a.v > b.v)::int - (a.v < b.v)::int;
SELECT count(*) > 60 AS enough FROM opc_floats4;
-- floats have no decode function (-0 would come back as 0)
SELECT count(*) AS float_decode FROM pg_amproc
WHERE amprocnum = 2 AND amproclefttype IN ('float4'::regtype, 'float8'::regtype)
  AND amprocfamily IN (SELECT oid FROM pg_opfamily
                       WHERE opfmethod = (SELECT oid FROM pg_am WHERE amname = 'dmindex'));

-- ---- date ------------------------------------------------------------------

CREATE TABLE opc_dates (v date);
SELECT setseed(0.3);
INSERT INTO opc_dates
SELECT v FROM unnest(ARRAY['-infinity', '4714-11-24 BC', '4713-01-01 BC', '0001-01-01',
                           '1999-12-31', '2000-01-01', '2000-01-02',
                           '5874897-12-31', 'infinity']::date[]) v
UNION ALL
SELECT '2000-01-01'::date + (random() * 100000 - 50000)::int FROM generate_series(1, 80);

SELECT a.v, b.v FROM opc_dates a, opc_dates b
WHERE opc_ucmp(dmindex_encode_date(a.v), dmindex_encode_date(b.v))
      <> (a.v > b.v)::int - (a.v < b.v)::int;
SELECT count(*) FILTER (WHERE dmindex_decode_date(dmindex_encode_date(v)) = v) AS round_trips,
       count(*) AS total
FROM opc_dates;
SELECT dmindex_decode_date(dmindex_encode_date('infinity')) AS inf,
       dmindex_decode_date(dmindex_encode_date('-infinity')) AS minus_inf,
       dmindex_decode_date(dmindex_encode_date('2000-01-01')) AS y2k;
SELECT dmindex_decode_date(dmindex_encode_int4(2147483646));

-- ---- timestamp and timestamptz ------------------------------------------------

CREATE TABLE opc_timestamps (v timestamp);
SELECT setseed(0.4);
INSERT INTO opc_timestamps
SELECT v FROM unnest(ARRAY['-infinity', '4714-11-24 00:00:00 BC', '0001-01-01 00:00:00',
                           '1999-12-31 23:59:59.999999', '2000-01-01 00:00:00',
                           '2000-01-01 00:00:00.000001', '294276-12-31 23:59:59.999999',
                           'infinity']::timestamp[]) v
UNION ALL
SELECT '2000-01-01'::timestamp + (random() * 1e10 - 5e9) * interval '1 second'
FROM generate_series(1, 80);

SELECT a.v, b.v FROM opc_timestamps a, opc_timestamps b
WHERE opc_ucmp(dmindex_encode_timestamp(a.v), dmindex_encode_timestamp(b.v))
      <> (a.v > b.v)::int - (a.v < b.v)::int;
SELECT count(*) FILTER (WHERE dmindex_decode_timestamp(dmindex_encode_timestamp(v)) = v) AS round_trips,
       count(*) AS total
FROM opc_timestamps;
SELECT dmindex_decode_timestamp(dmindex_encode_timestamp('infinity')) AS inf,
       dmindex_decode_timestamp(dmindex_encode_timestamp('-infinity')) AS minus_inf;

-- the same instants in UTC (reading the extremes in the session's time
-- zone could move them out of range)
CREATE TABLE opc_timestamptzs AS SELECT v AT TIME ZONE 'UTC' AS v FROM opc_timestamps;
-- the encoding of an instant does not depend on the session's time zone
SET TimeZone = 'UTC';
CREATE TEMP TABLE opc_tz_keys AS
SELECT v, dmindex_encode_timestamptz(v) AS k FROM opc_timestamptzs;
SET TimeZone = 'Asia/Kolkata';
SELECT count(*) AS same_keys FROM opc_tz_keys WHERE dmindex_encode_timestamptz(v) = k;
RESET TimeZone;
SELECT a.v, b.v FROM opc_timestamptzs a, opc_timestamptzs b
WHERE opc_ucmp(dmindex_encode_timestamptz(a.v), dmindex_encode_timestamptz(b.v))
      <> (a.v > b.v)::int - (a.v < b.v)::int;
SELECT count(*) FILTER (WHERE dmindex_decode_timestamptz(dmindex_encode_timestamptz(v)) = v) AS round_trips,
       count(*) AS total
FROM opc_timestamptzs;

-- ---- time --------------------------------------------------------------------

CREATE TABLE opc_times (v time);
SELECT setseed(0.5);
INSERT INTO opc_times
SELECT v FROM unnest(ARRAY['00:00:00', '00:00:00.000001', '12:00:00',
                           '23:59:59.999999', '24:00:00']::time[]) v
UNION ALL
SELECT '00:00'::time + random() * interval '24 hours' FROM generate_series(1, 60);

SELECT a.v, b.v FROM opc_times a, opc_times b
WHERE opc_ucmp(dmindex_encode_time(a.v), dmindex_encode_time(b.v))
      <> (a.v > b.v)::int - (a.v < b.v)::int;
SELECT count(*) FILTER (WHERE dmindex_decode_time(dmindex_encode_time(v)) = v) AS round_trips,
       count(*) AS total
FROM opc_times;
SELECT dmindex_decode_time(dmindex_encode_time('24:00')) AS end_of_day;
SELECT dmindex_decode_time(dmindex_encode_int8(86400000001));
SELECT dmindex_decode_time(dmindex_encode_int8(-1));

-- ---- oid: unsigned --------------------------------------------------------------

CREATE TABLE opc_oids (v oid);
SELECT setseed(0.6);
INSERT INTO opc_oids
SELECT v FROM unnest(ARRAY[0, 1, 2147483647, 2147483648, 4294967294, 4294967295]::oid[]) v
UNION ALL
SELECT (random() * 4294967295)::int8::oid FROM generate_series(1, 60);

SELECT a.v, b.v FROM opc_oids a, opc_oids b
WHERE opc_ucmp(dmindex_encode_oid(a.v), dmindex_encode_oid(b.v))
      <> (a.v > b.v)::int - (a.v < b.v)::int;
SELECT count(*) FILTER (WHERE dmindex_decode_oid(dmindex_encode_oid(v)) = v) AS round_trips,
       count(*) AS total
FROM opc_oids;
SELECT dmindex_encode_oid(4294967295) AS oid_max_key;
SELECT dmindex_decode_oid(4294967296);

-- ---- bool ----------------------------------------------------------------------

SELECT v, dmindex_encode_bool(v) AS k, dmindex_decode_bool(dmindex_encode_bool(v)) AS back
FROM unnest(ARRAY[false, true]) v ORDER BY v;
SELECT dmindex_decode_bool(2);

-- ---- money ---------------------------------------------------------------------

CREATE TABLE opc_money (v money);
SELECT setseed(0.7);
INSERT INTO opc_money
SELECT v FROM unnest(ARRAY['-92233720368547758.08', '-1.00', '-0.01', '0.00', '0.01',
                           '1.00', '92233720368547758.07']::money[]) v
UNION ALL
SELECT ((random() - 0.5) * 2000000)::numeric(20, 2)::money FROM generate_series(1, 60);

SELECT a.v, b.v FROM opc_money a, opc_money b
WHERE opc_ucmp(dmindex_encode_money(a.v), dmindex_encode_money(b.v))
      <> (a.v > b.v)::int - (a.v < b.v)::int;
SELECT count(*) FILTER (WHERE dmindex_decode_money(dmindex_encode_money(v)) = v) AS round_trips,
       count(*) AS total
FROM opc_money;
SELECT dmindex_encode_money('0.00') = dmindex_encode_int8(0) AS zero_key;

-- ---- strictness: NULL in, NULL out -------------------------------------------------

SELECT dmindex_encode_int4(NULL) IS NULL AS encode_null,
       dmindex_decode_int4(NULL) IS NULL AS decode_null;

DROP TABLE opc_ints, opc_floats, opc_floats4, opc_dates, opc_timestamps,
           opc_timestamptzs, opc_times, opc_oids, opc_money;
DROP FUNCTION opc_ucmp(int8, int8);
