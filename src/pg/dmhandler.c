/*
 * dmhandler.c — the dmindex access method's handler (its IndexAmRoutine),
 * its reloptions and amcanreturn.
 *
 *   node_size        bytes per remote node, a power of two 256..4096 (1024)
 *   fillfactor       percent of each node CREATE INDEX fills (90)
 *   placement_level  M: subtrees rooted at level M live on one memnode (1)
 *   memnodes         host:port list the index spreads over (all of
 *                    dmindex.memnodes; the first is its home)
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/reloptions.h"
#include "access/xlog.h"
#include "commands/vacuum.h"
#include "utils/guc.h"

#include "dmam.h"

PG_FUNCTION_INFO_V1(dmhandler);

static relopt_kind dm_relopt_kind;
static relopt_parse_elt dm_relopt_tab[4];

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
}

/* amoptions: parse and validate the reloptions (node_size, fillfactor, placement_level, memnodes). */
bytea *
dmoptions(Datum reloptions, bool validate)
{
	DmIndexOptions *opts = (DmIndexOptions *) build_reloptions(reloptions, validate, dm_relopt_kind,
															   sizeof(DmIndexOptions), dm_relopt_tab,
															   lengthof(dm_relopt_tab));

	if (opts && validate && (opts->node_size & (opts->node_size - 1)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("value %d out of bounds for option \"node_size\"", opts->node_size),
				 errdetail("Valid values are powers of two between %d and %d.", DM_NODE_MIN, DM_NODE_MAX)));
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
	am->amcanmulticol = false;
	am->amoptionalkey = true;
	am->amsearcharray = false;
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
