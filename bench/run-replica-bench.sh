#!/usr/bin/env bash
# run-replica-bench.sh — DEX §4 at the SQL level: a primary and two hot
# standbys reading one remote tree, the key space split between them, with
# point reads routed by key range (each instance asked only for keys of its
# own range) against the same reads unrouted (every instance asked for keys
# anywhere), with one, two and three instances serving.
#
# Every instance has a node cache of CACHE_PCT percent of the index's
# remote size.  A map of N ranges (dmindex_set_partitions, instances 0..N-1)
# is installed for each N; each instance runs the same pgbench point-lookup
# script for DURATION seconds after WARMUP seconds, all instances at once.
# Reported per instance: lookups per second, the cache's hit ratio, and
# cache misses per lookup (each miss is one remote node read); and the
# aggregate lookups per second.  DEX's claim, which this measures: with
# routing, an instance's cache only needs its own range, so the same cache
# holds more of what it is asked for.  Results go to
# bench/results/replica-<date>.md with the command that produced them.
#
#   sudo bash bench/run-replica-bench.sh                 # 2M rows
#   ROWS=200000 DURATION=5 WARMUP=2 sudo bash bench/run-replica-bench.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/test/common.sh"
ROWS=${ROWS:-2000000}
DURATION=${DURATION:-15}
WARMUP=${WARMUP:-10}
CLIENTS=${CLIENTS:-1}
CACHE_PCT=${CACHE_PCT:-20}
# leaf admission probability: 1 so that the caches reach their steady state within the warm-up
LEAF_ADMISSION=${LEAF_ADMISSION:-1}
MEMNODE_PORT=${MEMNODE_PORT:-7480}
PG_PORT=${PG_PORT:-5480}
OUT=${OUT:-$ROOT/bench/results/replica-$(date +%F).md}
CMD="ROWS=$ROWS DURATION=$DURATION WARMUP=$WARMUP CLIENTS=$CLIENTS CACHE_PCT=$CACHE_PCT LEAF_ADMISSION=$LEAF_ADMISSION bash bench/run-replica-bench.sh"

make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" >/dev/null
make -C "$ROOT" -s install PG_CONFIG="$PG_CONFIG" >/dev/null
WORK=$(make_workdir replicabench)
NODES=("$WORK/i0" "$WORK/i1" "$WORK/i2")
cleanup() {
    for d in "${NODES[@]}"; do stop_pg "$d"; done
    stop_memnode "$WORK" "$MEMNODE_PORT"
}
trap cleanup EXIT
chown -R "$DM_USER" "$WORK"
start_memnode "$WORK" "$MEMNODE_PORT" --size 2G --shm --threads 2

port_of() { echo $((PG_PORT + $1)); }
psql_i() {   # instance, psql arguments...
    local i=$1; shift
    as_user "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "${NODES[$i]}" -p "$(port_of "$i")" -d postgres "$@"
}

# The primary (instance 0), its table and index, sized before the cache is.
start_pg "${NODES[0]}" "$(port_of 0)" "dmindex.memnodes = '127.0.0.1:$MEMNODE_PORT'" \
    "dmindex.instance_id = 0" "wal_level = replica" "max_wal_senders = 4" \
    "max_replication_slots = 4" "hot_standby = on" "hot_standby_feedback = on" \
    "shared_buffers = 512MB" "maintenance_work_mem = 512MB" "max_wal_size = 4GB" \
    "synchronous_commit = off"
echo "== loading $ROWS rows"
psql_i 0 -c "CREATE EXTENSION dmindex" \
    -c "CREATE TABLE t (k int8, v int4) WITH (autovacuum_enabled = off)" \
    -c "INSERT INTO t SELECT g, g % 1000 FROM generate_series(1, $ROWS) g ORDER BY random()" \
    -c "CREATE INDEX t_k ON t USING dmindex (k)" -c "VACUUM ANALYZE t" \
    -c "SELECT pg_create_physical_replication_slot('s1', true), pg_create_physical_replication_slot('s2', true)"
REMOTE_BYTES=$(psql_i 0 -At -c "SELECT remote_bytes FROM dmindex_stats('t_k')")
CACHE_KB=$((REMOTE_BYTES * CACHE_PCT / 100 / 1024))
echo "== index: $REMOTE_BYTES remote bytes; caches of ${CACHE_KB}kB ($CACHE_PCT%)"
restart_pg "${NODES[0]}" "dmindex.cache_policy = dex" "dmindex.cache_size = ${CACHE_KB}kB" \
    "dmindex.cache_leaf_admission = $LEAF_ADMISSION"

# Two standbys from base backups, each its own instance id and slot.
for i in 1 2; do
    as_user "$PG_BIN/pg_basebackup" -D "${NODES[$i]}" -h "${NODES[0]}" -p "$(port_of 0)" \
        -X stream -S "s$i" -R >/dev/null
    {
        echo "port = $(port_of "$i")"
        echo "unix_socket_directories = '${NODES[$i]}'"
        echo "dmindex.instance_id = $i"
    } >>"${NODES[$i]}/postgresql.conf"
    as_user "$PG_BIN/pg_ctl" -D "${NODES[$i]}" -l "${NODES[$i]}/server.log" -w start >/dev/null
done
for i in 1 2; do
    for _ in $(seq 1 120); do
        [ "$(psql_i "$i" -At -c "SELECT count(*) >= $ROWS FROM t" 2>/dev/null)" = t ] && break
        sleep 1
    done
done

cat >"$WORK/lookup.sql" <<'EOF'
\set k random(:lo, :hi)
SELECT v FROM t WHERE k = :k;
EOF
chown "$DM_USER" "$WORK/lookup.sql"

# run N mode: N instances at once; prints one line per instance:
# "i tps hit_ratio misses_per_lookup"
run_cell() {
    local n=$1 mode=$2 i pids=()
    local -a lo hi
    for ((i = 0; i < n; i++)); do
        if [ "$mode" = routed ]; then
            lo[i]=$((ROWS * i / n + 1)); hi[i]=$((ROWS * (i + 1) / n))
        else
            lo[i]=1; hi[i]=$ROWS
        fi
    done
    # warm-up on every instance at once, then the measured run on every
    # instance at once; the cache stats cover the measured run only
    for ((i = 0; i < n; i++)); do
        as_user "$PG_BIN/pgbench" -n -h "${NODES[$i]}" -p "$(port_of "$i")" -c "$CLIENTS" -j "$CLIENTS" \
            -T "$WARMUP" -D lo="${lo[i]}" -D hi="${hi[i]}" -f "$WORK/lookup.sql" postgres >/dev/null 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    pids=()
    for ((i = 0; i < n; i++)); do
        psql_i "$i" -c "SELECT dmindex_cache_stats_reset()" >/dev/null
    done
    for ((i = 0; i < n; i++)); do
        (
            tps=$(as_user "$PG_BIN/pgbench" -n -h "${NODES[$i]}" -p "$(port_of "$i")" -c "$CLIENTS" \
                -j "$CLIENTS" -T "$DURATION" -D lo="${lo[i]}" -D hi="${hi[i]}" -f "$WORK/lookup.sql" postgres \
                2>/dev/null | awk '/^tps/ {print $3}')
            stats=$(psql_i "$i" -At -F ' ' -c "SELECT round(hit_ratio::numeric, 3), misses FROM dmindex_cache_stats()")
            echo "$i $tps $stats"
        ) >"$WORK/cell-$i.out" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    for ((i = 0; i < n; i++)); do
        read -r id tps hr misses <"$WORK/cell-$i.out"
        awk -v id="$id" -v tps="$tps" -v hr="$hr" -v m="$misses" -v d="$DURATION" \
            'BEGIN {printf "%s %.0f %s %.2f\n", id, tps, hr, (tps > 0 ? m / (tps * d) : 0)}'
    done
}

declare -a ROWS_OUT
for n in 1 2 3; do
    # a map of n ranges: instance i owns keys (ROWS*i/n, ROWS*(i+1)/n]
    bounds=$(for ((i = 1; i < n; i++)); do printf '%s%d' "$([ "$i" -gt 1 ] && echo ,)" $((ROWS * i / n + 1)); done)
    insts=$(for ((i = 0; i < n; i++)); do printf '%s%d' "$([ "$i" -gt 0 ] && echo ,)" "$i"; done)
    psql_i 0 -c "SELECT dmindex_set_partitions('t_k', '{$bounds}'::int8[], '{$insts}'::int[])" >/dev/null
    sleep 2   # standbys pick up the new epoch at their next index open
    for mode in unrouted routed; do
        echo "== $n instance(s), $mode"
        total=0
        while read -r id tps hr mpl; do
            ROWS_OUT+=("| $n | $mode | $id | $tps | $hr | $mpl |")
            total=$((total + tps))
        done < <(run_cell "$n" "$mode")
        ROWS_OUT+=("| $n | $mode | all | **$total** | | |")
    done
done

mkdir -p "$(dirname "$OUT")"
{
    echo "# Replicas with key ranges: routed vs unrouted point reads ($(date +%F))"
    echo
    echo "Command: \`$CMD\`"
    echo
    echo "Machine: $(nproc) cores, $(awk '/model name/ {sub(/.*: /, ""); print; exit}' /proc/cpuinfo)."
    echo "$ROWS rows, index $REMOTE_BYTES remote bytes, node cache ${CACHE_KB}kB per instance"
    echo "($CACHE_PCT% of the index, leaf admission $LEAF_ADMISSION), $CLIENTS pgbench client(s) per instance, ${DURATION}s per cell after"
    echo "${WARMUP}s of warm-up; instance 0 is the primary, 1 and 2 hot standbys (hot_standby_feedback,"
    echo "slots); all share one memnode (shm) on the same host.  With n instances the map has n"
    echo "ranges; routed: instance i is asked only for keys of its range; unrouted: for any key."
    echo
    echo "| instances | reads | instance | lookups/s | cache hit ratio | remote reads per lookup |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS_OUT[@]}"
} >"$OUT"
cat "$OUT"
