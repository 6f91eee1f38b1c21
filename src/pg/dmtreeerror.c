/*
 * dmtreeerror.c — the error for a failed operation on an index's remote
 * tree (dmindex_tree_error): which SQLSTATE a dm_status of the tree means
 * for an index (a lost tree is ERRCODE_INDEX_CORRUPTED with a hint to
 * REINDEX; on a standby a tree the primary dropped is a serialization
 * failure to retry), with the core's one-line detail.  Every file of the
 * access method that runs tree operations raises through it; it calls
 * only dmconn.c and the core.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "utils/rel.h"

#include "dmam.h"

void
dmindex_tree_error(Relation index, dm_tree *tree, int status)
{
	const char *detail = tree ? dm_tree_error(tree) : "";

	/*
	 * A standby reads trees its primary may free once it has dropped or
	 * rebuilt the index, before the standby replays that: reads then fail
	 * validation (the memory is zeroed or another tree's).  Tell it apart
	 * from damage by asking the catalog.
	 */
	if (tree && dm_tree_is_replica(tree) && (status == DM_ERR_CORRUPT || status == DM_ERR_NOTFOUND) &&
		dm_tree_check_exists(tree) == DM_ERR_NOTFOUND)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("the remote tree of index \"%s\" no longer exists", RelationGetRelationName(index)),
				 errdetail("The primary has dropped or rebuilt the index, and this standby has not replayed that yet."),
				 errhint("Retry once the standby has caught up.")));

	switch (status)
	{
		case DM_ERR_INCARNATION:
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\" has lost its data: a memory node restarted",
							RelationGetRelationName(index)),
					 errdetail("%s", detail),
					 errhint("REINDEX the index.")));
			break;
		case DM_ERR_CORRUPT:
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\" is corrupted", RelationGetRelationName(index)),
					 errdetail("%s", detail),
					 errhint("REINDEX the index.")));
			break;
		case DM_ERR_REPLICA:
			/* a standby's handles are read-only (dmindex_open_tree): nothing may get here */
			ereport(ERROR,
					(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
					 errmsg("cannot change the remote tree of index \"%s\" during recovery",
							RelationGetRelationName(index)),
					 errdetail("%s.", detail)));
			break;
		case DM_ERR_TIMEOUT:
			if (tree && dm_tree_is_replica(tree) && strstr(detail, "mid-write") != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
						 errmsg("could not read index \"%s\": a node of its remote tree is being written for too long",
								RelationGetRelationName(index)),
						 errdetail("%s.", detail),
						 errhint("If the primary's backend writing it died, the primary repairs the node when it next writes there; retry the query.")));
			dmindex_raise(status, dmindex_get_client(), NULL);
			break;
		case DM_ERR_FENCED:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("index \"%s\" is now written by another server", RelationGetRelationName(index)),
					 errdetail("%s.", detail),
					 errhint("A standby was promoted in this server's place. Stop this server, or make it a standby of the new primary.")));
			break;
		case DM_ERR_INVALID:
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("invalid operation on index \"%s\"", RelationGetRelationName(index)),
					 errdetail("%s", detail)));
			break;
		default:
			{
				dm_client  *client = dmindex_get_client();
				char		named[128];

				/*
				 * A failure of a memnode or of the way to it (the tree's
				 * message is the client's, which names the memnode), or a
				 * wait interrupted: reported as the memnode's.  Anything
				 * else failed in the tree itself (a descent that did not
				 * converge, an allocation): say so, with the tree's
				 * message, not as a request of memnode "unknown".
				 */
				if (status == DM_ERR_INTERRUPTED || tree == NULL ||
					(client && strcmp(detail, dm_client_error(client)) == 0 &&
					 dmindex_error_memnode(client, named, sizeof(named)) != NULL))
					dmindex_raise(status, client, NULL);
				ereport(ERROR,
						(errcode(status == DM_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY :
								 status == DM_ERR_NOSPACE ? ERRCODE_INSUFFICIENT_RESOURCES :
								 status == DM_ERR_TOOBIG ? ERRCODE_PROGRAM_LIMIT_EXCEEDED :
								 ERRCODE_INTERNAL_ERROR),
						 errmsg("operation on the remote tree of index \"%s\" failed: %s",
								RelationGetRelationName(index), dm_strerror(status)),
						 detail[0] ? errdetail("%s%s", detail,
											   strchr(".!?", detail[strlen(detail) - 1]) ? "" : ".") : 0));
			}
	}
	pg_unreachable();
}
