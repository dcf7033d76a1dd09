#!/usr/bin/env bash
# The deploy/ files, exercised where they can run here:
#  1. nginx (Debian's) with deploy/nginx/chronir.conf — only its listen ports, certificate and
#     upstream replaced — terminating TLS (a self-signed certificate made here) in front of the built
#     chronir-server; over the proxy, with the certificate verified: register, a WebSocket
#     subscription to `user`, then HTTP mutations (create a group, rename it) whose changes must
#     arrive on that socket and on a `group:<id>` subscription.
#  2. systemd-analyze verify on the units (ExecStart pointed at the built binaries), if present.
# nginx runs unprivileged (as nobody when this script runs as root), with a temporary prefix and
# free loopback ports. Usage: .ci/proxy.sh [PATH/TO/chronir-server]  (env: CHRONIR_CI_VENV)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bin=$(realpath "${1:-.build/debug/chronir-server}")
venv=${CHRONIR_CI_VENV:-$PWD/.build/ci-venv}
websockets_version=17.4

need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v openssl >/dev/null || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
source scripts/lib/nginx.sh
nginx=$(nginx_binary)
if ! "$venv/bin/python" -c "import websockets, sys; sys.exit(websockets.__version__ != '$websockets_version')" 2>/dev/null; then
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install -q "websockets==$websockets_version"
fi

work=$(mktemp -d)
chmod 0755 "$work"
pid=""
nginx_pid=""
cleanup() {
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "PROXY FAIL: $*" >&2
    echo "--- nginx error log:" >&2; cat "$work/nginx/error.log" >&2 2>/dev/null || true
    echo "--- server log:" >&2; tail -30 "$work/log" >&2 || true
    exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

https_port=$(free_port)
http_port=$(free_port)
base="https://localhost:$https_port"

"$bin" --port 0 --data-dir "$work/data" --public-dir none --default-tier premium --password-hashing fast \
    --public-base-url "$base" --log-format json 2>"$work/log" &
pid=$!
port=""
for _ in $(seq 1 100); do
    port=$(grep -o '"address":"127.0.0.1:[0-9]*"' "$work/log" 2>/dev/null | head -1 | grep -o '[0-9]*"$' | tr -d '"' || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "server exited during start-up"
    sleep 0.1
done
[ -n "$port" ] || fail "server did not report its port"

# A self-signed certificate for localhost, made for this run.
mkdir -p "$work/nginx"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$work/nginx/key.pem" -out "$work/nginx/cert.pem" 2>/dev/null || fail "openssl"

# The repo's site config with only these lines replaced; every other directive is used as written.
sed -e "s|^\(\s*\)listen 80;|\1listen 127.0.0.1:$http_port;|" \
    -e "s|^\(\s*\)listen 443 ssl;|\1listen 127.0.0.1:$https_port ssl;|" \
    -e '/listen \[::\]/d' \
    -e "s|^\(\s*\)ssl_certificate .*|\1ssl_certificate $work/nginx/cert.pem;|" \
    -e "s|^\(\s*\)ssl_certificate_key .*|\1ssl_certificate_key $work/nginx/key.pem;|" \
    -e "s|server 127.0.0.1:8080;|server 127.0.0.1:$port;|" \
    deploy/nginx/chronir.conf >"$work/nginx/chronir.conf"
grep -q "listen 127.0.0.1:$https_port ssl;" "$work/nginx/chronir.conf" &&
    grep -q "server 127.0.0.1:$port;" "$work/nginx/chronir.conf" &&
    grep -q "ssl_certificate_key $work/nginx/key.pem;" "$work/nginx/chronir.conf" ||
    fail "deploy/nginx/chronir.conf no longer has the lines this script replaces"
nginx_start "$work/nginx" "$work/nginx/chronir.conf" 256 || fail "nginx -t"
for _ in $(seq 1 50); do
    curl -s -o /dev/null --cacert "$work/nginx/cert.pem" "$base/healthz" && break
    kill -0 "$nginx_pid" 2>/dev/null || fail "nginx exited"
    sleep 0.1
done
echo "chronir-server on 127.0.0.1:$port behind nginx $($nginx -v 2>&1 | sed 's/.*\///') on $base (TLS, self-signed)"

# Plain HTTP is redirected to HTTPS.
redirect=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "http://127.0.0.1:$http_port/v1/me")
[ "${redirect%% *}" = 301 ] || fail "port 80 answered $redirect, want a 301 to https"

"$venv/bin/python" - "$base" "$work/nginx/cert.pem" <<'PY' || fail "HTTP + WebSocket through the proxy"
import asyncio, json, ssl, sys, urllib.request
import websockets
base, cafile = sys.argv[1], sys.argv[2]
tls = ssl.create_default_context(cafile=cafile)  # verifies the chain and the host name

def call(method, path, body=None, token=None, want=200):
    req = urllib.request.Request(base + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    if body is not None: req.add_header("Content-Type", "application/json")
    if token: req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, context=tls) as r:
        assert r.status == want, (method, path, r.status)
        assert r.headers["X-Request-Id"], "X-Request-Id missing"
        return json.loads(r.read() or b"null")

async def expect(ws, kind, predicate=lambda m: True):
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), timeout=10))
        if message["type"] == kind and predicate(message): return message
        assert message["type"] in ("snapshot", "change", "presence", "pong"), message

async def main():
    session = call("POST", "/v1/auth/register",
                   {"email": "proxy@example.com", "password": "proxy password", "display_name": "Proxy"}, want=201)
    token = session["token"]
    url = base.replace("https://", "wss://") + "/v1/realtime"
    async with websockets.connect(url, ssl=tls, additional_headers={"Authorization": "Bearer " + token}) as ws:
        await ws.send(json.dumps({"op": "subscribe", "topic": "user"}))
        snapshot = await expect(ws, "snapshot")
        assert snapshot["data"]["user"]["email"] == "proxy@example.com", snapshot

        group = call("POST", "/v1/groups", {"name": "Through nginx"}, token, want=201)["group"]
        change = await expect(ws, "change", lambda m: m["topic"] == "user")
        assert any(c.get("id") == group["id"] for c in change["changes"]), change
        print(f"user feed: {change['event']} for the group created over HTTPS")

        await ws.send(json.dumps({"op": "subscribe", "topic": "group:" + group["id"]}))
        snapshot = await expect(ws, "snapshot", lambda m: m["topic"] == "group:" + group["id"])
        assert snapshot["data"]["group"]["name"] == "Through nginx", snapshot
        call("PATCH", f"/v1/groups/{group['id']}", {"name": "Renamed through nginx"}, token)
        change = await expect(ws, "change", lambda m: m["topic"] == "group:" + group["id"])
        docs = [c.get("doc") or {} for c in change["changes"]]
        assert change["event"] == "group_updated" and any(d.get("name") == "Renamed through nginx" for d in docs), change
        print("group feed: group_updated with the new name")

        await ws.send(json.dumps({"op": "ping", "id": 7}))
        pong = await expect(ws, "pong")
        assert pong.get("id") == 7, pong
    print("HTTP mutations and WebSocket changes through nginx (TLS verified): ok")

asyncio.run(main())
PY

# Upgrades must reach the server through the proxy's map (Connection: upgrade), plain requests not.
grep -q '"GET /v1/realtime HTTP/1.1" 101' "$work/nginx/access.log" || fail "no 101 for /v1/realtime in nginx's log"

if command -v systemd-analyze >/dev/null; then
    units="$work/units"
    mkdir -p "$units"
    admin=$(dirname "$bin")/chronir-admin
    for unit in chronir.service chronir-backup.service chronir-backup.timer; do
        sed -e "s|/usr/local/bin/chronir-server|$bin|" -e "s|/usr/local/bin/chronir-admin|$admin|" \
            -e "s|/usr/local/bin/chronir-backup|$repo/deploy/backup.sh|" "deploy/$unit" >"$units/$unit"
    done
    # Only the units' own problems count: drop-in noise from this container's systemd is ignored.
    (cd "$units" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no \
        chronir.service chronir-backup.service chronir-backup.timer) >"$work/verify.txt" 2>&1 || true
    if grep -E 'chronir' "$work/verify.txt"; then fail "systemd-analyze verify reported the problems above"; fi
    echo "systemd-analyze verify: chronir.service, chronir-backup.service, chronir-backup.timer ok"
else
    echo "systemd-analyze not installed: unit verification skipped"
fi
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
[ "$status" = 0 ] || fail "server exit status $status after SIGTERM (with a WebSocket served through nginx)"
echo "proxy: all checks passed"
