#!/usr/bin/env bash
# Interoperability with an independent WebSocket client, the Python `websockets` library
# (Tests/Interop/ws_interop.py): chronir-ws-echo (text/binary of several sizes, with and without
# permessage-deflate, fragmented, ping/pong, clean close), then chronir-server's /v1/realtime
# (bearer upgrade, user snapshot, a group created over HTTP arrives as a change, bad token → 4001).
# Builds nothing: run after `swift build`. Installs `websockets` into .build/interop-venv when missing.
#
#   .ci/websockets-interop.sh [BUILD_DIR]      (default .build/debug)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(realpath "${1:-$REPO/.build/debug}")
ECHO=$BIN/chronir-ws-echo
SERVER=$BIN/chronir-server
for b in "$ECHO" "$SERVER"; do
    [ -x "$b" ] || { echo "websockets-interop.sh: $b missing (run swift build first)" >&2; exit 2; }
done

VENV=$REPO/.build/interop-venv
if ! "$VENV/bin/python" -c 'import websockets.sync.client' 2>/dev/null; then
    python3 -m venv "$VENV" 2>/dev/null || { apt-get install -y -qq python3-venv >/dev/null; python3 -m venv "$VENV"; }
    "$VENV/bin/pip" install -q 'websockets>=13'
fi
PY=$VENV/bin/python
echo "websockets-interop.sh: websockets $("$PY" -c 'import websockets; print(websockets.__version__)')" >&2

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# wait_port LOG SED_EXPR PID → prints the port once the process logged it
wait_port() {
    local log=$1 expr=$2 pid=$3 port=
    for _ in $(seq 1 100); do
        port=$(sed -n "$expr" "$log" | head -1)
        [ -n "$port" ] && { echo "$port"; return 0; }
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "websockets-interop.sh: process exited" >&2; return 1; }
        sleep 0.1
    done
    echo "websockets-interop.sh: no port reported" >&2; return 1
}

"$ECHO" --host 127.0.0.1 --port 0 >"$work/echo.log" 2>&1 &
pids+=($!)
echo_port=$(wait_port "$work/echo.log" 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "${pids[0]}")
"$PY" "$REPO/Tests/Interop/ws_interop.py" echo "ws://127.0.0.1:$echo_port/"

"$SERVER" --port 0 --data-dir "$work/data" --public-dir none --log-format json --log-level notice \
    --password-hashing fast --default-tier premium 2>"$work/server.log" &
pids+=($!)
server_port=$(wait_port "$work/server.log" 's/.*"address":"127\.0\.0\.1:\([0-9]*\)".*/\1/p' "${pids[1]}")
"$PY" "$REPO/Tests/Interop/ws_interop.py" realtime "http://127.0.0.1:$server_port" \
    || { echo "--- server log:" >&2; tail -20 "$work/server.log" >&2; exit 1; }
echo "websockets-interop.sh: all checks passed"
