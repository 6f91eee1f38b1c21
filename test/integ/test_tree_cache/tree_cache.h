/*
 * tree_cache.h — what the files of the cached-tree test share
 * (test/integ/test_tree_cache/, built into build/test/integ/test_tree_cache;
 * main.c says what it tests): transports, caches in memory shared with
 * forked children, the key sets a writer owns and what a read may return,
 * the operation mixes, the children's reports, and each group's entry point.
 */
#ifndef DM_TREE_CACHE_H
#define DM_TREE_CACHE_H

#include <stdint.h>

#include "dm_cache.h"
#include "dm_client.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testkeys.h"
#include "testutil.h"

#define NODE_SIZE	256
#define NTIDS		4			/* tids 1..NTIDS per key for writers' entries; tid 0 = stable */
#define FOREIGN_TID	(NTIDS + 1)	/* only in writes that must be refused: never in the tree */
#define MAXCHILD	8
#define MAXFINAL	8192		/* a writer's final entries at most */
#define HOME		1			/* memnode id */
/* ---- transports, clients, trees ------------------------------------------------------ */

typedef struct transport
{
	const char *name;
	int			backend;
	uint32_t	flags;
} transport;

/* ---- caches in memory shared with forked children -------------------------------------- */

typedef struct shcache
{
	dm_cache   *c;
	void	   *mem;
	size_t		len;
} shcache;

/* ---- key sets and expectations ------------------------------------------------------------ */

/*
 * The keys a writer owns: base .. base+span-1 with key % mod == rem (mod 0:
 * none), and the NULL entries if `nulls`.  Nobody else writes them, so
 * their entries are known exactly from this writer's model.
 */
typedef struct keyset
{
	uint64_t	base,
				span,
				mod,
				rem;
	int			nulls;
} keyset;

/*
 * What a read may return: the union of a and b (disjoint; either NULL) is
 * known exactly for the stable entries (tid 0) and the keys of `own`; with
 * `strict` it is the whole tree.  Other entries are concurrent writers':
 * only their order and shape can be checked.
 */
typedef struct expect
{
	const model *a,
			   *b;
	const keyset *own;
	int			strict;
} expect;

/* ---- random operations ---------------------------------------------------------------- */

/* Cumulative percentages of the operation kinds. */
typedef struct opmix
{
	int			ins,
				del,
				batch,
				contains,
				lookup,
				scan,
				foreign;		/* writes outside the instance's keys: must fail */
} opmix;

typedef struct opctx
{
	dm_tree    *t;
	model	   *mine;			/* this writer's entries (the keys of own) */
	const keyset *own;
	const keyset *foreign;		/* keys this instance does not own (NULL: no such op) */
	const expect *x;
	uint64_t	read_lo,
				read_hi;		/* keys that lookups and scans aim at */
	dm_tree    *mirror;			/* a handle without cache (may be NULL): sees every write at once */
	uint64_t	notowner;		/* refused writes seen */
	uint64_t	scans;
} opctx;

/* ---- processes --------------------------------------------------------------------------- */

typedef struct child_rep
{
	int			failed;
	char		msg[1200];
	uint64_t	ops,
				scans,
				notowner,
				nfinal;
	dm_tree_counters ctr;
	dm_counters cc;
} child_rep;

typedef struct shared
{
	int			stop;			/* scanners stop when set */
	child_rep	rep[MAXCHILD];
	dm_entry	final[MAXCHILD][MAXFINAL];
} shared;

typedef int (*child_fn) (int idx, void *arg);
/* What the writer and scanner children of groups 3 and 4 do. */
typedef struct workcfg
{
	const char *label;
	const transport *tr;
	dm_tree_name tn;
	int			nwriters;		/* children 0..nwriters-1 write; the rest scan */
	int			nops;
	const opmix *mix;
	shcache    *cache[MAXCHILD];
	int			inst[MAXCHILD];
	keyset		own[MAXCHILD];
	keyset		foreign[MAXCHILD];	/* mod 0: no foreign writes */
	const model *stable;		/* entries with tid 0, never deleted */
	uint64_t	read_lo,
				read_hi;
} workcfg;

/* ---- shared state (each explained where it is defined, in this folder's .c files) ---- */

extern const opmix MIX_GROW;
extern const opmix MIX_MIXED;
extern const opmix MIX_SHRINK;
extern const opmix MIX_MULTI;
extern memnode_proc mn;
extern uint64_t g_seed;
extern int g_scale;
extern const transport TR_SHM;
extern const transport TR_TCP;
extern const transport TR_SHM_TEAR;
extern shared *sh;

/* ---- functions shared between the files of this folder ---- */

extern int scaled(int n);
extern const char *terr(const dm_tree *t);
extern uint64_t sum_levels(const uint64_t *a);
extern uint64_t atomics_of(const dm_counters *cc);
extern dm_client *client_new(const transport *tr, const char *who);
extern dm_tree *tree_new(dm_client *c, const dm_tree_name *tn);
extern int tree_open(dm_client *c, const dm_tree_name *tn, dm_cache *cache, int inst, dm_tree **out);
extern int bulk_load(dm_tree *t, const model *m, int fillfactor);
extern int shcache_new(shcache *sc, dm_cache_policy policy, uint32_t nframes, uint32_t permille);
extern void shcache_free(shcache *sc);
extern void diag_cache(const char *label, shcache *sc);
extern int check_cache(const char *label, dm_tree *t, shcache *sc, uint64_t *checked_out);
extern int ks_own(const keyset *ks, uint64_t key);
extern dm_entry ks_entry(const keyset *ks, uint64_t tid);
/* A NULL entry; in VAR trees (no NULLs) test key UINT64_MAX, also the last range's. */
extern dm_entry test_null(uint64_t tid);
extern int scan_check(dm_tree *t, const dm_range *r, const expect *x, size_t *count, char *why, size_t whylen);
extern int lookup_check(dm_tree *t, uint64_t key, const expect *x, char *why, size_t whylen);
extern int check_contents(const char *label, const char *who, dm_tree *t, const expect *x);
extern int check_lookups(const char *label, const char *who, dm_tree *t, const expect *x, uint64_t lo, uint64_t hi, uint64_t step);
extern int run_ops(opctx *o, const opmix *mx, int first_op, int nops, char *why, size_t whylen);
extern dm_tree_counters run_work(workcfg *w, int nchildren, model *final);
extern void group1(void);
extern void group2(void);
extern void group3(void);
extern void group6(void);
extern void group4(void);
extern void group5(void);

#endif
