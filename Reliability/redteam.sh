#!/usr/bin/env bash
# The red team's findings (issue 15, and issue 37's 37_*; docs/security.md) replayed against the built server: starts
# chronir-server on a temporary data directory with a public directory holding dotfiles and access
# logging at info (and a second one with production scrypt for issue 37 #3), then runs Reliability/redteam.py (one check per finding; FINDING… selects some,
# e.g. `6_login_lockout`, `37_1_stalled_push`). Fails when any attack still works. Issue 37's push
# check needs .build/python-venv (made from Tests/Fakes/requirements.txt when missing) and openssl.
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
# Issue 37 finding 1: a Web Push fake (the tests' venv) and a throwaway CA; Web Push may reach loopback.
make_test_ca "$work" || { echo "openssl: $(cat "$work/openssl.log")" >&2; exit 1; }
REDTEAM_VENV_PYTHON=$(python_venv) REDTEAM_CA=$work/ca.pem REDTEAM_CERT=$work/server.pem REDTEAM_KEY=$work/server.key
export REDTEAM_VENV_PYTHON REDTEAM_CA REDTEAM_CERT REDTEAM_KEY
# A 1 MiB attachment quota: issue 37 #5's check uploads 600 KB, deletes it and uploads it again.
start_server "$work/server.log" --data-dir "$work/data" --password-hashing fast --log-level info --default-tier premium \
    --public-dir "$work/public" --push-allow-private-endpoints --outbound-ca-file "$work/ca.pem" --attachment-quota-user 1048576
echo "server pid $server_pid on $base ($SERVER)"
# Issue 37 #3's flood needs the production scrypt cost (with `fast` hashing no flood saturates the pool):
# a second server with its own data directory, used by that check only.
main_base=$base
mkdir -p "$work/data-scrypt"
start_server "$work/scrypt.log" --data-dir "$work/data-scrypt" --log-level notice
REDTEAM_SCRYPT_BASE=$base REDTEAM_SCRYPT_LOG=$work/scrypt.log
export REDTEAM_SCRYPT_BASE REDTEAM_SCRYPT_LOG
base=$main_base
echo "second server (production scrypt) pid $server_pid on $REDTEAM_SCRYPT_BASE"
python3 Reliability/redteam.py "$base" "$work/data" "$work/server.log" "$ADMIN" "$@"
