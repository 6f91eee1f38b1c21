#!/usr/bin/env bash
# plot-bars.sh — the one chart the benchmark scripts draw: clustered bars from
# a small comma-separated "wide" table (first row: a label, then one series
# name per column; each further row: a category, then one value per series),
# as a PNG, with gnuplot (bench/install-bench-deps.sh installs it).  Kept in
# one place so every results file's chart looks the same and the scripts only
# decide what to put in the table.
#
#   bench/plot-bars.sh WIDE.csv OUT.png 'title' 'y label' [REFLINE]
#
# REFLINE draws a dashed horizontal line at that y (1 for ratio charts: the
# line where dmindex and btree are equal).  Without gnuplot it says so and
# exits 0: a missing chart must not throw away a benchmark run's numbers.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 WIDE.csv OUT.png TITLE YLABEL [REFLINE]" >&2; exit 2; }
data=$1 png=$2 title=$3 ylabel=$4 ref=${5:-}
if ! command -v gnuplot >/dev/null; then
    echo "plot-bars.sh: gnuplot not installed (bash bench/install-bench-deps.sh); no chart $png" >&2
    exit 0
fi
ncol=$(head -n1 "$data" | awk -F, '{ print NF }')
nrow=$(($(wc -l <"$data") - 1))
# wider for many bars, so that the category labels stay readable
width=$((400 + nrow * (ncol - 1) * 28)); [ "$width" -lt 900 ] && width=900
[ "$width" -gt 2400 ] && width=2400
# gnuplot takes quoted strings: escape what the title could hold
q() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
{
    echo "set terminal pngcairo size $width,520 font 'sans,10'"
    echo "set output \"$(q "$png")\""
    echo "set datafile separator ','"
    echo "set title \"$(q "$title")\""
    echo "set ylabel \"$(q "$ylabel")\""
    echo "set style data histograms"
    echo "set style histogram clustered gap 1"
    echo "set style fill solid 0.85 border -1"
    echo "set boxwidth 0.9"
    echo "set key outside right top vertical"
    # with a reference line, the axis reaches at least a bit past it
    if [ -n "$ref" ]; then echo "set yrange [0:$(echo "$ref * 1.15" | bc -l)<*]"; else echo "set yrange [0:*]"; fi
    echo "set grid ytics"
    echo "set xtics rotate by -30 noenhanced"
    echo "set key noenhanced"
    [ -n "$ref" ] && echo "set arrow from graph 0, first $ref to graph 1, first $ref nohead dt 2 lw 2 lc rgb 'black' front"
    echo "plot for [i=2:$ncol] \"$(q "$data")\" using i:xtic(1) title columnheader(i)"
} | gnuplot
echo "chart: $png" >&2
