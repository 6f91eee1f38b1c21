/*
 * test_tree_concurrency.c — the remote B-link tree (dm_tree.h) under
 * concurrent writers and scanners in separate processes, with the
 * transports' tearing mode on (DM_CLIENT_TEAR: every READ/WRITE is split
 * into 8-byte pieces with other operations interleaved): over tcp, over
 * shm, and over shm starting from a 3-leaf tree (so the root splits while
 * everybody descends through it).  TREE_BACKEND=tcp|shm runs only those.
 *
 * Why: the tree's correctness under concurrency rests on lock-free readers
 * validating nodes by checksum, on fences and right-links making half-done
 * splits safe, and on iterators surviving splits under them.  None of that
 * is exercised by one process.  256-byte nodes (10 entries a leaf) make
 * nearly every insert burst split something, and a small shared key range
 * makes the processes collide on the same leaves all the time.
 *
 * Design (so that the right final answer is known exactly):
 *   - stable entries (tid owner 0) are inserted before anything starts and
 *     never deleted;
 *   - NW (6) writer processes share one key range (with a hot spot of two
 *     keys that gets 30% of the writes, so writers queue on the same leaves
 *     while those split) but each owns its tids
 *     (owner w in bits 40.. of the tid), inserts and deletes only its own
 *     (singles and sorted batches) and keeps a local model of them.  Since
 *     nobody else touches its entries, every insert/delete's "existed",
 *     every contains and the writer's own tids in each lookup must match its
 *     model exactly even while the others run; at the end it publishes its
 *     final set in shared memory;
 *   - NS scanner processes scan random ranges forward and backward until
 *     the writers are done, checking that entries come strictly ordered,
 *     that each is in range and plausible (a known owner; owner-0 entries
 *     are stable ones), and that every stable entry in the range is
 *     returned (present for the whole scan, so it must not be missed);
 *     they also look stable entries up.
 *   - point keys (one tid each, above the shared range): stable ones on
 *     even keys, and each writer toggles its own odd ones; lookups of them
 *     must return exactly the stable tid, or the writer's one tid iff its
 *     model has it.  On a tree of hopscotch leaves (TREE_LEAF_FORMAT) these
 *     are the lookups that read one neighbourhood while other writers hop
 *     entries around in the same leaf: the torn-read test of that path.
 *   Afterwards dm_tree_verify passes and the tree holds exactly the stable
 *   entries plus the union of the writers' final sets, in full forward and
 *   backward scans.
 *
 * Synchronisation uses pipes (children check in, then all wait for the go
 * pipe's EOF), waitpid, and a flag in shared memory for the scanners.
 * TREE_SEED=<n> changes the random streams; TREE_SCALE=<percent> op counts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_region.h"
#include "dm_offload.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testkeys.h"
#include "testutil.h"

#define NW 6					/* writers */
#define NS 2					/* scanners */
#define NCHILD (NW + NS)
#define NKEYS 600				/* shared key range: keys 0, 4, 8, ... (bounds fall between) */
#define KEY_STEP 4
#define WTIDS 48				/* tids per writer per key */
#define OWNER_SHIFT 40
#define MAXFINAL (NKEYS * WTIDS + 64 * WTIDS + NPOINT)	/* a writer's entries at most (incl. NULLs) */
#define NODE_SIZE 256
#define HOT_FIRST 300			/* keys HOT_FIRST .. HOT_FIRST + HOT_KEYS - 1 get 30% of the writes */
#define HOT_KEYS 2
#define NPOINT 240				/* point keys: POINT_BASE + i * KEY_STEP, one tid each */
#define POINT_BASE (NKEYS * KEY_STEP + 1000)
#define POINT_TID 200000		/* stable point entries: tid POINT_TID + i (owner 0) */

typedef struct tcfg
{
	const char *name;
	int			backend;
	uint32_t	flags;
	int			writer_ops;
	int			stable_stride;	/* stable entries on every stride-th key */
} tcfg;

/*
 * The third run starts from a tree of 3 leaves (a few stable entries), so
 * the root splits, and grows, while everybody is descending through it.
 */
static const tcfg configs[] = {
	{"tcp+tear", DM_BACKEND_TCP, DM_CLIENT_TEAR, 1000, 2},
	{"shm+tear", DM_BACKEND_SHM, DM_CLIENT_TEAR, 5000, 2},
	{"shm+tear small start", DM_BACKEND_SHM, DM_CLIENT_TEAR, 3000, 100},
};
static int	g_stride = 2;		/* of the running scenario (children inherit it) */

static memnode_proc mn;
static uint64_t g_seed = 1;
static int	g_scale = 100;


/* ---- the stable set ------------------------------------------------------------ */

/*
 * Owner 0: two tids on every g_stride-th key, and 16 NULLs.  Writers' tids
 * have owners 1..NW, so they never collide with these.
 */
static void
build_stable(model *st)
{
	for (uint64_t k = 0; k < NKEYS; k += (uint64_t) g_stride)
	{
		m_insert(st, tk(k * KEY_STEP, k));
		m_insert(st, tk(k * KEY_STEP, k + 100000));
	}
	/* VAR trees get NULLs as bytes from the access method: none here */
	for (uint64_t i = 0; i < 16 && !test_key_var(); i++)
		m_insert(st, dm_entry_null(i));
	for (uint64_t i = 0; i < NPOINT; i += 2)
		m_insert(st, tk(POINT_BASE + i * KEY_STEP, POINT_TID + i));
}

static uint64_t
owner_of(dm_entry e)
{
	return (e.tid & ~DM_TID_NULL) >> OWNER_SHIFT;
}

/* ---- shared memory between the processes ------------------------------------------- */

typedef struct child_report
{
	int			failed;
	char		msg[1024];
	uint64_t	ops;
	uint64_t	scans;
	uint64_t	scanned;		/* entries returned to scanners */
	dm_tree_counters ctr;
	dm_offload_counters off;	/* TREE_OFFLOAD */
	uint64_t	nfinal;
} child_report;

typedef struct shared
{
	int			stop;			/* scanners stop when set (atomic) */
	child_report rep[NCHILD];
	dm_entry	final[NW][MAXFINAL];
} shared;

static shared *sh;

/* Record the first failure of this child. */
#define cfail TEST_CHILD_FAIL

static dm_client *
connect_client(const tcfg *cf, const char *who)
{
	return test_client_connect(cf->backend, cf->flags, 30000, who, mn.addr, NULL);
}

static const char *
terr(dm_tree *t)
{
	const char *s = dm_tree_error(t);

	return s ? s : "";
}

/* ---- writers ------------------------------------------------------------------------- */

static dm_entry
own_entry(int w)
{
	uint64_t	tid = ((uint64_t) w << OWNER_SHIFT) | rnd_below(WTIDS);

	if (rnd_below(100) < 6 && !test_key_var())
		return dm_entry_null(tid);
	/* a hot spot: writers queue on the same few leaves while they split */
	if (rnd_below(100) < 30)
		return tk((HOT_FIRST + rnd_below(HOT_KEYS)) * KEY_STEP, tid);
	return tk(rnd_below(NKEYS) * KEY_STEP, tid);
}

/* A batch of own entries, often clustered on a few keys (so it hits few leaves hard). */
static int
own_batch(int w, dm_entry *b, int maxn)
{
	int			n = 1 + (int) rnd_below((uint64_t) maxn);
	uint64_t	base = rnd_below(NKEYS);

	for (int i = 0; i < n; i++)
	{
		if (rnd_below(3))
			b[i] = tk(((base + rnd_below(8)) % NKEYS) * KEY_STEP,
								 ((uint64_t) w << OWNER_SHIFT) | rnd_below(WTIDS));
		else
			b[i] = own_entry(w);
	}
	return sort_unique(b, n);
}

/* Writer w's point entries: odd point keys i with (i / 2) % NW == w - 1, tid owner w. */
static dm_entry
own_point(int w)
{
	uint64_t	i = 2 * ((uint64_t) (w - 1) + NW * rnd_below(NPOINT / 2 / NW)) + 1;

	return tk(POINT_BASE + i * KEY_STEP, (uint64_t) w << OWNER_SHIFT);
}

/*
 * Look a point key up: its one tid if present (the stable one on even
 * keys, the writer's on odd ones), checked against want (1 = present with
 * tid, 0 = absent).  0 if it matched, else 1 with the failure in rep.
 */
static int
check_point(dm_tree *t, child_report *rep, const char *who, uint64_t key, uint64_t tid, int want)
{
	uint64_t	tids[4];
	int			n = -1;
	int			rc = tk_lookup(t, key, tids, 4, &n);

	if (rc != DM_OK || n != want || (n == 1 && tids[0] != tid))
	{
		cfail(rep, "%s: lookup of point key %" PRIu64 ": %s, %d tids (first %" PRIu64 "), want %d (tid %" PRIu64 ") %s",
			  who, key, dm_strerror(rc), n, n > 0 ? tids[0] : 0, want, tid, dm_tree_error(t));
		return 1;
	}
	return 0;
}

static int
writer_main(const tcfg *cf, const dm_tree_name *tn, int w, int ready_fd, int go_fd)
{
	child_report *rep = &sh->rep[w - 1];
	char		who[32];
	dm_client  *c;
	dm_tree    *t = NULL;
	model		mine = {0},
				stable = {0};
	dm_entry	b[64];
	uint64_t	tids[WTIDS * NW + 16];
	int			rc,
				nops = cf->writer_ops * g_scale / 100;
	char		x = 'w';

	snprintf(who, sizeof(who), "writer%d", w);
	rng = g_seed * 1000003 + (uint64_t) w;
	build_stable(&stable);
	c = connect_client(cf, who);
	if (!c)
	{
		cfail(rep, "%s: cannot connect", who);
		return 1;
	}
	if ((rc = dm_tree_open_existing(c, 1, tn, &t)) != DM_OK)
	{
		cfail(rep, "%s: open_existing: %s", who, dm_strerror(rc));
		return 1;
	}
	/* TREE_OFFLOAD=always: even writers offload, odd ones write one-sided beside them */
	test_tree_offload(t, w);
	/* check in, then wait for everybody (EOF on the go pipe) */
	if (write(ready_fd, &x, 1) != 1 || read(go_fd, &x, 1) != 0)
	{
		cfail(rep, "%s: start barrier broken", who);
		return 1;
	}

	for (int op = 0; op < nops && !rep->failed; op++)
	{
		int			r = (int) rnd_below(100);

		rep->ops++;
		if (rnd_below(4) == 0)
		{
			/* a point key: toggle one of ours, then look up one of ours and a stable one */
			dm_entry	e = own_point(w);
			int			existed = -1,
						want = m_has(&mine, e);
			uint64_t	si = 2 * rnd_below(NPOINT / 2);

			rc = want ? dm_tree_delete(t, e, &existed) : dm_tree_insert(t, e, &existed);
			if (rc != DM_OK || existed != want)
				cfail(rep, "%s op %d: %s point %s: %s existed=%d, model %d %s", who, op, want ? "delete" : "insert",
					  E(e), dm_strerror(rc), existed, want, terr(t));
			want ? m_delete(&mine, e) : m_insert(&mine, e);
			e = own_point(w);
			check_point(t, rep, who, tk_key(e), e.tid, m_has(&mine, e));
			check_point(t, rep, who, POINT_BASE + si * KEY_STEP, POINT_TID + si, 1);
			continue;
		}
		if (r < 35)
		{
			dm_entry	e = own_entry(w);
			int			existed = -1,
						want = m_has(&mine, e);

			rc = dm_tree_insert(t, e, &existed);
			if (rc != DM_OK)
				cfail(rep, "%s op %d: insert %s: %s: %s", who, op, E(e), dm_strerror(rc), terr(t));
			else if (existed != want)
				cfail(rep, "%s op %d: insert %s: existed=%d but this writer's model says %d", who, op, E(e), existed, want);
			m_insert(&mine, e);
		}
		else if (r < 60)
		{
			dm_entry	e = (mine.n && rnd_below(4)) ? mine.e[rnd_below(mine.n)] : own_entry(w);
			int			existed = -1,
						want = m_has(&mine, e);

			rc = dm_tree_delete(t, e, &existed);
			if (rc != DM_OK)
				cfail(rep, "%s op %d: delete %s: %s: %s", who, op, E(e), dm_strerror(rc), terr(t));
			else if (existed != want)
				cfail(rep, "%s op %d: delete %s: existed=%d but this writer's model says %d", who, op, E(e), existed, want);
			m_delete(&mine, e);
		}
		else if (r < 75)
		{
			/* sorted batches: insert or delete (mostly present entries) */
			int			ins = rnd_below(2) != 0,
						n,
						want = 0,
						changed = -1;

			if (ins || mine.n == 0)
			{
				ins = 1;
				n = own_batch(w, b, 40);
			}
			else
			{
				size_t		s = rnd_below(mine.n);

				n = 1 + (int) rnd_below(40);
				for (int i = 0; i < n; i++)
					b[i] = rnd_below(5) ? mine.e[(s + (size_t) i) % mine.n] : own_entry(w);
				n = sort_unique(b, n);
			}
			for (int i = 0; i < n; i++)
				want += ins ? !m_has(&mine, b[i]) : m_has(&mine, b[i]);
			rc = ins ? dm_tree_insert_sorted(t, b, n, &changed) : dm_tree_delete_sorted(t, b, n, &changed);
			if (rc != DM_OK)
				cfail(rep, "%s op %d: %s_sorted of %d: %s: %s", who, op, ins ? "insert" : "delete", n,
					  dm_strerror(rc), terr(t));
			else if (changed != want)
				cfail(rep, "%s op %d: %s_sorted of %d (%s..%s): changed=%d, this writer's model says %d", who, op,
					  ins ? "insert" : "delete", n, E(b[0]), E(b[n - 1]), changed, want);
			for (int i = 0; i < n; i++)
				ins ? m_insert(&mine, b[i]) : m_delete(&mine, b[i]);
		}
		else if (r < 88)
		{
			dm_entry	e = (mine.n && rnd_below(2)) ? mine.e[rnd_below(mine.n)] : own_entry(w);
			int			found = -1,
						want = m_has(&mine, e);

			rc = dm_tree_contains(t, e, &found);
			if (rc != DM_OK || found != want)
				cfail(rep, "%s op %d: contains %s: %s found=%d, this writer's model says %d %s", who, op, E(e),
					  dm_strerror(rc), found, want, terr(t));
		}
		else
		{
			/*
			 * lookup: this writer's tids of the key exactly as in its model,
			 * and the key's stable tids present
			 */
			uint64_t	key = rnd_below(NKEYS) * KEY_STEP;
			int			n = -1,
						nmine = 0,
						nstable = 0;

			rc = tk_lookup(t, key, tids, (int) (sizeof(tids) / sizeof(tids[0])), &n);
			if (rc != DM_OK)
			{
				cfail(rep, "%s op %d: lookup %" PRIu64 ": %s: %s", who, op, key, dm_strerror(rc), terr(t));
				continue;
			}
			for (int i = 0; i < n; i++)
			{
				dm_entry	e = tk(key, tids[i]);

				if (owner_of(e) == (uint64_t) w)
				{
					nmine++;
					if (!m_has(&mine, e))
						cfail(rep, "%s op %d: lookup %" PRIu64 " returned %s, which this writer deleted or never inserted",
							  who, op, key, E(e));
				}
				else if (owner_of(e) == 0)
				{
					nstable++;
					if (!m_has(&stable, e))
						cfail(rep, "%s op %d: lookup %" PRIu64 " returned %s: not a stable entry", who, op, key, E(e));
				}
				else if (owner_of(e) > NW)
					cfail(rep, "%s op %d: lookup %" PRIu64 " returned %s: no such owner", who, op, key, E(e));
			}
			{
				size_t		mf = m_lower(&mine, tk(key, 0)),
							mt = m_upper(&mine, tk(key, DM_TID_MAX)),
							sf = m_lower(&stable, tk(key, 0)),
							st = m_upper(&stable, tk(key, DM_TID_MAX));

				if ((size_t) nmine != mt - mf || (size_t) nstable != st - sf)
					cfail(rep, "%s op %d: lookup %" PRIu64 ": %d own tids (model %zu), %d stable tids (want %zu)",
						  who, op, key, nmine, mt - mf, nstable, st - sf);
			}
		}
	}
	/* publish the final set */
	memcpy(sh->final[w - 1], mine.e, mine.n * sizeof(dm_entry));
	rep->nfinal = mine.n;
	dm_tree_get_counters(t, &rep->ctr);
	dm_tree_offload_counters(t, &rep->off);
	dm_tree_close(t);
	dm_client_destroy(c);
	return rep->failed;
}

/* ---- scanners ------------------------------------------------------------------------ */

static void
scan_bound(int is_hi, dm_entry *b, int *incl)
{
	uint64_t	k = rnd_below(NKEYS * KEY_STEP + 8);

	*incl = (int) rnd_below(2);
	switch (rnd_below(5))
	{
		case 0:
			*b = is_hi ? DM_ENTRY_INF : DM_ENTRY_MIN;
			break;
		case 1:				/* an exact stable or writer entry */
			*b = tk((k / KEY_STEP) * KEY_STEP, rnd_below(2) ? k / KEY_STEP :
							   ((1 + rnd_below(NW)) << OWNER_SHIFT) | rnd_below(WTIDS));
			break;
		default:
			*b = is_hi ? tk_hi(k, *incl) : tk_lo(k, *incl);
			break;
	}
}

static int
scanner_main(const tcfg *cf, const dm_tree_name *tn, int s, int ready_fd, int go_fd)
{
	child_report *rep = &sh->rep[NW + s];
	char		who[32];
	dm_client  *c;
	dm_tree    *t = NULL;
	model		stable = {0};
	uint64_t	tids[WTIDS * NW + 16];
	int			rc;
	char		x = 's';

	snprintf(who, sizeof(who), "scanner%d", s);
	rng = g_seed * 1000003 + 100 + (uint64_t) s;
	build_stable(&stable);
	c = connect_client(cf, who);
	if (!c)
	{
		cfail(rep, "%s: cannot connect", who);
		return 1;
	}
	if ((rc = dm_tree_open_existing(c, 1, tn, &t)) != DM_OK)
	{
		cfail(rep, "%s: open_existing: %s", who, dm_strerror(rc));
		return 1;
	}
	test_tree_offload(t, s);	/* lookups of stable entries offloaded (even scanners) */
	if (write(ready_fd, &x, 1) != 1 || read(go_fd, &x, 1) != 0)
	{
		cfail(rep, "%s: start barrier broken", who);
		return 1;
	}

	/* at least a few scans even if the writers are already done */
	while (!rep->failed && (rep->scans < 4 || !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)))
	{
		dm_range	r;
		dm_iter    *it = NULL;
		dm_entry	e,
					prev = DM_ENTRY_MIN;
		uint8_t		prev_sfx[DM_NODE_MAX];
		size_t		from,
					to,
					nret = 0,
					nstable = 0;
		int			k;

		if (rnd_below(10) == 0)
			r = DM_RANGE_NULLS((int) rnd_below(2));
		else
		{
			scan_bound(0, &r.lo, &r.lo_incl);
			scan_bound(1, &r.hi, &r.hi_incl);
			if (dm_entry_cmp(r.lo, r.hi) > 0)
			{
				dm_entry	tmp = r.lo;

				r.lo = r.hi;
				r.hi = tmp;
			}
			r.backward = (int) rnd_below(2);
		}
		rep->scans++;
		if ((rc = dm_iter_open(t, &r, &it)) != DM_OK)
		{
			cfail(rep, "%s scan %" PRIu64 " %s: iter_open: %s: %s", who, rep->scans, R(&r), dm_strerror(rc), terr(t));
			break;
		}
		m_range(&stable, &r, &from, &to);
		while ((k = dm_iter_next(it, &e)) == 1)
		{
			if (nret > 0 && (r.backward ? dm_entry_cmp(e, prev) >= 0 : dm_entry_cmp(e, prev) <= 0))
			{
				cfail(rep, "%s scan %" PRIu64 " %s: %s came after %s (not strictly %s)", who, rep->scans, R(&r),
					  E(e), E(prev), r.backward ? "descending" : "ascending");
				break;
			}
			if (!in_range(&r, e))
			{
				cfail(rep, "%s scan %" PRIu64 " %s: %s is outside the range", who, rep->scans, R(&r), E(e));
				break;
			}
			if (dm_entry_is_null(e) != (e.key == UINT64_MAX) || owner_of(e) > NW ||
				(e.tid & ~DM_TID_NULL) >= DM_TID_LIMIT ||
				(owner_of(e) == 0 && !m_has(&stable, e)))
			{
				cfail(rep, "%s scan %" PRIu64 " %s: returned %s, which nobody inserted", who, rep->scans, R(&r), E(e));
				break;
			}
			if (owner_of(e) == 0)
			{
				/*
				 * Stable entries come strictly ordered, so they must come
				 * exactly as the stable slice, in scan order.
				 */
				size_t		want = r.backward ? to - 1 - nstable : from + nstable;

				if (nstable >= to - from || dm_entry_cmp(stable.e[want], e) != 0)
				{
					cfail(rep, "%s scan %" PRIu64 " %s: returned stable %s where stable %s was due: missed it",
						  who, rep->scans, R(&r), E(e),
						  nstable < to - from ? E(stable.e[want]) : "(none)");
					break;
				}
				nstable++;
			}
			/* e's suffix is the iterator's until the next call: prev keeps its own */
			prev = e;
			if (e.sfx_len != 0 && e.sfx_len <= sizeof(prev_sfx))
			{
				memcpy(prev_sfx, e.sfx, e.sfx_len);
				prev.sfx = prev_sfx;
			}
			nret++;
		}
		if (k < 0)
			cfail(rep, "%s scan %" PRIu64 " %s: iter_next: %s: %s", who, rep->scans, R(&r), dm_strerror(-k), terr(t));
		else if (!rep->failed && nstable != to - from)
			cfail(rep, "%s scan %" PRIu64 " %s: returned %zu of the %zu stable entries in range (first missed: %s)",
				  who, rep->scans, R(&r), nstable, to - from,
				  E(stable.e[r.backward ? to - 1 - nstable : from + nstable]));
		dm_iter_close(it);
		rep->scanned += nret;

		/* point reads of stable entries while the tree changes */
		for (int i = 0; i < 8 && !rep->failed; i++)
		{
			dm_entry	se = stable.e[rnd_below(stable.n)];
			int			found = -1,
						n = -1,
						hits = 0;

			rc = dm_tree_contains(t, se, &found);
			if (rc != DM_OK || found != 1)
				cfail(rep, "%s: contains(stable %s): %s found=%d %s", who, E(se), dm_strerror(rc), found, terr(t));
			if (dm_entry_is_null(se))
				continue;
			rc = tk_lookup(t, tk_key(se), tids, (int) (sizeof(tids) / sizeof(tids[0])), &n);
			for (int j = 0; rc == DM_OK && j < n; j++)
				hits += tids[j] == se.tid;
			if (rc == DM_OK && tk_key(se) >= POINT_BASE && n != 1)
				cfail(rep, "%s: lookup(point %" PRIu64 ") while writers run: %d tids, want just stable tid %" PRIu64,
					  who, tk_key(se), n, se.tid);
			if (rc != DM_OK || hits != 1)
				cfail(rep, "%s: lookup(%" PRIu64 ") while writers run: %s, stable tid %" PRIu64 " seen %d times %s",
					  who, tk_key(se), dm_strerror(rc), se.tid, hits, terr(t));
		}
	}
	dm_tree_get_counters(t, &rep->ctr);
	dm_tree_offload_counters(t, &rep->off);
	dm_tree_close(t);
	dm_client_destroy(c);
	return rep->failed;
}

/* ---- the scenario --------------------------------------------------------------------- */

static void
run_scenario(const tcfg *cf)
{
	char		name[64],
				msg[512];
	dm_client  *c = connect_client(cf, "test_tree_concurrency");
	dm_tree    *t = NULL;
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_bulk    *b = NULL;
	model		stable = {0},
				expect = {0};
	pid_t		pids[NCHILD];
	int			ready[2],
				go[2],
				codes[NCHILD],
				rc,
				nready = 0;
	uint64_t	t0,
				cnt = 0,
				chunks0 = 0,
				deadline;
	dm_node_stats ns;
	dm_tree_counters tot;
	uint64_t	offloads = 0,
				fallbacks = 0;

	if (!CHECK(c != NULL, "%s: client connects", cf->name))
		return;
	g_stride = cf->stable_stride;
	if (dm_node_stats_get(c, 1, &ns) == DM_OK)
		chunks0 = ns.chunks_used;
	snprintf(name, sizeof(name), "conc-%s-%d", cf->name, cf->stable_stride);
	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = NODE_SIZE;
	test_tree_leaf_opts(&opts);
	if (test_tree_key_opts(&opts) != 0)
		CHECK(0, "%s: TREE_KEY_FORMAT is fixed8 or var, and a 256-byte node holds its keys", cf->name);
	/* the children's entries come back through shared memory: their suffixes must be the parent's */
	tk_intern(0, POINT_BASE + NPOINT * KEY_STEP);
	/* 10-bucket leaves: a neighbourhood of 4 makes entries hop and overflow (TREE_NEIGHBORHOOD overrides) */
	if (opts.leaf_format == DM_LEAF_HOPSCOTCH && opts.neighborhood == 0)
		opts.neighborhood = 4;
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "%s: create tree (256-byte nodes)", cf->name))
	{
		dm_client_destroy(c);
		return;
	}

	/* the stable entries, bulk-loaded full (fillfactor 100): the first inserts split at once */
	build_stable(&stable);
	rc = dm_tree_bulk_begin(t, 100, &b);
	if (rc == DM_OK)
	{
		rc = dm_bulk_add(b, stable.e, (int) stable.n);
		if (rc == DM_OK)
			rc = dm_bulk_finish(b);
		else
			dm_bulk_abort(b);
	}
	CHECK_STATUS(rc, DM_OK, "%s: bulk-load %zu stable entries", cf->name, stable.n);

	memset(sh, 0, sizeof(*sh));
	if (pipe(ready) != 0 || pipe(go) != 0)
	{
		CHECK(0, "%s: pipes", cf->name);
		return;
	}
	for (int i = 0; i < NCHILD; i++)
	{
		fflush(stdout);
		fflush(stderr);
		pids[i] = fork();
		if (pids[i] < 0)
		{
			perror("fork");
			exit(2);
		}
		if (pids[i] == 0)
		{
			/* the child must not hold the go pipe's write end, or EOF never comes */
			close(go[1]);
			close(ready[0]);
			_exit(i < NW ? writer_main(cf, &tn, i + 1, ready[1], go[0])
				  : scanner_main(cf, &tn, i - NW, ready[1], go[0]));
		}
	}
	close(ready[1]);
	close(go[0]);
	/* all children connected and opened the tree: let them go together */
	deadline = now_ns() + UINT64_C(60000000000);
	while (nready < NCHILD && now_ns() < deadline)
	{
		struct pollfd p = {.fd = ready[0],.events = POLLIN};
		char		buf[NCHILD];
		ssize_t		n;

		if (poll(&p, 1, 1000) <= 0)
			continue;
		n = read(ready[0], buf, sizeof(buf));
		if (n <= 0)
			break;				/* every child exited or closed its end */
		nready += (int) n;
	}
	CHECK(nready == NCHILD, "%s: %d writers and %d scanners connected and opened the tree", cf->name, NW, NS);
	t0 = now_ns();
	close(go[1]);
	close(ready[0]);

	/* writers first; then tell the scanners to stop */
	deadline = now_ns() + UINT64_C(300000000000);
	for (int i = 0; i < NW; i++)
		codes[i] = wait_pid_deadline(pids[i], deadline);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	for (int i = NW; i < NCHILD; i++)
		codes[i] = wait_pid_deadline(pids[i], deadline);
	tap_diag("%s: writers and scanners ran for %.1f s", cf->name, (now_ns() - t0) / 1e9);

	memset(&tot, 0, sizeof(tot));
	for (int i = 0; i < NCHILD; i++)
	{
		child_report *r = &sh->rep[i];

		if (!CHECK(codes[i] == 0 && !r->failed, "%s: %s %d finished cleanly (%" PRIu64 " ops, %" PRIu64 " scans, %" PRIu64
				   " entries scanned)", cf->name, i < NW ? "writer" : "scanner", i < NW ? i + 1 : i - NW, r->ops,
				   r->scans, r->scanned))
			tap_diag("  exit code %d: %s", codes[i], r->msg[0] ? r->msg : "(no message)");
		tot.node_reads += r->ctr.node_reads;
		tot.read_retries += r->ctr.read_retries;
		tot.lock_retries += r->ctr.lock_retries;
		tot.lock_takeovers += r->ctr.lock_takeovers;
		tot.splits += r->ctr.splits;
		tot.root_grows += r->ctr.root_grows;
		tot.restarts += r->ctr.restarts;
		tot.hop_reads += r->ctr.hop_reads;
		tot.hop_retries += r->ctr.hop_retries;
		tot.hop_fallbacks += r->ctr.hop_fallbacks;
		tot.hop_spec_hits += r->ctr.hop_spec_hits;
		tot.hop_spec_stale += r->ctr.hop_spec_stale;
		offloads += r->off.offloads;
		fallbacks += r->off.fallbacks;
	}
	if (test_offload_mode() != DM_OFFLOAD_OFF)
	{
		tap_diag("%s: %" PRIu64 " operations offloaded, %" PRIu64 " fell back", cf->name, offloads, fallbacks);
		/* the executor wrote beside one-sided writers (odd ones) and split nothing itself */
		CHECK(offloads > 0 && fallbacks > 0, "%s: offloaded operations ran (%" PRIu64 ") and some fell back (%" PRIu64 ")",
			  cf->name, offloads, fallbacks);
	}
	tap_diag("%s: counters over all children: %" PRIu64 " node reads, %" PRIu64 " read retries (torn/locked), %" PRIu64
			 " lock retries, %" PRIu64 " splits, %" PRIu64 " root grows, %" PRIu64 " restarts, %" PRIu64 " takeovers",
			 cf->name, tot.node_reads, tot.read_retries, tot.lock_retries, tot.splits, tot.root_grows, tot.restarts,
			 tot.lock_takeovers);
	if (dm_tree_leaf_format(t, NULL) == DM_LEAF_HOPSCOTCH)
	{
		tap_diag("%s: hopscotch: %" PRIu64 " lookups read one neighbourhood, %" PRIu64 " such reads did not validate "
				 "(torn or mid-write) and were redone, %" PRIu64 " lookups read whole leaves; %" PRIu64
				 " answered by a speculative read (hotspot buffer), %" PRIu64 " speculations rejected",
				 cf->name, tot.hop_reads, tot.hop_retries, tot.hop_fallbacks, tot.hop_spec_hits, tot.hop_spec_stale);
		CHECK(tot.hop_reads > 0, "%s: lookups read neighbourhoods while writers hopped entries (%" PRIu64 ")",
			  cf->name, tot.hop_reads);
	}
	/* nobody died holding a lock, so a takeover means a lock was held (leaked) for lock_timeout_ms */
	CHECK(tot.lock_takeovers == 0, "%s: no lock was taken over (%" PRIu64 ")", cf->name, tot.lock_takeovers);
	CHECK(tot.splits > 0, "%s: the workload split nodes (%" PRIu64 " splits)", cf->name, tot.splits);
	if (cf->stable_stride > 2)
		CHECK(tot.root_grows > 0, "%s: the root split under the running processes (%" PRIu64 " times)", cf->name,
			  tot.root_grows);

	/* the expected final set: stable + every writer's final set */
	for (size_t i = 0; i < stable.n; i++)
		m_insert(&expect, stable.e[i]);
	for (int w = 0; w < NW; w++)
		for (uint64_t i = 0; i < sh->rep[w].nfinal; i++)
			m_insert(&expect, sh->final[w][i]);

	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	if (!CHECK_STATUS(rc, DM_OK, "%s: dm_tree_verify after the run", cf->name))
		tap_diag("  verify: %s", msg);
	CHECK(cnt == expect.n, "%s: verify counts %" PRIu64 " entries = %zu expected (%zu stable + the writers' final sets)",
		  cf->name, cnt, expect.n, stable.n);
	for (int bw = 0; bw < 2; bw++)
	{
		dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, bw};
		dm_iter    *it = NULL;
		dm_entry	e;
		size_t		n = 0;
		int			k = 0,
					ok = 1;
		char		why[300] = "";

		rc = dm_iter_open(t, &r, &it);
		while (rc == DM_OK && (k = dm_iter_next(it, &e)) == 1)
		{
			size_t		at = bw ? expect.n - 1 - n : n;

			if (n >= expect.n || dm_entry_cmp(e, expect.e[at]) != 0)
			{
				snprintf(why, sizeof(why), "entry #%zu is %s, expected %s", n, E(e), n < expect.n ? E(expect.e[at]) : "the end");
				ok = 0;
				break;
			}
			n++;
		}
		if (rc == DM_OK)
			dm_iter_close(it);
		if (ok && n != expect.n)
			snprintf(why, sizeof(why), "%zu entries, expected %zu (%s)", n, expect.n, k < 0 ? dm_strerror(-k) : "");
		if (!CHECK(rc == DM_OK && k >= 0 && ok && n == expect.n, "%s: full %s scan equals the expected set",
				   cf->name, bw ? "backward" : "forward"))
			tap_diag("  %s %s", why, rc ? dm_strerror(rc) : "");
	}
	{
		dm_tree_stats st;

		rc = dm_tree_stats_get(t, &st);
		CHECK(rc == DM_OK && st.entries == cnt, "%s: stats: height %d, %" PRIu64 " leaves, %" PRIu64 " entries, fill %.2f",
			  cf->name, st.height, st.nodes[0], st.entries, st.leaf_fill);
	}
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "%s: destroy", cf->name);
	if (dm_node_stats_get(c, 1, &ns) == DM_OK)
		CHECK(ns.chunks_used == chunks0, "%s: chunks_used back to %" PRIu64 " (now %" PRIu64 ")", cf->name, chunks0,
			  ns.chunks_used);
	free(stable.e);
	free(expect.e);
	dm_client_destroy(c);
}

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "256M", "--chunk-size", "1M",
	"--offload-threads", "2", NULL};

	tree_test_env(&g_seed, &g_scale);

	sh = test_start_shared(sizeof(shared), &mn, args);
	if (sh == NULL)
		return tap_done();
	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++)
	{
		const char *only = getenv("TREE_BACKEND");
		uint64_t	t0 = now_ns();

		if (only && *only && strncmp(only, configs[i].name, 3) != 0)
			continue;
		run_scenario(&configs[i]);
		tap_diag("%s: scenario took %.1f s", configs[i].name, (now_ns() - t0) / 1e9);
	}
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	return tap_done();
}
