#!/usr/bin/env bash
# Installs what dmindex needs on Debian 12 (run as root): the compiler,
# PostgreSQL 15 server and headers, libnuma (memnode NUMA binding), libssl-dev
# (libcrypto: the authentication handshake's HMAC), clang (libFuzzer targets
# of test/fuzz), Perl's IPC::Run (PostgreSQL's TAP test framework), libicu-dev
# (ICU sort keys of string keys), locales (localedef, test/t/030) and gdb
# (the stack of a test's hung child, test/lib/testio.c).  Quick
# when all is present.  With package names as arguments it installs those
# instead (bench/install-bench-deps.sh).
set -euo pipefail
PKGS="build-essential postgresql-15 postgresql-server-dev-15 postgresql-contrib libnuma-dev libssl-dev libucx-dev ucx-utils clang libipc-run-perl bc libicu-dev locales gdb"
[ $# -eq 0 ] || PKGS="$*"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "== installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q $missing
fi
