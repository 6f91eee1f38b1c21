#!/usr/bin/env bash
# run-tests.sh — the README's second command: runs every test of dmindex and
# ends with one line "N passed, N failed".
#   1. C tests (test/unit, test/integ): protocol, region, transports over tcp
#      and shm, robustness, failure; each assertion counts.
#   2. pg_regress (sql/, expected/): a temporary PostgreSQL instance with a
#      memnode; each test file counts.
#   3. TAP (test/t/*.pl): pgbench concurrency, crashes, memnode restarts,
#      DROP DATABASE; each assertion counts.
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

passed=0
failed=0

echo "== build"
if ! make -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" >/tmp/dmindex-build.log 2>&1 ||
   ! make -s install PG_CONFIG="$PG_CONFIG" >>/tmp/dmindex-build.log 2>&1; then
    cat /tmp/dmindex-build.log
    echo "build failed"
    echo "0 passed, 1 failed"
    exit 1
fi

echo "== C tests"
ctest_out=$(mktemp)
bash test/run-c-tests.sh 2>&1 | tee "$ctest_out"
line=$(grep -E '^C tests: [0-9]+ passed, [0-9]+ failed' "$ctest_out" | tail -n 1)
if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | sed -E 's/^C tests: ([0-9]+) passed.*/\1/')))
    failed=$((failed + $(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')))
else
    echo "C tests printed no summary"
    failed=$((failed + 1))
fi
rm -f "$ctest_out"

echo "== pg_regress"
WORK=$(make_workdir regress)
MEMNODE_PORT=${REGRESS_MEMNODE_PORT:-7491}
PG_PORT=${REGRESS_PG_PORT:-5491}
cp -r sql expected test/regress-schedule "$WORK/"
chown -R "$DM_USER" "$WORK"
if start_memnode "$WORK" "$MEMNODE_PORT" --size 256M --shm --chunk-size 1M; then
    cat >"$WORK/regress.conf" <<CONF
shared_preload_libraries = 'dmindex'
dmindex.memnodes = '127.0.0.1:$MEMNODE_PORT'
# a node cache of about 100 frames: every test's indexes go through one that evicts
dmindex.cache_size = 128kB
CONF
    chown "$DM_USER" "$WORK/regress.conf"
    PG_REGRESS=$("$PG_CONFIG" --pkglibdir)/pgxs/src/test/regress/pg_regress
    # shellcheck disable=SC2046
    (cd "$WORK" && as_user "$PG_REGRESS" --inputdir=. --bindir="$PG_BIN" \
        --temp-instance="$WORK/tmp_check" --temp-config="$WORK/regress.conf" \
        --port="$PG_PORT" --load-extension=dmindex $(cat regress-schedule)) \
        >"$WORK/regress.out" 2>&1
    cat "$WORK/regress.out"
    ok=$(grep -cE '\.\.\. ok' "$WORK/regress.out" || true)
    bad=$(grep -cE '\.\.\. FAILED|\.\.\. failed' "$WORK/regress.out" || true)
    passed=$((passed + ok))
    failed=$((failed + bad))
    if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then
        echo "pg_regress ran no test"
        failed=$((failed + 1))
    fi
    [ -f "$WORK/regression.diffs" ] && cat "$WORK/regression.diffs"
    stop_memnode "$WORK" "$MEMNODE_PORT"
else
    failed=$((failed + 1))
fi

echo "== TAP tests (several servers, crashes, restarts)"
tap_out=$(mktemp)
bash test/run-tap-tests.sh 2>&1 | tee "$tap_out"
line=$(grep -E '^TAP tests: [0-9]+ passed, [0-9]+ failed' "$tap_out" | tail -n 1)
if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | sed -E 's/^TAP tests: ([0-9]+) passed.*/\1/')))
    failed=$((failed + $(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')))
else
    echo "TAP tests printed no summary"
    failed=$((failed + 1))
fi
rm -f "$tap_out"

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
