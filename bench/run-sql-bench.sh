#!/usr/bin/env bash
# run-sql-bench.sh — dmindex against btree at the SQL level, in one run.
#
# Two identical tables of ROWS rows (int8 key k, int4 payload v), one with a
# btree on k and one with a dmindex on k.  For each transport (shm, tcp) and
# each node cache setting (CACHES: "off" and percentages of the dmindex
# tree's remote size; the server restarts between them, the cache being
# sized at start) the same pgbench custom scripts (bench/sql/*.sql: point
# SELECT, 100-row range SELECT, ORDER BY k LIMIT 10, single-row INSERT) run
# against both tables after a warm-up of WARMUP seconds, and CREATE INDEX is
# timed for both; every figure is reported as a ratio dmindex/btree taken in
# the same run, with the cache's hit ratio and the remote round trips it
# saved.  Results go to bench/results/sql-<date>.md with the command that
# produced them.
#
#   sudo bash bench/run-sql-bench.sh            # 10M rows, 20 s per cell
#   ROWS=1000000 DURATION=5 sudo bash bench/run-sql-bench.sh
#   BENCH_TRANSPORTS=shm BENCH_SCRIPTS='point insert' sudo bash bench/run-sql-bench.sh   # some cells only
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/test/common.sh"
ROWS=${ROWS:-10000000}
DURATION=${DURATION:-20}
CLIENTS=${CLIENTS:-2}
CACHES=${CACHES:-off 10}
WARMUP=${WARMUP:-10}
BENCH_TRANSPORTS=${BENCH_TRANSPORTS:-shm tcp}
BENCH_SCRIPTS=${BENCH_SCRIPTS:-point range orderlimit insert}
MEMNODE_PORT=${MEMNODE_PORT:-7470}
PG_PORT=${PG_PORT:-5470}
OUT=${OUT:-$ROOT/bench/results/sql-$(date +%F).md}
CMD="ROWS=$ROWS DURATION=$DURATION CLIENTS=$CLIENTS CACHES='$CACHES' WARMUP=$WARMUP"
[ "$BENCH_TRANSPORTS" = "shm tcp" ] || CMD="$CMD BENCH_TRANSPORTS='$BENCH_TRANSPORTS'"
[ "$BENCH_SCRIPTS" = "point range orderlimit insert" ] || CMD="$CMD BENCH_SCRIPTS='$BENCH_SCRIPTS'"
CMD="$CMD bash bench/run-sql-bench.sh"

make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" >/dev/null
make -C "$ROOT" -s install PG_CONFIG="$PG_CONFIG" >/dev/null
WORK=$(make_workdir sqlbench)
cleanup() { stop_pg "$WORK/pg"; stop_memnode "$WORK" "$MEMNODE_PORT"; }
trap cleanup EXIT
cp "$ROOT"/bench/sql/*.sql "$WORK/"
chown -R "$DM_USER" "$WORK"
start_memnode "$WORK" "$MEMNODE_PORT" --size 4G --shm --threads 2
start_pg "$WORK/pg" "$PG_PORT" "dmindex.memnodes = '127.0.0.1:$MEMNODE_PORT'" \
    "shared_buffers = 2GB" "maintenance_work_mem = 1GB" "max_wal_size = 8GB" "synchronous_commit = off"
psql_() { as_user "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$WORK/pg" -p "$PG_PORT" -d postgres "$@"; }
ms() { date +%s%3N; }

echo "== loading $ROWS rows into two tables"
psql_ -c "CREATE EXTENSION dmindex" \
      -c "CREATE TABLE t_bt (k int8, v int4) WITH (autovacuum_enabled = off)" \
      -c "CREATE TABLE t_dm (k int8, v int4) WITH (autovacuum_enabled = off)" \
      -c "INSERT INTO t_bt SELECT g, g % 1000 FROM generate_series(1, $ROWS) g ORDER BY random()" \
      -c "INSERT INTO t_dm SELECT * FROM t_bt" \
      -c "VACUUM ANALYZE t_bt" -c "VACUUM ANALYZE t_dm"

declare -A RES
t0=$(ms); psql_ -c "CREATE INDEX t_bt_k ON t_bt USING btree (k)"; t1=$(ms)
RES[create_bt]=$((t1 - t0))

run_cell() {   # transport script table -> tps and mean latency
    local transport=$1 script=$2 tbl=$3
    as_user env PGOPTIONS="-c dmindex.transport=$transport" "$PG_BIN/pgbench" -n -h "$WORK/pg" -p "$PG_PORT" \
        -c "$CLIENTS" -j "$CLIENTS" -T "$DURATION" -D rows="$ROWS" -D tbl="$tbl" -f "$WORK/$script.sql" postgres \
        2>/dev/null | awk '/^latency average/ {lat=$4} /^tps/ {tps=$3} END {printf "%s %s", tps, lat}'
}

cache_conf() {   # setting ("off" or a percentage of the tree) -> postgresql.conf lines
    if [ "$1" = off ]; then
        printf '%s\n' "dmindex.cache_policy = off"
    else
        local kb=$(( REMOTE_BYTES * $1 / 100 / 1024 ))
        printf '%s\n' "dmindex.cache_policy = dex" "dmindex.cache_size = ${kb}kB"
    fi
}

for transport in $BENCH_TRANSPORTS; do
    echo "== transport $transport"
    psql_ -c "DROP INDEX IF EXISTS t_dm_k"
    t0=$(ms); PGOPTIONS="-c dmindex.transport=$transport" psql_ -c "CREATE INDEX t_dm_k ON t_dm USING dmindex (k)"; t1=$(ms)
    RES[create_dm_$transport]=$((t1 - t0))
    psql_ -c "ANALYZE t_dm"
    REMOTE_BYTES=$(psql_ -At -c "SELECT remote_bytes FROM dmindex_stats('t_dm_k')")
    for cache in $CACHES; do
        mapfile -t conf < <(cache_conf "$cache")
        restart_pg "$WORK/pg" "${conf[@]}"
        RES[cachecfg_${transport}_$cache]="${conf[*]}"
        # warm-up: the same mix, unmeasured (the cache fills; the table's pages are read)
        for script in point range orderlimit; do
            as_user env PGOPTIONS="-c dmindex.transport=$transport" "$PG_BIN/pgbench" -n -h "$WORK/pg" -p "$PG_PORT" \
                -c "$CLIENTS" -j "$CLIENTS" -T "$WARMUP" -D rows="$ROWS" -D tbl=t_dm -f "$WORK/$script.sql" postgres >/dev/null 2>&1
        done
        psql_ -c "SELECT dmindex_cache_stats_reset()" >/dev/null
        for script in $BENCH_SCRIPTS; do
            for tbl in t_bt t_dm; do
                r=$(run_cell "$transport" "$script" "$tbl")
                RES[${script}_${tbl}_${transport}_$cache]=$r
                echo "   cache $cache: $script $tbl: $r (tps, ms)"
            done
        done
        RES[cache_${transport}_$cache]=$(psql_ -At -c "SELECT format('%s frames (%s MB), hit ratio %s, %s evictions, %s round trips avoided', capacity_frames, capacity_frames * frame_size / 1048576, coalesce(round(hit_ratio::numeric, 3)::text, '-'), evictions, round_trips_avoided) FROM dmindex_cache_stats()")
        echo "   cache $cache: ${RES[cache_${transport}_$cache]}"
    done
    # the plans the cells used, for the record
    RES[plan_$transport]=$(PGOPTIONS="-c dmindex.transport=$transport" psql_ -At \
        -c "EXPLAIN (COSTS OFF) SELECT k, v FROM t_dm WHERE k > 5 ORDER BY k LIMIT 10" | tr '\n' ' ')
done
stats=$(psql_ -At -c "SELECT format('height %s, %s leaves, %s entries, fill %s, %s MB remote', height, leaf_nodes, entries, round(leaf_fill::numeric, 2), remote_bytes / 1048576) FROM dmindex_stats('t_dm_k')")

{
    echo "# SQL benchmark: dmindex vs btree ($(date +%F))"
    echo
    echo "Command: \`$CMD\` (from the repository root, as root)"
    echo
    echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "Setup: $ROWS rows (int8 key, shuffled), one table per index, $CLIENTS pgbench clients, $DURATION s per cell, one memnode on the same host (4 GiB region, --shm), synchronous_commit off. dmindex tree at the end: $stats."
    echo
    echo "| test | transport | cache | btree tps | dmindex tps | tps ratio dm/bt | btree ms | dmindex ms | latency ratio dm/bt |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
    for transport in $BENCH_TRANSPORTS; do
        for script in $BENCH_SCRIPTS; do
            for cache in $CACHES; do
                read -r tb lb <<<"${RES[${script}_t_bt_${transport}_$cache]}"
                read -r td ld <<<"${RES[${script}_t_dm_${transport}_$cache]}"
                printf '| %s | %s | %s | %.0f | %.0f | %.2f | %.3f | %.3f | %.2f |\n' "$script" "$transport" \
                    "$([ "$cache" = off ] && echo off || echo "$cache%")" "$tb" "$td" \
                    "$(echo "$td / $tb" | bc -l)" "$lb" "$ld" "$(echo "$ld / $lb" | bc -l)"
            done
        done
    done
    echo
    echo "| transport | cache | settings | cache over the measured cells |"
    echo "|---|---|---|---|"
    for transport in $BENCH_TRANSPORTS; do
        for cache in $CACHES; do
            echo "| $transport | $cache | \`${RES[cachecfg_${transport}_$cache]}\` | ${RES[cache_${transport}_$cache]} |"
        done
    done
    echo
    echo "| CREATE INDEX | ms | ratio dm/bt |"
    echo "|---|---:|---:|"
    echo "| btree | ${RES[create_bt]} | 1.00 |"
    for transport in $BENCH_TRANSPORTS; do
        printf '| dmindex (%s) | %s | %.2f |\n' "$transport" "${RES[create_dm_$transport]}" \
            "$(echo "${RES[create_dm_$transport]} / ${RES[create_bt]}" | bc -l)"
    done
    echo
    echo "Plans (ORDER BY k LIMIT 10 on t_dm):$(for transport in $BENCH_TRANSPORTS; do printf ' %s: `%s`' "$transport" "${RES[plan_$transport]}"; done)"
    echo
    echo "Notes: with the cache off every dmindex descent reads height+1 nodes from the memnode (over shm"
    echo "a few loads, over tcp a network round trip per level).  With the cache (DEX policy: inner nodes"
    echo "always, leaves with probability 0.1) the upper levels are local; writes go through the cache to"
    echo "the memnode without remote locks (this server owns the whole key range).  INSERT is buffered per"
    echo "transaction and written at commit after the WAL flush.  The cache is warmed for ${WARMUP} s per"
    echo "script before the cells; the btree cells are rerun after each restart so ratios come from the"
    echo "same server run."
} >"$OUT"
cat "$OUT"
