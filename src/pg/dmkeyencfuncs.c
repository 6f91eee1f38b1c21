/*
 * dmkeyencfuncs.c — SQL entry points to the byte key encoding (dmkeyenc.c),
 * so that its order, equality, prefix-freeness and prefix successors can be
 * checked from SQL against the types' own comparisons (sql/keyenc.sql)
 * before and apart from any index using it:
 *
 *   dmindex_key_encode(VARIADIC "any") -> bytea
 *       the key of the arguments as columns, each ASC NULLS LAST, strings
 *       under the call's collation
 *   dmindex_key_encode_with(options text[], VARIADIC "any") -> bytea
 *       the same with one option string per column: 'asc' or 'desc',
 *       optionally followed by 'nulls first' or 'nulls last' (PostgreSQL's
 *       defaults: ASC NULLS LAST, DESC NULLS FIRST); NULL or '' = 'asc'
 *   dmindex_key_prefix_successor(bytea) -> bytea
 *       the smallest byte string above every string with that prefix, NULL
 *       when there is none (+infinity)
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "dmkeyenc.h"

PG_FUNCTION_INFO_V1(dmindex_key_encode);
PG_FUNCTION_INFO_V1(dmindex_key_encode_with);
PG_FUNCTION_INFO_V1(dmindex_key_prefix_successor);

/* The columns of a call: their types, values and NULL flags. */
typedef struct DmKeyArgs
{
	int			ncols;
	Oid		   *typids;
	Datum	   *values;
	bool	   *isnull;
} DmKeyArgs;

/*
 * The variadic arguments from position first on: the arguments themselves,
 * or the elements of the array of an explicit VARIADIC call.  Returns false
 * for an explicit VARIADIC NULL (the key is then NULL).
 */
static bool
dmkeyenc_collect_args(FunctionCallInfo fcinfo, int first, DmKeyArgs *args)
{
	int			i;

	if (get_fn_expr_variadic(fcinfo->flinfo))
	{
		ArrayType  *arr;
		Oid			elemtype;
		int16		typlen;
		bool		typbyval;
		char		typalign;

		if (PG_ARGISNULL(first))
			return false;
		arr = PG_GETARG_ARRAYTYPE_P(first);
		elemtype = ARR_ELEMTYPE(arr);
		get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
		deconstruct_array(arr, elemtype, typlen, typbyval, typalign,
						  &args->values, &args->isnull, &args->ncols);
		args->typids = palloc(sizeof(Oid) * Max(args->ncols, 1));
		for (i = 0; i < args->ncols; i++)
			args->typids[i] = elemtype;
		return true;
	}

	args->ncols = PG_NARGS() - first;
	args->typids = palloc(sizeof(Oid) * Max(args->ncols, 1));
	args->values = palloc(sizeof(Datum) * Max(args->ncols, 1));
	args->isnull = palloc(sizeof(bool) * Max(args->ncols, 1));
	for (i = 0; i < args->ncols; i++)
	{
		Oid			typid = get_fn_expr_argtype(fcinfo->flinfo, first + i);

		if (!OidIsValid(typid))
			elog(ERROR, "could not determine the type of argument %d", first + i + 1);
		if (typid == UNKNOWNOID)
			ereport(ERROR,
					(errcode(ERRCODE_INDETERMINATE_DATATYPE),
					 errmsg("could not determine data type of argument %d",
							first + i + 1),
					 errhint("Cast the argument to the type of its key column.")));
		args->typids[i] = typid;
		args->isnull[i] = PG_ARGISNULL(first + i);
		args->values[i] = args->isnull[i] ? (Datum) 0 : PG_GETARG_DATUM(first + i);
	}
	return true;
}

/* One column's option string: "asc" or "desc", then "nulls first|last". */
static void
dmkeyenc_parse_option(const char *opt, bool *desc, bool *nulls_first)
{
	char	   *copy = pstrdup(opt);
	char	   *words[4];
	int			nwords = 0;
	char	   *tok;
	char	   *save = NULL;
	int			w = 0;

	for (tok = strtok_r(copy, " \t\n", &save); tok != NULL;
		 tok = strtok_r(NULL, " \t\n", &save))
	{
		if (nwords == lengthof(words))
			goto bad;
		words[nwords++] = tok;
	}

	*desc = false;
	if (w < nwords && pg_strcasecmp(words[w], "asc") == 0)
		w++;
	else if (w < nwords && pg_strcasecmp(words[w], "desc") == 0)
	{
		*desc = true;
		w++;
	}
	*nulls_first = *desc;
	if (w < nwords)
	{
		if (w + 2 != nwords || pg_strcasecmp(words[w], "nulls") != 0)
			goto bad;
		if (pg_strcasecmp(words[w + 1], "first") == 0)
			*nulls_first = true;
		else if (pg_strcasecmp(words[w + 1], "last") == 0)
			*nulls_first = false;
		else
			goto bad;
	}
	pfree(copy);
	return;

bad:
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid dmindex key column option \"%s\"", opt),
			 errdetail("A column's option is ASC or DESC, optionally followed by NULLS FIRST or NULLS LAST.")));
}

/* The key of a call: options NULL means every column ASC NULLS LAST. */
static Datum
dmkeyenc_encode_call(FunctionCallInfo fcinfo, int first, ArrayType *options)
{
	DmKeyArgs	args;
	DmKeyColumn *cols;
	Datum	   *optvals = NULL;
	bool	   *optnulls = NULL;
	int			nopts = 0;
	StringInfoData buf;
	bytea	   *result;
	int			len;
	int			i;

	if (!dmkeyenc_collect_args(fcinfo, first, &args))
		PG_RETURN_NULL();

	if (options != NULL)
	{
		if (ARR_NDIM(options) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("dmindex key column options must be a one-dimensional array")));
		deconstruct_array(options, TEXTOID, -1, false, TYPALIGN_INT,
						  &optvals, &optnulls, &nopts);
		if (nopts != args.ncols)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%d dmindex key column options given for %d columns",
							nopts, args.ncols)));
	}

	cols = palloc(sizeof(DmKeyColumn) * Max(args.ncols, 1));
	for (i = 0; i < args.ncols; i++)
	{
		bool		desc = false;
		bool		nulls_first = false;

		if (options != NULL && !optnulls[i])
			dmkeyenc_parse_option(TextDatumGetCString(optvals[i]), &desc, &nulls_first);
		dmkeyenc_column_init(&cols[i], args.typids[i], PG_GET_COLLATION(),
							 desc, nulls_first);
	}

	initStringInfo(&buf);
	appendStringInfoSpaces(&buf, VARHDRSZ);
	len = dmkeyenc_form_key(&buf, cols, args.ncols, args.typids, args.values,
							args.isnull, -1);
	Assert(len == buf.len - VARHDRSZ);
	result = (bytea *) buf.data;
	SET_VARSIZE(result, VARHDRSZ + len);
	PG_RETURN_BYTEA_P(result);
}

Datum
dmindex_key_encode(PG_FUNCTION_ARGS)
{
	return dmkeyenc_encode_call(fcinfo, 0, NULL);
}

Datum
dmindex_key_encode_with(PG_FUNCTION_ARGS)
{
	return dmkeyenc_encode_call(fcinfo, 1,
								PG_ARGISNULL(0) ? NULL : PG_GETARG_ARRAYTYPE_P(0));
}

Datum
dmindex_key_prefix_successor(PG_FUNCTION_ARGS)
{
	bytea	   *prefix = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	bytea	   *result;

	initStringInfo(&buf);
	appendStringInfoSpaces(&buf, VARHDRSZ);
	if (!dmkeyenc_prefix_successor((const uint8 *) VARDATA_ANY(prefix),
								   VARSIZE_ANY_EXHDR(prefix), &buf))
		PG_RETURN_NULL();
	result = (bytea *) buf.data;
	SET_VARSIZE(result, buf.len);
	PG_RETURN_BYTEA_P(result);
}
