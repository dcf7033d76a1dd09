#!/usr/bin/env python3
"""Failover under load: run by Reliability/failover.sh.

  failover.py --a PORT --b PORT --kill-cmd CMD --promote-cmd CMD [--writers 6] [--before 3] [--after 20]

WRITERS users each own a group and rename it `w<i>-<n>` (n = 0, 1, …) one write at a time,
alternating instances A and B; every group has one subscriber on A and one on B. BEFORE seconds in,
CMD kills the primary; one second later the standby is promoted. Each writer goes on until it has
AFTER acknowledged writes after the kill. A non-2xx must be a 503 with Retry-After (the write is
retried after 50 ms). A subscriber whose socket drops reconnects to its instance and resubscribes
with `since` + `epoch`. Checks: every acknowledged write reached both subscribers of its group, once
each, with names and seqs strictly rising (a write answered 503 may have committed: seen by both
or neither); no `reset` snapshot; each group's final name is its last acknowledged one.
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
    """Records the group names and seqs of the topic's changes, when each arrived, and reset snapshots."""

    def __init__(self, port, token, topic):
        super().__init__(port, token, topic, TIMEOUT, retry_delay=0.1)
        self.names, self.seqs, self.arrivals = [], [], []
        self.resets = 0

    def gave_up(self, reason):
        fail(reason)

    def on_snapshot(self, message):
        if message.get("reset"):
            self.resets += 1

    def on_change(self, message):
        for change in message.get("changes", []):
            if change.get("kind") == "group":
                self.names.append((change.get("doc") or {}).get("name"))
                self.seqs.append(message["seq"])
                self.arrivals.append(time.monotonic())


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

    # Every acknowledged write reaches both subscribers of its group.
    deadline = time.monotonic() + TIMEOUT
    for (token, group_id), acknowledged in zip(owners, results):
        last = acknowledged[-1][0]
        for s in subscribers[group_id]:
            while last not in s.names:
                if time.monotonic() > deadline:
                    fail(f"group {group_id}: {last} never reached the subscriber on {s.port} (it has {s.names[-3:]})")
                await asyncio.sleep(0.05)
    for group in subscribers.values():
        for s in group:
            s.stop()
    acknowledged_total = delivered = expected = 0
    first_write = min(answered for acknowledged in results for _, sent, answered in acknowledged if sent > killed)
    first_change = None
    for (token, group_id), acknowledged in zip(owners, results):
        names = [name for name, _, _ in acknowledged]
        acknowledged_total += len(names)
        pair = subscribers[group_id]
        for s in pair:
            if s.resets:
                fail(f"group {group_id}: the subscriber on {s.port} got {s.resets} reset snapshots (no commit was lost)")
            if s.names != sorted(set(s.names)) or s.seqs != sorted(set(s.seqs)):
                fail(f"group {group_id}: the subscriber on {s.port} got names or seqs twice or out of order")
            missing = set(names) - set(s.names)
            if missing:
                fail(f"group {group_id}: acknowledged writes never reached the subscriber on {s.port}: {sorted(missing)[:5]}")
            delivered += len(set(names) & set(s.names))
            expected += len(names)
            post = [at for at, name in zip(s.arrivals, s.names) if any(n == name and sent > killed for n, sent, _ in acknowledged)]
            if post:
                first_change = min(first_change or post[0], post[0])
        if pair[0].names != pair[1].names:
            fail(f"group {group_id}: the subscribers on A and B differ (a write answered 503 seen by one only)")
        final = must(ports[0], "GET", f"/v1/groups/{group_id}", token=token)["group"]["name"]
        if final != names[-1]:
            fail(f"group {group_id}: final name {final}, last acknowledged {names[-1]}")
    resumes = sum(len(s.drops) for group in subscribers.values() for s in group)
    print(f"writes acknowledged {acknowledged_total}, present {acknowledged_total} (final names and deliveries); "
          f"changes delivered {delivered} / expected {expected}; resumes {resumes}, resets 0", flush=True)
    print(f"kill → promote done {promoted - killed:.2f} s (pg_ctl promote took {promoted - promoting:.2f} s); "
          f"kill → first write {first_write - killed:.2f} s; kill → first change delivered {first_change - killed:.2f} s", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--a", type=int, required=True)
    p.add_argument("--b", type=int, required=True)
    p.add_argument("--kill-cmd", required=True)
    p.add_argument("--promote-cmd", required=True)
    p.add_argument("--writers", type=int, default=6)
    p.add_argument("--before", type=float, default=3)
    p.add_argument("--after", type=int, default=20)
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
