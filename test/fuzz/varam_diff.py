#!/usr/bin/env python3
"""
varam_diff.py — a randomized differential test of dmindex indexes of key
format VAR (multi-column, variable-length keys, DESC / NULLS FIRST).

It writes one SQL script (stdout) for psql.  The script creates tables of
several column-type mixes, each with a dmindex index of random column
directions, fills them (duplicates, NULLs, edge values, long values), and
then checks many random queries: each runs under a plain index scan
(seqscan and bitmap off), a bitmap scan (index scan off) and, as the
reference, a seqscan; plans must use the dmindex index (counted, not
required: a predicate the index cannot serve is still run).  Results are
compared as multisets (unordered queries) or as sequences of the ORDER BY
values (ORDER BY ... LIMIT, both directions).  Between query batches it
runs INSERT/UPDATE/DELETE, VACUUM, REINDEX and TRUNCATE inside transactions
(queries inside them must see the transaction's own buffered entries),
savepoint rollbacks, small dmindex.insert_buffer values, scrollable cursors
with random moves (compared with a seqscan+sort cursor), and prepared
statements with generic plans and parameters of other types.

Every mismatch or error is logged in table fz_log (kind 'bad'); the run
ends with a summary.  Run it with test/fuzz/varam_diff.sh.

usage: varam_diff.py SEED [QUERIES_PER_BATCH] [ROUNDS]
"""
import random
import sys

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
QPB = int(sys.argv[2]) if len(sys.argv) > 2 else 40
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 6
R = random.Random(seed)


def q(s):
    """An SQL string literal (E'' with escapes for control characters)."""
    out = []
    esc = False
    for ch in s:
        if ch == "'":
            out.append("''")
        elif ch == "\\":
            out.append("\\\\")
            esc = True
        elif ord(ch) < 32:
            out.append("\\x%02x" % ord(ch))
            esc = True
        else:
            out.append(ch)
    return ("E'" if esc else "'") + "".join(out) + "'"


def dollar(s):
    tag = "$q%d$" % R.randrange(10**6)
    return tag + s + tag


# ---- value pools: (sql literal, ...) per type family ------------------------

STRS = ["", "a", "a ", "a  ", "ab", "abc", "abd", "ab ", "b", "B", "ba", " ", " a",
        "z", "zz", "é", "éa", "e", "E", "\x01", "a\x01", "a\x7f", "ä", "€", "a-b", "ab-",
        "Ab", "aB", "abcdefgh", "abcdefghi", "abcdefghij", "abcdefghijk", "~", "ÿ"]


def rand_str(maxlen):
    r = R.random()
    if r < 0.6:
        s = R.choice(STRS)
    elif r < 0.85:
        s = "".join(R.choice("ab ") for _ in range(R.randrange(0, 6)))
    else:
        s = "a" * R.randrange(1, maxlen + 1) + R.choice(["", "b", " "])
    return s[:maxlen]


def bytea_lit(b):
    return "'\\x" + b.hex() + "'::bytea"


def rand_bytes(maxlen):
    r = R.random()
    if r < 0.7:
        n = R.randrange(0, 5)
        return bytes(R.choice([0, 0, 1, 0x61, 0x7f, 0xfe, 0xff, 0xff]) for _ in range(n))
    return bytes(R.choice([0, 0xff, 0x61]) for _ in range(R.randrange(0, maxlen + 1)))


NUMS = ["0", "-0", "0.000", "1", "1.0", "1.00", "-1", "-1.5", "1.5", "10", "100", "99.99",
        "0.001", "-0.001", "0.1", "0.10", "1e100", "-1e100", "1e-100", "-1e-100",
        "12345678901234567890.123456789", "-12345678901234567890.123456789",
        "'NaN'", "'Infinity'", "'-Infinity'", "2", "3", "5", "1000", "1001", "0.5", "123.456"]
FLOATS = ["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", "0", "1.5", "-1.5", "1e300", "-1e300",
          "0.1", "1", "2", "3", "1e-300", "'5e-324'"]
FLOATS4 = ["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", "0", "1.5", "-1.5", "1e30", "-1e30", "0.1", "1", "2", "3", "1e-30"]
UUIDS = ["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
         "7fffffff-ffff-ffff-ffff-ffffffffffff", "80000000-0000-0000-0000-000000000000",
         "00000000-0000-0000-0000-000000000001", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
         "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12", "01234567-89ab-cdef-0123-456789abcdef"]
INTS = [-2147483648, -32768, -5, -1, 0, 0, 1, 1, 2, 3, 5, 7, 100, 32767, 2147483647]


class Col:
    def __init__(self, name, typ, family, coll=None, maxlen=8):
        self.name, self.typ, self.family, self.coll, self.maxlen = name, typ, family, coll, maxlen

    def decl(self):
        return "%s %s%s" % (self.name, self.typ, (' COLLATE "%s"' % self.coll) if self.coll else "")

    def value(self, safe=False):
        """a literal of a stored value (NULL sometimes); safe: short enough for every index"""
        if R.random() < 0.08:
            return "NULL"
        f = self.family
        if safe:
            if f == "text":
                return q(R.choice(["", "a", "a ", "ab", "b", "é", " ", "\x01", "z"]))
            if f == "bytea":
                return bytea_lit(rand_bytes(2)[:2])
            if f == "numeric":
                return R.choice(["0", "-0", "1", "1.0", "-1", "1.5", "'NaN'", "'Infinity'", "'-Infinity'", "10", "0.1"])
        if f == "int":
            lim = {"int2": 32767, "int4": 2147483647, "int8": 2 ** 63 - 1}[self.typ]
            v = R.choice(INTS) if R.random() < 0.5 else R.randrange(-3, 12)
            v = max(-lim - 1, min(lim, v))
            return str(v)
        if f == "text":
            return q(rand_str(self.maxlen))
        if f == "bytea":
            return bytea_lit(rand_bytes(self.maxlen))
        if f == "numeric":
            return R.choice(NUMS) if R.random() < 0.7 else str(R.randrange(-20, 20) / 4)
        if f == "float":
            return R.choice(FLOATS if self.typ == "float8" else FLOATS4)
        if f == "uuid":
            return "'%s'" % R.choice(UUIDS)
        raise ValueError(f)

    def const(self):
        """a comparison constant, sometimes of another type of the family or over-long"""
        f = self.family
        if f == "int":
            v = R.choice(INTS + [5000000000, -5000000000]) if R.random() < 0.5 else R.randrange(-3, 12)
            casts = ["int8"] + (["int4"] if abs(v) < 2 ** 31 else []) + (["int2"] if abs(v) < 32768 else [])
            return "%d::%s" % (v, R.choice(casts)) if v >= 0 else "(%d)::%s" % (v, R.choice(casts))
        if f == "text":
            r = R.random()
            s = rand_str(self.maxlen) if r < 0.8 else "a" * R.choice([self.maxlen, 19, 20, 21, 40, 200, 800, 3000])
            if self.typ.startswith("char"):
                return q(s) + "::bpchar"
            if self.typ == "name":
                if R.random() < 0.3:
                    return "(%s::text COLLATE \"C\")" % q(s)
                return q(s) + "::name"
            if self.coll != "C":
                return q(s) + R.choice(["", "::text", "::varchar"])
            return q(s) + R.choice(["", "::text", "::varchar", "::name"])
        if f == "bytea":
            b = rand_bytes(self.maxlen) if R.random() < 0.85 else b"a" * R.choice([19, 20, 21, 200, 3000])
            return bytea_lit(b)
        if f == "numeric":
            return (R.choice(NUMS) if R.random() < 0.7 else str(R.randrange(-20, 20) / 4)) + "::numeric"
        if f == "float":
            return R.choice([R.choice(FLOATS) + "::float8", R.choice(FLOATS4) + "::float4"])
        if f == "uuid":
            return "'%s'::uuid" % R.choice(UUIDS)
        raise ValueError(f)

    def norm(self):
        """an output expression equal for equal keys (ordered comparisons)"""
        if self.family == "numeric":
            return "num_norm(%s)" % self.name
        if self.family == "float":
            return "(%s + 0)" % self.name
        return self.name


TABLES = [
    ("t1", [Col("a", "int4", "int"), Col("b", "text", "text", "C", 12), Col("c", "int8", "int")], 1024),
    ("t2", [Col("t", "text", "text", None, 12), Col("n", "numeric", "numeric")], 1024),
    ("t3", [Col("by", "bytea", "bytea", None, 6), Col("u", "uuid", "uuid"), Col("v", "varchar(20)", "text", "C", 6)], 512),
    ("t4", [Col("ch", "char(6)", "text", "C", 6), Col("nm", "name", "text"), Col("f", "float8", "float")], 1024),
    ("t5", [Col("s", "text", "text", "und-x-icu", 10), Col("i", "int2", "int"), Col("f4", "float4", "float")], 1024),
    ("t6", [Col("a", "text", "text", "C", 8), Col("n", "numeric", "numeric")], 256),
    ("t10", [Col("a", "int4", "int"), Col("b", "text", "text", "C", 8), Col("n", "numeric", "numeric")], 512),
    ("t7", [Col("s", "text", "text", "C", 16)], 256),
    ("t8", [Col("n", "numeric", "numeric")], 256),
    ("t9", [Col("by", "bytea", "bytea", None, 10), Col("s", "varchar", "text", None, 10)], 256),
]

# per table: directions of its index columns
DIRS = {}
for tname, cols, ns in TABLES:
    DIRS[tname] = [(R.choice(["ASC", "DESC"]), R.choice(["NULLS FIRST", "NULLS LAST"])) for _ in cols]

out = []
P = out.append

P(r"""
\set ON_ERROR_STOP 0
SET client_min_messages = warning;
DROP TABLE IF EXISTS fz_log;
CREATE TABLE fz_log(kind text, q text, detail text);
-- counts in sequences: they survive the rollbacks of the transactions they are counted in
DO $$ DECLARE k text; BEGIN
  FOREACH k IN ARRAY ARRAY['ok_index','noidx_index','ok_bitmap','noidx_bitmap','ok_cursor','noidx_cursor',
                           'ok_prepared','noidx_prepared','ok_inssel','noidx_inssel','ok_check'] LOOP
    EXECUTE format('DROP SEQUENCE IF EXISTS fz_n_%s; CREATE SEQUENCE fz_n_%s MINVALUE 0 START 0', k, k);
  END LOOP; END $$;
CREATE OR REPLACE FUNCTION fz_count(kind text) RETURNS void LANGUAGE sql AS $$ SELECT nextval('fz_n_' || kind) $$;
CREATE OR REPLACE FUNCTION num_norm(n numeric) RETURNS text LANGUAGE sql IMMUTABLE AS
  $$ SELECT CASE WHEN n IS NULL THEN NULL WHEN n = 'NaN' OR n IN ('Infinity','-Infinity') THEN n::text
       WHEN n = 0 THEN '0' ELSE trim_scale(n)::text END $$;
CREATE OR REPLACE FUNCTION fz_mode(mode text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('enable_seqscan', (mode='seq')::text, true);
  PERFORM set_config('enable_indexscan', (mode='index')::text, true);
  PERFORM set_config('enable_indexonlyscan', (mode='index')::text, true);
  PERFORM set_config('enable_bitmapscan', (mode='bitmap')::text, true);
  PERFORM set_config('enable_sort', (mode<>'index')::text, true);
  PERFORM set_config('enable_incremental_sort', (mode<>'index')::text, true);
END $$;
CREATE OR REPLACE FUNCTION fz_rows(q text, mode text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE r text[];
BEGIN
  PERFORM fz_mode(mode);
  EXECUTE format('SELECT coalesce(array_agg(fz_r_::text), ''{}'') FROM (%s) fz_r_', q) INTO r;
  RETURN r;
END $$;
CREATE OR REPLACE FUNCTION fz_uses(q text, mode text, idx text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE line text; p text := '';
BEGIN
  PERFORM fz_mode(mode);
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP p := p || line || E'\n'; END LOOP;
  RETURN p ~ ('(using|on) ' || idx || '( |\n)');
END $$;
-- q under an index scan and a bitmap scan against a seqscan; ordered: as sequences
CREATE OR REPLACE FUNCTION fz_cmp(q text, ordered bool, idx text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t text[]; x text[]; mode text; used bool;
BEGIN
  t := fz_rows(q, 'seq');
  FOREACH mode IN ARRAY ARRAY['index','bitmap'] LOOP
    IF mode = 'bitmap' AND ordered THEN CONTINUE; END IF;
    used := fz_uses(q, mode, idx);
    x := fz_rows(q, mode);
    IF NOT ordered THEN
      x := (SELECT coalesce(array_agg(v ORDER BY v), '{}') FROM unnest(x) v);
      t := (SELECT coalesce(array_agg(v ORDER BY v), '{}') FROM unnest(t) v);
    END IF;
    IF x IS DISTINCT FROM t THEN
      INSERT INTO fz_log VALUES ('bad', q, format('%s (index used %s): seq %s rows, %s %s rows; seq %s / %s %s',
        mode, used, cardinality(t), mode, cardinality(x), left(t::text, 300), mode, left(x::text, 300)));
      RAISE WARNING 'MISMATCH % %: %', mode, used, q;
    ELSE
      PERFORM fz_count(CASE WHEN used THEN 'ok_' || mode ELSE 'noidx_' || mode END);
    END IF;
  END LOOP;
END $$;
-- INSERT ... SELECT over the index (the insert buffer is written while the scan is open)
CREATE OR REPLACE FUNCTION fz_inssel(tbl text, cols text, q text, idx text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n bigint; want bigint; used bool;
BEGIN
  PERFORM fz_mode('seq');
  EXECUTE format('SELECT count(*) FROM (%s) z', q) INTO want;
  used := fz_uses(q, 'index', idx);
  PERFORM fz_mode('index');
  EXECUTE format('INSERT INTO %s (%s) %s', tbl, cols, q);
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n <> want THEN
    INSERT INTO fz_log VALUES ('bad', q, format('INSERT ... SELECT (index used %s) inserted %s rows, seqscan counts %s', used, n, want));
    RAISE WARNING 'INSERT SELECT MISMATCH: %', q;
  ELSE
    PERFORM fz_count(CASE WHEN used THEN 'ok_inssel' ELSE 'noidx_inssel' END);
  END IF;
END $$;
-- the tree's invariants and every heap row's entry (dmindex_check)
CREATE OR REPLACE FUNCTION fz_check_index(idx text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  SELECT * INTO r FROM dmindex_check(idx::regclass, true);
  IF NOT r.ok THEN
    INSERT INTO fz_log VALUES ('bad', idx, format('dmindex_check: %s', r));
    RAISE WARNING 'CHECK MISMATCH: % %', idx, r;
  ELSE
    PERFORM fz_count('ok_check');
  END IF;
END $$;
CREATE OR REPLACE FUNCTION fz_fetch(cur text, mv text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE r record; res text[] := '{}';
BEGIN
  FOR r IN EXECUTE format('FETCH %s FROM %I', mv, cur) LOOP res := res || r::text; END LOOP;
  RETURN res;
END $$;
-- a scrollable cursor over the index and one over seqscan+sort, moved alike
CREATE OR REPLACE FUNCTION fz_cursor(q text, moves text[], idx text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE d text[]; b text[]; mv text; log text := ''; used bool;
BEGIN
  used := fz_uses(q, 'index', idx);
  PERFORM fz_mode('index');
  EXECUTE format('DECLARE cdm SCROLL CURSOR FOR %s', q);
  PERFORM fz_mode('seq');
  EXECUTE format('DECLARE cref SCROLL CURSOR FOR %s', q);
  FOREACH mv IN ARRAY moves LOOP
    log := log || mv || '; ';
    IF mv LIKE 'SQL:%' THEN EXECUTE substr(mv, 5); CONTINUE; END IF;
    d := fz_fetch('cdm', mv); b := fz_fetch('cref', mv);
    IF d IS DISTINCT FROM b THEN
      INSERT INTO fz_log VALUES ('bad', q, format('cursor (index used %s) after %s: dm %s ref %s', used, log, left(d::text, 300), left(b::text, 300)));
      RAISE WARNING 'CURSOR MISMATCH: %', q;
      EXIT;
    END IF;
  END LOOP;
  EXECUTE 'CLOSE cdm'; EXECUTE 'CLOSE cref';
  PERFORM fz_count(CASE WHEN used THEN 'ok_cursor' ELSE 'noidx_cursor' END);
END $$;
-- a prepared statement (generic plan, made under an index scan) against the literal query under seqscan
CREATE OR REPLACE FUNCTION fz_prep(stmt text, args text, refq text, idx text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE x text[]; t text[]; used bool; line text; p text := ''; r record;
BEGIN
  PERFORM fz_mode('index');
  FOR line IN EXECUTE format('EXPLAIN (COSTS OFF) EXECUTE %s(%s)', stmt, args) LOOP p := p || line || E'\n'; END LOOP;
  used := p ~ ('(using|on) ' || idx || '( |\n)');
  x := '{}';
  FOR r IN EXECUTE format('EXECUTE %s(%s)', stmt, args) LOOP x := x || r::text; END LOOP;
  x := (SELECT coalesce(array_agg(v ORDER BY v), '{}') FROM unnest(x) v);
  t := fz_rows(refq, 'seq');
  t := (SELECT coalesce(array_agg(v ORDER BY v), '{}') FROM unnest(t) v);
  IF x IS DISTINCT FROM t THEN
    INSERT INTO fz_log VALUES ('bad', format('EXECUTE %s(%s) ~ %s', stmt, args, refq), format('generic plan (index used %s): %s rows, seq %s rows', used, cardinality(x), cardinality(t)));
    RAISE WARNING 'PREPARED MISMATCH: % %', stmt, args;
  ELSE
    PERFORM fz_count(CASE WHEN used THEN 'ok_prepared' ELSE 'noidx_prepared' END);
  END IF;
END $$;
""")


def index_name(t):
    return t + "_dm"


def create_tables():
    for tname, cols, ns in TABLES:
        P("DROP TABLE IF EXISTS %s;" % tname)
        P("CREATE TABLE %s (id serial, %s);" % (tname, ", ".join(c.decl() for c in cols)))
        # half the tables are bulk-loaded by CREATE INDEX, half filled through the index
        late = R.random() < 0.5 and ns > 256
        if not late:
            P(create_index(tname, cols, ns))
        for _ in range(R.choice([300, 800, 1500])):
            insert_row(tname, cols)
        if late:
            P(create_index(tname, cols, ns))
        P("ANALYZE %s;" % tname)


def create_index(tname, cols, ns):
    parts = ["%s %s %s" % (c.name, d, nf) for c, (d, nf) in zip(cols, DIRS[tname])]
    return "CREATE INDEX %s ON %s USING dmindex (%s) WITH (node_size = %d);" % (
        index_name(tname), tname, ", ".join(parts), ns)


def insert_row(tname, cols, n=1, safe=False):
    rows = []
    for _ in range(n):
        rows.append("(" + ", ".join(c.value(safe) for c in cols) + ")")
    # one statement per row when a row may be over the key maximum (its error drops only it)
    P("INSERT INTO %s (%s) VALUES %s;" % (tname, ", ".join(c.name for c in cols), ", ".join(rows)))


OPS = ["=", "<", "<=", ">", ">="]


def cond(c):
    k = R.randrange(20)
    v = c.const()
    if k < 8:
        return "%s %s %s" % (c.name, R.choice(OPS), v)
    if k == 8:
        return "%s IS NULL" % c.name
    if k == 9:
        return "%s IS NOT NULL" % c.name
    if k in (10, 11):
        els = [c.const() for _ in range(R.randrange(0, 5))]
        if R.random() < 0.4:
            els.append("NULL::%s" % c.typ)
        if els and R.random() < 0.3:
            els.append(els[0])
        if not els:
            return "%s = ANY ('{}')" % c.name
        return "%s = ANY (ARRAY[%s])" % (c.name, ", ".join(els))
    if k == 12:
        return "%s %s ANY (ARRAY[%s, %s%s])" % (c.name, R.choice(OPS[1:]), v, c.const(),
                                                 ", NULL" if R.random() < 0.3 else "")
    if k == 13:
        return "%s BETWEEN %s AND %s" % (c.name, v, c.const())
    if k == 14 and c.family == "text" and c.typ in ("text", "varchar") and c.coll == "C":
        return "%s LIKE %s" % (c.name, q(rand_str(4).replace("%", "").replace("_", "") + "%"))
    if k == 15:
        return "(%s = %s OR %s %s %s)" % (c.name, v, c.name, R.choice(OPS), c.const())
    if k == 16:
        return "%s IN (%s, %s)" % (c.name, v, c.const())
    return "%s %s %s" % (c.name, R.choice(OPS), v)


def gen_query(tname, cols):
    conds = []
    for c in cols:
        n = R.choice([0, 0, 1, 1, 1, 2, 3])
        for _ in range(n):
            conds.append(cond(c))
    # a leading-column condition most of the time (else few plans use the index)
    if R.random() < 0.6 and not any(x.startswith(cols[0].name + " ") for x in conds):
        conds.insert(0, cond(cols[0]))
    where = (" WHERE " + " AND ".join(conds)) if conds else ""
    ordered = R.random() < 0.4
    if ordered:
        dirs = DIRS[tname]
        k = R.randrange(1, len(cols) + 1)
        rev = R.random() < 0.5
        ob = []
        for c, (d, nf) in list(zip(cols, dirs))[:k]:
            if rev:
                d = "DESC" if d == "ASC" else "ASC"
                nf = "NULLS LAST" if nf == "NULLS FIRST" else "NULLS FIRST"
            ob.append("%s %s %s" % (c.name, d, nf))
        proj = ", ".join(c.norm() for c in cols[:k])
        lim = R.choice([1, 2, 5, 17, 100, 1000])
        return "SELECT %s FROM %s%s ORDER BY %s LIMIT %d" % (proj, tname, where, ", ".join(ob), lim), True
    return "SELECT * FROM %s%s" % (tname, where), False


def check(tname, cols):
    qq, ordered = gen_query(tname, cols)
    P("SELECT fz_cmp(%s, %s, '%s');" % (dollar(qq), "true" if ordered else "false", index_name(tname)))


def cursor_check(tname, cols, in_xact=False):
    dirs = DIRS[tname]
    qq, _ = gen_query(tname, cols)
    qq = qq.split(" ORDER BY ")[0].replace(" LIMIT", "")
    if not qq.startswith("SELECT *"):
        qq = "SELECT * FROM " + qq.split(" FROM ", 1)[1]
    rev = R.random() < 0.5
    ob = []
    for c, (d, nf) in zip(cols, dirs):
        if rev:
            d = "DESC" if d == "ASC" else "ASC"
            nf = "NULLS LAST" if nf == "NULLS FIRST" else "NULLS FIRST"
        ob.append("%s %s %s" % (c.name, d, nf))
    # project the keys only (ties are in any order)
    qq = "SELECT %s FROM %s ORDER BY %s" % (", ".join(c.norm() for c in cols), qq.split(" FROM ", 1)[1], ", ".join(ob))
    moves = []
    for _ in range(R.randrange(5, 25)):
        if in_xact and R.random() < 0.15:
            # rows inserted while the cursor is open (it does not see them; its buffer copy must stay valid)
            moves.append("SQL:INSERT INTO %s (%s) VALUES %s" % (tname, ", ".join(c.name for c in cols), ", ".join(
                "(" + ", ".join(c.value(True) for c in cols) + ")" for _ in range(R.randrange(1, 12)))))
            continue
        k = R.randrange(9)
        moves.append(["FORWARD %d" % R.randrange(50), "BACKWARD %d" % R.randrange(50), "NEXT", "PRIOR",
                      "RELATIVE %d" % (R.randrange(40) - 20), "ABSOLUTE %d" % (R.randrange(400) - 100),
                      "FORWARD ALL", "BACKWARD ALL", "FORWARD 1"][k])
    call = "SELECT fz_cursor(%s, ARRAY[%s], '%s');" % (
        dollar(qq), ", ".join(q(m) for m in moves), index_name(tname))
    P(call if in_xact else "BEGIN; " + call + " COMMIT;")


def inssel_check(tname, cols):
    qq, _ = gen_query(tname, cols)
    where = qq.split(" WHERE ", 1)[1].split(" ORDER BY ")[0] if " WHERE " in qq else "true"
    names = ", ".join(c.name for c in cols)
    sel = "SELECT %s FROM %s WHERE %s LIMIT 300" % (names, tname, where)
    P("SELECT fz_inssel('%s', '%s', %s, '%s');" % (tname, names, dollar(sel), index_name(tname)))


PARAM_TYPES = {"int": ["int8", "int4", "int2"], "text": ["text", "varchar", "name"], "bytea": ["bytea"],
               "numeric": ["numeric"], "float": ["float8", "float4"], "uuid": ["uuid"]}
nprep = [0]


def prepared_check(tname, cols):
    nprep[0] += 1
    name = "p%d" % nprep[0]
    conds, types, argsets = [], [], []
    ncond = R.randrange(1, 4)
    chosen = [cols[0]] + [R.choice(cols) for _ in range(ncond - 1)]
    for i, c in enumerate(chosen):
        t = R.choice(PARAM_TYPES[c.family])
        if c.typ.startswith("char"):
            t = "bpchar"
        if c.typ == "name" and t == "varchar":
            t = "text"
        if c.family == "text" and c.coll != "C" and t == "name":
            t = "text"
        types.append(t)
        conds.append("%s %s $%d" % (c.name, R.choice(OPS), i + 1))
    P("SET plan_cache_mode = force_generic_plan;")
    P("SELECT fz_mode('index');")
    P("PREPARE %s(%s) AS SELECT * FROM %s WHERE %s;" % (name, ", ".join(types), tname, " AND ".join(conds)))
    for _ in range(R.randrange(2, 6)):
        args = []
        for c, t in zip(chosen, types):
            if R.random() < 0.1:
                args.append("NULL")
                continue
            v = c.const()
            if c.family == "float":
                v = R.choice(FLOATS4 if t == "float4" else FLOATS) + "::" + t
            base = v.rsplit("::", 1)[0] if v.endswith(("::int2", "::int4", "::int8", "::text", "::varchar",
                                                        "::name", "::bpchar", "::numeric", "::float4",
                                                        "::float8", "::uuid", "::bytea")) else v
            if t == "int2" and not (base.lstrip("(").rstrip(")").lstrip("-").isdigit() and abs(int(base.strip("()"))) < 32768):
                args.append("NULL")
                continue
            if t == "int4" and not abs(int(base.strip("()"))) < 2 ** 31:
                args.append("NULL")
                continue
            args.append("%s::%s" % (base, t))
        # replace $n in reverse order so $1 does not eat $10
        refw = " AND ".join(conds)
        for i in reversed(range(len(args))):
            refw = refw.replace("$%d" % (i + 1), "(%s)" % args[i])
        refq = "SELECT * FROM %s WHERE %s" % (tname, refw)
        P("SELECT fz_prep('%s', %s, %s, '%s');" % (name, q(", ".join(args)), dollar(refq), index_name(tname)))
    P("DEALLOCATE %s;" % name)
    P("RESET plan_cache_mode;")


def dml(tname, cols, n):
    for _ in range(n):
        r = R.random()
        if r < 0.6:
            insert_row(tname, cols, R.randrange(1, 6), True)
        elif r < 0.8:
            # every column gets a short value: a row's other long values could make its key too long
            sets = ", ".join("%s = %s" % (c.name, c.value(True)) for c in cols)
            P("UPDATE %s SET %s WHERE id %% %d = %d;" % (tname, sets, R.randrange(5, 60), R.randrange(5)))
        else:
            P("DELETE FROM %s WHERE id %% %d = %d;" % (tname, R.randrange(7, 80), R.randrange(7)))


create_tables()
for rnd in range(ROUNDS):
    for tname, cols, ns in TABLES:
        # committed state
        for _ in range(QPB):
            check(tname, cols)
        # a transaction with buffered entries, a savepoint, queries inside
        P("BEGIN;")
        P("SET LOCAL dmindex.insert_buffer = %d;" % R.choice([1, 2, 3, 7, 30, 100, 10000]))
        dml(tname, cols, R.randrange(1, 8))
        for _ in range(QPB // 4):
            check(tname, cols)
        P("SAVEPOINT s1;")
        dml(tname, cols, R.randrange(1, 8))
        for _ in range(QPB // 8):
            check(tname, cols)
        # a scrollable cursor over the transaction's buffered entries too
        cursor_check(tname, cols, True)
        inssel_check(tname, cols)
        P(R.choice(["ROLLBACK TO SAVEPOINT s1;", "RELEASE SAVEPOINT s1;"]))
        for _ in range(QPB // 8):
            check(tname, cols)
        P(R.choice(["COMMIT;", "COMMIT;", "ROLLBACK;"]))
        if R.random() < 0.5:
            P("VACUUM %s;" % tname)
        for _ in range(QPB // 8):
            check(tname, cols)
        for _ in range(2):
            cursor_check(tname, cols)
        prepared_check(tname, cols)
        if R.random() < 0.15:
            # REINDEX in a transaction, with inserts and queries after it
            P("BEGIN; REINDEX INDEX %s;" % index_name(tname))
            dml(tname, cols, 3)
            for _ in range(QPB // 8):
                check(tname, cols)
            P(R.choice(["COMMIT;", "ROLLBACK;"]))
        if rnd == ROUNDS // 2 and R.random() < 0.3:
            # TRUNCATE in a transaction, refilled, queried, maybe rolled back
            P("BEGIN; TRUNCATE %s;" % tname)
            dml(tname, cols, 20)
            for _ in range(QPB // 8):
                check(tname, cols)
            P(R.choice(["COMMIT;", "ROLLBACK;"]))
        for _ in range(QPB // 8):
            check(tname, cols)
        P("SELECT fz_check_index('%s');" % index_name(tname))

P("SELECT 'bad' AS kind, count(*) FROM fz_log WHERE kind = 'bad' UNION ALL SELECT substr(sequencename, 6), last_value FROM pg_sequences WHERE sequencename LIKE 'fz_n_%' AND last_value > 0;")
P("SELECT q, detail FROM fz_log WHERE kind = 'bad' LIMIT 40;")
print("\n".join(out))
