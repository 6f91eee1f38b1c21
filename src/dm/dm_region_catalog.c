/*
 * dm_region_catalog.c — the tree catalog of a memory node's region (layout
 * in dm_region.h): creating an entry (its tree id carries the slot, see
 * dm_region_int.h), opening, dropping (unpublished before its chunks are
 * freed), owners, counting and listing.  Like the rest of dm_region*.c not
 * thread-safe: the memnode calls it under its region lock.
 */
#include <stddef.h>
#include <string.h>

#include "dm_region.h"
#include "dm_region_int.h"

static void
fill_info(const dm_region *r, uint32_t slot, dm_tree_info *out)
{
	const dm_cat_entry *e = &r->catalog[slot];
	uint64_t	entry_off = r->sb->catalog_off + (uint64_t) slot * DM_CAT_ENTRY_SIZE;

	memset(out, 0, sizeof(*out));
	out->name = e->name;
	out->tree_id = e->tree_id;
	out->root_addr = dm_gaddr_make(r->node_id, entry_off + offsetof(dm_cat_entry, root));
	out->meta_addr = dm_gaddr_make(r->node_id, entry_off + offsetof(dm_cat_entry, meta));
	out->created_unix_ns = e->created_unix_ns;
	out->chunks = e->chunks;
	out->owner_pid = e->owner_pid & DM_CAT_PID_MASK;
	out->slot = slot;
	out->state = (uint32_t) e->state;
}

static int
find_live(const dm_region *r, const dm_tree_name *name)
{
	for (uint32_t s = 0; s < r->sb->catalog_capacity; s++)
		if (r->catalog[s].tree_id != 0 && dm_tree_name_equal(&r->catalog[s].name, name))
			return (int) s;
	return -1;
}

int
dm_region_cat_create(dm_region *r, const dm_tree_name *name, uint64_t owner_pid,
					 uint64_t now_unix_ns, dm_tree_info *out)
{
	return dm_region_cat_create_owned(r, name, owner_pid, 0, now_unix_ns, out);
}

int
dm_region_cat_create_owned(dm_region *r, const dm_tree_name *name, uint64_t owner_pid,
						   uint64_t owner_ident, uint64_t now_unix_ns, dm_tree_info *out)
{
	dm_cat_entry *e = NULL;
	uint32_t	slot;
	uint64_t	seq;

	if (!dm_tree_name_valid(name))
		return DM_ERR_INVALID;
	if (find_live(r, name) >= 0)
		return DM_ERR_EXISTS;
	for (slot = 0; slot < r->sb->catalog_capacity; slot++)
		if (r->catalog[slot].tree_id == 0)
		{
			e = &r->catalog[slot];
			break;
		}
	if (e == NULL)
		return DM_ERR_CATALOG_FULL;

	seq = r->sb->next_tree_seq++ & SEQ_MASK;
	if (seq == 0)
		seq = r->sb->next_tree_seq++ & SEQ_MASK;
	memset(e, 0, sizeof(*e));
	e->name = *name;
	e->state = DM_TREE_STATE_LIVE;
	e->created_unix_ns = now_unix_ns;
	e->owner_pid = (owner_pid & DM_CAT_PID_MASK) | (owner_ident << 32);
	/* publish last: a client reading the catalog sees a complete entry */
	__atomic_store_n(&e->tree_id, dm_gaddr_make(r->node_id, (seq << SLOT_BITS) | slot),
					 __ATOMIC_RELEASE);
	r->sb->trees++;
	fill_info(r, slot, out);
	return DM_OK;
}

int
dm_region_cat_open(dm_region *r, const dm_tree_name *name, dm_tree_info *out)
{
	int			slot;

	if (!dm_tree_name_valid(name))
		return DM_ERR_INVALID;
	if ((slot = find_live(r, name)) < 0)
		return DM_ERR_NOTFOUND;
	fill_info(r, (uint32_t) slot, out);
	return DM_OK;
}

int
dm_region_cat_owner(const dm_region *r, const dm_tree_name *name, uint64_t *owner_ident, uint32_t *slot)
{
	int			s;

	if (!dm_tree_name_valid(name))
		return DM_ERR_INVALID;
	if ((s = find_live(r, name)) < 0)
		return DM_ERR_NOTFOUND;
	*owner_ident = dm_cat_owner_ident(&r->catalog[s]);
	if (slot)
		*slot = (uint32_t) s;
	return DM_OK;
}

int
dm_region_tree_owner(const dm_region *r, uint64_t tree_id, uint64_t *owner_ident)
{
	dm_cat_entry *e = dm_region_entry_of_tree((dm_region *) r, tree_id);

	if (e == NULL)
		return DM_ERR_NOTFOUND;
	*owner_ident = dm_cat_owner_ident(e);
	return DM_OK;
}

int
dm_region_cat_drop(dm_region *r, const dm_tree_name *name, uint64_t *chunks_freed)
{
	int			slot;
	dm_cat_entry *e;
	uint64_t	id;

	if (!dm_tree_name_valid(name))
		return DM_ERR_INVALID;
	if ((slot = find_live(r, name)) < 0)
		return DM_ERR_NOTFOUND;
	e = &r->catalog[slot];
	id = e->tree_id;
	/*
	 * Unpublish first, then free: a memnode killed in between leaves chunks
	 * owned by a tree id no entry has, which the next attach frees
	 * (dm_region_recover), never a listed tree whose chunks are gone.
	 */
	__atomic_store_n(&e->tree_id, 0, __ATOMIC_RELEASE);
	*chunks_freed = dm_region_chunk_free_owner(r, id);
	memset(e, 0, sizeof(*e));
	r->sb->trees--;
	return DM_OK;
}

/*
 * Live catalog entries of kind DM_TREE_NAMED whose name starts with prefix
 * (e.g. instance claims, dm_claim.h): the memnode's statistics count trees
 * without them.  Called under the region lock.
 */
uint64_t
dm_region_cat_count_named(const dm_region *r, const char *prefix)
{
	size_t		len = strlen(prefix);
	uint64_t	n = 0;

	for (uint64_t i = 0; i < r->sb->catalog_capacity; i++)
	{
		const dm_cat_entry *e = &r->catalog[i];

		if (__atomic_load_n(&e->tree_id, __ATOMIC_ACQUIRE) != 0 &&
			e->state == DM_TREE_STATE_LIVE && e->name.kind == DM_TREE_NAMED &&
			strncmp(e->name.name, prefix, len) == 0)
			n++;
	}
	return n;
}

uint32_t
dm_region_cat_list(dm_region *r, uint32_t start_slot, uint32_t max,
				   uint32_t kind, uint32_t dboid, uint64_t sysid,
				   dm_tree_info *out, uint32_t *next_slot)
{
	return dm_region_cat_list_owned(r, start_slot, max, kind, dboid, sysid, NULL, out, next_slot);
}

uint32_t
dm_region_cat_list_owned(dm_region *r, uint32_t start_slot, uint32_t max,
						 uint32_t kind, uint32_t dboid, uint64_t sysid,
						 const uint64_t *owner_ident,
						 dm_tree_info *out, uint32_t *next_slot)
{
	uint32_t	n = 0;
	uint32_t	s;
	uint32_t	cap = (uint32_t) r->sb->catalog_capacity;

	for (s = start_slot; s < cap && n < max; s++)
	{
		const dm_cat_entry *e = &r->catalog[s];

		if (e->tree_id == 0)
			continue;
		if (owner_ident != NULL && dm_cat_owner_ident(e) != *owner_ident)
			continue;
		if (kind != 0 && e->name.kind != kind)
			continue;
		if (e->name.kind == DM_TREE_PG &&
			((dboid != 0 && e->name.dboid != dboid) || (sysid != 0 && e->name.sysid != sysid)))
			continue;
		fill_info(r, s, &out[n++]);
	}
	*next_slot = s;
	return n;
}
