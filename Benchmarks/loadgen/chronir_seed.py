#!/usr/bin/env python3
"""Seeds a running chronir-server (started with --default-tier premium --max-members N
--password-hashing fast) through its public HTTP API, for Benchmarks/fanout.sh and idle-sockets.sh:

    chronir_seed.py PORT USERS OUTDIR [--no-group] [--prefix NAME] [--personal-alarm] [--shared-alarm]

registers USERS accounts (NAME-N@example.com; NAME defaults to bench, another keeps a second set of
accounts apart in the same database), the first creates a group and an invite code, every
other one joins with it (not with --no-group). Writes OUTDIR/tokens (one bearer token per line, the owner's first),
OUTDIR/group (the group id) and OUTDIR/owner (the owner's token). --personal-alarm: account N (the Nth
token, from 1) also creates one personal alarm, id 00000000-0000-0000-0000-<N in 12 hex digits>, for
the writes of WRITE=alarm (Benchmarks/lib.sh write_lua). --shared-alarm: account N also creates a group
of its own with one shared alarm in it, and OUTDIR/shared_alarms holds its path
(/v1/groups/<group>/alarms/<alarm>) on line N, for the writes of WRITE=shared. Four keep-alive HTTP connections in parallel
threads; the standard library only."""
import http.client
import json
import os
import sys
import threading


def call(conn, method, path, body=None, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    response = conn.getresponse()
    data = response.read()
    if response.status >= 300:
        raise SystemExit(f"{method} {path} → {response.status} {data[:300]!r}")
    return json.loads(data) if data else None


def in_parallel(port, items, work, threads=4):
    results = [None] * len(items)

    def run(offset):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for i in range(offset, len(items), threads):
            results[i] = work(conn, items[i])
        conn.close()

    pool = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if any(r is None for r in results):
        raise SystemExit("seeding failed")
    return results


def main():
    port, users, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    flags = sys.argv[4:]
    prefix = flags[flags.index("--prefix") + 1] if "--prefix" in flags else "bench"
    os.makedirs(out, exist_ok=True)
    tokens = in_parallel(port, list(range(users)), lambda conn, i: call(
        conn, "POST", "/v1/auth/register",
        {"email": f"{prefix}-{i}@example.com", "password": "benchmark password", "display_name": f"Bench {i}"})["token"])
    with open(os.path.join(out, "tokens"), "w") as f:
        f.write("\n".join(tokens) + "\n")
    with open(os.path.join(out, "owner"), "w") as f:
        f.write(tokens[0] + "\n")
    if "--personal-alarm" in flags:
        alarm = {"title": "Rent", "schedule": {"type": "custom_days", "interval_days": 1, "start_date": "2026-02-01"},
                 "times_of_day": [{"hour": 10, "minute": 0}], "timezone": "UTC"}
        in_parallel(port, list(enumerate(tokens, 1)), lambda conn, it: call(
            conn, "PUT", f"/v1/me/alarms/00000000-0000-0000-0000-{it[0]:012x}", alarm, it[1]) or True)
    if "--shared-alarm" in flags:
        alarm = {"title": "Filter", "schedule": {"type": "custom_days", "interval_days": 1, "start_date": "2026-02-01"},
                 "times_of_day": [{"hour": 10, "minute": 0}], "timezone": "UTC"}

        def own_group(conn, token):
            group = call(conn, "POST", "/v1/groups", {"name": "Household"}, token)["group"]["id"]
            alarm_id = call(conn, "POST", f"/v1/groups/{group}/alarms", alarm, token)["id"]
            return f"/v1/groups/{group}/alarms/{alarm_id}"
        paths = in_parallel(port, tokens, own_group)
        with open(os.path.join(out, "shared_alarms"), "w") as f:
            f.write("\n".join(paths) + "\n")
    if "--no-group" in flags:
        return
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    group = call(conn, "POST", "/v1/groups", {"name": "Benchmark group"}, tokens[0])["group"]["id"]
    code = call(conn, "POST", f"/v1/groups/{group}/invite-code", {}, tokens[0])["code"]
    in_parallel(port, tokens[1:], lambda conn, t: call(conn, "POST", "/v1/join", {"code": code}, t) or True)
    with open(os.path.join(out, "group"), "w") as f:
        f.write(group + "\n")


if __name__ == "__main__":
    main()
