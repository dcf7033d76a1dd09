#!/usr/bin/env bash
# Where PostgreSQL spends a write (issue 35): `pg_stat_statements` over SECONDS of `PATCH /v1/me`
# (WRITE=alarm: a personal alarm's edit; WRITE=shared: a shared alarm's; WRITE=device: a device's registration; Benchmarks/lib.sh write_lua) from one instance connected directly, per statement: calls, total and per-call execution time
# (lock waits included: `pg_advisory_xact_lock` shows how long transactions queued for the
# change-log append lock), rows — and the writes, transactions and statements per write; then the
# tables written most, with how many of their updates were heap-only (HOT: no index entry written).
#
#   Benchmarks/statements.sh [SECONDS] [WRITERS]                         (defaults 10 64)
#   CHRONIR_SERVER=/work/bench/chronir-server-base ARGS="--database-writers 0" Benchmarks/statements.sh
#
# A throwaway PostgreSQL 15 cluster (scripts/lib/postgres.sh: fsync and synchronous_commit on) with
# `pg_stat_statements` preloaded; WRITERS accounts without a group; `wrk -t2 -c16 -d SECONDS` rotating
# over their tokens (Benchmarks/lib.sh write_lua); the counters are reset after seeding. Needs wrk,
# PostgreSQL 15 with its contrib modules (Debian's postgresql-15 has them). Bounded: one phase.
source "$(dirname "$0")/lib.sh"
source scripts/lib/postgres.sh  # pg_start, pg_stop
seconds=${1:-10}
writers=${2:-64}
trap 'server_stop_all TERM; pg_stop; cleanup' EXIT
chmod 755 "$work"
if [ -z "${CHRONIR_SERVER:-}" ]; then
    swift build -c release --product chronir-server >/dev/null
    CHRONIR_SERVER=$PWD/.build/release/chronir-server
fi
psql_do() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

pg_start "$work/pg"
psql_do "$pg_url" -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
pg_as_postgres "$pg_bin/pg_ctl" -D "$pg_data" -l "$work/pg/log.restarted" -w -t 60 restart >/dev/null
psql_do "$pg_url" -c "CREATE EXTENSION pg_stat_statements" -c "CREATE DATABASE bench"
eval "extra=(${ARGS:-})"
start_chronir --database-url "postgresql://chronir@127.0.0.1:$pg_port/bench?sslmode=disable" "${extra[@]}"
CH_SEED_DIR=$work/writers seed_chronir "$writers" --no-group --prefix writer $(write_seed)
write_lua "$work/writers/tokens" >"$work/patch.lua"
psql_do "$pg_url" -c "SELECT pg_stat_statements_reset()" >/dev/null
wrk -t2 -c16 -d"${seconds}s" -s "$work/patch.lua" "http://127.0.0.1:$CH_PORT" >"$work/wrk" 2>"$work/wrk.err"
if [ -s "$work/wrk.err" ]; then echo "non-200 answers:" >&2; sort "$work/wrk.err" | uniq -c | head -5 >&2; exit 1; fi
rate=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' "$work/wrk")
echo "statements.sh: ${seconds}s of $(write_what), 1 instance directly connected, $CHRONIR_SERVER ${ARGS:-}; load $(load)"
echo "$rate writes/s"
# Only the benchmark database's statements; the server's background passes run too and are listed.
psql_do "$pg_url" -At -F ' ' -c "
    SELECT sum(calls) FILTER (WHERE query = 'COMMIT'), sum(calls)
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'bench'" |
    awk -v r="$rate" -v s="$seconds" '{w = r * s; printf "%d transactions (%.2f writes each), %.1f statements per write\n", $1, w / $1, $2 / w}'
echo
psql_do "$pg_url" -c "
    SELECT calls, round(total_exec_time::numeric) AS total_ms,
        round((total_exec_time / calls * 1000)::numeric, 1) AS us_per_call, rows,
        left(regexp_replace(query, '\s+', ' ', 'g'), 100) AS statement
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
    WHERE d.datname = 'bench'
    ORDER BY total_exec_time DESC LIMIT 20"
# Updates that stayed on their page without touching an index (HOT) leave no index entries to write.
echo
psql_do "postgresql://chronir@127.0.0.1:$pg_port/bench?sslmode=disable" -c "
    SELECT relname AS table, n_tup_ins AS inserts, n_tup_upd AS updates, n_tup_hot_upd AS hot_updates,
        pg_relation_size(relid) / 8192 AS pages
    FROM pg_stat_user_tables WHERE n_tup_upd + n_tup_ins > 0 ORDER BY n_tup_upd + n_tup_ins DESC LIMIT 6"
