#!/usr/bin/env python3
"""Cross-instance delivery: a user's socket on instance B sees every change made on instance A.

Registers a user on A, signs in on B, subscribes to the `user` topic on B, then N times renames the
user through A and waits for the change on B. Prints p50/p99 of mutation-response → frame-on-B and
fails unless every change arrives exactly once, in seq order.

Then the shared attachments directory (docs/attachments.md, "Several instances"): a PDF uploaded through
A to a shared alarm downloads byte-equal through B (and its thumbnail), and one uploaded through B
downloads byte-equal through A. The script points both instances' `<data-dir>/attachments` at one
directory. Run by Reliability/two-instances.sh.
"""
import hashlib, http.client, json, os, sys, time

from chronir_ws import frame, open_blocking, read_message
from sample_pdf import pdf

a_port, b_port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
PASSWORD = "correct horse battery staple"


def call(port, method, path, body=None, token=None, raw_body=None, raw_answer=False):
    """One request; a JSON body, or `raw_body` bytes sent as application/pdf. The answer's JSON, or its
    bytes when `raw_answer`."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/pdf" if raw_body is not None else "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    c.request(method, path, raw_body if raw_body is not None else (json.dumps(body) if body is not None else None), headers)
    r = c.getresponse()
    raw = r.read()
    c.close()
    return r.status, (raw if raw_answer else (json.loads(raw) if raw else None))


email = f"two-{os.getpid()}@example.com"
status, doc = call(a_port, "POST", "/v1/auth/register", {"email": email, "password": PASSWORD, "display_name": "Two"})
assert status == 201, (status, doc)
token_a = doc["token"]
status, doc = call(b_port, "POST", "/v1/auth/login", {"email": email, "password": PASSWORD})
assert status == 200, ("login on B", status, doc)
token_b = doc["token"]

sock = open_blocking(b_port, token_b, timeout=30)
sock.sendall(frame(json.dumps({"op": "subscribe", "topic": "user"}).encode()))
snapshot = read_message(sock)
assert snapshot.get("type") == "snapshot", snapshot
seq = snapshot["seq"]

latencies, seqs = [], []
for i in range(n):
    name = f"Two {i}"
    status, _ = call(a_port, "PATCH", "/v1/me", {"display_name": name}, token_a)
    assert status == 200, status
    answered = time.monotonic()
    while True:
        msg = read_message(sock)
        if msg.get("type") != "change":
            continue
        seqs.append(msg["seq"])
        names = [c.get("doc", {}).get("display_name") for c in msg.get("changes", []) if c.get("kind") == "user"]
        if name in names:
            latencies.append((time.monotonic() - answered) * 1000)
            break

latencies.sort()
p50 = latencies[len(latencies) // 2]
p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
ordered = seqs == sorted(seqs) and len(seqs) == len(set(seqs)) and seqs[0] > seq
print(f"cross-instance delivery (A's 200 → frame on B), {n} changes: p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
      f"max {latencies[-1]:.1f} ms; seqs in order, none twice: {ordered}")

# — one attachments directory shared by both instances —
status, doc = call(a_port, "POST", "/v1/groups", {"name": "Two"}, token_a)
assert status == 201, ("group", status, doc)
group = doc["group"]["id"]
status, doc = call(a_port, "POST", f"/v1/groups/{group}/alarms", {
    "title": "Filter", "schedule": {"type": "custom_days", "interval_days": 1, "start_date": "2026-02-01"},
    "times_of_day": [{"hour": 10, "minute": 0}], "timezone": "UTC", "completion_rule": "any", "assigned_to_uids": []}, token_a)
assert status == 201, ("alarm", status, doc)
collection = f"/v1/groups/{group}/alarms/{doc['id']}/attachments"
shared_ok = True
shared_started = time.monotonic()
for up_port, down_port, up_token, down_token, way in ((a_port, b_port, token_a, token_b, "A → B"), (b_port, a_port, token_b, token_a, "B → A")):
    body = pdf(1_000_000, f"uploaded-through-{way}-")  # a PDF is stored as uploaded: byte-equal is the check
    status, doc = call(up_port, "POST", collection, raw_body=body, token=up_token)
    assert status == 201, ("upload", way, status, doc)
    status, got = call(down_port, "GET", f"{collection}/{doc['id']}", token=down_token, raw_answer=True)
    status_thumb, thumb = call(down_port, "GET", f"{collection}/{doc['id']}/thumbnail", token=down_token, raw_answer=True)
    same = status == 200 and hashlib.sha256(got).digest() == hashlib.sha256(body).digest()
    thumb_ok = status_thumb == 200 and thumb[:3] == b"\xff\xd8\xff"
    print(f"shared attachments directory, {way}: {len(body)} bytes uploaded, download {status} byte-equal: {same}, "
          f"thumbnail {status_thumb} JPEG: {thumb_ok}")
    shared_ok = shared_ok and same and thumb_ok
print(f"shared attachments directory checked in {time.monotonic() - shared_started:.2f} s")
sys.exit(0 if ordered and len(latencies) == n and shared_ok else 1)
