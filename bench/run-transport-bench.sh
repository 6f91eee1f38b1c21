#!/usr/bin/env bash
# run-transport-bench.sh — build and run build/bench/dmbench_transport and
# record the result, with the facts needed to compare runs later, in
#   bench/results/transport-YYYY-MM-DD.md
#
# Two runs, each starting (and stopping) its own memnode on 127.0.0.1:
#   1. the default settings (3 s per cell, processes placed by the scheduler);
#   2. --pin 0 --duration 1: every process on CPU 0.  On a VM, a wakeup on
#      another, idle CPU can cost ~50 µs, so one-client tcp numbers of run 1
#      swing between ~6 and ~60 µs with the scheduler's placement; run 2
#      shows the protocol's own cost.
# Extra arguments are passed to both runs (e.g. --quick) and are recorded.
# Takes about 90 s on 2 cores.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)

# Build what this needs (make only rebuilds what changed); not all of
# "make standalone", so that a test that does not compile cannot stop it.
make -s build/dmindex-memnode build/bench/dmbench_transport >/dev/null

day=$(date +%Y-%m-%d)
out="bench/results/transport-${day}.md"
mkdir -p bench/results
t1=$(mktemp)
t2=$(mktemp)
trap 'rm -f "$t1" "$t2"' EXIT

model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n1)
load=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')

# Progress (stderr) and the tables (stdout) go to the terminal; --out puts
# each table in a temporary file for the results file.
echo "== run 1: default settings" >&2
build/bench/dmbench_transport --out "$t1" "$@"
echo "== run 2: all processes on CPU 0" >&2
build/bench/dmbench_transport --pin 0 --duration 1 --out "$t2" "$@"

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
args=${*:+ $*}
{
	echo "# dmbench_transport — ${day}"
	echo
	echo "- command: \`bench/run-transport-bench.sh${args}\` (in ${root})"
	echo "- date: ${started}"
	echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo 'none yet')$([ -z "$(git status --porcelain -- src/dm memnode test/lib bench 2>/dev/null)" ] || echo ' + uncommitted changes in src/dm, memnode, test/lib or bench')"
	echo "- machine: $(nproc) CPUs, ${model:-unknown CPU}"
	echo "- kernel: $(uname -srm)"
	echo "- load average before / after the run: ${load} / ${load_after} (anything else running on the machine disturbs the numbers)"
	echo
	echo "## Default settings"
	echo
	echo "\`build/bench/dmbench_transport --out FILE${args}\`"
	echo
	cat "$t1"
	echo
	echo "## All processes on CPU 0"
	echo
	echo "\`build/bench/dmbench_transport --pin 0 --duration 1 --out FILE${args}\`"
	echo
	cat "$t2"
} >"$out"
echo "wrote $out"
