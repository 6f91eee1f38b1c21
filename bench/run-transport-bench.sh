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
#   3. the ucx transport (--transport ucx --pin 0 --duration 1), once with
#      UCX_TLS=tcp (get and atomics emulated by the memnode's worker) and
#      once with UCX_TLS=posix (one-sided shared memory: the memnode's region
#      comes from ucp_mem_map ALLOCATE), each next to ucx_perftest's median
#      latency for the same operation on the same UCX transport (ucp_get
#      8 B and 1 KiB, ucp_put_bw 8 B, ucp_cswap 8 B; not pinned: both sides
#      busy-poll, so on one CPU over tcp each op would wait for a time slice).
#      Also ucp_put_lat (a put the peer polls for and answers with a put:
#      half a round trip through memory, what a remote completion costs at
#      the least) and ucp_am_lat (an active message each way, UCX's own
#      RPC-like baseline for the RPC ping row).
#      ucx_perftest runs with -O 1 (one operation outstanding: each waits
#      for the one before to complete, as a dm_read or dm_cas does; without
#      it a get over tcp is pipelined and its "latency" is a queue's);
#      its "typical" latency is the median of per-iteration times taken with
#      UCX's cheap clock, so the posix run is repeated with --clock-every 256
#      (one clock_gettime, ~20-90 ns on the VMs here, per 256 ops instead of
#      per op) to be comparable: once as dmindex runs (ops on UCX's mapping
#      of the region, ucp_rkey_ptr) and once with DM_UCX_NO_RKEY_PTR=1
#      (UCX's get, put and atomics, what ucx_perftest measures), and once
#      more with DM_MEMCOPY=word (the 8-byte copy loop instead of the
#      16-byte one, src/dm/dm_memops_wide.c: what READ 1 KiB gained).
# Extra arguments are passed to the dmbench_transport runs (e.g. --quick)
# and are recorded.  Takes about 5 minutes on 2 cores.
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
t3=$(mktemp)
t4=$(mktemp)
t5=$(mktemp)
t6=$(mktemp)
t7=$(mktemp)
trap 'rm -f "$t1" "$t2" "$t3" "$t4" "$t5" "$t6" "$t7"' EXIT

# ucx_perftest's median ("typical") latency in µs for test $2, size $3, UCX_TLS=$1
perftest_lat() {
	local port=$((20000 + RANDOM % 20000)) out
	UCX_TLS=$1 timeout 60 ucx_perftest -p "$port" >/dev/null 2>&1 &
	sleep 2
	out=$(UCX_TLS=$1 timeout 60 ucx_perftest 127.0.0.1 -p "$port" -t "$2" -s "$3" -n 20000 -O 1 2>/dev/null |
		awk '/^Final:/ { print $3 }')
	wait || true
	echo "${out:-failed}"
}

model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n1)
load=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')

# Progress (stderr) and the tables (stdout) go to the terminal; --out puts
# each table in a temporary file for the results file.
echo "== run 1: default settings" >&2
build/bench/dmbench_transport --out "$t1" "$@"
echo "== run 2: all processes on CPU 0" >&2
build/bench/dmbench_transport --pin 0 --duration 1 --out "$t2" "$@"

echo "== run 3: ucx over UCX_TLS=tcp" >&2
UCX_TLS=tcp build/bench/dmbench_transport --transport ucx --pin 0 --duration 1 --out "$t3" "$@"
echo "== run 4: ucx over UCX_TLS=posix" >&2
UCX_TLS=posix build/bench/dmbench_transport --transport ucx --pin 0 --duration 1 --out "$t4" "$@"
echo "== run 5: ucx over UCX_TLS=posix, one clock read per 256 ops" >&2
UCX_TLS=posix build/bench/dmbench_transport --transport ucx --pin 0 --duration 1 --clock-every 256 --out "$t5" "$@"
echo "== run 6: the same through UCX's get, put and atomics (DM_UCX_NO_RKEY_PTR=1)" >&2
DM_UCX_NO_RKEY_PTR=1 UCX_TLS=posix build/bench/dmbench_transport --transport ucx --pin 0 --duration 1 --clock-every 256 --out "$t6" "$@"
echo "== run 7: ucx over UCX_TLS=posix, one clock read per 256 ops, the 8-byte copy loop (DM_MEMCOPY=word)" >&2
DM_MEMCOPY=word UCX_TLS=posix build/bench/dmbench_transport --transport ucx --pin 0 --duration 1 --clock-every 256 --out "$t7" "$@"
echo "== ucx_perftest" >&2
perf=""
for tls in tcp posix; do
	perf+="| ${tls} | $(perftest_lat "$tls" ucp_get 8) | $(perftest_lat "$tls" ucp_get 1024) | $(perftest_lat "$tls" ucp_put_bw 8) | $(perftest_lat "$tls" ucp_put_lat 8) | $(perftest_lat "$tls" ucp_cswap 8) | $(perftest_lat "$tls" ucp_am_lat 8) |"$'\n'
done

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
	echo
	echo "## ucx transport, UCX_TLS=tcp (all processes on CPU 0)"
	echo
	echo "\`UCX_TLS=tcp build/bench/dmbench_transport --transport ucx --pin 0 --duration 1 --out FILE${args}\`"
	echo
	cat "$t3"
	echo
	echo "## ucx transport, UCX_TLS=posix (all processes on CPU 0)"
	echo
	echo "\`UCX_TLS=posix build/bench/dmbench_transport --transport ucx --pin 0 --duration 1 --out FILE${args}\`"
	echo
	cat "$t4"
	echo
	echo "## ucx transport, UCX_TLS=posix, one clock read per 256 ops (all processes on CPU 0)"
	echo
	echo "\`UCX_TLS=posix build/bench/dmbench_transport --transport ucx --pin 0 --duration 1 --clock-every 256 --out FILE${args}\`"
	echo
	cat "$t5"
	echo
	echo "## the same through UCX's get, put and atomics (not on UCX's mapping of the region)"
	echo
	echo "\`DM_UCX_NO_RKEY_PTR=1 UCX_TLS=posix build/bench/dmbench_transport --transport ucx --pin 0 --duration 1 --clock-every 256 --out FILE${args}\`"
	echo
	cat "$t6"
	echo
	echo "## ucx transport, UCX_TLS=posix, one clock read per 256 ops, the 8-byte copy loop"
	echo
	echo "\`DM_MEMCOPY=word UCX_TLS=posix build/bench/dmbench_transport --transport ucx --pin 0 --duration 1 --clock-every 256 --out FILE${args}\`"
	echo
	cat "$t7"
	echo
	echo "## ucx_perftest, same operations and transports (median µs, not pinned)"
	echo
	echo "\`UCX_TLS=TLS ucx_perftest 127.0.0.1 -t TEST -s SIZE -n 20000 -O 1\` against \`ucx_perftest\` (server); \"typical\" latency"
	echo "(the median of per-iteration times read from the TSC; one operation outstanding, so each waits for the one before)."
	echo "Compare with the ucx rows above (READ 8 B, READ 1 KiB, WRITE 8 B, CAS 8 B, RPC ping); for posix, with the --clock-every 256 rows (runs 5-7)."
	echo "ucp_put_bw completes a put locally (over posix the store is done, as on dmindex's mapping; through UCX's ops dmindex's WRITE also waits for a flush);"
	echo "ucp_put_lat is half a round trip of puts answered by the peer; ucp_am_lat half a round trip of active messages (compare with RPC ping / 2)."
	echo
	echo "| UCX_TLS | ucp_get 8 B | ucp_get 1 KiB | ucp_put_bw 8 B | ucp_put_lat 8 B | ucp_cswap 8 B | ucp_am_lat 8 B |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	printf '%s' "$perf"
} >"$out"
echo "wrote $out"
