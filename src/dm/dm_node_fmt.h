/*
 * dm_node_fmt.h — the few facts of the tree's node format that code outside
 * the tree needs: the node sizes, the header size, how many children an
 * inner node of a size holds (the node cache keeps one swizzle hint per
 * child), and where a node's magic and level are (the cache's consistency
 * check).  The layout itself is documented in dm_tree.h; dm_node.h, the
 * tree's own view of a node, checks at compile time that it agrees with
 * these.  Needs nothing but dm_types.h, so the cache (dm_cache*.c) uses the
 * node format without seeing the tree.
 */
#ifndef DM_NODE_FMT_H
#define DM_NODE_FMT_H

#include <string.h>

#include "dm_types.h"

#define DM_NODE_MAGIC	0xB71E
#define DM_NODE_HEADER	88
#define DM_NODE_MIN		256
#define DM_NODE_MAX		4096

#define DM_NODE_OFF_MAGIC	24	/* u16 */
#define DM_NODE_OFF_LEVEL	26	/* u8, 0 = leaf */
#define DM_NODE_INNER_ENTRY	24	/* bytes of an inner entry: separator (key, tid), child */

/* Children an inner node of node_size bytes holds at most. */
static inline int
dm_node_fmt_fanout(uint32_t node_size)
{
	return (int) ((node_size - DM_NODE_HEADER) / DM_NODE_INNER_ENTRY);
}

/* The level of the node image at buf, or -1 if it does not carry the node magic. */
static inline int
dm_node_fmt_level(const void *buf)
{
	uint16_t	magic;
	uint8_t		level;

	memcpy(&magic, (const uint8_t *) buf + DM_NODE_OFF_MAGIC, sizeof(magic));
	memcpy(&level, (const uint8_t *) buf + DM_NODE_OFF_LEVEL, sizeof(level));
	return magic == DM_NODE_MAGIC ? level : -1;
}

#endif							/* DM_NODE_FMT_H */
