#!/usr/bin/env bash
# Connection and registration limits from one client address (issue 15 #1, #2; docs/security-limits.md).
#
#   Reliability/connection-limits.sh [MAX_CONNECTIONS=100]
#
# Starts chronir-server with --max-connections MAX_CONNECTIONS (every other limit at its default,
# real scrypt cost) on a temporary data directory and runs Reliability/connection-limits.py, which
# binds its sockets to 127.0.0.x source addresses: one address opens MAX_CONNECTIONS idle keep-alive
# sockets, then 5 accounts × 20 WebSockets; another address (127.0.0.2) is probed meanwhile; the
# rest of the server is filled from other addresses and GET /healthz is probed on the full server;
# then one address registers up to 150 accounts while a static file is fetched every 10 ms.
# Prints how many sockets one address could hold, whether the others were served, the
# registrations accepted from one address, and the static-file latency idle and under load.
# Fails when one address holds more than half of MAX_CONNECTIONS, another address or /healthz is
# not served, or one address registers more than 10 accounts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Reliability/lib.sh
max_connections=${1:-100}
find_binaries
ulimit -n "$(ulimit -Hn)"
work=$(mktemp -d)
trap 'server_stop_all; rm -rf "$work"' EXIT
start_server "$work/server.log" --data-dir "$work/data" --log-level notice --public-dir Public \
    --max-connections "$max_connections"
echo "server pid $server_pid on $base (--max-connections $max_connections, $(basename "$(dirname "$SERVER")") build)"
status=0
python3 Reliability/connection-limits.py "$base" "$max_connections" /index.html || status=$?
curl -sf "$base/healthz" >/dev/null || { echo "LIMIT FAIL: server unhealthy afterwards" >&2; status=1; }
exit $status
