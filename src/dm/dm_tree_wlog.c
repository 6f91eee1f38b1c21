/*
 * dm_tree_wlog.c — which nodes a tree handle wrote (dm_tree.h: write
 * tracking), so that compute instances whose caches this handle's writes
 * bypass can drop their copies: PostgreSQL's primary WAL-logs the list at
 * every flush and its hot standbys' redo invalidates those nodes.
 *
 * Offloaded writes (dm_offload.c) land through the memnode's executor, not
 * this handle's batches: their nodes come back in the reply and are added
 * here; one whose reply never came (RPC failure, timeout: the executor may
 * have written anything of the subtree or nothing) marks the list lost,
 * which the caller treats like an overflow (the whole tree).
 */
#include <stdlib.h>
#include <string.h>

#include "dm_tree_int.h"

void
dm_tree_track_writes(dm_tree *t, int on)
{
	t->wlog_on = on ? 1 : 0;
	t->wlog_n = 0;
	t->wlog_overflow = 0;
}

void
dm_tree_wlog_add(dm_tree *t, dm_gaddr addr)
{
	if (!t->wlog_on || t->wlog_overflow)
		return;
	/* the last few are the likeliest duplicates (a leaf written again and again) */
	for (int i = t->wlog_n - 1; i >= 0 && i >= t->wlog_n - 4; i--)
		if (t->wlog[i] == addr)
			return;
	if (t->wlog_n == t->wlog_cap)
	{
		int			cap = t->wlog_cap ? t->wlog_cap * 2 : 64;
		dm_gaddr   *w;

		if (t->wlog_n >= DM_TREE_WLOG_MAX || (w = realloc(t->wlog, sizeof(*w) * (size_t) cap)) == NULL)
		{
			t->wlog_overflow = 1;
			return;
		}
		t->wlog = w;
		t->wlog_cap = cap;
	}
	t->wlog[t->wlog_n++] = addr;
}

void
dm_tree_wlog_lost(dm_tree *t)
{
	if (t->wlog_on)
		t->wlog_overflow = 1;
}

static int
cmp_addr(const void *a, const void *b)
{
	dm_gaddr	x = *(const dm_gaddr *) a,
				y = *(const dm_gaddr *) b;

	return x < y ? -1 : x > y;
}

const dm_gaddr *
dm_tree_written_nodes(dm_tree *t, int *n, int *overflow)
{
	int			m = 0;

	*overflow = t->wlog_overflow;
	if (t->wlog_n > 1)
	{
		qsort(t->wlog, (size_t) t->wlog_n, sizeof(dm_gaddr), cmp_addr);
		for (int i = 0; i < t->wlog_n; i++)
			if (m == 0 || t->wlog[m - 1] != t->wlog[i])
				t->wlog[m++] = t->wlog[i];
	}
	else
		m = t->wlog_n;
	*n = m;
	/* the next writes start a new list */
	t->wlog_n = 0;
	t->wlog_overflow = 0;
	return t->wlog;
}

void
dm_tree_wlog_free(dm_tree *t)
{
	free(t->wlog);
	t->wlog = NULL;
	t->wlog_n = t->wlog_cap = 0;
}
