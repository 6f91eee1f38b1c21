/*
 * nodesearch.h — the in-node searches of dm_node.h with the entry passed by
 * value, as the node unit tests (test_node, test_node_var) call them; the
 * library takes it by pointer, for the hot paths.
 */
#ifndef NODESEARCH_H
#define NODESEARCH_H

#include "dm_node.h"

static inline int
leaf_lb(const void *buf, dm_entry e)
{
	return dm_leaf_lower_bound(buf, &e);
}

static inline int
child_ix(const void *buf, dm_entry e)
{
	return dm_inner_child_index(buf, &e);
}

#endif
