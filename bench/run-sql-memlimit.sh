#!/usr/bin/env bash
# run-sql-memlimit.sh — the benchmark a user would run (issue 13): an index
# larger than the PostgreSQL server's memory.  bench/run-sql-bench.sh with
# its memory-limit phase: 50M rows, the server in a memory cgroup of 256 MB
# (shared_buffers 64MB and a node cache of 5% of the dmindex tree inside it;
# the btree, over 1 GB, then reads its leaves from disk), the memnode outside,
# dmindex.offload = auto, shm and tcp; the all-in-memory cells of the same
# data come with it.  Any variable of run-sql-bench.sh overrides these.
# Writes bench/results/sql-memlimit-<date>.md, .csv and .png.  About 20-25 min
# on 2 cores; needs ~12 GB of disk and cgroup v1's memory controller.
#
#   sudo bash bench/run-sql-memlimit.sh
#   ROWS=2000000 MEMLIMIT=64M LIMIT_SHARED_BUFFERS=16MB DURATION=5 sudo bash bench/run-sql-memlimit.sh   # smoke run
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ROWS=${ROWS:-50000000} MEMLIMIT=${MEMLIMIT:-256M} CACHES=${CACHES:-5} OFFLOAD=${OFFLOAD:-auto}
export OUT=${OUT:-$ROOT/bench/results/sql-memlimit-$(date +%F).md}
exec bash "$ROOT/bench/run-sql-bench.sh"
