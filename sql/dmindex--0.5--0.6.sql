/*
 * dmindex--0.5--0.6.sql: schema changes from 0.5 to 0.6.
 *
 * Run by ALTER EXTENSION dmindex UPDATE on a 0.1 to 0.5 database, and by
 * CREATE EXTENSION dmindex after the scripts before it (there is no
 * separate full script, so the paths cannot drift apart).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dmindex UPDATE TO '0.6'" to load this file. \quit

--
-- Operator classes of types whose keys are byte strings (issue 16,
-- docs/design.md §5.2 and §8): their indexes have key format VAR, and the
-- keys come from the byte encoding (src/pg/dmkeyenc.c), so these families
-- have operators only, no support function.  The order is each type's
-- default btree order (under the column's collation for strings); the
-- access method refuses a VAR column whose operator class compares
-- otherwise.  Indexes of several columns, or with DESC or NULLS FIRST
-- columns, of the older types get key format VAR too.
--

-- text_ops: text (and varchar, binary coercible to it) and name, with
-- btree's cross-type operators between them: one key domain.
CREATE OPERATOR FAMILY text_ops USING dmindex;

CREATE OPERATOR CLASS text_ops
DEFAULT FOR TYPE text USING dmindex FAMILY text_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >;

CREATE OPERATOR CLASS name_ops
DEFAULT FOR TYPE name USING dmindex FAMILY text_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >;

ALTER OPERATOR FAMILY text_ops USING dmindex ADD
	OPERATOR 1 < (name, text),
	OPERATOR 2 <= (name, text),
	OPERATOR 3 = (name, text),
	OPERATOR 4 >= (name, text),
	OPERATOR 5 > (name, text),
	OPERATOR 1 < (text, name),
	OPERATOR 2 <= (text, name),
	OPERATOR 3 = (text, name),
	OPERATOR 4 >= (text, name),
	OPERATOR 5 > (text, name);

-- bpchar_ops: trailing spaces do not count, as in bpchar's comparison.
CREATE OPERATOR CLASS bpchar_ops
DEFAULT FOR TYPE bpchar USING dmindex AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >;

CREATE OPERATOR CLASS bytea_ops
DEFAULT FOR TYPE bytea USING dmindex AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >;

CREATE OPERATOR CLASS uuid_ops
DEFAULT FOR TYPE uuid USING dmindex AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >;

-- numeric_ops: 1.0 and 1.00 are one key; NaN above +Infinity, as numeric orders.
CREATE OPERATOR CLASS numeric_ops
DEFAULT FOR TYPE numeric USING dmindex AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >;
