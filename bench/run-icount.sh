#!/usr/bin/env bash
# run-icount.sh — instructions per operation of the tree's hot paths, counted
# by valgrind's callgrind on build/bench/dmicount (bench/dmicount.c), for
# comparing two builds where wall-clock runs drift too much (a shared VM:
# +-30%).  For each of lookup, insert and scan it runs dmicount with N and
# with 2N operations, counts only the function doing them (run_ops), and
# prints (Ir(2N) - Ir(N)) / N: the cost of one operation without the fixed
# costs (bulk load, the first reads).  Deterministic: two runs of one build
# give the same counts to a few instructions.
#
#   bench/run-icount.sh [REPO...]      default: this repository
#
# Each REPO must have been built (make standalone: its build/bench/dmicount
# and build/dmindex-memnode); B=DIR takes another build directory.
# LOOKUPS, INSERTS, SCAN_ENTRIES set N (defaults 20000, 20000, 100000).
set -euo pipefail
B=${B:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() {	# REPO OP N -> Ir inside run_ops
	local f=$out/cg.$2.$3
	(cd "$1" && DM_MEMNODE=$B/dmindex-memnode valgrind --tool=callgrind --toggle-collect=run_ops \
		--callgrind-out-file="$f" "$B/bench/dmicount" "$2" "$3" >/dev/null 2>"$out/err") ||
		{ tail -5 "$out/err" >&2; exit 1; }
	awk '/^(summary|totals):/ {print $2; exit}' "$f"
}
[ $# -gt 0 ] || set -- "$(cd "$(dirname "$0")/.." && pwd)"
for repo in "$@"; do
	for spec in lookup:${LOOKUPS:-20000} insert:${INSERTS:-20000} scan:${SCAN_ENTRIES:-100000}; do
		op=${spec%%:*} n=${spec##*:}
		a=$(count "$repo" "$op" "$n")
		b=$(count "$repo" "$op" $((2 * n)))
		printf '%s %-6s N=%-6s Ir(N)=%-10s Ir(2N)=%-10s per op %s\n' "$repo" "$op" "$n" "$a" "$b" \
			"$(echo "scale=1; ($b - $a) / $n" | bc)"
	done
done
