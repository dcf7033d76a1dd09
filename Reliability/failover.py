#!/usr/bin/env python3
"""Failover under load: run by Reliability/failover.sh.

  failover.py --a PORT --b PORT --kill-cmd CMD --promote-cmd CMD --database-url URL
              [--replication sync|async] [--writers 6] [--before 3] [--after 20]

WRITERS users each own a group and rename it `w<i>-<n>` (n = 0, 1, …) one write at a time,
alternating instances A and B; every group has one subscriber on A and one on B. BEFORE seconds in,
CMD kills the primary; one second later the standby is promoted. Each writer goes on until it has
AFTER acknowledged writes after the kill. A non-2xx must be a 503 with Retry-After (the write is
retried after 50 ms). A subscriber whose socket drops reconnects to its instance and resubscribes
with `since` + `epoch`.

The history is what the new primary's change log holds of each group's renames (psql on URL): a
write answered 503 may be in it. Checks, both modes: every write acknowledged after the kill is in
the history; each subscriber's last snapshot (the first one, or a `reset`) and the changes after it
are exactly the history from that snapshot on — once each, in order, seqs rising: a change the
history holds but the subscriber never got, or one it got that the history lost, without a reset
in between, is a silent gap and fails; both subscribers of a group end alike; each group's final
name is its last acknowledged one. Under `sync` no acknowledged write is missing from the history
and no subscriber got a reset. Under `async` (the kill command first lets the primary commit what
the standby never receives) acknowledged writes may be lost — counted and reported — and every
subscriber that had received a lost change must have been reset.
Python 3 standard library only.
"""
import argparse
import asyncio
import http.client
import json
import subprocess
import sys
import time

import chronir_ws

PASSWORD = "correct horse battery staple"
TIMEOUT = 60.0


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def request(port, method, path, body=None, token=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        connection.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = connection.getresponse()
        raw = response.read()
        return response.status, response.getheader("Retry-After"), (json.loads(raw) if raw else None)
    finally:
        connection.close()


def must(port, method, path, body=None, token=None):
    status, _, doc = request(port, method, path, body, token)
    if status not in (200, 201):
        fail(f"{method} {path} on {port}: {status} {doc}")
    return doc


class Subscriber(chronir_ws.Subscriber):
    """Records the topic's last snapshot (the group's name then) and the group names, seqs and arrival
    times of the changes after it; `received` keeps every change's name across resets."""

    def __init__(self, port, token, topic):
        super().__init__(port, token, topic, TIMEOUT, retry_delay=0.1)
        self.snapshot, self.names, self.seqs, self.arrivals, self.received = None, [], [], [], []
        self.resets = 0
        self.others = []

    def on_other(self, message):
        self.others.append(message)

    def gave_up(self, reason):
        fail(reason)

    def on_snapshot(self, message):
        if message.get("reset"):
            self.resets += 1
        self.snapshot = ((message.get("data") or {}).get("group") or {}).get("name")
        self.names, self.seqs, self.arrivals = [], [], []

    def on_change(self, message):
        for change in message.get("changes", []):
            if change.get("kind") == "group":
                name = (change.get("doc") or {}).get("name")
                self.names.append(name)
                self.seqs.append(message["seq"])
                self.arrivals.append(time.monotonic())
                self.received.append(name)


def order(name):
    """A writer's names in the order it wrote them: `w<i>-start`, then `w<i>-<n>` by n."""
    suffix = name.rsplit("-", 1)[1]
    return -1 if suffix == "start" else int(suffix)


def history(database_url, group_ids):
    """Each group's names in the new primary's change log, in seq order (psql; one statement)."""
    topics = ",".join(f"'group:{g}'" for g in group_ids)
    out = subprocess.run(
        ["psql", "-X", "-q", "-At", "-F", "\t", "-d", database_url, "-c",
         f"SELECT topic, (document::json)->>'name' FROM change_log WHERE kind = 'group' AND document IS NOT NULL "
         f"AND topic IN ({topics}) ORDER BY seq"],
        check=True, capture_output=True, text=True).stdout
    names = {g: [] for g in group_ids}
    for line in out.splitlines():
        topic, name = line.split("\t")
        names[topic.removeprefix("group:")].append(name)
    return names


def writer(i, ports, token, group_id, state):
    """Renames the group until AFTER writes were acknowledged after the kill; returns [(name, sent, answered)]."""
    acknowledged, n = [], 0
    while True:
        port = ports[n % 2]
        name = f"w{i}-{n:05d}"
        sent = time.monotonic()
        try:
            status, retry_after, doc = request(port, "PATCH", f"/v1/groups/{group_id}", {"name": name}, token)
        except (OSError, http.client.HTTPException) as error:
            fail(f"writer {i}: {port} did not answer: {error}")
        if status == 200:
            acknowledged.append((name, sent, time.monotonic()))
            if state["killed"] is not None and sum(1 for _, s, _ in acknowledged if s > state["killed"]) >= state["after"]:
                return acknowledged
        elif status == 503 and retry_after:
            time.sleep(0.05)
        else:
            fail(f"writer {i}: {name} on {port} answered {status} (Retry-After {retry_after}): {doc}")
        n += 1


async def main_async(args):
    ports = (args.a, args.b)
    tag = f"{int(time.time())}"
    owners = []
    for i in range(args.writers):
        session = must(ports[i % 2], "POST", "/v1/auth/register",
                       {"email": f"failover-{tag}-{i}@example.com", "password": PASSWORD, "display_name": f"F{i}"})
        group = must(ports[i % 2], "POST", "/v1/groups", {"name": f"w{i}-start"}, session["token"])["group"]
        owners.append((session["token"], group["id"]))
    subscribers = {}
    for token, group_id in owners:
        subscribers[group_id] = [Subscriber(port, token, f"group:{group_id}") for port in ports]
        for s in subscribers[group_id]:
            await s.start()
    for group in subscribers.values():
        for s in group:
            await asyncio.wait_for(s.snapshot_ready.wait(), TIMEOUT)
    state = {"killed": None, "after": args.after}
    loop = asyncio.get_running_loop()
    tasks = [loop.run_in_executor(None, writer, i, ports, token, group_id, state) for i, (token, group_id) in enumerate(owners)]
    await asyncio.sleep(args.before)
    subprocess.run(["bash", "-c", args.kill_cmd], check=True)
    killed = time.monotonic()  # every process of the primary has been sent SIGKILL
    state["killed"] = killed
    await asyncio.sleep(1)
    promoting = time.monotonic()
    subprocess.run(["bash", "-c", args.promote_cmd], check=True)
    promoted = time.monotonic()
    results = await asyncio.wait_for(asyncio.gather(*tasks), 4 * TIMEOUT)

    # Each group's last acknowledged write reaches both subscribers (as a change, or in a reset snapshot).
    deadline = time.monotonic() + TIMEOUT
    for (token, group_id), acknowledged in zip(owners, results):
        last = acknowledged[-1][0]
        for s in subscribers[group_id]:
            while last not in s.names and s.snapshot != last:
                if time.monotonic() > deadline:
                    fail(f"group {group_id}: {last} never reached the subscriber on {s.port} (it has {s.names[-3:]} "
                         f"since its snapshot {s.snapshot}; {s.resets} resets, {len(s.drops)} drops; other messages {s.others[-3:]})")
                await asyncio.sleep(0.05)
    for group in subscribers.values():
        for s in group:
            s.stop()
    logs = history(args.database_url, [group_id for _, group_id in owners])
    acknowledged_total = present = lost = delivered = expected = covered = 0
    first_write = min(answered for acknowledged in results for _, sent, answered in acknowledged if sent > killed)
    first_change = None
    for (token, group_id), acknowledged in zip(owners, results):
        names = [name for name, _, _ in acknowledged]
        log = logs[group_id]
        if log != sorted(log, key=order) or len(set(log)) != len(log):
            fail(f"group {group_id}: the change log holds its renames twice or out of order: {log[-5:]}")
        missing = [name for name in names if name not in set(log)]
        after_kill = {name for name, sent, _ in acknowledged if sent > killed}
        if any(name in after_kill for name in missing):
            fail(f"group {group_id}: writes acknowledged after the kill are not in the change log: {missing[:5]}")
        if missing and args.replication == "sync":
            fail(f"group {group_id}: acknowledged writes lost under synchronous replication: {missing[:5]}")
        acknowledged_total += len(names)
        present += len(names) - len(missing)
        lost += len(missing)
        pair = subscribers[group_id]
        for s in pair:
            if s.resets and args.replication == "sync":
                fail(f"group {group_id}: the subscriber on {s.port} got {s.resets} reset snapshots (no commit was lost)")
            if any(name in missing for name in s.received) and not s.resets:
                fail(f"group {group_id}: the subscriber on {s.port} got a change the new primary lost and no reset (a silent gap)")
            if s.seqs != sorted(set(s.seqs)):
                fail(f"group {group_id}: the subscriber on {s.port} got seqs twice or out of order since its last snapshot")
            since = [name for name in log if order(name) > order(s.snapshot)]
            if s.names != since:
                extra = [name for name in s.names if name not in since]
                absent = [name for name in since if name not in s.names]
                fail(f"group {group_id}: the subscriber on {s.port} is not the history after its snapshot {s.snapshot}: "
                     f"got {extra[:5]} the log lacks, lacks {absent[:5]} the log holds (a silent gap)")
            delivered += len(s.names)
            expected += len(since)
            covered += len(log) - len(since)
            post = [at for at, name in zip(s.arrivals, s.names) if name in after_kill]
            if post:
                first_change = min(first_change or post[0], post[0])
        ends = [(s.names or [s.snapshot])[-1] for s in pair]
        if ends[0] != ends[1] or ends[0] != names[-1]:
            fail(f"group {group_id}: the subscribers on A and B end at {ends}, the last acknowledged write is {names[-1]}")
        final = must(ports[0], "GET", f"/v1/groups/{group_id}", token=token)["group"]["name"]
        if final != names[-1]:
            fail(f"group {group_id}: final name {final}, last acknowledged {names[-1]}")
    subscribers_all = [s for group in subscribers.values() for s in group]
    resumes = sum(len(s.drops) for s in subscribers_all)
    resets = sum(s.resets for s in subscribers_all)
    reset_subscribers = sum(1 for s in subscribers_all if s.resets)
    if args.replication == "async" and lost == 0:
        fail("no acknowledged write was lost: the asynchronous case did not happen (the standby had every commit)")
    print(f"replication {args.replication}: writes acknowledged {acknowledged_total}, present {present}, lost {lost}; "
          f"changes delivered {delivered} / expected {expected} (+{covered} covered by the subscribers' snapshots); "
          f"resumes {resumes}, resets {resets} ({reset_subscribers} of {len(subscribers_all)} subscribers)", flush=True)
    print(f"kill → promote done {promoted - killed:.2f} s (pg_ctl promote took {promoted - promoting:.2f} s); "
          f"kill → first write {first_write - killed:.2f} s; kill → first change delivered {first_change - killed:.2f} s", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--a", type=int, required=True)
    p.add_argument("--b", type=int, required=True)
    p.add_argument("--kill-cmd", required=True)
    p.add_argument("--promote-cmd", required=True)
    p.add_argument("--database-url", required=True)
    p.add_argument("--replication", choices=("sync", "async"), default="sync")
    p.add_argument("--writers", type=int, default=6)
    p.add_argument("--before", type=float, default=3)
    p.add_argument("--after", type=int, default=20)
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
