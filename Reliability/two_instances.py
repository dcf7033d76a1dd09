#!/usr/bin/env python3
"""Cross-instance delivery: a user's socket on instance B sees every change made on instance A.

Registers a user on A, signs in on B, subscribes to the `user` topic on B, then N times renames the
user through A and waits for the change on B. Prints p50/p99 of mutation-response → frame-on-B and
fails unless every change arrives exactly once, in seq order. Run by Reliability/two-instances.sh.
"""
import http.client, json, os, sys, time

from chronir_ws import frame, open_blocking, read_message

a_port, b_port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
PASSWORD = "correct horse battery staple"


def call(port, method, path, body=None, token=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    c.request(method, path, json.dumps(body) if body is not None else None, headers)
    r = c.getresponse()
    raw = r.read()
    c.close()
    return r.status, (json.loads(raw) if raw else None)


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
sys.exit(0 if ordered and len(latencies) == n else 1)
