# csv-wide.awk — turns a benchmark's long CSV (one row per cell, a header
# naming the columns) into the wide table bench/plot-bars.sh draws: one row
# per category, one column per series.  Columns are given by header name,
# several joined with a space into one label:
#   awk -F, -v cat='workload,dist' -v ser='transport,cache' -v val='ops/s' -f bench/csv-wide.awk X.csv
# Categories and series keep the order of their first appearance; a missing
# cell stays empty (gnuplot leaves a gap).
function label(spec,    n, i, parts, s) {
    n = split(spec, parts, ",")
    s = ""
    for (i = 1; i <= n; i++) s = s (i > 1 ? " " : "") $(col[parts[i]])
    return s
}
NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    nc = split(cat "," ser "," val, need, ",")
    for (i = 1; i <= nc; i++) if (!(need[i] in col)) { print "csv-wide.awk: no column " need[i] > "/dev/stderr"; bad = 1; exit 1 }
    next
}
{
    c = label(cat); s = label(ser)
    if (!(c in cseen)) { cseen[c] = 1; cats[++m] = c }
    if (!(s in sseen)) { sseen[s] = 1; sers[++n] = s }
    v[c, s] = $(col[val])
}
END {
    if (bad) exit 1
    h = cat; gsub(/,/, " ", h)
    printf "%s", h
    for (j = 1; j <= n; j++) printf ",%s", sers[j]
    print ""
    for (i = 1; i <= m; i++) {
        printf "%s", cats[i]
        for (j = 1; j <= n; j++) printf ",%s", v[cats[i], sers[j]]
        print ""
    }
}
