/*
 * dmpartfuncs.c — the SQL functions of key ranges per instance:
 * dmindex_set_partitions() installs a new partition map in an index's tree,
 * dmindex_partitions() shows it, dmindex_owner() says which instance owns a
 * key (where applications and poolers send its reads).  Why a server with a
 * stale map gives right answers all the same: dmpartition.c.
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "dmam.h"
#include "dmindex.h"

PG_FUNCTION_INFO_V1(dmindex_partitions);
PG_FUNCTION_INFO_V1(dmindex_set_partitions);
PG_FUNCTION_INFO_V1(dmindex_owner);

/* ---- SQL functions ------------------------------------------------------------ */

/*
 * Partition boundaries are prefix words of FIXED8 keys given as values of
 * the column's type; an index of byte keys (VAR) has no such values yet.
 */
static void
partitions_need_fixed8(Relation index)
{
	if (dmindex_key_format(index) == DM_KEY_VAR)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("key ranges per instance are not supported for index \"%s\"",
						RelationGetRelationName(index)),
				 errdetail("Its keys are byte strings (several columns, DESC or NULLS FIRST columns, or a variable-length type); boundaries are given for indexes of one fixed-width column.")));
}

/* A range bound as the indexed type's text, or NULL where it is open or not a value. */
static Datum
bound_text(Relation index, uint64 key, bool *isnull)
{
	volatile Datum result = (Datum) 0;
	volatile bool failed = false;
	MemoryContext mcxt = CurrentMemoryContext;

	*isnull = true;
	if (key == 0 || dmindex_key_format(index) == DM_KEY_VAR || !dmindex_can_decode(index))
		return (Datum) 0;
	/* encoded keys between two values of the type do not decode: show them as NULL */
	PG_TRY();
	{
		Oid			typid = TupleDescAttr(RelationGetDescr(index), 0)->atttypid;
		Oid			out;
		bool		varlena;
		Datum		v = dmindex_decode(index, key);

		getTypeOutputInfo(typid, &out, &varlena);
		result = CStringGetTextDatum(OidOutputFunctionCall(out, v));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(mcxt);
		FlushErrorState();
		failed = true;
	}
	PG_END_TRY();
	*isnull = failed;
	return failed ? (Datum) 0 : result;
}

static Datum
key_numeric(uint64 key)
{
	char		buf[32];

	snprintf(buf, sizeof(buf), UINT64_FORMAT, key);
	return DirectFunctionCall3(numeric_in, CStringGetDatum(buf), ObjectIdGetDatum(InvalidOid),
							   Int32GetDatum(-1));
}

/*
 * The map as stored now (read from the memnode, not the session's copy):
 * one row per range, with the epoch and whether the range is this server's.
 * Works on standbys (it only reads).
 */
Datum
dmindex_partitions(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	heap,
				index;
	dm_tree    *tree;
	dm_partition_map map;
	int			rc;

	InitMaterializedSRF(fcinfo, 0);
	index = dmindex_open_checked(indexoid, &heap, AccessShareLock);
	tree = dmindex_open_tree(index);
	if ((rc = dm_tree_partitions_get(tree, &map)) != DM_OK)
		dmindex_tree_error(index, tree, rc);
	for (int i = 0; i < map.n; i++)
	{
		Datum		values[8];
		bool		nulls[8] = {0};

		values[0] = Int32GetDatum(i + 1);
		values[1] = Int32GetDatum((int32) map.instance[i]);
		values[2] = key_numeric(map.lo[i]);
		if (i + 1 < map.n)
			values[3] = key_numeric(map.lo[i + 1]);
		else
			nulls[3] = true;
		values[4] = bound_text(index, map.lo[i], &nulls[4]);
		if (i + 1 < map.n)
			values[5] = bound_text(index, map.lo[i + 1], &nulls[5]);
		else
			nulls[5] = true;
		values[6] = Int64GetDatum((int64) map.epoch);
		values[7] = BoolGetDatum(map.instance[i] == (uint32) dmindex_instance_id);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	return (Datum) 0;
}

/*
 * dmindex_set_partitions(index, boundaries, instances): range i holds the
 * keys from boundaries[i-1] (the lowest value for i = 1) up to, not
 * including, boundaries[i]; the last range also holds the NULLs.  Returns
 * the new map's epoch.  Not transactional: the map is installed at once and
 * a ROLLBACK does not undo it (like nextval()).
 */
Datum
dmindex_set_partitions(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	ArrayType  *bounds = PG_GETARG_ARRAYTYPE_P(1);
	ArrayType  *insts = PG_GETARG_ARRAYTYPE_P(2);
	Relation	heap,
				index;
	dm_tree    *tree;
	dm_partition_map map;
	Oid			elemtype = ARR_ELEMTYPE(bounds);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *bvals;
	bool	   *bnulls;
	int			nb;
	Datum	   *ivals;
	bool	   *inulls;
	int			ni;
	int			rc;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot change the partition map of an index during recovery"),
				 errhint("Run dmindex_set_partitions() on the primary; standbys pick the new map up by themselves.")));
	index = dmindex_open_checked(indexoid, &heap, AccessShareLock);
	partitions_need_fixed8(index);
	if (!pg_class_ownercheck(indexoid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_INDEX, RelationGetRelationName(index));
	if (ARR_NDIM(bounds) > 1 || ARR_NDIM(insts) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("boundaries and instances must be one-dimensional arrays")));

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(bounds, elemtype, typlen, typbyval, typalign, &bvals, &bnulls, &nb);
	deconstruct_array(insts, INT4OID, 4, true, TYPALIGN_INT, &ivals, &inulls, &ni);

	tree = dmindex_open_tree(index);
	if (nb + 1 > dm_tree_partitions_capacity(tree))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a partition map of index \"%s\" can have at most %d ranges",
						RelationGetRelationName(index), dm_tree_partitions_capacity(tree))));
	if (ni != nb + 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%d boundaries need %d instances, got %d", nb, nb + 1, ni),
				 errdetail("Instance i serves the keys from boundary i-1 up to boundary i; the first from the lowest value, the last up to the highest and the NULLs.")));

	memset(&map, 0, sizeof(map));
	map.n = nb + 1;
	for (int i = 0; i < ni; i++)
	{
		int32		id;

		if (inulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("instance ids must not be NULL")));
		id = DatumGetInt32(ivals[i]);
		if (id < 0 || id > DMINDEX_MAX_INSTANCE_ID)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("instance id %d is out of range", id),
					 errdetail("\"dmindex.instance_id\" is between 0 and %d.", DMINDEX_MAX_INSTANCE_ID)));
		map.instance[i] = (uint32) id;
	}
	for (int i = 0; i < nb; i++)
	{
		uint64		key;

		if (bnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("partition boundaries must not be NULL"),
					 errdetail("NULLs always belong to the last range.")));
		/* a type outside the column's operator family fails here */
		key = dmindex_encode(index, elemtype, bvals[i]);
		if (key == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition boundary %d is the lowest value of the index's key domain", i + 1),
					 errdetail("The first range always starts at the lowest value; an empty range cannot be given.")));
		if (i > 0 && key <= map.lo[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition boundaries must be distinct and in ascending order"),
					 errdetail("Boundary %d is not above boundary %d.", i + 1, i)));
		map.lo[i + 1] = key;
	}

	rc = dm_tree_partitions_set(tree, &map);
	if (rc == DM_ERR_EXISTS)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("the partition map of index \"%s\" was changed concurrently",
						RelationGetRelationName(index)),
				 errhint("Run dmindex_set_partitions() again.")));
	if (rc != DM_OK)
		dmindex_tree_error(index, tree, rc);
	/* this session uses the new map at once; the others within the refresh interval */
	if ((rc = dm_tree_partitions_refresh(tree, NULL)) != DM_OK)
		dmindex_tree_error(index, tree, rc);
	dm_tree_partitions_cached(tree, &map);
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	PG_RETURN_INT64((int64) map.epoch);
}

/*
 * dmindex_owner(index, value): the instance whose range holds value (NULL:
 * the owner of the NULLs), from this session's copy of the map (at most
 * dmindex.partition_refresh_interval old).  For applications and
 * connection poolers routing reads by key.
 */
Datum
dmindex_owner(PG_FUNCTION_ARGS)
{
	Oid			indexoid;
	Relation	heap,
				index;
	dm_tree    *tree;
	dm_partition_map map;
	uint64		key;
	int			owner;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	indexoid = PG_GETARG_OID(0);
	index = dmindex_open_checked(indexoid, &heap, AccessShareLock);
	partitions_need_fixed8(index);
	/* the map says nothing about rows, but only those who may read the table need it */
	if (pg_class_aclcheck(RelationGetRelid(heap), GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		!pg_class_ownercheck(indexoid, GetUserId()))
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, RelationGetRelationName(heap));
	if (PG_ARGISNULL(1))
		key = UINT64_MAX;		/* where NULL entries sort */
	else
		key = dmindex_encode(index, get_fn_expr_argtype(fcinfo->flinfo, 1), PG_GETARG_DATUM(1));
	tree = dmindex_open_tree(index);
	dm_tree_partitions_cached(tree, &map);
	owner = dm_tree_map_owner(&map, key);
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	PG_RETURN_INT32(owner);
}
