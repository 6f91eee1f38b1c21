#!/usr/bin/env bash
# lower-others.sh KEEP_GROUP PATTERN: every 2 s, set the autogroup nice of every process to 19 unless it is in
# autogroup KEEP_GROUP (e.g. this shell's: the benchmark driver) or is a postgres whose postmaster's
# command line matches PATTERN (the benchmark's server: PostgreSQL children each setsid, so each has
# its own autogroup).  With autogroup scheduling (kernel.sched_autogroup_enabled=1) plain nice only
# orders processes inside one group; an autogroup's nice weighs the whole group against the others.
# Builtins only (no fork per process): the loop itself must not load the machine.
KEEP=$1; PAT=${2:-sqlbench}
while :; do
  for d in /proc/[0-9]*; do
    read -r g 2>/dev/null < $d/autogroup || continue
    case "$g" in "/autogroup-$KEEP "*|*"nice 19") continue ;; esac
    read -r c 2>/dev/null < $d/comm
    if [ "$c" = postgres ]; then
      # the postmaster (its -D names the data directory) or one of its children
      mapfile -d '' parts < $d/cmdline 2>/dev/null; [[ "${parts[*]}" == *"$PAT"* ]] && continue
      read -r st 2>/dev/null < $d/stat; st=${st##*) }; set -- $st
      mapfile -d '' parts < /proc/$2/cmdline 2>/dev/null; [[ "${parts[*]}" == *"$PAT"* ]] && continue
    fi
    echo 19 > $d/autogroup 2>/dev/null
  done
  sleep 2
done
