/*
 * dmvalidate.c — amvalidate for dmindex: checks that an operator class (and
 * the family it belongs to) has what the access method relies on.
 *
 * What dmindex needs of an operator family (see dmkey.c):
 *   - operators: btree's five strategies, boolean and binary, search only
 *     (the tree cannot order by an operator's result);
 *   - support function 1 (type -> int8) for every type that appears in the
 *     family, because the indexed column and every scan key's argument are
 *     encoded with the function registered for their own type; all types of
 *     a family share one key domain;
 *   - optionally support function 2 (int8 -> type), the exact inverse of 1;
 *   - or no support function at all, for a family of types that only the
 *     byte keys of dmkeyenc.c encode (text, numeric, uuid, bytea...): its
 *     indexes always have key format VAR (dmvarkey.c).
 * Support functions are registered for (type, type).
 *
 * Like the core validators, problems are reported with INFO messages and a
 * false result, so that amvalidate() lists them all.
 */
#include "postgres.h"

#include "access/amvalidate.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "dmam.h"

#define DM_ALL_STRATEGIES \
	((1 << BTLessStrategyNumber) | (1 << BTLessEqualStrategyNumber) | \
	 (1 << BTEqualStrategyNumber) | (1 << BTGreaterEqualStrategyNumber) | \
	 (1 << BTGreaterStrategyNumber))

/* Whether the family has support function 1 for (typid, typid). */
static bool
dm_family_encodes(List *groups, Oid typid)
{
	ListCell   *lc;

	foreach(lc, groups)
	{
		OpFamilyOpFuncGroup *g = (OpFamilyOpFuncGroup *) lfirst(lc);

		if (g->lefttype == typid && g->righttype == typid)
			return (g->functionset & (1 << DMINDEX_ENCODE_PROC)) != 0;
	}
	return false;
}

/* amvalidate: whether an operator class is sound (btree strategies, encode function, optional decode); each problem reported as INFO. */
bool
dmvalidate(Oid opclassoid)
{
	bool		result = true;
	HeapTuple	classtup;
	Form_pg_opclass classform;
	Oid			opfamilyoid;
	Oid			opcintype;
	char	   *opclassname;
	HeapTuple	familytup;
	Form_pg_opfamily familyform;
	char	   *opfamilyname;
	CatCList   *proclist,
			   *oprlist;
	List	   *grouplist;
	List	   *familytypes = NIL;
	bool		opclass_has_ops = false;
	bool		word_family = false;
	int			opgroups = 0;
	int			i;
	ListCell   *lc;

	classtup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	classform = (Form_pg_opclass) GETSTRUCT(classtup);
	opfamilyoid = classform->opcfamily;
	opcintype = classform->opcintype;
	opclassname = NameStr(classform->opcname);

	familytup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opfamilyoid));
	if (!HeapTupleIsValid(familytup))
		elog(ERROR, "cache lookup failed for operator family %u", opfamilyoid);
	familyform = (Form_pg_opfamily) GETSTRUCT(familytup);
	opfamilyname = NameStr(familyform->opfname);

	oprlist = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(opfamilyoid));
	proclist = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(opfamilyoid));

	/* Support functions: numbers and signatures. */
	for (i = 0; i < proclist->n_members; i++)
	{
		HeapTuple	proctup = &proclist->members[i]->tuple;
		Form_pg_amproc procform = (Form_pg_amproc) GETSTRUCT(proctup);
		Oid			type = procform->amproclefttype;
		bool		ok;

		switch (procform->amprocnum)
		{
			case DMINDEX_ENCODE_PROC:
				ok = check_amproc_signature(procform->amproc, INT8OID, true,
											1, 1, type);
				break;
			case DMINDEX_DECODE_PROC:
				ok = check_amproc_signature(procform->amproc, type, true,
											1, 1, INT8OID);
				break;
			default:
				ereport(INFO,
						(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
						 errmsg("operator family \"%s\" of access method %s contains function %s with invalid support number %d",
								opfamilyname, "dmindex",
								format_procedure(procform->amproc),
								procform->amprocnum)));
				result = false;
				continue;		/* no further message about this one */
		}

		if (!ok)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("operator family \"%s\" of access method %s contains function %s with wrong signature for support number %d",
							opfamilyname, "dmindex",
							format_procedure(procform->amproc),
							procform->amprocnum)));
			result = false;
		}

		/*
		 * An encoding is a property of one type; a function registered for
		 * two different types would never be looked up.
		 */
		if (procform->amproclefttype != procform->amprocrighttype)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("operator family \"%s\" of access method %s contains support function %s registered for different types %s and %s",
							opfamilyname, "dmindex",
							format_procedure(procform->amproc),
							format_type_be(procform->amproclefttype),
							format_type_be(procform->amprocrighttype))));
			result = false;
		}
	}

	/* Operators: strategies, purpose and signatures. */
	for (i = 0; i < oprlist->n_members; i++)
	{
		HeapTuple	oprtup = &oprlist->members[i]->tuple;
		Form_pg_amop oprform = (Form_pg_amop) GETSTRUCT(oprtup);

		if (oprform->amopstrategy < 1 ||
			oprform->amopstrategy > DMINDEX_NSTRATEGIES)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("operator family \"%s\" of access method %s contains operator %s with invalid strategy number %d",
							opfamilyname, "dmindex",
							format_operator(oprform->amopopr),
							oprform->amopstrategy)));
			result = false;
		}

		if (oprform->amoppurpose != AMOP_SEARCH ||
			OidIsValid(oprform->amopsortfamily))
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("operator family \"%s\" of access method %s contains invalid ORDER BY specification for operator %s",
							opfamilyname, "dmindex",
							format_operator(oprform->amopopr))));
			result = false;
		}

		if (!check_amop_signature(oprform->amopopr, BOOLOID,
								  oprform->amoplefttype,
								  oprform->amoprighttype))
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("operator family \"%s\" of access method %s contains operator %s with wrong signature",
							opfamilyname, "dmindex",
							format_operator(oprform->amopopr))));
			result = false;
		}
	}

	/* Groups of members by (left type, right type). */
	grouplist = identify_opfamily_groups(oprlist, proclist);
	foreach(lc, grouplist)
	{
		OpFamilyOpFuncGroup *g = (OpFamilyOpFuncGroup *) lfirst(lc);

		familytypes = list_append_unique_oid(familytypes, g->lefttype);
		familytypes = list_append_unique_oid(familytypes, g->righttype);

		if (g->operatorset == 0)
			continue;			/* only support functions: checked below */
		opgroups++;

		if (g->lefttype == opcintype && g->righttype == opcintype)
			opclass_has_ops = true;

		/* The scan key range logic assumes all five are there. */
		if (g->operatorset != DM_ALL_STRATEGIES)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("operator family \"%s\" of access method %s is missing operator(s) for types %s and %s",
							opfamilyname, "dmindex",
							format_type_be(g->lefttype),
							format_type_be(g->righttype))));
			result = false;
		}
	}

	/*
	 * Every type of the family must be encodable: into a word by support
	 * function 1, or, in a family without any (a byte-key family: text,
	 * numeric, uuid...), by the byte encoding of dmkeyenc.c, which such
	 * indexes use (key format VAR, dmvarkey.c).
	 */
	foreach(lc, grouplist)
	{
		OpFamilyOpFuncGroup *g = (OpFamilyOpFuncGroup *) lfirst(lc);

		if (g->functionset & (1 << DMINDEX_ENCODE_PROC))
			word_family = true;
	}
	foreach(lc, familytypes)
	{
		Oid			typid = lfirst_oid(lc);

		if (!word_family && dmkeyenc_type_supported(typid))
			continue;
		if (!dm_family_encodes(grouplist, typid))
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("operator family \"%s\" of access method %s is missing support function %d for type %s",
							opfamilyname, "dmindex", DMINDEX_ENCODE_PROC,
							format_type_be(typid))));
			result = false;
		}
	}

	/* In particular the opclass's own type (if no member names it at all). */
	if (!list_member_oid(familytypes, opcintype) &&
		(word_family || !dmkeyenc_type_supported(opcintype)))
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("operator class \"%s\" of access method %s is missing support function %d",
						opclassname, "dmindex", DMINDEX_ENCODE_PROC)));
		result = false;
	}

	if (!opclass_has_ops)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("operator class \"%s\" of access method %s is missing operator(s)",
						opclassname, "dmindex")));
		result = false;
	}

	/*
	 * As for btree: missing cross-type operators are not fatal, but they
	 * keep the planner from using the index for comparisons it derives
	 * from equivalence classes, so a complete family is expected.
	 */
	if (opgroups != list_length(familytypes) * list_length(familytypes))
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("operator family \"%s\" of access method %s is missing cross-type operator(s)",
						opfamilyname, "dmindex")));
		result = false;
	}

	ReleaseCatCacheList(proclist);
	ReleaseCatCacheList(oprlist);
	ReleaseSysCache(familytup);
	ReleaseSysCache(classtup);

	return result;
}
