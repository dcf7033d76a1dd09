#!/usr/bin/env python3
"""Slow and hostile clients against a running chronir-server (Reliability/hostile.sh starts one).

  hostile.py attack BASE_URL TOKENS_FILE [--slowloris 1000] [--ws 1000] [--burst 2000] [--seconds 40]
      * slowloris: N connections trickling a request head one byte per second (reconnecting when the
        server closes them: its header deadline runs from the first byte, so each lives ~10 s);
      * ws: N WebSocket clients (20 per account, the per-user limit) with a 4 KiB receive buffer that
        subscribe to their `user` topic, send a ping every --ws-ping-interval s and never read;
      * hostile frames/requests: oversized and malformed WebSocket frames and HTTP heads, repeated;
      * burst: N connections opened at once on top of the rest, past --max-connections.
      Prints what the server answered to each kind.
  hostile.py probe BASE_URL TOKEN SECONDS
      The normal client: one keep-alive connection, GET /v1/me then GET /healthz every 10 ms; prints
      p50/p99/max latency in ms and the failures.
"""
import argparse
import asyncio
import base64
import json
import os
import resource
import socket
import struct
import sys
import time
import urllib.parse


def target(base):
    u = urllib.parse.urlparse(base)
    return u.hostname, u.port


# ---------------------------------------------------------------------------------------------- probe

def probe(args):
    import http.client
    host, port = target(args.base)
    conn = http.client.HTTPConnection(host, port, timeout=5)
    latencies, failures = [], 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for path, auth in (("/v1/me", True), ("/healthz", False)):
            headers = {"Authorization": f"Bearer {args.token}"} if auth else {}
            t0 = time.perf_counter()
            try:
                conn.request("GET", path, headers=headers)
                r = conn.getresponse()
                r.read()
                ok = r.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                conn = http.client.HTTPConnection(host, port, timeout=5)
            latencies.append((time.perf_counter() - t0) * 1000)
            failures += 0 if ok else 1
        time.sleep(0.01)
    latencies.sort()
    n = len(latencies)
    pct = lambda p: latencies[min(n - 1, int(p * n))]
    print(f"probe: {n} requests, p50 {pct(0.50):.2f} ms, p99 {pct(0.99):.2f} ms, max {latencies[-1]:.2f} ms, "
          f"{failures} failed")


# --------------------------------------------------------------------------------------------- attack

stats = {}


def count(key, n=1):
    stats[key] = stats.get(key, 0) + n


async def open_conn(host, port, rcvbuf=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    return await asyncio.open_connection(sock=sock)


async def slowloris(host, port, stop):
    head = f"GET /healthz HTTP/1.1\r\nHost: {host}\r\nX-Pad: {'a' * 200}\r\n\r\n".encode()
    while not stop.is_set():
        try:
            reader, writer = await open_conn(host, port)
        except OSError:
            count("slowloris connect failed")
            await asyncio.sleep(1)
            continue
        count("slowloris connections")
        try:
            for i in range(len(head)):
                if stop.is_set():
                    break
                writer.write(head[i:i + 1])
                await writer.drain()
                try:
                    answer = await asyncio.wait_for(reader.read(64), timeout=1.0)
                except asyncio.TimeoutError:
                    continue
                status = answer.split(b" ")[1].decode() if answer.startswith(b"HTTP/") else "closed"
                count(f"slowloris answered {status}")
                break
        except (OSError, ConnectionError):
            count("slowloris reset")
        writer.close()


def ws_frame(opcode, payload, mask=True, fin=True, rsv=0, length_override=None):
    b0 = (0x80 if fin else 0) | (rsv << 4) | opcode
    n = len(payload) if length_override is None else length_override
    mbit = 0x80 if mask else 0
    if n < 126:
        head = struct.pack("!BB", b0, mbit | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, mbit | 126, n)
    else:
        head = struct.pack("!BBQ", b0, mbit | 127, n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


async def ws_open(host, port, token, rcvbuf=None):
    reader, writer = await open_conn(host, port, rcvbuf)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write((f"GET /v1/realtime HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  f"Authorization: Bearer {token}\r\n\r\n").encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=30)
    if b" 101 " not in head.split(b"\r\n")[0]:
        writer.close()
        raise ConnectionError(head.split(b"\r\n")[0].decode())
    return reader, writer


async def ws_never_reads(host, port, token, stop, interval):
    try:
        _, writer = await ws_open(host, port, token, rcvbuf=4096)
    except (OSError, ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
        count(f"ws open failed: {type(e).__name__} {str(e)[:40]}")
        return
    count("ws opened")
    writer.write(ws_frame(1, b'{"op":"subscribe","topic":"user"}'))
    ping = ws_frame(1, b'{"op":"ping"}')
    sent = 0
    try:
        while not stop.is_set():
            writer.write(ping)
            sent += 1
            await asyncio.wait_for(writer.drain(), timeout=1)
            await asyncio.sleep(interval)
        count("ws still open at the end")
    except asyncio.TimeoutError:
        count("ws: server stopped reading (back-pressure)")
    except (OSError, ConnectionError):
        count("ws closed by server")
    count("ws pings sent", sent)
    writer.close()


HOSTILE_HTTP = {
    "request line 10 KiB": lambda h: f"GET /{'a' * 10240} HTTP/1.1\r\nHost: {h}\r\n\r\n".encode(),
    "header block 20 KiB": lambda h: f"GET / HTTP/1.1\r\nHost: {h}\r\nX: {'a' * 20480}\r\n\r\n".encode(),
    "Content-Length 2 GiB": lambda h: f"POST /v1/auth/login HTTP/1.1\r\nHost: {h}\r\nContent-Length: 2147483648\r\n"
                                      f"Content-Type: application/json\r\n\r\n".encode(),
    "CL + TE smuggling": lambda h: f"POST / HTTP/1.1\r\nHost: {h}\r\nContent-Length: 4\r\n"
                                   f"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n".encode(),
    "binary garbage": lambda h: os.urandom(512),
}

HOSTILE_WS = {
    "frame length 2^62": ws_frame(2, b"", length_override=1 << 62),
    "message over 4 KiB": ws_frame(1, b'{"op":"ping","x":"' + b"a" * 70000 + b'"}'),
    "unmasked frame": ws_frame(1, b'{"op":"ping"}', mask=False),
    "reserved bits": ws_frame(1, b'{"op":"ping"}', rsv=3),
    "unknown opcode": ws_frame(0x3, b"x"),
    "invalid UTF-8": ws_frame(1, b'{"op":"\xff\xfe"}'),
    "control frame 200 B": ws_frame(0x9, b"p" * 200),
    "fragmented control": ws_frame(0x9, b"p", fin=False),
    "continuation first": ws_frame(0x0, b"x"),
    "bad JSON x25": b"".join(ws_frame(1, b"{not json") for _ in range(25)),
}


async def read_all(reader, limit=1 << 20):
    data = b""
    try:
        while len(data) < limit:
            chunk = await asyncio.wait_for(reader.read(65536), timeout=15)
            if not chunk:
                break
            data += chunk
    except (asyncio.TimeoutError, OSError, ConnectionError):
        pass
    return data


def close_code(data):
    """The close code of the first close frame the server sent (frames are unmasked), or None."""
    i = 0
    while i + 2 <= len(data):
        op, n = data[i] & 0x0F, data[i + 1] & 0x7F
        i += 2
        if n == 126:
            n = struct.unpack("!H", data[i:i + 2])[0]
            i += 2
        elif n == 127:
            n = struct.unpack("!Q", data[i:i + 8])[0]
            i += 8
        if op == 8:
            return struct.unpack("!H", data[i:i + 2])[0] if n >= 2 else 1005
        i += n
    return None


async def hostile(host, port, token, stop):
    while not stop.is_set():
        for name, payload in HOSTILE_HTTP.items():
            try:
                reader, writer = await open_conn(host, port)
                writer.write(payload(host))
                await writer.drain()
                answer = await read_all(reader, 4096)
                status = answer.split(b" ")[1].decode() if answer.startswith(b"HTTP/") else "closed"
                count(f"http {name}: {status}")
                writer.close()
            except (OSError, ConnectionError) as e:
                count(f"http {name}: reset")
        for name, frame in HOSTILE_WS.items():
            try:
                reader, writer = await ws_open(host, port, token)
                writer.write(frame)
                await writer.drain()
                count(f"ws {name}: close {close_code(await read_all(reader))}")
                writer.close()
            except (OSError, ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
                count(f"ws {name}: {type(e).__name__}")
        await asyncio.sleep(1)


async def burst(host, port, n):
    async def one():
        try:
            reader, writer = await open_conn(host, port)
            writer.write(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            answer = await read_all(reader, 4096)
            status = answer.split(b" ")[1].decode() if answer.startswith(b"HTTP/") else "closed"
            count(f"burst answered {status}")
            writer.close()
        except (OSError, ConnectionError) as e:
            count(f"burst {type(e).__name__}")
    await asyncio.gather(*(one() for _ in range(n)))


async def attack(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    host, port = target(args.base)
    tokens = [line.strip() for line in open(args.tokens) if line.strip()]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(slowloris(host, port, stop)) for _ in range(args.slowloris)]
    for i in range(args.ws):
        tasks.append(asyncio.create_task(ws_never_reads(host, port, tokens[i // 20], stop, args.ws_ping_interval)))
        if i % 50 == 49:
            await asyncio.sleep(0.05)  # ~1,000 opens per second
    tasks.append(asyncio.create_task(hostile(host, port, tokens[-1], stop)))
    await asyncio.sleep(args.seconds / 2)
    print(f"burst of {args.burst} connections at t={args.seconds / 2:.0f}s", flush=True)
    await burst(host, port, args.burst)
    await asyncio.sleep(args.seconds / 2)
    stop.set()
    await asyncio.wait(tasks, timeout=20)
    for key in sorted(stats):
        print(f"  {key}: {stats[key]}")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("attack")
    a.add_argument("base")
    a.add_argument("tokens")
    a.add_argument("--slowloris", type=int, default=1000)
    a.add_argument("--ws", type=int, default=1000)
    a.add_argument("--burst", type=int, default=2000)
    a.add_argument("--seconds", type=float, default=40)
    a.add_argument("--ws-ping-interval", type=float, default=0.5)
    pr = sub.add_parser("probe")
    pr.add_argument("base")
    pr.add_argument("token")
    pr.add_argument("seconds", type=float)
    args = p.parse_args()
    if args.cmd == "probe":
        probe(args)
    else:
        asyncio.run(attack(args))


if __name__ == "__main__":
    main()
