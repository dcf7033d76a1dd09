#!/usr/bin/env python3
"""Interoperability check of Chronir's WebSocket stack with an independent client, the Python
`websockets` library (its own RFC 6455 + RFC 7692 implementation).

    ws_interop.py echo URL        exchange messages with chronir-ws-echo at URL (ws://host:port/)
    ws_interop.py realtime BASE   the realtime feed of a chronir-server at BASE (http://host:port)

Every check prints one line; the first mismatch raises, and the script exits 1.
"""
import json
import os
import sys
import urllib.error
import urllib.request

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

# Message sizes around the frame-header length boundaries (125/126, 65535/65536) and one large one.
SIZES = [0, 1, 125, 126, 1000, 65535, 65536, 1 << 20]
TIMEOUT = 10  # seconds for any single receive


class Mismatch(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Mismatch(what)
    print(f"ok   {what}")


def payload(size, seed):
    """Deterministic, compressible-but-not-trivial bytes (and valid ASCII text)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 "
    return "".join(alphabet[(i * 7 + seed + i // 13) % len(alphabet)] for i in range(size))


def echo(url):
    for compression in ("deflate", None):
        mode = "deflate" if compression else "plain"
        with connect(url, compression=compression, max_size=4 << 20, open_timeout=TIMEOUT) as ws:
            extensions = [type(e).__name__ for e in ws.protocol.extensions]
            check(("PerMessageDeflate" in extensions) == bool(compression), f"{mode}: negotiated {extensions}")
            for size in SIZES:
                # `size` UTF-8 bytes, multi-byte characters (2, 3 and 4 bytes) at the end when they fit.
                text = payload(size - 9, size) + "é€😀" if size >= 9 else payload(size, size)
                ws.send(text)
                check(ws.recv(timeout=TIMEOUT) == text, f"{mode}: text of {len(text.encode())} bytes echoed")
                data = os.urandom(size)
                ws.send(data)
                check(ws.recv(timeout=TIMEOUT) == data, f"{mode}: binary of {size} bytes echoed")
            # A fragmented message: an iterable is sent as one frame per item.
            parts = [payload(1000, 1), "∑ split", "", payload(70000, 2)]
            ws.send(iter(parts))
            check(ws.recv(timeout=TIMEOUT) == "".join(parts), f"{mode}: text in {len(parts)} fragments echoed whole")
            chunks = [os.urandom(300), os.urandom(70000)]
            ws.send(iter(chunks))
            check(ws.recv(timeout=TIMEOUT) == b"".join(chunks), f"{mode}: binary in 2 fragments echoed whole")
            # Ping with application data → pong with the same data.
            pong = ws.ping(b"chronir-ping")
            check(pong.wait(TIMEOUT), f"{mode}: ping answered by pong")
            ws.close(code=1000, reason="done")
            check(ws.protocol.close_rcvd is not None and ws.protocol.close_rcvd.code == 1000,
                  f"{mode}: clean close, server answered 1000 ({ws.protocol.close_rcvd})")


def http(base, method, path, body=None, token=None):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def next_message(ws, wanted):
    """The next JSON message whose type is `wanted` (others — presence, pong — are skipped)."""
    while True:
        message = json.loads(ws.recv(timeout=TIMEOUT))
        if message.get("type") == wanted:
            return message
        if message.get("type") == "error":
            raise Mismatch(f"server error while waiting for {wanted}: {message}")


def realtime(base):
    status, registered = http(base, "POST", "/v1/auth/register",
                              {"email": "interop@example.com", "password": "correct horse", "display_name": "Interop"})
    check(status == 201, f"register → {status}")
    token, user_id = registered["token"], registered["user"]["id"]
    url = base.replace("https://", "wss://", 1).replace("http://", "ws://", 1) + "/v1/realtime"
    with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=TIMEOUT) as ws:
        extensions = [type(e).__name__ for e in ws.protocol.extensions]
        check("PerMessageDeflate" in extensions, f"/v1/realtime upgraded with {extensions}")
        ws.send(json.dumps({"op": "subscribe", "topic": "user", "id": 1}))
        snapshot = next_message(ws, "snapshot")
        check(snapshot["topic"] == "user" and snapshot["data"]["user"]["id"] == user_id
              and snapshot["data"]["groups"] == [], f"user snapshot at seq {snapshot.get('seq')} with no groups")
        status, created = http(base, "POST", "/v1/groups", {"name": "Interop"}, token)
        check(status == 201, f"create group → {status}")
        group_id = created["group"]["id"]
        change = next_message(ws, "change")
        rows = [r for r in change["changes"] if r.get("kind") == "group" and r.get("id") == group_id]
        check(change["topic"] == "user" and change["seq"] > snapshot["seq"] and rows and rows[0]["op"] == "added",
              f"change on user: group {group_id} added (event {change.get('event')})")
        ws.send(json.dumps({"op": "subscribe", "topic": f"group:{group_id}", "id": 2}))
        group = next_message(ws, "snapshot")
        check(group["data"]["group"]["id"] == group_id
              and [m["user_id"] for m in group["data"]["members"]] == [user_id], "group snapshot with me as member")
        ws.send(json.dumps({"op": "ping", "id": 3}))
        check(next_message(ws, "pong").get("id") == 3, "feed ping → pong")
    # A bad token: the upgrade succeeds, then the server closes with 4001.
    with connect(url, additional_headers={"Authorization": "Bearer " + "A" * 43}, open_timeout=TIMEOUT) as ws:
        try:
            ws.recv(timeout=TIMEOUT)
            raise Mismatch("a bad token got a message instead of a close")
        except ConnectionClosed as closed:
            check(closed.rcvd is not None and closed.rcvd.code == 4001, f"bad token → close {closed.rcvd}")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("echo", "realtime"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        (echo if sys.argv[1] == "echo" else realtime)(sys.argv[2])
    except Mismatch as mismatch:
        print(f"FAIL {mismatch}", file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 — any other failure is a failed check too
        print(f"FAIL {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
