#!/usr/bin/env bash
# install-bench-deps.sh — what the benchmark scripts need beyond
# test/install-deps.sh (which CI runs; keep benchmark-only packages out of
# it): gnuplot-nox, for the PNG charts bench/plot-bars.sh draws next to the
# results.  Debian 12, as root.  Quick when all is present.
set -euo pipefail
PKGS="gnuplot-nox"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "== installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q $missing
fi
