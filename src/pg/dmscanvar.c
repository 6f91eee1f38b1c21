/*
 * dmscanvar.c — a scan's keys become the entry ranges it reads, for
 * indexes of key format VAR (byte keys, dmkeyenc.c; dmscankey.c does
 * FIXED8 indexes).
 *
 * A key is the concatenation of its columns' encodings, each a marker byte
 * and the value's bytes (complemented for DESC), and each prefix-free.  So
 * "the leading columns equal X" is the byte range [P, successor(P)) where
 * P is X's encoding (dmkeyenc_prefix_successor), and a comparison on the
 * next column narrows that to a byte range inside it:
 *
 *   ASC column    col < v   [P, P v)        col <= v  [P, P succ(v))
 *                 col > v   [P succ(v), ..) col >= v  [P v, ..)
 *   DESC column   the same with < and > exchanged (bytes complemented)
 *
 * where v is the column's encoding of the value (marker 0x01 first), and
 * every comparison also keeps NULLs out: values lie in [P 0x01, P 0x02).
 * IS NULL is the point of the column's NULL marker; "col = ANY(array)"
 * gives one point per distinct element, so a scan reads one range per
 * combination of points of the leading columns, in byte order, which is
 * the index order (and the planner's order for ORDER BY: DESC and NULLS
 * FIRST columns are encoded that way).  Each range lies inside its own
 * prefix's [P, successor(P)), so the ranges are disjoint and no entry is
 * returned twice.
 *
 * Bounds are byte strings turned into entries (prefix word, suffix) with
 * tid 0: a key that starts with a bound's bytes is >= (bound, 0), and keys
 * of an index form a prefix-free set, so no key is a proper prefix of a
 * bound that ends in a zero byte (which the zero-padded prefix word could
 * not tell apart).
 *
 * Exactness.  The columns after the first one that is not all points, and
 * conditions the ranges cannot express, are not used: the ranges are a
 * superset of the matching entries, and the scan (dmscan.c) has the
 * executor recheck every row.  Bounds longer than the tree's maximum key
 * are loosened to fit (a lower bound cut to the maximum, an upper one to
 * the successor of its cut), and points longer than the maximum match no
 * key at all.
 */
#include "postgres.h"

#include "access/skey.h"
#include "access/stratnum.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "dmam.h"

/* Combinations of "= ANY" points beyond this: later columns are left to the recheck. */
#define MAX_PREFIXES 4096

typedef struct Bytes
{
	char	   *data;
	int			len;
} Bytes;

/* What the keys say about one column, as byte strings of its encoding. */
typedef struct ColCond
{
	bool		has_points;		/* the column is one of points[0..npoints) (sorted) */
	Bytes	   *points;
	int			npoints;
	bool		has_lo;			/* the column's encoding is >= lo */
	Bytes		lo;
	bool		has_hi;			/* ... and < hi */
	Bytes		hi;
} ColCond;

/* memcmp order, the shorter first on a tie: the order of keys (§5.2) */
static int
bytes_cmp(const Bytes *a, const Bytes *b)
{
	int			c = memcmp(a->data, b->data, Min(a->len, b->len));

	if (c != 0)
		return c;
	return a->len < b->len ? -1 : a->len > b->len;
}

static int
bytes_qcmp(const void *a, const void *b)
{
	return bytes_cmp((const Bytes *) a, (const Bytes *) b);
}

static Bytes
bytes_concat(const Bytes *a, const Bytes *b)
{
	Bytes		r;

	r.len = a->len + b->len;
	r.data = palloc(Max(r.len, 1));
	memcpy(r.data, a->data, a->len);
	memcpy(r.data + a->len, b->data, b->len);
	return r;
}

/* The prefix successor; false if there is none (all 0xFF, or empty). */
static bool
bytes_successor(const Bytes *a, Bytes *out)
{
	StringInfoData buf;

	initStringInfo(&buf);
	if (!dmkeyenc_prefix_successor((const uint8 *) a->data, a->len, &buf))
	{
		pfree(buf.data);
		return false;
	}
	out->data = buf.data;
	out->len = buf.len;
	return true;
}

/* One column's encoding (marker and value) of a value of type typid. */
static Bytes
column_bytes(const DmKeyInfo *info, int col, Oid typid, Datum value, bool isnull)
{
	StringInfoData buf;
	Bytes		r;

	initStringInfo(&buf);
	dmkeyenc_append_column(&buf, &info->cols[col], typid, value, isnull);
	r.data = buf.data;
	r.len = buf.len;
	return r;
}

static void
tighten_lo(ColCond *c, Bytes b)
{
	if (!c->has_lo || bytes_cmp(&b, &c->lo) > 0)
		c->lo = b;
	c->has_lo = true;
}

static void
tighten_hi(ColCond *c, Bytes b)
{
	if (!c->has_hi || bytes_cmp(&b, &c->hi) < 0)
		c->hi = b;
	c->has_hi = true;
}

/* The column's values only (no NULL): [0x01, 0x02). */
static void
only_values(ColCond *c)
{
	static char value_mark = DMKEY_MARK_VALUE;
	static char after_values = DMKEY_MARK_VALUE + 1;

	tighten_lo(c, (Bytes) {&value_mark, 1});
	tighten_hi(c, (Bytes) {&after_values, 1});
}

/* Narrow the column by "col <strategy> v", v its encoding (a value's: marker 0x01). */
static void
apply_comparison(ColCond *c, bool desc, int strategy, Bytes v)
{
	Bytes		succ;

	/* a value's encoding starts with 0x01: it always has a successor */
	if (!bytes_successor(&v, &succ))
		elog(ERROR, "dmindex key column encoding without a successor");
	/* on a DESC column the bytes run against the values */
	if (desc)
	{
		switch (strategy)
		{
			case BTLessStrategyNumber:
				strategy = BTGreaterStrategyNumber;
				break;
			case BTLessEqualStrategyNumber:
				strategy = BTGreaterEqualStrategyNumber;
				break;
			case BTGreaterEqualStrategyNumber:
				strategy = BTLessEqualStrategyNumber;
				break;
			case BTGreaterStrategyNumber:
				strategy = BTLessStrategyNumber;
				break;
		}
	}
	switch (strategy)
	{
		case BTLessStrategyNumber:
			tighten_hi(c, v);
			break;
		case BTLessEqualStrategyNumber:
			tighten_hi(c, succ);
			break;
		case BTGreaterEqualStrategyNumber:
			tighten_lo(c, v);
			break;
		case BTGreaterStrategyNumber:
			tighten_lo(c, succ);
			break;
		default:
			elog(ERROR, "invalid dmindex strategy number %d", strategy);
	}
	only_values(c);
}

/* Keep the column's points that are also in b[0..nb) (sorted); false if none is left. */
static bool
intersect_points(ColCond *c, Bytes *b, int nb)
{
	int			i = 0,
				j = 0,
				n = 0;

	if (!c->has_points)
	{
		c->has_points = true;
		c->points = b;
		c->npoints = nb;
		return nb > 0;
	}
	while (i < c->npoints && j < nb)
	{
		int			cmp = bytes_cmp(&c->points[i], &b[j]);

		if (cmp < 0)
			i++;
		else if (cmp > 0)
			j++;
		else
		{
			c->points[n++] = c->points[i];
			i++, j++;
		}
	}
	c->npoints = n;
	return n > 0;
}

/* The encoded non-NULL elements of an array key, sorted by bytes and distinct. */
static Bytes *
array_points(const DmKeyInfo *info, int col, ScanKey key, int *n)
{
	Oid			elemtype;
	int			m;
	Datum	   *elems = dmindex_array_elements(key, &elemtype, &m);
	Bytes	   *pts = palloc(sizeof(Bytes) * Max(m, 1));

	for (int i = 0; i < m; i++)
		pts[i] = column_bytes(info, col, elemtype, elems[i], false);
	qsort(pts, m, sizeof(Bytes), bytes_qcmp);
	*n = 0;
	for (int i = 0; i < m; i++)
		if (*n == 0 || bytes_cmp(&pts[i], &pts[*n - 1]) != 0)
			pts[(*n)++] = pts[i];
	return pts;
}

/* Fold one scan key into its column's condition; false if nothing can match. */
static bool
add_key(const DmKeyInfo *info, ColCond *conds, ScanKey key)
{
	int			col = key->sk_attno - 1;
	ColCond    *c;
	bool		desc;

	if (col < 0 || col >= info->natts)
		elog(ERROR, "dmindex scan key on attribute %d, but the index has %d key columns",
			 key->sk_attno, info->natts);
	if (key->sk_flags & (SK_ROW_HEADER | SK_ROW_MEMBER | SK_ORDER_BY))
		elog(ERROR, "unsupported dmindex scan key flags 0x%x", key->sk_flags);
	c = &conds[col];
	desc = info->cols[col].desc;

	if (key->sk_flags & SK_ISNULL)
	{
		if (key->sk_flags & SK_SEARCHNULL)
		{
			Bytes	   *p = palloc(sizeof(Bytes));

			*p = column_bytes(info, col, info->types[col], (Datum) 0, true);
			return intersect_points(c, p, 1);
		}
		if (key->sk_flags & SK_SEARCHNOTNULL)
		{
			only_values(c);
			return true;
		}
		return false;			/* "col op NULL" is never true (nor is "= ANY(NULL)") */
	}
	if (key->sk_flags & SK_SEARCHARRAY)
	{
		int			m;
		Bytes	   *pts = array_points(info, col, key, &m);
		bool		value_max_last;

		if (m == 0)
			return false;		/* an empty array, or only NULLs */
		if (key->sk_strategy == BTEqualStrategyNumber)
			return intersect_points(c, pts, m);
		/* "col < ANY(a)" is "col < max(a)", "col > ANY(a)" "col > min(a)"; DESC bytes run backwards */
		value_max_last = !desc;
		if (key->sk_strategy == BTLessStrategyNumber || key->sk_strategy == BTLessEqualStrategyNumber)
			apply_comparison(c, desc, key->sk_strategy, pts[value_max_last ? m - 1 : 0]);
		else
			apply_comparison(c, desc, key->sk_strategy, pts[value_max_last ? 0 : m - 1]);
		return true;
	}
	{
		Oid			typid = OidIsValid(key->sk_subtype) ? key->sk_subtype : info->types[col];
		Bytes		v = column_bytes(info, col, typid, key->sk_argument, false);

		if (key->sk_strategy == BTEqualStrategyNumber)
		{
			Bytes	   *p = palloc(sizeof(Bytes));

			*p = v;
			return intersect_points(c, p, 1);
		}
		apply_comparison(c, desc, key->sk_strategy, v);
		return true;
	}
}

/* Points outside the column's range are dropped; false if none is left. */
static bool
points_in_range(ColCond *c)
{
	int			n = 0;

	for (int i = 0; i < c->npoints; i++)
	{
		if (c->has_lo && bytes_cmp(&c->points[i], &c->lo) < 0)
			continue;
		if (c->has_hi && bytes_cmp(&c->points[i], &c->hi) >= 0)
			continue;
		c->points[n++] = c->points[i];
	}
	c->npoints = n;
	return n > 0;
}

/* The entry range of byte bounds [lo, hi) (hi NULL: no upper bound), fitted to key_max. */
static dm_range
bytes_range(const Bytes *lo, const Bytes *hi, uint32 key_max)
{
	dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, 0};
	Bytes		cut;

	if (lo->len > 0)
		r.lo = dm_entry_from_bytes(lo->data, Min((uint32) lo->len, key_max), 0);
	if (hi != NULL)
	{
		if ((uint32) hi->len <= key_max)
		{
			r.hi = dm_entry_from_bytes(hi->data, hi->len, 0);
			r.hi_incl = 0;
		}
		else
		{
			/* every key below hi starts with at most key_max of its bytes: below their successor */
			Bytes		part = {hi->data, (int) key_max};

			if (bytes_successor(&part, &cut))
			{
				r.hi = dm_entry_from_bytes(cut.data, cut.len, 0);
				r.hi_incl = 0;
			}
		}
	}
	return r;
}

int
dmindex_var_keys_to_ranges(Relation index, ScanKey keys, int nkeys, dm_range **out)
{
	DmKeyInfo  *info = palloc(sizeof(DmKeyInfo));
	ColCond    *conds;
	Bytes	   *prefixes;
	int			nprefixes = 1;
	int			col;
	dm_range   *ranges;
	int			n = 0;

	*out = NULL;
	/* a copy: encoding the keys looks up types, which may free rd_amcache */
	dmindex_key_info_copy(index, info);
	conds = palloc0(sizeof(ColCond) * info->natts);
	for (int i = 0; i < nkeys; i++)
		if (!add_key(info, conds, &keys[i]))
			return 0;
	for (col = 0; col < info->natts; col++)
	{
		ColCond    *c = &conds[col];

		if (c->has_points && !points_in_range(c))
			return 0;
		if (c->has_lo && c->has_hi && bytes_cmp(&c->lo, &c->hi) >= 0)
			return 0;			/* contradictory comparisons */
	}

	/* leading columns of points: the prefixes, in byte order */
	prefixes = palloc(sizeof(Bytes));
	prefixes[0].data = "";
	prefixes[0].len = 0;
	for (col = 0; col < info->natts && conds[col].has_points; col++)
	{
		ColCond    *c = &conds[col];
		Bytes	   *next;
		int			m = 0;

		if ((int64) nprefixes * c->npoints > MAX_PREFIXES)
			break;
		next = palloc(sizeof(Bytes) * nprefixes * c->npoints);
		for (int i = 0; i < nprefixes; i++)
			for (int j = 0; j < c->npoints; j++)
			{
				Bytes		p = bytes_concat(&prefixes[i], &c->points[j]);

				/* no key is longer than key_max: none starts with p */
				if ((uint32) p.len <= info->key_max)
					next[m++] = p;
			}
		if (m == 0)
			return 0;
		prefixes = next;
		nprefixes = m;
	}

	ranges = palloc(sizeof(dm_range) * nprefixes);
	for (int i = 0; i < nprefixes; i++)
	{
		Bytes	   *p = &prefixes[i];
		Bytes		lo = *p;
		Bytes		hi;
		bool		has_hi;
		dm_range	r;

		/* the next column's comparisons, if every column before it was points */
		if (col < info->natts && !conds[col].has_points &&
			(conds[col].has_lo || conds[col].has_hi))
		{
			if (conds[col].has_lo)
				lo = bytes_concat(p, &conds[col].lo);
			if (conds[col].has_hi)
			{
				hi = bytes_concat(p, &conds[col].hi);
				has_hi = true;
			}
			else
				has_hi = bytes_successor(p, &hi);
		}
		else
			has_hi = bytes_successor(p, &hi);
		r = bytes_range(&lo, has_hi ? &hi : NULL, info->key_max);
		if (!dmindex_range_empty(&r))
			ranges[n++] = r;
	}
	*out = ranges;
	return n;
}
