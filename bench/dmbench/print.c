/*
 * print.c — the tables dmbench prints (stdout, and --out as markdown): the main
 * table, per op kind, tree counters, offload counters, DEX's Table 2 beside
 * ours, and with a cache the per-cell table, the summary per workload and
 * the oracle.
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

/* ---- output ------------------------------------------------------------------------ */

void
fmt_us(char *buf, size_t sz, double ns)
{
	double		us = ns / 1000.0;

	if (us < 10.0)
		snprintf(buf, sz, "%.2f", us);
	else if (us < 1000.0)
		snprintf(buf, sz, "%.1f", us);
	else
		snprintf(buf, sz, "%.0f", us);
}

double
per(uint64_t x, uint64_t ops)
{
	return ops ? (double) x / (double) ops : 0;
}

static uint64_t
atomics_of(const dm_counters *c)
{
	return c->ops[DM_OP_CAS] + c->ops[DM_OP_FAA] + c->ops[DM_OP_FETCH_OR] + c->ops[DM_OP_FETCH_MAX];
}

static void
print_main_table(FILE *f)
{
	int			i;

	fprintf(f, "| workload | dist | transport |%s ops/s | p50 µs | p99 µs | round trips/op | "
			"reads/op | writes/op | atomics/op | RPCs/op | B read/op | B written/op | wire B/op | "
			"read retries/op | lock retries/op | splits/op | CPU used by others |\n",
			cache_mode ? " cache |" : "");
	fprintf(f, "|---|---|---|%s---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
			cache_mode ? "---|" : "");
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		char		p50[32],
					p99[32],
					oth[32] = "?",
					lbl[48],
					cc[64] = "";
		uint64_t	n = ce->ops;

		if (cache_mode)
			snprintf(cc, sizeof(cc), " %s |", cache_label(ce, lbl, sizeof(lbl)));
		if (!ce->done)
		{
			fprintf(f, "| %s | %s | %s |%s FAILED | | | | | | | | | | | | | | |\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], cc);
			continue;
		}
		fmt_us(p50, sizeof(p50), ce->p50_ns);
		fmt_us(p99, sizeof(p99), ce->p99_ns);
		if (ce->others_cpu >= 0)
			snprintf(oth, sizeof(oth), "%.0f%%", 100 * ce->others_cpu);
		fprintf(f, "| %s | %s | %s |%s %.0f | %s | %s | %.2f | %.2f | %.2f | %.2f | %.4f | %.0f | %.0f | %.0f | %.4f | %.4f | %.4f | %s |\n",
				ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], cc,
				ce->ops_per_s, p50, p99,
				per(ce->ctr.round_trips, n),
				per(ce->ctr.ops[DM_OP_READ], n),
				per(ce->ctr.ops[DM_OP_WRITE], n),
				per(atomics_of(&ce->ctr), n),
				per(ce->ctr.rpcs, n),
				per(ce->ctr.bytes_read, n),
				per(ce->ctr.bytes_written, n),
				per(ce->ctr.wire_bytes_sent + ce->ctr.wire_bytes_recv, n),
				per(ce->tctr.read_retries, n),
				per(ce->tctr.lock_retries, n),
				per(ce->tctr.splits, n), oth);
	}
}

static void
print_kind_table(FILE *f)
{
	int			i,
				k;

	fprintf(f, "| workload | dist | transport |%s op | ops | share | p50 µs | p99 µs |\n",
			cache_mode ? " cache |" : "");
	fprintf(f, "|---|---|---|%s---|---:|---:|---:|---:|\n", cache_mode ? "---|" : "");
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		char		lbl[48],
					cc[64] = "";

		if (!ce->done)
			continue;
		if (cache_mode)
			snprintf(cc, sizeof(cc), " %s |", cache_label(ce, lbl, sizeof(lbl)));
		for (k = 0; k < K_COUNT; k++)
		{
			char		p50[32],
						p99[32];

			if (ce->kops[k] == 0)
				continue;
			fmt_us(p50, sizeof(p50), ce->kp50_ns[k]);
			fmt_us(p99, sizeof(p99), ce->kp99_ns[k]);
			fprintf(f, "| %s | %s | %s |%s %s | %" PRIu64 " | %.1f%% | %s | %s |\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], cc,
					kind_names[k], ce->kops[k], 100.0 * (double) ce->kops[k] / (double) ce->ops,
					p50, p99);
		}
	}
}

static void
print_tree_table(FILE *f)
{
	int			i;

	fprintf(f, "| workload | dist | transport |%s ops | node reads/op | read retries/op | "
			"lock retries/op | lock takeovers | splits/op | root grows | restarts/op | entries/scan |\n",
			cache_mode ? " cache |" : "");
	fprintf(f, "|---|---|---|%s---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", cache_mode ? "---|" : "");
	for (i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		uint64_t	n = ce->ops;
		char		scan[32] = "—",
					lbl[48],
					cc[64] = "";

		if (!ce->done)
			continue;
		if (cache_mode)
			snprintf(cc, sizeof(cc), " %s |", cache_label(ce, lbl, sizeof(lbl)));
		if (ce->kops[K_SCAN])
			snprintf(scan, sizeof(scan), "%.1f", per(ce->scanned, ce->kops[K_SCAN]));
		fprintf(f, "| %s | %s | %s |%s %" PRIu64 " | %.2f | %.4f | %.4f | %" PRIu64 " | %.4f | %" PRIu64 " | %.4f | %s |\n",
				ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], cc, n,
				per(ce->tctr.node_reads, n), per(ce->tctr.read_retries, n),
				per(ce->tctr.lock_retries, n), ce->tctr.lock_takeovers,
				per(ce->tctr.splits, n), ce->tctr.root_grows,
				per(ce->tctr.restarts, n), scan);
	}
}

/* How hopscotch lookups were answered, per lookup (--leaf-format hopscotch). */
static void
print_hop_table(FILE *f)
{
	fprintf(f, "| workload | dist | transport |%s lookups | speculative hits | speculations rejected | "
			"neighbourhood reads | neighbourhood retries | whole leaf (cached or overflowed home) | "
			"to the iterator |\n", cache_mode ? " cache |" : "");
	fprintf(f, "|---|---|---|%s---:|---:|---:|---:|---:|---:|---:|\n", cache_mode ? "---|" : "");
	for (int i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		uint64_t	n = ce->kops[K_READ];
		const dm_tree_counters *t = &ce->tctr;
		char		lbl[48],
					cc[64] = "";

		if (!ce->done || n == 0)
			continue;
		if (cache_mode)
			snprintf(cc, sizeof(cc), " %s |", cache_label(ce, lbl, sizeof(lbl)));
		fprintf(f, "| %s | %s | %s |%s %" PRIu64 " | %.3f | %.3f | %.3f | %.4f | %.3f | %.3f |\n",
				ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], cc, n,
				per(t->hop_spec_hits, n), per(t->hop_spec_stale, n), per(t->hop_reads, n),
				per(t->hop_retries, n), per(t->hop_whole, n), per(t->hop_fallbacks, n));
	}
}

/* Offload counters per cell (--offload). */
static void
print_offload_table(FILE *f)
{
	fprintf(f, "| workload | dist | transport |%s ops | offloads/op | fallbacks/op | decided offload | "
			"decided one-sided | explored | RPCs/op | round trips/op | RPC µs (avg) | read µs (avg) | memnode busy |\n",
			cache_mode ? " cache |" : "");
	fprintf(f, "|---|---|---|%s---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", cache_mode ? "---|" : "");
	for (int i = 0; i < ncells; i++)
	{
		cell	   *ce = &cells[i];
		uint64_t	n = ce->ops;
		char		lbl[48],
					cc[64] = "";

		if (!ce->done)
			continue;
		if (cache_mode)
			snprintf(cc, sizeof(cc), " %s |", cache_label(ce, lbl, sizeof(lbl)));
		fprintf(f, "| %s | %s | %s |%s %" PRIu64 " | %.3f | %.3f | %" PRIu64 " | %" PRIu64 " | %" PRIu64
				" | %.3f | %.3f | %.1f | %.1f | %" PRIu64 "%% |\n",
				ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], cc, n,
				per(ce->octr.offloads, n), per(ce->octr.fallbacks, n), ce->octr.decided_offload,
				ce->octr.decided_local, ce->octr.explored, per(ce->ctr.rpcs, n), per(ce->ctr.round_trips, n),
				ce->octr.rpc_ns_avg / 1e3, ce->octr.read_ns_avg / 1e3, ce->octr.memnode_busy_pct);
	}
}

/* The cell of the same group (workload, dist, transport, cache) run with offload mode m; NULL if none. */
static const cell *
group_cell(const cell *ce, int m)
{
	for (int i = 0; i < ncells; i++)
	{
		const cell *o = &cells[i];

		if (o->done && o->wl == ce->wl && o->dist == ce->dist && o->transport == ce->transport &&
			o->policy == ce->policy && o->pct == ce->pct && o->offload == m)
			return o;
	}
	return NULL;
}

/*
 * --offload off,always,auto: per cell, each mode's throughput and round
 * trips + RPCs per operation, and auto against the better of off and always
 * (issue 13's target: never more than 5% below).
 */
static void
print_offload_modes_table(FILE *f)
{
	fprintf(f, "| workload | dist | transport | cache |");
	for (int m = 0; m < noffload_modes; m++)
		fprintf(f, " %s ops/s | %s RT+RPC/op |", dm_offload_mode_name(offload_modes[m]),
				dm_offload_mode_name(offload_modes[m]));
	fprintf(f, " auto ÷ best of off, always |\n|---|---|---|---|");
	for (int m = 0; m < noffload_modes; m++)
		fprintf(f, "---:|---:|");
	fprintf(f, "---:|\n");
	for (int i = 0; i < ncells; i++)
	{
		const cell *ce = &cells[i];
		const cell *off,
				   *alw,
				   *aut;
		char		lbl[48],
					p[32];
		double		best;

		if (!ce->done || ce->offload != offload_modes[0])
			continue;
		fmt_pct(p, sizeof(p), ce->pct);
		snprintf(lbl, sizeof(lbl), "%s%s%s", ce->policy == DM_CACHE_OFF ? "off" : policy_names[ce->policy],
				 ce->policy == DM_CACHE_OFF ? "" : " ", ce->policy == DM_CACHE_OFF ? "" : p);
		fprintf(f, "| %s | %s | %s | %s |", ce->wl->name, dist_names[ce->dist], transport_names[ce->transport], lbl);
		for (int m = 0; m < noffload_modes; m++)
		{
			const cell *o = group_cell(ce, offload_modes[m]);

			if (o)
				fprintf(f, " %.0f | %.2f |", o->ops_per_s, per(o->ctr.round_trips + o->ctr.rpcs, o->ops));
			else
				fprintf(f, " - | - |");
		}
		off = group_cell(ce, DM_OFFLOAD_OFF);
		alw = group_cell(ce, DM_OFFLOAD_ALWAYS);
		aut = group_cell(ce, DM_OFFLOAD_AUTO);
		best = off && alw ? (off->ops_per_s > alw->ops_per_s ? off->ops_per_s : alw->ops_per_s) : 0;
		if (aut && best > 0)
			fprintf(f, " %.2f |\n", aut->ops_per_s / best);
		else
			fprintf(f, " - |\n");
	}
}

/*
 * Our zipf rows of c (RO) and a (WI) next to DEX's Table 2.  Traffic: READ +
 * WRITE payload plus 8 B per atomic (what an RDMA NIC would move; the
 * paper does not spell out its definition).  Two-sided = our RPCs.
 */
static void
print_paper_table(FILE *f)
{
	int			i,
				j,
				any = 0;

	for (i = 0; i < ncells; i++)
		if (cells[i].done && cells[i].dist == DIST_ZIPF &&
			(cells[i].wl->id == 'a' || cells[i].wl->id == 'c'))
			any = 1;
	if (!any)
		return;
	fprintf(f, "\nPer index operation, next to DEX (VLDB'24) Table 2 (skewed, 144 threads, RDMA; "
			"published numbers quoted as they are):\n\n");
	fprintf(f, "| index | workload | reads | writes | atomics | two-sided (RPCs) | traffic B |\n");
	fprintf(f, "|---|---|---:|---:|---:|---:|---:|\n");
	for (j = 0; j < 2; j++)
	{
		char		wid = j == 0 ? 'c' : 'a';
		size_t		p;

		for (p = 0; p < sizeof(dex_table2) / sizeof(dex_table2[0]); p++)
			if (dex_table2[p].workload == wid)
				fprintf(f, "| %s (paper) | %s | %.2f | %.2f | %.2f | %.4f | %.1f |\n",
						dex_table2[p].name, wid == 'c' ? "RO" : "WI",
						dex_table2[p].reads, dex_table2[p].writes, dex_table2[p].atomics,
						dex_table2[p].two_sided, dex_table2[p].traffic);
		for (i = 0; i < ncells; i++)
		{
			cell	   *ce = &cells[i];
			uint64_t	n = ce->ops;
			char		lbl[48],
						cc[64] = "";

			if (!ce->done || ce->dist != DIST_ZIPF || ce->wl->id != wid)
				continue;
			if (cache_mode)
				snprintf(cc, sizeof(cc), ", cache %s", cache_label(ce, lbl, sizeof(lbl)));
			fprintf(f, "| **dmindex, %s%s** (YCSB %c, zipf, %d clients) | %s | %.2f | %.2f | %.2f | %.4f | %.1f |\n",
					transport_names[ce->transport], cc, wid, nclients, wid == 'c' ? "RO" : "WI",
					per(ce->ctr.ops[DM_OP_READ], n), per(ce->ctr.ops[DM_OP_WRITE], n),
					per(atomics_of(&ce->ctr), n), per(ce->ctr.rpcs, n),
					per(ce->ctr.bytes_read + ce->ctr.bytes_written + 8 * atomics_of(&ce->ctr), n));
		}
	}
}

/* The off cell of the same transport, workload and distribution (ratios are taken to it). */
static const cell *
off_cell_of(const cell *ce)
{
	int			i;

	for (i = 0; i < ncells; i++)
	{
		const cell *o = &cells[i];

		if (o->done && o->policy == DM_CACHE_OFF && o->transport == ce->transport &&
			o->wl == ce->wl && o->dist == ce->dist && o->offload == ce->offload)
			return o;
	}
	return NULL;
}

static void
fmt_ratio(char *buf, size_t n, double a, double b, const char *fmt)
{
	if (b > 0)
		snprintf(buf, n, fmt, a / b);
	else
		snprintf(buf, n, "—");
}

static void
fmt_hit(char *buf, size_t n, double r)
{
	if (r < 0)
		snprintf(buf, n, "—");
	else
		snprintf(buf, n, "%.3f", r);
}

/*
 * Per (transport, workload): the policies side by side, with ratios to the
 * off cell of the same run, and DEX's Table 2 rows for c (RO) and a (WI).
 */
static void
print_cache_summary(FILE *f)
{
	int			i,
				j;

	for (i = 0; i < ncells; i++)
	{
		const cell *first = &cells[i];
		int			seen = 0;
		size_t		p;

		for (j = 0; j < i; j++)
			if (cells[j].transport == first->transport && cells[j].wl == first->wl)
				seen = 1;
		if (seen)
			continue;
		fprintf(f, "\n**%s — %s** (%s, %d clients, %" PRIu64 " keys loaded per cell):\n\n",
				first->wl->name, dex_name(first->wl->id), transport_names[first->transport],
				nclients, n_entries);
		fprintf(f, "| dist | policy | cache | frames | ops/s | ops/s ÷ off | reads/op | reads ÷ off | "
				"B/op (read + written) | B ÷ off | atomics/op | hit ratio | leaf hit ratio |\n");
		fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
		for (j = i; j < ncells; j++)
		{
			const cell *ce = &cells[j];
			const cell *off;
			char		pc[32] = "—",
						fr[32] = "—",
						r1[32],
						r2[32],
						r3[32],
						h[32],
						lh[32];
			uint64_t	n = ce->ops;
			double		bytes;

			if (ce->transport != first->transport || ce->wl != first->wl)
				continue;
			if (!ce->done)
			{
				fprintf(f, "| %s | %s | | | FAILED | | | | | | | | |\n", dist_names[ce->dist],
						policy_names[ce->policy]);
				continue;
			}
			off = off_cell_of(ce);
			bytes = per(ce->ctr.bytes_read + ce->ctr.bytes_written, n);
			if (ce->policy != DM_CACHE_OFF)
			{
				fmt_pct(pc, sizeof(pc), ce->pct);
				snprintf(fr, sizeof(fr), "%u", ce->nframes);
			}
			if (off)
			{
				fmt_ratio(r1, sizeof(r1), ce->ops_per_s, off->ops_per_s, "%.2f");
				fmt_ratio(r2, sizeof(r2), per(ce->ctr.ops[DM_OP_READ], n),
						  per(off->ctr.ops[DM_OP_READ], off->ops), "%.3f");
				fmt_ratio(r3, sizeof(r3), bytes,
						  per(off->ctr.bytes_read + off->ctr.bytes_written, off->ops), "%.3f");
			}
			else
			{
				snprintf(r1, sizeof(r1), "—");
				snprintf(r2, sizeof(r2), "—");
				snprintf(r3, sizeof(r3), "—");
			}
			fmt_hit(h, sizeof(h), ce->policy == DM_CACHE_OFF ? -1 : hit_ratio(&ce->cs, -1));
			fmt_hit(lh, sizeof(lh), ce->policy == DM_CACHE_OFF ? -1 : hit_ratio(&ce->cs, 0));
			fprintf(f, "| %s | %s%s%s | %s | %s | %.0f | %s | %.3f | %s | %.0f | %s | %.3f | %s | %s |\n",
					dist_names[ce->dist], ce->policy == DM_CACHE_DEX ? "**dex**" : policy_names[ce->policy],
					noffload_modes > 1 ? " · offload " : "", noffload_modes > 1 ? dm_offload_mode_name(ce->offload) : "",
					pc, fr, ce->ops_per_s, r1, per(ce->ctr.ops[DM_OP_READ], n), r2, bytes, r3,
					per(atomics_of(&ce->ctr), n), h, lh);
		}
		for (p = 0; p < sizeof(dex_table2) / sizeof(dex_table2[0]); p++)
			if (dex_table2[p].workload == first->wl->id)
				fprintf(f, "| zipf | %s (paper, Table 2) | %s | | | | %.2f | | %.1f¹ | | %.2f | | |\n",
						dex_table2[p].name,
						strncmp(dex_table2[p].name, "DEX", 3) == 0 ? "256 MB ≈ 8%" : "",
						dex_table2[p].reads, dex_table2[p].traffic, dex_table2[p].atomics);
	}
	fprintf(f, "\n¹ DEX's \"traffic\" per operation; ours is READ + WRITE payload (atomics move 8 B more each).\n");
}

static void
print_cache_table(FILE *f)
{
	int			i;

	fprintf(f, "| workload | dist | transport | cache | frames | cache MB | ops/s | p50 µs | p99 µs | "
			"round trips/op | reads/op | writes/op | atomics/op | B read/op | B written/op | "
			"cache hits/op | hit ratio | 1st / 2nd half | leaf hit ratio | inner hit ratio | "
			"admissions/op | leaf admissions skipped/op | evictions/op | no frame/op | "
			"frames used at end (inner + leaf) | warm-up | tree MB load → end | checks | CPU used by others |\n");
	fprintf(f, "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
			"---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
	for (i = 0; i < ncells; i++)
	{
		const cell *ce = &cells[i];
		uint64_t	n = ce->ops;
		char		lbl[48],
					p50[32],
					p99[32],
					oth[32] = "?",
					h[32],
					h1[32],
					h2[32],
					lh[32],
					ih[32],
					chk[160],
					tmb[64] = "?",
					wu[64];
		int			cached = ce->policy != DM_CACHE_OFF;
		uint64_t	inner_used = 0;
		int			l;

		if (!ce->done)
		{
			fprintf(f, "| %s | %s | %s | %s | FAILED: %s |||||||||||||||||||||||||\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport],
					cache_label(ce, lbl, sizeof(lbl)), ce->note);
			continue;
		}
		fmt_us(p50, sizeof(p50), ce->p50_ns);
		fmt_us(p99, sizeof(p99), ce->p99_ns);
		if (ce->others_cpu >= 0)
			snprintf(oth, sizeof(oth), "%.0f%%", 100 * ce->others_cpu);
		snprintf(wu, sizeof(wu), "%.1f s%s, %.2fM ops", ce->warm_s,
				 cached && !ce->warm_steady ? " (max)" : "", (double) ce->warm_ops / 1e6);
		fmt_hit(h, sizeof(h), cached ? hit_ratio(&ce->cs, -1) : -1);
		fmt_hit(h1, sizeof(h1), cached ? ce->hit_half[0] : -1);
		fmt_hit(h2, sizeof(h2), cached ? ce->hit_half[1] : -1);
		fmt_hit(lh, sizeof(lh), cached ? hit_ratio(&ce->cs, 0) : -1);
		fmt_hit(ih, sizeof(ih), cached ? hit_ratio(&ce->cs, -2) : -1);
		for (l = 1; l < DM_CACHE_LEVELS; l++)
			inner_used += ce->cs_end.frames_used[l];
		if (ce->ei.verified > 0)
			snprintf(chk, sizeof(chk), "tree ok%s", "");
		else if (ce->ei.verified < 0)
			snprintf(chk, sizeof(chk), "**tree FAILED**");
		else
			snprintf(chk, sizeof(chk), "tree not verified");
		if (cached && ce->cache_verified > 0)
			snprintf(chk + strlen(chk), sizeof(chk) - strlen(chk), ", cache ok (%" PRIu64 " frames)",
					 ce->cache_checked);
		else if (cached && ce->cache_verified < 0)
			snprintf(chk + strlen(chk), sizeof(chk) - strlen(chk), ", **cache FAILED**");
		if (ce->li.have_stats && ce->ei.have_stats)
			snprintf(tmb, sizeof(tmb), "%.1f → %.1f", (double) ce->li.st.remote_bytes / 1e6,
					 (double) ce->ei.st.remote_bytes / 1e6);
		if (cached)
			fprintf(f, "| %s | %s | %s | %s | %u | %.1f | %.0f | %s | %s | %.2f | %.3f | %.3f | %.3f | %.0f | %.0f | "
					"%.3f | %s | %s / %s | %s | %s | %.4f | %.4f | %.4f | %.4f | %" PRIu64 " + %" PRIu64 " | %s | %s | %s | %s |\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport],
					cache_label(ce, lbl, sizeof(lbl)), ce->nframes, (double) ce->cache_bytes / 1048576.0,
					ce->ops_per_s, p50, p99, per(ce->ctr.round_trips, n),
					per(ce->ctr.ops[DM_OP_READ], n), per(ce->ctr.ops[DM_OP_WRITE], n),
					per(atomics_of(&ce->ctr), n), per(ce->ctr.bytes_read, n), per(ce->ctr.bytes_written, n),
					per(cache_sum(ce->cs.hits), n), h, h1, h2, lh, ih,
					per(ce->cs.admissions, n), per(ce->cs.admit_skipped, n), per(ce->cs.evictions, n),
					per(ce->cs.no_frame, n), inner_used, ce->cs_end.frames_used[0], wu,
					tmb, chk, oth);
		else
			fprintf(f, "| %s | %s | %s | off | — | — | %.0f | %s | %s | %.2f | %.3f | %.3f | %.3f | %.0f | %.0f | "
					"— | — | — | — | — | — | — | — | — | — | %s | %s | %s | %s |\n",
					ce->wl->name, dist_names[ce->dist], transport_names[ce->transport],
					ce->ops_per_s, p50, p99, per(ce->ctr.round_trips, n),
					per(ce->ctr.ops[DM_OP_READ], n), per(ce->ctr.ops[DM_OP_WRITE], n),
					per(atomics_of(&ce->ctr), n), per(ce->ctr.bytes_read, n), per(ce->ctr.bytes_written, n),
					wu, tmb, chk, oth);
	}
}

static void
print_oracle_table(FILE *f)
{
	int			i,
				j;

	if (noracle == 0)
		return;
	fprintf(f, "\nThe best any cache of that many frames could do for lookups (--oracle: %" PRIu64
			" sampled lookups of the same key generator on an ideal tree of the loaded shape, height %d, %"
			PRIu64 " nodes; the most visited nodes cached), next to what workload c measured:\n\n",
			oracle_samples, oracle_height, oracle_nodes);
	fprintf(f, "| dist | cache | frames | best hit ratio (node visits) | best reads/op | "
			"leaf hit ratio if all inner nodes are cached | measured reads/op (c, dex) | measured hit ratio (c, dex) |\n");
	fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < noracle; i++)
	{
		const oracle_row *o = &oracle_rows[i];
		char		pc[32],
					lh[32],
					mr[32] = "—",
					mh[32] = "—";

		fmt_pct(pc, sizeof(pc), o->pct);
		fmt_hit(lh, sizeof(lh), o->leaf_hit);
		for (j = 0; j < ncells; j++)
		{
			const cell *ce = &cells[j];

			if (ce->done && ce->wl->id == 'c' && ce->dist == o->dist && ce->policy == DM_CACHE_DEX &&
				ce->pct == o->pct && ce->offload == offload_modes[0])
			{
				snprintf(mr, sizeof(mr), "%.3f", per(ce->ctr.ops[DM_OP_READ], ce->ops));
				fmt_hit(mh, sizeof(mh), hit_ratio(&ce->cs, -1));
				break;
			}
		}
		fprintf(f, "| %s | %s | %u | %.3f | %.3f | %s | %s | %s |\n", dist_names[o->dist], pc, o->nframes,
				o->hit, o->reads, lh, mr, mh);
	}
}

void
print_all(FILE *f, const char *notes)
{
	if (cache_mode)
	{
		fprintf(f, "Compute-side node cache: policies side by side (off = no cache; inner = inner nodes only, "
				"Sherman's policy; dex = inner nodes + leaves admitted with probability %.3f, DEX's policy), "
				"cache size as %% of the tree's nodes right after the load:\n",
				leaf_admit / 1000.0);
		print_cache_summary(f);
		print_oracle_table(f);
		fprintf(f, "\nCache cells in detail (counters over the measured window; hit ratio = cache hits / "
				"(hits + misses) of node reads through the cache):\n\n");
		print_cache_table(f);
		fprintf(f, "\n");
	}
	fprintf(f, "Throughput, latency and remote operations per YCSB operation:\n\n");
	print_main_table(f);
	print_paper_table(f);
	fprintf(f, "\nLatency by operation kind:\n\n");
	print_kind_table(f);
	fprintf(f, "\nTree counters (dm_tree_get_counters) over the measured window:\n\n");
	print_tree_table(f);
	if (leaf_format == DM_LEAF_HOPSCOTCH)
	{
		fprintf(f, "\nHopscotch lookups, per lookup (dm_tree_counters hop_*; hotspot buffer of %s keys, "
				"shared by the clients in cache cells, per client otherwise):\n\n",
				hotspot_entries >= 0 ? "--hotspot" : "default");
		print_hop_table(f);
	}
	if (noffload_modes > 1 || offload_modes[0] != DM_OFFLOAD_OFF)
	{
		char		modes[64] = "";

		for (int m = 0; m < noffload_modes; m++)
			snprintf(modes + strlen(modes), sizeof(modes) - strlen(modes), "%s%s", m ? "," : "",
					 dm_offload_mode_name(offload_modes[m]));
		fprintf(f, "\nOffloading (--offload %s; dm_offload.h counters over the measured window):\n\n", modes);
		print_offload_table(f);
	}
	if (noffload_modes > 1)
	{
		fprintf(f, "\nOffload modes side by side (each cell's modes ran one after the other on the same tree "
				"and cache):\n\n");
		print_offload_modes_table(f);
	}
	fprintf(f, "\n%s", notes);
	fflush(f);
}
