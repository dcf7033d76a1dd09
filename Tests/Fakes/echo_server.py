"""An HTTPS test server for the outbound client's tests (TestSupport's PythonService starts it).

Serves one ASGI app with hypercorn on loopback: TLS with ALPN h2 and http/1.1 on one port, plain
HTTP/1.1 and h2c (prior knowledge) on another. Binds both to free ports itself, then prints one line
`READY <tls-port> <plain-port>` to stdout; runs until killed.

Usage: echo_server.py CERT.pem KEY.pem [http1]   (http1: ALPN offers only http/1.1)

Exits by itself when its parent process goes away (a test runner that crashed leaves no server).

Endpoints (query parameters in brackets):
  /echo                      JSON: method, path, query, headers, body (text), http_version,
                             client_port (the peer's port: one per connection)
  /status/<code>[retry_after] that status, with Retry-After when given, JSON body {"status": code}
  /slow[seconds]             waits, then answers 200 "slow"
  /hold[name]                waits until /release with the same name is asked, then answers 200 "held"
  /release[name]             lets every /hold of that name (now or later) answer; 200 "released"
  /bytes[n, stream]          n bytes of "x"; with stream=1 sent in 4 KiB pieces without Content-Length
"""

import asyncio
import json
import sys
from urllib.parse import parse_qs

from hypercorn.asyncio import serve
from hypercorn.config import Config

from fake_service import lifespan, listening_socket, parent_gone, read_body


async def respond(send, status, body, headers=(), content_length=True):
    fields = [(b"content-type", b"application/json")] + [(k.encode(), v.encode()) for k, v in headers]
    if content_length:
        fields.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": fields})
    await send({"type": "http.response.body", "body": body})


# /hold's gates by name: a test holds a request open for as long as it needs, with no timing.
gates = {}


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        return await lifespan(receive, send)
    path = scope["path"]
    query = {k: v[-1] for k, v in parse_qs(scope["query_string"].decode()).items()}
    body = await read_body(receive)
    if path == "/echo":
        document = {
            "method": scope["method"],
            "path": path,
            "query": scope["query_string"].decode(),
            "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]],
            "body": body.decode("utf-8", "replace"),
            "http_version": scope["http_version"],
            "client_port": scope["client"][1] if scope.get("client") else None,
        }
        await respond(send, 200, json.dumps(document).encode())
    elif path.startswith("/status/"):
        code = int(path[len("/status/"):])
        headers = [("retry-after", query["retry_after"])] if "retry_after" in query else []
        await respond(send, code, json.dumps({"status": code}).encode(), headers)
    elif path == "/slow":
        await asyncio.sleep(float(query.get("seconds", "1")))
        await respond(send, 200, b"slow")
    elif path == "/hold":
        await gates.setdefault(query.get("name", ""), asyncio.Event()).wait()
        await respond(send, 200, b"held")
    elif path == "/release":
        gates.setdefault(query.get("name", ""), asyncio.Event()).set()
        await respond(send, 200, b"released")
    elif path == "/bytes":
        count = int(query.get("n", "0"))
        if query.get("stream") == "1":
            start = {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/octet-stream")]}
            await send(start)
            sent = 0
            while sent < count:
                piece = min(4096, count - sent)
                sent += piece
                await send({"type": "http.response.body", "body": b"x" * piece, "more_body": sent < count})
            if count == 0:
                await send({"type": "http.response.body", "body": b""})
        else:
            await respond(send, 200, b"x" * count)
    else:
        await respond(send, 404, b'{"error":"not found"}')


def main():
    certfile, keyfile = sys.argv[1], sys.argv[2]
    http1_only = len(sys.argv) > 3 and sys.argv[3] == "http1"
    secure, plain = listening_socket(), listening_socket()
    config = Config()
    config.certfile = certfile
    config.keyfile = keyfile
    config.bind = [f"fd://{secure.fileno()}"]
    config.insecure_bind = [f"fd://{plain.fileno()}"]
    config.alpn_protocols = ["http/1.1"] if http1_only else ["h2", "http/1.1"]
    config.keep_alive_timeout = 60
    config.loglevel = "WARNING"
    config.accesslog = None
    print(f"READY {secure.getsockname()[1]} {plain.getsockname()[1]}", flush=True)
    asyncio.run(serve(app, config, shutdown_trigger=parent_gone))


if __name__ == "__main__":
    main()
