#!/usr/bin/env bash
# Crash durability: write load against chronir-server, SIGKILL at a random moment, restart, check.
#
#   Reliability/crash.sh [ROUNDS=20] [normal|full|postgres]
#
# Each round starts the server on the same temporary data directory, runs Reliability/crash_load.py
# (4 writer threads: registrations, group creation, invite codes, joins, shared alarms, completions),
# kills the server with SIGKILL 0.1–2.5 s (random) after the round's first acknowledged write, then
# checks the killed database: `chronir-admin db check` (integrity_check + foreign_key_check), `chronir-admin audit verify` (the
# change log's hash chain) and `crash_load.py verify` (every write the client saw acknowledged is
# present, no partial write, change log seq gap-free). Binaries: $CHRONIR_BIN_DIR or .build/release
# or .build/debug. Exits non-zero on the first failed check.
#
# `postgres`: the same on a throwaway PostgreSQL cluster (scripts/lib/postgres.sh, fsync and
# synchronous_commit on, as a production primary runs) through --database-url. Odd rounds SIGKILL the
# server; even rounds SIGKILL it and then crash PostgreSQL too (`pg_ctl stop -m immediate`: no
# checkpoint, the restart replays the WAL). The checks: `chronir-admin audit verify --database-url`
# and `crash_load.py verify --postgres` (the same checks on the tables dumped with psql; `db check`
# is SQLite's integrity_check, PostgreSQL's own is amcheck).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Reliability/lib.sh
rounds=${1:-20}
mode=${2:-normal}
find_binaries

# Every account below is registered from 127.0.0.1: lift the per-address registration limit
# (docs/security-limits.md; Reliability/connection-limits.sh tests it at its default).
export CHRONIR_REGISTRATIONS_PER_IP_PER_HOUR=1000000 CHRONIR_REGISTRATIONS_PER_HOUR=1000000
work=$(mktemp -d)
trap 'server_stop_all; pg_stop; rm -rf "$work"' EXIT
data=$work/data
acks=$work/acks.jsonl
log=$work/server.log
: >"$acks"
fail() { echo "CRASH FAIL (round $round): $*" >&2; tail -20 "$log" >&2; server_stop_all; pg_stop; trap - EXIT; echo "kept $work" >&2; exit 1; }

round=0
if [ "$mode" = postgres ]; then
    chmod 755 "$work"
    pg_start "$work/pg"  # the distribution's defaults: fsync and synchronous_commit on
    storage=(--database-url "$pg_url")
    database=(--database-url "$pg_url")
else
    storage=(--durability "$mode")
    database=(--data-dir "$data")
fi

started=$SECONDS
for round in $(seq 1 "$rounds"); do
    start_server "$log" --data-dir "$data" "${storage[@]}" --password-hashing fast \
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
    killed="server"
    if [ "$mode" = postgres ] && [ $((round % 2)) = 0 ]; then
        pg_crash || fail "pg_ctl stop -m immediate"
        pg_restart || fail "PostgreSQL did not restart after the crash"
        killed="server + PostgreSQL"
    fi
    wait "$load_pid" || fail "load client: $(cat "$work/load.out")"
    acked=$(grep -o '[0-9]* writes acknowledged' "$work/load.out" | grep -o '^[0-9]*')

    if [ "$mode" = postgres ]; then
        checked="audit verify ok"
        python3 Reliability/crash_load.py verify --postgres "$pg_bin/psql" "$pg_url" "$acks" >"$work/verify.out" 2>&1 \
            || fail "$(cat "$work/verify.out")"
    else
        checked="db check ok; audit verify ok"
        "$ADMIN" db check "${database[@]}" >"$work/check.out" 2>&1 || fail "db check: $(cat "$work/check.out")"
        python3 Reliability/crash_load.py verify "$data/chronir.sqlite" "$acks" >"$work/verify.out" 2>&1 \
            || fail "$(cat "$work/verify.out")"
    fi
    "$ADMIN" audit verify "${database[@]}" >"$work/audit.out" 2>&1 || fail "audit verify: $(cat "$work/audit.out")"
    printf 'round %2d (t=%ds): %s killed after %4d ms, %4s writes acked this round; %s; %s\n' \
        "$round" "$((SECONDS - started))" "$killed" "$delay_ms" "$acked" "$checked" "$(cat "$work/verify.out")"
done
echo "crash: $rounds SIGKILLs ($mode), every check passed, $((SECONDS - started)) s"
