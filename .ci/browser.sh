#!/usr/bin/env bash
# Browser end-to-end test of the web client (Public/): installs Chromium + chromium-driver (Debian) and
# Selenium, websocket-client and axe-selenium-python (PyPI, in a venv under .build/) when missing, starts the built chronir-server on a free
# loopback port with a fresh data directory, and runs Tests/Browser/e2e.py (two users in two headless
# Chromium sessions, desktop 1280×900 and phone 390×844), with axe-core on every page. Screenshots and
# axe-results.json go to $SCREENSHOT_DIR (default .build/screenshots), the CI artefacts. Then the same
# binary with --tls-cert/--tls-key and Tests/Browser/https_smoke.py: the web client over https and wss.
# Tests/Browser/imports.py checks the web client's module rules (docs/web-client.md#modules) first.
# Usage: .ci/browser.sh [PATH/TO/chronir-server]   (default .build/debug/chronir-server)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-.build/debug/chronir-server}")
export SCREENSHOT_DIR=${SCREENSHOT_DIR:-$PWD/.build/screenshots}

need=()
for pkg in chromium chromium-driver fonts-noto-color-emoji python3-venv; do  # the emoji font: alarm and group icons, as a household's browser shows them
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
venv=.build/browser-venv
if ! "$venv/bin/python" -c 'import selenium, websocket, axe_selenium_python' 2>/dev/null; then
    python3 -m venv "$venv"
    # websocket-client: the test's own DevTools connection (ServiceWorker events, the worker's target);
    # axe-selenium-python: ships axe-core, run on every page (0 serious or critical violations)
    "$venv/bin/pip" install -q 'selenium>=4.10,<5' 'websocket-client>=1.5,<2' 'axe-selenium-python>=2.1,<4'
fi

# The module rules first (no browser needed): imports resolve, no cycle, the shell lists every module.
python3 Tests/Browser/imports.py "${PUBLIC_DIR:-$PWD/Public}"

work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"' EXIT
# A free port, chosen before start: the public base URL (and with it the WebSocket Origin allow-list)
# must name the real port.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
base="http://127.0.0.1:$port"
# PUBLIC_DIR: another copy of the web client (e.g. an older commit's, to show a new step fails there).
public=${PUBLIC_DIR:-$PWD/Public}
"$bin" --port "$port" --data-dir "$work/data" --public-dir "$public" --public-base-url "$base" \
    --default-tier premium --password-hashing fast --log-level notice 2>"$work/log" &
pid=$!
for _ in $(seq 1 100); do
    curl -sf "$base/healthz" >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { echo "server exited during start-up" >&2; cat "$work/log" >&2; exit 1; }
    sleep 0.1
done
curl -sf "$base/healthz" >/dev/null || { echo "server did not answer" >&2; cat "$work/log" >&2; exit 1; }

mkdir -p "$SCREENSHOT_DIR" && rm -f "$SCREENSHOT_DIR"/*.png
status=0
# The admin tool beside the server changes an account's tier (the free-tier step of My alarms).
CHRONIR_URL=$base CHRONIR_ADMIN="$(dirname "$bin")/chronir-admin" CHRONIR_DATA_DIR="$work/data" \
    "$venv/bin/python" Tests/Browser/e2e.py || status=$?
if [ "$status" -ne 0 ]; then
    echo "--- server log:" >&2
    tail -50 "$work/log" >&2
fi
echo "screenshots: $SCREENSHOT_DIR"
ls "$SCREENSHOT_DIR"
[ "$status" -eq 0 ] || exit "$status"

# The web client over https (issue 22): the same binary on its own TLS listener, a throwaway CA and
# a P-256 certificate for 127.0.0.1; Chromium trusts exactly that key by its SPKI pin.
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
tls="$work/tls"
mkdir -p "$tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 2 \
    -subj "/CN=Chronir browser CI CA" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/key.pem" -out "$tls/cert.csr" \
    -subj "/CN=127.0.0.1" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$tls/ext"
openssl x509 -req -in "$tls/cert.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -set_serial 1 -days 2 \
    -extfile "$tls/ext" -out "$tls/cert.pem" 2>/dev/null
spki=$(openssl x509 -in "$tls/cert.pem" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
base="https://127.0.0.1:$port"
"$bin" --port "$port" --data-dir "$work/data-tls" --public-dir "$public" --public-base-url "$base" \
    --tls-cert "$tls/cert.pem" --tls-key "$tls/key.pem" --password-hashing fast --log-level notice 2>"$work/log-tls" &
pid=$!
for _ in $(seq 1 100); do
    curl -sf --cacert "$tls/ca.pem" "$base/healthz" >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { echo "TLS server exited during start-up" >&2; cat "$work/log-tls" >&2; exit 1; }
    sleep 0.1
done
CHRONIR_URL=$base CHRONIR_SPKI=$spki "$venv/bin/python" Tests/Browser/https_smoke.py || {
    echo "--- TLS server log:" >&2
    tail -50 "$work/log-tls" >&2
    exit 1
}
