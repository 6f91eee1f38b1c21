#!/usr/bin/env bash
# run-failover-bench.sh — what the failover safety of dmindex costs writers
# (src/pg/dmfailover.c): a primary with one streaming standby, pgbench
# single-row INSERTs into a table with a btree and into one with a dmindex
# index, with the standby asynchronous and synchronous
# (synchronous_standby_names set, synchronous_commit = on), alternated
# REPEAT times in one run so that drift on a shared machine hits both.
#
# With a synchronous standby a dmindex writer waits for the standby twice
# per transaction: once before it writes its remote entries (for the WAL of
# its heap tuples) and once at commit, as every writer does; it also raises
# the tree's high-water mark (one remote CAS per transaction).  The btree
# table shows what synchronous replication costs by itself; the ratio of
# the two slowdowns is dmindex's extra.  Results go to
# bench/results/failover-<date>.md with the command that produced them.
#
#   sudo bash bench/run-failover-bench.sh
#   DURATION=10 REPEAT=3 TRANSPORTS="shm tcp" sudo bash bench/run-failover-bench.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/test/common.sh"
ROWS=${ROWS:-100000}
DURATION=${DURATION:-10}
CLIENTS=${CLIENTS:-4}
REPEAT=${REPEAT:-2}
TRANSPORTS=${TRANSPORTS:-shm tcp}
MEMNODE_PORT=${MEMNODE_PORT:-7480}
PG_PORT=${PG_PORT:-5480}
SB_PORT=${SB_PORT:-5481}
OUT=${OUT:-$ROOT/bench/results/failover-$(date +%F).md}
CMD="ROWS=$ROWS DURATION=$DURATION CLIENTS=$CLIENTS REPEAT=$REPEAT TRANSPORTS='$TRANSPORTS' bash bench/run-failover-bench.sh"

make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" >/dev/null
make -C "$ROOT" -s install PG_CONFIG="$PG_CONFIG" >/dev/null
WORK=$(make_workdir failoverbench)
cleanup() { stop_pg "$WORK/sb"; stop_pg "$WORK/pg"; stop_memnode "$WORK" "$MEMNODE_PORT"; }
trap cleanup EXIT
cp "$ROOT"/bench/sql/insert.sql "$WORK/"
chown -R "$DM_USER" "$WORK"
start_memnode "$WORK" "$MEMNODE_PORT" --size 2G --shm --threads 2
start_pg "$WORK/pg" "$PG_PORT" "dmindex.memnodes = '127.0.0.1:$MEMNODE_PORT'" "dmindex.instance_id = 0" \
    "shared_buffers = 256MB" "max_wal_size = 4GB"
psql_() { as_user "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$WORK/pg" -p "$PG_PORT" -d postgres "$@"; }

echo "== standby"
as_user "$PG_BIN/pg_basebackup" -D "$WORK/sb" -h "$WORK/pg" -p "$PG_PORT" -R -X stream >/dev/null
{
    echo "port = $SB_PORT"
    echo "unix_socket_directories = '$WORK/sb'"
    echo "cluster_name = 'standby1'"
    echo "dmindex.instance_id = 1"
} >>"$WORK/sb/postgresql.conf"
as_user "$PG_BIN/pg_ctl" -D "$WORK/sb" -l "$WORK/sb.log" -w start >/dev/null

echo "== loading $ROWS rows into two tables"
psql_ -c "CREATE EXTENSION dmindex" \
      -c "CREATE TABLE t_bt (k int8, v int4) WITH (autovacuum_enabled = off)" \
      -c "CREATE TABLE t_dm (k int8, v int4) WITH (autovacuum_enabled = off)" \
      -c "INSERT INTO t_bt SELECT g, 0 FROM generate_series(1, $ROWS) g" \
      -c "INSERT INTO t_dm SELECT * FROM t_bt" \
      -c "CREATE INDEX ON t_bt (k)" -c "CREATE INDEX ON t_dm USING dmindex (k)" \
      -c "VACUUM ANALYZE t_bt" -c "VACUUM ANALYZE t_dm"

set_mode() {
    local names=''
    [ "$1" = sync ] && names=standby1
    psql_ -c "ALTER SYSTEM SET synchronous_standby_names = '$names'" -c "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 100); do
        [ "$(psql_ -c "SELECT sync_state FROM pg_stat_replication")" = "$1" ] && return 0
        sleep 0.1
    done
    echo "standby did not become $1" >&2; return 1
}

run_cell() {   # transport table -> "tps latency_ms"
    as_user env PGOPTIONS="-c dmindex.transport=$1" "$PG_BIN/pgbench" -n -h "$WORK/pg" -p "$PG_PORT" \
        -c "$CLIENTS" -j "$CLIENTS" -T "$DURATION" -D rows="$ROWS" -D tbl="$2" -f "$WORK/insert.sql" postgres \
        2>/dev/null | awk '/^latency average/ {lat=$4} /^tps/ {tps=$3} END {printf "%s %s", tps, lat}'
}

declare -A TPS LAT
for r in $(seq "$REPEAT"); do
    for mode in async sync; do
        set_mode "$mode"
        for tr in $TRANSPORTS; do
            for tbl in t_bt t_dm; do
                read -r tps lat <<<"$(run_cell "$tr" "$tbl")"
                echo "round $r $mode $tr $tbl: $tps tps, $lat ms"
                TPS[$mode.$tr.$tbl]="${TPS[$mode.$tr.$tbl]:-} $tps"
                LAT[$mode.$tr.$tbl]="${LAT[$mode.$tr.$tbl]:-} $lat"
            done
        done
    done
done
hw=$(psql_ -c "SELECT count(*) FROM t_dm")
mean() { echo "$@" | awk '{s=0; for (i=1;i<=NF;i++) s+=$i; printf "%.1f", s/NF}'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }

{
    echo "# Failover safety: synchronous vs asynchronous standby, $(date +%F)"
    echo
    echo "Command: \`$CMD\` (commit $(git -C "$ROOT" rev-parse --short HEAD))."
    echo "Machine: $(nproc) cores ($(uptime | sed 's/.*load average/load average/')), memnode --shm on the same host,"
    echo "primary and standby on the same host (fsync = off on both: the standby's flush is a write)."
    echo "pgbench: $CLIENTS clients, single-row INSERT (bench/sql/insert.sql), $DURATION s a cell, $REPEAT rounds"
    echo "alternating async and sync; figures are means over the rounds. $hw rows in t_dm at the end."
    echo
    echo "| transport | table | async tps | sync tps | sync/async | async ms | sync ms |"
    echo "|---|---|---|---|---|---|---|"
    for tr in $TRANSPORTS; do
        for tbl in t_bt t_dm; do
            a=$(mean ${TPS[async.$tr.$tbl]}); s=$(mean ${TPS[sync.$tr.$tbl]})
            echo "| $tr | $tbl | $a | $s | $(div "$s" "$a") | $(mean ${LAT[async.$tr.$tbl]}) | $(mean ${LAT[sync.$tr.$tbl]}) |"
        done
    done
    echo
    for tr in $TRANSPORTS; do
        ab=$(awk -v a="$(mean ${LAT[sync.$tr.t_bt]})" -v b="$(mean ${LAT[async.$tr.t_bt]})" 'BEGIN {printf "%.2f", a-b}')
        ad=$(awk -v a="$(mean ${LAT[sync.$tr.t_dm]})" -v b="$(mean ${LAT[async.$tr.t_dm]})" 'BEGIN {printf "%.2f", a-b}')
        echo "- $tr: a synchronous standby adds $ab ms to btree's mean INSERT latency (the commit's wait)"
        echo "  and $ad ms to dmindex's (the commit's wait and the wait before the remote write):"
        echo "  dmindex's own wait costs about $(awk -v a="$ad" -v b="$ab" 'BEGIN {printf "%.2f", a-b}') ms a transaction here."
    done
    echo
    echo "Per round:"
    echo
    for k in "${!TPS[@]}"; do echo "- $k: tps${TPS[$k]}; ms${LAT[$k]}"; done | sort
} >"$OUT"
cat "$OUT"
