#!/usr/bin/env python3
"""The driver of Benchmarks/notifications.sh (issue 17's scheduler-lag benchmark); the standard library only.

    notifications_bench.py PORT METRICS_URL RECEIVER_URL CA_FILE ALARMS GROUPS

against a running chronir-server (premium default tier, fast hashing, write budgets off, registrations
lifted, its operator webhook pointed at Benchmarks/loadgen/webhook_sink.py — or the tests'
Tests/Fakes/webhook_receiver.py — at RECEIVER_URL, whose TLS certificate CA_FILE signs):

1. Accounts (set-up, timed): per group an owner, ceil(per-group alarms / 5) - 1 admins (alarm creation
   is limited to 5 per user per minute) and one member; the owner creates the group and an invite
   code, the others join, the admins are promoted. Then waits until the webhook has had the joins'
   `group_member_joined` (one per join) and measures the request and drain rates.
2. The target minute T: the first whole UTC minute after the alarms' estimated creation time plus
   the estimated drain of the `shared_alarm_created` notifications they queue, plus a margin.
3. Alarms: ALARMS shared alarms, custom_days every day from today, times_of_day = T's hour:minute
   UTC, pre-alarm off, each assigned to its group's member (so each `alarm_fired` has one recipient).
   Waits until the webhook has had one call per join and per alarm (shared_alarm_created) and then
   none for QUIET_SECONDS; fails when T is already near (the set-up overran).
4. Scrapes /metrics just before T, waits (≤ 5 min after T) until ALARMS `alarm_fired` webhook calls
   have arrived, scrapes again; the difference of `chronir_notification_lag_seconds` is the burst's.

Prints `key value` lines (for the shell's summary) and exits 1 when an `alarm_fired` is missing.
"""
import datetime
import http.client
import json
import math
import os
import shlex
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request

THREADS = 8  # keep-alive connections in parallel
QUIET_SECONDS = 3  # after the last expected call, this long without another (dispatcher tick 1 s)
DRAIN_TIMEOUT = 300  # seconds a drain may take before the run is abandoned
BURST_TIMEOUT = 300  # seconds after T by which every alarm_fired must have arrived
MARGIN_SECONDS = 15  # between the end of the set-up's drain and T
# The dispatcher's ceiling: NotificationDispatcher.Limits.claimBatch (256) per round, rounds ≥ its 1-s
# tick apart. The joins' drain (one round at a small scale) would overestimate the rate.
DISPATCH_CEILING_PER_S = 256
ROUND_GAP_SECONDS = 0.1  # a pause longer than this between two webhook calls separates dispatcher rounds


def log(message):
    print(f"[{datetime.datetime.now(datetime.timezone.utc):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def call(conn, method, path, body=None, token=None, want=(200, 201, 204)):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    response = conn.getresponse()
    data = response.read()
    if response.status not in want:
        raise RuntimeError(f"{method} {path} → {response.status} {data[:300]!r}")
    return json.loads(data) if data else None


def in_parallel(port, items, work):
    """work(conn, item) for every item on THREADS keep-alive connections; results in order."""
    results = [None] * len(items)
    errors = []

    def run(offset):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            for i in range(offset, len(items), THREADS):
                results[i] = work(conn, items[i])
        except Exception as error:  # reported below: a benchmark with failed requests measures nothing
            errors.append(error)
        conn.close()

    pool = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise SystemExit(f"set-up failed: {errors[0]}")
    return results


class Receiver:
    def __init__(self, url, ca_file):
        self.url = url
        self.context = ssl.create_default_context(cafile=ca_file)

    def count(self, kind):
        """How many calls of notification type `kind` arrived (cheap: no records serialised)."""
        with urllib.request.urlopen(self.url + "/count", context=self.context, timeout=60) as r:
            return json.loads(r.read())["by_type"].get(kind, 0)

    def received(self):
        with urllib.request.urlopen(self.url + "/received", context=self.context, timeout=60) as r:
            return json.loads(r.read())

    def wait_drained(self, expected, label):
        """Waits until `expected` distinct notifications (by X-Chronir-Key: delivery is at-least-once)
        have arrived and then QUIET_SECONDS without a new call, so the dispatcher has settled them
        (their lag is in the histogram before the burst's first scrape); returns the records."""
        start = time.time()
        while True:
            records = self.received()
            last = max([start] + [r["arrived"] for r in records])
            if len({r["key"] for r in records}) >= expected and time.time() - last >= QUIET_SECONDS:
                return records
            if time.time() - start > DRAIN_TIMEOUT:
                raise SystemExit(f"{label}: {len(records)} of {expected} webhook calls after {DRAIN_TIMEOUT} s")
            time.sleep(1)


def cpu_seconds(pids):
    """User + system CPU seconds the processes `pids` (comma-separated) have used, summed
    (/proc/PID/stat fields 14 and 15)."""
    total = 0
    for pid in pids.split(","):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def scrape(metrics_url):
    with urllib.request.urlopen(metrics_url + "/metrics", timeout=60) as r:
        return r.read().decode()


def lag_buckets(text):
    """{upper bound (float, inf for +Inf): cumulative count} of chronir_notification_lag_seconds."""
    buckets = {}
    for line in text.splitlines():
        if line.startswith("chronir_notification_lag_seconds_bucket{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            buckets[math.inf if le == "+Inf" else float(le)] = float(line.rsplit(" ", 1)[1])
    return buckets


def histogram_quantile(before, after, q):
    """The upper bound of the bucket holding the q-quantile of the observations between two scrapes
    (so "≤ that many seconds"; the bucket bounds are the precision), and the count."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0) for b in bounds]
    total = counts[-1] if counts else 0
    if total == 0:
        return None, 0
    for bound, cumulative in zip(bounds, counts):
        if cumulative >= q * total:
            return bound, total
    return math.inf, total


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def main():
    port, metrics_url, receiver_url, ca_file = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    alarms, groups = int(sys.argv[5]), int(sys.argv[6])
    per_group = math.ceil(alarms / groups)
    if per_group > 100:
        raise SystemExit("at most 100 live alarms per group (SharedAlarmRules.maxAlarmsPerGroup): use more groups")
    creators = math.ceil(per_group / 5)  # the owner and creators - 1 admins
    receiver = Receiver(receiver_url, ca_file)

    # 1. Accounts, groups, joins, promotions.
    started = time.time()
    accounts_per_group = creators + 1
    names = [(g, k) for g in range(groups) for k in range(accounts_per_group)]
    registered = in_parallel(port, names, lambda conn, n: call(
        conn, "POST", "/v1/auth/register",
        {"email": f"n{n[0]}-{n[1]}@example.com", "password": "benchmark password", "display_name": f"N {n[0]}.{n[1]}"}))
    accounts = [[registered[g * accounts_per_group + k] for k in range(accounts_per_group)] for g in range(groups)]

    def make_group(conn, g):
        owner = accounts[g][0]["token"]
        group = call(conn, "POST", "/v1/groups", {"name": f"Bench {g}"}, owner)["group"]["id"]
        code = call(conn, "POST", f"/v1/groups/{group}/invite-code", {}, owner)["code"]
        for k in range(1, accounts_per_group):
            call(conn, "POST", "/v1/join", {"code": code}, accounts[g][k]["token"])
        for k in range(1, creators):
            call(conn, "PATCH", f"/v1/groups/{group}/members/{accounts[g][k]['user']['id']}", {"role": "admin"}, owner)
        return group

    group_ids = in_parallel(port, list(range(groups)), make_group)
    accounts_seconds = time.time() - started
    requests = len(names) + groups * (2 + (accounts_per_group - 1) + (creators - 1))
    request_rate = requests / accounts_seconds
    log(f"{len(names)} accounts, {groups} groups: {requests} requests in {accounts_seconds:.1f} s ({request_rate:.0f}/s)")
    # Each join queues one group_member_joined (the owner hears it); each alarm one shared_alarm_created.
    joins = groups * (accounts_per_group - 1)
    joined = receiver.wait_drained(joins, "joins")
    arrivals = sorted(r["arrived"] for r in joined)
    drain_rate = DISPATCH_CEILING_PER_S
    if len(arrivals) >= 50 and arrivals[-1] > arrivals[0]:
        drain_rate = min(drain_rate, (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]))
    log(f"the joins' {len(joined)} webhook calls drained ({drain_rate:.0f}/s)")

    # 2. The target minute.
    estimate = alarms / request_rate * 1.5 + alarms / drain_rate * 1.5 + MARGIN_SECONDS
    target = math.ceil((time.time() + estimate) / 60) * 60
    due = datetime.datetime.fromtimestamp(target, datetime.timezone.utc)
    log(f"target minute {due:%H:%M} UTC ({target - time.time():.0f} s ahead; estimate {estimate:.0f} s)")

    # 3. Alarms.
    alarm_started = time.time()
    settings = {
        "schedule": {"type": "custom_days", "interval_days": 1,
                     "start_date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")},
        "times_of_day": [{"hour": due.hour, "minute": due.minute}], "timezone": "UTC", "pre_alarm_enabled": False,
    }
    jobs = [(i % groups, i // groups) for i in range(alarms)]  # (group, index in the group)

    def make_alarm(conn, job):
        g, i = job
        creator = accounts[g][i // 5]["token"]
        member = accounts[g][-1]["user"]["id"]
        alarm = call(conn, "POST", f"/v1/groups/{group_ids[g]}/alarms",
                     dict(settings, title=f"Bench {g}.{i}", assigned_to_uids=[member]), creator)
        return alarm["id"]

    alarm_ids = in_parallel(port, jobs, make_alarm)
    alarm_seconds = time.time() - alarm_started
    log(f"{alarms} alarms in {alarm_seconds:.1f} s ({alarms / alarm_seconds:.0f}/s)")
    before_burst = receiver.wait_drained(joins + alarms, "alarm creation")
    setup_seconds = time.time() - started
    log(f"set-up done in {setup_seconds:.0f} s ({len(before_burst)} webhook calls so far)")
    if time.time() > target - 2:
        raise SystemExit(f"the set-up ran past the target minute {due:%H:%M}: rerun (the estimate was {estimate:.0f} s)")
    if any(r["body"]["type"] == "alarm_fired" for r in before_burst):
        raise SystemExit("an alarm_fired arrived before the target minute")

    # 4. The burst.
    metrics_before = lag_buckets(scrape(metrics_url))
    expected = set(alarm_ids)
    # CPU of the server and the receiver (BENCH_CPU_PIDS="SERVER RECEIVER[,RECEIVER…]") over the burst only: the
    # fires were staged a minute ahead (NotificationScheduler.lookaheadMilliseconds), not counted here.
    cpu_pids = os.environ.get("BENCH_CPU_PIDS", "").split()
    time.sleep(max(0.0, target - 1 - time.time()))
    cpu_before = [cpu_seconds(pid) for pid in cpu_pids]
    # BENCH_PROFILE: a command (notifications.sh's PROFILE_DIR: `perf record … -p SERVER`) that samples the
    # burst; it is started here and stopped with SIGINT at the last arrival.
    profiler = subprocess.Popen(shlex.split(os.environ["BENCH_PROFILE"])) if os.environ.get("BENCH_PROFILE") else None
    # Polls only the receiver's counter while the burst arrives: /received would stall it.
    while receiver.count("alarm_fired") < len(expected) and time.time() <= target + BURST_TIMEOUT:
        time.sleep(0.2 if time.time() > target else max(0.2, min(5, target - time.time())))
    cpu_after = [cpu_seconds(pid) for pid in cpu_pids]
    if profiler:
        profiler.send_signal(signal.SIGINT)
        profiler.wait()
    time.sleep(2)  # the last round's settle records the histogram after the receiver answered
    metrics_after = lag_buckets(scrape(metrics_url))
    fired = [r for r in receiver.received() if r["body"]["type"] == "alarm_fired"]
    distinct = {r["body"]["data"]["alarm_id"] for r in fired} & expected
    lags = [r["arrived"] - target for r in fired]
    arrivals = sorted(r["arrived"] for r in fired)
    out = {
        "alarms": alarms, "groups": groups, "accounts": len(names), "setup_s": f"{setup_seconds:.1f}",
        "accounts_s": f"{accounts_seconds:.1f}", "alarm_creation_s": f"{alarm_seconds:.1f}",
        "target": f"{due:%H:%M}", "delivered": len(distinct), "alarm_fired_calls": len(fired),
        "bad_signatures": sum(1 for r in fired if not r["signature_ok"]),
        "wrong_recipients": sum(1 for r in fired if len(r["body"].get("recipients") or []) != 1),
    }
    for name, before, after in zip(("server", "receiver"), cpu_before, cpu_after):
        out[f"{name}_cpu_s"] = f"{after - before:.2f}"
        out[f"{name}_cpu_us_per_notification"] = f"{(after - before) / max(1, len(fired)) * 1e6:.0f}"
    if lags:
        out.update({
            "receiver_lag_p50_s": f"{percentile(lags, 0.5):.3f}", "receiver_lag_p99_s": f"{percentile(lags, 0.99):.3f}",
            "receiver_lag_min_s": f"{min(lags):.3f}", "receiver_lag_max_s": f"{max(lags):.3f}",
            "drain_s": f"{arrivals[-1] - arrivals[0]:.2f}",
            "throughput_per_s": f"{(len(arrivals) - 1) / (arrivals[-1] - arrivals[0]):.0f}" if len(arrivals) > 1 else "n/a",
        })
        # Dispatcher rounds as the receiver saw them: a gap of more than ROUND_GAP_SECONDS between
        # two calls starts a new round. Their sending span vs their period shows where time goes.
        rounds, first, previous = [], arrivals[0], arrivals[0]
        for t in arrivals[1:] + [math.inf]:
            if t - previous > ROUND_GAP_SECONDS:
                rounds.append((first, previous))
                first = t
            previous = t
        spans = [b - a for a, b in rounds]
        periods = [rounds[i + 1][0] - rounds[i][0] for i in range(len(rounds) - 1)]
        out["rounds"] = len(rounds)
        out["round_send_span_p50_s"] = f"{percentile(spans, 0.5):.3f}"
        out["round_period_p50_s"] = f"{percentile(periods, 0.5):.3f}" if periods else "n/a"
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        bound, count = histogram_quantile(metrics_before, metrics_after, q)
        out[f"histogram_lag_{name}_le_s"] = "n/a" if bound is None else ("+Inf" if bound == math.inf else f"{bound:g}")
        out["histogram_count"] = f"{count:g}"
    out["histogram_bounds_s"] = ",".join("+Inf" if b == math.inf else f"{b:g}" for b in sorted(metrics_after))
    for key, value in out.items():
        print(key, value)
    sys.exit(0 if len(distinct) == alarms else 1)


if __name__ == "__main__":
    main()
