#!/usr/bin/env bash
# WebSocket echo messages/s: chronir-ws-echo (our Transport + Wire) beside the Hummingbird 2 +
# hummingbird-websocket reference (Benchmarks/hummingbird-ws, GET /echo), in the same run.
#
#   Benchmarks/ws-echo.sh [SECONDS] [CONNECTIONS] [WINDOW] [SIZE]      (defaults 10 64 16 32)
#   CHRONIR_WS_ECHO=… HUMMINGBIRD_WS=… RUNS=5 Benchmarks/ws-echo.sh   (see Benchmarks/lib.sh)
#
# Each of CONNECTIONS sockets keeps WINDOW text messages of SIZE bytes in flight (a new one per echo),
# after a 2 s warm-up; no compression (none offered). The servers alternate, RUNS times each; the
# table shows each run, the server's and the load generator's CPU (user+sys, % of one core; a
# generator near 100% means the server could go faster) and the medians.
source "$(dirname "$0")/lib.sh"
seconds=${1:-10}
conns=${2:-64}
window=${3:-16}
size=${4:-32}
build_binaries
start_ws_echo
start_hummingbird

measure() {  # measure NAME PID PORT PATH RUN
    local out=$work/$1.$5 before after
    wait_idle "$2"
    [ "$5" = profile ] && profile_start "$2" "$1"
    before=$(cpu_ticks "$2")
    "$WSLOAD" echo --port "$3" --path "$4" --conns "$conns" --window "$window" --size "$size" \
        --seconds "$seconds" --warmup 2 >"$out"
    after=$(cpu_ticks "$2")
    profile_stop
    awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v s=$((seconds + 2)) \
        'BEGIN {printf "%.0f\n", 100*t/hz/s}' >"$out.cpu"
    printf '%-22s run %s  %10s msg/s  server CPU %4s%%  load generator CPU %4s%%  load %s\n' "$1" "$5" \
        "$(field messages_per_s "$out")" "$(cat "$out.cpu")" "$(field client_cpu_percent "$out")" "$(load)"
}

echo "ws-echo: $conns connections × window $window × $size-byte text messages, ${seconds}s (+2s warm-up), $(nproc) cores, $RUNS runs"
if [ -n "${PROFILE_DIR:-}" ]; then  # an extra, uncounted run under perf
    measure chronir-ws-echo "$ECHO_PID" "$ECHO_PORT" / profile
    measure hummingbird-ws "$HB_PID" "$HB_PORT" /echo profile
fi
for run in $(seq 1 "$RUNS"); do
    if [ $((run % 2)) = 1 ]; then
        measure chronir-ws-echo "$ECHO_PID" "$ECHO_PORT" / "$run"
        measure hummingbird-ws "$HB_PID" "$HB_PORT" /echo "$run"
    else
        measure hummingbird-ws "$HB_PID" "$HB_PORT" /echo "$run"
        measure chronir-ws-echo "$ECHO_PID" "$ECHO_PORT" / "$run"
    fi
done
c=$(for f in "$work"/chronir-ws-echo.[0-9]*; do [[ $f == *.cpu ]] || field messages_per_s "$f"; done | median)
h=$(for f in "$work"/hummingbird-ws.[0-9]*; do [[ $f == *.cpu ]] || field messages_per_s "$f"; done | median)
ccpu=$(cat "$work"/chronir-ws-echo.[0-9]*.cpu | median)
hcpu=$(cat "$work"/hummingbird-ws.[0-9]*.cpu | median)
echo
echo "| server | echo msg/s (median of $RUNS) | server CPU |"
echo "|---|---|---|"
echo "| chronir-ws-echo | $c | ${ccpu}% |"
echo "| Hummingbird 2 + hummingbird-websocket 2.8.1 | $h | ${hcpu}% |"
echo "ratio chronir/hummingbird: $(ratio "$c" "$h") (goal ≥ 2)"
