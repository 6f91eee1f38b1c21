#!/usr/bin/env bash
# run-dmbench.sh — build and run build/bench/dmbench (YCSB workloads on the
# remote B-link tree) in the recorded configuration, and keep the result with
# the facts needed to compare runs later:
#   bench/results/dmbench-YYYY-MM-DD.md   (-2, -3, ... if that exists)
#
# Default configuration (the first table the issue asks for): one memnode
# started by dmbench on 127.0.0.1 with --shm and a 2 GiB region, 10 million
# keys bulk-loaded, 2 client processes, workloads load,a,b,c,d,e with uniform
# and zipfian keys, on the shm and then the tcp transport (a fresh tree for
# each), 30 s measured per cell: 20 cells, about 12 minutes on 2 cores.
#
# Arguments are passed to dmbench after the defaults (later options win, e.g.
# --duration 10 or --transport shm) and recorded in the command line.
# DMBENCH_QUICK=1 runs the --quick smoke configuration instead.
# DMBENCH_OUT=FILE writes the results there instead of the dated name.
# Next to the markdown go the main table as CSV (.csv; with --offload also
# -offload.csv) and a chart of its throughput (.png; bench/plot-bars.sh).
# DMBENCH_OFFLOAD=off|always|auto runs the offload cells (issue 13, DEX §6
# and its Figure 12 ablation): 2M keys, DEX's cache at 1% and 8%, workloads c,
# b, a and e, uniform and zipf keys, tcp and shm, with that --offload mode
# (~8 min).  DMBENCH_OFFLOAD=off,always,auto runs the three modes in each
# cell one after the other on the same tree and cache (~25 min), and the
# results end with them side by side (auto against the better of off and
# always): on a shared machine the load swings over minutes, so modes run
# in separate runs (bench/compare-offload.sh puts those side by side) are
# not comparable to 5%.
#
# These cells run without the compute-side node cache; bench/run-cache-bench.sh
# runs dmbench's cache cells (--cache-policy off,inner,dex; DEX's workloads at
# several cache sizes) into bench/results/cache-YYYY-MM-DD.md.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)

# Build if needed (make only rebuilds what changed).
make -s standalone >/dev/null

if [ "${DMBENCH_QUICK:-0}" = 1 ]; then
	defaults=(--quick --transport shm,tcp)
elif [ -n "${DMBENCH_OFFLOAD:-}" ]; then
	defaults=(--entries 2M --region-size 1G --clients 2 --transport tcp,shm --workloads c,b,a,e --dist both
		--cache-policy dex --cache-pct 1,8 --zipf-items keys --duration 10 --offload "$DMBENCH_OFFLOAD")
else
	defaults=(--entries 10M --region-size 2G --clients 2 --transport shm,tcp
		--workloads load,a,b,c,d,e --dist both --duration 30)
fi

day=$(date +%Y-%m-%d)
mkdir -p bench/results
out="bench/results/dmbench-${day}.md"
n=2
while [ -e "$out" ]; do
	out="bench/results/dmbench-${day}-${n}.md"
	n=$((n + 1))
done
# DMBENCH_OUT names the results file instead (e.g. one per offload mode)
out=${DMBENCH_OUT:-$out}

table=$(mktemp)
loadlog=$(mktemp)
timesf=$(mktemp)
sampler=
cleanup() {
	if [ -n "$sampler" ]; then
		kill "$sampler" 2>/dev/null || true
		wait "$sampler" 2>/dev/null || true
	fi
	rm -f "$table" "$loadlog" "$timesf" "$timesf.0" "$timesf.1"
}
trap cleanup EXIT

# What else was using the CPUs when we started (other test runs share this
# machine): processes above 5% CPU over one second (top's second sample).
busy_before=$(top -b -n 2 -d 1 -w 200 2>/dev/null | awk '/^top -/ { n++ } n == 2 && $1 ~ /^[0-9]+$/ && $9 + 0 > 5 { printf "%s%% %s (pid %s); ", $9, $12, $1 }')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# Busy CPU time of the whole machine (clock ticks) from /proc/stat, and the
# CPU time of this shell's finished children (dmbench, its clients and the
# memnode it started, all reaped) in ticks, from bash's `times`.
machine_busy_ticks() {
	awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}
# (`times` must run in this shell, not in a $(...) subshell, hence the file.)
children_ticks() {
	times >"$timesf"
	awk -v hz="$(getconf CLK_TCK)" 'NR == 2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%.0f\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * hz }' "$timesf"
}

# Sample the 1-minute load average every 10 s during the run.
(
	while :; do
		cut -d' ' -f1 /proc/loadavg >>"$loadlog"
		sleep 10
	done
) &
sampler=$!

cmd=(build/bench/dmbench --out "$table" "${defaults[@]}" "$@")
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
t0=$(date +%s)
busy0=$(machine_busy_ticks)
children_ticks >"$timesf.0"
ours0=$(cat "$timesf.0")
status=0
# Progress (stderr) and the tables (stdout) go to the terminal; --out puts
# the tables in $table for the results file.
"${cmd[@]}" || status=$?
t1=$(date +%s)
busy1=$(machine_busy_ticks)
children_ticks >"$timesf.1"
ours1=$(cat "$timesf.1")
hz=$(getconf CLK_TCK)
others=$(awk -v b=$((busy1 - busy0)) -v o=$((ours1 - ours0)) -v hz="$hz" -v t=$((t1 - t0)) -v n="$(nproc)" 'BEGIN {
	if (t <= 0) t = 1
	x = (b - o) / hz; if (x < 0) x = 0
	printf "machine busy %.0f CPU-s, dmbench and its processes %.0f CPU-s, everything else %.0f CPU-s = %.0f%% of the %d CPUs over %d s", b / hz, o / hz, x, 100 * x / (t * n), n, t }')

kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
sampler=

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
load_stats=$(sort -n "$loadlog" | awk '{ a[NR] = $1; s += $1 } END { if (NR) printf "min %.2f, mean %.2f, max %.2f over %d samples", a[1], s / NR, a[NR], NR }')
model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n1)
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)

{
	echo "# dmbench (YCSB on the remote B-link tree) — ${day}"
	echo
	echo "- command: \`bench/run-dmbench.sh${*:+ $*}\`, which ran \`${cmd[*]/#$table/TMPFILE}\` in ${root}"
	echo "- date: ${started} (took $((t1 - t0)) s; exit status ${status})"
	echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)$(git status --porcelain -- src/dm memnode bench 2>/dev/null | grep -q . && echo ' (+ uncommitted changes in src/dm, memnode or bench)')"
	echo "- machine: $(nproc) CPUs, ${model:-unknown CPU}, ${mem} RAM"
	echo "- kernel: $(uname -srm)"
	echo "- load average before: ${load_before}; after: ${load_after}; 1-min load during the run: ${load_stats}"
	echo "- other processes above 5% CPU at the start: ${busy_before:-none}"
	echo "- CPU time during the run: ${others} (other work, e.g. concurrent test runs, competed with the benchmark for that share)"
	echo
	if [ -s "$table" ]; then
		cat "$table"
	else
		echo "dmbench produced no table (exit status ${status}); see its stderr."
	fi
} >"$out"
echo "wrote $out"

# The numbers again as CSV next to the markdown (the main table; with
# --offload also the offload table), and a chart of the main table's
# throughput: one group of bars per workload and key distribution, one bar
# per transport (and cache size, in cache cells).
csv=${out%.md}.csv
if [ -s "$table" ]; then
	awk -v header='^[|] workload [|].*[|] ops/s [|]' -f bench/md-table-csv.awk "$table" >"$csv"
	if grep -q 'offloads/op' "$table"; then
		awk -v header='offloads/op' -f bench/md-table-csv.awk "$table" >"${out%.md}-offload.csv"
	fi
	series=transport
	head -n1 "$csv" | tr ',' '\n' | grep -qx cache && series=transport,cache
	wide=$(mktemp)
	awk -F, -v cat=workload,dist -v ser="$series" -v val=ops/s -f bench/csv-wide.awk "$csv" >"$wide" &&
		bash bench/plot-bars.sh "$wide" "${out%.md}.png" "dmbench throughput (${day}${DMBENCH_OFFLOAD:+, offload $DMBENCH_OFFLOAD})" "ops/s (all clients)"
	rm -f "$wide"
	{
		echo
		echo "Data: [$(basename "$csv")]($(basename "$csv"))$([ -e "${out%.md}-offload.csv" ] && echo ", [$(basename "${out%.md}-offload.csv")]($(basename "${out%.md}-offload.csv"))"); chart of the throughput: [$(basename "${out%.md}.png")]($(basename "${out%.md}.png"))."
	} >>"$out"
fi
exit "$status"
