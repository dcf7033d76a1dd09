"""A fake operator webhook for the notification tests (TestSupport's PythonService starts it).

HTTPS on loopback (the test CA's server certificate). Checks every POST /hook the way a real
receiver must: X-Chronir-Signature == "v1=" + hex(HMAC-SHA-256(secret, "<X-Chronir-Timestamp>.<body>")),
compared in constant time; records what it got. The timestamp is not compared with this machine's
clock (the tests run the server on a manual clock); a real receiver must also refuse old ones.

Usage: webhook_receiver.py CERT.pem KEY.pem SECRET_HEX   → prints `READY <port>`

  POST /hook       → the next scripted answer (default 204); recorded
  POST /script     body {"answers": [{"status": 503, "retry_after": "7"}, …]}: answers for the next hooks
                   (appended to those still queued; with "replace": true they replace them, so
                   {"answers": [], "replace": true} makes every later hook 204 again)
  GET  /received   → JSON list of {"key", "timestamp", "signature_ok", "body" (parsed JSON), "status"
                   (what it was answered), "received_at" (this machine's Unix time, seconds)}
"""

import asyncio
import hashlib
import hmac
import json
import os
import socket
import sys
import time

from hypercorn.asyncio import serve
from hypercorn.config import Config

SECRET = b""
received = []
answers = []


async def read_body(receive):
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return body


async def respond(send, status, body=b"", headers=()):
    fields = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    fields += [(k.encode(), v.encode()) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": fields})
    await send({"type": "http.response.body", "body": body})


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    body = await read_body(receive)
    path, method = scope["path"], scope["method"]
    if path == "/hook" and method == "POST":
        arrived = time.time()
        timestamp = headers.get("x-chronir-timestamp", "")
        expected = "v1=" + hmac.new(SECRET, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        ok = hmac.compare_digest(expected, headers.get("x-chronir-signature", ""))
        answer = answers.pop(0) if answers else {"status": 204}
        received.append({"key": headers.get("x-chronir-key"), "timestamp": timestamp, "signature_ok": ok,
                         "content_type": headers.get("content-type"), "body": json.loads(body or b"null"),
                         "status": answer["status"], "received_at": arrived})
        extra = [("retry-after", answer["retry_after"])] if "retry_after" in answer else []
        await respond(send, answer["status"], b"", extra)
    elif path == "/script" and method == "POST":
        document = json.loads(body)
        if document.get("replace"):
            answers.clear()
        answers.extend(document["answers"])
        await respond(send, 204)
    elif path == "/received":
        await respond(send, 200, json.dumps(received).encode())
    else:
        await respond(send, 404, b'{"error":"not found"}')


async def parent_gone():
    parent = os.getppid()
    while os.getppid() == parent:
        await asyncio.sleep(0.5)


def main():
    global SECRET
    certfile, keyfile, SECRET = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.set_inheritable(True)
    config = Config()
    config.certfile, config.keyfile = certfile, keyfile
    config.bind = [f"fd://{sock.fileno()}"]
    config.alpn_protocols = ["h2", "http/1.1"]
    config.loglevel = "WARNING"
    config.accesslog = None
    print(f"READY {sock.getsockname()[1]}", flush=True)
    asyncio.run(serve(app, config, shutdown_trigger=parent_gone))


if __name__ == "__main__":
    main()
