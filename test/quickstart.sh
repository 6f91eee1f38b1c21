#!/usr/bin/env bash
# quickstart.sh — the README's first command.  On a fresh Debian 12 machine
# (as root): installs what is needed, builds and installs dmindex, starts a
# memnode and a PostgreSQL that uses it, and runs the main job
# (test/quickstart.sql).  Both servers keep running so you can try it:
#     psql -h /tmp/dmindex-quickstart/pg -p 5499 -U postgres
# Stop them with:  bash test/quickstart.sh stop
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${DMINDEX_QUICKSTART_DIR:-/tmp/dmindex-quickstart}
MEMNODE_PORT=${MEMNODE_PORT:-7400}
PG_PORT=${PG_PORT:-5499}

if [ "$(id -u)" -ne 0 ]; then
    echo "quickstart.sh installs packages and starts servers as user postgres: run it as root (sudo)." >&2
    exit 1
fi
bash "$ROOT/test/install-deps.sh"
. "$ROOT/test/common.sh"

if [ "${1:-}" = "stop" ]; then
    stop_pg "$WORK/pg"
    stop_memnode "$WORK" "$MEMNODE_PORT"
    echo "stopped"
    exit 0
fi

echo "== building and installing"
make -C "$ROOT" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" >/dev/null
make -C "$ROOT" -s install PG_CONFIG="$PG_CONFIG" >/dev/null

echo "== starting a memnode on 127.0.0.1:$MEMNODE_PORT and PostgreSQL on port $PG_PORT"
stop_pg "$WORK/pg"
stop_memnode "$WORK" "$MEMNODE_PORT"
rm -rf "$WORK"
mkdir -p "$WORK"
chown "$DM_USER" "$WORK"
start_memnode "$WORK" "$MEMNODE_PORT" --size 1G --shm
cat "$WORK/memnode-$MEMNODE_PORT.out"
start_pg "$WORK/pg" "$PG_PORT" "dmindex.memnodes = '127.0.0.1:$MEMNODE_PORT'"

echo "== main job (test/quickstart.sql)"
as_user "$PG_BIN/psql" -X -v ON_ERROR_STOP=1 -h "$WORK/pg" -p "$PG_PORT" -d postgres -f "$ROOT/test/quickstart.sql"

echo
echo "Servers are running. Connect:  psql -h $WORK/pg -p $PG_PORT -U $DM_USER"
echo "Stop them:                    bash $ROOT/test/quickstart.sh stop"
