#!/usr/bin/env bash
# Fan-out to SUBS WebSocket subscribers: chronir-server's realtime feed beside the Hummingbird 2 +
# hummingbird-websocket reference (Benchmarks/hummingbird-ws), in the same run.
#
#   Benchmarks/fanout.sh [SUBS] [SECONDS] [LATENCY_RUNS] [INFLIGHT]     (defaults 1000 10 100 4)
#   CHRONIR_SERVER=… HUMMINGBIRD_WS=… RUNS=3 Benchmarks/fanout.sh      (see Benchmarks/lib.sh)
#   RATE=20 BASELINE_SERVER=… HUMMINGBIRD_WS=none Benchmarks/fanout.sh 1000 0 200   (the tail at 20 mutations/s)
#
# RATE=R sends the one-at-a-time mutations 1/R s apart (else 5–205 ms after each was delivered);
# with RATE, the rotation also runs the physical floor, loadgen/sendfloor.c (one ~100-byte frame
# `send` to each of SUBS loopback sockets drained by another process, LATENCY_RUNS rounds at RATE/s,
# one thread, then two threads each sending to half; p50/p99 of a round), printed beside chronir's
# server-side histogram, which cannot be below it; SENDFLOOR=0 leaves it out.
# BASELINE_SERVER adds a second chronir-server binary ("chronir-before", seeded on its own) to the
# rotation; HUMMINGBIRD_WS=none leaves the reference out. Each chronir run also prints the
# server-side fan-out histogram's p50/p99 over the run (commit → the last subscriber's frame handed
# to the kernel, per broadcast; scraped from its --metrics-port, bucket upper bounds).
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
if [ -n "${RATE:-}" ] && [ "${SENDFLOOR:-1}" = 1 ]; then
    gcc -O2 -pthread -o "$work/sendfloor" Benchmarks/loadgen/sendfloor.c
fi
# One chronir-server per binary, each seeded on its own: NAME BINARY (sets CH_PORT_<i> etc. by index).
ch_names=(chronir-server)
ch_binaries=("$CHRONIR_SERVER")
if [ -n "${BASELINE_SERVER:-}" ]; then ch_names+=(chronir-before); ch_binaries+=("$BASELINE_SERVER"); fi
declare -A ch_port ch_pid ch_metrics ch_group ch_owner ch_tokens
for i in "${!ch_names[@]}"; do
    name=${ch_names[$i]}
    CHRONIR_SERVER=${ch_binaries[$i]} CH_DATA_DIR=$work/data-$name CH_LOG=$work/$name.log \
        start_chronir --max-members "$subs" --max-connections $((subs + 5000)) --metrics-port auto
    ch_port[$name]=$CH_PORT; ch_pid[$name]=$CH_PID; ch_metrics[$name]=$metrics_base
    t0=$(date +%s)
    CH_SEED_DIR=$work/seed-$name seed_chronir "$subs"
    echo "$name: seeded $subs accounts in one group in $(($(date +%s) - t0)) s"
    ch_group[$name]=$(cat "$work/seed-$name/group")
    ch_owner[$name]=$(cat "$work/seed-$name/owner")
    ch_tokens[$name]=$work/seed-$name/tokens
done
CH_PID=${ch_pid[chronir-server]}
if [ "$HUMMINGBIRD_WS" != none ]; then start_hummingbird; fi

# The server-side fan-out histogram (chronir_realtime_fanout_latency_seconds: commit → the last
# subscriber's frame handed to the kernel, one observation per broadcast) over one run: the upper
# bound of the bucket holding the p50 / p99 of what the run added.
fanout_histogram() { curl -sf "$1/metrics" | grep '^chronir_realtime_fanout_latency_seconds_bucket' || true; }
histogram_quantiles() {  # histogram_quantiles BEFORE AFTER → "p50 X ms p99 Y ms (N broadcasts)"
    awk 'NR == FNR { split($1, a, "\""); before[a[2]] = $2; next }
        { split($1, a, "\""); le[++n] = a[2]; count[n] = $2 - before[a[2]] }
        END {
            total = count[n]
            if (total <= 0) { print "no broadcasts"; exit }
            for (q = 1; q <= 2; q++) {
                want = (q == 1 ? 0.5 : 0.99) * total
                for (i = 1; i <= n; i++) if (count[i] >= want) break
                bound = le[i] == "+Inf" ? "+Inf" : sprintf("≤ %g ms", le[i] * 1000)
                printf "%s %s  ", (q == 1 ? "p50" : "p99"), bound
            }
            printf "(%d broadcasts)\n", total
        }' "$1" "$2"
}

measure() {  # measure NAME PID RUN ARGS...
    local name=$1 pid=$2 run=$3 out=$work/$1.$3 before after
    shift 3
    for p in "${ch_pid[@]}" ${HB_PID:-}; do wait_idle "$p"; done
    [ "$run" = profile ] && profile_start "$pid" "$name"
    [ -n "${ch_metrics[$name]:-}" ] && fanout_histogram "${ch_metrics[$name]}" >"$out.hist-before"
    before=$(cpu_ticks "$pid")
    "$WSLOAD" fanout --subs "$subs" --seconds "$seconds" --latency-runs "$latency_runs" --inflight "$inflight" \
        ${RATE:+--rate "$RATE"} --body '{"name":"bench %d"}' "$@" >"$out"
    after=$(cpu_ticks "$pid")
    profile_stop
    if [ -n "${ch_metrics[$name]:-}" ]; then
        fanout_histogram "${ch_metrics[$name]}" >"$out.hist-after"
        histogram_quantiles "$out.hist-before" "$out.hist-after" >"$out.hist"
        echo "    $name server-side fan-out (commit → last frame to the kernel): $(cat "$out.hist")"
    fi
    echo $(((after - before) * 100 / $(getconf CLK_TCK))) >"$out.cpu"
    printf '%-16s run %s  %9s deliveries/s (%s mutations/s)  latency p50 %s ms p99 %s ms  loaded p50 %s p99 %s  conflations %s  load %s\n' \
        "$name" "$run" "$(field deliveries_per_s "$out")" "$(field mutations_per_s "$out")" \
        "$(field latency_p50_ms "$out")" "$(field latency_p99_ms "$out")" \
        "$(field loaded_latency_p50_ms "$out")" "$(field loaded_latency_p99_ms "$out")" \
        "$(field conflation_snapshots "$out")" "$(load)"
}
chronir() {  # chronir NAME RUN
    measure "$1" "${ch_pid[$1]}" "$2" --port "${ch_port[$1]}" --path /v1/realtime --tokens "${ch_tokens[$1]}" \
        --subscribe "{\"op\":\"subscribe\",\"topic\":\"group:${ch_group[$1]}\"}" \
        --method PATCH --target "/v1/groups/${ch_group[$1]}" --auth "${ch_owner[$1]}"
}
send_floor() {  # send_floor RUN: the bare sends, no server (loadgen/sendfloor.c)
    local out=$work/send-floor.$1
    "$work/sendfloor" --subs "$subs" --rounds "$latency_runs" --rate "$RATE" >"$out"
    printf '%-16s run %s  %s sends per round: one thread p50 %s ms p99 %s ms; two threads p50 %s ms p99 %s ms  (would block %s)  load %s\n' \
        send-floor "$1" "$subs" "$(field one_thread_p50_ms "$out")" "$(field one_thread_p99_ms "$out")" \
        "$(field two_threads_p50_ms "$out")" "$(field two_threads_p99_ms "$out")" "$(field would_block "$out")" "$(load)"
}
hummingbird() {
    measure hummingbird-ws "$HB_PID" "$1" --port "$HB_PORT" --path /subscribe --method POST --target /broadcast
}

echo "fanout: $subs subscribers, $latency_runs one-at-a-time mutations${RATE:+ at $RATE/s}, then ${seconds}s with $inflight in flight; $(nproc) cores, $RUNS runs, alternating"
contenders=("${ch_names[@]}")
[ "$HUMMINGBIRD_WS" != none ] && contenders+=(hummingbird-ws)
[ -x "$work/sendfloor" ] && contenders+=(send-floor)
run_one() {
    case $1 in
        hummingbird-ws) hummingbird "$2" ;;
        send-floor) [ "$2" = profile ] || send_floor "$2" ;;
        *) chronir "$1" "$2" ;;
    esac
}
if [ -n "${PROFILE_DIR:-}" ]; then for c in "${contenders[@]}"; do run_one "$c" profile; done; fi  # extra, uncounted runs under perf
for run in $(seq 1 "$RUNS"); do
    for i in "${!contenders[@]}"; do run_one "${contenders[$(((i + run - 1) % ${#contenders[@]}))]}" "$run"; done
done
med() { for f in "$work/$1".[0-9]; do field "$2" "$f"; done | median; }
echo
echo "| server | deliveries/s | mutations/s | latency p50 / p99 (one at a time) | p50 / p99 under load |"
echo "|---|---|---|---|---|"
for s in "${contenders[@]}"; do
    [ "$s" = send-floor ] && continue
    echo "| $s | $(med $s deliveries_per_s) | $(med $s mutations_per_s) | $(med $s latency_p50_ms) / $(med $s latency_p99_ms) ms | $(med $s loaded_latency_p50_ms) / $(med $s loaded_latency_p99_ms) ms |"
done
echo "(medians of $RUNS runs, $subs subscribers)"
for s in "${ch_names[@]}"; do
    echo "$s server-side fan-out per run: $(for f in "$work/$s".[0-9].hist; do printf '[%s] ' "$(cat "$f")"; done)"
done
if [ -x "$work/sendfloor" ]; then
    echo "send floor ($subs sends of one frame, no server; medians of $RUNS runs): one thread p50 $(med send-floor one_thread_p50_ms) ms p99 $(med send-floor one_thread_p99_ms) ms; two threads p50 $(med send-floor two_threads_p50_ms) ms p99 $(med send-floor two_threads_p99_ms) ms"
fi
if [ "$HUMMINGBIRD_WS" != none ] && [ "$seconds" = 0 ]; then
    echo "one-at-a-time p99: chronir $(med chronir-server latency_p99_ms) ms, hummingbird $(med hummingbird-ws latency_p99_ms) ms (ratio $(ratio "$(med chronir-server latency_p99_ms)" "$(med hummingbird-ws latency_p99_ms)"))"
elif [ "$HUMMINGBIRD_WS" != none ]; then
    echo "deliveries/s ratio chronir/hummingbird: $(ratio "$(med chronir-server deliveries_per_s)" "$(med hummingbird-ws deliveries_per_s)") (goal ≥ 2); chronir p99 $(med chronir-server latency_p99_ms) ms (goal ≤ 5)"
fi
