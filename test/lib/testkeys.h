/*
 * testkeys.h — the key format as a parameter of the tree tests
 * (TREE_KEY_FORMAT=fixed8|var, like TREE_LEAF_FORMAT; docs/design.md §5.2).
 * The tests keep their 64-bit test keys; tk() turns one into the entry the
 * tree holds: itself in FIXED8 trees, and in VAR trees a byte string that
 * is ordered as the numbers are (so a test's ranges, its model and its
 * expectations hold unchanged, the model comparing entries by bytes),
 * prefix-free, of 2 to the key length cap bytes, keys below 256 shorter
 * than 8 bytes and every 256 consecutive keys sharing their first 8.
 */
#ifndef DM_TESTKEYS_H
#define DM_TESTKEYS_H

#include <stdint.h>

#include "dm_tree.h"

/* 1 when TREE_KEY_FORMAT=var (set by test_tree_key_opts, or read on first use). */
extern int	test_key_var(void);
/*
 * Set the key format in opts (after its node_size): the first call fixes
 * the longest key at dm_tree_key_max of that node size; -1 if the variable
 * is malformed or a later tree's nodes cannot hold those keys.
 */
extern int	test_tree_key_opts(dm_tree_opts *opts);
extern const char *test_key_format_name(void);

/* The entry of test key k with this tid (its suffix lives as long as the process). */
extern dm_entry tk(uint64_t k, uint64_t tid);
/* Range bounds of test key k (dm_key_lo / dm_key_hi). */
extern dm_entry tk_lo(uint64_t k, int incl);
extern dm_entry tk_hi(uint64_t k, int incl);
/* The test key of an entry tk made (of a stored entry read back). */
extern uint64_t tk_key(dm_entry e);
/*
 * The entry tk makes for what e (a stored entry read back, its suffix
 * borrowed from an iterator or a node image) says: *out's suffix is the
 * interned one, so it outlives e's.  0 if e is not exactly such an entry
 * (its bytes differ from the test key's), 1 if it is.  FIXED8: e itself.
 */
extern int	tk_own(dm_entry e, dm_entry *out);
/*
 * Intern keys first .. first + count - 1 now: a test that forks does it
 * before, so the suffixes of entries its children report back through
 * shared memory are at the same addresses in the parent.
 */
extern void tk_intern(uint64_t first, uint64_t count);
/* dm_tree_lookup of test key k. */
extern int	tk_lookup(dm_tree *t, uint64_t k, uint64_t *tids, int max, int *n);

#endif
