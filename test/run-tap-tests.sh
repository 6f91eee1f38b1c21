#!/usr/bin/env bash
# run-tap-tests.sh — runs the TAP tests of dmindex (test/t/*.pl, written with
# PostgreSQL's PostgreSQL::Test::Cluster) with `prove`, and ends with one line
#   TAP tests: N passed, N failed
# where N counts TAP assertions (ok / not ok lines of every file); a file that
# dies, or ends without its plan, counts as one more failure; one that skips
# itself as a whole (skip_all, exit 0) is listed as skipped with its reason.
#
#   test/run-tap-tests.sh [t/NNN_name.pl ...]     (default: every test/t/*.pl)
#
# Needs the extension and the memnode built and installed (make && make
# install).  initdb refuses to run as root, so when started as root the tests
# run as $DM_USER (postgres) from a copy of test/t and test/perl in a
# directory that user can write; started as another user they run as that
# user.  The memnode is $DM_MEMNODE, by default build/dmindex-memnode of
# this tree, else dmindex-memnode on PATH.  PG_TEST_NOCLEAN=1 keeps the work
# directory (data directories and logs); it is also kept when a test fails.
# DM_PGBENCH_SECONDS (001) and DM_SHORT_CONNECTIONS (016) reach the tests,
# DMINDEX_TAP_KEY (the key shape of the dmindex indexes, test/perl/DmindexTest.pm),
# and PGOPTIONS every session they open (e.g. '-c dmindex.offload=always'
# or '-c dmindex.default_leaf_format=hopscotch': test/run-tests.sh; each
# new node then asserts that its sessions have those settings).
# Exit status 0 iff nothing failed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PG_BIN=$("$PG_CONFIG" --bindir)
PGXS_DIR=$(dirname "$("$PG_CONFIG" --pgxs)")/../..
PGXS_DIR=$(cd "$PGXS_DIR" && pwd)
DM_USER=${DM_USER:-postgres}
FILE_TIMEOUT=${TAP_FILE_TIMEOUT:-300}

summary() {
    echo "TAP tests: $1 passed, $2 failed"
    [ "$2" -eq 0 ]
    exit $?
}

if [ ! -f "$("$PG_CONFIG" --pkglibdir)/dmindex.so" ]; then
    echo "dmindex is not installed into $("$PG_CONFIG" --pkglibdir): run make && make install first" >&2
    summary 0 1
fi
if [ -z "${DM_MEMNODE:-}" ]; then
    if [ -x "$ROOT/build/dmindex-memnode" ]; then
        DM_MEMNODE=$ROOT/build/dmindex-memnode
    else
        DM_MEMNODE=$(command -v dmindex-memnode || true)
    fi
fi
if [ -z "$DM_MEMNODE" ] || [ ! -x "$DM_MEMNODE" ]; then
    echo "no dmindex-memnode binary: run make first" >&2
    summary 0 1
fi
for mod in IPC::Run Test::More; do
    if ! perl -M"$mod" -e 1 2>/dev/null; then
        echo "Perl module $mod is missing (apt-get install libipc-run-perl)" >&2
        summary 0 1
    fi
done

run_as=()
if [ "$(id -u)" -eq 0 ]; then
    run_as=(runuser -u "$DM_USER" --)
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmindex-tap.XXXXXX")
chmod 755 "$WORK"
cp -r "$ROOT/test/t" "$ROOT/test/perl" "$WORK/"
[ "$(id -u)" -eq 0 ] && chown -R "$DM_USER" "$WORK"

if [ $# -gt 0 ]; then
    tests=()
    for t in "$@"; do tests+=("t/$(basename "$t")"); done
else
    tests=()
    for t in "$WORK"/t/*.pl; do tests+=("t/$(basename "$t")"); done
fi

env_vars=(
    "PATH=$PG_BIN:/usr/local/bin:/usr/bin:/bin"
    "PERL5LIB=$PGXS_DIR/src/test/perl:$WORK/perl${PERL5LIB:+:$PERL5LIB}"
    "PG_REGRESS=$PGXS_DIR/src/test/regress/pg_regress"
    "REGRESS_SHLIB=$PGXS_DIR/src/test/regress/regress.so"
    "TESTDIR=$WORK"
    "TESTDATADIR=$WORK/tmp_check"
    "PG_TEST_PORT_DIR=$WORK/portlock"
    "DM_MEMNODE=$DM_MEMNODE"
    "HOME=$WORK"
    "LANG=C.UTF-8"
)
# the tests' own knobs (durations of the long runs) and PGOPTIONS (variant runs) pass through
for v in PG_TEST_TIMEOUT_DEFAULT DM_PGBENCH_SECONDS DMINDEX_STRESS_SECONDS DM_SHORT_CONNECTIONS PGOPTIONS DMINDEX_TAP_KEY; do
    [ -n "${!v:-}" ] && env_vars+=("$v=${!v}")
done
mkdir -p "$WORK/portlock" && [ "$(id -u)" -eq 0 ] && chown "$DM_USER" "$WORK/portlock"

passed=0
failed=0
start_all=$(date +%s)
for t in "${tests[@]}"; do
    out="$WORK/$(basename "$t" .pl).tap"
    diags="$WORK/$(basename "$t" .pl).diag"
    start=$(date +%s)
    # TAP (ok / not ok, notes) on stdout; failures' diagnostics on stderr
    (cd "$WORK" && "${run_as[@]}" env -i "${env_vars[@]}" \
        timeout -k 10 "$FILE_TIMEOUT" prove -v "$t") >"$out" 2>"$diags"
    rc=$?
    secs=$(( $(date +%s) - start ))
    ok=$(grep -cE '^ok [0-9]+' "$out" || true)
    todo_bad=$(grep -E '^not ok [0-9]+' "$out" | grep -c '# TODO' || true)
    notok=$(( $(grep -cE '^not ok [0-9]+' "$out" || true) - todo_bad ))
    ok=$((ok + todo_bad))
    # the plan (done_testing prints it last) must be there and match
    plan=$(grep -oE '^1\.\.[0-9]+' "$out" | tail -n 1 | cut -d. -f3)
    died=0
    if [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then died=1; fi
    if [ -z "$plan" ] || [ "$plan" -ne $((ok + notok)) ]; then died=1; fi
    passed=$((passed + ok))
    failed=$((failed + notok + died))
    # a file that skips itself as a whole (plan skip_all, e.g. a test that
    # cannot run with the key shape of DMINDEX_TAP_KEY) ran nothing: shown
    # with its reason, neither passed nor failed
    skipped=$(grep -E '^\S+ \.\. skipped: ' "$out" | sed -E 's/^\S+ \.\. skipped: //')
    if [ "$rc" -eq 0 ] && [ -n "$skipped" ] && [ "$ok" -eq 0 ] && [ "$notok" -eq 0 ]; then
        failed=$((failed - died))
        printf '%-36s skipped (%s)  %4ds\n' "$t" "$skipped" "$secs"
    elif [ "$rc" -eq 0 ] && [ "$notok" -eq 0 ] && [ "$died" -eq 0 ]; then
        printf '%-36s ok      %3d assertions  %4ds\n' "$t" "$ok" "$secs"
    else
        printf '%-36s FAILED  %3d passed, %d failed%s  %4ds\n' "$t" "$ok" "$notok" \
            "$([ "$died" -eq 1 ] && echo ", died (exit $rc)")" "$secs"
        grep -E '^not ok' "$out" | sed 's/^/    /'
        sed 's/^/    /' "$diags" | head -n 60
        log="$WORK/tmp_check/log/regress_log_$(basename "$t" .pl)"
        [ -f "$log" ] && echo "    (full log: $log)"
    fi
done
echo "TAP run took $(( $(date +%s) - start_all ))s; output in $WORK"

if [ "$failed" -eq 0 ] && [ -z "${PG_TEST_NOCLEAN:-}" ]; then
    rm -rf "$WORK"
fi
summary "$passed" "$failed"
