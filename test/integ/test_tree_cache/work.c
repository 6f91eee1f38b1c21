/*
 * work.c — the random operations of a writer or scanner (inserts, deletes,
 * batches, contains, lookups, scans and writes to keys the instance does not
 * own, which must be refused), and the forked processes that run them
 * together against one tree and report back through shared memory.
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

#include "dm_cache.h"
#include "dm_client.h"
#include "dm_region.h"		/* dm_tree_name_named */
#include "dm_tree.h"
#include "entrymodel.h"
#include "testutil.h"

#include "tree_cache.h"

static void
rand_range(dm_range *r, uint64_t lo, uint64_t hi)
{
	uint64_t	span = hi - lo;

	switch (rnd_below(64))
	{
		case 0:
			*r = (dm_range) {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, 0};
			break;
		case 1:
			*r = DM_RANGE_NULLS(0);
			break;
		default:
			{
				/* short ranges mostly: a scan costs a round trip per leaf */
				uint64_t	k1 = lo + rnd_below(span),
							k2 = k1 + rnd_below(rnd_below(4) ? span / 64 + 2 : span / 8 + 2);

				r->lo_incl = (int) rnd_below(2);
				r->hi_incl = (int) rnd_below(2);
				r->lo = rnd_below(4) ? tk_lo(k1, r->lo_incl) : tk(k1, rnd_below(NTIDS + 1));
				r->hi = rnd_below(4) ? tk_hi(k2, r->hi_incl) : tk(k2, rnd_below(NTIDS + 1));
				if (rnd_below(40) == 0)
					r->lo = DM_ENTRY_MIN;
				if (rnd_below(40) == 0)
					r->hi = DM_ENTRY_INF;
			}
	}
	r->backward = (int) rnd_below(2);
}

/* An own entry: usually one of the model's for deletes. */
static dm_entry
pick_own(const opctx *o, int present_pct)
{
	if (o->mine->n && (int) rnd_below(100) < present_pct)
		return o->mine->e[rnd_below(o->mine->n)];
	return ks_entry(o->own, 1 + rnd_below(NTIDS));
}

/* One random operation, its result compared with the model.  0 = fine. */
static int
one_op(opctx *o, const opmix *mx, int op, char *why, size_t whylen)
{
	dm_tree    *t = o->t;
	int			r = (int) rnd_below(100),
				rc;

	if (r < mx->del)
	{
		int			ins = r < mx->ins;
		dm_entry	e = ins ? pick_own(o, 10) : pick_own(o, 80);
		int			existed = -1,
					want = m_has(o->mine, e);

		rc = ins ? dm_tree_insert(t, e, &existed) : dm_tree_delete(t, e, &existed);
		if (rc != DM_OK || existed != want)
		{
			snprintf(why, whylen, "op %d: %s %s: %s, existed=%d, the model says %d: %s", op,
					 ins ? "insert" : "delete", E(e), dm_strerror(rc), existed, want, terr(t));
			return -1;
		}
		ins ? m_insert(o->mine, e) : m_delete(o->mine, e);
		if (o->mirror)
		{
			/* write-through: remote memory has the write when it returns */
			int			found = -1;

			rc = dm_tree_contains(o->mirror, e, &found);
			if (rc != DM_OK || found != ins)
			{
				snprintf(why, whylen, "op %d: after %s %s, the handle without cache: %s, found=%d", op,
						 ins ? "insert" : "delete", E(e), dm_strerror(rc), found);
				return -1;
			}
		}
	}
	else if (r < mx->batch)
	{
		dm_entry	b[24];
		int			ins = (int) rnd_below(2),
					n = 1 + (int) rnd_below(20),
					want = 0,
					changed = -1;
		dm_entry	first = pick_own(o, ins ? 0 : 60);

		/* clustered around one key, so a batch hits few leaves with several entries */
		for (int i = 0; i < n; i++)
			b[i] = rnd_below(3) || dm_entry_is_null(first) ? pick_own(o, ins ? 10 : 70)
				: tk(tk_key(first) + o->own->mod * rnd_below(4), 1 + rnd_below(NTIDS));
		for (int i = 0; i < n; i++)
			if (!ks_own(o->own, tk_key(b[i])))
				b[i] = first;
		n = sort_unique(b, n);
		for (int i = 0; i < n; i++)
			want += ins ? !m_has(o->mine, b[i]) : m_has(o->mine, b[i]);
		rc = ins ? dm_tree_insert_sorted(t, b, n, &changed) : dm_tree_delete_sorted(t, b, n, &changed);
		if (rc != DM_OK || changed != want)
		{
			snprintf(why, whylen, "op %d: %s_sorted of %d (%s..%s): %s, changed=%d, the model says %d: %s", op,
					 ins ? "insert" : "delete", n, E(b[0]), E(b[n - 1]), dm_strerror(rc), changed, want, terr(t));
			return -1;
		}
		for (int i = 0; i < n; i++)
			ins ? m_insert(o->mine, b[i]) : m_delete(o->mine, b[i]);
	}
	else if (r < mx->contains)
	{
		dm_entry	e = pick_own(o, 50);
		int			found = -1,
					want = m_has(o->mine, e);

		rc = dm_tree_contains(t, e, &found);
		if (rc != DM_OK || found != want)
		{
			snprintf(why, whylen, "op %d: contains %s: %s, found=%d, the model says %d: %s", op, E(e),
					 dm_strerror(rc), found, want, terr(t));
			return -1;
		}
	}
	else if (r < mx->lookup)
	{
		/* anywhere in the key space: other writers' keys are read too */
		uint64_t	key = o->read_lo + rnd_below(o->read_hi - o->read_lo);

		if (lookup_check(t, key, o->x, why, whylen) != 0)
		{
			char		tmp[600];

			snprintf(tmp, sizeof(tmp), "op %d: %s", op, why);
			snprintf(why, whylen, "%s", tmp);
			return -1;
		}
	}
	else if (r < mx->scan || o->foreign == NULL)
	{
		dm_range	rg;

		rand_range(&rg, o->read_lo, o->read_hi);
		o->scans++;
		if (scan_check(t, &rg, o->x, NULL, why, whylen) != 0)
		{
			char		tmp[600];

			snprintf(tmp, sizeof(tmp), "op %d: scan %s", op, why);
			snprintf(why, whylen, "%s", tmp);
			return -1;
		}
	}
	else
	{
		/*
		 * A write of a key another instance owns: refused before anything is
		 * written, also when only one entry of a batch is foreign.  The
		 * foreign tid is one no writer uses, so a write that got through
		 * shows up in every later read and in the final contents.
		 */
		dm_entry	f = ks_entry(o->foreign, FOREIGN_TID);
		dm_entry	b[4];
		int			n = 0,
					kind = (int) rnd_below(3),
					existed = -1,
					changed = -1;

		if (kind == 0)
			rc = dm_tree_insert(t, f, &existed);
		else if (kind == 1)
			rc = dm_tree_delete(t, tk(tk_key(f), 0), &existed);	/* a stable entry, perhaps */
		else
		{
			b[n++] = f;
			for (int i = 0; i < 3; i++)
				b[n++] = pick_own(o, 0);
			n = sort_unique(b, n);
			rc = dm_tree_insert_sorted(t, b, n, &changed);
		}
		if (rc != DM_ERR_NOTOWNER)
		{
			snprintf(why, whylen, "op %d: %s of foreign key %" PRIu64 ": %s, want NOTOWNER (%s)", op,
					 kind == 0 ? "insert" : kind == 1 ? "delete" : "insert_sorted", tk_key(f), dm_strerror(rc), terr(t));
			return -1;
		}
		o->notowner++;
		/* the batch's own entries were not inserted either */
		for (int i = 0; i < n; i++)
		{
			int			found = -1;

			if (!ks_own(o->own, tk_key(b[i])))
				continue;
			rc = dm_tree_contains(t, b[i], &found);
			if (rc != DM_OK || found != m_has(o->mine, b[i]))
			{
				snprintf(why, whylen, "op %d: after a refused batch, contains %s: %s found=%d, the model says %d",
						 op, E(b[i]), dm_strerror(rc), found, m_has(o->mine, b[i]));
				return -1;
			}
		}
	}
	return 0;
}

int
run_ops(opctx *o, const opmix *mx, int first_op, int nops, char *why, size_t whylen)
{
	for (int op = first_op; op < first_op + nops; op++)
		if (one_op(o, mx, op, why, whylen) != 0)
			return -1;
	return 0;
}

shared *sh;
static int	g_ready_fd = -1,
			g_go_fd = -1;

/* Record the first failure of this child. */
#define cfail TEST_CHILD_FAIL

/* In a child: check in, then wait until every child has (EOF on the go pipe). */
static int
start_barrier(void)
{
	char		x = 'r';

	return write(g_ready_fd, &x, 1) == 1 && read(g_go_fd, &x, 1) == 0 ? 0 : -1;
}

/*
 * Fork n children running fn(idx, arg); they start together once all have
 * connected (start_barrier).  The first nworkers are waited for, then
 * sh->stop tells the others (scanners) to finish.  Returns the seconds the
 * children ran; codes[i] = exit code.
 */
static double
run_children(const char *label, int n, int nworkers, child_fn fn, void *arg, int *codes)
{
	pid_t		pids[MAXCHILD];
	int			ready[2],
				go[2],
				nready = 0;
	uint64_t	t0,
				deadline;

	memset(sh, 0, sizeof(*sh));
	if (pipe(ready) != 0 || pipe(go) != 0)
	{
		perror("pipe");
		exit(2);
	}
	for (int i = 0; i < n; i++)
	{
		fflush(stdout);
		fflush(stderr);
		if ((pids[i] = fork()) < 0)
		{
			perror("fork");
			exit(2);
		}
		if (pids[i] == 0)
		{
			/* the child must not hold the go pipe's write end, or EOF never comes */
			close(go[1]);
			close(ready[0]);
			g_ready_fd = ready[1];
			g_go_fd = go[0];
			_exit(fn(i, arg));
		}
	}
	close(ready[1]);
	close(go[0]);
	deadline = now_ns() + UINT64_C(60000000000);
	while (nready < n && now_ns() < deadline)
	{
		struct pollfd p = {.fd = ready[0],.events = POLLIN};
		char		buf[MAXCHILD];
		ssize_t		k;

		if (poll(&p, 1, 1000) <= 0)
			continue;
		if ((k = read(ready[0], buf, sizeof(buf))) <= 0)
			break;				/* every child exited or closed its end */
		nready += (int) k;
	}
	CHECK(nready == n, "%s: %d processes connected and attached", label, n);
	t0 = now_ns();
	close(go[1]);
	close(ready[0]);
	deadline = now_ns() + UINT64_C(240000000000);
	for (int i = 0; i < nworkers; i++)
		codes[i] = wait_pid_deadline(pids[i], deadline);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	for (int i = nworkers; i < n; i++)
		codes[i] = wait_pid_deadline(pids[i], deadline);
	return (now_ns() - t0) / 1e9;
}

static dm_tree *
child_attach(const workcfg *w, int idx, dm_client **cout)
{
	child_rep  *rep = &sh->rep[idx];
	char		who[64];
	dm_tree    *t = NULL;
	int			rc;

	snprintf(who, sizeof(who), "%s child %d", w->label, idx);
	if ((*cout = client_new(w->tr, who)) == NULL)
	{
		cfail(rep, "%s: cannot connect", who);
		return NULL;
	}
	if ((rc = tree_open(*cout, &w->tn, w->cache[idx]->c, w->inst[idx], &t)) != DM_OK)
	{
		cfail(rep, "%s: open + use_cache(instance %d): %s", who, w->inst[idx], dm_strerror(rc));
		return NULL;
	}
	if (start_barrier() != 0)
	{
		cfail(rep, "%s: start barrier broken", who);
		return NULL;
	}
	return t;
}

static int
writer_child(const workcfg *w, int idx)
{
	child_rep  *rep = &sh->rep[idx];
	dm_client  *c = NULL;
	dm_tree    *t;
	model		mine = {0};
	expect		x = {w->stable, &mine, &w->own[idx], 0};
	opctx		o = {0};
	char		why[1024] = "";

	rng_seed_label(g_seed, w->label, idx);
	if ((t = child_attach(w, idx, &c)) == NULL)
		return 1;
	o.t = t;
	o.mine = &mine;
	o.own = &w->own[idx];
	o.foreign = w->foreign[idx].mod ? &w->foreign[idx] : NULL;
	o.x = &x;
	o.read_lo = w->read_lo;
	o.read_hi = w->read_hi;
	for (int op = 0; op < w->nops && !rep->failed; op++)
	{
		if (one_op(&o, w->mix, op, why, sizeof(why)) != 0)
			cfail(rep, "writer %d (instance %d): %s", idx, w->inst[idx], why);
		rep->ops++;
	}
	rep->scans = o.scans;
	rep->notowner = o.notowner;
	if (mine.n > MAXFINAL)
		cfail(rep, "writer %d: %zu final entries do not fit", idx, mine.n);
	else
	{
		memcpy(sh->final[idx], mine.e, mine.n * sizeof(dm_entry));
		rep->nfinal = mine.n;
	}
	dm_tree_get_counters(t, &rep->ctr);
	dm_client_counters(c, -1, &rep->cc);
	dm_tree_close(t);
	dm_client_destroy(c);
	m_free(&mine);
	return rep->failed;
}

/* Scans and lookups until the writers are done: only the stable entries are known. */
static int
scanner_child(const workcfg *w, int idx)
{
	child_rep  *rep = &sh->rep[idx];
	dm_client  *c = NULL;
	dm_tree    *t;
	expect		x = {w->stable, NULL, NULL, 0};
	char		why[1024] = "";

	rng_seed_label(g_seed, w->label, idx);
	if ((t = child_attach(w, idx, &c)) == NULL)
		return 1;
	while (!rep->failed && (rep->scans < 4 || !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)))
	{
		dm_range	r;

		rand_range(&r, w->read_lo, w->read_hi);
		if (rnd_below(8) == 0)
			r = (dm_range) {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, (int) rnd_below(2)};
		if (scan_check(t, &r, &x, NULL, why, sizeof(why)) != 0)
			cfail(rep, "scanner %d, scan %" PRIu64 ": %s", idx, rep->scans, why);
		rep->scans++;
		for (int i = 0; i < 4 && !rep->failed; i++)
			if (lookup_check(t, w->read_lo + rnd_below(w->read_hi - w->read_lo), &x, why, sizeof(why)) != 0)
				cfail(rep, "scanner %d: %s", idx, why);
		rep->ops += 5;
	}
	dm_tree_get_counters(t, &rep->ctr);
	dm_client_counters(c, -1, &rep->cc);
	dm_tree_close(t);
	dm_client_destroy(c);
	return rep->failed;
}

static int
work_child(int idx, void *arg)
{
	const workcfg *w = arg;

	return idx < w->nwriters ? writer_child(w, idx) : scanner_child(w, idx);
}

/*
 * Run the children of w, check each finished cleanly, and build the
 * expected final contents: the stable entries plus every writer's final set.
 */
dm_tree_counters
run_work(workcfg *w, int nchildren, model *final)
{
	int			codes[MAXCHILD];
	double		secs = run_children(w->label, nchildren, w->nwriters, work_child, w, codes);
	dm_tree_counters tot = {0};
	uint64_t	ops = 0,
				rts = 0,
				atomics = 0;

	tap_diag("%s: %d processes ran %.1f s", w->label, nchildren, secs);
	for (int i = 0; i < nchildren; i++)
	{
		child_rep  *r = &sh->rep[i];

		if (!CHECK(codes[i] == 0 && !r->failed, "%s: %s %d finished cleanly (%" PRIu64 " ops, %" PRIu64 " scans, %"
				   PRIu64 " refused foreign writes)", w->label, i < w->nwriters ? "writer" : "scanner", i, r->ops,
				   r->scans, r->notowner))
			tap_diag("  exit code %d: %s", codes[i], r->msg[0] ? r->msg : "(no message)");
		tot.splits += r->ctr.splits;
		tot.read_retries += r->ctr.read_retries;
		tot.lock_retries += r->ctr.lock_retries;
		tot.lock_takeovers += r->ctr.lock_takeovers;
		tot.restarts += r->ctr.restarts;
		tot.root_grows += r->ctr.root_grows;
		ops += r->ops;
		rts += r->cc.round_trips;
		atomics += atomics_of(&r->cc);
	}
	tap_diag("%s: %" PRIu64 " ops, %" PRIu64 " round trips, %" PRIu64 " remote atomics, %" PRIu64 " splits, %"
			 PRIu64 " root grows, %" PRIu64 " read retries, %" PRIu64 " lock retries, %" PRIu64 " restarts",
			 w->label, ops, rts, atomics, tot.splits, tot.root_grows, tot.read_retries, tot.lock_retries,
			 tot.restarts);
	/* nobody died holding a lock: a takeover means one was leaked */
	CHECK(tot.lock_takeovers == 0, "%s: no lock was taken over (%" PRIu64 ")", w->label, tot.lock_takeovers);
	CHECK(tot.splits > 0, "%s: the writers split nodes (%" PRIu64 ")", w->label, tot.splits);
	for (size_t i = 0; i < w->stable->n; i++)
		m_insert(final, w->stable->e[i]);
	for (int i = 0; i < w->nwriters; i++)
		for (uint64_t k = 0; k < sh->rep[i].nfinal; k++)
			m_insert(final, sh->final[i][k]);
	return tot;
}
