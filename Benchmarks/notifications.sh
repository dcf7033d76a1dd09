#!/usr/bin/env bash
# Scheduler lag and outbox throughput (issue 17): ALARMS shared alarms (default 10000) across GROUPS
# groups (default 1000) all due in the same minute, delivered through the operator webhook to
# Benchmarks/loadgen/webhook_sink.py (HTTPS on loopback, a throwaway CA made here with the openssl CLI as
# TestSupport.TestCertificateAuthority does; one process per core sharing the port; BENCH_RECEIVER=fake
# uses the tests' Tests/Fakes/webhook_receiver.py instead, in .build/python-venv, created from
# Tests/Fakes/requirements.txt when missing). The webhook gets one call per notification, so each
# alarm's `alarm_fired` is one call.
#
#   Benchmarks/notifications.sh [ALARMS] [GROUPS]      (e.g. `1000 100` for a short run)
#
# Prints, for the burst:
#   - lag p50/p99 from the receiver's clock: its arrival time (time.time() when it read the request)
#     minus the due instant (the whole target minute) — the same machine's clock as the server's;
#   - lag p50/p99 from the server's own `chronir_notification_lag_seconds` histogram (the difference of
#     two /metrics scrapes around the burst, so the set-up's notifications are not counted): the upper
#     bound of the bucket holding the quantile — the bucket bounds (50 ms … 60 s) are its precision.
#     The server records it after settling the delivery, so it includes the settle write;
#   - throughput: alarm_fired calls per second between the first and the last arrival;
#   - CPU seconds the server and the receiver (all its worker processes) used from 1 s before the minute
#     to the last arrival (/proc/PID/stat utime + stime), in total and per notification: what the burst
#     costs each side — the figure that does not depend on what else the machine runs;
#   - the set-up time, and how many alarm_fired arrived (exit 1 unless every alarm's did).
# The set-up (accounts, groups, joins, alarms over the API; Benchmarks/loadgen/notifications_bench.py)
# picks the target minute from its own measured rates, waits until the webhook has drained the
# set-up's own notifications (group_member_joined, shared_alarm_created) and fails when it ran past
# the target. Goal (issue 17): p99 lag ≤ 1 s. Not part of CI.
#
# Env: CHRONIR_SERVER (else `swift build -c release`), KEEP_WORK=1 keeps the temp dir (server log),
# BENCH_RECEIVER=sink|fake (default sink), RECEIVER_WORKERS (the sink's processes, default nproc),
# SERVER_ARGS (more server flags, e.g. "--database-writers 0" or "--log-level debug"), PROFILE_DIR (perf
# samples the server during the burst; DIR/notifications.perf.txt).
# BENCH_DATABASE=postgres runs the server on a throwaway PostgreSQL cluster (scripts/lib/postgres.sh:
# fsync on, as SQLite's default durability) instead of SQLite; with DELAY_US=N it connects through
# Benchmarks/loadgen/delayproxy.c, N µs each way (issue 35's round trip: DELAY_US=300 ≈ 0.7 ms).
source "$(dirname "$0")/lib.sh"
alarms=${1:-10000}
groups=${2:-1000}

if [ -z "${CHRONIR_SERVER:-}" ]; then
    swift build -c release --product chronir-server >/dev/null
    CHRONIR_SERVER=$PWD/.build/release/chronir-server
fi

# The fakes' Python environment (what TestSupport.PythonEnvironment makes; reused if present).
venv=$PWD/.build/python-venv
if ! "$venv/bin/python" -c 'import hypercorn' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q -r Tests/Fakes/requirements.txt
fi

# A throwaway CA and a certificate for 127.0.0.1 signed by it.
key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 "${key[@]}" -keyout "$work/ca.key" -out "$work/ca.pem" -days 2 -subj /CN=bench-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req "${key[@]}" -keyout "$work/server.key" -out "$work/server.csr" -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' >"$work/server.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -set_serial 1 -days 2 \
    -extfile "$work/server.ext" -out "$work/server.pem" 2>/dev/null

# The webhook's secret: 32 ASCII hex digits in the file; the receiver takes its bytes in hex.
secret=$(openssl rand -hex 16)
printf '%s' "$secret" >"$work/webhook.secret"
chmod 600 "$work/webhook.secret"
# The receiver: Benchmarks/loadgen/webhook_sink.py (HTTP/1.1, RECEIVER_WORKERS processes sharing the
# port, default one per core), or with BENCH_RECEIVER=fake the tests' Tests/Fakes/webhook_receiver.py
# (one hypercorn process, HTTP/2: ≈ 330 µs of CPU per call, it bounded p99 at ≈ 3.3 s for 10,000).
secret_hex=$(printf '%s' "$secret" | od -An -tx1 | tr -d ' \n')
if [ "${BENCH_RECEIVER:-sink}" = fake ]; then
    "$venv/bin/python" Tests/Fakes/webhook_receiver.py "$work/server.pem" "$work/server.key" "$secret_hex" \
        >"$work/receiver.out" 2>"$work/receiver.log" &
    receiver_name="Tests/Fakes/webhook_receiver.py (one process, HTTP/2)"
else
    mkdir "$work/calls"
    workers=${RECEIVER_WORKERS:-$(nproc)}
    python3 Benchmarks/loadgen/webhook_sink.py "$work/server.pem" "$work/server.key" "$secret_hex" "$workers" "$work/calls" \
        >"$work/receiver.out" 2>"$work/receiver.log" &
    receiver_name="Benchmarks/loadgen/webhook_sink.py ($workers processes, HTTP/1.1)"
fi
pids+=($!)
receiver_pid=$!
for _ in $(seq 1 100); do grep -qs '^READY' "$work/receiver.out" && break; sleep 0.1; done
receiver_port=$(awk '/^READY/ {print $2}' "$work/receiver.out")
# The processes whose CPU is the receiver's (the sink's workers, else the fake itself).
receiver_cpu_pids=$(awk '/^READY/ {print $3}' "$work/receiver.out")
receiver_cpu_pids=${receiver_cpu_pids:-$receiver_pid}
[ -n "$receiver_port" ] || { echo "webhook receiver did not start:" >&2; cat "$work/receiver.log" >&2; exit 1; }

database=()
if [ "${BENCH_DATABASE:-sqlite}" = postgres ]; then
    source scripts/lib/postgres.sh  # pg_start, pg_stop
    trap 'pg_stop; cleanup' EXIT
    chmod 755 "$work"
    pg_start "$work/pg"
    db_port=$pg_port
    if [ -n "${DELAY_US:-}" ]; then
        gcc -O2 -Wall -pthread -o "$work/delayproxy" Benchmarks/loadgen/delayproxy.c
        db_port=$(server_free_port)
        "$work/delayproxy" "$db_port" "$pg_port" "$DELAY_US" 3600 2>"$work/proxy.log" &
        pids+=($!)
        server_wait_tcp "$db_port"
    fi
    database=(--database-url "postgresql://chronir@127.0.0.1:$db_port/postgres?sslmode=disable")
fi
start_chronir --metrics-port auto --max-members 100 "${database[@]}" \
    --notify-webhook-url "https://127.0.0.1:$receiver_port/hook" --notify-webhook-secret-file "$work/webhook.secret" \
    --push-allow-private-endpoints --outbound-ca-file "$work/ca.pem" ${SERVER_ARGS:-}
echo "notifications: $alarms alarms across $groups groups; receiver $receiver_name; database ${BENCH_DATABASE:-sqlite}${DELAY_US:+ through a ${DELAY_US} µs-each-way proxy}; $(nproc) cores, load $(load)"

status=0
# PROFILE_DIR=DIR: the server is sampled with perf over the burst only (from 1 s before the minute to the
# last arrival); DIR/notifications.perf.txt gets the flat report (Benchmarks/lib.sh profile_report).
profile=
if [ -n "${PROFILE_DIR:-}" ]; then
    mkdir -p "$PROFILE_DIR"
    profile="perf record -q -e cpu-clock -F 999 -g -p $CH_PID -o $PROFILE_DIR/notifications.perf.data"
fi
BENCH_PROFILE=$profile BENCH_CPU_PIDS="$CH_PID $receiver_cpu_pids" python3 Benchmarks/loadgen/notifications_bench.py "$CH_PORT" "$metrics_base" "https://127.0.0.1:$receiver_port" \
    "$work/ca.pem" "$alarms" "$groups" >"$work/results" || status=$?
[ -s "$work/results" ] || { echo "the benchmark failed (status $status)" >&2; exit 1; }
[ -z "$profile" ] || profile_report "$PROFILE_DIR/notifications.perf.data" "$PROFILE_DIR/notifications.perf.txt"
r() { field "$1" "$work/results"; }

echo
echo "| alarms | groups | accounts | set-up (accounts + alarms) | target minute (UTC) | load |"
echo "|---|---|---|---|---|---|"
echo "| $(r alarms) | $(r groups) | $(r accounts) | $(r setup_s) s ($(r accounts_s) + $(r alarm_creation_s) s, then drained) | $(r target) | $(load) |"
echo
echo "| due instant → webhook | p50 | p99 | min / max |"
echo "|---|---|---|---|"
echo "| receiver's clock (arrival − the whole minute) | $(r receiver_lag_p50_s) s | $(r receiver_lag_p99_s) s | $(r receiver_lag_min_s) / $(r receiver_lag_max_s) s |"
echo "| server histogram chronir_notification_lag_seconds ($(r histogram_count) observations; bucket upper bounds) | ≤ $(r histogram_lag_p50_le_s) s | ≤ $(r histogram_lag_p99_le_s) s | |"
echo "(histogram bucket bounds, s: $(r histogram_bounds_s))"
echo
echo "delivered: $(r delivered) of $alarms alarm_fired ($(r alarm_fired_calls) calls; bad signatures $(r bad_signatures), not exactly one recipient $(r wrong_recipients))"
echo "throughput: $(r throughput_per_s) notifications/s handed to the webhook while draining the burst (first → last arrival $(r drain_s) s)"
p99=$(r receiver_lag_p99_s)
echo "CPU from 1 s before the minute to the last arrival: server $(r server_cpu_s) s, receiver $(r receiver_cpu_s) s ($(r server_cpu_us_per_notification) / $(r receiver_cpu_us_per_notification) µs per notification)"
echo "dispatcher rounds seen by the receiver: $(r rounds); each sent its calls within $(r round_send_span_p50_s) s, one every $(r round_period_p50_s) s (medians)"
echo "goal: p99 lag ≤ 1 s: ${p99:-n/a} s $(awk -v v="${p99:-}" 'BEGIN {print (v != "" && v <= 1 ? "✓" : "✗")}')"
[ "$(r delivered)" = "$alarms" ] || { echo "FAIL: not every alarm_fired arrived" >&2; exit 1; }
exit "$status"
