/*
 * dmcost.c — amcostestimate for dmindex.
 *
 * dmindex is an ordered index with btree's operators, so the planner should
 * use it exactly where it would use a btree: selective WHERE clauses,
 * ORDER BY ... LIMIT, IS NULL, inner side of nested loops.  The estimate
 * therefore follows btcostestimate: genericcostestimate for the leaf scan,
 * a CPU charge for the descent, and the column's correlation statistic.
 *
 * What differs is where the size of the index comes from.  The relation of
 * a dmindex index is only its metapage; its entries live in remote nodes.
 * So the pages genericcostestimate pro-rates are derived from the number of
 * entries and the node size, expressed in BLCKSZ units (a 1 KiB node is an
 * eighth of a page) so that one page's worth of entries costs about what a
 * btree leaf page costs.  Reading a node means a round trip to a memory
 * node, which is dearer than reading a page of shared buffers, so the node
 * pages are inflated by DM_REMOTE_FACTOR; the metapage counts as one more
 * page; and the descent charge counts the metapage check on top of the
 * levels of a tree that is taller than a btree (inner nodes of ~40
 * children instead of pages of hundreds).  All of that makes a dmindex cost
 * a little more than a btree on the same column, so that with both present
 * the planner consistently picks the btree, and with only a dmindex it
 * makes the choices it would make with a btree.
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/stratnum.h"
#include "catalog/pg_statistic.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

#include "dmam.h"

/* Defaults of the node_size and fillfactor reloptions (dmhandler.c). */
#define DM_DEFAULT_NODE_SIZE	1024
#define DM_DEFAULT_FILLFACTOR	90

/* Bytes of a leaf entry (key, tid) and of an inner entry (+ child). */
#define DM_LEAF_ENTRY_SIZE		16
#define DM_INNER_ENTRY_SIZE		24

/* A remote node read costs this much more than its share of a local page. */
#define DM_REMOTE_FACTOR		1.25

/* CPU charge per node on the way down, per level, as btree's per page. */
#define DM_DESCENT_NODE_COST	(50.0 * cpu_operator_cost)

/*
 * The shape of the remote tree as far as costing needs it: the node size and
 * how full nodes are, from the reloptions, which the metapage copies at
 * build time (reading the metapage would cost a buffer access per plan).
 */
static void
dm_index_shape(Oid indexoid, int *node_size, int *fillfactor, double *reltuples)
{
	Relation	index = index_open(indexoid, AccessShareLock);
	DmIndexOptions *opts = (DmIndexOptions *) index->rd_options;

	*node_size = DM_DEFAULT_NODE_SIZE;
	*fillfactor = DM_DEFAULT_FILLFACTOR;
	if (opts != NULL)
	{
		if (opts->node_size >= DM_NODE_MIN && opts->node_size <= DM_NODE_MAX)
			*node_size = opts->node_size;
		if (opts->fillfactor >= 10 && opts->fillfactor <= 100)
			*fillfactor = opts->fillfactor;
	}
	*reltuples = index->rd_rel->reltuples;
	index_close(index, AccessShareLock);
}

/*
 * Correlation of the index column with the heap order, from pg_statistic,
 * exactly as btcostestimate obtains it for a leading column: the table's
 * statistics for a plain column, the index's own for an expression.
 */
static double
dm_index_correlation(PlannerInfo *root, IndexOptInfo *index)
{
	VariableStatData vardata;
	double		correlation = 0.0;

	memset(&vardata, 0, sizeof(vardata));

	if (index->indexkeys[0] != 0)
	{
		RangeTblEntry *rte = planner_rt_fetch(index->rel->relid, root);
		AttrNumber	colnum = index->indexkeys[0];

		Assert(rte->rtekind == RTE_RELATION);
		if (get_relation_stats_hook &&
			(*get_relation_stats_hook) (root, rte, colnum, &vardata))
		{
			/* the hook supplied the tuple; it must say how to release it */
			if (HeapTupleIsValid(vardata.statsTuple) && !vardata.freefunc)
				elog(ERROR, "no function provided to release variable stats with");
		}
		else
		{
			vardata.statsTuple = SearchSysCache3(STATRELATTINH,
												 ObjectIdGetDatum(rte->relid),
												 Int16GetDatum(colnum),
												 BoolGetDatum(rte->inh));
			vardata.freefunc = ReleaseSysCache;
		}
	}
	else
	{
		if (get_index_stats_hook &&
			(*get_index_stats_hook) (root, index->indexoid, 1, &vardata))
		{
			if (HeapTupleIsValid(vardata.statsTuple) && !vardata.freefunc)
				elog(ERROR, "no function provided to release variable stats with");
		}
		else
		{
			vardata.statsTuple = SearchSysCache3(STATRELATTINH,
												 ObjectIdGetDatum(index->indexoid),
												 Int16GetDatum(1),
												 BoolGetDatum(false));
			vardata.freefunc = ReleaseSysCache;
		}
	}

	if (HeapTupleIsValid(vardata.statsTuple))
	{
		/*
		 * ANALYZE stores the correlation under the type's btree "<", which
		 * is our strategy 1 operator too.
		 */
		Oid			sortop = get_opfamily_member(index->opfamily[0],
												 index->opcintype[0],
												 index->opcintype[0],
												 BTLessStrategyNumber);
		AttStatsSlot sslot;

		if (OidIsValid(sortop) &&
			get_attstatsslot(&sslot, vardata.statsTuple,
							 STATISTIC_KIND_CORRELATION, sortop,
							 ATTSTATSSLOT_NUMBERS))
		{
			Assert(sslot.nnumbers == 1);
			correlation = sslot.numbers[0];
			if (index->reverse_sort[0])
				correlation = -correlation;
			free_attstatsslot(&sslot);
		}
	}

	ReleaseVariableStats(vardata);
	return correlation;
}

/* amcostestimate: btcostestimate's method over the remote tree's size, its node reads dearer than local pages. */
void
dmcostestimate(PlannerInfo *root, IndexPath *path, double loop_count,
			   Cost *indexStartupCost, Cost *indexTotalCost,
			   Selectivity *indexSelectivity, double *indexCorrelation,
			   double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	IndexOptInfo vindex;
	IndexPath	vpath;
	GenericCosts costs;
	int			node_size;
	int			fillfactor;
	double		reltuples;
	double		ntuples;
	double		leaf_entries;
	double		inner_entries;
	double		level_nodes;
	double		nodes;
	double		vpages;
	int			height;
	Cost		descentCost;

	dm_index_shape(index->indexoid, &node_size, &fillfactor, &reltuples);

	/*
	 * Entries in the index.  For a full index the planner's index->tuples is
	 * the table's row estimate.  For a partial one, plancat derives it from
	 * the relation's pages, which says nothing here (one metapage), so use
	 * the count the last build, VACUUM or ANALYZE stored, bounded by the
	 * table; failing that, the share of the table the predicate selects.
	 */
	ntuples = index->tuples;
	if (index->indpred != NIL)
	{
		if (reltuples > 0)
			ntuples = Min(reltuples, index->rel->tuples);
		else
			ntuples = clauselist_selectivity(root, index->indpred,
											 index->rel->relid,
											 JOIN_INNER, NULL) *
				index->rel->tuples;
	}
	ntuples = Max(ntuples, 0.0);

	/*
	 * Nodes at the fill CREATE INDEX leaves them with, level by level up to
	 * the root, and what they come to in local pages, plus the metapage,
	 * which every scan reads (as btree's page count includes its metapage
	 * and inner pages).
	 */
	leaf_entries = Max(1.0, floor((node_size - DM_NODE_HEADER) / DM_LEAF_ENTRY_SIZE) *
					   fillfactor / 100.0);
	inner_entries = Max(2.0, floor((node_size - DM_NODE_HEADER) / DM_INNER_ENTRY_SIZE) *
						fillfactor / 100.0);
	level_nodes = Max(1.0, ceil(ntuples / leaf_entries));
	nodes = level_nodes;
	for (height = 0; level_nodes > 1.0; height++)
	{
		level_nodes = ceil(level_nodes / inner_entries);
		nodes += level_nodes;
	}
	vpages = 1.0 + nodes * node_size / BLCKSZ * DM_REMOTE_FACTOR;

	/*
	 * genericcostestimate on a copy of the index's planner info that has the
	 * remote tree's size instead of the relation's: it pro-rates the leaf
	 * pages visited, models cache effects of repeated scans, and charges
	 * the quals, all as for a btree.
	 */
	vindex = *index;
	vindex.pages = (BlockNumber) Min(ceil(vpages), (double) MaxBlockNumber);
	vindex.tuples = ntuples;
	vpath = *path;
	vpath.indexinfo = &vindex;

	MemSet(&costs, 0, sizeof(costs));
	genericcostestimate(root, &vpath, loop_count, &costs);

	/*
	 * Descent: about log2(N) comparisons, then a node per level plus the
	 * leaf plus the metapage check, charged once per scan like btree's.
	 */
	if (ntuples > 1)
	{
		descentCost = ceil(log(ntuples) / log(2.0)) * cpu_operator_cost;
		costs.indexStartupCost += descentCost;
		costs.indexTotalCost += costs.num_sa_scans * descentCost;
	}
	descentCost = (height + 2) * DM_DESCENT_NODE_COST;
	costs.indexStartupCost += descentCost;
	costs.indexTotalCost += costs.num_sa_scans * descentCost;

	*indexStartupCost = costs.indexStartupCost;
	*indexTotalCost = costs.indexTotalCost;
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = dm_index_correlation(root, index);
	*indexPages = costs.numIndexPages;
}
