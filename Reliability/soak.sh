#!/usr/bin/env bash
# Soak (nightly-style, not in CI): 10 minutes of HTTP mutations, 2,000 WebSocket subscribers and
# reconnects with resume against chronir-server, printing RSS, open fds, mutation p99 (the writer
# queue's observable proxy) and feed counters every minute, then the server's fds once clients left.
#
#   Reliability/soak.sh [SECONDS=600] [SUBSCRIBERS=2000] [MUTATIONS_PER_SECOND=20]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Reliability/lib.sh
seconds=${1:-600}
subscribers=${2:-2000}
rate=${3:-20}
find_binaries
ulimit -n "$(ulimit -Hn)"
# Every client here is 127.0.0.1: lift the per-address limits (docs/security-limits.md).
export CHRONIR_REGISTRATIONS_PER_IP_PER_HOUR=1000000 CHRONIR_REGISTRATIONS_PER_HOUR=1000000
export CHRONIR_MAX_CONNECTIONS_PER_IP=10000 CHRONIR_MAX_WEBSOCKETS_PER_IP=10000
work=$(mktemp -d)
trap 'server_stop_all; rm -rf "$work"' EXIT
metrics_token=soak-metrics-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
start_server "$work/server.log" --data-dir "$work/data" --password-hashing fast --log-level notice \
    --default-tier premium --metrics-token "$metrics_token" "${no_write_budgets[@]}"
echo "server pid $server_pid on $base; RSS at start $(rss_kib "$server_pid") KiB, fds $(fd_count "$server_pid")"
python3 Reliability/soak.py "$base" "$server_pid" --seconds "$seconds" --subscribers "$subscribers" \
    --accounts $(( (subscribers + 19) / 20 )) --rate "$rate" --metrics-token "$metrics_token"
sleep 3
echo "after the clients left: rss $(rss_kib "$server_pid") KiB, fds $(fd_count "$server_pid"), peak RSS $(peak_kib "$server_pid") KiB"
echo "server warnings/errors: $(grep -c '"level":"\(warning\|error\|critical\)"' "$work/server.log" || true)"
curl -sf "$base/healthz" >/dev/null && echo "healthz ok"
