#!/usr/bin/env bash
# compare-offload.sh — the three runs of `DMBENCH_OFFLOAD=off|always|auto
# bench/run-dmbench.sh` side by side (issue 13's targets): per cell the
# throughput of each mode, always/off, auto/off, auto against the better of
# off and always, and network round trips plus offload RPCs per operation
# (an RPC is a round trip too).  Prints a markdown table.
#
#   bench/compare-offload.sh OFF.md ALWAYS.md AUTO.md
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 OFF.md ALWAYS.md AUTO.md" >&2; exit 2; }
here=$(dirname "$0")
for m in off always auto; do
    f=$1; shift
    # the transport table is the first with an RPCs/op column
    awk -v header='RPCs/op' -f "$here/md-table-csv.awk" "$f" |
        awk -F, -v m="$m" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
            { print m "," $1 "," $2 "," $3 "," $4 "," $(c["ops/s"]) "," $(c["round trips/op"]) "," $(c["RPCs/op"]) }'
done | awk -F, '
{ k = $2 " | " $3 " | " $4 " | " $5; if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
  ops[k, $1] = $6; rt[k, $1] = $7 + $8 }
END {
  print "| workload | dist | transport | cache | off ops/s | always ops/s | auto ops/s | always/off | auto/off | auto / best of off, always | round trips + RPCs per op: off | always | auto |"
  print "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for (i = 1; i <= n; i++) {
    k = keys[i]; o = ops[k, "off"]; a = ops[k, "always"]; u = ops[k, "auto"]; b = (o > a ? o : a)
    printf "| %s | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", k, o, a, u,
      (o ? a / o : 0), (o ? u / o : 0), (b ? u / b : 0), rt[k, "off"], rt[k, "always"], rt[k, "auto"]
  }
}'
