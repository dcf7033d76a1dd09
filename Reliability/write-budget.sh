#!/usr/bin/env bash
# Write budgets (issue 15 finding 3; docs/security-budgets.md): one member PATCHes a shared alarm's
# note with 2,000 new characters as fast as it can (WORKERS keep-alive connections, Retry-After
# ignored) for SECONDS against chronir-server started with its DEFAULT budgets, then prints how
# much the database grew, the growth projected to an hour, and how many requests got 429. Without
# budgets this projects to ≈ 6 GB an hour per account.
#
#   Reliability/write-budget.sh [SECONDS=20] [WORKERS=4] [extra chronir-server flags…]
#   (CHRONIR_BIN_DIR=DIR picks the binaries; e.g. `… 20 4 --write-budget-per-minute 0
#   --write-bytes-per-hour 0` measures the unbudgeted server)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Reliability/lib.sh
seconds=${1:-20}
workers=${2:-4}
shift $(( $# > 2 ? 2 : $# ))
find_binaries
work=$(mktemp -d)
trap 'server_stop_all; rm -rf "$work"' EXIT
# Only hashing cost, tier and log level are set: the write budgets are the defaults (unless the
# caller passes flags).
start_server "$work/server.log" --data-dir "$work/data" --password-hashing fast --default-tier premium \
    --log-level notice "$@"
echo "server pid $server_pid on $base ($SERVER${*:+ $*})"
python3 - "$base" "$work/data/chronir.sqlite" "$seconds" "$workers" <<'PY'
import http.client, json, os, sqlite3, sys, threading, time, urllib.parse

base, db_path, seconds, workers = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
url = urllib.parse.urlsplit(base)

def connect():
    return http.client.HTTPConnection(url.hostname, url.port, timeout=30)

def call(conn, method, path, body=None, token=None):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token: headers["Authorization"] = "Bearer " + token
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    r = conn.getresponse()
    data = r.read()
    return r.status, (json.loads(data) if data else None), r.getheader("Retry-After")

def logical_bytes():
    # page_count × page_size as a reader sees it (WAL frames included): the data, not file slack.
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return db.execute("PRAGMA page_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]
    finally:
        db.close()

def file_bytes():
    return sum(os.path.getsize(db_path + s) for s in ("", "-wal", "-shm") if os.path.exists(db_path + s))

def change_log_rows():
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return db.execute("SELECT count(*) FROM change_log").fetchone()[0]
    finally:
        db.close()

c = connect()
status, body, _ = call(c, "POST", "/v1/auth/register",
                       {"email": "member@example.com", "password": "member password", "display_name": "Member"})
assert status == 201, (status, body)
token = body["token"]
status, body, _ = call(c, "POST", "/v1/groups", {"name": "Household"}, token)
assert status == 201, (status, body)
group = body["group"]["id"]
status, body, _ = call(c, "POST", f"/v1/groups/{group}/alarms", {
    "title": "Bins", "timezone": "UTC", "times_of_day": [{"hour": 7, "minute": 0}],
    "schedule": {"type": "custom_days", "interval_days": 1, "start_date": "2026-01-01"}}, token)
assert status == 201, (status, body)
alarm_path = f"/v1/groups/{group}/alarms/{body['id']}"
c.close()

counts = {"ok": 0, "429": 0, "other": 0}
retry_after = set()
body_bytes = [0]
lock = threading.Lock()
start_logical, start_files, start_rows = logical_bytes(), file_bytes(), change_log_rows()
deadline = time.monotonic() + seconds

def flood(n):
    conn = connect()
    i = 0
    while time.monotonic() < deadline:
        note = chr(97 + (n * 7 + i) % 26) * 2000  # a different note every time: each PATCH is a real change
        i += 1
        status, _, after = call(conn, "PATCH", alarm_path, {"note": note}, token)
        with lock:
            if status == 200:
                counts["ok"] += 1
                body_bytes[0] += len(json.dumps({"note": note}))
            elif status == 429:
                counts["429"] += 1
                retry_after.add(after)
            else:
                counts["other"] += 1
    conn.close()

started = time.monotonic()
threads = [threading.Thread(target=flood, args=(n,)) for n in range(workers)]
for t in threads: t.start()
for t in threads: t.join()
elapsed = time.monotonic() - started
grew_logical = logical_bytes() - start_logical
grew_files = file_bytes() - start_files
rows = change_log_rows() - start_rows
total = sum(counts.values())

def human(n):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000: return f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n:,.1f} PB"

print(f"{total} PATCHes in {elapsed:.1f} s from {workers} connections: {counts['ok']} accepted, "
      f"{counts['429']} got 429 (Retry-After {sorted(a for a in retry_after if a) or '-'}), {counts['other']} other")
print(f"database grew {human(grew_logical)} (pages; files incl. WAL: {human(grew_files)}), "
      f"{rows} change-log rows; accepted bodies {human(body_bytes[0])}")
print(f"projected from this run: {human(grew_logical / elapsed * 3600)} per hour")
if counts["ok"] and counts["429"]:
    per_write = grew_logical / counts["ok"]
    # Past the burst the budgets admit at most min(120/minute, 5 MiB of bodies an hour) writes.
    body = body_bytes[0] / counts["ok"]
    steady = min(120 * 60, 5 * 1024 * 1024 / max(body, 1024))
    print(f"steady state under the default budgets: ≤ {steady:,.0f} writes/hour × {human(per_write)}/write "
          f"= {human(steady * per_write)} per hour")
if os.environ.get("EXPECT_BUDGETS") == "1" and not counts["429"]:
    print("FAILED: no write was refused; the budgets do not hold")
    sys.exit(1)
sys.exit(1 if counts["other"] else 0)
PY
curl -sf "$base/healthz" >/dev/null && echo "healthz ok"
