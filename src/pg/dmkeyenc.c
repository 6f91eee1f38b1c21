/*
 * dmkeyenc.c — the one order-preserving ("memcomparable") byte encoding of
 * an index's key columns: the bytes the core stores and compares as keys of
 * VAR trees (docs/design.md §5.2 is the contract, §8 the summary), plus the
 * key prefixes and prefix successors that scans turn conditions into.
 *
 * Format.  A key is the concatenation of its columns' encodings.  A column
 * is a marker byte, then (not for NULL) the value's bytes:
 *
 *   marker   0x00 NULL in a NULLS FIRST column, 0x01 a value,
 *            0x02 NULL in a NULLS LAST column
 *   value    by domain (values of types of one domain encode comparably):
 *     integer (int2/int4/int8), date, timestamp, timestamptz, time, money:
 *              the value + 2^63, 8 bytes big-endian (dmkey_from_int64)
 *     float (float4/float8): dmkey_from_float8's word, 8 bytes big-endian
 *              (-0 = +0; every NaN one word, above +Infinity)
 *     oid      4 bytes big-endian;   bool  1 byte, 0 or 1
 *     uuid     its 16 bytes (uuid compares them with memcmp)
 *     numeric  a class byte: 0x01 -Infinity, 0x02 negative, 0x03 zero,
 *              0x04 positive, 0x05 +Infinity, 0x06 NaN; a positive value
 *              0.d1d2...dn x 10^E (d1 and dn not 0; leading and trailing
 *              zeros and the scale dropped, so 1.0 and 1.00 are one key)
 *              follows with E + 2^31 (4 bytes big-endian), the digits two
 *              per byte as 1 + 10*d(i) + d(i+1) (1..100; an odd last digit
 *              is paired with 0) and a 0x00 terminator.  A negative value
 *              follows with the complement of its absolute value's bytes.
 *     bytea    the bytes, each 0x00 written 0x00 0xFF, then 0x00 0x00
 *     text, varchar, name (one domain), bpchar (trailing spaces dropped
 *              first, as bpchar comparison does), under the collation:
 *              "C"/"POSIX", and libc locales that order by bytes: the
 *              string's bytes escaped as bytea's;  ICU: the ICU sort key
 *              escaped the same way, then for a deterministic collation the
 *              string's bytes escaped (PostgreSQL breaks ties between
 *              strings such a collation calls equal by their bytes; a
 *              nondeterministic collation's equal strings must stay equal,
 *              so they get the sort key alone).
 *   DESC     the value's bytes (not the marker) complemented.
 *
 * Why memcmp order is the index order.  Fixed-width encodings are
 * order-preserving words.  Escaping: let two byte strings first differ at
 * byte i (a[i] < b[i]): the encodings agree up to there and then differ
 * the same way, 0x00 becoming 0x00 0xFF still below any b[i] >= 0x01; if a
 * is a proper prefix of b, a's terminator 0x00 0x00 is below b's next byte,
 * which is either a byte >= 0x01 or 0x00 0xFF.  So escaped strings compare
 * like the strings (shorter first on a tie, as memcmp-based comparisons
 * do).  Numeric: E + 2^31 big-endian orders like the signed E, and a
 * larger E means a larger positive value (d1 != 0); with
 * equal E the digit strings compare left to right with missing digits as 0,
 * which the pairs do (the padding 0 is that missing digit, and a string that
 * ends, 0x00, is below one that goes on, >= 0x01, and that one is larger
 * because its remaining digits are not all 0).  Complementing the bytes of a
 * prefix-free set reverses their memcmp order (they always differ at a byte
 * before either ends), which gives negative numbers and DESC columns.  ICU
 * promises that comparing sort keys gives ucol_strcoll's result; ICU 72
 * breaks that promise for collations with shifted variable characters or
 * backwards secondary weights, which are refused
 * (dmkeyenc_check_icu_sortkeys).
 *
 * Why the keys are prefix-free, and concatenation keeps the order.  Every
 * column encoding is prefix-free within its domain: fixed widths are; in an
 * escaped string every 0x00 but the terminator's first is followed by 0xFF,
 * so it ends at its first two consecutive 0x00 bytes and a reader knows its
 * end without knowing its length: no encoding is a proper prefix of
 * another; numeric classes differ in their first byte, and after the
 * fixed-width exponent the digit bytes (1..100) end at the first 0x00 (0xFF
 * when complemented, the digits then 155..254); the sort key and
 * the tiebreak are two terminated strings.  NULL is one marker byte that
 * no value's marker equals.  In a concatenation of prefix-free codes two
 * keys agree column by column until the first column whose encodings
 * differ, and there they differ at a byte inside both, so memcmp decides by
 * that column alone: the multi-column order is lexicographic, and a key is
 * never a proper prefix of another key of the same columns.
 *
 * Scans.  The key of the first k columns is a key prefix: exactly the keys
 * whose leading k values equal these start with it.  "Leading columns = X"
 * is the byte range [prefix(X), successor(prefix(X))).
 *
 * Collations.  "C" and "POSIX" order by bytes.  A libc locale orders by
 * bytes when its LC_COLLATE has no rules: glibc's strcoll and strxfrm then
 * are strcmp and a copy (C.UTF-8 since glibc 2.35, which orders by code
 * point, i.e. UTF-8 bytes); that is checked, not assumed from the name.
 * Other libc collations are refused (0A000): strxfrm is not shown to agree
 * with strcoll for them.
 */
#include "postgres.h"

#include <langinfo.h>

#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "access/detoast.h"
#include "utils/builtins.h"
#include "utils/cash.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "dmkeyenc.h"

/* numeric classes: the first byte of a numeric value's encoding */
#define DMKEY_NUM_NEG_INF	0x01
#define DMKEY_NUM_NEG		0x02
#define DMKEY_NUM_ZERO		0x03
#define DMKEY_NUM_POS		0x04
#define DMKEY_NUM_POS_INF	0x05
#define DMKEY_NUM_NAN		0x06

/* ---- domains ---------------------------------------------------------------- */

/* The domain of a built-in type; false if the type has none. */
static bool
dmkeyenc_type_domain(Oid typid, DmKeyDomain *domain)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			*domain = DMKEY_DOM_INTEGER;
			return true;
		case FLOAT4OID:
		case FLOAT8OID:
			*domain = DMKEY_DOM_FLOAT;
			return true;
		case DATEOID:
			*domain = DMKEY_DOM_DATE;
			return true;
		case TIMESTAMPOID:
			*domain = DMKEY_DOM_TIMESTAMP;
			return true;
		case TIMESTAMPTZOID:
			*domain = DMKEY_DOM_TIMESTAMPTZ;
			return true;
		case TIMEOID:
			*domain = DMKEY_DOM_TIME;
			return true;
		case CASHOID:
			*domain = DMKEY_DOM_MONEY;
			return true;
		case OIDOID:
			*domain = DMKEY_DOM_OID;
			return true;
		case BOOLOID:
			*domain = DMKEY_DOM_BOOL;
			return true;
		case UUIDOID:
			*domain = DMKEY_DOM_UUID;
			return true;
		case NUMERICOID:
			*domain = DMKEY_DOM_NUMERIC;
			return true;
		case BYTEAOID:
			*domain = DMKEY_DOM_BYTEA;
			return true;
		case TEXTOID:
		case VARCHAROID:
		case NAMEOID:
			*domain = DMKEY_DOM_TEXT;
			return true;
		case BPCHAROID:
			*domain = DMKEY_DOM_BPCHAR;
			return true;
		default:
			return false;
	}
}

/*
 * The built-in type whose representation a value of typid has: typid
 * itself, or a domain type's base type.  Raises 0A000 if it has no domain.
 */
static Oid
dmkeyenc_base_type(Oid typid, DmKeyDomain *domain)
{
	Oid			base;

	if (dmkeyenc_type_domain(typid, domain))
		return typid;
	base = getBaseType(typid);
	if (base == typid || !dmkeyenc_type_domain(base, domain))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("dmindex keys cannot hold values of type %s",
						format_type_be(typid)),
				 errdetail("Keys are integers, floats, numeric, date and time types, money, oid, bool, uuid, bytea and strings.")));
	return base;
}

bool
dmkeyenc_type_supported(Oid typid)
{
	DmKeyDomain domain;

	return dmkeyenc_type_domain(typid, &domain) ||
		dmkeyenc_type_domain(getBaseType(typid), &domain);
}

DmKeyDomain
dmkeyenc_domain(Oid typid)
{
	DmKeyDomain domain;

	(void) dmkeyenc_base_type(typid, &domain);
	return domain;
}

/* ---- collations --------------------------------------------------------------- */

/*
 * Whether a libc locale (NULL: the database's, i.e. the process's
 * LC_COLLATE) orders strings by their bytes.  glibc's strcoll_l starts with
 * "if the locale has no collation rules, return strcmp" (and strxfrm_l then
 * copies), so a locale with zero rules orders exactly by bytes.
 * _NL_COLLATE_NRULES is a word item: nl_langinfo returns the item's union
 * slot, whose word shares the pointer's first bytes, so copying those bytes
 * out reads it on either byte order.  Elsewhere nothing is known: false.
 */
static bool
dmkeyenc_libc_orders_by_bytes(pg_locale_t locale)
{
#if defined(__GLIBC__) && defined(HAVE_LOCALE_T)
	char	   *item;
	uint32		nrules;

	if (locale)
		item = nl_langinfo_l(_NL_COLLATE_NRULES, locale->info.lt);
	else
		item = nl_langinfo(_NL_COLLATE_NRULES);
	memcpy(&nrules, &item, sizeof(nrules));
	return nrules == 0;
#else
	return false;
#endif
}

#ifdef USE_ICU
/*
 * Refuse an ICU collation whose sort keys are known to disagree with
 * ucol_strcoll, which is what PostgreSQL compares with.  With variable
 * characters shifted (alternate=shifted, e.g. "th", "und-u-ka-shifted") or
 * backwards secondary weights (French, e.g. "fr-CA"), ICU 72's strcoll and
 * sort keys differ when, after a common prefix, one string goes on with a
 * completely ignorable character and a combining mark: under "fr-CA"
 * 'n-tilde' < 'n-tilde ZWJ ring above' by strcoll, > by sort key; under
 * shifted, '-' ZWSP U+0308 and '-' have equal sort keys but strcoll calls
 * them different.  Either would be a wrong or missing row.
 */
static void
dmkeyenc_check_icu_sortkeys(pg_locale_t locale, Oid collation)
{
	UErrorCode	status = U_ZERO_ERROR;
	UColAttributeValue alternate;
	UColAttributeValue french;

	alternate = ucol_getAttribute(locale->info.icu.ucol,
								  UCOL_ALTERNATE_HANDLING, &status);
	french = ucol_getAttribute(locale->info.icu.ucol,
							   UCOL_FRENCH_COLLATION, &status);
	if (U_FAILURE(status))
		elog(ERROR, "could not read the attributes of ICU collation %u: %s",
			 collation, u_errorName(status));
	if (alternate == UCOL_SHIFTED || french == UCOL_ON)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("dmindex cannot encode strings under collation \"%s\"",
						get_collation_name(collation)),
				 errdetail("ICU's sort keys do not always order like its string comparison when %s.",
						   alternate == UCOL_SHIFTED ? "variable characters are shifted"
						   : "secondary differences are compared backwards"),
				 errhint("Use COLLATE \"C\" or an ICU collation such as \"und-x-icu\".")));
}
#endif

/* Resolve how a string column's collation turns strings into bytes. */
static void
dmkeyenc_resolve_collation(DmKeyColumn *col, Oid collation)
{
	pg_locale_t locale;

	if (!OidIsValid(collation))
		ereport(ERROR,
				(errcode(ERRCODE_INDETERMINATE_COLLATION),
				 errmsg("could not determine which collation to use for a dmindex key"),
				 errhint("Use the COLLATE clause to set the collation explicitly.")));

	if (lc_collate_is_c(collation))
	{
		col->coll = DMKEY_COLL_BYTES;
		return;
	}

	/* NULL for the database's default collation when that is libc's */
	locale = pg_newlocale_from_collation(collation);
#ifdef USE_ICU
	if (locale && locale->provider == COLLPROVIDER_ICU)
	{
		dmkeyenc_check_icu_sortkeys(locale, collation);
		col->coll = DMKEY_COLL_ICU;
		col->tiebreak = locale->deterministic;
		col->locale = locale;
		return;
	}
#endif
	if (dmkeyenc_libc_orders_by_bytes(locale))
	{
		col->coll = DMKEY_COLL_BYTES;
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("dmindex cannot encode strings under collation \"%s\"",
					get_collation_name(collation)),
			 errdetail("dmindex keys are compared as bytes, but the libc locale of this collation orders strings by rules of its own."),
			 errhint("Use COLLATE \"C\" or an ICU collation such as \"und-x-icu\".")));
}

void
dmkeyenc_column_init(DmKeyColumn *col, Oid typid, Oid collation,
					 bool desc, bool nulls_first)
{
	memset(col, 0, sizeof(*col));
	col->domain = dmkeyenc_domain(typid);
	col->desc = desc;
	col->nulls_first = nulls_first;
	col->coll = DMKEY_COLL_NONE;
	if (col->domain == DMKEY_DOM_TEXT || col->domain == DMKEY_DOM_BPCHAR)
		dmkeyenc_resolve_collation(col, collation);
}

/* ---- the value encodings ----------------------------------------------------- */

static void
dmkeyenc_put_be64(StringInfo buf, uint64 w)
{
	char		b[8];
	int			i;

	for (i = 0; i < 8; i++)
		b[i] = (char) (w >> (56 - 8 * i));
	appendBinaryStringInfo(buf, b, 8);
}

static void
dmkeyenc_put_be32(StringInfo buf, uint32 w)
{
	char		b[4];
	int			i;

	for (i = 0; i < 4; i++)
		b[i] = (char) (w >> (24 - 8 * i));
	appendBinaryStringInfo(buf, b, 4);
}

/* Bytes escaped (0x00 -> 0x00 0xFF) and terminated (0x00 0x00). */
static void
dmkeyenc_put_escaped(StringInfo buf, const char *data, size_t len)
{
	const char *p = data;
	const char *end = data + len;

	enlargeStringInfo(buf, len + 2);
	while (p < end)
	{
		const char *zero = memchr(p, 0, end - p);

		if (zero == NULL)
		{
			appendBinaryStringInfo(buf, p, end - p);
			break;
		}
		appendBinaryStringInfo(buf, p, zero - p + 1);	/* up to the 0x00 */
		appendStringInfoCharMacro(buf, (char) 0xFF);
		p = zero + 1;
	}
	appendStringInfoCharMacro(buf, 0);
	appendStringInfoCharMacro(buf, 0);
}

#ifdef USE_ICU
/* The ICU sort key of a string in the database's encoding, escaped. */
static void
dmkeyenc_put_icu_sortkey(StringInfo buf, pg_locale_t locale,
						 const char *s, size_t len)
{
	UChar	   *ustr;
	int32_t		ulen;
	uint8_t		local[256];
	uint8_t    *key = local;
	int32_t		need;

	ulen = icu_to_uchar(&ustr, s, len);
	need = ucol_getSortKey(locale->info.icu.ucol, ustr, ulen,
						   key, sizeof(local));
	if (need > (int32_t) sizeof(local))
	{
		int32_t		got;

		key = palloc(need);
		got = ucol_getSortKey(locale->info.icu.ucol, ustr, ulen, key, need);
		if (got != need)
			elog(ERROR, "ICU sort key changed length from %d to %d bytes",
				 (int) need, (int) got);
	}
	/* the length counts a terminating 0x00, which is not part of the key */
	if (need < 1 || key[need - 1] != 0)
		elog(ERROR, "ICU returned no sort key for a string of %zu bytes", len);
	dmkeyenc_put_escaped(buf, (const char *) key, need - 1);
	if (key != local)
		pfree(key);
	pfree(ustr);
}
#endif

/* A string of a string domain under the column's collation. */
static void
dmkeyenc_put_string(StringInfo buf, const DmKeyColumn *col,
					const char *s, size_t len)
{
	switch (col->coll)
	{
		case DMKEY_COLL_BYTES:
			dmkeyenc_put_escaped(buf, s, len);
			return;
		case DMKEY_COLL_ICU:
#ifdef USE_ICU
			dmkeyenc_put_icu_sortkey(buf, col->locale, s, len);
			if (col->tiebreak)
				dmkeyenc_put_escaped(buf, s, len);
			return;
#endif
		case DMKEY_COLL_NONE:
			break;
	}
	elog(ERROR, "dmindex key column of a string type has no collation set up");
}

/*
 * A numeric: see the top of the file.  numeric_normalize gives a finite
 * value exactly, in plain decimal notation without trailing fractional
 * zeros ("-0.00123", "1000"), which is all the encoding needs.
 */
static void
dmkeyenc_put_numeric(StringInfo buf, Numeric num)
{
	char	   *str;
	const char *p;
	char	   *digits;
	bool		neg;
	int			n = 0;
	int			intlen = -1;
	int			lead = 0;
	int			exponent;
	int			start;
	int			i;

	if (numeric_is_nan(num))
	{
		appendStringInfoChar(buf, DMKEY_NUM_NAN);
		return;
	}
	if (numeric_is_inf(num))
	{
		/* numeric_out: "Infinity" or "-Infinity" */
		str = DatumGetCString(DirectFunctionCall1(numeric_out,
												  NumericGetDatum(num)));
		appendStringInfoChar(buf, str[0] == '-' ? DMKEY_NUM_NEG_INF
							 : DMKEY_NUM_POS_INF);
		pfree(str);
		return;
	}
	str = numeric_normalize(num);
	neg = (str[0] == '-');

	/* the digits without the point; intlen of them before it */
	digits = palloc(strlen(str) + 1);
	for (p = str + (neg ? 1 : 0); *p; p++)
	{
		if (*p == '.')
			intlen = n;
		else if (*p >= '0' && *p <= '9')
			digits[n++] = *p;
		else
			elog(ERROR, "unexpected character in normalized numeric \"%s\"", str);
	}
	if (intlen < 0)
		intlen = n;
	while (lead < n && digits[lead] == '0')
		lead++;
	if (lead == n)
	{
		appendStringInfoChar(buf, DMKEY_NUM_ZERO);	/* 0, 0.000, -0 */
		pfree(digits);
		pfree(str);
		return;
	}
	while (digits[n - 1] == '0')
		n--;
	/* value = 0.digits[lead..n) x 10^exponent */
	exponent = intlen - lead;

	appendStringInfoChar(buf, neg ? DMKEY_NUM_NEG : DMKEY_NUM_POS);
	start = buf->len;
	dmkeyenc_put_be32(buf, (uint32) exponent ^ UINT32_C(0x80000000));
	for (i = lead; i < n; i += 2)
	{
		int			hi = digits[i] - '0';
		int			lo = (i + 1 < n) ? digits[i + 1] - '0' : 0;

		appendStringInfoChar(buf, (char) (1 + 10 * hi + lo));
	}
	appendStringInfoChar(buf, 0);
	if (neg)
	{
		for (i = start; i < buf->len; i++)
			buf->data[i] = (char) ~buf->data[i];
	}
	pfree(digits);
	pfree(str);
}

/* A varlena argument detoasted; freed again if that made a copy. */
#define DMKEY_FREE_IF_COPY(ptr, datum) \
	do { if ((Pointer) (ptr) != DatumGetPointer(datum)) pfree(ptr); } while (0)

/* The value's bytes (no marker, not complemented) of a value of base type typid. */
static void
dmkeyenc_put_value(StringInfo buf, const DmKeyColumn *col, Oid typid,
				   Datum value)
{
	switch (typid)
	{
		case INT2OID:
			dmkeyenc_put_be64(buf, dmkey_from_int64(DatumGetInt16(value)));
			break;
		case INT4OID:
			dmkeyenc_put_be64(buf, dmkey_from_int64(DatumGetInt32(value)));
			break;
		case INT8OID:
			dmkeyenc_put_be64(buf, dmkey_from_int64(DatumGetInt64(value)));
			break;
		case FLOAT4OID:
			/* a float4 becomes a double exactly, as float48lt does too */
			dmkeyenc_put_be64(buf, dmkey_from_float8((float8) DatumGetFloat4(value)));
			break;
		case FLOAT8OID:
			dmkeyenc_put_be64(buf, dmkey_from_float8(DatumGetFloat8(value)));
			break;
		case DATEOID:
			dmkeyenc_put_be64(buf, dmkey_from_int64(DatumGetDateADT(value)));
			break;
		case TIMESTAMPOID:
			dmkeyenc_put_be64(buf, dmkey_from_int64(DatumGetTimestamp(value)));
			break;
		case TIMESTAMPTZOID:
			dmkeyenc_put_be64(buf, dmkey_from_int64(DatumGetTimestampTz(value)));
			break;
		case TIMEOID:
			dmkeyenc_put_be64(buf, dmkey_from_int64(DatumGetTimeADT(value)));
			break;
		case CASHOID:
			dmkeyenc_put_be64(buf, dmkey_from_int64(DatumGetCash(value)));
			break;
		case OIDOID:
			dmkeyenc_put_be32(buf, DatumGetObjectId(value));
			break;
		case BOOLOID:
			appendStringInfoChar(buf, DatumGetBool(value) ? 1 : 0);
			break;
		case UUIDOID:
			appendBinaryStringInfo(buf, (const char *) DatumGetUUIDP(value)->data,
								   UUID_LEN);
			break;
		case NUMERICOID:
			{
				Numeric		num = DatumGetNumeric(value);

				dmkeyenc_put_numeric(buf, num);
				DMKEY_FREE_IF_COPY(num, value);
				break;
			}
		case BYTEAOID:
			{
				bytea	   *b = DatumGetByteaPP(value);

				dmkeyenc_put_escaped(buf, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
				DMKEY_FREE_IF_COPY(b, value);
				break;
			}
		case TEXTOID:
		case VARCHAROID:
			{
				text	   *t = DatumGetTextPP(value);

				dmkeyenc_put_string(buf, col, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
				DMKEY_FREE_IF_COPY(t, value);
				break;
			}
		case NAMEOID:
			{
				const char *s = NameStr(*DatumGetName(value));

				dmkeyenc_put_string(buf, col, s, strnlen(s, NAMEDATALEN));
				break;
			}
		case BPCHAROID:
			{
				BpChar	   *t = DatumGetBpCharPP(value);

				/* trailing spaces are insignificant, as in bpcharcmp */
				dmkeyenc_put_string(buf, col, VARDATA_ANY(t),
									bpchartruelen(VARDATA_ANY(t),
												  VARSIZE_ANY_EXHDR(t)));
				DMKEY_FREE_IF_COPY(t, value);
				break;
			}
		default:
			elog(ERROR, "dmindex key: no encoding for type %u", typid);
	}
}

/* ---- columns, keys, prefixes --------------------------------------------------- */

void
dmkeyenc_append_column(StringInfo buf, const DmKeyColumn *col,
					   Oid typid, Datum value, bool isnull)
{
	DmKeyDomain domain;
	Oid			base;
	int			start;
	int			i;

	if (isnull)
	{
		appendStringInfoChar(buf, col->nulls_first ? DMKEY_MARK_NULL_FIRST
							 : DMKEY_MARK_NULL_LAST);
		return;
	}

	base = dmkeyenc_base_type(typid, &domain);
	if (domain != col->domain)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("a value of type %s cannot be compared with this dmindex key column",
						format_type_be(typid)),
				 errdetail("Only types whose keys share one encoding are compared with each other.")));

	appendStringInfoChar(buf, DMKEY_MARK_VALUE);
	start = buf->len;
	dmkeyenc_put_value(buf, col, base, value);
	if (col->desc)
	{
		for (i = start; i < buf->len; i++)
			buf->data[i] = (char) ~buf->data[i];
	}
}

/*
 * A lower bound of the bytes a non-NULL value of base type typid adds to a
 * key (its marker included), known without detoasting it: escaped strings
 * are at least their raw bytes and the terminator (the deterministic ICU
 * case adds the bytes as a tiebreak after the sort key).  0 where no useful
 * bound is cheap (fixed-width types, bpchar's trailing spaces, numeric,
 * nondeterministic ICU sort keys).
 */
static Size
dmkeyenc_min_bytes(const DmKeyColumn *col, Oid typid, Datum value)
{
	switch (typid)
	{
		case BYTEAOID:
			return 1 + (toast_raw_datum_size(value) - VARHDRSZ) + 2;
		case TEXTOID:
		case VARCHAROID:
			if (col->coll == DMKEY_COLL_BYTES || col->tiebreak)
				return 1 + (toast_raw_datum_size(value) - VARHDRSZ) + 2;
			return 0;
		default:
			return 0;
	}
}

int
dmkeyenc_form_key(StringInfo buf, const DmKeyColumn *cols, int ncols,
				  const Oid *typids, const Datum *values, const bool *isnull,
				  int max)
{
	int			start = buf->len;
	int			i;

	for (i = 0; i < ncols; i++)
	{
		if (max >= 0 && !isnull[i])
		{
			DmKeyDomain domain;
			Oid			base = dmkeyenc_base_type(typids[i], &domain);
			Size		need = dmkeyenc_min_bytes(&cols[i], base, values[i]);

			/* a 600 MB string is refused without being read, let alone escaped */
			if (need > 0 && (Size) (buf->len - start) + need > (Size) max)
				return max + 1;
		}
		dmkeyenc_append_column(buf, &cols[i], typids[i], values[i], isnull[i]);
		if (max >= 0 && buf->len - start > max)
			return max + 1;
	}
	return buf->len - start;
}

/*
 * Write P = Q c F, with c the last byte that is not 0xFF and F all 0xFF.
 * Every string that starts with P starts with Q c, so is below Q (c+1).
 * Nothing lies between them all and Q (c+1): such a string would be Q c T
 * with T above every string F X; but if T starts with F, T 0x00 is such a
 * string above T, and if it does not, T is below F itself.  Without a c (P empty or all 0xFF) the
 * strings that start with P have no upper bound.
 */
bool
dmkeyenc_prefix_successor(const uint8 *prefix, int len, StringInfo out)
{
	int			n = len;

	while (n > 0 && prefix[n - 1] == 0xFF)
		n--;
	if (n == 0)
		return false;
	appendBinaryStringInfo(out, (const char *) prefix, n);
	out->data[out->len - 1] = (char) (prefix[n - 1] + 1);
	return true;
}
