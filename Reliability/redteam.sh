#!/usr/bin/env bash
# The red team's findings (issue 15, and issue 37's 37_*; docs/security.md) replayed against the built server: starts
# chronir-server on a temporary data directory with a public directory holding dotfiles and access
# logging at info, then runs Reliability/redteam.py (one check per finding; FINDING… selects some,
# e.g. `6_login_lockout`). Fails when any attack still works.
#
#   Reliability/redteam.sh [FINDING…]        (CHRONIR_BIN_DIR=DIR picks the binaries)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Reliability/lib.sh
find_binaries
# The checks register a few dozen accounts from 127.0.0.1: lift the per-address registration limit
# (finding 2 is Reliability/connection-limits.sh's, at its default).
export CHRONIR_REGISTRATIONS_PER_IP_PER_HOUR=1000000 CHRONIR_REGISTRATIONS_PER_HOUR=1000000
work=$(mktemp -d)
trap 'server_stop_all; rm -rf "$work"' EXIT
mkdir -p "$work/public/.git" "$work/public/.well-known" "$work/data"
chmod 755 "$work/data"  # as the red team had it: an existing, world-readable directory (finding 10)
echo '<h1>home</h1>' >"$work/public/index.html"
echo 'secret' >"$work/public/.hidden"
echo '[core]' >"$work/public/.git/config"
echo 'Contact: mailto:security@example.com' >"$work/public/.well-known/security.txt"
# A 1 MiB attachment quota: issue 37 #5's check uploads 600 KB, deletes it and uploads it again.
start_server "$work/server.log" --data-dir "$work/data" --password-hashing fast --log-level info --default-tier premium \
    --public-dir "$work/public" --attachment-quota-user 1048576
echo "server pid $server_pid on $base ($SERVER)"
python3 Reliability/redteam.py "$base" "$work/data" "$work/server.log" "$ADMIN" "$@"
