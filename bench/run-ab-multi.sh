#!/usr/bin/env bash
# run-ab-multi.sh ROUNDS SECS NAME=REPO:PGCOPY ...: several builds side by side (each REPO built, and installed
# into its own PostgreSQL copy PGCOPY, e.g. made with DESTDIR); every side set up over shm (memnode + PostgreSQL, ROWS rows, dmindex),
# then per round one pgbench cell per side in rotated order; prints per cell tps, transactions, backend CPU ticks.
# Summary: bench/ab-summary.py OUTPUT [BASELINE] (median tps ratio and backend CPU per transaction against BASELINE).
# Used for the shm A/B of issue 10 (bench/results/sql-2026-11-27-ab-shm.md), where single runs drift by +-30%.
set -uo pipefail
ROUNDS=$1; SECS=$2; shift 2; ROWS=${ROWS:-2000000}; CLIENTS=${CLIENTS:-2}
W=${ABW:-/tmp/bis-multi}; as() { runuser -u postgres -- "$@"; }
names=(); declare -A REPO PGC MP PP; i=0
for a in "$@"; do n=${a%%=*}; r=${a#*=}; names+=($n); REPO[$n]=${r%%:*}; PGC[$n]=${r#*:}; MP[$n]=$((7741+i)); PP[$n]=$((5741+i)); i=$((i+1)); done
rm -rf $W; mkdir -p $W; chown postgres $W
cleanup() { for s in "${names[@]}"; do as ${PGC[$s]}/usr/lib/postgresql/15/bin/pg_ctl -D $W/$s -m immediate stop >/dev/null 2>&1; pkill -f "dmindex-memnode --listen 127.0.0.1:${MP[$s]} "; done; }
trap cleanup EXIT
for s in "${names[@]}"; do
  B=${PGC[$s]}/usr/lib/postgresql/15/bin
  FR=; ${REPO[$s]}/build/dmindex-memnode --help 2>&1 | grep -q -- --fresh-region && FR=--fresh-region
  as ${REPO[$s]}/build/dmindex-memnode --listen 127.0.0.1:${MP[$s]} --size 2G --shm --threads 2 $FR > $W/mn-$s.log 2>&1 &
  sleep 1
  as $B/initdb -D $W/$s -A trust >/dev/null 2>&1
  cat >> $W/$s/postgresql.conf <<CONF
shared_preload_libraries = 'dmindex'
dmindex.memnodes = '127.0.0.1:${MP[$s]}'
dmindex.transport = 'shm'
listen_addresses = ''
unix_socket_directories = '$W'
port = ${PP[$s]}
synchronous_commit = off
shared_buffers = 512MB
dmindex.cache_policy = off
CONF
  [ -n "${EXTRA_CONF:-}" ] && [[ " ${EXTRA_ON:-} " == *" $s "* ]] && echo "$EXTRA_CONF" >> $W/$s/postgresql.conf
  as $B/pg_ctl -D $W/$s -l $W/pg-$s.log -w start >/dev/null || exit 1
  as $B/psql -X -q -h $W -p ${PP[$s]} -d postgres -c "CREATE EXTENSION dmindex" -c "CREATE TABLE t (k int8, v int4)" \
    -c "INSERT INTO t SELECT g, 0 FROM generate_series(1, $ROWS) g ORDER BY random()" \
    -c "CREATE INDEX t_k ON t USING dmindex (k)" -c "VACUUM ANALYZE t" || exit 1
done
cp "$(dirname "$0")/sql/${SCRIPT:-point}.sql" $W/s.sql; chown postgres $W/s.sql
pmpid() { head -1 $W/$1/postmaster.pid; }
ct() { awk '{print $16+$17}' /proc/$(pmpid $1)/stat; }
cell() { local s=$1 T=$2; local c0=$(ct $s)
  local out=$(as ${PGC[$s]}/usr/lib/postgresql/15/bin/pgbench -n -h $W -p ${PP[$s]} -c $CLIENTS -j $CLIENTS -T $T -D rows=$ROWS -D tbl=t -f $W/s.sql postgres 2>/dev/null)
  sleep 0.4; local c1=$(ct $s)
  echo "$s $(echo "$out" | awk '/^tps/ {printf "%.0f", $3}') $(echo "$out" | awk '/actually processed/ {print $NF}' | cut -d/ -f1) $((c1-c0))"
}
for s in "${names[@]}"; do cell $s 3 >/dev/null; done
N=${#names[@]}
for r in $(seq 1 $ROUNDS); do
  line="R $r"
  for k in $(seq 0 $((N-1))); do s=${names[$(( (k + r) % N ))]}; line="$line | $(cell $s $SECS)"; done
  echo "$line"
done
