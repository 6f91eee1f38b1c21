/*
 * dmscankey.c — a scan's keys become the entry ranges it reads, like
 * nbtree's _bt_preprocess_keys with its array keys, but simpler: there is
 * one key column and every key's argument becomes a key in the one domain
 * of the operator family (dmkey.c), so the ordinary keys together always
 * describe a single range of entries.
 *
 * "col = ANY(array)" (SK_SEARCHARRAY, amsearcharray): the distinct elements
 * become one point range each, ascending in the index's order, so a plain
 * scan returns them in order (the planner relies on that for ORDER BY) and
 * never returns an entry twice; NULL elements match nothing.  Several such
 * keys on the column intersect.  "col < ANY(array)" is "col < max(array)",
 * "col > ANY(array)" "col > min(array)".  The ranges are then cut to the
 * ordinary keys' range; the scan (dmscan.c) reads them one after the other.
 */
#include "postgres.h"

#include "access/skey.h"
#include "access/stratnum.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "dmam.h"

/* The largest entry with a non-NULL key: an inclusive upper bound. */
#define NONNULL_MAX	dm_entry_make(UINT64_MAX, DM_TID_MAX)

/* Raise the lower bound to (e, incl) if that is tighter. */
static void
tighten_lo(dm_range *r, dm_entry e, bool incl)
{
	int			c = dm_entry_cmp(e, r->lo);

	if (c > 0 || (c == 0 && !incl))
	{
		r->lo = e;
		r->lo_incl = incl && (c > 0 || r->lo_incl);
	}
}

/* Lower the upper bound to (e, incl) if that is tighter. */
static void
tighten_hi(dm_range *r, dm_entry e, bool incl)
{
	int			c = dm_entry_cmp(e, r->hi);

	if (c < 0 || (c == 0 && !incl))
	{
		r->hi = e;
		r->hi_incl = incl && (c < 0 || r->hi_incl);
	}
}

/* Narrow r by "col <strategy> k" (a non-NULL comparison). */
static void
apply_comparison(dm_range *r, int strategy, uint64 k)
{
	switch (strategy)
	{
		case BTLessStrategyNumber:
			tighten_hi(r, dm_key_hi(k, 0), false);
			break;
		case BTLessEqualStrategyNumber:
			tighten_hi(r, dm_key_hi(k, 1), true);
			break;
		case BTEqualStrategyNumber:
			tighten_lo(r, dm_key_lo(k, 1), true);
			tighten_hi(r, dm_key_hi(k, 1), true);
			break;
		case BTGreaterEqualStrategyNumber:
			tighten_lo(r, dm_key_lo(k, 1), true);
			break;
		case BTGreaterStrategyNumber:
			tighten_lo(r, dm_key_lo(k, 0), false);
			break;
		default:
			elog(ERROR, "invalid dmindex strategy number %d", strategy);
	}
	/* an ordinary comparison is never true for NULL */
	tighten_hi(r, NONNULL_MAX, true);
}

bool
dmindex_range_empty(const dm_range *r)
{
	int			c = dm_entry_cmp(r->lo, r->hi);

	return c > 0 || (c == 0 && !(r->lo_incl && r->hi_incl));
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a,
				y = *(const uint64 *) b;

	return x < y ? -1 : x > y;
}

Datum *
dmindex_array_elements(ScanKey key, Oid *elemtype, int *n)
{
	ArrayType  *arr = DatumGetArrayTypeP(key->sk_argument);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;

	*elemtype = ARR_ELEMTYPE(arr);
	get_typlenbyvalalign(*elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, *elemtype, typlen, typbyval, typalign, &elems, &nulls, &nelems);
	*n = 0;
	for (int i = 0; i < nelems; i++)
		if (!nulls[i])
			elems[(*n)++] = elems[i];
	pfree(nulls);
	return elems;
}

/*
 * The encoded non-NULL elements of an array key, sorted and distinct;
 * *n = how many.
 */
static uint64 *
array_keys(Relation index, ScanKey key, int *n)
{
	Oid			elemtype;
	int			m;
	Datum	   *elems = dmindex_array_elements(key, &elemtype, &m);
	uint64	   *keys = palloc(sizeof(uint64) * Max(m, 1));

	for (int i = 0; i < m; i++)
		keys[i] = dmindex_encode(index, elemtype, elems[i]);
	qsort(keys, m, sizeof(uint64), cmp_u64);
	*n = 0;
	for (int i = 0; i < m; i++)
		if (*n == 0 || keys[i] != keys[*n - 1])
			keys[(*n)++] = keys[i];
	pfree(elems);
	return keys;
}

/* The sorted keys present in both a[0..na) and b[0..nb); into a, returns how many. */
static int
intersect_keys(uint64 *a, int na, const uint64 *b, int nb)
{
	int			i = 0,
				j = 0,
				n = 0;

	while (i < na && j < nb)
	{
		if (a[i] < b[j])
			i++;
		else if (a[i] > b[j])
			j++;
		else
		{
			a[n++] = a[i];
			i++, j++;
		}
	}
	return n;
}

int
dmindex_keys_to_ranges(Relation index, ScanKey keys, int nkeys, dm_range **out)
{
	dm_range	base = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, 0};
	uint64	   *points = NULL;
	int			npoints = -1;	/* -1: no "= ANY" key */
	dm_range   *ranges;
	int			n = 0;

	*out = NULL;
	if (dmindex_key_format(index) == DM_KEY_VAR)
		return dmindex_var_keys_to_ranges(index, keys, nkeys, out);
	for (int i = 0; i < nkeys; i++)
	{
		ScanKey		key = &keys[i];

		if (key->sk_attno != 1)
			elog(ERROR, "dmindex scan key on attribute %d, but the index has one column",
				 key->sk_attno);
		if (key->sk_flags & (SK_ROW_HEADER | SK_ROW_MEMBER | SK_ORDER_BY))
			elog(ERROR, "unsupported dmindex scan key flags 0x%x", key->sk_flags);

		if (key->sk_flags & SK_ISNULL)
		{
			if (key->sk_flags & SK_SEARCHNULL)
				tighten_lo(&base, dm_entry_null(0), true);	/* NULLs: key UINT64_MAX, DM_TID_NULL */
			else if (key->sk_flags & SK_SEARCHNOTNULL)
				tighten_hi(&base, NONNULL_MAX, true);
			else
				return 0;		/* "col op NULL" is never true (nor is "= ANY(NULL)") */
			continue;
		}
		if (key->sk_flags & SK_SEARCHARRAY)
		{
			int			m;
			uint64	   *elems = array_keys(index, key, &m);

			if (m == 0)
				return 0;		/* an empty array, or only NULLs: nothing matches */
			if (key->sk_strategy == BTEqualStrategyNumber)
			{
				if (npoints < 0)
				{
					points = elems;
					npoints = m;
				}
				else
					npoints = intersect_keys(points, npoints, elems, m);
				if (npoints == 0)
					return 0;
			}
			else if (key->sk_strategy == BTLessStrategyNumber ||
					 key->sk_strategy == BTLessEqualStrategyNumber)
				apply_comparison(&base, key->sk_strategy, elems[m - 1]);	/* below the largest */
			else
				apply_comparison(&base, key->sk_strategy, elems[0]);	/* above the smallest */
			continue;
		}
		apply_comparison(&base, key->sk_strategy, dmindex_encode(index, key->sk_subtype, key->sk_argument));
	}
	if (dmindex_range_empty(&base))
		return 0;
	if (npoints < 0)
	{
		ranges = palloc(sizeof(dm_range));
		ranges[n++] = base;
	}
	else
	{
		ranges = palloc(sizeof(dm_range) * npoints);
		for (int i = 0; i < npoints; i++)
		{
			dm_range	r = base;

			apply_comparison(&r, BTEqualStrategyNumber, points[i]);
			if (!dmindex_range_empty(&r))
				ranges[n++] = r;
		}
	}
	*out = ranges;
	return n;
}
