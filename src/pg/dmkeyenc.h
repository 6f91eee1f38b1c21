/*
 * dmkeyenc.h — the order-preserving ("memcomparable") byte encoding of index
 * keys (dmkeyenc.c), and the 64-bit word encodings it shares with the
 * operator classes' support functions (dmkey.c).
 *
 * The contract with the core is docs/design.md §5.2: a key is a byte string
 * whose memcmp order (shorter first on a tie) is the index's order, and the
 * keys of one index form a prefix-free set.  How the encoding meets it is
 * explained at the top of dmkeyenc.c.
 */
#ifndef DMKEYENC_H
#define DMKEYENC_H

#include "postgres.h"

#include <math.h>

#include "lib/stringinfo.h"
#include "utils/pg_locale.h"

/* ---- 64-bit words: shared by dmkey.c (FIXED8 keys) and dmkeyenc.c --------- */

#define DMKEY_SIGN			UINT64CONST(0x8000000000000000)

/*
 * The word of every NaN: the encoding of the canonical quiet NaN, which is
 * above that of +Infinity (0xFFF0000000000000) like NaN is above +Infinity
 * in PostgreSQL's float ordering.
 */
#define DMKEY_FLOAT_NAN		UINT64CONST(0xFFF8000000000000)

/* A signed integer as an unsigned word of the same order. */
static inline uint64
dmkey_from_int64(int64 v)
{
	return (uint64) v ^ DMKEY_SIGN;
}

static inline int64
dmkey_to_int64(uint64 k)
{
	return (int64) (k ^ DMKEY_SIGN);
}

/*
 * A double as an unsigned word of PostgreSQL's float order: -0 and +0 share
 * a word, every NaN has the one word above +Infinity.
 */
static inline uint64
dmkey_from_float8(float8 v)
{
	uint64		bits;

	if (isnan(v))
		return DMKEY_FLOAT_NAN;
	if (v == 0.0)
		v = 0.0;				/* -0 == +0, so they must share a key */
	memcpy(&bits, &v, sizeof(bits));

	/*
	 * Positive doubles already order like their bit patterns; setting the
	 * sign bit puts them above all negative ones.  Negative doubles order in
	 * reverse of their bit patterns, which inverting them all fixes (and
	 * clears the sign bit).
	 */
	if (bits & DMKEY_SIGN)
		return ~bits;
	return bits | DMKEY_SIGN;
}

/* ---- byte keys (dmkeyenc.c) ------------------------------------------------ */

/*
 * The key domain of a type: values of types of one domain encode into
 * comparable bytes, so a scan key of another type of the column's domain is
 * exact (an int8 bound on an int4 column; a name bound on a text column).
 */
typedef enum DmKeyDomain
{
	DMKEY_DOM_INTEGER,			/* int2, int4, int8 */
	DMKEY_DOM_FLOAT,			/* float4, float8 */
	DMKEY_DOM_DATE,
	DMKEY_DOM_TIMESTAMP,
	DMKEY_DOM_TIMESTAMPTZ,
	DMKEY_DOM_TIME,
	DMKEY_DOM_MONEY,
	DMKEY_DOM_OID,
	DMKEY_DOM_BOOL,
	DMKEY_DOM_UUID,
	DMKEY_DOM_NUMERIC,
	DMKEY_DOM_BYTEA,
	DMKEY_DOM_TEXT,				/* text, varchar, name: under a collation */
	DMKEY_DOM_BPCHAR			/* trailing spaces do not count */
} DmKeyDomain;

/* How a string column's characters become bytes. */
typedef enum DmKeyCollKind
{
	DMKEY_COLL_NONE,			/* not a string domain */
	DMKEY_COLL_BYTES,			/* the collation orders by bytes */
	DMKEY_COLL_ICU				/* an ICU sort key (+ the bytes, if deterministic) */
} DmKeyCollKind;

/*
 * One key column: its domain, direction, NULL placement and, for strings,
 * its collation resolved once (dmkeyenc_column_init).
 */
typedef struct DmKeyColumn
{
	DmKeyDomain domain;
	bool		desc;			/* the value's bytes complemented */
	bool		nulls_first;	/* NULL below every value (after DESC) */
	DmKeyCollKind coll;
	bool		tiebreak;		/* ICU, deterministic: append the bytes */
	pg_locale_t locale;			/* ICU only */
} DmKeyColumn;

/* The NULL markers: the first byte of every column's encoding. */
#define DMKEY_MARK_NULL_FIRST	0x00
#define DMKEY_MARK_VALUE		0x01
#define DMKEY_MARK_NULL_LAST	0x02

/*
 * The domain of typid (a domain type counts as its base type); raises
 * 0A000 for a type the encoding does not support.
 */
extern DmKeyDomain dmkeyenc_domain(Oid typid);
/* Whether typid (or a domain's base type) has a byte encoding; never raises. */
extern bool dmkeyenc_type_supported(Oid typid);

/*
 * Set up a column of type typid under collation (ignored for types that are
 * not strings).  Raises 0A000 for an unsupported type or a libc collation
 * whose order is not byte order, 42P22 for a string type without a
 * collation.  PostgreSQL's defaults: ASC NULLS LAST, DESC NULLS FIRST.
 */
extern void dmkeyenc_column_init(DmKeyColumn *col, Oid typid, Oid collation,
								 bool desc, bool nulls_first);

/*
 * Append one column's encoding (marker, then the value's bytes) to buf.
 * typid is the value's type, which must be of the column's domain (a
 * cross-type scan key); isnull encodes a NULL whatever value is.
 */
extern void dmkeyenc_append_column(StringInfo buf, const DmKeyColumn *col,
								   Oid typid, Datum value, bool isnull);

/*
 * Append the key of the first ncols columns to buf and return its length
 * in bytes (what the access method compares with the maximum key length).
 * With max >= 0 it stops as soon as the key is known to be longer than max
 * bytes (before encoding, or even detoasting, a long string: from its raw
 * size) and returns max + 1, leaving buf's tail unspecified; max < 0: no
 * limit.
 * With fewer columns than the index has, the result is a key prefix: every
 * key whose leading ncols values equal these starts with exactly these
 * bytes, and no other key does (each column's encoding is prefix-free).
 */
extern int	dmkeyenc_form_key(StringInfo buf, const DmKeyColumn *cols, int ncols,
							  const Oid *typids, const Datum *values,
							  const bool *isnull, int max);

/*
 * The prefix successor of prefix[0..len): the smallest byte string greater
 * than every string that starts with the prefix.  Appends it to out and
 * returns true; returns false (appending nothing) when there is none, i.e.
 * the prefix is empty or all 0xFF: its strings reach +infinity.  So
 * "leading columns = X" is the key range [key(X), successor(key(X))), with
 * no upper bound when this returns false.  prefix must not point into out's
 * buffer: appending may move it.
 */
extern bool dmkeyenc_prefix_successor(const uint8 *prefix, int len,
									  StringInfo out);

#endif							/* DMKEYENC_H */
