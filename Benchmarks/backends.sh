#!/usr/bin/env bash
# SQLite beside PostgreSQL with one and two instances, in one run (issue 16): HTTP write throughput,
# mutation → delivery latency on the same and on another instance, one PostgreSQL primary's commit
# rate, and what a change-log row costs on disk. Numbers for docs/scaling.md.
#
#   Benchmarks/backends.sh [SECONDS] [LATENCY_RUNS] [SUBS] [WRITERS]     (defaults 20 100 1000 64)
#   CHRONIR_SERVER=.build-release/release/chronir-server Benchmarks/backends.sh 5 30   (a short run)
#
# Every phase is bounded: a write phase lasts SECONDS, a delivery phase LATENCY_RUNS mutations (each
# waited for, ≤ 5 s) and then SECONDS with 4 in flight; seeding and subscribing come on top (about a
# minute each on a busy 2-core machine). Needs wrk, gcc, python3, PostgreSQL's server binaries
# (initdb, pg_ctl, psql, pgbench: the `postgresql` package).
#
# Servers: release chronir-server (CHRONIR_SERVER, else built) with --password-hashing fast, per-user
# write budgets off (--write-budget-per-minute 0, --write-bytes-per-hour 0: WRITERS users write as
# fast as wrk sends), default log level. SQLite: one instance on its file. PostgreSQL: a throwaway
# cluster (scripts/lib/postgres.sh, defaults: fsync and synchronous_commit on) and instances A and B
# on one database with one server.secret.
#
# Writes: WRITERS accounts (--no-group, so a write is one user row and one change-log row) send
# `PATCH /v1/me {"display_name": …}` through `wrk -t2 -c16 -d SECONDS`, the requests rotating over
# the WRITERS tokens. One instance: one wrk. Two instances: one wrk per instance at the same time,
# each as strong as the single one (so 32 connections in all); writes/s is their sum, p50/p99 the
# higher of the two (the percentile of the union lies between the two). Each backend runs at its
# default durability and once more at the other one, because the defaults differ: SQLite's
# `--durability normal` does not wait for the disk at COMMIT (WAL, fsync at checkpoints), while
# PostgreSQL's synchronous_commit=on waits for the WAL flush. So: SQLite normal and full
# (`--durability full`, fsync per commit), PostgreSQL 1 and 2 instances with synchronous_commit on,
# and 2 instances with it off (ALTER SYSTEM + reload; a crash of the machine may lose the last
# commits, never consistency — the same promise as SQLite's normal).
#
# Delivery: SUBS accounts in one group (loadgen/chronir_seed.py), each with a socket on
# /v1/realtime subscribed to `group:<id>`; the owner renames the group with `PATCH /v1/groups/<id>`
# (loadgen/wsload.c fanout: one monotonic clock for the request's send and every receipt). "same":
# the sockets on the instance that takes the PATCH; "cross": the sockets on B, the PATCH on A, so
# each change travels A's COMMIT → NOTIFY → B's LISTEN → B reads the batch → B's fan-out.
# p50/p99 one at a time are over SUBS × LATENCY_RUNS deliveries; "under load" with 4 in flight.
#
# One primary: pgbench (8 clients, SECONDS each) on the same cluster with the instances stopped:
# "writer lock" = what every Store write does around its domain SQL (BEGIN, the cluster-wide
# advisory lock, read the last change-log row, append one row chained to it, COMMIT) into a copy of
# change_log, with synchronous_commit on and off; "no lock" = the same append with seqs from a
# sequence and no chain (next step 2 of docs/scaling.md). The first is the ceiling the lock puts on
# writes/s whatever the number of instances. Beside them: how many 8 KiB write + fdatasync rounds
# this disk does per second (what one WAL flush costs).
#
# Change log on disk, after the run: rows, table + index bytes (PostgreSQL pg_total_relation_size;
# SQLite the dbstat pages of change_log and its indexes), bytes per row, and the average document
# per kind.
#
# The goals (issue 16): cross-instance delivery p99 ≤ 50 ms; PostgreSQL with 2 instances ≥ SQLite's
# single-instance writes/s. The script prints both verdicts. On one 2-core machine the instances,
# PostgreSQL and the load generators share the same cores, so "2 instances" measures the database
# path, not added CPU.
source "$(dirname "$0")/lib.sh"
source scripts/lib/postgres.sh  # pg_start, pg_stop, pg_as_postgres
seconds=${1:-20}
latency_runs=${2:-100}
subs=${3:-1000}
writers=${4:-64}
connections=16  # wrk connections per instance
pgbench_clients=8
trap 'server_stop_all TERM; pg_stop; cleanup' EXIT
chmod 755 "$work"  # pg_start's directory below must be reachable by the postgres user

if [ -z "${CHRONIR_SERVER:-}" ]; then
    swift build -c release --product chronir-server >/dev/null
    CHRONIR_SERVER=$PWD/.build/release/chronir-server
fi
WSLOAD=$work/wsload
gcc -O2 -o "$WSLOAD" Benchmarks/loadgen/wsload.c
results=$work/results  # one `key value` line per number, read back for the tables
: >"$results"
note() { echo "$1 $2" >>"$results"; }
got() { awk -v k="$1" '$1==k {v=$2} END {print (v == "" ? "n/a" : v)}' "$results"; }
log() { echo "[$(date -u +%H:%M:%S)] $* (load $(load))" >&2; }
server_flags=(--max-members "$subs" --max-connections $((subs + 2000)))

# ---------------------------------------------------------------- writes

# (write_lua: Benchmarks/lib.sh)

# fdatasync_rate SECONDS: how many 8 KiB write + fdatasync rounds this disk does per second now (what
# one COMMIT that waits for the disk costs at least; it varies from minute to minute on a shared VM).
fdatasync_rate() {
    python3 - "$work/fsync.probe" "$1" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
block, n, seconds = b"\0" * 8192, 0, float(sys.argv[2])
end = time.monotonic() + seconds
while time.monotonic() < end:
    os.pwrite(fd, block, 0); os.fdatasync(fd); n += 1
print(round(n / seconds))
PY
}

# wrk_ms FILE PERCENT: wrk's latency percentile in milliseconds (wrk prints us, ms or s).
wrk_ms() {
    awk -v p="$2%" '$1 == p {
        v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
        printf "%.2f", (u == "us" ? v / 1000 : u == "s" ? v * 1000 : u == "m" ? v * 60000 : v)
    }' "$1"
}

# write_phase NAME PORT…: one wrk per port for SECONDS at once; notes NAME.{writes_per_s,p50,p99,load}.
write_phase() {
    local name=$1 port i=0 files=() wrk_pids=() f
    shift
    note "$name.fdatasync" "$(fdatasync_rate 1)"
    log "writes: $name ($# instance(s), ${seconds}s)"
    for port in "$@"; do
        i=$((i + 1))
        f=$work/wrk.$name.$i
        wrk -t2 -c"$connections" -d"${seconds}s" --latency -s "$work/patch.lua" "http://127.0.0.1:$port" >"$f" 2>"$f.err" &
        wrk_pids+=($!)
        files+=("$f")
    done
    for i in "${!wrk_pids[@]}"; do
        wait "${wrk_pids[$i]}" || { echo "wrk failed:" >&2; cat "${files[$i]}" "${files[$i]}.err" >&2; exit 1; }
    done
    local rate=0 p50=0 p99=0
    for f in "${files[@]}"; do
        if [ -s "$f.err" ]; then echo "$name: non-200 answers:" >&2; head -5 "$f.err" >&2; exit 1; fi
        rate=$(awk -v a="$rate" '/^Requests\/sec/ {printf "%.0f", a + $2}' "$f")
        p50=$(awk -v a="$p50" -v b="$(wrk_ms "$f" 50)" 'BEGIN {print (b + 0 > a + 0 ? b : a)}')
        p99=$(awk -v a="$p99" -v b="$(wrk_ms "$f" 99)" 'BEGIN {print (b + 0 > a + 0 ? b : a)}')
    done
    note "$name.writes_per_s" "$rate"; note "$name.p50" "$p50"; note "$name.p99" "$p99"; note "$name.load" "$(load | cut -d' ' -f1)"
}

# ---------------------------------------------------------------- delivery

# delivery_phase (Benchmarks/lib.sh): wsload fanout of SUBS subscribers.

# ---------------------------------------------------------------- change log on disk

# Notes NAME.{rows,bytes} and prints the per-kind document sizes to $work/kinds.NAME.
sqlite_log_size() {  # sqlite_log_size NAME FILE
    python3 - "$2" >"$work/kinds.$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = db.execute("SELECT count(*) FROM change_log").fetchone()[0]
size = db.execute("SELECT sum(pgsize) FROM dbstat WHERE name IN "
                  "(SELECT name FROM sqlite_master WHERE tbl_name = 'change_log')").fetchone()[0]
print(f"total {rows} {size}")
for kind, n, avg in db.execute("SELECT kind, count(*), avg(length(document)) FROM change_log GROUP BY kind ORDER BY 2 DESC"):
    print(f"kind {kind} {n} {avg or 0:.0f}")
PY
    note "$1.log_rows" "$(awk '$1=="total" {print $2}' "$work/kinds.$1")"
    note "$1.log_bytes" "$(awk '$1=="total" {print $3}' "$work/kinds.$1")"
}
psql_do() { psql -X -q -v ON_ERROR_STOP=1 -At "$pg_url" "$@"; }
postgres_log_size() {  # postgres_log_size NAME
    {
        psql_do -F' ' -c "SELECT 'total', count(*), pg_total_relation_size('change_log') FROM change_log"
        psql_do -F' ' -c "SELECT 'kind', kind, count(*), round(avg(octet_length(document))) FROM change_log GROUP BY kind ORDER BY 3 DESC"
    } >"$work/kinds.$1"
    note "$1.log_rows" "$(awk '$1=="total" {print $2}' "$work/kinds.$1")"
    note "$1.log_bytes" "$(awk '$1=="total" {print $3}' "$work/kinds.$1")"
}

# ---------------------------------------------------------------- the run

echo "backends: writes ${seconds}s per configuration (wrk -t2 -c$connections per instance, $writers writers), delivery to $subs subscribers ($latency_runs one at a time, then ${seconds}s with 4 in flight); $(nproc) cores, load $(load)"

# SQLite, one instance.
CH_DATA_DIR=$work/sqlite CH_LOG=$work/sqlite.log start_chronir "${server_flags[@]}"
sqlite_port=$CH_PORT
log "seeding $writers writers and $subs subscribers on SQLite"
CH_SEED_DIR=$work/sqlite.writers seed_chronir "$writers" --no-group --prefix writer
CH_SEED_DIR=$work/sqlite.subs seed_chronir "$subs" --prefix sub
write_lua "$work/sqlite.writers/tokens" >"$work/patch.lua"
write_phase sqlite1 "$sqlite_port"
delivery_phase sqlite1.same "$sqlite_port" "$sqlite_port" "$work/sqlite.subs"
server_stop "$CH_PID" TERM
# The same file with an fsync per commit, as PostgreSQL's default does.
CH_DATA_DIR=$work/sqlite CH_LOG=$work/sqlite.log start_chronir "${server_flags[@]}" --durability full
write_phase sqlite1full "$CH_PORT"
server_stop "$CH_PID" TERM
sqlite_log_size sqlite "$work/sqlite/chronir.sqlite"

# PostgreSQL: A alone, then A and B.
pg_start "$work/pg"
CH_DATA_DIR=$work/a CH_LOG=$work/a.log start_chronir --database-url "$pg_url" "${server_flags[@]}"
a_port=$CH_PORT
log "seeding $writers writers and $subs subscribers on PostgreSQL"
CH_SEED_DIR=$work/pg.writers seed_chronir "$writers" --no-group --prefix writer
CH_SEED_DIR=$work/pg.subs seed_chronir "$subs" --prefix sub
write_lua "$work/pg.writers/tokens" >"$work/patch.lua"
write_phase postgres1 "$a_port"
mkdir -m 700 "$work/b"
cp "$work/a/server.secret" "$work/b/server.secret"  # invite codes are keyed by it: one secret for all
CH_DATA_DIR=$work/b CH_LOG=$work/b.log start_chronir --database-url "$pg_url" "${server_flags[@]}"
b_port=$CH_PORT
write_phase postgres2 "$a_port" "$b_port"
# COMMIT without waiting for the WAL flush (what SQLite's default `normal` durability does too: a
# crash of the machine may lose the last commits, never consistency). Reloaded into every session.
pg_synchronous_commit() { psql_do -c "ALTER SYSTEM SET synchronous_commit = $1" -c "SELECT pg_reload_conf()" >/dev/null; sleep 1; }
pg_synchronous_commit off
write_phase postgres2async "$a_port" "$b_port"
pg_synchronous_commit on
delivery_phase postgres2.same "$a_port" "$a_port" "$work/pg.subs"
delivery_phase postgres2.cross "$b_port" "$a_port" "$work/pg.subs"
postgres_log_size postgres
server_stop_all TERM

# One primary's commit rate, with no instance running.
doc_bytes=$(awk '$1=="kind" && $2=="user" {print $4}' "$work/kinds.postgres")
doc_bytes=${doc_bytes:-300}
psql_do -c "CREATE TABLE bench_change_log (LIKE change_log INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES);
            CREATE SEQUENCE bench_seq;"
cat >"$work/locked.sql" <<SQL
\set n random(1, $writers)
BEGIN;
SELECT pg_advisory_xact_lock(27980863399422322);
INSERT INTO bench_change_log (seq, batch, event, at_ms, actor, topic, kind, op, entity_id, document, hash)
SELECT s, s, 'user_updated', 0, 'user:' || :n, 'user:' || :n, 'user', 'modified', 'u' || :n, d,
       sha256(coalesce(p.hash, ''::bytea) || convert_to(d, 'UTF8'))
FROM (SELECT coalesce(max(seq), 0) + 1 AS s, repeat('x', $doc_bytes) AS d FROM bench_change_log) m
LEFT JOIN bench_change_log p ON p.seq = m.s - 1;
COMMIT;
SQL
cat >"$work/unlocked.sql" <<SQL
\set n random(1, $writers)
BEGIN;
INSERT INTO bench_change_log (seq, batch, event, at_ms, actor, topic, kind, op, entity_id, document)
VALUES (nextval('bench_seq') + 1000000000, 0, 'user_updated', 0, 'user:' || :n, 'user:' || :n, 'user', 'modified', 'u' || :n, repeat('x', $doc_bytes));
COMMIT;
SQL
# The writer lock's key is PostgresConnection.writerLockKey (0x6368726f6e6972, "chronir").
grep -q '0x63_68_72_6f_6e_69_72' Sources/Postgres/PostgresConnection.swift \
    || { echo "PostgresConnection.writerLockKey changed: update locked.sql" >&2; exit 1; }
for run in "locked on" "locked off" "unlocked on"; do
    set -- $run
    log "one primary: pgbench $1, synchronous_commit $2 ($pgbench_clients clients, ${seconds}s)"
    PGOPTIONS="-c synchronous_commit=$2" pgbench -n -M prepared -c "$pgbench_clients" -j 2 -T "$seconds" \
        -f "$work/$1.sql" "$pg_url" >"$work/pgbench.$1.$2" 2>&1 || { cat "$work/pgbench.$1.$2" >&2; exit 1; }
    note "pgbench.$1.$2" "$(awk '/^tps/ {printf "%.0f", $3}' "$work/pgbench.$1.$2")"
done
note fdatasync_per_s "$(fdatasync_rate 2)"

# ---------------------------------------------------------------- the tables

echo
echo "| backend | instances | commit waits for the disk | writes/s | p50 | p99 | load | disk fdatasync/s just before |"
echo "|---|---|---|---|---|---|---|---|"
for row in "sqlite1 SQLite 1 no_(durability_normal,_the_default)" "sqlite1full SQLite 1 yes_(durability_full)" \
    "postgres1 PostgreSQL 1 yes_(synchronous_commit_on,_the_default)" "postgres2 PostgreSQL 2 yes" \
    "postgres2async PostgreSQL 2 no_(synchronous_commit_off)"; do
    set -- $row
    echo "| $2 | $3 | ${4//_/ } | $(got "$1.writes_per_s") | $(got "$1.p50") ms | $(got "$1.p99") ms | $(got "$1.load") | $(got "$1.fdatasync") |"
done
echo
echo "| delivery to $subs subscribers | p50 | p99 | max | under load p50 / p99 | deliveries/s | subscribing took | load |"
echo "|---|---|---|---|---|---|---|---|"
for row in "sqlite1.same SQLite,_same_instance" "postgres2.same PostgreSQL,_same_instance_(A→A)" \
    "postgres2.cross PostgreSQL,_cross-instance_(A→B)"; do
    set -- $row
    echo "| ${2//_/ } | $(got "$1.latency_p50_ms") ms | $(got "$1.latency_p99_ms") ms | $(got "$1.latency_max_ms") ms |" \
        "$(got "$1.loaded_latency_p50_ms") / $(got "$1.loaded_latency_p99_ms") ms | $(got "$1.deliveries_per_s") |" \
        "$(got "$1.subscribe_s") s | $(got "$1.load") |"
done
echo
echo "| one PostgreSQL primary (pgbench, $pgbench_clients clients, $doc_bytes-byte documents) | commits/s |"
echo "|---|---|"
echo "| writer lock + chained change-log append, synchronous_commit on | $(got pgbench.locked.on) |"
echo "| the same, synchronous_commit off | $(got pgbench.locked.off) |"
echo "| no lock, seqs from a sequence, synchronous_commit on (next step 2) | $(got pgbench.unlocked.on) |"
echo "| (this disk after them: 8 KiB write + fdatasync) | $(got fdatasync_per_s)/s |"
echo
echo "| change log | rows | table + indexes | bytes/row | average document by kind (rows) |"
echo "|---|---|---|---|---|"
for backend in sqlite postgres; do
    kinds=$(awk '$1=="kind" {printf "%s%s %s B (%s)", sep, $2, $4, $3; sep=", "}' "$work/kinds.$backend")
    echo "| $backend | $(got "$backend.log_rows") | $(got "$backend.log_bytes") B | $(ratio "$(got "$backend.log_bytes")" "$(got "$backend.log_rows")" | cut -d. -f1) | $kinds |"
done
echo
cross=$(got postgres2.cross.latency_p99_ms)
echo "goal: cross-instance delivery p99 ≤ 50 ms: $cross ms $(awk -v v="$cross" 'BEGIN {print (v != "n/a" && v <= 50 ? "✓" : "✗")}')"
echo "goal: PostgreSQL with 2 instances ≥ SQLite with 1: $(got postgres2.writes_per_s) vs $(got sqlite1.writes_per_s) writes/s" \
    "($(ratio "$(got postgres2.writes_per_s)" "$(got sqlite1.writes_per_s)")×) $(awk -v a="$(got postgres2.writes_per_s)" -v b="$(got sqlite1.writes_per_s)" 'BEGIN {print (a >= b ? "✓" : "✗")}')"
