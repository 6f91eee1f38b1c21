#!/usr/bin/env bash
# run-auth-bench.sh — what authentication and tenant isolation cost, recorded
# in bench/results/auth-YYYY-MM-DD.md:
#   1. build/bench/dmbench_auth: the memnode's per-op validation with and
#      without the ownership check, and the per-batch lock, in-process
#      (rounds alternate; no network noise);
#   2. build/bench/dmbench_transport pinned to CPU 0, without and with
#      --auth, alternated ROUNDS times (default 4) in the same run: the tcp
#      rows' medians side by side, and their ratio (auth / no auth).
# Extra arguments go to dmbench_transport (default: --duration 1).
# Takes about 3 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build/dmindex-memnode build/bench/dmbench_transport build/bench/dmbench_auth >/dev/null
day=$(date +%Y-%m-%d)
out="bench/results/auth-${day}.md"
rounds=${ROUNDS:-4}
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--duration 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')

echo "== dmbench_auth" >&2
build/bench/dmbench_auth --rounds 21 --out "$tmp/micro.md" >&2
for r in $(seq 1 "$rounds"); do
    echo "== round $r: without --auth" >&2
    build/bench/dmbench_transport --pin 0 "${args[@]}" --out "$tmp/plain-$r.md" >/dev/null
    echo "== round $r: with --auth" >&2
    build/bench/dmbench_transport --pin 0 --auth "${args[@]}" --out "$tmp/auth-$r.md" >/dev/null
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
# before the results file is (re)written: it is not a change of the code measured
commit="$(git rev-parse --short HEAD)$([ -z "$(git status --porcelain --untracked-files=no -- src/dm memnode bench ':!bench/results' 2>/dev/null)" ] || echo ' + uncommitted changes')"

# median column (4) of the tcp rows, per (op, clients), over the rounds of one variant
medians() {
    cat "$@" | awk -F'|' '$3 ~ /^ tcp $/ { gsub(/^ +| +$/, "", $2); gsub(/ /, "", $4); print $2 "|" $4 "|" $5 }'
}
{
    echo "# Cost of authentication and tenant isolation — ${day}"
    echo
    echo "- command: \`bench/run-auth-bench.sh $*\` (ROUNDS=${rounds})"
    echo "- date: ${started}; commit ${commit}"
    echo "- machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n1)"
    echo "- load average before / after: ${load} / ${load_after} (other work on the machine disturbs every number)"
    echo
    echo "## 1. Per op, in-process (build/bench/dmbench_auth)"
    echo
    cat "$tmp/micro.md"
    echo
    echo "## 2. End to end over tcp (dmbench_transport --pin 0 ${args[*]}), median µs per op"
    echo
    echo "| op | clients | no auth (each round) | auth (each round) | ratio of the medians over rounds |"
    echo "|---|---|---|---|---|"
    medians "$tmp"/plain-*.md >"$tmp/p"
    medians "$tmp"/auth-*.md >"$tmp/a"
    awk -F'|' 'function med(s,   v, n, i, j, t) { n = split(s, v, " ");
                   for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
                   return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
               NR == FNR { p[$1 "|" $2] = p[$1 "|" $2] " " $3; next }
               { a[$1 "|" $2] = a[$1 "|" $2] " " $3; k[$1 "|" $2] = 1 }
               END { for (key in k) {
                       split(key, kk, "|"); mp = med(p[key]); ma = med(a[key]);
                       printf "| %s | %s |%s |%s | %.2f |\n", kk[1], kk[2], p[key], a[key], (mp > 0 ? ma / mp : 0) } }' \
        "$tmp/p" "$tmp/a" | sort
    echo
    echo "Each round runs both variants back to back, each with its own memnode. A tcp op costs tens of"
    echo "microseconds of loopback round trip and scheduling, against nanoseconds of checks (part 1): the"
    echo "ratios in part 2 are the machine's noise, which is the point — the check is not visible there."
} >"$out"
echo "wrote $out"
