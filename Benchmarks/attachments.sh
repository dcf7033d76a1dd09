#!/usr/bin/env bash
# Attachment uploads (issue 20, docs/attachments.md): N clients (default 50) each upload one PDF of SIZE
# bytes (default 5 MB) at once to a shared alarm, then download it; prints the server's RSS before, its
# peak during the uploads (sampled every 50 ms), after, and upload/download throughput (MB/s, whole
# batch). The PDF is valid (poppler renders its page) and padded with an unreferenced stream object,
# so the upload runs the whole path: streaming to a temporary file, sniffing, polyglot scan, decode,
# store (hard link), row; the download is sent from the file. Usage (BIN picks the binary; default the
# release build if there is one, else the debug build):
#   swift build -c release --product chronir-server && Benchmarks/attachments.sh [N] [SIZE]
#   BIN=.build/debug/chronir-server Benchmarks/attachments.sh 50 5000000
# TLS=1: the server speaks TLS itself (a throwaway self-signed certificate, --tls-cert/--tls-key), so the
# downloads go through the engine in chunks instead of sendfile.
set -euo pipefail
N=${1:-50}
SIZE=${2:-5000000}
BIN=${BIN:-.build/release/chronir-server}
[ -x "$BIN" ] || BIN=.build/debug/chronir-server
DATA=$(mktemp -d)
PORT=$((20000 + RANDOM % 20000))
SCHEME=http
TLS_FLAGS=()
if [ -n "${TLS:-}" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost -days 1 \
    -keyout "$DATA/key.pem" -out "$DATA/cert.pem" 2>/dev/null
  SCHEME=https
  TLS_FLAGS=(--tls-cert "$DATA/cert.pem" --tls-key "$DATA/key.pem")
fi
"$BIN" --port "$PORT" --data-dir "$DATA" "${TLS_FLAGS[@]}" --public-dir none --log-level warning --default-tier premium \
  --password-hashing fast --max-members 1000 --registrations-per-ip-per-hour 100000 --registrations-per-hour 100000 \
  --write-budget-per-minute 0 2>"$DATA/server.log" &
PID=$!
trap 'kill $PID 2>/dev/null; [ -n "${KEEP_LOG:-}" ] && cat "$DATA/server.log" >&2; rm -rf "$DATA"' EXIT
for _ in $(seq 600); do curl -kfs "$SCHEME://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
echo "binary $BIN, $SCHEME, $N clients × $SIZE bytes, load $(cut -d' ' -f1-3 /proc/loadavg)"
PYTHONPATH="$(dirname "$0")/../Reliability" python3 - "$PORT" "$PID" "$N" "$SIZE" "$SCHEME" <<'PY'
import http.client, json, ssl, sys, threading, time
from sample_pdf import pdf  # the one PDF builder (Reliability/sample_pdf.py)
port, pid, n, size, scheme = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]

def call(method, path, body=None, token=None, content_type="application/json"):
    if scheme == "https":
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=300, context=ssl._create_unverified_context())
    else:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    headers = {"Content-Type": content_type} if body is not None else {}
    if token: headers["Authorization"] = "Bearer " + token
    if isinstance(body, str): body = body.encode()
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse(); data = r.read(); c.close()
    return r.status, data

def rss_kib():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"): return int(line.split()[1])

def register(i):
    s, d = call("POST", "/v1/auth/register", json.dumps({"email": f"u{i}@bench.test", "password": "correct horse", "display_name": f"U{i}"}))
    assert s == 201, d
    reply = json.loads(d)
    return reply["token"], reply["user"]["id"]

owner, _ = register(0)
s, d = call("POST", "/v1/groups", json.dumps({"name": "Bench"}), owner); group = json.loads(d)["group"]["id"]
s, d = call("POST", f"/v1/groups/{group}/invite-code", None, owner); code = json.loads(d)["code"]
alarm_body = json.dumps({"title": "Filter", "schedule": {"type": "custom_days", "interval_days": 1, "start_date": "2026-02-01"},
    "times_of_day": [{"hour": 10, "minute": 0}], "timezone": "UTC", "completion_rule": "any", "assigned_to_uids": []})
tokens = []
for i in range(1, n + 1):
    t, uid = register(i); s, d = call("POST", "/v1/join", json.dumps({"code": code}), t); assert s == 200, d
    tokens.append((t, uid))
# 5 attachments per alarm; alarm creation is 5 a minute per creator: each alarm by its own admin.
alarms = []
for k in range((n + 4) // 5):
    t, uid = tokens[k]
    s, d = call("PATCH", f"/v1/groups/{group}/members/{uid}", json.dumps({"role": "admin"}), owner); assert s == 200, d
    s, d = call("POST", f"/v1/groups/{group}/alarms", alarm_body, t); assert s == 201, d
    alarms.append(json.loads(d)["id"])
tokens = [t for t, _ in tokens]
bodies = [pdf(size, f"client{i}-") for i in range(n)]
time.sleep(1)
before = rss_kib(); peak = before; done = False
def sample():
    global peak
    while not done:
        peak = max(peak, rss_kib()); time.sleep(0.05)
sampler = threading.Thread(target=sample); sampler.start()
results = [None] * n
def upload(i):
    results[i] = call("POST", f"/v1/groups/{group}/alarms/{alarms[i // 5]}/attachments", bodies[i], tokens[i], "application/pdf")
start = time.time()
threads = [threading.Thread(target=upload, args=(i,)) for i in range(n)]
for t in threads: t.start()
for t in threads: t.join()
upload_seconds = time.time() - start
upload_peak = peak; time.sleep(1); between = rss_kib(); peak = between
statuses = sorted(set(r[0] for r in results))
ids = [json.loads(r[1]).get("id") for r in results]
downloaded = [0] * n
def download(i):
    s, d = call("GET", f"/v1/groups/{group}/alarms/{alarms[i // 5]}/attachments/{ids[i]}", None, tokens[i])
    downloaded[i] = len(d) if s == 200 and d == bodies[i] else -1
start = time.time()
threads = [threading.Thread(target=download, args=(i,)) for i in range(n)]
for t in threads: t.start()
for t in threads: t.join()
download_seconds = time.time() - start
done = True; sampler.join()
after = rss_kib()
mb = n * size / 1e6
print(f"upload statuses {statuses}; downloads byte-equal {sum(1 for x in downloaded if x > 0)}/{n}")
print(f"upload   {mb:.0f} MB in {upload_seconds:.2f} s = {mb / upload_seconds:.1f} MB/s")
print(f"download {mb:.0f} MB in {download_seconds:.2f} s = {mb / download_seconds:.1f} MB/s")
print(f"RSS before {before/1024:.0f} MiB; uploads' peak {upload_peak/1024:.0f} MiB (+{(upload_peak-before)/1024:.0f} MiB; "
      f"{n} × {size/2**20:.1f} MiB = {n*size/2**20:.0f} MiB); between {between/1024:.0f} MiB; "
      f"downloads' peak {peak/1024:.0f} MiB (+{(peak-between)/1024:.0f} MiB); after {after/1024:.0f} MiB")
PY
