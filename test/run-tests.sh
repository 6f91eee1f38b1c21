#!/usr/bin/env bash
# run-tests.sh — the README's second command: runs every test of dmindex and
# ends with one line "N passed, N failed".
#   1. C tests (test/unit, test/integ): protocol, region, transports over tcp
#      and shm, robustness, failure; each assertion counts.
#      The same again built with -fsanitize=address,undefined (build/asan),
#      shorter (test/README: what CI shortens, and the long forms).
#   2. pg_regress (sql/, expected/): a temporary PostgreSQL instance with a
#      memnode; each test file counts.  Run four times: as configured, over
#      the ucx transport (UCX_TLS=posix), with dmindex.offload = always, and
#      with hopscotch leaves (dmindex.default_leaf_format).
#   3. isolation (test/isolation/specs, expected/): pg_isolation_regress runs
#      concurrent sessions in fixed interleavings on an instance configured
#      the same way (REGRESS_*_PORT + 1); each spec counts.
#   4. TAP (test/t/*.pl): pgbench concurrency, crashes, memnode restarts,
#      DROP DATABASE; each assertion counts.  The scan-pin and failover tests
#      (011, 017, 020) run once more with dmindex.offload = always, 011
#      and the standby test 019 with hopscotch leaves, and the workload,
#      crash and standby tests (001, 002, 019) with VAR indexes
#      (DMINDEX_TAP_KEY = text, with the failover test 020, then multi).
#   5. fuzz (test/fuzz): each libFuzzer target for FUZZ_SECONDS (default 12 here)
#      from its seed corpus; each target counts.
# Run as root (it installs missing packages, and runs PostgreSQL and the
# memnode as user postgres).  Exit status 0 iff nothing failed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ "$(id -u)" -ne 0 ]; then
    echo "run-tests.sh installs packages and runs PostgreSQL as user postgres: run it as root (sudo)." >&2
    exit 1
fi
bash test/install-deps.sh || exit 1
. test/common.sh
PGXS_TEST=$("$PG_CONFIG" --pkglibdir)/pgxs/src/test

passed=0
failed=0
# add_summary LABEL FILE WHAT: add FILE's last "LABEL: N passed, N failed"
# line to the totals (no such line: print WHAT, count one failure)
add_summary() {
    local line
    line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed" "$2" | tail -n 1)
    if [ -n "$line" ]; then
        passed=$((passed + $(echo "$line" | sed -E "s/^$1: ([0-9]+) passed.*/\\1/")))
        failed=$((failed + $(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')))
    else
        echo "$3"
        failed=$((failed + 1))
    fi
}

echo "== build"
if ! make -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" >/tmp/dmindex-build.log 2>&1 ||
   ! make -s install PG_CONFIG="$PG_CONFIG" >>/tmp/dmindex-build.log 2>&1; then
    cat /tmp/dmindex-build.log
    echo "build failed"
    echo "0 passed, 1 failed"
    exit 1
fi

echo "== C tests"
# test_tree_model+hop over shm only, as test_tree_model+var: the leaf format
# lives above the transport, test_tree_model runs the same sections over
# tcp, and hopscotch leaves over tcp are in the +hop runs of
# test_tree_concurrency, test_tree_faults, test_tree_cache, test_tree_redo
# (its tcp half took ~65 of its 92 s)
ctest_out=$(mktemp)
C_TEST_SHM_ONLY=${C_TEST_SHM_ONLY-test_tree_model+hop} bash test/run-c-tests.sh 2>&1 | tee "$ctest_out"
add_summary "C tests" "$ctest_out" "C tests printed no summary"
rm -f "$ctest_out"

echo "== C tests again, built with AddressSanitizer and UBSan (TREE_SCALE=${ASAN_TREE_SCALE:-25})"
# the same binaries and memnode in build/asan; a memory error, undefined
# behaviour or a leak (at a test's or the memnode's exit) fails the test;
# the long tree tests at a quarter of their operations, and over shm only
# where the tcp half repeats what the unsanitized run checks and the
# sanitized FIXED8 runs of test_tree_model and test_tree_faults run over tcp:
# the hopscotch and VAR variants of those two (the leaf and key formats live
# above the transport), and test_tree_reclaim (its fault sweep, minutes;
# there late and kill-mid at every 4th step, fail and kill at every step);
# test_tree_faults' torn split (not into a reused node) at half of its
# step x word pairs, rotating; the hopscotch and VAR variants of
# test_tree_concurrency over shm as well (its FIXED8 run keeps tcp: with
# tearing every 256-byte read over tcp is 32 round trips, and the +hop tcp
# half took 215 of its 233 s sanitized)
ASAN_SHM_ONLY=${ASAN_SHM_ONLY-test_tree_model+hop test_tree_model+var test_tree_faults+hop test_tree_faults+var test_tree_reclaim test_tree_concurrency+hop test_tree_concurrency+var}
ctest_out=$(mktemp)
if make -s -j"$(nproc)" standalone BUILD=build/asan \
        SANITIZE="-fsanitize=address,undefined -fno-sanitize-recover=undefined" >/tmp/dmindex-asan-build.log 2>&1; then
    LSAN_OPTIONS=suppressions=$ROOT/test/lsan.supp TREE_SCALE=${ASAN_TREE_SCALE:-25} BUILD_DIR=build/asan \
        C_TEST_SHM_ONLY="$ASAN_SHM_ONLY" RECLAIM_FAULT_STRIDE=${RECLAIM_FAULT_STRIDE:-4} \
        FAULT_TORN_SAMPLE=${FAULT_TORN_SAMPLE:-2} \
        bash test/run-c-tests.sh 2>&1 | tee "$ctest_out"
else
    tail -n 30 /tmp/dmindex-asan-build.log
fi
add_summary "C tests" "$ctest_out" "sanitized C tests printed no summary"
rm -f "$ctest_out"

echo "== pg_regress"
REGRESS_MEMNODE_PORT=${REGRESS_MEMNODE_PORT:-7491}
REGRESS_PG_PORT=${REGRESS_PG_PORT:-5491}
run_regress_suite regress "$PGXS_TEST/regress/pg_regress" \
    "$REGRESS_MEMNODE_PORT" "$REGRESS_PG_PORT" test/regress-schedule sql expected
passed=$((passed + suite_passed))
failed=$((failed + suite_failed))

# The same suite once more per variant, the same answers expected:
#   ucx      every index operation through the ucx transport (one-sided
#            shared memory here; on RDMA hardware the same code uses verbs)
#   offload  every index operation offered to the memnode's offload executor
#            at its first node cache miss (DEX §6; src/pg/dmoffload.c)
#   hop      every index without the leaf_format option built with
#            hopscotch leaves (docs/design.md §5.1)
# Each runs on its own ports (offset from the plain suite's).
regress_variant() {   # name port-offset title VAR=value...: the settings hold for this suite only
    local name=$1 off=$2 title=$3
    shift 3
    local -x "$@"
    echo "== pg_regress $title"
    run_regress_suite "regress-$name" "$PGXS_TEST/regress/pg_regress" \
        "$((REGRESS_MEMNODE_PORT + off))" "$((REGRESS_PG_PORT + off))" test/regress-schedule sql expected
    passed=$((passed + suite_passed))
    failed=$((failed + suite_failed))
}
regress_variant ucx 2 "over ucx (UCX_TLS=${REGRESS_UCX_TLS:-posix})" REGRESS_TRANSPORT=ucx UCX_TLS="${REGRESS_UCX_TLS:-posix}"
regress_variant offload 3 "with dmindex.offload = always" REGRESS_OFFLOAD=always
regress_variant hop 4 "with dmindex.default_leaf_format = hopscotch" REGRESS_LEAF_FORMAT=hopscotch

echo "== isolation (concurrent sessions in a fixed interleaving)"
run_regress_suite isolation "$PGXS_TEST/isolation/pg_isolation_regress" \
    "$((REGRESS_MEMNODE_PORT + 1))" "$((REGRESS_PG_PORT + 1))" \
    test/isolation/isolation-schedule test/isolation/specs test/isolation/expected
passed=$((passed + suite_passed))
failed=$((failed + suite_failed))

echo "== TAP tests (several servers, crashes, restarts)"
tap_out=$(mktemp)
bash test/run-tap-tests.sh 2>&1 | tee "$tap_out"
add_summary "TAP tests" "$tap_out" "TAP tests printed no summary"
rm -f "$tap_out"

echo "== TAP: the scan-pin and failover tests again with dmindex.offload = always"
# forward scans then hold executor batches instead of leaf copies: VACUUM
# must still wait for an index-only scan's pin over them (src/pg/dmscan.c);
# offloaded writes carry the failover high-water raise (dm_tree_writer.c);
# PGOPTIONS reaches every session the tests open (psql, pgbench)
tap_out=$(mktemp)
PGOPTIONS='-c dmindex.offload=always' bash test/run-tap-tests.sh \
    test/t/011_ios_vacuum_race.pl test/t/017_scan_pins.pl test/t/020_failover.pl 2>&1 | tee "$tap_out"
add_summary "TAP tests" "$tap_out" "TAP tests (offload) printed no summary"
rm -f "$tap_out"

echo "== TAP: an index-only scan racing VACUUM and standby reads with hopscotch leaves"
# every index the tests build without the leaf_format option gets hopscotch
# leaves: VACUUM's bulk delete and pins (011), a standby's replica handle,
# cache and removal horizon (019) over them
# (the variants' load phases shorter than the plain run's: DM_STANDBY_SECONDS
# 10 instead of 15, DM_PGBENCH_SECONDS 10 instead of 20; every check still
# runs, on fewer rows changed)
tap_out=$(mktemp)
DM_STANDBY_SECONDS=${DM_STANDBY_SECONDS:-10} PGOPTIONS='-c dmindex.default_leaf_format=hopscotch' bash test/run-tap-tests.sh \
    test/t/011_ios_vacuum_race.pl test/t/019_standby_reads.pl 2>&1 | tee "$tap_out"
add_summary "TAP tests" "$tap_out" "TAP tests (hopscotch) printed no summary"
rm -f "$tap_out"

echo "== TAP: the workload, crash, standby and failover tests with VAR indexes (text, two columns)"
# DMINDEX_TAP_KEY gives the tests' dmindex indexes a key of format VAR
# (test/perl/DmindexTest.pm): a text expression of the key (text), or
# (text, int) columns (multi); their checks against btree, seqscans and
# dmindex_check then run on byte-string keys.  multi leaves out the
# failover test (its takeover does not depend on the key format) to keep
# the two runs near 4 minutes.
tap_var() {   # key test...: the tests with DMINDEX_TAP_KEY=key
    local key=$1 out
    shift
    out=$(mktemp)
    DM_STANDBY_SECONDS=${DM_STANDBY_SECONDS:-10} DM_PGBENCH_SECONDS=${DM_PGBENCH_SECONDS:-10} \
        DMINDEX_TAP_KEY=$key bash test/run-tap-tests.sh "$@" 2>&1 | tee "$out"
    add_summary "TAP tests" "$out" "TAP tests (key $key) printed no summary"
    rm -f "$out"
}
tap_var text test/t/001_pgbench_concurrency.pl test/t/002_crash.pl test/t/019_standby_reads.pl test/t/020_failover.pl
tap_var multi test/t/001_pgbench_concurrency.pl test/t/002_crash.pl test/t/019_standby_reads.pl

echo "== fuzz (libFuzzer: frame decoder, batch validation, handshake)"
fuzz_out=$(mktemp)
# 12 s a target in CI (run-fuzz.sh's own default: 20): each starts from its
# seed corpus, so the seeds and their nearest mutations are always run
FUZZ_SECONDS=${FUZZ_SECONDS:-12} bash test/run-fuzz.sh 2>&1 | tee "$fuzz_out"
add_summary "Fuzz" "$fuzz_out" "fuzz printed no summary"
rm -f "$fuzz_out"

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
