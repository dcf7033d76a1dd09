"""What the push-provider fakes share (fake_apns.py, fake_fcm.py): hypercorn on one loopback TLS
port, a settable clock, per-token scripted responses, and the ASGI plumbing.

A fake's clock is not the wall clock: the tests drive the server with an injected `now`, so they tell
the fake what time it is (POST /control/clock {"now": <unix seconds>}) before each round, and the
fake judges token ages against it.
"""

import asyncio
import json
import os
import socket

from hypercorn.asyncio import serve
from hypercorn.config import Config


class Script:
    """Scripted answers per device token: a FIFO of {"status", …}; an empty one means success."""

    def __init__(self):
        self.queues = {}

    def add(self, token, responses):
        self.queues.setdefault(token, []).extend(responses)

    def next(self, token):
        queue = self.queues.get(token) or []
        return queue.pop(0) if queue else None


async def control(path, method, body, send, state, script):
    """The control endpoints every provider fake has — POST /control/clock {"now"} and POST
    /control/respond {"token", "responses"} — answered when `path` is one of them; returns whether it was."""
    if path == "/control/clock" and method == "POST":
        state["now"] = int(json.loads(body)["now"])
        await respond(send, 200, {"now": state["now"]})
        return True
    if path == "/control/respond" and method == "POST":
        document = json.loads(body)
        script.add(document["token"], document["responses"])
        await respond(send, 200, {})
        return True
    return False


async def read_body(receive):
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return body


async def respond(send, status, document=None, headers=()):
    body = b"" if document is None else json.dumps(document).encode()
    fields = [(k.encode(), str(v).encode()) for k, v in headers]
    if document is not None:
        fields.append((b"content-type", b"application/json"))
    fields.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": fields})
    await send({"type": "http.response.body", "body": body})


def provider_app(handle, state, script):
    """The ASGI app of a provider fake: the ASGI lifespan, the body read whole, the control endpoints
    (`control`), then `await handle(scope, path, method, body, send)` for every other request."""

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            return await lifespan(receive, send)
        body = await read_body(receive)
        if await control(scope["path"], scope["method"], body, send, state, script):
            return
        return await handle(scope, scope["path"], scope["method"], body, send)

    return app


async def lifespan(receive, send):
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def headers_of(scope):
    """Request header fields as a dict of lower-case name -> last value."""
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}


def listening_socket():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


async def parent_gone():
    parent = os.getppid()
    while os.getppid() == parent:
        await asyncio.sleep(0.5)


def run(app, sock, certfile, keyfile, alpn):
    """Serves `app` over TLS on `sock` with ALPN `alpn`; prints READY <port>; exits with the parent."""
    config = Config()
    config.certfile = certfile
    config.keyfile = keyfile
    config.bind = [f"fd://{sock.fileno()}"]
    config.alpn_protocols = alpn
    config.keep_alive_timeout = 60
    # Hypercorn closes an HTTP/2 connection after 1,000 requests by default, cutting the streams in
    # flight; Benchmarks/notifications.sh sends 10,000+ on one connection and measures the server.
    config.keep_alive_max_requests = 1_000_000_000
    config.loglevel = "WARNING"
    config.accesslog = None
    print(f"READY {sock.getsockname()[1]}", flush=True)
    asyncio.run(serve(app, config, shutdown_trigger=parent_gone))
