/*
 * tree_model.h — what the files of the model-based tree test share
 * (test/integ/test_tree_model/, built into build/test/integ/test_tree_model;
 * main.c says what it tests): the transport configurations, the memnodes,
 * the run's seed and scale, the op log and failure messages, random entries
 * and ranges over the test's key space, the checks of the tree against the
 * model, the operations checked one by one, and each section's entry point.
 */
#ifndef DM_TREE_MODEL_H
#define DM_TREE_MODEL_H

#include <stdint.h>

#include "dm_client.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testkeys.h"
#include "testutil.h"

/* Tids use at most 62 bits (dm_tree.h). */
#define TID_MASK ((UINT64_C(1) << 62) - 1)

typedef struct tcfg
{
	const char *name;
	int			backend;
	uint32_t	flags;
} tcfg;

/*
 * Keys: KEY_BASE + i * KEY_STRIDE for i < nkeys, so random key bounds fall
 * both on and between keys, plus the edge keys 0, 1, MAX-1 and MAX (a
 * non-NULL MAX sorts just before the NULLs).  One hot key gets hundreds of
 * tids so its run spans many leaves.
 */
#define KEY_BASE 1000
#define KEY_STRIDE 8
#define HOT_KEY (KEY_BASE + 77 * KEY_STRIDE)
#define DUP_KEY (UINT64_C(1) << 40)	/* phase_dups: far from the random keys */
/*
 * Keys are test keys (test/lib/testkeys.h): with TREE_KEY_FORMAT=var each is
 * a byte string (tk), ordered as the numbers, and the model compares entries
 * by those bytes.  VAR trees have no NULL entries (the access method gives
 * NULLs as bytes): there the NULLs of the FIXED8 mix become the keys
 * MAX-3 and MAX-2, also at the top of the key space.
 */

/* ---- shared state (each explained where it is defined, in this folder's .c files) ---- */

extern const tcfg cfg_tcp;
extern const tcfg cfg_shm;
extern const tcfg cfg_ucx;
extern memnode_proc mn;
extern uint64_t g_seed;
extern int g_scale;
extern unsigned oplog_n;
extern char failmsg[2048];
extern uint64_t g_nkeys;
extern uint64_t g_ntids;
extern memnode_proc mn_small;

/* ---- functions shared between the files of this folder ---- */

extern int scaled(int n);
extern void oplog(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void failf(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern int check_nofail(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern dm_entry rand_entry(void);
extern uint64_t rand_key(const model *m);
extern dm_range rand_range(const model *m);
extern dm_client *connect_client(const tcfg *cf, const char *addr);
extern uint64_t chunks_used(dm_client *c);
extern const char *terr(dm_tree *t);
extern int check_range(dm_tree *t, const model *m, const dm_range *r);
extern int check_lookup(dm_tree *t, const model *m, uint64_t key);
extern void check_all(dm_tree *t, const model *m, const char *label);
extern int op_delete(dm_tree *t, model *m, dm_entry e);
extern int op_contains(dm_tree *t, const model *m, dm_entry e);
extern int phase_random(dm_tree *t, model *m, int nops, int pi, int pd);
extern void phase_hot(dm_tree *t, model *m);
extern void phase_dups(dm_tree *t, model *m);
extern void phase_batches(dm_tree *t, model *m, int nbatches);
extern void phase_scan_interleaved(dm_tree *t, model *m, int nscans);
extern void phase_drain(dm_tree *t, model *m, const char *label);
extern void run_model(const tcfg *cf, uint32_t ns);
extern void run_bulk(const tcfg *cf, uint32_t ns, int ff, size_t n);
extern void run_errors(const tcfg *cf);
extern void run_nospace(const tcfg *cf);
extern void run_corrupt(const tcfg *cf);
extern void run_verify_detects(const tcfg *cf);

#endif
