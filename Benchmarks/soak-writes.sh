#!/usr/bin/env bash
# Write soak: does the cost of a commit stay flat as the server's history grows? (issue 13)
#
#   Benchmarks/soak-writes.sh [WRITES] [SLICE_SECONDS] [WRITERS]    (defaults 1000000 30 8)
#   CHRONIR_SERVER=… Benchmarks/soak-writes.sh 20000 3                (short run; what CI could afford)
#
# One fresh release server (--password-hashing fast, default log level) seeded with 1,000 accounts
# in no group (loadgen/chronir_seed.py --no-group). All 1,000 hold a WebSocket on /v1/realtime,
# subscribed to their own `user` topic (wsload idle: reads and discards every message). WRITERS of
# them send `PATCH /v1/me {"display_name": …}` through wrk -t2 -c16 (the 16 connections rotate over
# the WRITERS tokens); each write commits a change-log row and is delivered to its writer's socket.
# The writes run in slices of SLICE_SECONDS (one wrk run each; wrk cannot stop after a count) until
# WRITES have been committed. Per slice the table shows the writes committed so far, the slice's
# writes/s and wrk's p50/p99, then the server's VmRSS, its open file descriptors and the size of the
# database files (main + WAL).
# Needs: wrk (apt-get install wrk), gcc, python3.
# Goal: the last slice's writes/s ≥ 90% of the first's, RSS flat after the first slices, fds flat.
source "$(dirname "$0")/lib.sh"
writes=${1:-1000000}
slice_seconds=${2:-30}
writers=${3:-8}
subscribers=1000
if [ -z "${CHRONIR_SERVER:-}" ]; then
    swift build -c release --product chronir-server >/dev/null
    CHRONIR_SERVER=$PWD/.build/release/chronir-server
fi
WSLOAD=$work/wsload
gcc -O2 -o "$WSLOAD" Benchmarks/loadgen/wsload.c

start_chronir --max-connections $((subscribers + 1000))
seed_chronir "$subscribers" --no-group
"$WSLOAD" idle --port "$CH_PORT" --path /v1/realtime --conns "$subscribers" --tokens "$work/seed/tokens" \
    --subscribe '{"op":"subscribe","topic":"user"}' --ready-file "$work/ready" >"$work/idle.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do [ -s "$work/ready" ] && break; sleep 0.1; done
[ -s "$work/ready" ] || { echo "subscribers did not become ready" >&2; cat "$work/idle.out" >&2; exit 1; }

# wrk script: each connection's requests carry one of the first WRITERS tokens in turn; a thread
# counts non-200 answers on stderr.
{
    printf 'local tokens = {'
    head -n "$writers" "$work/seed/tokens" | sed 's/.*/"&",/' | tr -d '\n'
    printf '}\n'
    cat <<LUA
local counter = 0
request = function()
    counter = counter + 1
    local token = tokens[(counter % #tokens) + 1]
    return wrk.format("PATCH", "/v1/me", {["Authorization"] = "Bearer " .. token,
        ["Content-Type"] = "application/json"}, '{"display_name":"soak ' .. counter .. '"}')
end
response = function(status, headers, body)
    if status ~= 200 then io.stderr:write("status " .. status .. ": " .. body .. "\\n") end
end
LUA
} >"$work/patch.lua"

db_bytes() { du -cb "$work/data"/*.sqlite* 2>/dev/null | awk 'END {print $1}'; }
fds() { ls "/proc/$CH_PID/fd" | wc -l; }
printf '%-9s %10s %9s %9s %10s %6s %12s\n' written writes/s p50 p99 rss_kib fds db_bytes
total=0
i=0
first=
while [ "$total" -lt "$writes" ]; do
    i=$((i + 1))
    wrk -t2 -c16 -d"${slice_seconds}s" --latency -s "$work/patch.lua" "http://127.0.0.1:$CH_PORT" \
        >"$work/wrk.$i" 2>"$work/wrk.$i.err" || { cat "$work/wrk.$i" "$work/wrk.$i.err" >&2; exit 1; }
    if [ -s "$work/wrk.$i.err" ]; then echo "slice $i: non-200 answers:" >&2; head -5 "$work/wrk.$i.err" >&2; exit 1; fi
    count=$(awk '/requests in/ {print $1}' "$work/wrk.$i")
    total=$((total + count))
    rate=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.$i")
    p50=$(awk '$1 == "50%" {print $2}' "$work/wrk.$i")
    p99=$(awk '$1 == "99%" {print $2}' "$work/wrk.$i")
    [ -n "$first" ] || first=$rate
    printf '%-9s %10s %9s %9s %10s %6s %12s\n' "$total" "$rate" "$p50" "$p99" \
        "$(rss_kib "$CH_PID")" "$(fds)" "$(db_bytes)"
    last=$rate
done
kill -0 "$CH_PID" || { echo "server died" >&2; tail -20 "$work/chronir.log" >&2; exit 1; }
ready=$(awk '/^ready/ {print $2}' "$work/idle.out" | tail -1)
echo "subscribers held: ${ready:-?} of $subscribers; last slice at $(ratio "$last" "$first") × the first slice's writes/s"
