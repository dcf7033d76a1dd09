#!/usr/bin/env python3
"""Cross-instance delivery: a user's socket on instance B sees every change made on instance A.

Registers a user on A, signs in on B, subscribes to the `user` topic on B, then N times renames the
user through A and waits for the change on B. Prints p50/p99 of mutation-response → frame-on-B and
fails unless every change arrives exactly once, in seq order. Run by Reliability/two-instances.sh.
"""
import base64, http.client, json, os, socket, struct, sys, time

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


def frame(payload):
    key = os.urandom(4)
    head = struct.pack("!BB", 0x81, 0x80 | len(payload))
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def read_message(sock):
    def exactly(k):
        data = b""
        while len(data) < k:
            chunk = sock.recv(k - len(data))
            if not chunk:
                raise ConnectionError("socket closed")
            data += chunk
        return data
    while True:
        b0, b1 = exactly(2)
        k = b1 & 0x7F
        if k == 126:
            k = struct.unpack("!H", exactly(2))[0]
        elif k == 127:
            k = struct.unpack("!Q", exactly(8))[0]
        payload = exactly(k)
        if b0 & 0x0F == 9:
            sock.sendall(bytes([0x8A, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
        elif b0 & 0x0F == 1:
            return json.loads(payload)


email = f"two-{os.getpid()}@example.com"
status, doc = call(a_port, "POST", "/v1/auth/register", {"email": email, "password": PASSWORD, "display_name": "Two"})
assert status == 201, (status, doc)
token_a = doc["token"]
status, doc = call(b_port, "POST", "/v1/auth/login", {"email": email, "password": PASSWORD})
assert status == 200, ("login on B", status, doc)
token_b = doc["token"]

sock = socket.create_connection(("127.0.0.1", b_port), timeout=30)
key = base64.b64encode(os.urandom(16)).decode()
sock.sendall((f"GET /v1/realtime HTTP/1.1\r\nHost: 127.0.0.1:{b_port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer {token_b}\r\n\r\n").encode())
head = b""
while b"\r\n\r\n" not in head:
    head += sock.recv(1)
assert b" 101 " in head.split(b"\r\n")[0], head
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
