#!/usr/bin/env python3
"""Connection and registration limits from one address (issue 15 #1, #2). Driven by
connection-limits.sh; stdlib only. Every client socket binds a 127.0.0.x source address (all of
127/8 is loopback on Linux), so one process plays several clients.

  connection-limits.py BASE_URL MAX_CONNECTIONS PUBLIC_PATH

Prints one line per measurement and a final verdict; exits 1 when a limit does not hold:
  - one address may hold at most half of --max-connections (idle keep-alive sockets, and
    WebSockets of 5 accounts × 20), and a second address is still served meanwhile;
  - a full server still answers GET /healthz;
  - one address gets at most 10 registrations accepted (the default per hour);
and reports static-file latency (p50/p99/max) idle and while registrations run.
"""
import base64
import json
import os
import socket
import statistics
import sys
import threading
import time
import urllib.parse

HOLDER = "127.0.0.1"   # the greedy client
OTHER = "127.0.0.2"    # the client that must still be served
ACCOUNTS = "127.0.0.4"  # where the WebSocket accounts are registered from
REGISTRAR = "127.0.0.3"  # the registration flood


def connect(host, port, source, timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(s):
    """(status, headers dict, body) of one HTTP/1.1 response with Content-Length (or until close)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a response: %r" % data[:80])
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if status == 101:
        return status, headers, rest
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        return status, headers, rest[:n]
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return status, headers, rest
        rest += chunk


def request(s, method, path, body=None, headers=()):
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: 127.0.0.1"]
    payload = b""
    if body is not None:
        payload = json.dumps(body).encode()
        lines += ["Content-Type: application/json", "Content-Length: %d" % len(payload)]
    lines += ["%s: %s" % h for h in headers]
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
    return read_response(s)


def once(host, port, source, method, path, body=None, headers=()):
    """One request on a fresh connection from `source`: (status, headers, body), or (0, {}, error)."""
    try:
        s = connect(host, port, source)
        try:
            return request(s, method, path, body, headers)
        finally:
            s.close()
    except OSError as error:
        return 0, {}, str(error).encode()


def hold_idle_sockets(host, port, source, n):
    """Opens n keep-alive connections from `source`, one GET / each; returns (held sockets, refused
    statuses). A socket is held when it was answered 200 and stays open."""
    held, refused = [], {}
    for _ in range(n):
        try:
            s = connect(host, port, source)
            status, headers, _ = request(s, "GET", "/")
        except OSError as error:
            refused[str(error)] = refused.get(str(error), 0) + 1
            continue
        if status == 200 and headers.get("connection", "").lower() != "close":
            held.append(s)
        else:
            refused[status] = refused.get(status, 0) + 1
            s.close()
    return held, refused


def open_websocket(host, port, source, token):
    s = connect(host, port, source)
    key = base64.b64encode(os.urandom(16)).decode()
    status, headers, _ = request(s, "GET", "/v1/realtime", headers=(
        ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", key),
        ("Sec-WebSocket-Version", "13"), ("Authorization", "Bearer " + token)))
    return s, status


def still_open(sockets):
    """How many of `sockets` the server has not closed (a read would block, not return EOF)."""
    alive = 0
    for s in sockets:
        s.setblocking(False)
        try:
            data = s.recv(65536, socket.MSG_PEEK)
            alive += 1 if data else 0  # a ping or frame: open; b"": closed
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
        s.setblocking(True)
    return alive


def register(host, port, source, email):
    status, headers, body = once(host, port, source, "POST", "/v1/auth/register",
                                 {"email": email, "password": "correct horse", "display_name": "L"})
    token = None
    if status == 201:
        token = json.loads(body)["token"]
    return status, headers, token


def wait_until_served(host, port, seconds=10):
    """After closing sockets: waits until the server has seen the closes and serves OTHER again."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if once(host, port, OTHER, "GET", "/healthz")[0] == 200 and once(host, port, OTHER, "GET", "/")[0] == 200:
            return
        time.sleep(0.1)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def static_latency(host, port, path, seconds, stop=None):
    """GET `path` on one keep-alive connection from OTHER for `seconds`: latencies in ms."""
    s = connect(host, port, OTHER)
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (stop and stop.is_set()):
        t = time.perf_counter()
        status, _, _ = request(s, "GET", path)
        samples.append((time.perf_counter() - t) * 1000)
        if status != 200:
            raise RuntimeError("static file answered %d" % status)
        time.sleep(0.01)
    s.close()
    return samples


def main():
    base, max_connections, public_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    url = urllib.parse.urlparse(base)
    host, port = url.hostname, url.port
    share = max(1, max_connections // 2)
    failures = []

    # 1. Idle keep-alive sockets from one address.
    held, refused = hold_idle_sockets(host, port, HOLDER, max_connections)
    other = once(host, port, OTHER, "GET", "/healthz")[0]
    print("idle keep-alive sockets: one address held %d of %d tried (refused: %s); --max-connections %d"
          % (len(held), max_connections, refused or "none", max_connections))
    print("  meanwhile another address (%s): GET /healthz -> %d" % (OTHER, other))
    if len(held) > share:
        failures.append("one address held %d idle sockets (> %d, half of %d)" % (len(held), share, max_connections))
    if other != 200:
        failures.append("another address was not served while one held %d sockets (%d)" % (len(held), other))

    # The rest of the server filled from other addresses: full, but /healthz still answers.
    fillers = []
    for i in range(10, 250):
        if len(held) + len(fillers) >= max_connections:
            break
        more, _ = hold_idle_sockets(host, port, "127.0.1.%d" % i, max_connections - len(held) - len(fillers))
        fillers += more
    full_plain = once(host, port, "127.0.2.1", "GET", "/")[0]
    full_health = once(host, port, "127.0.2.1", "GET", "/healthz")
    established = 0
    for s in held[:5] + fillers[:5]:
        try:
            established += request(s, "GET", "/healthz")[0] == 200
        except OSError:
            pass
    print("server filled to %d connections: a new client gets %d; GET /healthz -> %d %s; "
          "established clients answered %d/%d"
          % (len(held) + len(fillers), full_plain, full_health[0], full_health[2].decode(errors="replace"),
             established, len(held[:5] + fillers[:5])))
    if full_health[0] != 200:
        failures.append("a full server did not answer /healthz (%d)" % full_health[0])
    if established != len(held[:5] + fillers[:5]):
        failures.append("established clients were not all served on a full server")
    for s in held + fillers:
        s.close()
    wait_until_served(host, port)

    # 2. WebSockets from one address: 5 accounts × 20 sockets.
    tokens = []
    for i in range(5):
        status, _, token = register(host, port, ACCOUNTS, "ws%d-%d@example.com" % (i, os.getpid()))
        if token:
            tokens.append(token)
    sockets, statuses = [], {}
    for token in tokens:
        for _ in range(20):
            try:
                s, status = open_websocket(host, port, HOLDER, token)
            except OSError as error:
                statuses[str(error)] = statuses.get(str(error), 0) + 1
                continue
            statuses[status] = statuses.get(status, 0) + 1
            if status == 101:
                sockets.append(s)
            else:
                s.close()
    time.sleep(0.5)
    alive = still_open(sockets)
    other = once(host, port, OTHER, "GET", "/healthz")[0]
    print("websockets: one address held %d open of %d tried with %d accounts (answers: %s)"
          % (alive, 20 * len(tokens), len(tokens), statuses))
    print("  meanwhile another address (%s): GET /healthz -> %d" % (OTHER, other))
    if alive > share:
        failures.append("one address held %d WebSockets (> %d)" % (alive, share))
    if other != 200:
        failures.append("another address was not served while one held %d WebSockets (%d)" % (alive, other))
    for s in sockets:
        s.close()
    wait_until_served(host, port)

    # 3. Registrations from one address, and static-file latency meanwhile.
    idle = static_latency(host, port, public_path, 2)
    results = {"accepted": 0, "refused": 0, "retry_after": None, "other": {}}
    stop = threading.Event()

    def flood():
        n = 0
        while not stop.is_set() and n < 150:
            status, headers, _ = register(host, port, REGISTRAR, "r%d-%d@example.com" % (n, os.getpid()))
            n += 1
            if status == 201:
                results["accepted"] += 1
            elif status == 429:
                results["refused"] += 1
                results["retry_after"] = headers.get("retry-after")
            else:
                results["other"][status] = results["other"].get(status, 0) + 1

    started = time.monotonic()
    flooders = [threading.Thread(target=flood) for _ in range(1)]
    for t in flooders:
        t.start()
    loaded = static_latency(host, port, public_path, 1000, stop=_Until(flooders))
    for t in flooders:
        t.join()
    elapsed = time.monotonic() - started
    attempts = results["accepted"] + results["refused"] + sum(results["other"].values())
    per_hour = results["accepted"] if results["refused"] else int(results["accepted"] / elapsed * 3600)
    print("registrations from one address: %d attempts in %.1f s: %d accepted, %d refused 429 (Retry-After %s), other %s"
          % (attempts, elapsed, results["accepted"], results["refused"], results["retry_after"], results["other"] or "none"))
    print("  => at most %d accounts per hour from one address" % per_hour)
    print("static file %s: idle p50 %.2f ms p99 %.2f ms; during registrations p50 %.2f ms p99 %.2f ms max %.2f ms (%d samples)"
          % (public_path, statistics.median(idle), percentile(idle, 0.99), statistics.median(loaded),
             percentile(loaded, 0.99), max(loaded), len(loaded)))
    # 3b. The same from many addresses (each within its own allowance): scrypt really runs, and
    # static files must not queue behind it.
    spread = {"accepted": 0, "statuses": {}}

    def spread_flood(worker):
        end = time.monotonic() + 5
        n = 0
        while time.monotonic() < end:
            source = "127.0.%d.%d" % (3 + worker, 1 + n // 10)
            status, _, _ = register(host, port, source, "s%d-%d-%d@example.com" % (worker, n, os.getpid()))
            n += 1
            spread["statuses"][status] = spread["statuses"].get(status, 0) + 1
            if status == 201:
                spread["accepted"] += 1

    flooders = [threading.Thread(target=spread_flood, args=(w,)) for w in range(4)]
    started = time.monotonic()
    for t in flooders:
        t.start()
    hashing = static_latency(host, port, public_path, 1000, stop=_Until(flooders))
    for t in flooders:
        t.join()
    print("registrations from many addresses (4 in parallel, 5 s): %d accepted (%.0f/s; answers %s)"
          % (spread["accepted"], spread["accepted"] / (time.monotonic() - started), spread["statuses"]))
    print("static file %s while scrypt runs: p50 %.2f ms p99 %.2f ms max %.2f ms (%d samples)"
          % (public_path, statistics.median(hashing), percentile(hashing, 0.99), max(hashing), len(hashing)))
    if results["accepted"] > 10:
        failures.append("one address registered %d accounts (> 10 per hour)" % results["accepted"])

    for failure in failures:
        print("LIMIT FAIL: " + failure)
    print("connection limits: %s" % ("FAIL" if failures else "OK"))
    return 1 if failures else 0


class _Until:
    """An Event-like stop flag that is set once every thread in `threads` has finished."""
    def __init__(self, threads):
        self.threads = threads

    def is_set(self):
        return not any(t.is_alive() for t in self.threads)


if __name__ == "__main__":
    sys.exit(main())
