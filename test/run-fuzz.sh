#!/usr/bin/env bash
# run-fuzz.sh — builds the libFuzzer targets of test/fuzz (make fuzz) and
# runs each for a bounded time from its committed seed corpus (copied: the
# corpus in the repository does not grow).  Ends with one line
#   Fuzz: N passed, N failed
# counting one per target: passed if it ran its time without a crash, a
# sanitizer report or a violated invariant.  A finding is kept as
# build/fuzz/crash-* (reproduce: build/fuzz/fuzz_NAME build/fuzz/crash-...).
#
#   test/run-fuzz.sh [SECONDS]     (default $FUZZ_SECONDS or 20 per target)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
secs=${1:-${FUZZ_SECONDS:-20}}

if ! make -s fuzz >build/fuzz-build.log 2>&1; then
    cat build/fuzz-build.log
    echo "Fuzz: 0 passed, 1 failed"
    exit 1
fi
passed=0
failed=0
for src in test/fuzz/fuzz_*.c; do
    name=$(basename "$src" .c)
    [ "$name" = fuzz_memnode ] && continue
    corpus=$(mktemp -d "${TMPDIR:-/tmp}/dmfuzz-corpus.XXXXXX")
    cp test/fuzz/corpus/"${name#fuzz_}"/* "$corpus"/ 2>/dev/null
    log=build/fuzz/$name.log
    # -timeout: an input that runs a minute is a hang (generous: a loaded CI machine
    # stalls processes for seconds); -rss_limit_mb: unbounded growth is a finding
    timeout -k 10 $((secs + 60)) build/fuzz/"$name" -max_total_time="$secs" -max_len=8192 \
        -timeout=60 -rss_limit_mb=2048 -artifact_prefix=build/fuzz/ -print_final_stats=1 \
        "$corpus" >"$log" 2>&1
    rc=$?
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1)
    if [ $rc -eq 0 ]; then
        printf '%-16s ok      %8s runs in %ss (%s)\n' "$name" "${runs:-?}" "$secs" "$cov"
        passed=$((passed + 1))
    else
        printf '%-16s FAILED  exit %d (log %s)\n' "$name" "$rc" "$log"
        grep -E 'ERROR|invariant|SUMMARY|artifact' "$log" | head -n 10 | sed 's/^/    /'
        failed=$((failed + 1))
    fi
    rm -rf "$corpus"
done
echo "Fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
