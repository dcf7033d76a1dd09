"""The benchmark's webhook receiver (Benchmarks/notifications.sh): what Tests/Fakes/webhook_receiver.py
checks and records, at a fraction of its cost per call and on every core, so that it is not what
bounds the scheduler-lag benchmark.

The tests' fake is one Python process running hypercorn (HTTP/2 through the `h2` state machine):
≈ 330 µs of CPU per call, ≈ 3,000 calls/s at most on one core. This one speaks HTTP/1.1 (ALPN offers
only `http/1.1`) with a hand-written parser on asyncio's protocol callbacks, and runs WORKERS processes,
each with its own listening socket on one port (SO_REUSEPORT: the kernel spreads the server's
connections — the outbound client opens up to `OutboundLimits.maxConnectionsPerHost` for HTTP/1.1 —
across them). Each worker appends one line per call to its own file in DIR (O_APPEND, one write per
call); `GET /count` and `GET /received`, answered by whichever worker gets them, read every worker's
file, so they see every call.

Usage: webhook_sink.py CERT.pem KEY.pem SECRET_HEX WORKERS DIR   → prints `READY <port> <pid,pid,…>`
(the worker pids: the driver sums their CPU)

  POST /hook       → 204; checks X-Chronir-Signature == "v1=" + hex(HMAC-SHA-256(secret,
                   "<X-Chronir-Timestamp>.<body>")) in constant time and records the call
  GET  /count      → {"total": calls, "by_type": {type: calls}}
  GET  /received   → JSON list of {"key", "timestamp", "signature_ok", "body" (parsed), "status" (204),
                   "arrived" (this machine's Unix time, float, when the request was read)}
No scripted answers (the tests' fake has them): every hook is answered 204.
Exits when its parent does.
"""

import asyncio
import hashlib
import hmac
import json
import os
import signal
import socket
import ssl
import sys
import time

# A request head longer than this closes the connection (the server's are ≈ 300 bytes).
MAX_HEAD_BYTES = 16 * 1024
# A body longer than this closes the connection (the server's webhook bodies are < 2 KiB).
MAX_BODY_BYTES = 1024 * 1024

NO_CONTENT = b"HTTP/1.1 204 No Content\r\n\r\n"


def read_records(directory):
    """Every worker's records, as (type, arrived, signature_ok, key, timestamp, body bytes)."""
    records = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".calls"):
            continue
        with open(os.path.join(directory, name), "rb") as f:
            for line in f:
                kind, arrived, ok, key, timestamp, body = line.rstrip(b"\n").split(b"\t", 5)
                records.append((kind.decode(), float(arrived), ok == b"1", key.decode(), timestamp.decode(), body))
    return records


def json_response(document):
    body = json.dumps(document).encode()
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)) + body


class Sink(asyncio.Protocol):
    """One connection: HTTP/1.1 requests in, answers out, in order (no pipelining beyond the order)."""

    def __init__(self, secret, fd, directory):
        self.secret, self.fd, self.directory = secret, fd, directory
        self.buffer = b""
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD_BYTES:
                    self.transport.close()
                return
            lines = self.buffer[:end].split(b"\r\n")
            fields = {}
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                fields[name.strip().lower()] = value.strip()
            length = int(fields.get(b"content-length", b"0"))
            if length > MAX_BODY_BYTES:
                self.transport.close()
                return
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4:end + 4 + length]
            self.buffer = self.buffer[end + 4 + length:]
            method, path = lines[0].split(b" ", 2)[:2]
            self.transport.write(self.answer(method, path, fields, body))

    def answer(self, method, path, fields, body):
        if method == b"POST" and path == b"/hook":
            arrived = time.time()
            timestamp = fields.get(b"x-chronir-timestamp", b"")
            expected = b"v1=" + hmac.new(self.secret, timestamp + b"." + body, hashlib.sha256).hexdigest().encode()
            ok = hmac.compare_digest(expected, fields.get(b"x-chronir-signature", b""))
            try:
                kind = json.loads(body).get("type") or ""
            except (ValueError, AttributeError):
                kind = ""
            line = b"\t".join((kind.encode(), repr(arrived).encode(), b"1" if ok else b"0",
                               fields.get(b"x-chronir-key", b""), timestamp, body.replace(b"\n", b" "))) + b"\n"
            os.write(self.fd, line)
            return NO_CONTENT
        if method == b"GET" and path == b"/count":
            by_type = {}
            for record in read_records(self.directory):
                by_type[record[0]] = by_type.get(record[0], 0) + 1
            return json_response({"total": sum(by_type.values()), "by_type": by_type})
        if method == b"GET" and path == b"/received":
            return json_response([
                {"key": key, "timestamp": timestamp, "signature_ok": ok, "body": json.loads(body), "status": 204,
                 "received_at": arrived, "arrived": arrived}
                for _, arrived, ok, key, timestamp, body in read_records(self.directory)])
        return b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"


async def parent_gone(parent):
    while os.getppid() == parent:
        await asyncio.sleep(0.5)


def worker(index, port, context, secret, directory, parent, ready):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    os.write(ready, b"1")
    fd = os.open(os.path.join(directory, f"{index}.calls"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    async def serve():
        server = await asyncio.get_running_loop().create_server(
            lambda: Sink(secret, fd, directory), sock=sock, ssl=context)
        async with server:
            await parent_gone(parent)

    asyncio.run(serve())


def main():
    certfile, keyfile, secret, workers, directory = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile, keyfile)
    context.set_alpn_protocols(["http/1.1"])
    # Reserves a port every worker then binds with SO_REUSEPORT (this socket never listens).
    reserve = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    reserve.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    reserve.bind(("127.0.0.1", 0))
    port = reserve.getsockname()[1]
    me = os.getpid()
    children = []
    ready_in, ready_out = os.pipe()
    for index in range(workers):
        pid = os.fork()
        if pid == 0:
            worker(index, port, context, secret, directory, me, ready_out)
            os._exit(0)
        children.append(pid)
    listening = 0
    while listening < workers:  # every worker listens before READY
        listening += len(os.read(ready_in, workers))
    print(f"READY {port} {','.join(map(str, children))}", flush=True)
    parent = os.getppid()
    try:
        while os.getppid() == parent and all(os.waitpid(pid, os.WNOHANG) == (0, 0) for pid in children):
            time.sleep(0.5)
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    main()
