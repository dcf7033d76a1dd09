"""A minimal RFC 6455 client for chronir-server's /v1/realtime, shared by the Reliability scripts
(two_instances.py, three_instances.py, soak.py). Python 3 standard library only; no extensions.

  frame(payload)                  a masked text frame (RFC 6455 §5.2: a client MUST mask)
  upgrade(host, port, token)      the upgrade request (bearer token), a fresh Sec-WebSocket-Key
  open_blocking(port, token, timeout, host="127.0.0.1")
                                  a blocking socket past its 101; ConnectionError(status line) otherwise
  read_message(sock)              the next JSON text message on a blocking socket; answers pings,
                                  skips other frames; ConnectionError("socket closed") at EOF
  Socket                          the asyncio counterpart: open / send / flush / receive / close
  Subscriber                      a Socket on one topic that resubscribes with `since` + `epoch` after a
                                  drop; subclasses record snapshots and changes (on_snapshot / on_change)

Frame headers are parsed once (`_frame_reads`, sans-I/O) for both the blocking and asyncio readers.
"""
import asyncio
import base64
import json
import os
import socket
import struct
import time

TEXT, CLOSE, PING = 0x1, 0x8, 0x9


def frame(payload):
    """A masked text frame (RFC 6455 §5.2; a client MUST mask); payloads up to 65535 bytes."""
    key = os.urandom(4)
    n = len(payload)
    head = struct.pack("!BB", 0x81, 0x80 | n) if n < 126 else struct.pack("!BBH", 0x81, 0x80 | 126, n)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def pong(payload):
    """The pong answering a ping (RFC 6455 §5.5.3: same application data; masked, with a zero key)."""
    return bytes([0x8A, 0x80 | len(payload)]) + b"\0\0\0\0" + payload


def upgrade(host, port, token):
    """The GET /v1/realtime upgrade request with `Authorization: Bearer token`."""
    key = base64.b64encode(os.urandom(16)).decode()
    return (f"GET /v1/realtime HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {token}\r\n\r\n").encode()


def _frame_reads():
    """One server frame, sans-I/O: yields how many bytes to read next, is sent exactly those bytes,
    and returns (opcode, payload). RFC 6455 §5.2: 7-bit length, 126 → 16-bit, 127 → 64-bit."""
    b0, b1 = yield 2
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", (yield 2))[0]
    elif n == 127:
        n = struct.unpack("!Q", (yield 8))[0]
    payload = yield n
    return b0 & 0x0F, payload


def _recv_exactly(sock, k):
    data = b""
    while len(data) < k:
        chunk = sock.recv(k - len(data))
        if not chunk:
            raise ConnectionError("socket closed")
        data += chunk
    return data


def open_blocking(port, token, timeout, host="127.0.0.1"):
    """A blocking socket upgraded to a realtime WebSocket; ConnectionError(status line) unless 101."""
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.sendall(upgrade(host, port, token))
    head = b""
    while b"\r\n\r\n" not in head:
        byte = sock.recv(1)
        if not byte:
            sock.close()
            raise ConnectionError(f"closed during the upgrade after {head[:80]!r}")
        head += byte
    status = head.split(b"\r\n")[0]
    if b" 101 " not in status:
        sock.close()
        raise ConnectionError(status.decode(errors="replace"))
    return sock


def read_message(sock):
    """The next JSON text message on a blocking socket; pings are answered, other frames (a close
    too: the EOF after it ends the read) skipped. ConnectionError("socket closed") at EOF."""
    while True:
        reads = _frame_reads()
        try:
            k = next(reads)
            while True:
                k = reads.send(_recv_exactly(sock, k))
        except StopIteration as done:
            opcode, payload = done.value
        if opcode == PING:
            sock.sendall(pong(payload))
        elif opcode == TEXT:
            return json.loads(payload)


class Socket:
    """A realtime WebSocket on asyncio streams: open (upgrade with the bearer token), send JSON,
    receive JSON messages. `closed_by_peer` tells a close frame from EOF or a reset."""

    @classmethod
    async def open(cls, port, token, timeout=30.0, host="127.0.0.1"):
        """Connects and upgrades; ConnectionError(status line) unless 101, asyncio.TimeoutError when
        no answer within `timeout` seconds."""
        self = cls()
        self.closed_by_peer = False
        self.reader, self.writer = await asyncio.open_connection(host, port)
        self.writer.write(upgrade(host, port, token))
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), timeout=timeout)
        status = head.split(b"\r\n")[0]
        if b" 101 " not in status:
            self.writer.close()
            raise ConnectionError(status.decode(errors="replace"))
        return self

    def send(self, message):
        """Queues `message` as JSON in a text frame (see `flush`)."""
        self.writer.write(frame(json.dumps(message).encode()))

    async def flush(self):
        """Waits until what `send` queued is handed to the kernel (or below the high-water mark)."""
        await self.writer.drain()

    async def receive(self):
        """The next JSON message (pings answered, other frames skipped); None when the connection
        closed (close frame — then `closed_by_peer` — EOF or reset)."""
        try:
            while True:
                reads = _frame_reads()
                try:
                    k = next(reads)
                    while True:
                        k = reads.send(await self.reader.readexactly(k))
                except StopIteration as done:
                    opcode, payload = done.value
                if opcode == CLOSE:
                    self.closed_by_peer = True
                    return None
                if opcode == PING:
                    self.writer.write(pong(payload))
                elif opcode == TEXT:
                    return json.loads(payload)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return None

    def close(self):
        self.writer.close()


class Subscriber:
    """One socket subscribed to `topic` on `port`. After a drop it reconnects to `resume_port` (default
    `port`) and resubscribes with `since` + `epoch`, retrying every `retry_delay` seconds for at most
    `timeout` (then `gave_up`); a subscribe answered `unavailable` (the server could not read the
    topic) is sent again after `retry_delay`. `drops` holds (dropped at, subscribed again at) in monotonic
    seconds; `epoch` and `last_seq` follow the snapshots and changes of the topic. Subclasses override
    `on_snapshot` (called before `epoch`/`last_seq` move, so it can tell a first snapshot from a later
    one), `on_change` and `on_other` (every other message, any topic)."""

    def __init__(self, port, token, topic, timeout, resume_port=None, retry_delay=0.05):
        self.port, self.token, self.topic, self.timeout = port, token, topic, timeout
        self.resume_port = port if resume_port is None else resume_port
        self.retry_delay = retry_delay
        self.epoch, self.last_seq = None, None
        self.drops = []
        self.unavailable = 0  # `unavailable` errors answered to a subscribe, each followed by another after the back-off
        self.socket, self.task, self.socket_port = None, None, None
        self.snapshot_ready = asyncio.Event()
        self.stopping = False

    async def start(self):
        """Opens the socket, subscribes, and starts reading (`snapshot_ready` is set at the snapshot)."""
        self.socket = await Socket.open(self.port, self.token, self.timeout)
        self.socket_port = self.port
        self.socket.send(self.subscription())
        self.task = asyncio.create_task(self.run())

    async def run(self):
        while True:
            message = await self.socket.receive()
            if message is None:
                if self.stopping:
                    return
                dropped = time.monotonic()
                await self.reconnect()
                self.drops.append((dropped, time.monotonic()))
                continue
            kind = message.get("type")
            if kind == "snapshot" and message.get("topic") == self.topic:
                self.on_snapshot(message)
                self.epoch, self.last_seq = message.get("epoch"), message["seq"]
                self.snapshot_ready.set()
            elif kind == "change" and message.get("topic") == self.topic:
                self.on_change(message)
                self.last_seq = message["seq"]
            elif kind == "error" and message.get("topic") == self.topic and message.get("code") == "unavailable":
                # The server could not read the topic (docs/realtime-protocol.md): the subscription
                # ended; subscribe again after the back-off, resuming where it was.
                self.on_other(message)
                self.unavailable += 1
                if self.unavailable * self.retry_delay > self.timeout:
                    self.gave_up(f"{self.topic} stayed unavailable on port {self.socket_port} for {self.timeout} s")
                await asyncio.sleep(self.retry_delay)
                self.socket.send(self.subscription())
            else:
                self.on_other(message)

    async def reconnect(self):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self.socket = await Socket.open(self.resume_port, self.token, self.timeout)
                self.socket_port = self.resume_port
                self.socket.send(self.subscription())
                return
            except (OSError, ConnectionError, asyncio.TimeoutError) as error:
                if time.monotonic() > deadline:
                    self.gave_up(f"{self.topic} could not resubscribe on port {self.resume_port}: {error}")
                await asyncio.sleep(self.retry_delay)

    def subscription(self):
        """The subscribe message: resuming with `since` + `epoch` once a snapshot was received."""
        if self.last_seq is None:
            return {"op": "subscribe", "topic": self.topic}
        return {"op": "subscribe", "topic": self.topic, "since": self.last_seq, "epoch": self.epoch}

    def gave_up(self, reason):
        """Called when no resubscription succeeded within `timeout`; the scripts override it to fail the run."""
        raise ConnectionError(reason)

    def on_snapshot(self, message):
        pass

    def on_change(self, message):
        pass

    def on_other(self, message):
        pass

    def stop(self):
        self.stopping = True
        if self.socket:
            self.socket.close()
