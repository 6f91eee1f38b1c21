#!/usr/bin/env bash
# varam_diff.sh — runs the randomized differential test of VAR dmindex
# indexes (varam_diff.py: index and bitmap scans, cursors, generic plans
# against seqscan, with DML in transactions) on a running server with the
# dmindex extension, for seeds FIRST..LAST.  Exits 1 if any seed found a
# mismatch or an unexpected error (its script and output stay in $OUT).
#   PSQL="psql -h HOST -p PORT -U postgres -d DB" bash test/fuzz/varam_diff.sh [FIRST [LAST [QPB [ROUNDS]]]]
# QPB: queries per table and batch (40), ROUNDS: rounds of batches (6); a
# seed of 40/6 runs about 7,000 checks.  It drops and creates tables t1..t10
# and fz_* objects in DB: one run per database at a time (two runs in one
# database change each other's tables between a query and its reference).
# Mismatches are WARNING lines "... MISMATCH" in $OUT/seedN.out and rows of
# kind 'bad' in table fz_log (lost when logged in a rolled-back transaction:
# the WARNING lines are what counts).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
FIRST=${1:-1}; LAST=${2:-$FIRST}; QPB=${3:-40}; ROUNDS=${4:-6}
: "${PSQL:?set PSQL to a psql command line for a database with the dmindex extension}"
OUT=${OUT:-$(mktemp -d /tmp/varam_diff.XXXXXX)}
fail=0
for seed in $(seq "$FIRST" "$LAST"); do
    python3 "$HERE/varam_diff.py" "$seed" "$QPB" "$ROUNDS" > "$OUT/seed$seed.sql"
    $PSQL -X -q -f "$OUT/seed$seed.sql" > "$OUT/seed$seed.out" 2>&1
    # errors other than the expected refusals of over-long keys (54000) count as failures
    errs=$(grep -c '^psql:.*ERROR' "$OUT/seed$seed.out" || true)
    keyerrs=$(grep -c 'ERROR:  .*index row .*exceeds\|ERROR:  .*key of .* bytes' "$OUT/seed$seed.out" || true)
    bad=$(grep -c 'MISMATCH' "$OUT/seed$seed.out" || true)
    echo "seed $seed: $(grep -A20 '^ *kind' "$OUT/seed$seed.out" | grep '|' | grep -v kind | tr -s ' ' | tr '\n' ';') mismatches $bad, errors $errs (key too long: $keyerrs)"
    if [ "$bad" -gt 0 ] || [ "$errs" -gt "$keyerrs" ]; then fail=1; fi
done
echo "output in $OUT"
exit $fail
