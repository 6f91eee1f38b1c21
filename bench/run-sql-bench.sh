#!/usr/bin/env bash
# run-sql-bench.sh — dmindex against btree at the SQL level, in one run.
#
# Two identical tables of ROWS rows (int8 key k, int4 payload v), one with a
# btree on k and one with a dmindex on k.  For each transport (shm, tcp),
# each memory setting (PHASES, below) and each node cache setting (CACHES:
# "off" and percentages of the dmindex tree's remote size; the server
# restarts between them, the cache being sized at start) the same pgbench
# custom scripts (bench/sql/*.sql: point SELECT, 100-row range SELECT,
# ORDER BY k LIMIT 10, single-row INSERT) run against both tables after a
# warm-up of WARMUP seconds per script and table, and CREATE INDEX is timed
# for both; every figure is reported as a ratio dmindex/btree taken in the
# same server run, with the cache's hit ratio, the remote round trips it
# saved and what offloading did.  Results go to bench/results/sql-<date>.md
# (OUT), with the same rows in a .csv and a chart of the tps ratios in a .png
# next to it.
#
# Leaf formats (LEAF_FORMATS, default "sorted"; docs/design.md §5.1): with
# LEAF_FORMATS='sorted hopscotch' a third copy of the table, t_dh, gets a
# dmindex with WITH (leaf_format = 'hopscotch') and the same cells run on it
# in the same server run, each reported as its own row (column "leaf") with
# its ratio to the same btree figure.  The node cache is then shared by both
# trees and sized as a percentage of their summed remote size.
#
# Memory settings (PHASES, default "all"):
#   all    everything in memory: shared_buffers 2GB, the tables and the btree
#          read into the OS page cache (pg_prewarm) before the warm-up;
#   limit  the situation dmindex exists for, an index larger than the
#          server's memory (MEMLIMIT, e.g. 256M, sets PHASES to "all limit"):
#          the server runs in a memory cgroup (v1) limited to MEMLIMIT, with
#          LIMIT_SHARED_BUFFERS (64MB) and the node cache inside that limit,
#          so the OS page cache it can use cannot hold the btree and btree
#          reads its leaves (and both tables their heap) from disk; the
#          cgroups' page cache is emptied before each such group of cells.
#          The memnode runs outside the cgroup.  The report adds the memory
#          each side used: the cgroup's peak and final usage, the memnode's
#          resident set.
#
#   sudo bash bench/run-sql-bench.sh            # 10M rows, 20 s per cell
#   ROWS=1000000 DURATION=5 sudo bash bench/run-sql-bench.sh
#   LEAF_FORMATS='sorted hopscotch' BENCH_SCRIPTS='point range insert' sudo bash bench/run-sql-bench.sh
#   BENCH_TRANSPORTS=shm BENCH_SCRIPTS='point insert' sudo bash bench/run-sql-bench.sh   # some cells only
#   ROWS=50000000 MEMLIMIT=256M CACHES=5 OFFLOAD=auto sudo bash bench/run-sql-bench.sh # bench/run-sql-memlimit.sh
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
MEMLIMIT=${MEMLIMIT:-}
LIMIT_SHARED_BUFFERS=${LIMIT_SHARED_BUFFERS:-64MB}
OFFLOAD=${OFFLOAD:-}
LEAF_FORMATS=${LEAF_FORMATS:-sorted}
# the table whose dmindex has leaves of format $1
dm_table() {
    case $1 in
        sorted) echo t_dm ;;
        hopscotch) echo t_dh ;;
        *) echo "LEAF_FORMATS: unknown leaf format '$1' (sorted, hopscotch)" >&2; return 1 ;;
    esac
}
DM_TABLES=""
for f in $LEAF_FORMATS; do DM_TABLES="$DM_TABLES $(dm_table "$f")" || exit 2; done
if [ -n "$MEMLIMIT" ]; then PHASES=${PHASES:-all limit}; else PHASES=${PHASES:-all}; fi
MEMNODE_PORT=${MEMNODE_PORT:-7470}
PG_PORT=${PG_PORT:-5470}
OUT=${OUT:-$ROOT/bench/results/sql-$(date +%F).md}
CMD="ROWS=$ROWS DURATION=$DURATION CLIENTS=$CLIENTS CACHES='$CACHES' WARMUP=$WARMUP"
[ "$BENCH_TRANSPORTS" = "shm tcp" ] || CMD="$CMD BENCH_TRANSPORTS='$BENCH_TRANSPORTS'"
[ "$BENCH_SCRIPTS" = "point range orderlimit insert" ] || CMD="$CMD BENCH_SCRIPTS='$BENCH_SCRIPTS'"
[ -z "$MEMLIMIT" ] || CMD="$CMD MEMLIMIT=$MEMLIMIT LIMIT_SHARED_BUFFERS=$LIMIT_SHARED_BUFFERS PHASES='$PHASES'"
[ -z "$OFFLOAD" ] || CMD="$CMD OFFLOAD=$OFFLOAD"
[ "$LEAF_FORMATS" = sorted ] || CMD="$CMD LEAF_FORMATS='$LEAF_FORMATS'"
CMD="$CMD bash bench/run-sql-bench.sh"
case " $PHASES " in *" limit "*) [ -n "$MEMLIMIT" ] || { echo "PHASES has limit: set MEMLIMIT" >&2; exit 2; } ;; esac

# what is measured: the commit and the load at the start (the machine is shared)
COMMIT="$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" status --porcelain -- src memnode bench test | grep -q . && echo ' + uncommitted changes' || true)"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" >/dev/null
make -C "$ROOT" -s install PG_CONFIG="$PG_CONFIG" >/dev/null
WORK=$(make_workdir sqlbench)
# Memory cgroups (v1): "free" (no limit) holds the server while it loads,
# builds the indexes and runs the all-in-memory cells, so that the page cache
# it fills is charged there and can be emptied (memory.force_empty) before
# the limited cells; "limit" holds it during the limited cells.
CGROOT=/sys/fs/cgroup/memory/dmindex-sqlbench-$PG_PORT
if [ -n "$MEMLIMIT" ]; then
    [ -d /sys/fs/cgroup/memory ] || { echo "MEMLIMIT needs the cgroup v1 memory controller at /sys/fs/cgroup/memory" >&2; exit 2; }
    mkdir -p "$CGROOT/free" "$CGROOT/limit"
    echo "$MEMLIMIT" >"$CGROOT/limit/memory.limit_in_bytes"
    export PG_CGROUP=$CGROOT/free
fi
cleanup() {
    stop_pg "$WORK/pg"; stop_memnode "$WORK" "$MEMNODE_PORT"
    if [ -n "$MEMLIMIT" ]; then rmdir "$CGROOT/free" "$CGROOT/limit" "$CGROOT" 2>/dev/null || true; fi
    # the cluster holds both tables (about 10 GB at 50M rows): gone unless KEEP_WORK=1;
    # the server log stays for a look afterwards
    if [ "${KEEP_WORK:-0}" != 1 ] && [ ! -f "$WORK/pg/postmaster.pid" ]; then
        cp "$WORK/pg/server.log" "$WORK/server.log" 2>/dev/null || true
        rm -rf "$WORK/pg"
    fi
}
trap cleanup EXIT
cp "$ROOT"/bench/sql/*.sql "$WORK/"
chown -R "$DM_USER" "$WORK"
start_memnode "$WORK" "$MEMNODE_PORT" --size "${MEMNODE_SIZE:-4G}" --shm --threads 2
MEMNODE_PID=$(pgrep -u "$DM_USER" -f "dmindex-memnode --listen 127.0.0.1:$MEMNODE_PORT" | head -n1)
OFFLOAD_CONF=()
[ -z "$OFFLOAD" ] || OFFLOAD_CONF=("dmindex.offload = '$OFFLOAD'")
start_pg "$WORK/pg" "$PG_PORT" "dmindex.memnodes = '127.0.0.1:$MEMNODE_PORT'" \
    "shared_buffers = 2GB" "maintenance_work_mem = 1GB" "max_wal_size = 8GB" "synchronous_commit = off" \
    "${OFFLOAD_CONF[@]}"
psql_() { as_user "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$WORK/pg" -p "$PG_PORT" -d postgres "$@"; }
ms() { date +%s%3N; }
mb() { echo $(( $1 / 1048576 )); }

echo "== loading $ROWS rows into t_bt and$DM_TABLES"
psql_ -c "CREATE EXTENSION dmindex" -c "CREATE EXTENSION pg_prewarm" \
      -c "CREATE TABLE t_bt (k int8, v int4) WITH (autovacuum_enabled = off)" \
      -c "SET work_mem = '1GB'" \
      -c "INSERT INTO t_bt SELECT g, g % 1000 FROM generate_series(1, $ROWS) g ORDER BY random()" \
      -c "VACUUM ANALYZE t_bt"
for tbl in $DM_TABLES; do
    psql_ -c "CREATE TABLE $tbl (k int8, v int4) WITH (autovacuum_enabled = off)" \
          -c "INSERT INTO $tbl SELECT * FROM t_bt" -c "VACUUM ANALYZE $tbl"
done

declare -A RES
t0=$(ms); psql_ -c "CREATE INDEX t_bt_k ON t_bt USING btree (k)"; t1=$(ms)
RES[create_bt]=$((t1 - t0))
RES[sizes]=$(psql_ -At -c "SELECT format('table %s MB each, btree index %s MB', pg_relation_size('t_bt') / 1048576, pg_relation_size('t_bt_k') / 1048576)")

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

memnode_mem() {   # the memnode's resident set (of which shared memory: its region's touched pages)
    awk '/^VmRSS/ {r=$2} /^RssShmem/ {s=$2} END {printf "memnode RSS %d MB (%d MB of it its shm region)", r/1024, s/1024}' \
        "/proc/$MEMNODE_PID/status"
}

cgroup_mem() {   # cgroup dir -> its peak and current usage, what the current usage is made of
    local cg=$1
    awk -v peak="$(cat "$cg/memory.max_usage_in_bytes")" -v cur="$(cat "$cg/memory.usage_in_bytes")" \
        -v fail="$(cat "$cg/memory.failcnt")" \
        '$1 == "cache" {c=$2} $1 == "rss" {r=$2} $1 == "shmem" {s=$2} END {
         printf "peak %d MB, at the end %d MB (page cache %d MB incl. shared memory %d MB, anonymous %d MB), limit hit %d times",
             peak/1048576, cur/1048576, c/1048576, s/1048576, r/1048576, fail }' "$cg/memory.stat"
}

# phase cache -> restarts the server with that memory and cache setting, ready to warm up
enter_phase() {
    local phase=$1 cache=$2 conf
    mapfile -t conf < <(cache_conf "$cache")
    stop_pg "$WORK/pg"
    if [ "$phase" = limit ]; then
        # empty both cgroups' page cache (what the load and earlier cells read) so
        # the limited server starts cold and can only cache what fits its limit
        sync
        echo 0 >"$CGROOT/free/memory.force_empty"
        echo 0 >"$CGROOT/limit/memory.force_empty"
        echo 0 >"$CGROOT/limit/memory.max_usage_in_bytes"
        echo 0 >"$CGROOT/limit/memory.failcnt"
        PG_CGROUP=$CGROOT/limit restart_pg "$WORK/pg" "shared_buffers = $LIMIT_SHARED_BUFFERS" "${conf[@]}"
        RES[memcfg_$G]="cgroup limit $MEMLIMIT, shared_buffers $LIMIT_SHARED_BUFFERS"
    else
        restart_pg "$WORK/pg" "shared_buffers = 2GB" "${conf[@]}"
        # read the tables and the btree into memory (the OS page cache; the
        # btree into shared_buffers too), so the cells do not wait for the disk
        if [ "$G" != build ]; then
            for tbl in $DM_TABLES; do psql_ -c "SELECT pg_prewarm('$tbl', 'read')" >/dev/null; done
            psql_ -c "SELECT pg_prewarm('t_bt', 'read'), pg_prewarm('t_bt_k', 'buffer')" >/dev/null
        fi
        RES[memcfg_$G]="no limit, shared_buffers 2GB, tables and btree prewarmed"
    fi
    RES[cachecfg_$G]="${conf[*]}"
}

for transport in $BENCH_TRANSPORTS; do
    echo "== transport $transport"
    # the index is built by the server outside the limit: over shm the backend
    # writes the memnode's region itself, and those pages must not be charged
    # to the limited cgroup
    if [ -n "$MEMLIMIT" ]; then G=build enter_phase all off; fi
    REMOTE_BYTES=0
    for f in $LEAF_FORMATS; do
        tbl=$(dm_table "$f")
        psql_ -c "DROP INDEX IF EXISTS ${tbl}_k"
        t0=$(ms)
        PGOPTIONS="-c dmindex.transport=$transport" \
            psql_ -c "CREATE INDEX ${tbl}_k ON $tbl USING dmindex (k) WITH (leaf_format = '$f')"
        t1=$(ms)
        RES[create_${tbl}_$transport]=$((t1 - t0))
        psql_ -c "ANALYZE $tbl"
        # the cache serves every tree: sized on their sum
        REMOTE_BYTES=$((REMOTE_BYTES + $(psql_ -At -c "SELECT remote_bytes FROM dmindex_stats('${tbl}_k')")))
    done
    for phase in $PHASES; do
        for cache in $CACHES; do
            G=${transport}_${phase}_$cache
            echo "   $phase memory, cache $cache"
            enter_phase "$phase" "$cache"
            # warm-up: the same mix on both tables, unmeasured (the node cache fills;
            # pages of the tables and the btree are read as far as memory allows)
            for script in point range orderlimit; do
                for tbl in t_bt $DM_TABLES; do
                    as_user env PGOPTIONS="-c dmindex.transport=$transport" "$PG_BIN/pgbench" -n -h "$WORK/pg" -p "$PG_PORT" \
                        -c "$CLIENTS" -j "$CLIENTS" -T "$WARMUP" -D rows="$ROWS" -D tbl=$tbl -f "$WORK/$script.sql" postgres >/dev/null 2>&1
                done
            done
            psql_ -c "SELECT dmindex_cache_stats_reset(), dmindex_offload_stats_reset()" >/dev/null
            RES[load_$G]=$(cut -d' ' -f1 /proc/loadavg)
            for script in $BENCH_SCRIPTS; do
                for tbl in t_bt $DM_TABLES; do
                    r=$(run_cell "$transport" "$script" "$tbl")
                    RES[${script}_${tbl}_$G]=$r
                    echo "   $phase memory, cache $cache: $script $tbl: $r (tps, ms)"
                done
            done
            RES[cache_$G]=$(psql_ -At -c "SELECT format('%s frames (%s MB), hit ratio %s, %s evictions, %s round trips avoided', capacity_frames, capacity_frames * frame_size / 1048576, coalesce(round(hit_ratio::numeric, 3)::text, '-'), evictions, round_trips_avoided) FROM dmindex_cache_stats()")
            RES[offload_$G]=$(psql_ -At -c "SELECT format('%s: %s offloads, %s fallbacks, decided %s offload / %s one-sided (%s explored), RPC %s µs, read %s µs on average', mode, offloads, fallbacks, decided_offload, decided_one_sided, explored, coalesce(round(avg_rpc_us::numeric, 1)::text, '-'), coalesce(round(avg_read_us::numeric, 1)::text, '-')) FROM dmindex_offload_stats()")
            if [ "$phase" = limit ]; then
                RES[mem_$G]="server cgroup: $(cgroup_mem "$CGROOT/limit"); $(memnode_mem)"
            elif [ -n "$MEMLIMIT" ]; then
                RES[mem_$G]="server cgroup (no limit): $(cgroup_mem "$CGROOT/free"); $(memnode_mem)"
            else
                RES[mem_$G]=$(memnode_mem)
            fi
            RES[load_$G]="${RES[load_$G]} → $(cut -d' ' -f1 /proc/loadavg)"
            echo "   $phase memory, cache $cache: ${RES[cache_$G]}; ${RES[offload_$G]}; ${RES[mem_$G]}; load ${RES[load_$G]}"
        done
    done
    # the plans the cells used, for the record
    for tbl in $DM_TABLES; do
        RES[plan_${tbl}_$transport]=$(PGOPTIONS="-c dmindex.transport=$transport" psql_ -At \
            -c "EXPLAIN (COSTS OFF) SELECT k, v FROM $tbl WHERE k > 5 ORDER BY k LIMIT 10" | tr '\n' ' ')
    done
done
# (dmindex_stats walks the whole tree: outside the limit, which it could exceed)
if [ -n "$MEMLIMIT" ]; then G=build enter_phase all off; fi
stats=""
for tbl in $DM_TABLES; do
    stats="$stats${stats:+; }$(psql_ -At -c "SELECT format('%s leaves: height %s, %s leaves, %s entries, fill %s, %s MB remote', leaf_format, height, leaf_nodes, entries, round(leaf_fill::numeric, 2), remote_bytes / 1048576) FROM dmindex_stats('${tbl}_k')")"
done

phase_label() { if [ "$1" = limit ]; then echo "limit $MEMLIMIT"; else echo all; fi; }
cache_label() { if [ "$1" = off ]; then echo off; else echo "$1%"; fi; }
CSV=${OUT%.md}.csv
PNG=${OUT%.md}.png
{
    echo "test,transport,memory,cache,leaf,btree_tps,dmindex_tps,tps_ratio,btree_ms,dmindex_ms,latency_ratio"
    for transport in $BENCH_TRANSPORTS; do
        for phase in $PHASES; do
            for script in $BENCH_SCRIPTS; do
                for cache in $CACHES; do
                    for f in $LEAF_FORMATS; do
                        G=${transport}_${phase}_$cache
                        read -r tb lb <<<"${RES[${script}_t_bt_$G]}"
                        read -r td ld <<<"${RES[${script}_$(dm_table "$f")_$G]}"
                        printf '%s,%s,%s,%s,%s,%.0f,%.0f,%.2f,%.3f,%.3f,%.2f\n' "$script" "$transport" "$(phase_label "$phase")" \
                            "$(cache_label "$cache")" "$f" "$tb" "$td" "$(echo "$td / $tb" | bc -l)" "$lb" "$ld" "$(echo "$ld / $lb" | bc -l)"
                    done
                done
            done
        done
    done
} >"$CSV"
# the chart: tps ratio dm/bt per test, one bar per transport x memory x cache
awk -F, -v cat=test -v ser=transport,memory,cache,leaf -v val=tps_ratio -f "$ROOT/bench/csv-wide.awk" "$CSV" >"$WORK/chart.csv"
bash "$ROOT/bench/plot-bars.sh" "$WORK/chart.csv" "$PNG" \
    "dmindex / btree throughput, $ROWS rows, $CLIENTS clients ($(date +%F))" "tps ratio dmindex / btree" 1

{
    echo "# SQL benchmark: dmindex vs btree ($(date +%F))"
    echo
    echo "Command: \`$CMD\` (from the repository root, as root); commit $COMMIT"
    echo
    echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, kernel $(uname -r); load average at the start: $LOAD_START, at the end: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared: other work competes for the CPUs; the 1-minute load at the start and end of each group of cells is in the second table)"
    echo
    echo "Setup: $ROWS rows (int8 key, shuffled), one table per index ($(echo "${RES[sizes]}")), $CLIENTS pgbench clients, $DURATION s per cell, one memnode on the same host (${MEMNODE_SIZE:-4G} region, --shm), synchronous_commit off, dmindex.offload ${OFFLOAD:-default}. dmindex tree at the end: $stats."
    echo
    echo "Data: [$(basename "$CSV")]($(basename "$CSV")); chart of the tps ratios: [$(basename "$PNG")]($(basename "$PNG"))."
    echo
    echo "| test | transport | memory | cache | leaves | btree tps | dmindex tps | tps ratio dm/bt | btree ms | dmindex ms | latency ratio dm/bt |"
    echo "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|"
    awk -F, 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 }' "$CSV"
    echo
    echo "| transport | memory | cache | server settings | node cache over the measured cells | offloading over the measured cells | memory used at the end of the cells | 1-min load start → end |"
    echo "|---|---|---|---|---|---|---|---|"
    for transport in $BENCH_TRANSPORTS; do
        for phase in $PHASES; do
            for cache in $CACHES; do
                G=${transport}_${phase}_$cache
                echo "| $transport | $(phase_label "$phase") | $(cache_label "$cache") | ${RES[memcfg_$G]}; \`${RES[cachecfg_$G]}\` | ${RES[cache_$G]} | ${RES[offload_$G]} | ${RES[mem_$G]} | ${RES[load_$G]} |"
            done
        done
    done
    echo
    echo "| CREATE INDEX | ms | ratio dm/bt |"
    echo "|---|---:|---:|"
    echo "| btree | ${RES[create_bt]} | 1.00 |"
    for transport in $BENCH_TRANSPORTS; do
        for f in $LEAF_FORMATS; do
            tbl=$(dm_table "$f")
            printf '| dmindex, %s leaves (%s) | %s | %.2f |\n' "$f" "$transport" "${RES[create_${tbl}_$transport]}" \
                "$(echo "${RES[create_${tbl}_$transport]} / ${RES[create_bt]}" | bc -l)"
        done
    done
    echo
    for f in $LEAF_FORMATS; do
        tbl=$(dm_table "$f")
        echo "Plans (ORDER BY k LIMIT 10 on $tbl, $f leaves):$(for transport in $BENCH_TRANSPORTS; do printf ' %s: `%s`' "$transport" "${RES[plan_${tbl}_$transport]}"; done)"
        echo
    done
    echo
    echo "Notes: with the cache off every dmindex descent reads height+1 nodes from the memnode (over shm"
    echo "a few loads, over tcp a network round trip per level).  With the cache (DEX policy: inner nodes"
    echo "always, leaves with probability 0.1) the upper levels are local; writes go through the cache to"
    echo "the memnode without remote locks (this server owns the whole key range).  INSERT is buffered per"
    echo "transaction and written at commit after the WAL flush.  Each group of cells is warmed for ${WARMUP} s"
    echo "per script and table (point, range, orderlimit) after the server's restart, and its btree and"
    echo "dmindex cells come from the same server run."
    if [ "$LEAF_FORMATS" != sorted ]; then
        echo "Leaf formats: each dmindex row names its leaves; the formats' indexes are on copies of the"
        echo "same table (t_dm sorted, t_dh hopscotch), share the node cache (sized on their summed remote"
        echo "size) and are measured in the same server run against the same btree cells.  On hopscotch"
        echo "leaves the point cell's equality scan reads the key's neighbourhood (one point lookup); range,"
        echo "orderlimit and the insert's leaf lock read whole leaves (docs/design.md §5.1)."
    fi
    if [ -n "$MEMLIMIT" ]; then
        echo "In the limited cells the server (postmaster, backends, shared memory, the node cache and the page"
        echo "cache of its files) runs in a memory cgroup limited to $MEMLIMIT; both cgroups' page cache is"
        echo "emptied before them.  The memnode runs outside: its resident set is the other side of the bill."
    fi
} >"$OUT"
cat "$OUT"
