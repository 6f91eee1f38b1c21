/*
 * dmbench/main.c — YCSB-style benchmark of the remote B-link tree (src/dm/dm_tree.h)
 * with no PostgreSQL: what one index operation costs in throughput, latency
 * and remote operations, measured the way DEX (VLDB'24, §8 and Table 2) and
 * CHIME (SOSP'24, §5) measure their trees.
 *
 * Setup.  A tree is created on the first memnode and bulk-loaded with
 * --entries keys (fill factor --fillfactor); then each (workload,
 * distribution) cell runs for --duration seconds on --clients forked client
 * processes, each with its own dm_client (tcp or shm backend) and its own
 * dm_tree_open_existing() handle.  All cells of one transport share that
 * tree, in the order given (as YCSB runs its workloads one after another on
 * one loaded database); each transport starts from a freshly loaded tree.
 *
 * Workloads (YCSB core workloads, as used by CHIME; DEX's Table 1 names in
 * brackets):
 *   load  100% insert of fresh keys into the loaded tree
 *   a     50% read / 50% update                         [write-intensive]
 *   b     95% read / 5% update                          [read-intensive]
 *   c     100% read                                     [read-only]
 *   d     95% read of recently inserted keys / 5% insert  (YCSB "latest")
 *   e     95% scan of 1..100 entries (uniform) / 5% insert [scan-intensive]
 *   i     50% read / 50% insert                         [insert-intensive]
 *         (not YCSB; DEX's Table 1 row, whose reads do choose keys)
 * Key choice: uniform, or YCSB's ScrambledZipfian (θ = 0.99 over 10^10
 * ranks, FNV-hashed onto the key space so that hot keys are spread over the
 * tree rather than packed into a few leaves).  load has no key choice (every
 * key is new) and d always uses "latest", so those run once per transport.
 *
 * Mapping onto an index of (key, tid) entries:
 *   read    dm_tree_lookup(key): every tid of the key.
 *   update  what PostgreSQL does to an index when a row gets a new version
 *           (non-HOT UPDATE, then VACUUM): dm_tree_insert(key, fresh tid),
 *           then dm_tree_delete(key, previous tid).  The insert comes first
 *           and the row's current tid is swapped atomically in a table
 *           shared by all clients, so a key is never absent from the tree,
 *           and at rest it has exactly one entry (checked at the end).  One
 *           update is therefore two tree operations, where DEX's and
 *           Sherman's "update" rewrites a value in place: keep that in mind
 *           when comparing rows.
 *   insert  a new key: the next ordinal of a counter shared by the clients.
 *   scan    dm_iter over [key, +inf) taking up to N entries.
 * Keys are ordinals run through a 64-bit bijective mixer, so inserts land
 * all over the tree (as with YCSB's hashed keys) and keys never collide.
 *
 * Reported per cell: throughput (sum over clients), p50/p99 latency (µs,
 * from per-op samples of all clients; per op kind in a second table), and
 * per operation the deltas of dm_client_counters over the measured window:
 * round trips, remote READs, WRITEs, atomics (CAS + FAA + fetch-or), RPCs,
 * payload bytes read / written and socket bytes; and the tree's own
 * counters (node reads, read retries, lock retries, splits, restarts).
 * Those are the columns of DEX's Table 2, whose published rows are printed
 * next to ours.  Each cell also reports the share of the machine's CPUs
 * that other processes took meanwhile: on a small shared machine that,
 * more than anything in the tree, is what moves throughput between runs.
 * At the end of each transport, dm_tree_verify must pass and the tree must
 * hold exactly one entry per row (no update or insert lost or duplicated).
 *
 * By default one memnode is started here (build/dmindex-memnode --shm
 * --size REGION --threads 2 on 127.0.0.1) and stopped at the end.
 *
 * Cache cells (--cache-policy LIST; DEX §5 and §8, dm_cache.h).  With that
 * option every cell measures the compute-side node cache: for each
 * transport, workload and distribution, in this order,
 *     off, then for each --cache-pct P (in the order given):
 *         each listed policy other than off (inner, then dex),
 * and every one of those cells starts from a FRESHLY LOADED tree (the same
 * --entries keys, so the same shape) and, unless it is off, a fresh cache:
 * a MAP_SHARED | MAP_ANONYMOUS mapping made and dm_cache_init()ed in the
 * parent before the clients fork, of
 *     nframes = max(16, (tree nodes after the load) * P / 100)
 * frames of node size, i.e. P% of the tree's remote bytes right after the
 * load (the tree grows during insert and update workloads; the cache does
 * not).  Every client calls dm_tree_use_cache(handle, cache, 0): one
 * compute instance, which owns the whole key space (no partition map is
 * stored), so leaves are cacheable and written under the frame's local
 * lock.  Policy off does NOT call dm_tree_use_cache at all: it is the plain
 * path of the cells above, run once per (workload, distribution) since the
 * cache size does not matter to it.  A fresh load per cell makes the cells
 * comparable although update and insert workloads grow the tree, and keeps
 * one cell's cache-warmth or tree growth from leaking into the next.
 *
 * Each cache cell warms up with its own workload for --warmup seconds
 * (default in this mode: 3 s; not measured; the clients' warm-up ops are
 * reported) so that the measured window sees the cache in steady state;
 * the hit ratio is reported over the whole window and over each half of
 * it, which shows whether it was still moving.  Per cell: throughput,
 * p50/p99, the per-op transport counters as above, and from dm_cache_stats
 * deltas over the window (all clients share the cache): hit ratio = hits
 * / (hits + misses) of node reads that went through the cache (also by
 * leaf / inner level), hits, evictions and admissions per op, and the
 * frames in use at the end.  At the end of each cache cell dm_tree_verify
 * (one entry per row) and dm_tree_verify_cache (every cached owned node
 * identical to remote memory) must pass.  A summary per workload puts the
 * policies side by side with ratios to off from the same run, next to
 * DEX's published Table 2 (DEX: 4 compute servers, 256 MB cache each =
 * ~8% of the whole tree, but each server only touches the quarter of the
 * keys it owns).  --oracle adds the best hit ratio any cache of that many
 * frames could have for lookups (the hottest nodes, counted from samples
 * of the same key generator), a floor for reads/op of workload c.
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

/* ---- main -------------------------------------------------------------------------- */

/* The notes under the tables (bounded: never written past the end). */
char notes[1 << 17];
static size_t nlen;

static void note_add(const char *fmt,...) __attribute__((format(printf, 1, 2)));

static void
note_add(const char *fmt,...)
{
	va_list		ap;
	int			n;

	if (nlen + 1 >= sizeof(notes))
		return;
	va_start(ap, fmt);
	n = vsnprintf(notes + nlen, sizeof(notes) - nlen, fmt, ap);
	va_end(ap);
	if (n > 0)
		nlen = nlen + (size_t) n < sizeof(notes) ? nlen + (size_t) n : sizeof(notes) - 1;
}

int
main(int argc, char **argv)
{
	const char *memnode_args[16];
	memnode_proc mp;
	int			started_memnode = 0,
				quick = 0,
				i,
				ti,
				failed = 0;
	char		err[512],
				threads_buf[16];
	size_t		shared_len,
				samples_len,
				tids_len;
	uint64_t	t_begin = now_ns();
	load_info	li[2];
	end_info	ei[2];
	int			have_end[2] = {0, 0};

	memset(li, 0, sizeof(li));
	memset(ei, 0, sizeof(ei));
	i = parse_options(argc, argv, &quick);
	if (i >= 0)
		return i;

	signal(SIGPIPE, SIG_IGN);
	clk_tck = sysconf(_SC_CLK_TCK);
	if (clk_tck <= 0)
		clk_tck = 100;

	/*
	 * The shared mapping: header, latency samples, and the table of current
	 * tids by ordinal.  The tid table has room for the loaded keys plus 2^27
	 * inserts; pages are only allocated when touched (MAP_NORESERVE).
	 */
	ord_cap = n_entries + (UINT64_C(1) << 27);
	shared_len = (sizeof(shared_hdr) + 4095) & ~(size_t) 4095;
	samples_len = (size_t) nclients * K_COUNT * SAMPLE_CAP * sizeof(uint32_t);
	tids_len = (size_t) ord_cap * sizeof(uint64_t);
	sh = mmap(NULL, shared_len + samples_len + tids_len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sh == MAP_FAILED)
	{
		fprintf(stderr, "dmbench: mmap of %zu bytes: %s\n",
				shared_len + samples_len + tids_len, strerror(errno));
		return 1;
	}
	samples = (uint32_t *) ((char *) sh + shared_len);
	cur_tid = (uint64_t *) ((char *) sh + shared_len + samples_len);

	zipf_set(&scrambled_zipf, YCSB_ITEM_COUNT + 1, ZIPF_THETA, YCSB_ZETAN);

	if (nmemnode_addrs == 0)
	{
		int			na = 0;

		memnode_find_binary();
		snprintf(threads_buf, sizeof(threads_buf), "%d", memnode_threads);
		memnode_args[na++] = "--shm";
		for (int t = 0; t < ntransports; t++)
			if (transports[t] == TR_UCX)
			{
				memnode_args[na++] = "--ucx";
				break;
			}
		memnode_args[na++] = "--size";
		memnode_args[na++] = region_size;
		memnode_args[na++] = "--threads";
		memnode_args[na++] = threads_buf;
		memnode_args[na] = NULL;
		if (memnode_start(&mp, 0, memnode_args) != 0)
		{
			fprintf(stderr, "dmbench: could not start a memnode "
					"(set DM_MEMNODE or build it with make standalone)\n");
			return 1;
		}
		started_memnode = 1;
		memnode_pid = mp.pid;
		memnode_addrs[nmemnode_addrs++] = mp.addr;
	}

	fprintf(stderr, "dmbench: %" PRIu64 " entries, %d client(s), %.1f s per cell (+%.1f s warm-up), node %u B, %s leaves, fill %d%%%s\n",
			n_entries, nclients, duration_s, warmup_s, node_size,
			leaf_format == DM_LEAF_HOPSCOTCH ? "hopscotch" : "sorted", fillfactor,
			started_memnode ? ", memnode started here" : "");

	if (cache_mode)
	{
		char		pl[64] = "",
					pp[256] = "";

		for (i = 0; i < ncache_policies; i++)
			snprintf(pl + strlen(pl), sizeof(pl) - strlen(pl), "%s%s", i ? "," : "", policy_names[cache_policies[i]]);
		for (i = 0; i < ncache_pcts; i++)
		{
			char		b[32];

			fmt_pct(b, sizeof(b), cache_pcts[i]);
			snprintf(pp + strlen(pp), sizeof(pp) - strlen(pp), "%s%s", i ? "," : "", b);
		}
		fprintf(stderr, "dmbench: cache cells: policies %s, sizes %s of the loaded tree, leaf admission %u‰, "
				"cooling map %u%% of the frames; a fresh load per cell\n",
				pl, pp, leaf_admit, cooling_pct ? cooling_pct : 10);
	}
	for (ti = 0; ti < ntransports && cache_mode; ti++)
	{
		int			tr = transports[ti];
		int			wi;

		for (wi = 0; wi < nworkload_list; wi++)
		{
			const workload *wl = &workloads[workload_list[wi]];
			int			dists[2],
						nd = workload_dists(wl, dists),
						di;

			for (di = 0; di < nd; di++)
			{
				int			pi,
							k;

				for (k = 0; k < ncache_policies; k++)
					if (cache_policies[k] == DM_CACHE_OFF &&
						run_cache_cell(tr, wl, dists[di], DM_CACHE_OFF, 0) != 0)
						failed = 1;
				for (pi = 0; pi < ncache_pcts; pi++)
					for (k = 0; k < ncache_policies; k++)
						if (cache_policies[k] != DM_CACHE_OFF &&
							run_cache_cell(tr, wl, dists[di], cache_policies[k], cache_pcts[pi]) != 0)
							failed = 1;
				/* after the first load: the ideal-cache bound (the shape is the same for every cell) */
				if (do_oracle && noracle == 0 && ncells > 0 && cells[0].li.have_stats)
				{
					fprintf(stderr, "[%s] oracle: sampling %" PRIu64 " lookups per distribution ... ",
							transport_names[tr], oracle_samples);
					oracle_compute(&cells[0].li.st);
					fprintf(stderr, "done\n");
				}
			}
		}
	}

	for (ti = 0; ti < ntransports && !cache_mode; ti++)
	{
		int			tr = transports[ti];
		int			wi;

		/* A fresh tree (and fresh row table) per transport. */
		memset(cur_tid, 0, (size_t) (sh->next_ord > ord_cap ? ord_cap : sh->next_ord) * sizeof(uint64_t));
		sh->next_ord = 0;
		memset(&latest_zipf, 0, sizeof(latest_zipf));
		zipf_set(&latest_zipf, 1, ZIPF_THETA, 1.0);

		fprintf(stderr, "[%s] bulk-loading %" PRIu64 " entries ... ", transport_names[tr], n_entries);
		if (create_and_load(tr, &li[ti], err, sizeof(err)) != DM_OK)
		{
			fprintf(stderr, "FAILED: %s\n", err);
			note_add(
							 "- %s: bulk load failed: %s\n", transport_names[tr], err);
			failed = 1;
			continue;
		}
		fprintf(stderr, "%.2f s (keys generated and sorted in %.2f s), height %d\n",
				li[ti].load_s, li[ti].gen_s, li[ti].have_stats ? li[ti].st.height : -1);

		for (wi = 0; wi < nworkload_list; wi++)
		{
			const workload *wl = &workloads[workload_list[wi]];
			int			dists[2],
						nd = workload_dists(wl, dists),
						di;

			for (di = 0; di < nd; di++)
			{
				cell	   *ce;

				if (ncells >= MAX_CELLS)
					break;
				ce = &cells[ncells++];
				memset(ce, 0, sizeof(*ce));
				ce->wl = wl;
				ce->dist = dists[di];
				ce->transport = tr;
				fprintf(stderr, "[%s] %-4s %-7s ... ", transport_names[tr], wl->name,
						dist_names[ce->dist]);
				run_cell(ce);
				if (ce->done)
				{
					char		p50[32],
								p99[32];

					fmt_us(p50, sizeof(p50), ce->p50_ns);
					fmt_us(p99, sizeof(p99), ce->p99_ns);
					fprintf(stderr, "%.0f ops/s, p50 %s µs, p99 %s µs, %.2f round trips/op\n",
							ce->ops_per_s, p50, p99, per(ce->ctr.round_trips, ce->ops));
				}
				else
				{
					fprintf(stderr, "FAILED: %s\n", ce->note);
					failed = 1;
				}
			}
		}

		fprintf(stderr, "[%s] %s and dropping the tree ... ", transport_names[tr],
				do_verify ? "verifying" : "measuring");
		verify_and_drop(&ei[ti], NULL);
		have_end[ti] = 1;
		if (ei[ti].verified < 0)
		{
			fprintf(stderr, "FAILED: %s\n", ei[ti].msg);
			failed = 1;
		}
		else
			fprintf(stderr, "ok%s\n", do_verify ? "" : " (not verified)");
	}

	if (started_memnode)
		memnode_stop(&mp, SIGTERM);
	memnode_pid = 0;

	/* ---- notes ---- */
	{
		char		mn[128],
					hot[224] = "";

		if (leaf_format == DM_LEAF_HOPSCOTCH)
		{
			int			hk = hotspot_entries >= 0 ? hotspot_entries : DM_TREE_HOTSPOT_DEFAULT;
			int			hc = hotspot_entries >= 0 ? hotspot_entries : DM_CACHE_HOTSPOT_DEFAULT;

			/* with a cache the buffer is the cache's, shared by the clients (dm_tree_hot.c) */
			snprintf(hot, sizeof(hot), ", a hotspot buffer of %d keys (%d KiB) per client without a cache, "
					 "of %d keys (%d KiB) in the cache shared by the clients with one", hk,
					 (int) ((size_t) hk * 64 / 1024), hc, (int) ((size_t) hc * 64 / 1024));
		}

		if (started_memnode)
			snprintf(mn, sizeof(mn), "started here with `--shm --size %s --threads %d` on 127.0.0.1",
					 region_size, memnode_threads);
		else
			snprintf(mn, sizeof(mn), "%d given with --memnode", nmemnode_addrs);
		note_add(
						 "Setup: %" PRIu64 " keys bulk-loaded (fill factor %d%%, %u-byte nodes, %s leaves%s), "
						 "%d client process(es), %.1f s measured per cell after %.1f s warm-up%s; memnode %s.\n\n",
						 n_entries, fillfactor, node_size,
						 leaf_format == DM_LEAF_HOPSCOTCH ? "hopscotch" : "sorted", hot, nclients, duration_s, warmup_s,
						 quick ? " (--quick)" : "", mn);
	}
	for (ti = 0; ti < ntransports; ti++)
	{
		if (li[ti].load_s > 0)
		{
			note_add(
							 "- %s: bulk load of %" PRIu64 " entries took %.2f s (%.2f M entries/s; "
							 "%.0f round trips, %.1f MB written) after %.2f s to generate and sort the keys",
							 transport_names[transports[ti]], n_entries, li[ti].load_s,
							 (double) n_entries / li[ti].load_s / 1e6,
							 (double) li[ti].ctr.round_trips,
							 (double) li[ti].ctr.bytes_written / 1e6, li[ti].gen_s);
			if (li[ti].have_stats)
				note_add(
								 "; tree after load: height %d, %" PRIu64 " leaves, leaf fill %.2f, %.1f MB",
								 li[ti].st.height, li[ti].st.nodes[0], li[ti].st.leaf_fill,
								 (double) li[ti].st.remote_bytes / 1e6);
			note_add(".\n");
		}
		if (have_end[ti])
		{
			end_info   *e = &ei[ti];

			note_add("- %s: at the end ",
							 transport_names[transports[ti]]);
			if (e->have_stats)
				note_add(
								 "height %d, %" PRIu64 " leaves, leaf fill %.2f, %.1f MB; ",
								 e->st.height, e->st.nodes[0], e->st.leaf_fill,
								 (double) e->st.remote_bytes / 1e6);
			if (e->have_stats && nmemnode_addrs > 1)
			{
				int			m;

				note_add("nodes by memnode:");
				for (m = 0; m < nmemnode_addrs; m++)
					note_add(" %" PRIu64,
									 e->st.nodes_by_memnode[m]);
				note_add("; ");
			}
			if (e->verified > 0)
				note_add(
								 "dm_tree_verify ok in %.1f s, %" PRIu64 " entries = one per row.\n",
								 e->verify_s, e->entries);
			else if (e->verified < 0)
				note_add(
								 "**verification FAILED**: %s.\n", e->msg);
			else
				note_add("not verified.\n");
		}
	}
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		char		name[128],
					lbl[48];

		snprintf(name, sizeof(name), "%s / %s / %s%s%s", ce->wl->name, dist_names[ce->dist],
				 transport_names[ce->transport], cache_mode ? " / " : "", cache_label(ce, lbl, sizeof(lbl)));
		if (!ce->done)
			note_add("- **%s failed**: %s\n", name, ce->note);
		else
		{
			if (ce->anom.read_miss_again || ce->anom.insert_existed || ce->anom.delete_missing)
				note_add("- **%s anomalies**: %" PRIu64 " reads found no entry twice in a row, "
						 "%" PRIu64 " inserts of a new entry said it existed, %" PRIu64
						 " deletes of a row's previous entry found nothing.\n",
						 name, ce->anom.read_miss_again, ce->anom.insert_existed, ce->anom.delete_missing);
			if (ce->anom.read_miss > ce->anom.read_miss_again)
				note_add("- %s: %" PRIu64 " of %" PRIu64 " reads found no entry at first and "
						 "found it when repeated (expected under concurrent updates, see below).\n",
						 name, ce->anom.read_miss - ce->anom.read_miss_again, ce->kops[K_READ]);
		}
		if (cache_mode && ce->ei.verified < 0)
			note_add("- **%s: tree verification FAILED**: %s\n", name, ce->ei.msg);
		if (cache_mode && ce->cache_verified < 0)
			note_add("- **%s: cache verification FAILED**: %s\n", name, ce->cache_msg);
		if (cache_mode && ce->done && ce->policy != DM_CACHE_OFF && (ce->cs.no_frame || ce->cs.io_waits))
			note_add("- %s: %" PRIu64 " admissions found no frame to free, %" PRIu64
					 " lookups found a fetch in progress (read remotely meanwhile).\n",
					 name, ce->cs.no_frame, ce->cs.io_waits);
	}
	if (cache_mode)
	{
		const cell *c0 = NULL,
				   *cc = NULL;

		for (i = 0; i < ncells; i++)
		{
			if (!c0 && cells[i].li.have_stats)
				c0 = &cells[i];
			if ((!cc || cells[i].nframes > cc->nframes) && cells[i].nframes > 0)
				cc = &cells[i];
		}
		if (c0)
			note_add("- Every cell starts from a fresh bulk load of the same %" PRIu64 " keys: height %d, %" PRIu64
					 " nodes (%" PRIu64 " leaves, %" PRIu64 " inner), %.1f MB; cache sizes are %% of those nodes, "
					 "in frames of %u B of node (%.0f B of shared memory per frame with its header, child hints "
					 "and share of the mapping table and cooling map).\n",
					 n_entries, c0->li.st.height, tree_nodes(&c0->li.st), c0->li.st.nodes[0],
					 tree_nodes(&c0->li.st) - c0->li.st.nodes[0], (double) c0->li.st.remote_bytes / 1e6,
					 node_size, cc ? (double) cc->cache_bytes / cc->nframes : 0.0);
		note_add("- Cache cells: per transport, workload and distribution, off first (run once: its cache size is moot), "
				 "then for each cache size inner and dex, each on a fresh tree and a fresh, empty cache made in the parent "
				 "before the clients fork (MAP_SHARED | MAP_ANONYMOUS, dm_cache_init); each client calls "
				 "dm_tree_use_cache(handle, cache, 0) — one compute instance owning every key — except for off, "
				 "which does not call it. Leaf admission probability %.3f (--leaf-admit %u; of a leaf a hopscotch point lookup "
				 "missed %.3f, --hop-admit), cooling map %u%% of the "
				 "frames. Warm-up with the cell's own workload (not measured): %.1f s, and with a cache on until the hit ratio "
				 "of one second differs by less than %.1f percentage points from the second before, at most %.1f s "
				 "('warm-up' gives its length, '(max)' when it never settled, and the clients' operations); then %.1f s "
				 "measured; '1st / 2nd half' is the hit ratio over each half of that window.\n"
				 "- Hit ratio = dm_cache_stats hits / (hits + misses) over the window: node reads that went through the "
				 "cache (descents, scans). A writer locking a node of a cached level counts a miss when it has to admit "
				 "the node (admitted always, whatever --leaf-admit says) but no hit when the node is in a frame "
				 "(dm_cache_lock counts nothing), so for workloads with writes under dex the ratio is a lower bound. "
				 "reads/op, B/op and atomics/op come from the transport (dm_client_counters), as in the tables below.\n"
				 "- After each cache cell dm_tree_verify (one entry per row) and dm_tree_verify_cache (every cached node "
				 "of an owned range identical to remote memory) ran on the tree ('checks').\n"
				 "- zipf keys: %s.\n",
				 leaf_admit / 1000.0, leaf_admit, (hop_admit >= 0 ? hop_admit : DM_CACHE_HOP_ADMIT_DEFAULT) / 1000.0,
				 cooling_pct ? cooling_pct : 10, warmup_s,
				 100 * warmup_stable, warmup_max_s, duration_s,
				 zipf_over_keys ?
				 "--zipf-items keys: Gray's zipfian (θ = 0.99) over as many ranks as keys present, FNV-hashed onto "
				 "them, like DEX's benchmark (mehcached_zipf over its key space, CityHash'ed onto keys)" :
				 "YCSB's ScrambledZipfian (θ = 0.99 over 10^10 ranks, FNV-hashed onto the keys present); "
				 "DEX's benchmark draws ranks over its key space instead (--zipf-items keys), which is more skewed");
	}
	note_add(
					 "- Workloads: load = 100%% insert of new keys into the loaded tree; a = 50%% read / 50%% update; "
					 "b = 95/5; c = 100%% read; d = 95%% read of recent keys (YCSB latest) / 5%% insert; "
					 "e = 95%% scan of 1..100 entries / 5%% insert; i = 50%% read / 50%% insert (DEX's insert-intensive). %s\n"
					 "- read = dm_tree_lookup; update = dm_tree_insert(key, new tid) + dm_tree_delete(key, old tid) "
					 "(a PostgreSQL row update followed by VACUUM: two tree operations, where DEX/Sherman update a value in place); "
					 "insert = dm_tree_insert of a new key; scan = dm_iter from the key.\n"
					 "- zipf = YCSB ScrambledZipfian (θ = 0.99 over 10^10 ranks, FNV-hashed onto the keys present at the cell's start); "
					 "keys are ordinals through a bijective 64-bit mixer.\n"
					 "- ops/s is summed over the clients; latency is per YCSB operation (an update's two tree calls together), "
					 "percentiles over all operations or a uniform sample of %u per client and kind.\n"
					 "- Per-op columns are dm_client_counters deltas over the measured window divided by operations: "
					 "reads/writes/atomics are one-sided ops (atomics = CAS + FAA + fetch-or), B read/written their payload, "
					 "wire B the socket bytes both ways (on shm only RPCs use the socket); shm counts each dm_post as a round trip "
					 "although no message is sent.\n"
					 "- A lookup reads one leaf after another and sees for sure only entries present for its whole duration "
					 "(dm_tree.h). When the versions of a row straddle a leaf boundary, two concurrent updates of that row "
					 "can move its single entry from the unread leaf to the already-read one, and the lookup finds nothing; "
					 "dmbench then repeats it (counted in its latency). PostgreSQL never sees this: a version's entry is "
					 "removed only by VACUUM, once no snapshot can need it; here the old version goes at once.\n"
					 "- CPU used by others: busy time of all CPUs (/proc/stat) during the cell minus that of the clients%s, "
					 "as a share of all CPUs. The clients (and on tcp the memnode) want about %d CPU(s); what others take "
					 "comes out of that, so compare throughput between cells only where this share is small.\n"
					 "%s",
					 cache_mode ? "Each cell runs on its own freshly loaded tree." :
					 "Cells run in this order on one tree per transport, so later cells see the keys earlier ones inserted.",
					 SAMPLE_CAP,
					 started_memnode ? " and the memnode" : " (a memnode given with --memnode counts as other)",
					 nclients,
					 cache_mode ? "" : "- No compute-side cache (see --cache-policy): every operation descends from the root.\n");
	note_add("- Total run time %.0f s.\n",
					 (double) (now_ns() - t_begin) / 1e9);

	print_all(stdout, notes);
	if (out_path)
	{
		FILE	   *f = fopen(out_path, "w");

		if (!f)
		{
			fprintf(stderr, "dmbench: %s: %s\n", out_path, strerror(errno));
			return 1;
		}
		print_all(f, notes);
		fclose(f);
	}
	munmap(sh, shared_len + samples_len + tids_len);
	return failed ? 1 : 0;
}
