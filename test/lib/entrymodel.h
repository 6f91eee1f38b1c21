/*
 * entrymodel.h — the reference the tree tests compare against: a sorted
 * array of distinct (key, tid) entries with the same ordering as the remote
 * tree, the tests' PRNG, formatting of entries and ranges for failure
 * messages, and the check that a whole tree equals the model.
 */
#ifndef DM_ENTRYMODEL_H
#define DM_ENTRYMODEL_H

#include <stddef.h>

#include "dm_tree.h"

typedef struct model
{
	dm_entry   *e;
	size_t		n,
				cap;
} model;

extern size_t m_lower(const model *m, dm_entry x);	/* first index with entry >= x */
extern size_t m_upper(const model *m, dm_entry x);	/* first index with entry > x */
extern int	m_has(const model *m, dm_entry x);
extern int	m_insert(model *m, dm_entry x);	/* 1 if added */
extern int	m_delete(model *m, dm_entry x);	/* 1 if removed */
extern void m_copy(model *dst, const model *src);
extern void m_free(model *m);
/* The slice [*from, *to) of a range (empty if lo > hi). */
/* Sort entries and drop duplicates in place; returns the new count. */
extern int	sort_unique(dm_entry *e, int n);
extern void m_range(const model *m, const dm_range *r, size_t *from, size_t *to);
extern int	in_range(const dm_range *r, dm_entry e);

/*
 * The tree tests' deterministic PRNG (splitmix64): set rng to seed it, per
 * process (each forked child reseeds its own stream).
 */
extern uint64_t rng;
extern uint64_t rnd(void);
extern uint64_t rnd_below(uint64_t n);	/* 0 when n is 0 */
/* The tree tests' knobs: TREE_SEED (run seed, default 1) and TREE_SCALE (percent of the operations, default 100); reported with tap_diag. */
extern void tree_test_env(uint64_t *seed, int *scale);
/* Seed rng for one named stream (a test section, a process idx of it) from a run seed. */
extern void rng_seed_label(uint64_t seed, const char *label, uint64_t idx);

/*
 * Two assertions: the tree verifies, and its full scans both ways (with
 * `lookups`, also point lookups of a sample of 50 model entries) equal the
 * model, with dm_tree_verify's count; what differs goes to tap_diag.
 * 1 if both hold.
 */
extern int	tree_matches_model(dm_tree *t, const model *m, int lookups, const char *what);

/*
 * Nodes of the tree as dm_tree_stats_get counts them (0 if it fails);
 * *height and *inner (the nodes above the leaves) too unless NULL.
 */
extern uint64_t tree_node_count(dm_tree *t, int *height, uint64_t *inner);

/* "(key,tid)", "(NULL,tid)", "(INF)"; "[lo .. hi) forward"; rotating static buffers. */
extern const char *E(dm_entry e);
extern const char *R(const dm_range *r);

#endif
