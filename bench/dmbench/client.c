/*
 * client.c — one forked client process of a cell: its own dm_client and tree
 * handle, the warm-up, then the measured loop of the workload's mix (read,
 * update, insert, scan mapped onto (key, tid) index operations), latency
 * samples into the shared mapping, counters and anomalies into its result
 * slot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dm_cache.h"
#include "dm_client.h"
#include "dm_offload.h"
#include "dm_tree.h"
#include "testutil.h"

#include "dmbench.h"

/* ---- the client process --------------------------------------------------------- */

typedef struct worker
{
	int			idx;
	const workload *wl;
	int			dist;
	dm_client  *c;
	dm_tree    *t;
	uint64_t	rng;
	uint64_t	nkeys;			/* key space for uniform / zipf: ordinals at cell start */
	uint64_t	tids[LOOKUP_MAX];
	child_result *r;
	anomalies	anom;
	uint64_t	scanned;
} worker;

static void
child_fail(child_result *r, int status, const char *what, worker *w)
{
	r->status = status ? status : -1;
	snprintf(r->err, sizeof(r->err), "%s: %s%s%s%s%s", what,
			 status > 0 ? dm_strerror(status) : (status < 0 ? dm_strerror(-status) : "failed"),
			 w && w->t ? " — tree: " : "", w && w->t ? dm_tree_error(w->t) : "",
			 w && w->c ? " — client: " : "", w && w->c ? dm_client_error(w->c) : "");
}

static inline uint64_t
fresh_tid(worker *w)
{
	/* Only client idx touches its slot: no atomics needed. */
	return ((uint64_t) (w->idx + 1) << TID_CLIENT_SHIFT) | ++sh->tid_seq[w->idx];
}

/*
 * An ordinal to read / update / scan from.  Uniform and zipf choose among
 * the ordinals that existed when the cell started (YCSB fixes its key
 * chooser's range the same way); latest among all inserted so far.  An
 * ordinal whose insert is still in flight (claimed, not yet published) is
 * replaced by the next older one, as YCSB's acknowledged counter would.
 */
static inline uint64_t
choose_ord(worker *w)
{
	uint64_t	ord;

	switch (w->dist)
	{
		case DIST_ZIPF:
			ord = fnvhash64(zipf_next(&scrambled_zipf, rand_double(&w->rng))) % w->nkeys;
			break;
		case DIST_LATEST:
			{
				uint64_t	n = __atomic_load_n(&sh->next_ord, __ATOMIC_ACQUIRE);

				zipf_grow(&latest_zipf, n);
				ord = n - 1 - zipf_next(&latest_zipf, rand_double(&w->rng));
				break;
			}
		default:
			ord = splitmix64(&w->rng) % w->nkeys;
			break;
	}
	while (ord > 0 && __atomic_load_n(&cur_tid[ord], __ATOMIC_ACQUIRE) == 0)
		ord--;
	return ord;
}

static inline int
pick_kind(worker *w)
{
	double		u = rand_double(&w->rng) * 100.0,
				acc = 0;
	int			k;

	for (k = 0; k < K_COUNT - 1; k++)
	{
		acc += w->wl->pct[k];
		if (u < acc && w->wl->pct[k] > 0)
			return k;
	}
	return K_SCAN;
}

/*
 * One operation of kind k.  The ordinal is chosen by the caller before the
 * clock starts, so latency covers only the tree operation(s).  Returns
 * DM_OK or a status; *what names the call that failed.
 */
static int
do_op(worker *w, int k, uint64_t ord, const char **what)
{
	int			st,
				existed = 0;
	uint64_t	key = key_of(ord);

	switch (k)
	{
		case K_READ:
			{
				int			n = 0;

				*what = "dm_tree_lookup";
				st = dm_tree_lookup(w->t, key, w->tids, LOOKUP_MAX, &n);
				if (st == DM_OK && n == 0)
				{
					/*
					 * Every published key has an entry at every instant, but
					 * a lookup reads one leaf after the other, and it is only
					 * guaranteed to see entries present for its whole
					 * duration.  When a key's versions straddle a leaf
					 * boundary, concurrent updates can move its one entry
					 * from the leaf not yet read to the one already read.
					 * Look again: a second miss would be a real loss.
					 */
					w->anom.read_miss++;
					st = dm_tree_lookup(w->t, key, w->tids, LOOKUP_MAX, &n);
					if (st == DM_OK && n == 0)
						w->anom.read_miss_again++;
				}
				return st;
			}
		case K_UPDATE:
			{
				uint64_t	tid = fresh_tid(w),
							old;

				*what = "dm_tree_insert (update)";
				st = dm_tree_insert(w->t, dm_entry_make(key, tid), &existed);
				if (st != DM_OK)
					return st;
				if (existed)
					w->anom.insert_existed++;
				/* Publish, and take over the job of deleting the version it replaces. */
				old = __atomic_exchange_n(&cur_tid[ord], tid, __ATOMIC_ACQ_REL);
				*what = "dm_tree_delete (update)";
				existed = 0;
				st = dm_tree_delete(w->t, dm_entry_make(key, old), &existed);
				if (st == DM_OK && !existed)
					w->anom.delete_missing++;
				return st;
			}
		case K_INSERT:
			{
				uint64_t	tid = fresh_tid(w);

				*what = "dm_tree_insert";
				st = dm_tree_insert(w->t, dm_entry_make(key, tid), &existed);
				if (st != DM_OK)
					return st;
				if (existed)
					w->anom.insert_existed++;
				__atomic_store_n(&cur_tid[ord], tid, __ATOMIC_RELEASE);
				return DM_OK;
			}
		case K_SCAN:
			{
				dm_range	rg;
				dm_iter    *it = NULL;
				dm_entry	e;
				int			len = 1 + (int) (splitmix64(&w->rng) % SCAN_MAX),
							i,
							rc = 1;

				rg.lo = dm_key_lo(key, 1);
				rg.lo_incl = 1;
				rg.hi = DM_ENTRY_INF;
				rg.hi_incl = 0;
				rg.backward = 0;
				if (offload_mode != DM_OFFLOAD_OFF)
				{
					/* up to len entries in one offload where the policy says so */
					dm_entry	out[SCAN_MAX],
								resume;
					int			n = 0,
								more = 0;

					*what = "dm_tree_offload_scan";
					st = dm_tree_offload_scan(w->t, rg.lo, 1, DM_ENTRY_INF, 0, out, len, &n, &more, &resume);
					w->scanned += (uint64_t) n;
					return st;
				}
				*what = "dm_iter_open";
				st = dm_iter_open(w->t, &rg, &it);
				if (st != DM_OK)
					return st;
				*what = "dm_iter_next";
				for (i = 0; i < len && (rc = dm_iter_next(it, &e)) == 1; i++)
					w->scanned++;
				dm_iter_close(it);
				return rc < 0 ? -rc : DM_OK;
			}
	}
	return DM_ERR_INTERNAL;
}

/* Claims the ordinal of an insert (before the clock starts, like a key choice). */
static inline int
prepare(worker *w, int k, uint64_t *ord)
{
	if (k == K_INSERT)
	{
		*ord = __atomic_fetch_add(&sh->next_ord, 1, __ATOMIC_ACQ_REL);
		if (*ord >= ord_cap)
			return DM_ERR_NOSPACE;
	}
	else
		*ord = choose_ord(w);
	return DM_OK;
}

static void
counters_sub(dm_counters *a, const dm_counters *b)
{
	int			i;

	a->round_trips -= b->round_trips;
	a->rpcs -= b->rpcs;
	a->rpcs_ucx -= b->rpcs_ucx;
	for (i = 0; i <= DM_OP_KIND_MAX; i++)
		a->ops[i] -= b->ops[i];
	a->bytes_read -= b->bytes_read;
	a->bytes_written -= b->bytes_written;
	a->wire_bytes_sent -= b->wire_bytes_sent;
	a->wire_bytes_recv -= b->wire_bytes_recv;
}

static void
tcounters_sub(dm_tree_counters *a, const dm_tree_counters *b)
{
	a->node_reads -= b->node_reads;
	a->read_retries -= b->read_retries;
	a->lock_retries -= b->lock_retries;
	a->lock_takeovers -= b->lock_takeovers;
	a->splits -= b->splits;
	a->root_grows -= b->root_grows;
	a->restarts -= b->restarts;
	a->hop_reads -= b->hop_reads;
	a->hop_retries -= b->hop_retries;
	a->hop_whole -= b->hop_whole;
	a->hop_fallbacks -= b->hop_fallbacks;
	a->hop_spec_hits -= b->hop_spec_hits;
	a->hop_spec_stale -= b->hop_spec_stale;
}

/*
 * Body of one client process.  ready_fd: one byte once connected and warmed
 * up; EOF on go_fd starts the measured window in all clients at once.
 */
void
child_main(const workload *wl, int dist, int transport, int idx, uint64_t nkeys,
		   int ready_fd, int go_fd)
{
	child_result *r = &sh->res[idx];
	worker		w;
	dm_client_opts opts;
	dm_counters c0;
	dm_tree_counters t0;
	dm_offload_counters o0;
	uint64_t	t_start,
				t_end,
				t_now,
				warm_min,
				warm_max,
				nseen[K_COUNT] = {0};
	const char *what = "";
	char		ch;
	int			st,
				i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	memset(r, 0, sizeof(*r));
	memset(&w, 0, sizeof(w));
	w.idx = idx;
	w.wl = wl;
	w.dist = dist;
	w.nkeys = nkeys ? nkeys : 1;
	w.r = r;
	w.rng = UINT64_C(0x243F6A8885A308D3) ^ ((uint64_t) getpid() << 20) ^ now_ns();

	memset(&opts, 0, sizeof(opts));
	opts.backend = transport == TR_SHM ? DM_BACKEND_SHM :
		transport == TR_UCX ? DM_BACKEND_UCX : DM_BACKEND_TCP;
	opts.name = "dmbench";
	w.c = dm_client_create(&opts);
	if (!w.c)
	{
		child_fail(r, DM_ERR_NOMEM, "dm_client_create", NULL);
		_exit(1);
	}
	for (i = 0; i < nmemnode_addrs; i++)
	{
		uint16_t	id;

		st = dm_client_connect(w.c, memnode_addrs[i], &id);
		if (st != DM_OK)
		{
			child_fail(r, st, "dm_client_connect", &w);
			_exit(1);
		}
	}
	st = dm_tree_open_existing(w.c, home_node, &tree_name, &w.t);
	if (st != DM_OK)
	{
		w.t = NULL;
		child_fail(r, st, "dm_tree_open_existing", &w);
		_exit(1);
	}
	if (hotspot_entries >= 0 && (st = dm_tree_set_hotspot(w.t, hotspot_entries)) != DM_OK)
	{
		child_fail(r, st, "dm_tree_set_hotspot", &w);
		_exit(1);
	}
	/* Cache cells: join compute instance 0 with the parent's cache (off: no call at all). */
	if ((st = dm_tree_set_offload(w.t, offload_mode)) != DM_OK)
	{
		child_fail(r, st, "dm_tree_set_offload", &w);
		_exit(1);
	}
	if (cur_cache && (st = dm_tree_use_cache(w.t, cur_cache, 0)) != DM_OK)
	{
		child_fail(r, st, "dm_tree_use_cache", &w);
		_exit(1);
	}

	/*
	 * Warm-up with the cell's own mix: page faults of the shm mapping, the
	 * memnode threads' first wakeups, CPU caches, allocator state.
	 */
	/* at least warmup_s; then until the parent says the cache is steady, or warmup_max_s */
	warm_min = now_ns() + (uint64_t) (warmup_s * 1e9);
	warm_max = now_ns() + (uint64_t) ((warmup_max_s > warmup_s ? warmup_max_s : warmup_s) * 1e9);
	do
	{
		int			k = pick_kind(&w);
		uint64_t	ord;

		st = prepare(&w, k, &ord);
		if (st == DM_OK)
			st = do_op(&w, k, ord, &what);
		else
			what = "ordinal table full (raise capacity)";
		if (st != DM_OK)
		{
			child_fail(r, st, what, &w);
			_exit(1);
		}
		r->warm_ops++;
		t_now = now_ns();
	} while (t_now < warm_min ||
			 (t_now < warm_max && !__atomic_load_n(&sh->warm_stop, __ATOMIC_ACQUIRE)));
	memset(&w.anom, 0, sizeof(w.anom));
	w.scanned = 0;

	if (fd_write_all(ready_fd, "r", 1) != 0)
		_exit(1);
	close(ready_fd);
	while (read(go_fd, &ch, 1) < 0 && errno == EINTR)
		;
	close(go_fd);

	/* Counters are snapshotted, not reset: the window is the difference. */
	dm_client_counters(w.c, -1, &c0);
	dm_tree_get_counters(w.t, &t0);
	dm_tree_offload_counters(w.t, &o0);
	t_start = now_ns();
	t_end = t_start + (uint64_t) (duration_s * 1e9);
	do
	{
		int			k = pick_kind(&w);
		uint64_t	ord,
					t_op,
					d;
		uint32_t	s;

		st = prepare(&w, k, &ord);
		if (st != DM_OK)
		{
			child_fail(r, st, "ordinal table full (raise capacity)", &w);
			_exit(1);
		}
		t_op = now_ns();
		st = do_op(&w, k, ord, &what);
		t_now = now_ns();
		if (st != DM_OK)
		{
			child_fail(r, st, what, &w);
			_exit(1);
		}
		d = t_now - t_op;
		s = d > UINT32_MAX ? UINT32_MAX : (uint32_t) d;
		if (nseen[k] < SAMPLE_CAP)
			sample_slot(idx, k)[nseen[k]] = s;
		else
		{
			/* Algorithm R: every op ends up in the sample with equal probability. */
			uint64_t	j = splitmix64(&w.rng) % (nseen[k] + 1);

			if (j < SAMPLE_CAP)
				sample_slot(idx, k)[j] = s;
		}
		nseen[k]++;
	} while (t_now < t_end);

	r->elapsed_ns = t_now - t_start;
	dm_client_counters(w.c, -1, &r->ctr);
	counters_sub(&r->ctr, &c0);
	dm_tree_get_counters(w.t, &r->tctr);
	tcounters_sub(&r->tctr, &t0);
	{
		dm_offload_counters o1;

		dm_tree_offload_counters(w.t, &o1);
		r->octr.offloads = o1.offloads - o0.offloads;
		r->octr.fallbacks = o1.fallbacks - o0.fallbacks;
		r->octr.decided_offload = o1.decided_offload - o0.decided_offload;
		r->octr.decided_local = o1.decided_local - o0.decided_local;
		r->octr.explored = o1.explored - o0.explored;
		r->octr.rpc_ns_avg = o1.rpc_ns_avg;
		r->octr.read_ns_avg = o1.read_ns_avg;
		r->octr.memnode_busy_pct = o1.memnode_busy_pct;
	}
	for (i = 0; i < K_COUNT; i++)
	{
		r->ops[i] = nseen[i];
		r->kept[i] = nseen[i] < SAMPLE_CAP ? nseen[i] : SAMPLE_CAP;
	}
	r->anom = w.anom;
	r->scanned = w.scanned;
	dm_tree_close(w.t);
	dm_client_destroy(w.c);
	r->status = 0;
	_exit(0);
}
