#!/usr/bin/env bash
# Native TLS (issue 22) with independent clients against the built binaries: a throwaway CA and two
# server certificates (openssl), then chronir-server --tls-cert/--tls-key/--http-redirect-port:
#   curl --http1.1 --cacert: 200 with Strict-Transport-Security; plain HTTP on the TLS port: no answer;
#   the redirect port: 308 to https; openssl s_client: TLS 1.1 refused, TLS 1.2 and 1.3 accepted, a
#   non-ECDHE TLS 1.2 suite refused, ALPN h2-only refused, TLS 1.2 renegotiation refused, TLS 1.3
#   resumption from a ticket;
#   SIGHUP: a connection opened before keeps working, s_client sees the new certificate, a broken
#   file is refused and the certificate in use kept;
#   Python websockets over wss://: chronir-ws-echo --tls-cert/--tls-key and /v1/realtime;
#   sslyze (.ci/tls-requirements.txt): its Mozilla "intermediate" check passes — no protocol below
#   TLS 1.2, forward secrecy on every suite, HSTS present, no known vulnerability.
# Builds nothing: run after `swift build`.
#
#   .ci/tls.sh [BUILD_DIR]      (default .build/debug)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(realpath "${1:-$REPO/.build/debug}")
SERVER=$BIN/chronir-server
ECHO=$BIN/chronir-ws-echo
for b in "$SERVER" "$ECHO"; do
    [ -x "$b" ] || { echo "tls.sh: $b missing (run swift build first)" >&2; exit 2; }
done

VENV=$REPO/.build/tls-venv
if ! cmp -s "$REPO/.ci/tls-requirements.txt" "$VENV/requirements.txt" 2>/dev/null; then
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q -r "$REPO/.ci/tls-requirements.txt"
    cp "$REPO/.ci/tls-requirements.txt" "$VENV/requirements.txt"
fi
PY=$VENV/bin/python

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "tls.sh: FAIL: $*" >&2; [ -f "$work/server.log" ] && tail -20 "$work/server.log" >&2; exit 1; }
ok() { echo "tls.sh: ok: $*" >&2; }

# A CA and two server certificates (P-256) for localhost / 127.0.0.1.
cd "$work"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
    -subj "/CN=Chronir TLS CI CA" -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' >ext
for name in first second; do
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$name.key" -out "$name.csr" \
        -subj "/CN=$name.localhost" 2>/dev/null
    openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -set_serial "$RANDOM$RANDOM" -days 60 -extfile ext \
        -out "$name.pem" 2>/dev/null
done
cp first.pem cert.pem
cp first.key key.pem

# wait_port LOG SED_EXPR PID → prints the port once the process logged it
wait_port() {
    local log=$1 expr=$2 pid=$3 port=
    for _ in $(seq 1 150); do
        port=$(sed -n "$expr" "$log" | head -1)
        [ -n "$port" ] && { echo "$port"; return 0; }
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "tls.sh: process exited" >&2; return 1; }
        sleep 0.1
    done
    echo "tls.sh: no port reported" >&2; return 1
}

"$SERVER" --port 0 --data-dir "$work/data" --public-dir none --log-format json --log-level notice \
    --password-hashing fast --default-tier premium --public-base-url https://localhost --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" --http-redirect-port 0 \
    2>"$work/server.log" &
server_pid=$!
pids+=("$server_pid")
port=$(wait_port "$work/server.log" 's/.*"msg":"listening".*"address":"127\.0\.0\.1:\([0-9]*\)".*/\1/p' "$server_pid")
redirect=$(wait_port "$work/server.log" 's/.*redirecting plain HTTP.*"address":"127\.0\.0\.1:\([0-9]*\)".*/\1/p' "$server_pid")
base=https://localhost:$port

head=$(curl -sS --http1.1 --cacert ca.pem -D - -o /dev/null "$base/healthz") || fail "curl over https"
grep -q '^HTTP/1.1 200' <<<"$head" || fail "https /healthz: $head"
grep -qi '^Strict-Transport-Security: max-age=31536000' <<<"$head" || fail "no HSTS header: $head"
ok "curl --cacert: 200 over https with Strict-Transport-Security"

if curl -sS --max-time 5 "http://127.0.0.1:$port/healthz" >"$work/plain.out" 2>&1; then
    fail "plain HTTP on the TLS port was answered: $(cat "$work/plain.out")"
fi
grep -q 'Empty reply' "$work/plain.out" || fail "plain HTTP on the TLS port: $(cat "$work/plain.out")"
ok "plain HTTP on the TLS port: closed without an answer"

head=$(curl -sS -D - -o /dev/null -H "Host: localhost:$redirect" "http://127.0.0.1:$redirect/v1/x?y=1")
grep -q '^HTTP/1.1 308' <<<"$head" || fail "redirect port: $head"
grep -qi "^Location: https://localhost:$port/v1/x?y=1" <<<"$head" || fail "redirect Location: $head"
ok "--http-redirect-port: 308 to https, path and query kept"
head=$(curl -sS -D - -o /dev/null -H "Host: evil.example" "http://127.0.0.1:$redirect/v1/x")
grep -qi "^Location: https://localhost:$port/v1/x" <<<"$head" || fail "redirect followed the request's Host: $head"
ok "--http-redirect-port: a hostile Host still redirects to --public-base-url's host"

s_client() { openssl s_client -connect "127.0.0.1:$port" -servername localhost -CAfile ca.pem "$@" </dev/null 2>&1 || true; }
# expect TEXT OUTPUT WHAT — fails with WHAT unless OUTPUT contains TEXT (no pipes: pipefail and grep -q race).
expect() { [[ "$2" == *"$1"* ]] || fail "$3"; }
expect 'alert protocol version' "$(s_client -tls1_1)" "TLS 1.1 accepted"
expect 'New, TLSv1.2, Cipher is ECDHE-' "$(s_client -tls1_2)" "TLS 1.2 with ECDHE not negotiated"
expect 'New, TLSv1.3' "$(s_client -tls1_3)" "TLS 1.3 not negotiated"
expect 'alert handshake failure' "$(s_client -tls1_2 -cipher AES128-GCM-SHA256)" "a non-ECDHE suite was accepted"
expect 'no application protocol' "$(s_client -alpn h2)" "ALPN h2-only accepted"
expect 'ALPN protocol: http/1.1' "$(s_client -alpn h2,http/1.1)" "ALPN http/1.1 not selected"
ok "s_client: TLS 1.1 refused, 1.2 (ECDHE only) and 1.3 accepted, ALPN http/1.1 only"
expect 'no renegotiation' "$( (printf 'R\n'; sleep 1) | openssl s_client -connect "127.0.0.1:$port" -CAfile ca.pem -tls1_2 2>&1 || true)" \
    "TLS 1.2 renegotiation was not refused"
ok "TLS 1.2 renegotiation refused"
sleep 1 | openssl s_client -connect "127.0.0.1:$port" -CAfile ca.pem -sess_out session.pem >/dev/null 2>&1 || true
expect 'Reused, TLSv1.3' "$(sleep 0.3 | openssl s_client -connect "127.0.0.1:$port" -CAfile ca.pem -sess_in session.pem 2>&1 || true)" \
    "TLS 1.3 session not resumed from a ticket"
ok "TLS 1.3 resumption from a session ticket"

# SIGHUP with a connection open: it keeps working; new connections get the new certificate.
mkfifo keepalive.in
(openssl s_client -connect "127.0.0.1:$port" -CAfile ca.pem -quiet <keepalive.in >keepalive.out 2>&1 &)
exec 3>keepalive.in
printf 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n' >&3
sleep 1
cp second.pem cert.pem
cp second.key key.pem
kill -HUP "$server_pid"
for _ in $(seq 1 50); do grep -q 'TLS certificate reloaded' "$work/server.log" && break; sleep 0.1; done
expect 'subject=CN = second.localhost' "$(s_client)" "after SIGHUP: new connections do not see the new certificate"
printf 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n' >&3
sleep 1
exec 3>&-
[ "$(grep -o 'HTTP/1.1 200' keepalive.out | wc -l)" = 2 ] || fail "the connection opened before SIGHUP broke: $(cat keepalive.out)"
ok "SIGHUP: new connections see the new certificate; one opened before keeps working"
echo broken >cert.pem
kill -HUP "$server_pid"
for _ in $(seq 1 50); do grep -q 'not reloaded' "$work/server.log" && break; sleep 0.1; done
grep -q 'not reloaded; keeping the one in use' "$work/server.log" || fail "a broken certificate file was not reported"
expect 'subject=CN = second.localhost' "$(s_client)" "a broken certificate file replaced the good one"
ok "SIGHUP with a broken file: refused and logged, the certificate in use kept"
cp second.pem cert.pem

# wss:// with Python websockets: the echo endpoint and the realtime feed.
"$ECHO" --host 127.0.0.1 --port 0 --tls-cert "$work/second.pem" --tls-key "$work/second.key" >"$work/echo.log" 2>&1 &
pids+=($!)
echo_port=$(wait_port "$work/echo.log" 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$!")
SSL_CERT_FILE=$work/ca.pem "$PY" "$REPO/Tests/Interop/ws_interop.py" echo "wss://localhost:$echo_port/" ||
    fail "websockets over wss:// against chronir-ws-echo"
SSL_CERT_FILE=$work/ca.pem "$PY" "$REPO/Tests/Interop/ws_interop.py" realtime "$base" ||
    fail "websockets over wss:// against /v1/realtime"
ok "Python websockets over wss://: echo and /v1/realtime"

# sslyze: the Mozilla "intermediate" configuration check (exit 0 when compliant) plus HSTS.
"$PY" -m sslyze --mozilla_config=intermediate --json_out="$work/sslyze.json" "localhost:$port" \
    --certinfo_ca_file "$work/ca.pem" >"$work/sslyze.txt" 2>&1 || { cat "$work/sslyze.txt" >&2; fail "sslyze: not compliant"; }
# --mozilla_config leaves out the HTTP headers and resumption scans: a second run for those.
"$PY" -m sslyze --http_headers --resum --json_out="$work/sslyze-http.json" "localhost:$port" >"$work/sslyze-http.txt" 2>&1 ||
    { cat "$work/sslyze-http.txt" >&2; fail "sslyze --http_headers --resum"; }
"$PY" - "$work/sslyze.json" "$work/sslyze-http.json" <<'PY' || fail "sslyze findings"
import json, sys
scan = json.load(open(sys.argv[1]))["server_scan_results"][0]["scan_result"]
def accepted(name):
    return scan[name]["result"]["accepted_cipher_suites"]
for old in ("ssl_2_0_cipher_suites", "ssl_3_0_cipher_suites", "tls_1_0_cipher_suites", "tls_1_1_cipher_suites"):
    assert not accepted(old), f"{old} accepted"
for suite in accepted("tls_1_2_cipher_suites"):
    assert suite["cipher_suite"]["name"].startswith("TLS_ECDHE_"), f"no forward secrecy: {suite['cipher_suite']['name']}"
assert accepted("tls_1_3_cipher_suites"), "no TLS 1.3"
http = json.load(open(sys.argv[2]))["server_scan_results"][0]["scan_result"]
hsts = http["http_headers"]["result"]["strict_transport_security_header"]
assert hsts is not None and hsts["max_age"] >= 31536000, f"HSTS: {hsts}"
resumption = http["session_resumption"]["result"]
print("sslyze: HSTS", hsts, "| resumption", {k: v for k, v in resumption.items() if "ticket" in k or "tls_1_3" in k})
for check in ("heartbleed", "openssl_ccs_injection", "robot"):
    print(check, json.dumps(scan[check]["result"])[:120])
assert not scan["heartbleed"]["result"]["is_vulnerable_to_heartbleed"]
assert not scan["openssl_ccs_injection"]["result"]["is_vulnerable_to_ccs_injection"]
assert scan["tls_compression"]["result"]["supports_compression"] is False
assert scan["session_renegotiation"]["result"]["is_vulnerable_to_client_renegotiation_dos"] is False
print("sslyze: TLS 1.2 suites", [s["cipher_suite"]["name"] for s in accepted("tls_1_2_cipher_suites")])
PY
grep -iE 'compliant|intermediate' "$work/sslyze.txt" | tail -3 >&2 || true
ok "sslyze: Mozilla intermediate compliant, ECDHE only, HSTS, no vulnerability found"
echo "tls.sh: all checks passed"
