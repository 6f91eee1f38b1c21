# common.sh — shell functions shared by the quickstart, the test runner and
# the SQL benchmarks: start/stop a memnode and a throwaway PostgreSQL cluster,
# and run a pg_regress-style suite (pg_regress, pg_isolation_regress) against
# a temporary instance with a memnode.
# PostgreSQL refuses to run as root, and a memnode that exports its region
# to PostgreSQL must run as the same user, so both run as $DM_USER.
# Source it; it expects $ROOT (the repository) to be set.

PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PG_BIN=$("$PG_CONFIG" --bindir)
DM_USER=${DM_USER:-postgres}

as_user() {
    if [ "$(id -un)" = "$DM_USER" ]; then "$@"; else runuser -u "$DM_USER" -- "$@"; fi
}

# start_memnode WORKDIR PORT [extra flags...]: starts a memnode owned by
# $DM_USER, waits for its ready line, records its pid in WORKDIR/memnode-PORT.pid
start_memnode() {
    local dir=$1 port=$2; shift 2
    local bin=${DM_MEMNODE:-$ROOT/build/dmindex-memnode}
    local out=$dir/memnode-$port.out
    # started directly (not through a shell function, which would leave a
    # waiting subshell holding the caller's stdout open)
    if [ "$(id -un)" = "$DM_USER" ]; then
        "$bin" --listen "127.0.0.1:$port" "$@" >"$out" 2>"$dir/memnode-$port.log" </dev/null &
    else
        runuser -u "$DM_USER" -- "$bin" --listen "127.0.0.1:$port" "$@" >"$out" 2>"$dir/memnode-$port.log" </dev/null &
    fi
    local pid=$!
    for _ in $(seq 1 100); do
        if grep -q '^dmindex-memnode ready' "$out" 2>/dev/null; then
            echo "$pid" >"$dir/memnode-$port.pid"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "memnode on port $port did not start:" >&2
    cat "$dir/memnode-$port.log" >&2
    return 1
}

stop_memnode() {
    local dir=$1 port=$2
    local pidf=$dir/memnode-$port.pid
    [ -f "$pidf" ] || return 0
    # runuser forwards the signal to the memnode, which exits cleanly
    kill -TERM "$(cat "$pidf")" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$(cat "$pidf")" 2>/dev/null || break; sleep 0.1; done
    pkill -KILL -u "$DM_USER" -f "dmindex-memnode --listen 127.0.0.1:$port" 2>/dev/null || true
    rm -f "$pidf"
    # a --shm region file outlives its memnode (a restart would reattach): a test's goes with it
    rm -f "/dev/shm/dmindex-memnode-$port"
}

# pg_ctl start, in the memory cgroup (v1) directory $PG_CGROUP when that is
# set: the server and every process it forks are charged there (the SQL
# benchmark limits a server's memory that way; bench/run-sql-bench.sh).
pg_ctl_start() {
    local data=$1
    (
        if [ -n "${PG_CGROUP:-}" ]; then echo "$BASHPID" >"$PG_CGROUP/cgroup.procs"; fi
        as_user "$PG_BIN/pg_ctl" -D "$data" -l "$data/server.log" -w start >/dev/null
    ) || { cat "$data/server.log" >&2; return 1; }
}

# start_pg DATADIR PORT [extra postgresql.conf lines...]: initdb + start,
# listening only on a Unix socket in DATADIR.
start_pg() {
    local data=$1 port=$2; shift 2
    as_user "$PG_BIN/initdb" -D "$data" -A trust -U "$DM_USER" --no-sync >"$data.initdb.log" 2>&1 || {
        cat "$data.initdb.log" >&2; return 1; }
    {
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$data'"
        echo "port = $port"
        echo "shared_preload_libraries = 'dmindex'"
        echo "fsync = off"
        for line in "$@"; do echo "$line"; done
    } >>"$data/postgresql.conf"
    pg_ctl_start "$data"
}

# restart a cluster made by start_pg with more settings (later lines win)
restart_pg() {
    local data=$1; shift
    stop_pg "$data"
    for line in "$@"; do echo "$line"; done >>"$data/postgresql.conf"
    pg_ctl_start "$data"
}

stop_pg() {
    local data=$1
    [ -f "$data/postmaster.pid" ] && as_user "$PG_BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
}

# a work directory $DM_USER can write
make_workdir() {
    local d
    d=$(mktemp -d "${TMPDIR:-/tmp}/dmindex-$1.XXXXXX")
    chown "$DM_USER" "$d" 2>/dev/null || true
    chmod 755 "$d"
    echo "$d"
}

# run_regress_suite NAME DRIVER MEMNODE_PORT PG_PORT SCHEDULE PATH...:
# copies PATH... (input and expected files) and SCHEDULE (the test names)
# into a fresh work directory, starts a memnode on MEMNODE_PORT and runs
# DRIVER (pg_regress or pg_isolation_regress) over the schedule's tests on a
# temporary instance on PG_PORT configured for dmindex: preloaded, using that
# memnode, a small node cache that evicts, prepared transactions enabled.
# Prints the driver's output and diffs; sets suite_passed and suite_failed,
# one per test file (a suite that runs nothing, or whose memnode does not
# start, counts one failure).
run_regress_suite() {
    local name=$1 driver=$2 mport=$3 pport=$4 schedule=$5; shift 5
    local work ok bad
    work=$(make_workdir "$name")
    suite_passed=0
    suite_failed=0
    cp -r "$@" "$work/"
    cp "$schedule" "$work/schedule"
    chown -R "$DM_USER" "$work"
    # REGRESS_TRANSPORT=ucx: the memnode exports its region through UCX
    # (anonymous, so ucp_mem_map allocates it) and the server uses it
    local region=(--shm) transport_conf=""
    if [ "${REGRESS_TRANSPORT:-}" = ucx ]; then
        region=(--ucx)
        transport_conf="dmindex.transport = 'ucx'"
    fi
    # REGRESS_OFFLOAD=always|auto|off: the suite's server runs with that dmindex.offload
    local offload_conf=""
    if [ -n "${REGRESS_OFFLOAD:-}" ]; then
        offload_conf="dmindex.offload = '$REGRESS_OFFLOAD'"
    fi
    # REGRESS_LEAF_FORMAT=sorted|hopscotch: indexes built without the
    # leaf_format option get those leaves (dmindex.default_leaf_format)
    local leaf_conf=""
    if [ -n "${REGRESS_LEAF_FORMAT:-}" ]; then
        leaf_conf="dmindex.default_leaf_format = '$REGRESS_LEAF_FORMAT'"
    fi
    if ! start_memnode "$work" "$mport" --size 256M "${region[@]}" --chunk-size 1M --fresh-region; then
        suite_failed=1
        return
    fi
    { printf "shared_preload_libraries = 'dmindex'\ndmindex.memnodes = '127.0.0.1:%s'\n%s\n%s\n%s\n" "$mport" "$transport_conf" "$offload_conf" "$leaf_conf"
      cat "$ROOT/test/regress.conf"; } >"$work/regress.conf"
    chown "$DM_USER" "$work/regress.conf"
    # shellcheck disable=SC2046
    (cd "$work" && as_user "$driver" --inputdir=. --bindir="$PG_BIN" \
        --temp-instance="$work/tmp_check" --temp-config="$work/regress.conf" \
        --port="$pport" --load-extension=dmindex $(cat schedule)) \
        >"$work/regress.out" 2>&1
    cat "$work/regress.out"
    ok=$(grep -cE '\.\.\. ok' "$work/regress.out" || true)
    bad=$(grep -cE '\.\.\. FAILED|\.\.\. failed' "$work/regress.out" || true)
    suite_passed=$ok
    suite_failed=$bad
    if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then
        echo "$name ran no test"
        suite_failed=1
    fi
    [ -f "$work/regression.diffs" ] && cat "$work/regression.diffs"
    stop_memnode "$work" "$mport"
}
