/*
 * dmhandler.c — the dmindex access method's handler (its IndexAmRoutine),
 * its reloptions and amcanreturn.
 *
 *   node_size        bytes per remote node, a power of two 256..4096 (1024)
 *   fillfactor       percent of each node CREATE INDEX fills (90)
 *   placement_level  M: subtrees rooted at level M live on one memnode (1)
 *   memnodes         host:port list the index spreads over (all of
 *                    dmindex.memnodes; the first is its home)
 *   leaf_format      'sorted' or 'hopscotch' (docs/design.md §5.1); when
 *                    absent, dmindex.default_leaf_format at build time
 *   neighborhood     hopscotch leaves: H, 2..16 and at most a leaf's
 *                    buckets (8); refused for sorted leaves
 *
 * Like node_size, the leaf options shape the tree a build creates (CREATE
 * INDEX, REINDEX, TRUNCATE, table rewrites); the metapage records what the
 * tree got (dmmeta.c), and every open goes by the tree, never by these.
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/reloptions.h"
#include "access/xlog.h"
#include "commands/vacuum.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "dmam.h"

PG_FUNCTION_INFO_V1(dmhandler);

static relopt_kind dm_relopt_kind;
static relopt_parse_elt dm_relopt_tab[6];

static relopt_enum_elt_def leaf_format_values[] = {
	{"sorted", DM_LEAF_SORTED},
	{"hopscotch", DM_LEAF_HOPSCOTCH},
	{NULL}
};

static const struct config_enum_entry leaf_format_guc_values[] = {
	{"sorted", DM_LEAF_SORTED, false},
	{"hopscotch", DM_LEAF_HOPSCOTCH, false},
	{NULL, 0, false}
};

/* dmindex.default_leaf_format: the leaf format of a build without the reloption */
static int	default_leaf_format = DM_LEAF_SORTED;

static void
validate_memnodes(const char *value)
{
	char		errbuf[256];
	DmMemnodeList *list;

	if (value == NULL)
		return;
	list = dmindex_parse_memnodes(value, palloc, errbuf, sizeof(errbuf));
	if (list == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for dmindex option \"memnodes\": \"%s\"", value),
				 errdetail("%s", errbuf)));
	if (list->count == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for dmindex option \"memnodes\": \"%s\"", value),
				 errdetail("The list names no memnode.")));
}

void
dmindex_init_reloptions(void)
{
	dm_relopt_kind = add_reloption_kind();
	add_int_reloption(dm_relopt_kind, "node_size",
					  "Size in bytes of the index's remote nodes (a power of two)",
					  1024, DM_NODE_MIN, DM_NODE_MAX, AccessExclusiveLock);
	add_int_reloption(dm_relopt_kind, "fillfactor",
					  "Packs index nodes only to this percentage at CREATE INDEX",
					  90, 10, 100, ShareUpdateExclusiveLock);
	add_int_reloption(dm_relopt_kind, "placement_level",
					  "Subtrees rooted at this level live on one memory node",
					  1, 0, 8, AccessExclusiveLock);
	add_string_reloption(dm_relopt_kind, "memnodes",
						 "Memory nodes (host:port list) the index spreads over; the first is its home",
						 NULL, validate_memnodes, AccessExclusiveLock);
	dm_relopt_tab[0] = (relopt_parse_elt) {"node_size", RELOPT_TYPE_INT, offsetof(DmIndexOptions, node_size)};
	dm_relopt_tab[1] = (relopt_parse_elt) {"fillfactor", RELOPT_TYPE_INT, offsetof(DmIndexOptions, fillfactor)};
	dm_relopt_tab[2] = (relopt_parse_elt) {"placement_level", RELOPT_TYPE_INT, offsetof(DmIndexOptions, placement_level)};
	dm_relopt_tab[3] = (relopt_parse_elt) {"memnodes", RELOPT_TYPE_STRING, offsetof(DmIndexOptions, memnodes_offset)};
	/* absent: the GUC decides when the tree is built (DMINDEX_LEAF_UNSET is no member) */
	add_enum_reloption(dm_relopt_kind, "leaf_format",
					   "Format of the index's remote leaves: sorted entries, or a hopscotch table whose point lookups read one neighbourhood",
					   leaf_format_values, DMINDEX_LEAF_UNSET,
					   "Valid values are \"sorted\" and \"hopscotch\".", AccessExclusiveLock);
	/* 0, below the minimum, only as the default: "not given" */
	add_int_reloption(dm_relopt_kind, "neighborhood",
					  "Buckets a key's entries may be displaced over in a hopscotch leaf (its lookups read that many)",
					  0, DM_TREE_HOP_H_MIN, DM_TREE_HOP_H_MAX, AccessExclusiveLock);
	dm_relopt_tab[4] = (relopt_parse_elt) {"leaf_format", RELOPT_TYPE_ENUM, offsetof(DmIndexOptions, leaf_format)};
	dm_relopt_tab[5] = (relopt_parse_elt) {"neighborhood", RELOPT_TYPE_INT, offsetof(DmIndexOptions, neighborhood)};

	/*
	 * Settable by anyone, like default_table_access_method: it only picks
	 * among formats every index may have.  Read at build time, so REINDEX
	 * and TRUNCATE of an index without the reloption follow the setting of
	 * their session (the reloption pins a format).
	 */
	DefineCustomEnumVariable("dmindex.default_leaf_format",
							 "Leaf format of dmindex trees built for indexes without the leaf_format option.",
							 "\"sorted\" keeps a leaf's entries in order; \"hopscotch\" keeps them in a "
							 "hash table whose point lookups read one neighbourhood.",
							 &default_leaf_format,
							 DM_LEAF_SORTED,
							 leaf_format_guc_values,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}

const char *
dmindex_leaf_format_name(int format)
{
	switch (format)
	{
		case DM_LEAF_SORTED:
			return "sorted";
		case DM_LEAF_HOPSCOTCH:
			return "hopscotch";
		default:
			return "unknown";
	}
}

int
dmindex_leaf_choice(Relation index, int *neighborhood)
{
	DmIndexOptions *opts = (DmIndexOptions *) index->rd_options;
	int			format = opts && opts->leaf_format != DMINDEX_LEAF_UNSET ?
		opts->leaf_format : default_leaf_format;

	*neighborhood = 0;
	if (format == DM_LEAF_HOPSCOTCH)
		*neighborhood = opts && opts->neighborhood != 0 ? opts->neighborhood : DM_TREE_HOP_H_DEFAULT;
	return format;
}

/* amoptions: parse and validate the reloptions (node_size, fillfactor, placement_level, memnodes, leaf_format, neighborhood). */
bytea *
dmoptions(Datum reloptions, bool validate)
{
	DmIndexOptions *opts = (DmIndexOptions *) build_reloptions(reloptions, validate, dm_relopt_kind,
															   sizeof(DmIndexOptions), dm_relopt_tab,
															   lengthof(dm_relopt_tab));
	int			hmax;

	if (opts == NULL || !validate)
		return (bytea *) opts;
	if ((opts->node_size & (opts->node_size - 1)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("value %d out of bounds for option \"node_size\"", opts->node_size),
				 errdetail("Valid values are powers of two between %d and %d.", DM_NODE_MIN, DM_NODE_MAX)));
	/*
	 * Only with an explicit leaf_format: a neighbourhood that depended on
	 * the GUC would be ignored by a later REINDEX under another setting.
	 */
	if (opts->neighborhood != 0 && opts->leaf_format != DM_LEAF_HOPSCOTCH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"neighborhood\" is valid only with leaf_format = 'hopscotch'"),
				 errhint("Add leaf_format = 'hopscotch', or leave out neighborhood.")));
	hmax = dm_tree_hop_h_max((uint32) opts->node_size);
	if (opts->neighborhood > hmax)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("value %d out of bounds for option \"neighborhood\"", opts->neighborhood),
				 errdetail("A leaf of %d bytes has room for neighborhoods between %d and %d.",
						   opts->node_size, DM_TREE_HOP_H_MIN, hmax)));
	return (bytea *) opts;
}

/* amcanreturn: index-only scans when the opclass can decode keys, never during recovery. */
bool
dmcanreturn(Relation index, int attno)
{
	/*
	 * Not on a standby: its visibility map may call a page all-visible that
	 * the primary has changed since, and the index has entries for rows
	 * this server has not replayed (dmstandby.c).
	 */
	if (RecoveryInProgress())
		return false;
	/* byte keys are not decoded, and their scans are rechecked (dmscanvar.c) */
	if (dmindex_key_format(index) == DM_KEY_VAR)
		return false;
	return dmindex_can_decode(index);
}

/*
 * The access method's handler: its properties and callbacks.  Each
 * callback's contract is the one-line comment at its declaration in dmam.h
 * (and at its definition); src/pg/README maps callbacks to files.
 */
Datum
dmhandler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *am = makeNode(IndexAmRoutine);

	am->amstrategies = DMINDEX_NSTRATEGIES;
	am->amsupport = DMINDEX_NPROCS;
	am->amoptsprocnum = 0;
	am->amcanorder = true;
	am->amcanorderbyop = false;
	am->amcanbackward = true;
	am->amcanunique = false;
	am->amcanmulticol = true;	/* key format VAR (dmvarkey.c) */
	am->amoptionalkey = true;
	am->amsearcharray = true;	/* "col = ANY(array)": dmscankey.c */
	am->amsearchnulls = true;
	am->amstorage = false;
	am->amclusterable = false;
	am->ampredlocks = false;
	am->amcanparallel = false;
	am->amcaninclude = false;
	am->amusemaintenanceworkmem = false;
	am->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
	am->amkeytype = InvalidOid;

	am->ambuild = dmbuild;
	am->ambuildempty = dmbuildempty;
	am->aminsert = dminsert;
	am->ambulkdelete = dmbulkdelete;
	am->amvacuumcleanup = dmvacuumcleanup;
	am->amcanreturn = dmcanreturn;
	am->amcostestimate = dmcostestimate;
	am->amoptions = dmoptions;
	am->amproperty = NULL;
	am->ambuildphasename = dmbuildphasename;
	am->amvalidate = dmvalidate;
	am->amadjustmembers = NULL;
	am->ambeginscan = dmbeginscan;
	am->amrescan = dmrescan;
	am->amgettuple = dmgettuple;
	am->amgetbitmap = dmgetbitmap;
	am->amendscan = dmendscan;
	am->ammarkpos = NULL;
	am->amrestrpos = NULL;
	am->amestimateparallelscan = NULL;
	am->aminitparallelscan = NULL;
	am->amparallelrescan = NULL;

	PG_RETURN_POINTER(am);
}
