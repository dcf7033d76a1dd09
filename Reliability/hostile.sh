#!/usr/bin/env bash
# Slow and hostile clients while a normal client measures latency.
#
#   Reliability/hostile.sh [SECONDS=40] [SLOWLORIS=1000] [WS=1000] [BURST=2000] [MAX_CONNECTIONS=2500]
#
# Starts chronir-server (--max-connections MAX_CONNECTIONS) on a temporary data directory, registers
# accounts, then runs Reliability/hostile.py: SLOWLORIS slowloris connections, WS WebSocket clients
# that never read, malformed/oversized HTTP heads and WebSocket frames on repeat, and half-way a burst
# of BURST connections past the limit — while `hostile.py probe` (a separate process) sends GET /v1/me +
# GET /healthz every 10 ms on one keep-alive connection. Prints the probe's p50/p99/max, the server's
# RSS every 5 s and its peak (VmHWM), open fds, and what every hostile kind was answered. Fails when
# the probe's p99 is ≥ 50 ms, a probe request failed, or the server is not healthy afterwards.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Reliability/lib.sh
seconds=${1:-40}
slow=${2:-1000}
ws=${3:-1000}
burst=${4:-2000}
max_connections=${5:-2500}
find_binaries
ulimit -n "$(ulimit -Hn)"

# Every client here is 127.0.0.1: lift the per-address limits so the global ones are what is tested
# (docs/security-limits.md; Reliability/connection-limits.sh tests the per-address ones).
export CHRONIR_REGISTRATIONS_PER_IP_PER_HOUR=1000000 CHRONIR_REGISTRATIONS_PER_HOUR=1000000
export CHRONIR_MAX_CONNECTIONS_PER_IP=$max_connections CHRONIR_MAX_WEBSOCKETS_PER_IP=$max_connections
work=$(mktemp -d)
trap 'server_stop_all; rm -rf "$work"' EXIT
start_server "$work/server.log" --data-dir "$work/data" --password-hashing fast --log-level notice \
    --max-connections "$max_connections"
echo "server pid $server_pid on $base (--max-connections $max_connections); RSS at start $(rss_kib "$server_pid") KiB"

accounts=$(( (ws + 19) / 20 + 1 ))
for i in $(seq 1 "$accounts"); do
    curl -s -X POST "$base/v1/auth/register" -H 'Content-Type: application/json' \
        -d "{\"email\":\"h$i@example.com\",\"password\":\"correct horse\",\"display_name\":\"H$i\"}" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' >>"$work/tokens"
done
probe_token=$(curl -s -X POST "$base/v1/auth/register" -H 'Content-Type: application/json' \
    -d '{"email":"probe@example.com","password":"correct horse","display_name":"Probe"}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')

python3 Reliability/hostile.py probe -- "$base" "$probe_token" "$((seconds + 10))" >"$work/probe.out" 2>&1 &
probe_pid=$!
python3 Reliability/hostile.py attack "$base" "$work/tokens" --slowloris "$slow" --ws "$ws" --burst "$burst" \
    --seconds "$seconds" --ws-ping-interval "${WS_PING_INTERVAL:-0.5}" >"$work/attack.out" 2>&1 &
attack_pid=$!
t=0
while kill -0 "$attack_pid" 2>/dev/null; do
    [ $((t % 5)) -eq 0 ] && echo "t=${t}s rss=$(rss_kib "$server_pid") KiB fds=$(fd_count "$server_pid")"
    sleep 1
    t=$((t + 1))
done
wait "$attack_pid" || { cat "$work/attack.out"; echo "attack client failed" >&2; exit 1; }
wait "$probe_pid" || true
cat "$work/attack.out"
cat "$work/probe.out"
echo "server peak RSS (VmHWM): $(peak_kib "$server_pid") KiB; now $(rss_kib "$server_pid") KiB, fds $(fd_count "$server_pid")"
echo "server warnings and errors by message:"
grep '"level":"\(warning\|error\|critical\)"' "$work/server.log" | grep -o '"msg":"[^"]*"' | sort | uniq -c || true

status=0
curl -sf "$base/healthz" >/dev/null || { echo "HOSTILE FAIL: server unhealthy afterwards" >&2; status=1; }
p99=$(grep -o 'p99 [0-9.]*' "$work/probe.out" | grep -o '[0-9.]*$')
failed=$(grep -o '[0-9]* failed' "$work/probe.out" | grep -o '^[0-9]*')
awk -v p="$p99" 'BEGIN { exit !(p < 50) }' || { echo "HOSTILE FAIL: probe p99 ${p99} ms >= 50 ms" >&2; status=1; }
[ "$failed" = 0 ] || { echo "HOSTILE FAIL: $failed probe requests failed" >&2; status=1; }
exit $status
