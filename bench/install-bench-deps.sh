#!/usr/bin/env bash
# install-bench-deps.sh — what the benchmark scripts need beyond
# test/install-deps.sh (which CI runs; keep benchmark-only packages out of
# it): gnuplot-nox, for the PNG charts bench/plot-bars.sh draws next to the
# results.  Debian 12, as root.  Quick when all is present.
set -euo pipefail
exec bash "$(dirname "$0")/../test/install-deps.sh" gnuplot-nox
