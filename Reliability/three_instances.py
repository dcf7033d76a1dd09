#!/usr/bin/env python3
"""Three instances on one PostgreSQL database behind nginx: run by Reliability/three-instances.sh.

  three_instances.py --a PORT --b PORT --c PORT --proxy PORT --kill-pid PID --logs A B C
                     [--subscribers 300] [--changes 40] [--sweep-period 2] [--check-presence]

a. Cross-instance delivery. One group; its members' sockets (at most 20 per member, the per-user
   limit) subscribe to `group:<id>`, spread round-robin over A, B and C directly (placement known)
   and nginx (placement nginx's). CHANGES writes are posted on A one at a time — completions of a
   shared alarm and group renames, alternating — and each must reach every socket exactly once;
   every socket must hold the same seqs, strictly increasing. Latency: from sending the write on A
   to the frame read here, per placement (same instance = A's sockets; cross = B's and C's): first
   "quiet", one socket per instance read by one thread with select() (the server's hop), then
   "loaded", every socket (this one asyncio process reading them all adds its own fan-in).
b. Kill mid-load. Writers rename the group through nginx at a steady rate; a third of the way in,
   C gets SIGKILL. Every socket that drops (C's direct ones and nginx's that were on C) reconnects
   through nginx and resubscribes with `since` (its last seq) and `epoch`. Afterwards every write
   nginx answered 2xx must have reached every socket exactly once, no seq twice or out of order, no
   `reset` snapshot, and every socket the same seqs (so unacknowledged writes that committed are
   seen by all or none). Reports the reconnect time (drop → 101 on another instance).
c. The sweeper. The three instances run with --sweep-period P; each logs one `sweep` line per job
   run it claimed. Once every job has --sweep-periods runs (two after the kill) across the three
   logs: consecutive runs at least P minus the claim tolerance apart (no period ran twice) and less
   than 2P apart (none skipped; a gap spanning C's kill may reach 4P: a run C claimed in its last
   200 ms leaves no line, its log buffer dies with it), and none by C after its kill.
d. --check-presence: a member connected only to B appears in the `presence` (snapshot or message)
   a member connected only to A receives on the same group, and the other way round, and leaves
   when the socket closes. Off by default until presence is cluster-wide.

Python 3 standard library only (asyncio streams and blocking sockets, the minimal RFC 6455 client
in chronir_ws.py).
"""
import argparse
import asyncio
import datetime
import http.client
import json
import os
import select
import signal
import sys
import time

import chronir_ws
from chronir_ws import Socket

PASSWORD = "correct horse battery staple"
PER_USER_SOCKETS = 20
TIMEOUT = 30.0


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def summary(values, what="deliveries"):
    return (f"p50 {percentile(values, 0.5):.1f} ms, p99 {percentile(values, 0.99):.1f} ms, "
            f"max {max(values):.1f} ms ({len(values)} {what})")


class HTTP:
    """One keep-alive HTTP/1.1 connection (reopened after an error); blocking, used from threads."""

    def __init__(self, port):
        self.port = port
        self.connection = None

    def call(self, method, path, body=None, token=None):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            self.connection.request(method, path, json.dumps(body) if body is not None else None, headers)
            response = self.connection.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.connection = None
            raise
        if response.getheader("Connection", "").lower() == "close":
            self.connection.close()
            self.connection = None
        try:
            doc = json.loads(raw) if raw else None
        except ValueError:
            doc = raw[:200]
        return response.status, doc


def call(port, method, path, body=None, token=None, want=(200, 201)):
    status, doc = HTTP(port).call(method, path, body, token)
    if status not in want:
        fail(f"{method} {path} on port {port}: {status} {doc}")
    return doc


class Subscriber(chronir_ws.Subscriber):
    """One socket on `group:<id>`: records every change (seq, the write keys it carries, when), and
    after a drop reconnects through `resume_port` with `since` + `epoch`."""

    def __init__(self, index, port, placement, token, topic, resume_port):
        super().__init__(port, token, topic, TIMEOUT, resume_port=resume_port)
        self.index, self.placement = index, placement
        self.seqs = []           # change seqs on the topic, in arrival order
        self.seen = {}           # write key → [arrival times]
        self.resets = 0          # reset snapshots, and any snapshot after the first
        self.errors = []
        self.waiters = {}        # write key → asyncio.Event

    def gave_up(self, reason):
        fail(reason)

    def on_snapshot(self, message):
        if message.get("reset") or self.last_seq is not None:
            self.resets += 1

    def on_change(self, message):
        now = time.monotonic()
        self.seqs.append(message["seq"])
        for key in write_keys(message):
            self.seen.setdefault(key, []).append(now)
            waiter = self.waiters.get(key)
            if waiter:
                waiter.set()

    def on_other(self, message):
        if message.get("type") in ("error", "revoked"):
            self.errors.append(message)

    async def wait_for(self, key, timeout):
        if key in self.seen:
            return True
        event = self.waiters.setdefault(key, asyncio.Event())
        try:
            await asyncio.wait_for(event.wait(), timeout)
            return True
        except asyncio.TimeoutError:
            return False


def write_keys(message):
    """What identifies this script's writes in a change: a group's name, a completion's id."""
    keys = []
    for change in message.get("changes", []):
        doc = change.get("doc") or {}
        if change.get("kind") == "group" and doc.get("name"):
            keys.append(("name", doc["name"]))
        elif change.get("kind") == "shared_completion":
            keys.append(("completion", change.get("id")))
    return keys


async def in_thread(function, *args):
    return await asyncio.get_running_loop().run_in_executor(None, function, *args)


def register(port, tag, i):
    return call(port, "POST", "/v1/auth/register",
                {"email": f"three-{tag}-{i}@example.com", "password": PASSWORD, "display_name": f"Three {i}"})


def check_same_seqs(subscribers, what):
    reference = subscribers[0].seqs
    for s in subscribers:
        if s.seqs != sorted(set(s.seqs)):
            fail(f"{what}: subscriber {s.index} ({s.placement}) got seqs out of order or twice: {s.seqs[:50]}…")
        if s.seqs != reference:
            missing = sorted(set(reference) - set(s.seqs))[:10]
            extra = sorted(set(s.seqs) - set(reference))[:10]
            fail(f"{what}: subscriber {s.index} ({s.placement}) differs from subscriber 0: "
                 f"missing {missing}, extra {extra}")
        if s.resets or s.errors:
            fail(f"{what}: subscriber {s.index} ({s.placement}) got {s.resets} reset snapshots, errors {s.errors[:3]}")


def blocking_socket(port, token, topic):
    """A blocking realtime socket subscribed to `topic`, its snapshot read (for the quiet probe)."""
    try:
        sock = chronir_ws.open_blocking(port, token, TIMEOUT)
    except ConnectionError as error:
        fail(f"quiet probe: upgrade on port {port} answered {error}")
    sock.sendall(chronir_ws.frame(json.dumps({"op": "subscribe", "topic": topic}).encode()))
    while (message := blocking_message(sock)).get("type") != "snapshot":
        pass
    return sock


def blocking_message(sock):
    """The next JSON text message on a blocking socket (answers pings)."""
    try:
        return chronir_ws.read_message(sock)
    except ConnectionError:
        fail("quiet probe: socket closed")


def answerable(alarm):
    """Whether `alarm`'s open occurrence can be answered now: its lead window has begun
    (docs/design.md#occurrence-states; earlier is 409 ANSWER_TOO_EARLY)."""
    opens = alarm.get("answerable_from")
    return opens is not None and datetime.datetime.fromisoformat(opens.replace("Z", "+00:00")) <= \
        datetime.datetime.now(datetime.timezone.utc)


def alternating_write(i, group_id, alarm, label):
    """Scenario a's write `i`: even, a completion of `alarm`'s open occurrence while one can be answered
    (35 with five times a day and a week's lead window), else a rename too; odd, a rename of the group
    to "LABEL i". Returns (method, path, body)."""
    if i % 2 == 0 and answerable(alarm):
        return ("POST", f"/v1/groups/{group_id}/alarms/{alarm['id']}/completions",
                {"status": "completed", "scheduled_at": alarm["occurrence"]["scheduled_at"]})
    return "PATCH", f"/v1/groups/{group_id}", {"name": f"{label} {i}"}


def written_key(method, body, doc, alarm):
    """The write key (see write_keys) of an alternating_write answered with `doc`; a completion
    moves `alarm` on to its next open occurrence."""
    if method == "POST":
        alarm.update(doc["alarm"])
        return ("completion", doc["completion"]["id"])
    return ("name", body["name"])


def quiet_probe(args, ports, owner, group_id, alarm):
    """Scenario a, quiet: one socket per instance and nothing else, one thread: each write is sent
    on A and the three sockets and A's answer are read with select() as they become readable, so
    the times are the server's hop and not this client's fan-in (the loaded phase's)."""
    topic = f"group:{group_id}"
    sockets = {placement: blocking_socket(ports[placement], owner, topic) for placement in "ABC"}
    connection = http.client.HTTPConnection("127.0.0.1", ports["A"], timeout=TIMEOUT)
    connection.connect()
    latency = {placement: [] for placement in "ABC"}
    answered, after_answer = [], []
    for i in range(args.changes):
        method, path, body = alternating_write(i, group_id, alarm, "quiet")
        sent = time.monotonic()
        connection.request(method, path, json.dumps(body),
                           {"Content-Type": "application/json", "Authorization": f"Bearer {owner}"})
        arrived, messages, answer_at, doc = {}, {}, None, None
        while answer_at is None or len(arrived) < 3:
            waiting = [sock for placement, sock in sockets.items() if placement not in arrived]
            if answer_at is None:
                waiting.append(connection.sock)
            readable, _, _ = select.select(waiting, [], [], TIMEOUT)
            if not readable:
                fail(f"a (quiet): write {i} not answered or not delivered within {TIMEOUT:.0f} s: {sorted(arrived)}")
            now = time.monotonic()
            for sock in readable:
                if sock is connection.sock:
                    response = connection.getresponse()
                    answer_at, doc = now, json.loads(response.read())
                    if response.status not in (200, 201):
                        fail(f"a (quiet): {method} {path} on A answered {response.status} {doc}")
                    continue
                placement = next(p for p, s in sockets.items() if s is sock)
                message = blocking_message(sock)
                if message.get("type") == "change" and message.get("topic") == topic:
                    arrived[placement], messages[placement] = now, message
        key = written_key(method, body, doc, alarm)
        for placement, message in messages.items():
            if key not in write_keys(message):
                fail(f"a (quiet): the change on {placement} after write {i} is not it ({key}): {message}")
            latency[placement].append((arrived[placement] - sent) * 1000)
            if placement != "A":
                after_answer.append((arrived[placement] - answer_at) * 1000)
        answered.append((answer_at - sent) * 1000)
    for sock in sockets.values():
        sock.close()
    connection.close()
    print(f"a. cross-instance delivery, quiet: {args.changes} writes on A (completions and renames), one socket on "
          f"each instance read by one thread with select(); write sent on A → frame read:", flush=True)
    print(f"   same instance (A) {summary(latency['A'])}", flush=True)
    print(f"   cross-instance (B, C) {summary(latency['B'] + latency['C'])}", flush=True)
    print(f"   (the write itself, sent → A's 2xx: {summary(answered, 'writes')}; A's 2xx → frame read on B or C: "
          f"{summary(after_answer)}, negative when the frame came first)", flush=True)


async def cross_instance(args, ports, owner, group_id, alarm, subscribers, label):
    """Scenario a: CHANGES writes on A, each awaited on every socket. `alarm` is updated to its open
    occurrence (each completion closes one). Returns per placement the write-sent → frame-read times."""
    a = HTTP(ports["A"])
    latency = {placement: [] for placement in ports}
    after_answer = {placement: [] for placement in ports}  # A's 2xx read → frame read (< 0: frame first)
    answered = []  # per write, sent → A's 2xx read here
    keys = []
    for i in range(args.changes):
        method, path, body = alternating_write(i, group_id, alarm, label)
        sent = time.monotonic()
        status, doc = await in_thread(a.call, method, path, body, owner)
        answered_at = time.monotonic()
        answered.append((answered_at - sent) * 1000)
        if status not in (200, 201):
            fail(f"a: {method} {path} on A answered {status} {doc}")
        key = written_key(method, body, doc, alarm)
        keys.append(key)
        arrived = await asyncio.gather(*(s.wait_for(key, TIMEOUT) for s in subscribers))
        late = [s.index for s, ok in zip(subscribers, arrived) if not ok]
        if late:
            fail(f"a: write {i} ({key}) never reached subscribers {late[:10]} within {TIMEOUT:.0f} s")
        for s in subscribers:
            latency[s.placement].append((s.seen[key][0] - sent) * 1000)
            after_answer[s.placement].append((s.seen[key][0] - answered_at) * 1000)
    for s in subscribers:
        for key in keys:
            if len(s.seen.get(key, [])) != 1:
                fail(f"a: subscriber {s.index} ({s.placement}) got {key} {len(s.seen.get(key, []))} times")
    check_same_seqs(subscribers, "a")
    counts = ", ".join(f"{sum(s.placement == p for s in subscribers)} on {p}" for p in ports if any(s.placement == p for s in subscribers))
    print(f"a. cross-instance delivery, {label}: {args.changes} writes on A (completions and renames) × "
          f"{len(subscribers)} sockets ({counts}), each once, same seqs everywhere, in order; write sent on A → frame read:",
          flush=True)
    print(f"   same instance (A) {summary(latency['A'])}", flush=True)
    print(f"   cross-instance (B, C) {summary(latency['B'] + latency['C'])}", flush=True)
    if latency["nginx"]:
        print(f"   through nginx {summary(latency['nginx'])}", flush=True)
    print(f"   (the write itself, sent → A's 2xx: {summary(answered, 'writes')}; A's 2xx → frame read on B or C: "
          f"{summary(after_answer['B'] + after_answer['C'])}, negative when the frame came first)", flush=True)


async def kill_mid_load(args, ports, owner, group_id, subscribers):
    """Scenario b."""
    proxy = ports["nginx"]
    acknowledged, unacknowledged, statuses = [], [], {}
    stop = asyncio.Event()
    counter = iter(range(1_000_000))
    writers = 4
    interval = writers / args.rate

    async def writer():
        connection = HTTP(proxy)
        while not stop.is_set():
            name = f"kill {next(counter)}"
            started = time.monotonic()
            try:
                status, _ = await in_thread(connection.call, "PATCH", f"/v1/groups/{group_id}", {"name": name}, owner)
            except (OSError, http.client.HTTPException):
                status = "error"
            statuses[status] = statuses.get(status, 0) + 1
            (acknowledged if status == 200 else unacknowledged).append(("name", name))
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))

    tasks = [asyncio.create_task(writer()) for _ in range(writers)]
    await asyncio.sleep(args.load_seconds / 3)
    killed = time.monotonic()
    killed_wall_ms = time.time() * 1000
    os.kill(args.kill_pid, signal.SIGKILL)
    await asyncio.sleep(args.load_seconds * 2 / 3)
    stop.set()
    await asyncio.gather(*tasks)
    if len(acknowledged) < args.rate * args.load_seconds / 4:  # a loaded machine slows the writers, never to a stop
        fail(f"b: only {len(acknowledged)} writes acknowledged through nginx: {statuses}")
    for s in subscribers:
        for key in acknowledged[-1:]:
            if not await s.wait_for(key, TIMEOUT):
                fail(f"b: subscriber {s.index} ({s.placement}) never got the last acknowledged write {key}")
    dropped = [s for s in subscribers if s.drops]
    on_c = [s for s in subscribers if s.placement == "C"]
    if not all(s.drops for s in on_c):
        fail(f"b: {sum(not s.drops for s in on_c)} of C's {len(on_c)} direct sockets never dropped after the SIGKILL")
    if any(s.drops for s in subscribers if s.placement in ("A", "B")):
        fail("b: a socket on A or B dropped although only C was killed")
    for s in subscribers:
        for key in acknowledged:
            count = len(s.seen.get(key, []))
            if count != 1:
                fail(f"b: subscriber {s.index} ({s.placement}, dropped: {bool(s.drops)}) got acknowledged write "
                     f"{key} {count} times")
        for key in unacknowledged:
            if len(s.seen.get(key, [])) > 1:
                fail(f"b: subscriber {s.index} got unacknowledged write {key} twice")
    check_same_seqs(subscribers, "b")
    reconnect = [(back - down) * 1000 for s in dropped for down, back in s.drops]
    since_kill = [(min(t for k in acknowledged for t in s.seen[k] if t > s.drops[0][1]) - killed) * 1000
                  for s in dropped if any(t > s.drops[0][1] for k in acknowledged for t in s.seen[k])]
    committed_unacked = sum(1 for key in unacknowledged if key in subscribers[0].seen)
    print(f"b. kill mid-load: {len(acknowledged)} writes acknowledged through nginx at {args.rate:g}/s for "
          f"{args.load_seconds:g} s (answers {statuses}); C killed after {args.load_seconds / 3:.1f} s; "
          f"{len(dropped)} sockets dropped ({len(on_c)} on C directly, {len(dropped) - len(on_c)} through nginx) and "
          f"resumed through nginx with since + epoch; every acknowledged write on every socket exactly once, same seqs "
          f"everywhere, no reset; {committed_unacked} of {len(unacknowledged)} unanswered writes had committed "
          f"(seen by all sockets)", flush=True)
    print(f"   reconnect (drop → 101 on another instance): {summary(reconnect, 'sockets')}", flush=True)
    if since_kill:
        print(f"   kill → first new write on the resumed socket: {summary(since_kill, 'sockets')}", flush=True)
    return killed_wall_ms


def sweep_runs(paths):
    """Per job, the (at ms, instance) of every `sweep` line in the three logs."""
    runs = {}
    for name, path in zip("ABC", paths):
        with open(path, errors="replace") as log:
            for line in log:
                if '"msg":"sweep"' in line:
                    entry = json.loads(line)
                    runs.setdefault(entry["job"], []).append((int(entry["at"]), name))
    return {job: sorted(timeline) for job, timeline in runs.items()}


SWEEP_JOBS = ("overdue_occurrences", "retention", "change_log_compaction")


async def sweeper(args, killed_wall_ms):
    """Scenario c: waits until every job has --sweep-periods runs, two of them after the kill."""
    period = args.sweep_period * 1000
    tolerance = min(1000, period // 10)  # SweepClaims.tolerance(everyMilliseconds:)
    deadline = time.monotonic() + 3 * args.sweep_periods * args.sweep_period
    while True:
        runs = sweep_runs(args.logs)
        enough = all(len(runs.get(job, [])) >= args.sweep_periods and
                     sum(at > killed_wall_ms for at, _ in runs.get(job, [])) >= 2 for job in SWEEP_JOBS)
        if enough:
            break
        if time.monotonic() > deadline:
            fail(f"c: the sweeper did not run {args.sweep_periods} periods (2 after the kill): "
                 f"{ {job: runs.get(job, []) for job in SWEEP_JOBS} }")
        await asyncio.sleep(0.5)
    report = []
    for job in SWEEP_JOBS:
        timeline = runs[job]
        gaps = [(later[0] - earlier[0], earlier, later) for earlier, later in zip(timeline, timeline[1:])]
        for gap, earlier, later in gaps:
            if gap < period - tolerance:
                fail(f"c: {job} ran twice in one period: {earlier} then {later}, {gap} ms apart (period {period} ms)")
            # Across the kill: a run C claimed in its last 200 ms left no line (its log buffer died
            # with it), so the visible gap is two periods plus the usual lateness.
            spans_kill = earlier[0] - 1000 <= killed_wall_ms <= later[0]
            if gap >= (4 if spans_kill else 2) * period:
                fail(f"c: {job} skipped a period: {earlier} then {later}, {gap} ms apart (period {period} ms)")
        before = {name: sum(1 for at, n in timeline if n == name and at <= killed_wall_ms) for name in "ABC"}
        after = {name: sum(1 for at, n in timeline if n == name and at > killed_wall_ms) for name in "AB"}
        if any(n == "C" for at, n in timeline if at > killed_wall_ms + 1000):
            fail(f"c: {job} logged by C after C was killed: {timeline}")
        report.append(f"{job} {len(timeline)} runs, before the kill A {before['A']} B {before['B']} C {before['C']}, "
                      f"after A {after['A']} B {after['B']}, gaps {min(g for g, _, _ in gaps)}–{max(g for g, _, _ in gaps)} ms")
    print(f"c. sweeper, period {period} ms across three instances: each job once per period "
          f"(gaps ≥ {period - tolerance} ms, < {2 * period} ms; < {4 * period} ms across the kill):", flush=True)
    for line in report:
        print(f"   {line}", flush=True)


async def presence(args, ports, owner, tag):
    """Scenario d: members on different instances see each other in `presence`."""
    group = (await in_thread(call, ports["A"], "POST", "/v1/groups", {"name": "presence"}, owner))["group"]
    code = (await in_thread(call, ports["A"], "POST", f"/v1/groups/{group['id']}/invite-code", {}, owner))["code"]
    x = await in_thread(register, ports["B"], tag, "x")
    y = await in_thread(register, ports["A"], tag, "y")
    for member in (x, y):
        await in_thread(call, ports["A"], "POST", "/v1/join", {"code": code}, member["token"])
    topic = f"group:{group['id']}"

    async def watch(socket, user_id, present, timeout):
        """True once `user_id` is (present=True) or is no longer (False) in what `socket` was told."""
        deadline = time.monotonic() + timeout
        announced = set()
        while time.monotonic() < deadline:
            try:
                message = await asyncio.wait_for(socket.receive(), deadline - time.monotonic())
            except asyncio.TimeoutError:
                break
            if message is None:
                break
            if message.get("topic") != topic:
                continue
            if message.get("type") == "snapshot":
                announced = set(message.get("presence") or [])
            elif message.get("type") == "presence":
                announced |= set(message.get("joined") or [])
                announced -= set(message.get("left") or [])
            else:
                continue
            if (user_id in announced) == present:
                return True, announced
        return False, announced

    x_socket = await Socket.open(ports["B"], x["token"], TIMEOUT)
    x_socket.send({"op": "subscribe", "topic": topic})
    await asyncio.sleep(2.5)  # past one presence interval on B
    y_socket = await Socket.open(ports["A"], y["token"], TIMEOUT)
    y_socket.send({"op": "subscribe", "topic": topic})
    ok, announced = await watch(y_socket, x["user"]["id"], True, 10)
    if not ok:
        fail(f"d: member X on B never appeared in the presence member Y on A received within 10 s "
             f"(A announced {sorted(announced)}; X is {x['user']['id']}, Y is {y['user']['id']})")
    ok, announced = await watch(x_socket, y["user"]["id"], True, 10)
    if not ok:
        fail(f"d: member Y on A never appeared in the presence member X on B received (B announced {sorted(announced)})")
    x_socket.close()
    ok, announced = await watch(y_socket, x["user"]["id"], False, 10)
    if not ok:
        fail(f"d: member X left B but Y on A still has X in presence ({sorted(announced)})")
    y_socket.close()
    print("d. presence across instances: X on B appears in Y's presence on A and Y in X's on B; X's leave reaches A", flush=True)


async def main_async(args):
    ports = {"A": args.a, "B": args.b, "C": args.c, "nginx": args.proxy}
    tag = f"{os.getpid()}-{int(time.time())}"
    owner_session = await in_thread(register, ports["A"], tag, "owner")
    owner = owner_session["token"]
    group = (await in_thread(call, ports["A"], "POST", "/v1/groups", {"name": "three"}, owner))["group"]
    topic = f"group:{group['id']}"
    schedule = {"schedule": {"type": "custom_days", "interval_days": 1, "start_date": "2020-01-01"},
                "times_of_day": [{"hour": h, "minute": 0} for h in (0, 5, 10, 15, 20)], "timezone": "UTC",
                "answer_lead_minutes": 10080}
    alarm = await in_thread(call, ports["A"], "POST", f"/v1/groups/{group['id']}/alarms",
                            dict(schedule, title="Filter", completion_rule="any"), owner)
    code = (await in_thread(call, ports["A"], "POST", f"/v1/groups/{group['id']}/invite-code", {}, owner))["code"]
    members = [owner]
    placements = ["A", "B", "C", "nginx"]
    while len(members) * PER_USER_SOCKETS < args.subscribers:
        i = len(members)
        session = await in_thread(register, ports[placements[i % 3]], tag, i)
        await in_thread(call, ports[placements[i % 3]], "POST", "/v1/join", {"code": code}, session["token"])
        members.append(session["token"])
    # One socket per instance first, read by one blocking thread: the server's own cross-instance hop,
    # before this one Python process has hundreds of sockets to read.
    await in_thread(quiet_probe, args, ports, owner, group["id"], alarm)
    subscribers = []
    for i in range(args.subscribers):
        placement = placements[i % 4]
        subscribers.append(Subscriber(i, ports[placement], placement, members[i // PER_USER_SOCKETS], topic, ports["nginx"]))
    for start in range(0, len(subscribers), 50):
        await asyncio.gather(*(s.start() for s in subscribers[start:start + 50]))
    for s in subscribers:
        try:
            await asyncio.wait_for(s.snapshot_ready.wait(), TIMEOUT)
        except asyncio.TimeoutError:
            fail(f"subscriber {s.index} ({s.placement}) got no snapshot of {topic}")
    print(f"{len(members)} members, {len(subscribers)} sockets subscribed to {topic}", flush=True)

    await cross_instance(args, ports, owner, group["id"], alarm, subscribers, "loaded")
    if args.check_presence:
        await presence(args, ports, owner, tag)
    else:
        print("d. presence across instances: skipped (--check-presence turns it on)", flush=True)
    killed_wall_ms = await kill_mid_load(args, ports, owner, group["id"], subscribers)
    for s in subscribers:
        s.stop()
    await sweeper(args, killed_wall_ms)


def main():
    p = argparse.ArgumentParser()
    for name in ("a", "b", "c", "proxy", "kill-pid"):
        p.add_argument(f"--{name}", type=int, required=True)
    p.add_argument("--logs", nargs=3, required=True, help="the JSON logs of A, B and C")
    p.add_argument("--subscribers", type=int, default=300)
    p.add_argument("--changes", type=int, default=40)
    p.add_argument("--rate", type=float, default=20, help="writes per second through nginx in scenario b")
    p.add_argument("--load-seconds", type=float, default=6)
    p.add_argument("--sweep-period", type=int, default=2, help="the instances' --sweep-period (seconds)")
    p.add_argument("--sweep-periods", type=int, default=10, help="sweeper periods to observe (scenario c)")
    p.add_argument("--check-presence", action="store_true")
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
