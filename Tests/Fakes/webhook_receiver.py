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
  GET  /count      → {"total": calls, "by_type": {type: calls}} — cheap to poll while a burst arrives
                   (/received serialises every record, and stalls this one-process server meanwhile)
  GET  /received   → JSON list of {"key", "timestamp", "signature_ok", "body" (parsed JSON), "status"
                   (what it was answered), "received_at" and "arrived" (this machine's Unix time in seconds, float,
                   when the request was read: Benchmarks/notifications.sh measures lag against it)}
"""

import hashlib
import hmac
import json
import sys
import time

from fake_service import headers_of, lifespan, listening_socket, read_body, respond, run

SECRET = b""
received = []
answers = []
counts = {}


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        return await lifespan(receive, send)
    headers = headers_of(scope)
    body = await read_body(receive)
    path, method = scope["path"], scope["method"]
    if path == "/hook" and method == "POST":
        arrived = time.time()
        timestamp = headers.get("x-chronir-timestamp", "")
        expected = "v1=" + hmac.new(SECRET, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        ok = hmac.compare_digest(expected, headers.get("x-chronir-signature", ""))
        answer = answers.pop(0) if answers else {"status": 204}
        document = json.loads(body or b"null")
        received.append({"key": headers.get("x-chronir-key"), "timestamp": timestamp, "signature_ok": ok,
                         "content_type": headers.get("content-type"), "body": document,
                         "status": answer["status"], "received_at": arrived, "arrived": arrived})
        kind = document.get("type") if isinstance(document, dict) else None
        counts[kind] = counts.get(kind, 0) + 1
        extra = [("retry-after", answer["retry_after"])] if "retry_after" in answer else []
        await respond(send, answer["status"], None, extra)
    elif path == "/script" and method == "POST":
        document = json.loads(body)
        if document.get("replace"):
            answers.clear()
        answers.extend(document["answers"])
        await respond(send, 204)
    elif path == "/count":
        await respond(send, 200, {"total": len(received), "by_type": counts})
    elif path == "/received":
        await respond(send, 200, received)
    else:
        await respond(send, 404, {"error": "not found"})


def main():
    global SECRET
    certfile, keyfile, SECRET = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
    run(app, listening_socket(), certfile, keyfile, ["h2", "http/1.1"])


if __name__ == "__main__":
    main()
