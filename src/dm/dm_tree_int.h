/*
 * dm_tree_int.h — internals of the remote tree shared by its files:
 * dm_tree_io.c (node I/O, locks, allocation), dm_tree.c (handles, descent,
 * insert/delete), dm_tree_scan.c (iterators), dm_tree_bulk.c (bulk load),
 * dm_tree_verify.c (verify and statistics).
 */
#ifndef DM_TREE_INT_H
#define DM_TREE_INT_H

#include "dm_node.h"

#define DM_TREE_META_MAGIC UINT64_C(0x444D5452)	/* "DMTR" */
#define DM_TREE_FORMAT 1
#define DM_TREE_MAX_LEVELS 16

typedef struct dm_slab
{
	uint16_t	memnode;
	dm_gaddr	cur;
	dm_gaddr	end;
} dm_slab;

struct dm_tree
{
	dm_client  *c;
	dm_tree_name name;
	dm_tree_info info;			/* catalog entry on the home memnode */
	uint16_t	home;
	uint32_t	node_size;
	int			leaf_cap;
	int			inner_cap;
	int			placement_level;	/* M */
	int			nmemnodes;
	uint16_t	memnodes[DM_TREE_MAX_MEMNODES];
	int			lock_timeout_ms;
	uint64_t	token;			/* identifies this handle in lock words */
	uint64_t	lock_seq;		/* makes every acquisition's lock value different */
	dm_gaddr	root;			/* cached root address (0 = read the root word) */
	unsigned	rr;				/* round-robin cursor for placement above level M */
	dm_slab		slabs[DM_TREE_MAX_MEMNODES];
	dm_tree_counters ctr;
	char		err[512];
};

/* dm_tree_io.c */
extern int	dm_tree_fail(dm_tree *t, int status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
extern int	dm_tree_read_root(dm_tree *t, dm_gaddr *root);
extern int	dm_node_read(dm_tree *t, dm_gaddr addr, void *buf);
/* Read several nodes in one round trip per memnode; each validated (retried alone). */
extern int	dm_node_read_many(dm_tree *t, const dm_gaddr *addrs, int n, uint8_t *bufs);
extern int	dm_node_lock(dm_tree *t, dm_gaddr addr, void *buf);
extern int	dm_node_unlock(dm_tree *t, dm_gaddr addr);
/*
 * Write new (not yet reachable) nodes, then the locked node at addr with
 * its lock released, in this order (sealing each: version and checksum).
 * When everything is on one memnode this is a single round trip.
 */
extern int	dm_node_write_unlock(dm_tree *t, dm_gaddr addr, void *buf,
								 int nnew, const dm_gaddr *new_addrs, uint8_t *const *new_bufs);
extern int	dm_node_alloc(dm_tree *t, uint16_t memnode, dm_gaddr *addr);
/* Memnode for a new node at level, split off a node on memnode `from`. */
extern uint16_t dm_tree_place(dm_tree *t, int level, uint16_t from);

/* dm_tree.c */
/* Find the node at `level` that covers e: its copy in buf, address in *addr. */
extern int	dm_tree_descend(dm_tree *t, dm_entry e, int level, dm_gaddr *addr, void *buf);
/* Like descend, but to the leaf holding the greatest entry < e. */
extern int	dm_tree_descend_before(dm_tree *t, dm_entry e, dm_gaddr *addr, void *buf);

#endif
