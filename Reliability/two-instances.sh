#!/usr/bin/env bash
# Two chronir-server instances on one PostgreSQL database (issue 16): a change made through
# instance A reaches a socket on instance B. Starts a throwaway PostgreSQL cluster (initdb + pg_ctl
# in a temporary directory on a free loopback port, as the postgres user when run as root), two
# servers with --database-url, and Reliability/two_instances.py (N renames through A, each awaited
# on B: p50/p99, exactly once, in order; then a PDF uploaded through each instance downloaded
# byte-equal through the other). Like a deployment's shared mount (docs/attachments.md, "Several
# instances"), B's <data-dir>/attachments is a symbolic link to A's: one directory, one file system.
#
#   Reliability/two-instances.sh [N=200]      (CHRONIR_BIN_DIR picks the binaries)
set -euo pipefail
cd "$(dirname "$0")/.."
source Reliability/lib.sh
find_binaries
n=${1:-200}

work=$(mktemp -d /tmp/chronir-two-XXXXXX)
trap 'server_stop_all; pg_stop; rm -rf "$work"' EXIT
mkdir -p "$work/a" "$work/b"
chmod 700 "$work/a" "$work/b"
mkdir -m 700 "$work/a/attachments"
ln -s "$work/a/attachments" "$work/b/attachments"
pg_start "$work/pg" fsync=off
url=$pg_url

# One server.secret for both: invite codes are keyed by it, so every instance needs the same file.
# Premium: uploads need plus or premium.
start_server "$work/a.log" --data-dir "$work/a" --database-url "$url" --default-tier premium "${no_write_budgets[@]}"
a_port=$server_port
cp "$work/a/server.secret" "$work/b/server.secret"
start_server "$work/b.log" --data-dir "$work/b" --database-url "$url" --default-tier premium "${no_write_budgets[@]}"
b_port=$server_port
echo "instances: A on $a_port, B on $b_port, PostgreSQL on $pg_port"
python3 Reliability/two_instances.py "$a_port" "$b_port" "$n"
