#!/usr/bin/env bash
# Fan-out to SUBS WebSocket subscribers: chronir-server's realtime feed beside the Hummingbird 2 +
# hummingbird-websocket reference (Benchmarks/hummingbird-ws), in the same run.
#
#   Benchmarks/fanout.sh [SUBS] [SECONDS] [LATENCY_RUNS] [INFLIGHT]     (defaults 1000 10 100 4)
#   CHRONIR_SERVER=… HUMMINGBIRD_WS=… RUNS=3 Benchmarks/fanout.sh      (see Benchmarks/lib.sh)
#
# chronir: a fresh server (--default-tier premium --max-members SUBS --password-hashing fast, default
# log level) is seeded over its HTTP API with SUBS accounts, all members of one group
# (loadgen/chronir_seed.py); each subscriber is one of them, authenticated with its bearer token on
# GET /v1/realtime, subscribed to `group:<id>` and ready once its snapshot arrived. The mutation is
# the owner's `PATCH /v1/groups/<id> {"name":"bench N"}` — every subscriber receives a `change`
# carrying the renamed group.
# Hummingbird: SUBS sockets on GET /subscribe; the mutation is `POST /broadcast {"name":"bench N"}`,
# which sends the body to every socket.
# Measured by Benchmarks/loadgen/wsload.c (one monotonic clock for the mutation's send and every
# receipt): latency = LATENCY_RUNS mutations one at a time, each until all SUBS received it (p50/p99
# over all SUBS×LATENCY_RUNS deliveries); throughput = INFLIGHT HTTP connections each with one
# mutation outstanding for SECONDS, while fewer than 100 mutations are undelivered somewhere (so
# queues stay bounded); deliveries/s = deliveries within those SECONDS ÷ SECONDS. "under load" is the
# mutation → delivery latency during that phase.
source "$(dirname "$0")/lib.sh"
subs=${1:-1000}
seconds=${2:-10}
latency_runs=${3:-100}
inflight=${4:-4}
build_binaries
start_chronir --max-members "$subs" --max-connections $((subs + 5000))
t0=$(date +%s)
seed_chronir "$subs"
echo "seeded $subs accounts in one group in $(($(date +%s) - t0)) s"
group=$(cat "$work/seed/group")
owner=$(cat "$work/seed/owner")
start_hummingbird

measure() {  # measure NAME PID RUN ARGS...
    local name=$1 pid=$2 run=$3 out=$work/$1.$3 before after
    shift 3
    wait_idle "$CH_PID"; wait_idle "$HB_PID"
    [ "$run" = profile ] && profile_start "$pid" "$name"
    before=$(cpu_ticks "$pid")
    "$WSLOAD" fanout --subs "$subs" --seconds "$seconds" --latency-runs "$latency_runs" --inflight "$inflight" \
        --body '{"name":"bench %d"}' "$@" >"$out"
    after=$(cpu_ticks "$pid")
    profile_stop
    echo $(((after - before) * 100 / $(getconf CLK_TCK))) >"$out.cpu"
    printf '%-16s run %s  %9s deliveries/s (%s mutations/s)  latency p50 %s ms p99 %s ms  loaded p50 %s p99 %s  conflations %s  load %s\n' \
        "$name" "$run" "$(field deliveries_per_s "$out")" "$(field mutations_per_s "$out")" \
        "$(field latency_p50_ms "$out")" "$(field latency_p99_ms "$out")" \
        "$(field loaded_latency_p50_ms "$out")" "$(field loaded_latency_p99_ms "$out")" \
        "$(field conflation_snapshots "$out")" "$(load)"
}
chronir() {
    measure chronir-server "$CH_PID" "$1" --port "$CH_PORT" --path /v1/realtime --tokens "$work/seed/tokens" \
        --subscribe "{\"op\":\"subscribe\",\"topic\":\"group:$group\"}" \
        --method PATCH --target "/v1/groups/$group" --auth "$owner"
}
hummingbird() {
    measure hummingbird-ws "$HB_PID" "$1" --port "$HB_PORT" --path /subscribe --method POST --target /broadcast
}

echo "fanout: $subs subscribers, $latency_runs one-at-a-time mutations, then ${seconds}s with $inflight in flight; $(nproc) cores, $RUNS runs"
if [ -n "${PROFILE_DIR:-}" ]; then chronir profile; hummingbird profile; fi  # extra, uncounted runs under perf
for run in $(seq 1 "$RUNS"); do
    if [ $((run % 2)) = 1 ]; then chronir "$run"; hummingbird "$run"; else hummingbird "$run"; chronir "$run"; fi
done
med() { for f in "$work/$1".[0-9]; do field "$2" "$f"; done | median; }
echo
echo "| server | deliveries/s | mutations/s | latency p50 / p99 (one at a time) | p50 / p99 under load |"
echo "|---|---|---|---|---|"
for s in chronir-server hummingbird-ws; do
    echo "| $s | $(med $s deliveries_per_s) | $(med $s mutations_per_s) | $(med $s latency_p50_ms) / $(med $s latency_p99_ms) ms | $(med $s loaded_latency_p50_ms) / $(med $s loaded_latency_p99_ms) ms |"
done
echo "(medians of $RUNS runs, $subs subscribers)"
echo "deliveries/s ratio chronir/hummingbird: $(ratio "$(med chronir-server deliveries_per_s)" "$(med hummingbird-ws deliveries_per_s)") (goal ≥ 2); chronir p99 $(med chronir-server latency_p99_ms) ms (goal ≤ 5)"
