#!/usr/bin/env bash
# run-cache-bench.sh — build and run build/bench/dmbench's cache cells (the
# compute-side node cache, src/dm/dm_cache.h, DEX VLDB'24 §5 and §8) in the
# recorded configuration, and keep everything in one results file:
#   bench/results/cache-YYYY-MM-DD.md   (-2, -3, ... if that exists)
#
# Sections (each one dmbench invocation; its exact command line is recorded
# above its tables, with the CPU share other processes took meanwhile):
#   main      DEX's five workloads (c read-only, b read-intensive 95/5,
#             a write-intensive 50/50, i insert-intensive 50/50, e
#             scan-intensive) x {uniform, zipf 0.99} x cache {1, 8, 100}% of
#             the tree x policy {off, inner, dex}, 2M keys, 2 clients, shm,
#             6 s per cell, each cell on a freshly loaded tree, with the
#             ideal-cache bound (--oracle): ~15 minutes on 2 cores
#   tcp       the key cell (c, zipf, 8%) over tcp, off / inner / dex
#   leaf      the key cell (shm) with leaf admission 1.0, 0.3 and 0.03
#   cooling   the key cell (shm) with a cooling map of 30% of the frames
#   zipfkeys  c at 8% and 32% with zipf ranks over the keys (DEX's own
#             generator) instead of YCSB's 10^10; 32% = DEX's 256 MB cache
#             over the quarter of the keys one of its 4 compute servers owns
#
# CACHEBENCH_SECTIONS="main tcp" runs only those; CACHEBENCH_QUICK=1 runs
# every section at smoke-test size (20000 keys, 1 s cells, 1 s warm-up);
# CACHEBENCH_OUT=FILE writes the results there instead;
# CACHEBENCH_APPEND=FILE appends the sections (each with its command, date
# and CPU share) to an existing results file, e.g. a repeat of a section.
# The binary is copied once at the start and every section runs that copy,
# so a `make` by someone else in the middle of the run cannot change it.
# Arguments are appended to every dmbench command (later options win, e.g.
# --duration 3) and recorded with it.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)

# Build if needed (make only rebuilds what changed).
make -s standalone >/dev/null

quick=${CACHEBENCH_QUICK:-0}
sections=${CACHEBENCH_SECTIONS:-main tcp leaf cooling zipfkeys}

if [ "$quick" = 1 ]; then
	base=(--entries 20000 --region-size 256M --clients 2 --duration 1 --warmup 1 --warmup-max 3)
else
	base=(--entries 2M --region-size 2G --clients 2 --duration 6)
fi
key=(--workloads c --dist zipf --cache-pct 8)

section_args() {
	case "$1" in
	main) echo "--transport shm --cache-policy off,inner,dex --cache-pct 1,8,100 --workloads c,b,a,i,e --dist both --oracle" ;;
	tcp) echo "--transport tcp --cache-policy off,inner,dex ${key[*]} --duration 8 --warmup 5 --warmup-max 40" ;;
	leaf) echo "--transport shm --cache-policy off,dex ${key[*]} --leaf-admit 1000 |--transport shm --cache-policy dex ${key[*]} --leaf-admit 300 |--transport shm --cache-policy dex ${key[*]} --leaf-admit 30" ;;
	cooling) echo "--transport shm --cache-policy dex ${key[*]} --cooling-pct 30" ;;
	zipfkeys) echo "--transport shm --cache-policy off,inner,dex --workloads c --dist zipf --cache-pct 8,32 --zipf-items keys --oracle |--transport shm --cache-policy dex --workloads c --dist zipf --cache-pct 32 --oracle" ;;
	big) echo "--transport shm --cache-policy off,dex --workloads c --dist zipf --cache-pct 8 --entries 10M --region-size 4G --zipf-items keys --oracle |--transport shm --cache-policy dex --workloads c --dist zipf --cache-pct 8 --entries 10M --region-size 4G --oracle" ;;
	*) return 1 ;;
	esac
}

section_title() {
	case "$1" in
	main) echo "DEX's workloads, every policy and cache size (shm)" ;;
	tcp) echo "The key cell over tcp: c (read-only), zipf 0.99, cache 8%" ;;
	leaf) echo "The key cell with other leaf admission probabilities (DEX's default 0.1 is in main)" ;;
	cooling) echo "The key cell with a larger cooling map (30% of the frames; default 10%, as DEX)" ;;
	zipfkeys) echo "DEX's key distribution (zipf ranks over the keys) and DEX's per-server cache share (32%)" ;;
	big) echo "The key cell on a 5x larger tree (10M keys), DEX's and YCSB's zipf (not in the default sections)" ;;
	esac
}

day=$(date +%Y-%m-%d)
mkdir -p bench/results
out="bench/results/cache-${day}.md"
n=2
while [ -e "$out" ]; do
	out="bench/results/cache-${day}-${n}.md"
	n=$((n + 1))
done
# CACHEBENCH_OUT=FILE writes there instead (e.g. for a smoke run)
out=${CACHEBENCH_OUT:-$out}
append=${CACHEBENCH_APPEND:-}
if [ -n "$append" ] && [ ! -f "$append" ]; then
	echo "run-cache-bench.sh: CACHEBENCH_APPEND=$append does not exist" >&2
	exit 2
fi

table=$(mktemp)
body=$(mktemp)
timesf=$(mktemp)
bindir=$(mktemp -d)
cleanup() {
	rm -f "$table" "$body" "$timesf" "$timesf.0" "$timesf.1"
	rm -rf "$bindir"
}
trap cleanup EXIT

# A private copy of the binary (same name in the recorded commands), and the
# memnode next to it where dmbench looks for it.
mkdir -p "$bindir/build/bench"
cp build/bench/dmbench "$bindir/build/bench/dmbench"
cp build/dmindex-memnode "$bindir/build/dmindex-memnode"
export DM_MEMNODE="$bindir/build/dmindex-memnode"
binsum=$(sha256sum build/bench/dmbench | cut -c1-12)

busy_before=$(top -b -n 2 -d 1 -w 200 2>/dev/null | awk '/^top -/ { n++ } n == 2 && $1 ~ /^[0-9]+$/ && $9 + 0 > 5 { printf "%s%% %s (pid %s); ", $9, $12, $1 }')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# Busy CPU ticks of the machine, and CPU ticks of this shell's reaped children.
machine_busy_ticks() {
	awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}
children_ticks() {
	times >"$timesf"
	awk -v hz="$(getconf CLK_TCK)" 'NR == 2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%.0f\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * hz }' "$timesf"
}
hz=$(getconf CLK_TCK)

started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
t_all=$(date +%s)
status=0
for sec in $sections; do
	plan=$(section_args "$sec") || {
		echo "run-cache-bench.sh: unknown section $sec" >&2
		exit 2
	}
	{
		echo
		echo "## ${sec}: $(section_title "$sec")"
	} >>"$body"
	IFS='|' read -r -a runs <<<"$plan"
	for r in "${runs[@]}"; do
		read -r -a extra <<<"$r"
		cmd=(build/bench/dmbench --out "$table" "${base[@]}" "${extra[@]}" "$@")
		echo "== ${cmd[*]/#$table/TMPFILE}" >&2
		tstart=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
		t0=$(date +%s)
		busy0=$(machine_busy_ticks)
		children_ticks >"$timesf.0"
		rc=0
		: >"$table"
		"$bindir/${cmd[0]}" "${cmd[@]:1}" >/dev/null || rc=$?
		t1=$(date +%s)
		busy1=$(machine_busy_ticks)
		children_ticks >"$timesf.1"
		others=$(awk -v b=$((busy1 - busy0)) -v o=$(($(cat "$timesf.1") - $(cat "$timesf.0"))) -v hz="$hz" -v t=$((t1 - t0)) -v n="$(nproc)" 'BEGIN {
			if (t <= 0) t = 1
			x = (b - o) / hz; if (x < 0) x = 0
			printf "machine busy %.0f CPU-s, dmbench and its processes %.0f CPU-s, everything else %.0f CPU-s = %.0f%% of the %d CPUs over %d s", b / hz, o / hz, x, 100 * x / (t * n), n, t }')
		[ "$rc" = 0 ] || status=$rc
		{
			echo
			echo "### \`${cmd[*]/#$table/TMPFILE}\`"
			echo
			echo "- started ${tstart}, took $((t1 - t0)) s, exit status ${rc}; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
			echo "- CPU time: ${others}"
			echo
			if [ -s "$table" ]; then
				cat "$table"
			else
				echo "dmbench produced no table (exit status ${rc}); see its stderr."
			fi
		} >>"$body"
	done
done
t_end=$(date +%s)

model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n1)
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
commit="$(git rev-parse --short HEAD 2>/dev/null || echo none)$(git status --porcelain -- src/dm memnode bench 2>/dev/null | grep -q . && echo ' (+ uncommitted changes in src/dm, memnode or bench)')"
if [ -n "$append" ]; then
	{
		echo
		echo "## Appended by \`bench/run-cache-bench.sh${*:+ $*}\` with CACHEBENCH_SECTIONS=\"${sections}\" (${started}, took $((t_end - t_all)) s, exit status ${status}; commit ${commit}; dmbench sha256 ${binsum}; load average before ${load_before}, after $(cut -d' ' -f1-3 /proc/loadavg); other processes above 5% CPU at the start: ${busy_before:-none})"
		sed 's/^## /### /; s/^### `/#### `/' "$body"
	} >>"$append"
	echo "appended to $append"
	exit "$status"
fi
{
	echo "# dmbench cache cells (compute-side node cache: off / inner / dex) — ${day}"
	echo
	echo "- command: \`bench/run-cache-bench.sh${*:+ $*}\`${CACHEBENCH_SECTIONS:+ with CACHEBENCH_SECTIONS=\"${CACHEBENCH_SECTIONS}\"}${CACHEBENCH_QUICK:+ with CACHEBENCH_QUICK=${CACHEBENCH_QUICK}} in ${root}; it ran the dmbench commands given above each section's tables (TMPFILE = the table file it reads back)"
	echo "- date: ${started} (took $((t_end - t_all)) s; exit status ${status})"
	echo "- commit: ${commit}; dmbench sha256 ${binsum} (copied at the start; every section ran that copy)"
	echo "- machine: $(nproc) CPUs, ${model:-unknown CPU}, ${mem} RAM"
	echo "- kernel: $(uname -srm)"
	echo "- load average before: ${load_before}; after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- other processes above 5% CPU at the start: ${busy_before:-none}"
	echo "- sections: ${sections}"
	cat "$body"
} >"$out"
echo "wrote $out"
exit "$status"
