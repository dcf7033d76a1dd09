#!/usr/bin/env bash
# The notification pipeline end to end with the real chronir-server and the real clock — what the
# unit tests, on a manual clock, cannot show (Reliability/README.md has what it measured).
#
#   Reliability/notifications.sh [BIN_DIR]      (≈ 1–2 min: it waits for the next whole minute)
#
# On loopback, in a temporary directory: a throwaway CA and a server certificate for 127.0.0.1 (the
# openssl CLI, as TestSupport's TestCertificateAuthority makes them), the operator-webhook fake
# (Tests/Fakes/webhook_receiver.py) and the Web Push fake (Tests/Fakes/webpush_service.py) in the
# venv the Swift tests use (.build/python-venv, from Tests/Fakes/requirements.txt; made here when
# missing or stale, under the same lock and stamp as TestSupport's PythonEnvironment), and
# chronir-server with the webhook, Web Push to private addresses and the CA trusted outbound.
# Reliability/notifications.py then checks that a shared alarm due at the next whole UTC minute
# reaches the webhook exactly once and B's Web Push endpoint decrypted, with the lag measured; and
# that a completion committed just before a SIGKILL (the webhook answering 503 meanwhile) reaches
# the webhook after the restart (at-least-once; duplicates counted). Binaries: BIN_DIR, else
# $CHRONIR_BIN_DIR, else .build/release, else .build/debug. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Reliability/lib.sh
if [ $# -gt 0 ]; then export CHRONIR_BIN_DIR=$1; fi
find_binaries

fail() { echo "NOTIFICATIONS FAIL: $*" >&2; exit 1; }

# kill_started — SIGKILL every process notifications.py recorded in $work/pids (by pid; normally it
# killed them itself already).
kill_started() {
    local pid
    [ -f "$work/pids" ] || return 0
    while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$work/pids"
}

python=$(python_venv) || fail "cannot create .build/python-venv (python3-venv and PyPI needed the first time)"
work=$(mktemp -d)
# CHRONIR_KEEP_WORK=1 keeps the directory (the server's and the fakes' logs) for a look afterwards.
trap 'kill_started; if [ -n "${CHRONIR_KEEP_WORK:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi' EXIT

make_test_ca "$work" || fail "openssl: $(cat "$work/openssl.log")"

started=$SECONDS
if ! "$python" Reliability/notifications.py --server "$SERVER" --work "$work" \
    --ca "$work/ca.pem" --cert "$work/server.pem" --key "$work/server.key"; then
    for log in server webhook webpush; do
        [ -s "$work/$log.log" ] || continue
        echo "--- $log log (last 30 lines)" >&2
        tail -30 "$work/$log.log" >&2
    done
    fail "the driver failed: its FAIL line and the logs above"
fi
echo "notifications: every check passed, $((SECONDS - started)) s"
