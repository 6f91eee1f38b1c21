/*
 * dmvarkey.c — the key format of an index and the entries of its rows
 * (docs/design.md §5.2, §8 "Byte keys").
 *
 * An index gets key format FIXED8 when it has one ascending NULLS LAST
 * column whose operator class encodes values into a 64-bit word (support
 * function 1, dmkey.c): those indexes are what they were before byte keys
 * existed, entry for entry.  Every other index (several columns, DESC or
 * NULLS FIRST, text, uuid, numeric, bytea...) gets key format VAR: its key
 * is the byte string of dmkeyenc.c, stored as an entry whose prefix word is
 * the first 8 bytes and whose suffix is the rest.  The choice depends on
 * the index's definition only, so every backend makes it the same way from
 * the relcache; the metapage and the tree's catalog entry record it, and
 * dmmeta.c refuses (XX002) an index where they disagree.
 *
 * The key columns of a VAR index are set up once per relcache entry
 * (rd_amcache: collations resolved, ICU locales opened) and dropped with
 * it.  A VAR column takes its order from dmkeyenc.c, not from the operator
 * class's functions, so the operator class must compare like the type's
 * default btree operator class; one that does not is refused (0A000).
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "commands/defrem.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "dmam.h"
#include "dmkeyenc.h"

/* The FIXED8 test: one plain ascending column of a word-encoding opclass. */
static int
decide_format(Relation index)
{
	if (IndexRelationGetNumberOfKeyAttributes(index) == 1 &&
		(index->rd_indoption[0] & (INDOPTION_DESC | INDOPTION_NULLS_FIRST)) == 0 &&
		OidIsValid(index_getprocid(index, 1, DMINDEX_ENCODE_PROC)))
		return DM_KEY_FIXED8;
	return DM_KEY_VAR;
}

/*
 * A VAR column is ordered by its type's byte encoding: the operator class
 * must compare like the type's default btree operator class (its "<" and
 * "=" are the same operators), or scans would disagree with the operators
 * the planner hands us.
 */
static void
check_column_order(Relation index, int col)
{
	Oid			family = index->rd_opfamily[col];
	Oid			type = index->rd_opcintype[col];
	Oid			btclass = GetDefaultOpClass(type, BTREE_AM_OID);
	Oid			btfamily = OidIsValid(btclass) ? get_opclass_family(btclass) : InvalidOid;
	static const int strategies[] = {BTLessStrategyNumber, BTEqualStrategyNumber};

	for (int i = 0; i < lengthof(strategies); i++)
	{
		Oid			ours = get_opfamily_member(family, type, type, strategies[i]);

		if (!OidIsValid(btfamily) || !OidIsValid(ours) ||
			ours != get_opfamily_member(btfamily, type, type, strategies[i]))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column %d of index \"%s\" cannot be a dmindex byte key column",
							col + 1, RelationGetRelationName(index)),
					 errdetail("Columns of multi-column, DESC, NULLS FIRST and variable-length dmindex keys are ordered like the default btree operator class of their type, and this column's operator class does not compare like it."),
					 errhint("Use the default dmindex operator class of the type.")));
	}
}

/*
 * The node size that bounds the index's keys: its tree's, from the
 * metapage.  Not the node_size reloption: ALTER INDEX ... SET (node_size)
 * changes that at once while the tree keeps its nodes until a rebuild, and
 * a key longer than the tree's nodes take must be refused before anything
 * is written, and a scan bound fitted to a larger maximum would name keys
 * no leaf holds.  Before the metapage exists (an index being built) the
 * reloption is what the build's tree gets (dmindex_create_tree).  Any
 * relcache invalidation (ALTER INDEX, REINDEX, TRUNCATE) drops the
 * rd_amcache this is kept in.
 */
static uint32
key_node_size(Relation index, const DmIndexOptions *opts)
{
	DmMetaPageData meta;

	if (dmindex_try_read_meta(index, &meta) && meta.node_size >= DM_NODE_MIN &&
		meta.node_size <= DM_NODE_MAX)
		return meta.node_size;
	return opts ? (uint32) opts->node_size : 1024;
}

/* Set up the key description of an index (in its relcache entry's memory). */
static DmKeyInfo *
key_info_build(Relation index)
{
	DmIndexOptions *opts = (DmIndexOptions *) index->rd_options;
	MemoryContext old;
	DmKeyInfo  *info;

	old = MemoryContextSwitchTo(index->rd_indexcxt);
	info = palloc0(sizeof(DmKeyInfo));
	MemoryContextSwitchTo(old);
	info->format = decide_format(index);
	info->natts = IndexRelationGetNumberOfKeyAttributes(index);
	info->key_max = dm_tree_key_max(key_node_size(index, opts));
	if (info->format == DM_KEY_VAR)
	{
		for (int i = 0; i < info->natts; i++)
		{
			int16		opt = index->rd_indoption[i];

			info->types[i] = TupleDescAttr(RelationGetDescr(index), i)->atttypid;
			check_column_order(index, i);
			dmkeyenc_column_init(&info->cols[i], info->types[i], index->rd_indcollation[i],
								 (opt & INDOPTION_DESC) != 0,
								 (opt & INDOPTION_NULLS_FIRST) != 0);
		}
	}
	return info;
}

const DmKeyInfo *
dmindex_key_info(Relation index)
{
	/* set only once complete: an error (a refused collation) leaves nothing behind */
	if (index->rd_amcache == NULL)
		index->rd_amcache = key_info_build(index);
	return (const DmKeyInfo *) index->rd_amcache;
}

void
dmindex_key_info_copy(Relation index, DmKeyInfo *out)
{
	memcpy(out, dmindex_key_info(index), sizeof(DmKeyInfo));
}

const char *
dmindex_key_format_name(int format)
{
	return format == DM_KEY_FIXED8 ? "fixed8" : format == DM_KEY_VAR ? "var" : "unknown";
}

int
dmindex_key_format(Relation index)
{
	return dmindex_key_info(index)->format;
}

int
dmindex_form_key(Relation index, Datum *values, bool *isnull, ItemPointer tid,
				 StringInfo buf)
{
	DmKeyInfo	copy;
	const DmKeyInfo *info = &copy;
	int			len;

	/* detoasting may accept invalidations, which free rd_amcache */
	dmindex_key_info_copy(index, &copy);

	Assert(info->format == DM_KEY_VAR);
	len = dmkeyenc_form_key(buf, info->cols, info->natts, info->types, values,
							isnull, (int) info->key_max);
	if (len > (int) info->key_max)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("index row size exceeds dmindex maximum %u for index \"%s\"",
						info->key_max, RelationGetRelationName(index)),
				 errdetail("The key of the row at (%u,%u) encodes into more than %u bytes.",
						   ItemPointerGetBlockNumberNoCheck(tid),
						   ItemPointerGetOffsetNumberNoCheck(tid), info->key_max),
				 errhint("Index shorter values (for instance a hash of the value), or use a larger node_size: keys of nodes of 4096 bytes may have up to %u bytes.",
						 dm_tree_key_max(4096))));
	return len;
}

dm_entry
dmindex_entry_copy(dm_entry e, MemoryContext cxt)
{
	if (e.sfx_len > 0)
	{
		uint8	   *copy = MemoryContextAlloc(cxt, e.sfx_len);

		memcpy(copy, e.sfx, e.sfx_len);
		e.sfx = copy;
	}
	return e;
}

dm_entry
dmindex_form_entry(Relation index, Datum *values, bool *isnull, ItemPointer tid,
				   MemoryContext sfxcxt)
{
	StringInfoData buf;
	dm_entry	e;
	int			len;

	if (dmindex_key_format(index) == DM_KEY_FIXED8)
		return dmindex_make_entry(index, values[0], isnull[0], tid);
	initStringInfo(&buf);
	len = dmindex_form_key(index, values, isnull, tid, &buf);
	/* VAR NULLs are marker bytes of the key: no DM_TID_NULL */
	e = dmindex_entry_copy(dm_entry_from_bytes(buf.data, (uint32) len,
											   dmindex_tid_pack(tid)), sfxcxt);
	pfree(buf.data);
	return e;
}
