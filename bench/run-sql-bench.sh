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
# Key types (KEY_TYPES, default "int8"): each key type named gets its own
# btree table and dmindex twin(s), loaded from its own shuffle of 1..ROWS, and
# its own scripts for the same four workloads; the cells of all key types run
# in the same server run, each row of the report naming its key (column
# "key"), each ratio against the btree of its key type:
#   int8   t_bt / t_dm (k int8, v int4), index (k), bench/sql/*.sql — what the
#          benchmark always measured, unchanged;
#   text   t_bt_text / t_dm_text (k text, v int4), index (k): e-mail-like keys
#          'user' || lpad(n, 9, '0') || '@example.com' (25 bytes; zero padding
#          keeps their order that of n, so a range of 100 values is 100 rows),
#          bench/sql/text/*.sql.  The column takes the database's default
#          collation if dmindex can encode strings under it (C, POSIX, C.UTF-8:
#          bytewise), otherwise COLLATE "C"; the report says which;
#   multi  t_bt_multi / t_dm_multi (customer int4, created int8, v int4),
#          index (customer, created): customer = (n - 1) / 1000 + 1 (1000 rows
#          each), created = n; point = equality on both, range = a customer
#          and 100 consecutive created values, ORDER BY created LIMIT 10
#          within a customer, bench/sql/multi/*.sql.
# Hopscotch leaves hold 8-byte keys only: LEAF_FORMATS' hopscotch applies to
# int8 (the other key types get sorted leaves alone).  Before the cells each
# script's query is EXPLAINed on every table with that transport: the run
# stops unless it uses the table's index (and, for orderlimit, no Sort).
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
#   KEY_TYPES='int8 text multi' BENCH_TRANSPORTS=shm ROWS=2000000 sudo bash bench/run-sql-bench.sh
#   BENCH_TRANSPORTS=shm BENCH_SCRIPTS='point insert' sudo bash bench/run-sql-bench.sh   # some cells only
#   ROWS=50000000 MEMLIMIT=256M CACHES=5 OFFLOAD=auto sudo bash bench/run-sql-bench.sh # bench/run-sql-memlimit.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/test/common.sh"
ROWS=${ROWS:-10000000}
DURATION=${DURATION:-20}
# REPEATS > 1: each script's cells run that many times in turn on the btree and
# dmindex tables (order reversed every other time, so neither side always runs
# first), and a ratio is the median of the per-turn ratios, each from cells a
# few seconds apart: on a shared machine whose speed drifts over minutes
REPEATS=${REPEATS:-1}
CLIENTS=${CLIENTS:-2}
CACHES=${CACHES:-off 10}
WARMUP=${WARMUP:-10}
BENCH_TRANSPORTS=${BENCH_TRANSPORTS:-shm tcp}
BENCH_SCRIPTS=${BENCH_SCRIPTS:-point range orderlimit insert}
MEMLIMIT=${MEMLIMIT:-}
LIMIT_SHARED_BUFFERS=${LIMIT_SHARED_BUFFERS:-64MB}
OFFLOAD=${OFFLOAD:-}
LEAF_FORMATS=${LEAF_FORMATS:-sorted}
KEY_TYPES=${KEY_TYPES:-int8}
# Per key type $1: the tables' names, columns and load (the SELECT list over g,
# the shuffled 1..ROWS), the indexes' columns, the scripts.  int8's are what
# this benchmark measured before key types existed (old results stay comparable).
key_check() {
    case $1 in
        int8|text|multi) ;;
        *) echo "KEY_TYPES: unknown key type '$1' (int8, text, multi)" >&2; return 1 ;;
    esac
}
key_suffix() { [ "$1" = int8 ] || echo "_$1"; }
bt_table() { echo "t_bt$(key_suffix "$1")"; }
# the table of key type $2 whose dmindex has leaves of format $1
dm_table() {
    case $1 in
        sorted) echo "t_dm$(key_suffix "$2")" ;;
        hopscotch) echo "t_dh$(key_suffix "$2")" ;;
        *) echo "LEAF_FORMATS: unknown leaf format '$1' (sorted, hopscotch)" >&2; return 1 ;;
    esac
}
# hopscotch leaves hash 8-byte keys: text and two-column keys get sorted leaves only
key_leaf_formats() { if [ "$1" = int8 ]; then echo "$LEAF_FORMATS"; else echo sorted; fi; }
dm_tables() { local f; for f in $(key_leaf_formats "$1"); do printf ' %s' "$(dm_table "$f" "$1")"; done; }
key_columns() {
    case $1 in
        int8) echo "k int8, v int4" ;;
        text) echo "k text$TEXT_COLLATE, v int4" ;;
        multi) echo "customer int4, created int8, v int4" ;;
    esac
}
key_load() {
    case $1 in
        int8) echo "g, g % 1000" ;;
        text) echo "'user' || lpad(g::text, 9, '0') || '@example.com', g % 1000" ;;
        multi) echo "(g - 1) / 1000 + 1, g, g % 1000" ;;
    esac
}
key_index() { if [ "$1" = multi ]; then echo "customer, created"; else echo k; fi; }
script_file() { if [ "$1" = int8 ]; then echo "$WORK/$2.sql"; else echo "$WORK/$1/$2.sql"; fi; }
for key in $KEY_TYPES; do key_check "$key" || exit 2; done
for f in $LEAF_FORMATS; do dm_table "$f" int8 >/dev/null || exit 2; done
case " $KEY_TYPES " in *" multi "*) [ "$ROWS" -ge 1000 ] || { echo "KEY_TYPES multi needs ROWS >= 1000 (1000 rows per customer)" >&2; exit 2; } ;; esac
DM_TABLES=""
for key in $KEY_TYPES; do DM_TABLES="$DM_TABLES$(dm_tables "$key")"; done
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
[ "$KEY_TYPES" = int8 ] || CMD="$CMD KEY_TYPES='$KEY_TYPES'"
[ "$REPEATS" = 1 ] || CMD="$CMD REPEATS=$REPEATS"
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
cp -r "$ROOT"/bench/sql/. "$WORK/"
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

psql_ -c "CREATE EXTENSION dmindex" -c "CREATE EXTENSION pg_prewarm"
# text keys: the database's default collation if dmindex encodes strings under
# it (its own check, the one CREATE INDEX makes), else "C"
TEXT_COLLATE=""
DB_COLLATE=$(psql_ -At -c "SELECT datcollate FROM pg_database WHERE datname = current_database()")
TEXT_COLLATION="the database default ($DB_COLLATE)"
if ! psql_ -c "SELECT dmindex_key_encode('x'::text)" >/dev/null 2>&1; then
    TEXT_COLLATE=' COLLATE "C"'; TEXT_COLLATION="\"C\" (the database default, $DB_COLLATE, is one dmindex refuses)"
fi
declare -A RES
for key in $KEY_TYPES; do
    bt=$(bt_table "$key")
    echo "== loading $ROWS rows ($key keys) into $bt and$(dm_tables "$key")"
    psql_ -c "CREATE TABLE $bt ($(key_columns "$key")) WITH (autovacuum_enabled = off)" \
          -c "SET work_mem = '1GB'" \
          -c "INSERT INTO $bt SELECT $(key_load "$key") FROM generate_series(1, $ROWS) g ORDER BY random()" \
          -c "VACUUM ANALYZE $bt"
    for tbl in $(dm_tables "$key"); do
        psql_ -c "CREATE TABLE $tbl ($(key_columns "$key")) WITH (autovacuum_enabled = off)" \
              -c "INSERT INTO $tbl SELECT * FROM $bt" -c "VACUUM ANALYZE $tbl"
    done
    t0=$(ms); psql_ -c "CREATE INDEX ${bt}_k ON $bt USING btree ($(key_index "$key"))"; t1=$(ms)
    RES[create_bt_$key]=$((t1 - t0))
    RES[table_mb_$key]=$(psql_ -At -c "SELECT pg_relation_size('$bt') / 1048576")
    RES[btsize_$key]=$(psql_ -At -c "SELECT pg_relation_size('${bt}_k')")
done
# check_plans' helpers
psql_ -c "CREATE TABLE bench_plan (tbl text, plan text)" \
      -c "CREATE FUNCTION bench_explain(q text) RETURNS SETOF text LANGUAGE plpgsql AS
          \$\$ DECLARE r text; BEGIN FOR r IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP RETURN NEXT r; END LOOP; END \$\$"

run_cell() {   # transport key script table -> tps and mean latency
    local transport=$1 key=$2 script=$3 tbl=$4
    as_user env PGOPTIONS="-c dmindex.transport=$transport" "$PG_BIN/pgbench" -n -h "$WORK/pg" -p "$PG_PORT" \
        -c "$CLIENTS" -j "$CLIENTS" -T "$DURATION" -D rows="$ROWS" -D tbl="$tbl" -f "$(script_file "$key" "$script")" postgres \
        2>/dev/null | awk '/^latency average/ {lat=$4} /^tps/ {tps=$3} END {printf "%s %s", tps, lat}'
}

# The plan each script's query gets on each table: the script with its query
# (the line that is not a \set) wrapped so that pgbench, having drawn the
# values and substituted them, stores EXPLAIN's output in bench_plan; then
# the plan must use the table's index (any scan type), and orderlimit's must
# come in index order (no Sort).  The run stops otherwise: a cell whose plan
# is a sequential scan or a sort would measure something else.
check_plans() {   # transport -> RES[plan_<table>_<script>]; exit 1 on a wrong plan
    local transport=$1 key script tbl plan f
    for key in $KEY_TYPES; do
        for script in point range orderlimit; do
            f=$WORK/plan-$key-$script.sql
            awk '/^\\/ { print; next } { sub(/;[ \t]*$/, ""); printf "INSERT INTO bench_plan SELECT %s, string_agg(p, %s) FROM bench_explain($q$%s$q$) p;\n", "$q$:tbl$q$", "$q$ / $q$", $0 }' \
                "$(script_file "$key" "$script")" >"$f"
            for tbl in $(bt_table "$key") $(dm_tables "$key"); do
                psql_ -c "TRUNCATE bench_plan"
                as_user env PGOPTIONS="-c dmindex.transport=$transport" "$PG_BIN/pgbench" -n -h "$WORK/pg" -p "$PG_PORT" \
                    -c 1 -t 1 -D rows="$ROWS" -D tbl="$tbl" -f "$f" postgres >/dev/null 2>&1
                plan=$(psql_ -At -c "SELECT plan FROM bench_plan WHERE tbl = '$tbl'")
                case "$plan" in
                    *" ${tbl}_k"*) ;;
                    *) echo "plan check: $script on $tbl ($transport) does not use ${tbl}_k: '$plan'" >&2; exit 1 ;;
                esac
                if [ "$script" = orderlimit ] && [[ "$plan" == *Sort* ]]; then
                    echo "plan check: orderlimit on $tbl ($transport) sorts: '$plan'" >&2; exit 1
                fi
                RES[plan_${tbl}_$script]=$plan
            done
        done
    done
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
            for key in $KEY_TYPES; do
                bt=$(bt_table "$key")
                psql_ -c "SELECT pg_prewarm('$bt', 'read'), pg_prewarm('${bt}_k', 'buffer')" >/dev/null
            done
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
    for key in $KEY_TYPES; do
        for f in $(key_leaf_formats "$key"); do
            tbl=$(dm_table "$f" "$key")
            psql_ -c "DROP INDEX IF EXISTS ${tbl}_k"
            t0=$(ms)
            PGOPTIONS="-c dmindex.transport=$transport" \
                psql_ -c "CREATE INDEX ${tbl}_k ON $tbl USING dmindex ($(key_index "$key")) WITH (leaf_format = '$f')"
            t1=$(ms)
            RES[create_${tbl}_$transport]=$((t1 - t0))
            psql_ -c "ANALYZE $tbl"
            # the tree as built (the cells' inserts grow it, by a number of rows that differs per side)
            read -r rb ent <<<"$(psql_ -At -F ' ' -c "SELECT remote_bytes, entries FROM dmindex_stats('${tbl}_k')")"
            RES[dmsize_${tbl}_$transport]="$rb $ent"
            # the cache serves every tree: sized on their sum
            REMOTE_BYTES=$((REMOTE_BYTES + rb))
        done
    done
    check_plans "$transport"
    for phase in $PHASES; do
        for cache in $CACHES; do
            G=${transport}_${phase}_$cache
            echo "   $phase memory, cache $cache"
            enter_phase "$phase" "$cache"
            # warm-up: the same mix on both tables, unmeasured (the node cache fills;
            # pages of the tables and the btree are read as far as memory allows)
            for script in point range orderlimit; do
                for key in $KEY_TYPES; do
                    for tbl in $(bt_table "$key") $(dm_tables "$key"); do
                        as_user env PGOPTIONS="-c dmindex.transport=$transport" "$PG_BIN/pgbench" -n -h "$WORK/pg" -p "$PG_PORT" \
                            -c "$CLIENTS" -j "$CLIENTS" -T "$WARMUP" -D rows="$ROWS" -D tbl=$tbl -f "$(script_file "$key" "$script")" postgres >/dev/null 2>&1
                    done
                done
            done
            psql_ -c "SELECT dmindex_cache_stats_reset(), dmindex_offload_stats_reset()" >/dev/null
            RES[load_$G]=$(cut -d' ' -f1 /proc/loadavg)
            for key in $KEY_TYPES; do
                for script in $BENCH_SCRIPTS; do
                    tbls="$(bt_table "$key") $(dm_tables "$key")"
                    for ((turn = 1; turn <= REPEATS; turn++)); do
                        order=$tbls
                        [ $((turn % 2)) = 1 ] || order=$(printf '%s\n' $tbls | tac | tr '\n' ' ')
                        for tbl in $order; do
                            r=$(run_cell "$transport" "$key" "$script" "$tbl")
                            RES[${script}_${tbl}_$G]="${RES[${script}_${tbl}_$G]:-}${RES[${script}_${tbl}_$G]:+;}$r"
                            echo "   $phase memory, cache $cache: $script $tbl: $r (tps, ms)"
                        done
                    done
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
done
# (dmindex_stats walks the whole tree: outside the limit, which it could exceed)
if [ -n "$MEMLIMIT" ]; then G=build enter_phase all off; fi
stats=""
for tbl in $DM_TABLES; do
    stats="$stats${stats:+; }$(psql_ -At -c "SELECT format('$tbl, %s leaves: height %s, %s leaves, %s entries, fill %s, %s MB remote', leaf_format, height, leaf_nodes, entries, round(leaf_fill::numeric, 2), remote_bytes / 1048576) FROM dmindex_stats('${tbl}_k')")"
done

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# RES cell -> "tps latency" of each turn, one a line
turns() { tr ';' '\n' <<<"$1"; }
phase_label() { if [ "$1" = limit ]; then echo "limit $MEMLIMIT"; else echo all; fi; }
cache_label() { if [ "$1" = off ]; then echo off; else echo "$1%"; fi; }
CSV=${OUT%.md}.csv
PNG=${OUT%.md}.png
{
    echo "test,transport,memory,cache,leaf,key,btree_tps,dmindex_tps,tps_ratio,btree_ms,dmindex_ms,latency_ratio,tps_ratios"
    for transport in $BENCH_TRANSPORTS; do
        for phase in $PHASES; do
            for key in $KEY_TYPES; do
                for script in $BENCH_SCRIPTS; do
                    for cache in $CACHES; do
                        for f in $(key_leaf_formats "$key"); do
                            G=${transport}_${phase}_$cache
                            # per turn: btree and dmindex tps and latency, their ratios
                            mapfile -t bt_turns < <(turns "${RES[${script}_$(bt_table "$key")_$G]}")
                            mapfile -t dm_turns < <(turns "${RES[${script}_$(dm_table "$f" "$key")_$G]}")
                            tbs=(); lbs=(); tds=(); lds=(); trs=(); lrs=()
                            for i in "${!bt_turns[@]}"; do
                                read -r tb lb <<<"${bt_turns[$i]}"; read -r td ld <<<"${dm_turns[$i]}"
                                tbs+=("$tb"); lbs+=("$lb"); tds+=("$td"); lds+=("$ld")
                                trs+=("$(printf '%.2f' "$(echo "$td / $tb" | bc -l)")"); lrs+=("$(echo "$ld / $lb" | bc -l)")
                            done
                            printf '%s,%s,%s,%s,%s,%s,%.0f,%.0f,%.2f,%.3f,%.3f,%.2f,%s\n' "$script" "$transport" "$(phase_label "$phase")" \
                                "$(cache_label "$cache")" "$f" "$key" "$(median "${tbs[@]}")" "$(median "${tds[@]}")" "$(median "${trs[@]}")" \
                                "$(median "${lbs[@]}")" "$(median "${lds[@]}")" "$(median "${lrs[@]}")" "${trs[*]}"
                        done
                    done
                done
            done
        done
    done
} >"$CSV"
# the chart: tps ratio dm/bt per key type and test, one bar per transport x memory x cache x leaves
awk -F, -v cat=key,test -v ser=transport,memory,cache,leaf -v val=tps_ratio -f "$ROOT/bench/csv-wide.awk" "$CSV" >"$WORK/chart.csv"
bash "$ROOT/bench/plot-bars.sh" "$WORK/chart.csv" "$PNG" \
    "dmindex / btree throughput, $ROWS rows, $CLIENTS clients ($(date +%F))" "tps ratio dmindex / btree" 1

{
    echo "# SQL benchmark: dmindex vs btree ($(date +%F))"
    echo
    echo "Command: \`$CMD\` (from the repository root, as root); commit $COMMIT"
    echo
    echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, kernel $(uname -r); load average at the start: $LOAD_START, at the end: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared: other work competes for the CPUs; the 1-minute load at the start and end of each group of cells is in the second table)"
    echo
    echo "Setup: $ROWS rows per table (keys: $KEY_TYPES, each table loaded in random order$(case " $KEY_TYPES " in *" text "*) echo "; the text column's collation: $TEXT_COLLATION" ;; esac)), one table per index (sizes below), $CLIENTS pgbench clients, $DURATION s per cell, one memnode on the same host (${MEMNODE_SIZE:-4G} region, --shm), synchronous_commit off, dmindex.offload ${OFFLOAD:-default}. dmindex tree at the end: $stats."
    echo
    echo "Data: [$(basename "$CSV")]($(basename "$CSV")); chart of the tps ratios: [$(basename "$PNG")]($(basename "$PNG"))."
    echo
    if [ "$REPEATS" -gt 1 ]; then
        echo "Each cell ran $REPEATS times in turn on both tables; tps and ms are medians over the turns, a ratio is"
        echo "the median of the per-turn ratios (each turn's tps ratio in the last column)."
        echo
    fi
    echo "| test | transport | memory | cache | leaves | key | btree tps | dmindex tps | tps ratio dm/bt | btree ms | dmindex ms | latency ratio dm/bt | tps ratio per turn |"
    echo "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---|"
    awk -F, 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 }' "$CSV"
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
    echo "| key | CREATE INDEX | ms | ratio dm/bt |"
    echo "|---|---|---:|---:|"
    for key in $KEY_TYPES; do
        echo "| $key | btree | ${RES[create_bt_$key]} | 1.00 |"
        for transport in $BENCH_TRANSPORTS; do
            for f in $(key_leaf_formats "$key"); do
                tbl=$(dm_table "$f" "$key")
                printf '| %s | dmindex, %s leaves (%s) | %s | %.2f |\n' "$key" "$f" "$transport" "${RES[create_${tbl}_$transport]}" \
                    "$(echo "${RES[create_${tbl}_$transport]} / ${RES[create_bt_$key]}" | bc -l)"
            done
        done
    done
    echo
    echo "Index sizes as built (before the cells' inserts): btree pg_relation_size, dmindex remote_bytes of"
    echo "dmindex_stats() (the memnode memory its nodes take), each per row of the table:"
    echo
    echo "| key | table MB | btree MB | btree bytes/row | dmindex | dmindex MB | dmindex bytes/entry | size ratio dm/bt |"
    echo "|---|---:|---:|---:|---|---:|---:|---:|"
    for key in $KEY_TYPES; do
        bts=${RES[btsize_$key]}
        for transport in $BENCH_TRANSPORTS; do
            for f in $(key_leaf_formats "$key"); do
                tbl=$(dm_table "$f" "$key")
                read -r rb ent <<<"${RES[dmsize_${tbl}_$transport]}"
                printf '| %s | %s | %.1f | %.1f | %s leaves (%s) | %.1f | %.1f | %.2f |\n' "$key" "${RES[table_mb_$key]}" \
                    "$(echo "$bts / 1048576" | bc -l)" "$(echo "$bts / $ROWS" | bc -l)" "$f" "$transport" \
                    "$(echo "$rb / 1048576" | bc -l)" "$(echo "$rb / $ent" | bc -l)" "$(echo "$rb / $bts" | bc -l)"
            done
        done
    done
    echo
    echo "Plans (EXPLAIN (COSTS OFF) of each script's query with drawn values, checked before the cells:"
    echo "each uses its table's index; orderlimit without a Sort):"
    echo
    echo "| key | table | point | range | orderlimit |"
    echo "|---|---|---|---|---|"
    for key in $KEY_TYPES; do
        for tbl in $(bt_table "$key") $(dm_tables "$key"); do
            echo "| $key | $tbl | \`${RES[plan_${tbl}_point]}\` | \`${RES[plan_${tbl}_range]}\` | \`${RES[plan_${tbl}_orderlimit]}\` |"
        done
    done
    echo
    echo "Notes: with the cache off every dmindex descent reads height+1 nodes from the memnode (over shm"
    echo "a few loads, over tcp a network round trip per level).  With the cache (DEX policy: inner nodes"
    echo "always, leaves with probability 0.1) the upper levels are local; writes go through the cache to"
    echo "the memnode without remote locks (this server owns the whole key range).  INSERT is buffered per"
    echo "transaction and written at commit after the WAL flush.  Each group of cells is warmed for ${WARMUP} s"
    echo "per script and table (point, range, orderlimit) after the server's restart, and its btree and"
    echo "dmindex cells come from the same server run."
    if [ "$KEY_TYPES" != int8 ]; then
        echo "Key types: each row names its key type; its ratio is to the btree of the same key type, measured"
        echo "in the same server run.  All trees share the node cache (sized on their summed remote size)."
        echo "Text and two-column keys are stored as byte keys (docs/design.md §5.2: a marker byte per column,"
        echo "integers 8 bytes big-endian, strings escaped and terminated): 28 bytes for these e-mails, 18 for"
        echo "(customer, created); they have no hopscotch leaves and no offloading (8-byte keys only)."
    fi
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
