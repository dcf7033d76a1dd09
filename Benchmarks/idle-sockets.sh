#!/usr/bin/env bash
# Memory per idle WebSocket: the server's resident set (VmRSS from /proc/PID/status) before and
# after SOCKETS idle connections are open, for
#   - chronir-server's realtime feed: each socket authenticated (bearer token; 1,000 seeded accounts
#     in no group, SOCKETS/1,000 sockets each) and subscribed to its `user` topic (ready once the snapshot came),
#   - chronir-ws-echo (plain sockets, our Transport + Wire),
#   - the Hummingbird 2 + hummingbird-websocket reference (plain sockets on GET /echo).
#
#   Benchmarks/idle-sockets.sh [SOCKETS]                          (default 10000)
#   CHRONIR_SERVER=… CHRONIR_WS_ECHO=… HUMMINGBIRD_WS=… RUNS=3 Benchmarks/idle-sockets.sh
#
# Each server is started fresh per run; "before" is read after start-up (and seeding), then a
# 100-socket warm-up is opened and closed, "after" 2 s after the last socket is ready. Clients are
# separate wsload processes of ≤ 9,000 sockets (20,000 fds per process here). VmRSS counts the
# process's memory only, not the kernel's socket buffers. chronir-ws-echo refuses connections beyond
# its default 10,000, so keep SOCKETS ≤ 10,000 for it.
source "$(dirname "$0")/lib.sh"
sockets=${1:-10000}
build_binaries
per_process=9000

hold() {  # hold PORT PATH COUNT [wsload args…]: opens COUNT sockets in ≤ 9,000-socket processes and waits until all are ready
    local port=$1 path=$2 count=$3 i=0 n
    shift 3
    holders=()
    while [ "$count" -gt 0 ]; do
        n=$((count < per_process ? count : per_process))
        "$WSLOAD" idle --port "$port" --path "$path" --conns "$n" --ready-file "$work/ready.$i" "$@" \
            >"$work/idle.$i.out" 2>&1 &
        pids+=($!)
        holders+=($!)
        count=$((count - n))
        # one process at a time: they share the server's accept queue
        while [ ! -s "$work/ready.$i" ]; do
            kill -0 "${holders[-1]}" 2>/dev/null || { cat "$work/idle.$i.out" >&2; return 1; }
            sleep 0.2
        done
        i=$((i + 1))
    done
}
release() {  # ends every holder, closing its sockets
    local h
    for h in "${holders[@]}"; do kill "$h"; wait "$h" 2>/dev/null || true; done
    rm -f "$work"/ready.*
}

measure() {  # measure NAME PID PORT PATH RUN [wsload args…]
    local name=$1 pid=$2 port=$3 path=$4 run=$5 before after t0
    shift 5
    hold "$port" "$path" 100 "$@"; release; sleep 1
    before=$(rss_kib "$pid")
    t0=$(date +%s.%N)
    hold "$port" "$path" "$sockets" "$@"
    local opened
    opened=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b-a}')
    sleep 2
    after=$(rss_kib "$pid")
    release
    awk -v a="$after" -v b="$before" -v n="$sockets" 'BEGIN {printf "%.2f\n", (a-b)/n}' >"$work/$name.$run"
    printf '%-26s run %d  %6d sockets  RSS %7d → %7d KiB  %6s KiB/socket  (opened in %s s)  load %s\n' \
        "$name" "$run" "$sockets" "$before" "$after" "$(cat "$work/$name.$run")" "$opened" "$(load)"
}

echo "idle-sockets: $sockets idle WebSockets per server, $(nproc) cores, $RUNS runs"
for run in $(seq 1 "$RUNS"); do
    rm -rf "$work/data" "$work/seed"
    start_chronir --max-connections $((sockets + 5000))
    seed_chronir 1000 --no-group
    measure chronir-server-realtime "$CH_PID" "$CH_PORT" /v1/realtime "$run" \
        --tokens "$work/seed/tokens" --subscribe '{"op":"subscribe","topic":"user"}'
    server_stop "$CH_PID" TERM
    start_ws_echo
    measure chronir-ws-echo "$ECHO_PID" "$ECHO_PORT" / "$run"
    kill "$ECHO_PID"; wait "$ECHO_PID" || true
    start_hummingbird
    measure hummingbird-ws "$HB_PID" "$HB_PORT" /echo "$run"
    kill "$HB_PID"; wait "$HB_PID" || true
done
echo
echo "| server | KiB of RSS per idle socket (median of $RUNS, $sockets sockets) |"
echo "|---|---|"
for s in chronir-server-realtime chronir-ws-echo hummingbird-ws; do
    echo "| $s | $(cat "$work/$s".[0-9]* | median) |"
done
echo "goal: ≤ 8 KiB per idle socket"
