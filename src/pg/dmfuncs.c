/*
 * dmfuncs.c — SQL functions that show and probe memnodes:
 * dmindex_memnodes() and dmindex_memnode_ping().
 *
 * They are how an administrator checks the dmindex.memnodes setting, so an
 * unreachable memnode is a row (reachable = false, with the reason), not an
 * error; only a cancel or a broken argument raises one.
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"

#include "dmindex.h"

PG_FUNCTION_INFO_V1(dmindex_memnodes);
PG_FUNCTION_INFO_V1(dmindex_memnode_ping);

/* 10 in schema 0.1, 12 (auth_failures, access_denied) from 0.2 */
#define MEMNODES_COLS 12

/* Parse a memnode list given as an argument, or raise an error. */
static DmMemnodeList *
parse_argument(text *arg)
{
	char	   *value = text_to_cstring(arg);
	char		errbuf[256];
	DmMemnodeList *list;

	list = dmindex_parse_memnodes(value, palloc, errbuf, sizeof(errbuf));
	if (list == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid memnode list \"%s\"", value),
				 errdetail_internal("%s", errbuf)));
	return list;
}

/*
 * dmindex_memnodes() — one row per entry of dmindex.memnodes, through this
 * backend's own client: "reachable" means this backend can use the memnode
 * now (a memnode that restarted since this backend first saw it is not,
 * until the indexes on it are dealt with).
 *
 * dmindex_memnodes(text) — the same for an explicit list, through a
 * throwaway client that sees every memnode fresh.
 */
Datum
dmindex_memnodes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DmMemnodeList *list;
	DmTempClient *temp = NULL;
	dm_client  *client;

	InitMaterializedSRF(fcinfo, 0);

	if (PG_NARGS() > 0)
	{
		list = parse_argument(PG_GETARG_TEXT_PP(0));
		temp = dmindex_temp_client_create();
		client = dmindex_temp_client_get(temp);
	}
	else
	{
		list = dmindex_memnode_list;
		client = dmindex_get_client();
	}

	for (int i = 0; i < list->count; i++)
	{
		const char *address = list->addresses[i];
		Datum		values[MEMNODES_COLS];
		bool		nulls[MEMNODES_COLS];
		dm_node_info info;
		dm_node_stats stats;
		uint16		node_id = 0;
		bool		have_info = false;
		int			rc;

		CHECK_FOR_INTERRUPTS();

		rc = dmindex_connect(client, address, false, &node_id);
		if (rc == DM_OK || rc == DM_ERR_INCARNATION)
			have_info = dmindex_node_info(client, node_id, &info);
		if (rc == DM_OK)
			rc = dm_node_stats_get(client, node_id, &stats);
		if (rc == DM_ERR_INTERRUPTED)
			dmindex_raise(rc, client, address);

		memset(nulls, true, sizeof(nulls));
		values[0] = CStringGetTextDatum(address);
		nulls[0] = false;
		values[2] = BoolGetDatum(rc == DM_OK);
		nulls[2] = false;
		if (have_info)
		{
			values[1] = Int32GetDatum(info.node_id);
			nulls[1] = false;
			values[3] = CStringGetTextDatum(info.backend == DM_BACKEND_SHM ? "shm" :
											info.backend == DM_BACKEND_UCX ? "ucx" : "tcp");
			nulls[3] = false;
			values[4] = CStringGetTextDatum(psprintf("%016" INT64_MODIFIER "x",
													 (uint64) info.incarnation));
			nulls[4] = false;
		}
		if (rc == DM_OK)
		{
			values[5] = Int64GetDatum((int64) stats.region_size);
			values[6] = Int64GetDatum((int64) stats.chunks_total);
			values[7] = Int64GetDatum((int64) stats.chunks_used);
			/* (the memnode counts instance claims out: they are not trees) */
			values[8] = Int64GetDatum((int64) stats.trees);
			nulls[5] = nulls[6] = nulls[7] = nulls[8] = false;
			/* the authentication counters: columns of schema 0.2 on */
			if (rsinfo->setDesc->natts >= MEMNODES_COLS)
			{
				values[10] = Int64GetDatum((int64) stats.auth_failures);
				values[11] = Int64GetDatum((int64) stats.access_denied);
				nulls[10] = nulls[11] = false;
			}
		}
		else
		{
			values[9] = CStringGetTextDatum(dmindex_error_text(client, rc,
															   address));
			nulls[9] = false;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
							 values, nulls);
	}

	if (temp != NULL)
		dmindex_temp_client_destroy(temp);
	return (Datum) 0;
}

/*
 * dmindex_memnode_ping(address) — connect with a throwaway client and time
 * one PING round trip, in milliseconds.  Failures raise the same errors an
 * index access would, which is the point: it shows what a query would say.
 */
Datum
dmindex_memnode_ping(PG_FUNCTION_ARGS)
{
	DmMemnodeList *list = parse_argument(PG_GETARG_TEXT_PP(0));
	DmTempClient *temp;
	dm_client  *client;
	const char *address;
	uint16		node_id;
	instr_time	start;
	instr_time	elapsed;
	int			rc;

	if (list->count != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dmindex_memnode_ping() takes exactly one memnode address")));
	address = list->addresses[0];

	temp = dmindex_temp_client_create();
	client = dmindex_temp_client_get(temp);

	rc = dm_client_connect(client, address, &node_id);
	if (rc != DM_OK)
		dmindex_raise(rc, client, address);

	INSTR_TIME_SET_CURRENT(start);
	rc = dm_ping(client, node_id);
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	if (rc != DM_OK)
		dmindex_raise(rc, client, address);

	dmindex_temp_client_destroy(temp);
	PG_RETURN_FLOAT8(INSTR_TIME_GET_MILLISEC(elapsed));
}
