# md-table-csv.awk — the first markdown table of a benchmark's output whose
# header row matches the regular expression `header`, as CSV (cells trimmed,
# commas inside a cell turned into semicolons), so that run-dmbench.sh can
# keep its numbers next to the markdown in a form other tools read.
#   awk -v header='ops/s' -f bench/md-table-csv.awk results.md > results.csv
function row(line,    n, i, f, out) {
    n = split(line, f, "|")
    out = ""
    for (i = 2; i < n; i++) {
        gsub(/^[ \t]+|[ \t]+$/, "", f[i])
        gsub(/,/, ";", f[i])
        out = out (i > 2 ? "," : "") f[i]
    }
    return out
}
done { next }
intable && /^\|/ { if ($0 !~ /^\|[-:| ]+\|$/) print row($0); next }
intable { done = 1; next }
/^\|/ && $0 ~ header { intable = 1; print row($0) }
