#!/usr/bin/env bash
# Crash durability: write load against chronir-server, SIGKILL at a random moment, restart, check.
#
#   Reliability/crash.sh [ROUNDS=20] [normal|full]
#
# Each round starts the server on the same temporary data directory, runs Reliability/crash_load.py
# (4 writer threads: registrations, group creation, invite codes, joins, shared alarms, completions),
# kills the server with SIGKILL 0.1–2.5 s (random) after the round's first acknowledged write, then
# checks the killed database: `chronir-admin db check` (integrity_check + foreign_key_check), `chronir-admin audit verify` (the
# change log's hash chain) and `crash_load.py verify` (every write the client saw acknowledged is
# present, no partial write, change log seq gap-free). Binaries: $CHRONIR_BIN_DIR or .build/release
# or .build/debug. Exits non-zero on the first failed check.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Reliability/lib.sh
rounds=${1:-20}
durability=${2:-normal}
find_binaries

# Every account below is registered from 127.0.0.1: lift the per-address registration limit
# (docs/security-limits.md; Reliability/connection-limits.sh tests it at its default).
export CHRONIR_REGISTRATIONS_PER_IP_PER_HOUR=1000000 CHRONIR_REGISTRATIONS_PER_HOUR=1000000
work=$(mktemp -d)
trap 'server_stop_all; rm -rf "$work"' EXIT
data=$work/data
acks=$work/acks.jsonl
log=$work/server.log
: >"$acks"
fail() { echo "CRASH FAIL (round $round): $*" >&2; tail -20 "$log" >&2; server_stop_all; trap - EXIT; echo "kept $work" >&2; exit 1; }

started=$SECONDS
for round in $(seq 1 "$rounds"); do
    start_server "$log" --data-dir "$data" --durability "$durability" --password-hashing fast \
        --default-tier premium --log-level notice "${no_write_budgets[@]}" || fail "start"
    python3 Reliability/crash_load.py load "$base" "$acks" --workers 4 --tag "r$round" >"$work/load.out" 2>&1 &
    load_pid=$!
    before=$(wc -l <"$acks")
    for _ in $(seq 1 200); do  # the load is under way once this round's first write is acknowledged
        [ "$(wc -l <"$acks")" -gt "$before" ] && break
        sleep 0.05
    done
    delay_ms=$((100 + RANDOM % 2400))
    sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
    server_stop "$server_pid"  # SIGKILL, reaped
    wait "$load_pid" || fail "load client: $(cat "$work/load.out")"
    acked=$(grep -o '[0-9]* writes acknowledged' "$work/load.out" | grep -o '^[0-9]*')

    "$ADMIN" db check --data-dir "$data" >"$work/check.out" 2>&1 || fail "db check: $(cat "$work/check.out")"
    "$ADMIN" audit verify --data-dir "$data" >"$work/audit.out" 2>&1 || fail "audit verify: $(cat "$work/audit.out")"
    python3 Reliability/crash_load.py verify "$data/chronir.sqlite" "$acks" >"$work/verify.out" 2>&1 \
        || fail "$(cat "$work/verify.out")"
    printf 'round %2d (t=%ds): killed after %4d ms, %4s writes acked this round; db check ok; audit verify ok; %s\n' \
        "$round" "$((SECONDS - started))" "$delay_ms" "$acked" "$(cat "$work/verify.out")"
done
echo "crash: $rounds SIGKILLs (durability=$durability), every check passed, $((SECONDS - started)) s"
