/*
 * dm_tree_name.c — tree names (dm_types.h): whether a name is well formed,
 * equality, and the two ways a name is made: a label (tests, benchmarks,
 * instance claims) or what PostgreSQL names an index's tree by (system id,
 * database, relfilenode, creating transaction).  Used by the catalog
 * (dm_region_catalog.c), the client's RPCs and the access method alike.
 */
#include <string.h>

#include "dm_types.h"

int
dm_tree_name_valid(const dm_tree_name *n)
{
	switch (n->kind)
	{
		case DM_TREE_NAMED:
			return n->name[0] != '\0' && memchr(n->name, '\0', DM_TREE_NAME_LEN) != NULL;
		case DM_TREE_PG:
			return n->relfilenode != 0;
		default:
			return 0;
	}
}

int
dm_tree_name_equal(const dm_tree_name *a, const dm_tree_name *b)
{
	if (a->kind != b->kind)
		return 0;
	if (a->kind == DM_TREE_NAMED)
		return strncmp(a->name, b->name, DM_TREE_NAME_LEN) == 0;
	return a->sysid == b->sysid && a->dboid == b->dboid &&
		a->relfilenode == b->relfilenode && a->generation == b->generation;
}

int
dm_tree_name_named(dm_tree_name *n, const char *name)
{
	size_t		len = strlen(name);

	memset(n, 0, sizeof(*n));
	n->kind = DM_TREE_NAMED;
	if (len == 0 || len >= DM_TREE_NAME_LEN)
		return DM_ERR_INVALID;
	memcpy(n->name, name, len);
	return DM_OK;
}

void
dm_tree_name_pg(dm_tree_name *n, uint64_t sysid, uint32_t dboid,
				uint32_t relfilenode, uint32_t generation)
{
	memset(n, 0, sizeof(*n));
	n->kind = DM_TREE_PG;
	n->sysid = sysid;
	n->dboid = dboid;
	n->relfilenode = relfilenode;
	n->generation = generation;
}
