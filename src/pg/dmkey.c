/*
 * dmkey.c — key encoding: the SQL-callable support functions of the dmindex
 * operator classes, and the glue the access method uses to turn indexed
 * values and scan-key arguments into keys of the remote tree (dmscankey.c
 * makes the ranges).
 *
 * Every operator class maps its type to a 64-bit unsigned key that sorts
 * exactly like the type's btree order (support function 1), so the remote
 * tree can compare plain integers.  Types of one operator family share one
 * key domain: an int2, an int4 and an int8 with equal values have equal
 * keys, and so do a float4 and a float8.  That makes cross-type scan keys
 * exact: the argument of "int4col < 10::int8" is encoded with the int8
 * function and compared with keys of int4 values.
 *
 * The domains (the word functions are in dmkeyenc.h, shared with the byte
 * keys of dmkeyenc.c):
 *   integers, date, time, timestamp[tz], money:  signed value + 2^63
 *   float4, float8:  the IEEE bits of the value as a double, with negative
 *                    numbers' bits inverted and positive ones' sign bit set,
 *                    after mapping -0 to +0 and every NaN to one NaN (they
 *                    are all equal, and above +Infinity, for PostgreSQL)
 *   oid:  the value;  bool:  0 or 1
 *
 * Support function 2 undoes the encoding for the types where that is exact
 * (floats are not: -0 would come back as +0), which enables index-only
 * scans.
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_opfamily.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/cash.h"
#include "utils/date.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "dmam.h"
#include "dmkeyenc.h"


/*
 * The encodings themselves (dmkey_from_int64, dmkey_from_float8) are in
 * dmkeyenc.h: the byte keys of dmkeyenc.c write the same words.
 */

/* The result of an encode function: int8 holding the key's bits. */
#define DMKEY_RETURN(k)		PG_RETURN_INT64((int64) (k))
#define DMKEY_GETARG(n)		((uint64) PG_GETARG_INT64(n))

/* The value of a key decoded for typname is outside that type's range. */
static void
dmkey_out_of_range(uint64 key, const char *typname)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("dmindex key %lld does not encode a value of type %s",
					(long long) (int64) key, typname)));
}

/* ---- the support functions (SQL-callable) ---------------------------------- */

PG_FUNCTION_INFO_V1(dmindex_encode_int2);
PG_FUNCTION_INFO_V1(dmindex_encode_int4);
PG_FUNCTION_INFO_V1(dmindex_encode_int8);
PG_FUNCTION_INFO_V1(dmindex_encode_float4);
PG_FUNCTION_INFO_V1(dmindex_encode_float8);
PG_FUNCTION_INFO_V1(dmindex_encode_date);
PG_FUNCTION_INFO_V1(dmindex_encode_timestamp);
PG_FUNCTION_INFO_V1(dmindex_encode_timestamptz);
PG_FUNCTION_INFO_V1(dmindex_encode_time);
PG_FUNCTION_INFO_V1(dmindex_encode_oid);
PG_FUNCTION_INFO_V1(dmindex_encode_bool);
PG_FUNCTION_INFO_V1(dmindex_encode_money);

PG_FUNCTION_INFO_V1(dmindex_decode_int2);
PG_FUNCTION_INFO_V1(dmindex_decode_int4);
PG_FUNCTION_INFO_V1(dmindex_decode_int8);
PG_FUNCTION_INFO_V1(dmindex_decode_date);
PG_FUNCTION_INFO_V1(dmindex_decode_timestamp);
PG_FUNCTION_INFO_V1(dmindex_decode_timestamptz);
PG_FUNCTION_INFO_V1(dmindex_decode_time);
PG_FUNCTION_INFO_V1(dmindex_decode_oid);
PG_FUNCTION_INFO_V1(dmindex_decode_bool);
PG_FUNCTION_INFO_V1(dmindex_decode_money);

Datum
dmindex_encode_int2(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN(dmkey_from_int64(PG_GETARG_INT16(0)));
}

Datum
dmindex_encode_int4(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN(dmkey_from_int64(PG_GETARG_INT32(0)));
}

Datum
dmindex_encode_int8(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN(dmkey_from_int64(PG_GETARG_INT64(0)));
}

/* A float4 becomes a double exactly, as float48lt and friends do too. */
Datum
dmindex_encode_float4(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN(dmkey_from_float8((float8) PG_GETARG_FLOAT4(0)));
}

Datum
dmindex_encode_float8(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN(dmkey_from_float8(PG_GETARG_FLOAT8(0)));
}

/* -infinity and infinity are INT32_MIN and INT32_MAX: they sort right. */
Datum
dmindex_encode_date(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN(dmkey_from_int64(PG_GETARG_DATEADT(0)));
}

/* Likewise INT64_MIN and INT64_MAX for the timestamps. */
Datum
dmindex_encode_timestamp(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN(dmkey_from_int64(PG_GETARG_TIMESTAMP(0)));
}

/* A timestamptz is a UTC instant: its order does not depend on TimeZone. */
Datum
dmindex_encode_timestamptz(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN(dmkey_from_int64(PG_GETARG_TIMESTAMPTZ(0)));
}

Datum
dmindex_encode_time(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN(dmkey_from_int64(PG_GETARG_TIMEADT(0)));
}

/* Oids compare as unsigned 32-bit integers. */
Datum
dmindex_encode_oid(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN((uint64) PG_GETARG_OID(0));
}

Datum
dmindex_encode_bool(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN(PG_GETARG_BOOL(0) ? 1 : 0);
}

Datum
dmindex_encode_money(PG_FUNCTION_ARGS)
{
	DMKEY_RETURN(dmkey_from_int64(PG_GETARG_CASH(0)));
}

/*
 * The decode functions check that the key is one their type can produce:
 * the index only holds such keys, but the functions are callable from SQL
 * with any int8, and a value outside its type's range would confuse the
 * type's output function.
 */
Datum
dmindex_decode_int2(PG_FUNCTION_ARGS)
{
	uint64		key = DMKEY_GETARG(0);
	int64		v = dmkey_to_int64(key);

	if (v < PG_INT16_MIN || v > PG_INT16_MAX)
		dmkey_out_of_range(key, "smallint");
	PG_RETURN_INT16((int16) v);
}

Datum
dmindex_decode_int4(PG_FUNCTION_ARGS)
{
	uint64		key = DMKEY_GETARG(0);
	int64		v = dmkey_to_int64(key);

	if (v < PG_INT32_MIN || v > PG_INT32_MAX)
		dmkey_out_of_range(key, "integer");
	PG_RETURN_INT32((int32) v);
}

Datum
dmindex_decode_int8(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(dmkey_to_int64(DMKEY_GETARG(0)));
}

Datum
dmindex_decode_date(PG_FUNCTION_ARGS)
{
	uint64		key = DMKEY_GETARG(0);
	int64		v = dmkey_to_int64(key);
	DateADT		d;

	if (v < PG_INT32_MIN || v > PG_INT32_MAX)
		dmkey_out_of_range(key, "date");
	d = (DateADT) v;
	if (!DATE_NOT_FINITE(d) && !IS_VALID_DATE(d))
		dmkey_out_of_range(key, "date");
	PG_RETURN_DATEADT(d);
}

static Timestamp
dmkey_to_timestamp(uint64 key, const char *typname)
{
	Timestamp	t = dmkey_to_int64(key);

	if (!TIMESTAMP_NOT_FINITE(t) && !IS_VALID_TIMESTAMP(t))
		dmkey_out_of_range(key, typname);
	return t;
}

Datum
dmindex_decode_timestamp(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMP(dmkey_to_timestamp(DMKEY_GETARG(0),
										   "timestamp without time zone"));
}

Datum
dmindex_decode_timestamptz(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(dmkey_to_timestamp(DMKEY_GETARG(0),
											 "timestamp with time zone"));
}

Datum
dmindex_decode_time(PG_FUNCTION_ARGS)
{
	uint64		key = DMKEY_GETARG(0);
	int64		v = dmkey_to_int64(key);

	/* time accepts 24:00:00 itself, as time_in does */
	if (v < 0 || v > USECS_PER_DAY)
		dmkey_out_of_range(key, "time without time zone");
	PG_RETURN_TIMEADT((TimeADT) v);
}

Datum
dmindex_decode_oid(PG_FUNCTION_ARGS)
{
	uint64		key = DMKEY_GETARG(0);

	if (key > PG_UINT32_MAX)
		dmkey_out_of_range(key, "oid");
	PG_RETURN_OID((Oid) key);
}

Datum
dmindex_decode_bool(PG_FUNCTION_ARGS)
{
	uint64		key = DMKEY_GETARG(0);

	if (key > 1)
		dmkey_out_of_range(key, "boolean");
	PG_RETURN_BOOL(key == 1);
}

Datum
dmindex_decode_money(PG_FUNCTION_ARGS)
{
	PG_RETURN_CASH((Cash) dmkey_to_int64(DMKEY_GETARG(0)));
}

/* ---- finding the encode function of a type -------------------------------- */

/*
 * The encode function of the indexed column's own type is cached by the
 * relcache (index_getprocinfo).  Cross-type scan keys need the function the
 * operator family has for the key's type; those are cached here, per
 * backend, by (operator family, type).  A change to any pg_amproc row
 * empties the cache, so ALTER OPERATOR FAMILY takes effect at once.
 */
typedef struct DmEncodeCacheKey
{
	Oid			opfamily;
	Oid			typid;
} DmEncodeCacheKey;

typedef struct DmEncodeCacheEntry
{
	DmEncodeCacheKey key;		/* hash key: must be first */
	FmgrInfo	finfo;
} DmEncodeCacheEntry;

static HTAB *dm_encode_cache = NULL;
static bool dm_encode_cache_stale = false;

/*
 * Invalidation callback: only mark the cache stale.  It may run at any
 * catalog access, possibly while a caller holds a pointer into the cache,
 * so entries are dropped at the next lookup instead.
 */
static void
dm_encode_cache_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	dm_encode_cache_stale = true;
}

static FmgrInfo *
dm_encode_cache_lookup(Oid opfamily, Oid typid)
{
	DmEncodeCacheKey key;
	DmEncodeCacheEntry *entry;
	bool		found;
	Oid			procid;

	if (dm_encode_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(DmEncodeCacheKey);
		ctl.entrysize = sizeof(DmEncodeCacheEntry);
		ctl.hcxt = TopMemoryContext;
		dm_encode_cache = hash_create("dmindex encode functions", 16, &ctl,
									  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		CacheRegisterSyscacheCallback(AMPROCNUM, dm_encode_cache_invalidate,
									  (Datum) 0);
		dm_encode_cache_stale = false;
	}
	else if (dm_encode_cache_stale)
	{
		HASH_SEQ_STATUS status;

		dm_encode_cache_stale = false;
		hash_seq_init(&status, dm_encode_cache);
		while ((entry = hash_seq_search(&status)) != NULL)
			hash_search(dm_encode_cache, &entry->key, HASH_REMOVE, NULL);
	}

	memset(&key, 0, sizeof(key));
	key.opfamily = opfamily;
	key.typid = typid;
	entry = hash_search(dm_encode_cache, &key, HASH_FIND, &found);
	if (found)
		return &entry->finfo;

	procid = get_opfamily_proc(opfamily, typid, typid, DMINDEX_ENCODE_PROC);
	if (!OidIsValid(procid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s has no support function %d for type %s",
						getObjectDescriptionOids(OperatorFamilyRelationId, opfamily),
						DMINDEX_ENCODE_PROC, format_type_be(typid)),
				 errdetail("A type used with the operator family needs a function that encodes its values.")));

	/*
	 * Look the function up before making the entry, so that an error
	 * cannot leave an entry with no function behind.
	 */
	entry = hash_search(dm_encode_cache, &key, HASH_ENTER, &found);
	fmgr_info_cxt(procid, &entry->finfo, TopMemoryContext);
	return &entry->finfo;
}

/* The encode function for values of typid (InvalidOid: the column's type). */
static FmgrInfo *
dm_encode_proc(Relation index, Oid typid)
{
	if (!OidIsValid(typid) || typid == index->rd_opcintype[0])
		return index_getprocinfo(index, 1, DMINDEX_ENCODE_PROC);
	return dm_encode_cache_lookup(index->rd_opfamily[0], typid);
}

static inline uint64
dm_encode_with(Relation index, FmgrInfo *proc, Datum value)
{
	return (uint64) DatumGetInt64(FunctionCall1Coll(proc,
													index->rd_indcollation[0],
													value));
}

/* ---- the interface of dmam.h ------------------------------------------------ */

uint64
dmindex_encode(Relation index, Oid typid, Datum value)
{
	return dm_encode_with(index, dm_encode_proc(index, typid), value);
}

dm_entry
dmindex_make_entry(Relation index, Datum value, bool isnull, ItemPointer tid)
{
	uint64		packed = dmindex_tid_pack(tid);

	if (isnull)
		return dm_entry_null(packed);
	return dm_entry_make(dmindex_encode(index, InvalidOid, value), packed);
}

bool
dmindex_can_decode(Relation index)
{
	return OidIsValid(index_getprocid(index, 1, DMINDEX_DECODE_PROC));
}

Datum
dmindex_decode(Relation index, uint64 key)
{
	return FunctionCall1Coll(index_getprocinfo(index, 1, DMINDEX_DECODE_PROC),
							 index->rd_indcollation[0],
							 Int64GetDatum((int64) key));
}
