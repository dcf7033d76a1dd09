#!/usr/bin/env python3
"""Mixed traffic for Reliability/soak.sh: HTTP mutations, WebSocket subscribers, reconnects with resume.

  soak.py BASE_URL SERVER_PID [--seconds 600] [--subscribers 2000] [--accounts 100] [--rate 20]

Accounts (premium) each own a group with one shared alarm. Every subscriber (20 per account, the
per-user limit) subscribes to `user` and its account's `group:<id>` and reads everything, tracking the
last seq per topic. Mutators rename groups and complete alarms at --rate mutations per second in
total. Every second 1% of the subscribers drop their socket and reconnect with `since` = their last
seq (resume). Every minute prints: server RSS and open fds, mutations (and their p99 latency as this
client saw it, which includes this single Python process's own scheduling delay; and, with
--metrics-token, the server's own p99 for the mutation routes in that minute from its
`chronir_http_request_duration_seconds` histogram — the figure that isolates the server), change
messages received, resumes answered with a replay vs a snapshot reset, and errors.
"""
import argparse
import asyncio
import http.client
import json
import os
import random
import resource
import time
import urllib.parse

from chronir_ws import Socket

stats = {"mutations": 0, "mutation_errors": 0, "changes": 0, "snapshots": 0, "resumes": 0,
         "resume_snapshot": 0, "ws_errors": 0, "closes": 0}
latencies = []

MUTATION_ROUTES = {("PATCH", "/v1/groups/{id}"), ("POST", "/v1/groups/{id}/alarms/{aid}/completions")}


def server_buckets(host, port, token):
    """The server's cumulative request-duration buckets (le → count) summed over the mutation routes."""
    c = http.client.HTTPConnection(host, port, timeout=10)
    c.request("GET", "/metrics", headers={"Authorization": "Bearer " + token})
    text = c.getresponse().read().decode()
    c.close()
    buckets = {}
    for line in text.splitlines():
        if not line.startswith("chronir_http_request_duration_seconds_bucket{"):
            continue
        labels, value = line[line.index("{") + 1:line.rindex("}")], line.rsplit(" ", 1)[1]
        fields = dict(part.split("=", 1) for part in labels.split(","))
        fields = {k: v.strip('"') for k, v in fields.items()}
        if (fields.get("method"), fields.get("route")) in MUTATION_ROUTES:
            le = float("inf") if fields["le"] == "+Inf" else float(fields["le"])
            buckets[le] = buckets.get(le, 0) + float(value)
    return buckets


def bucket_p99(now, before):
    """The upper bound (ms) of the bucket holding the 99th percentile of what `now` gained over `before`."""
    delta = sorted((le, now[le] - before.get(le, 0)) for le in now)
    total = delta[-1][1] if delta else 0
    if total <= 0:
        return 0.0
    for le, count in delta:
        if count >= 0.99 * total:
            return le * 1000
    return float("inf")


def server_numbers(pid):
    rss = 0
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0, 0
    return rss, fds


class Subscriber:
    def __init__(self, host, port, token, group_id):
        self.host, self.port, self.token, self.group_id = host, port, token, group_id
        self.seq = {}
        self.socket = None
        self.task = None

    async def connect(self, resume):
        socket = await Socket.open(self.port, self.token, timeout=30, host=self.host)
        for topic in ("user", f"group:{self.group_id}"):
            msg = {"op": "subscribe", "topic": topic}
            if resume and topic in self.seq:
                msg["since"] = self.seq[topic]
                stats["resumes"] += 1
            socket.send(msg)
        await socket.flush()
        self.socket = socket
        self.task = asyncio.create_task(self.read(socket, resume))

    async def read(self, socket, resume):
        while (msg := await socket.receive()) is not None:
            kind = msg.get("type")
            if kind == "change":
                stats["changes"] += 1
            elif kind == "snapshot":
                stats["snapshots"] += 1
                if resume and msg.get("topic") in self.seq:
                    stats["resume_snapshot"] += 1
            if "seq" in msg and "topic" in msg:
                self.seq[msg["topic"]] = msg["seq"]
        if socket.closed_by_peer:
            stats["closes"] += 1

    async def drop(self):
        if self.task:
            self.task.cancel()
        if self.socket:
            self.socket.close()


def http_call(host, port, method, path, body=None, token=None):
    c = http.client.HTTPConnection(host, port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    raw = r.read()
    c.close()
    return r.status, (json.loads(raw) if raw else None)


async def mutator(host, port, accounts, rate, stop):
    loop = asyncio.get_running_loop()
    rng = random.Random(1)
    interval = 1.0 / rate
    n = 0
    while not stop.is_set():
        token, gid, alarm = rng.choice(accounts)
        n += 1
        if n % 2:
            call = ("PATCH", f"/v1/groups/{gid}", {"name": f"Soak {n}"})
        else:
            call = ("POST", f"/v1/groups/{gid}/alarms/{alarm['id']}/completions",
                    {"status": "completed", "scheduled_at": alarm["occurrence"]["scheduled_at"]})
        t0 = time.perf_counter()
        try:
            status, doc = await loop.run_in_executor(None, http_call, host, port, call[0], call[1], call[2], token)
        except OSError:
            status, doc = 0, None
        latencies.append((time.perf_counter() - t0) * 1000)
        if status in (200, 201):
            stats["mutations"] += 1
            if "alarm" in (doc or {}) and "completion" in doc:
                alarm.clear()
                alarm.update(doc["alarm"])
        else:
            stats["mutation_errors"] += 1
        await asyncio.sleep(interval)


async def loop_call(function, *args):
    return await asyncio.get_running_loop().run_in_executor(None, function, *args)


async def main_async(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    u = urllib.parse.urlparse(args.base)
    host, port = u.hostname, u.port
    accounts = []
    # Five times a day, a week's lead window: 35 occurrences can be answered ahead (then the soak's
    # completions are refused 409 ANSWER_TOO_EARLY and count as failed mutations, not errors).
    schedule = {"schedule": {"type": "custom_days", "interval_days": 1, "start_date": "2020-01-01"},
                "times_of_day": [{"hour": h, "minute": 0} for h in (0, 5, 10, 15, 20)], "timezone": "UTC",
                "answer_lead_minutes": 10080}
    tag = os.urandom(3).hex()
    for i in range(args.accounts):
        _, doc = http_call(host, port, "POST", "/v1/auth/register",
                           {"email": f"soak-{tag}-{i}@example.com", "password": "correct horse", "display_name": f"S{i}"})
        token = doc["token"]
        _, g = http_call(host, port, "POST", "/v1/groups", {"name": f"Soak {i}"}, token)
        _, alarm = http_call(host, port, "POST", f"/v1/groups/{g['group']['id']}/alarms",
                             dict(schedule, title="Filter", completion_rule="any"), token)
        accounts.append((token, g["group"]["id"], alarm))
    subs = [Subscriber(host, port, accounts[i // 20 % len(accounts)][0], accounts[i // 20 % len(accounts)][1])
            for i in range(args.subscribers)]
    for i, s in enumerate(subs):
        try:
            await s.connect(resume=False)
        except (OSError, ConnectionError, asyncio.TimeoutError) as e:
            stats["ws_errors"] += 1
        if i % 100 == 99:
            await asyncio.sleep(0.1)
    stop = asyncio.Event()
    mutators = [asyncio.create_task(mutator(host, port, accounts, args.rate / 4, stop)) for _ in range(4)]
    rng = random.Random(2)
    start = time.monotonic()
    next_report = 0
    print("minute  rss_kib  fds  mutations  mut_p99_ms  server_p99_ms  changes_rcvd  resumes  resume_resets  errors",
          flush=True)
    last_buckets = server_buckets(host, port, args.metrics_token) if args.metrics_token else {}
    while True:
        elapsed = time.monotonic() - start
        if elapsed >= next_report:
            rss, fds = server_numbers(args.pid)
            recent = sorted(latencies[-2000:]) or [0]
            p99 = recent[min(len(recent) - 1, int(0.99 * len(recent)))]
            server_p99 = "n/a"
            if args.metrics_token:
                buckets = await loop_call(server_buckets, host, port, args.metrics_token)
                server_p99 = f"≤{bucket_p99(buckets, last_buckets):g}"
                last_buckets = buckets
            print(f"{next_report / 60:6.0f}  {rss:7d}  {fds:4d}  {stats['mutations']:9d}  {p99:10.1f}  {server_p99:>13}  "
                  f"{stats['changes']:12d}  {stats['resumes']:7d}  {stats['resume_snapshot']:13d}  "
                  f"{stats['mutation_errors'] + stats['ws_errors']:6d}", flush=True)
            next_report += 60
        if elapsed >= args.seconds:
            break
        for s in rng.sample(subs, max(1, len(subs) // 100)):
            await s.drop()
            try:
                await s.connect(resume=True)
            except (OSError, ConnectionError, asyncio.TimeoutError):
                stats["ws_errors"] += 1
        await asyncio.sleep(1)
    stop.set()
    await asyncio.gather(*mutators)
    for s in subs:
        await s.drop()
    await asyncio.sleep(2)
    print(f"final: {json.dumps(stats)}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("base")
    p.add_argument("pid", type=int)
    p.add_argument("--seconds", type=float, default=600)
    p.add_argument("--subscribers", type=int, default=2000)
    p.add_argument("--accounts", type=int, default=100)
    p.add_argument("--rate", type=float, default=20)
    p.add_argument("--metrics-token", default="", help="the server's --metrics-token: adds its own p99 per minute")
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
