"""The notification pipeline end to end with the real chronir-server and the real clock
(Reliability/notifications.sh runs it; Reliability/README.md says what it shows).

Run with the fakes' venv interpreter (.build/python-venv): the fakes it starts need hypercorn and
cryptography; this driver itself uses the standard library only.

  notifications.py --server BIN --work DIR --ca CA.pem --cert SERVER.pem --key SERVER.key

1. Starts Tests/Fakes/webhook_receiver.py (the operator webhook) and Tests/Fakes/webpush_service.py
   (a Web Push service that decrypts what it receives), both TLS with the throwaway CA, then
   chronir-server on --port 0 (the port from its `listening` log line) with the webhook, Web Push,
   private endpoints allowed and the CA trusted for outbound TLS.
2. Over HTTP: A registers and creates a group, B joins by invite code and registers a Web Push
   device with a subscription the fake made; A creates a shared alarm assigned to B whose next
   occurrence is the next whole UTC minute (the one after when under MIN_LEAD_SECONDS remain).
3. Waits (≤ FIRE_WAIT_SECONDS after the fire instant) until the webhook got `alarm_fired` for it and
   B's endpoint got and decrypted `alarm_fired` with its title; then SETTLE_SECONDS more, and the
   webhook must hold exactly one. Lag = the fake's arrival time − the fire instant.
4. Scripts the webhook to answer 503 (Retry-After: 1), B completes the occurrence, the server gets
   SIGKILL as soon as the 201 is read, restarts on the same data directory (a new port); once the
   restarted server's first attempt at the `shared_completion` got its 503, the webhook answers 2xx
   again, and the notification must arrive (≤ REDELIVERY_WAIT_SECONDS: covers a 60-s lease the
   killed server may have held). Duplicates are allowed (at-least-once) and counted.

Every process it starts is killed on exit; DIR/pids holds the pids of those not reaped yet, so the
calling script's trap can kill them should this process itself die. Exits 1 with `FAIL: …` on any failure.
"""

import argparse
import datetime
import http.client
import json
import os
import re
import secrets
import signal
import ssl
import subprocess
import sys
import time
import traceback
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKES = os.path.join(ROOT, "Tests", "Fakes")

MIN_LEAD_SECONDS = 5          # less left in this minute → the alarm fires at the minute after
FIRE_WAIT_SECONDS = 30        # fire → both arrivals, at most (the TTL is 900 s; a miss is a bug)
ALARM_FIRED_TTL_SECONDS = 900
SETTLE_SECONDS = 3            # after the arrivals: time for a duplicate to show itself
REDELIVERY_WAIT_SECONDS = 75  # restart → delivery: a lease held by the killed server lapses in 60 s
START_TIMEOUT_SECONDS = 60
POLL_SECONDS = 0.05


class Failure(Exception):
    pass


def log(message):
    print(message, flush=True)


class Processes:
    """Children started by this driver, killed (SIGKILL) and reaped on exit."""

    def __init__(self, pid_file):
        self.children = []
        self.pid_file = pid_file

    def start(self, argv, **kwargs):
        child = subprocess.Popen(argv, **kwargs)
        self.children.append(child)
        self.record()
        return child

    def kill(self, child):
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
        child.wait()
        self.children.remove(child)
        self.record()

    def kill_all(self):
        for child in list(self.children):
            self.kill(child)

    def record(self):
        """The pid file holds exactly the children not reaped yet (a reaped pid may be reused)."""
        with open(self.pid_file + ".new", "w") as f:
            f.writelines(f"{child.pid}\n" for child in self.children)
        os.replace(self.pid_file + ".new", self.pid_file)


def read_ready(child, name):
    """The port of a fake's `READY <port>` line (its first line of stdout)."""
    line = child.stdout.readline().decode().strip()
    match = re.fullmatch(r"READY (\d+)", line)
    if not match:
        raise Failure(f"{name} printed {line!r}, not READY <port> (exit status {child.poll()})")
    return int(match.group(1))


class Fake:
    """An HTTPS fake from Tests/Fakes, trusted through the throwaway CA."""

    def __init__(self, processes, script, args, context, log_path):
        self.name = script
        with open(log_path, "ab") as log_file:  # hypercorn's own complaints (a killed peer's TLS)
            self.child = processes.start([sys.executable, "-u", os.path.join(FAKES, script)] + args,
                                         stdout=subprocess.PIPE, stderr=log_file)
        self.port = read_ready(self.child, script)
        self.origin = f"https://127.0.0.1:{self.port}"
        self.context = context

    def call(self, method, path, document=None, expected=200):
        data = json.dumps(document).encode() if document is not None else None
        request = urllib.request.Request(self.origin + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=self.context, timeout=10) as response:
            if response.status != expected:
                raise Failure(f"{self.name} {method} {path}: {response.status}")
            return json.loads(response.read() or b"null")

    def received(self):
        return self.call("GET", "/received")


class Server:
    """chronir-server on --port 0; the port comes from its `listening` log line."""

    def __init__(self, processes, binary, flags, log_path):
        self.processes, self.log_path = processes, log_path
        start = os.path.getsize(log_path) if os.path.exists(log_path) else 0
        with open(log_path, "ab") as log_file:
            self.child = processes.start([binary, "--host", "127.0.0.1", "--port", "0", "--public-dir", "none",
                                          "--log-format", "json"] + flags, stderr=log_file,
                                         stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        self.port, self.providers = None, None
        while self.port is None or self.providers is None:
            if self.child.poll() is not None:
                raise Failure(f"chronir-server exited during start-up ({self.child.returncode}):\n{self.tail()}")
            if time.monotonic() > deadline:
                raise Failure(f"chronir-server not listening after {START_TIMEOUT_SECONDS} s:\n{self.tail()}")
            time.sleep(POLL_SECONDS)
            with open(log_path, "rb") as f:
                f.seek(start)
                lines = f.read().decode(errors="replace").splitlines()
            for line in lines:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a line still being written
                if entry.get("msg") == "listening":
                    self.port = int(entry["address"].rsplit(":", 1)[1])
                elif entry.get("msg") == "notifications running":
                    self.providers = entry.get("providers", "").split(",")
        if not {"webpush", "webhook"} <= set(self.providers):
            raise Failure(f"notifications running with {self.providers}, expected webpush and webhook")

    def tail(self, lines=20):
        with open(self.log_path, "rb") as f:
            return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])

    def call(self, method, path, document=None, token=None, expected=200):
        """The decoded answer; Failure unless the status is `expected`."""
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        # A connection per request: the waits here outlast the server's keep-alive idle timeout.
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            body = json.dumps(document).encode() if document is not None else None
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            raw = response.read()
        finally:
            connection.close()
        if response.status != expected:
            raise Failure(f"{method} {path}: {response.status} (expected {expected}) {raw[:500]!r}")
        return json.loads(raw) if raw else None

    def kill(self):
        self.processes.kill(self.child)


def send_retries(log_path, key_prefix):
    """The reasons of the server's `notification send failed, will retry` lines for keys starting
    with `key_prefix` (any provider: the webhook's and the devices' deliveries share the key)."""
    reasons = []
    with open(log_path, "rb") as f:
        for line in f.read().decode(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if (entry.get("msg") == "notification send failed, will retry"
                    and entry.get("key", "").startswith(key_prefix)):
                reasons.append(entry.get("reason", ""))
    return reasons


def parse_time(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def wait_until(what, deadline, probe):
    """Polls `probe` (→ a truthy result or None) until it answers or the monotonic `deadline`."""
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            raise Failure(f"timed out waiting for {what}")
        time.sleep(POLL_SECONDS)


def ok(status):
    return status is not None and 200 <= status < 300


def run(args, processes):
    context = ssl.create_default_context(cafile=args.ca)
    # The server's webhook secret is the file's bytes; the receiver takes them as hex.
    secret = secrets.token_hex(32)
    secret_file = os.path.join(args.work, "webhook.secret")
    with open(secret_file, "w") as f:
        f.write(secret)
    os.chmod(secret_file, 0o600)
    webhook = Fake(processes, "webhook_receiver.py", [args.cert, args.key, secret.encode().hex()], context,
                   os.path.join(args.work, "webhook.log"))
    webpush = Fake(processes, "webpush_service.py", [args.cert, args.key], context,
                   os.path.join(args.work, "webpush.log"))
    log(f"fakes: webhook on {webhook.port}, Web Push service on {webpush.port}")

    data_dir = os.path.join(args.work, "data")
    log_path = os.path.join(args.work, "server.log")
    flags = ["--data-dir", data_dir, "--default-tier", "premium", "--password-hashing", "fast",
             "--notify-webhook-url", f"{webhook.origin}/hook", "--notify-webhook-secret-file", secret_file,
             "--push-allow-private-endpoints", "--outbound-ca-file", args.ca]
    server = Server(processes, args.server, flags, log_path)
    log(f"server on {server.port} (data {data_dir})")

    # --- the group, B's Web Push device, the alarm -------------------------------------------
    run_tag = secrets.token_hex(4)
    a = server.call("POST", "/v1/auth/register", {"email": f"a-{run_tag}@example.com", "password": "correct horse",
                                                   "display_name": "Alice"}, expected=201)
    b = server.call("POST", "/v1/auth/register", {"email": f"b-{run_tag}@example.com", "password": "correct horse",
                                                   "display_name": "Bob"}, expected=201)
    group = server.call("POST", "/v1/groups", {"name": "Notification e2e"}, a["token"], expected=201)["group"]
    code = server.call("POST", f"/v1/groups/{group['id']}/invite-code", None, a["token"], expected=201)["code"]
    server.call("POST", "/v1/join", {"code": code}, b["token"], expected=200)
    subscription = webpush.call("POST", "/subscriptions/bob-web", expected=201)
    server.call("PUT", "/v1/me/devices/bob-browser", {
        "platform": "web", "provider": "webpush",
        "subscription": {"endpoint": subscription["endpoint"],
                         "keys": {"p256dh": subscription["p256dh"], "auth": subscription["auth"]}}},
        b["token"], expected=201)

    now = time.time()
    fire = (int(now) // 60 + 1) * 60
    if fire - now < MIN_LEAD_SECONDS:
        fire += 60
    fire_utc = datetime.datetime.fromtimestamp(fire, datetime.timezone.utc)
    today = datetime.datetime.fromtimestamp(now, datetime.timezone.utc).date().isoformat()
    title = f"Take the pills {run_tag}"
    alarm = server.call("POST", f"/v1/groups/{group['id']}/alarms", {
        "title": title, "timezone": "UTC",
        "schedule": {"type": "custom_days", "interval_days": 1, "start_date": today},
        "times_of_day": [{"hour": fire_utc.hour, "minute": fire_utc.minute}],
        "assigned_to_uids": [b["user"]["id"]], "completion_rule": "any", "pre_alarm_enabled": False},
        a["token"], expected=201)
    if parse_time(alarm["next_fire_at"]) != fire:
        raise Failure(f"next_fire_at {alarm['next_fire_at']}, expected {fire_utc.isoformat()}")
    log(f"alarm {alarm['id']} fires at {alarm['next_fire_at']} ({fire - time.time():.1f} s from now), assigned to B")

    # --- the fire: webhook once, Web Push decrypted ----------------------------------------------
    def fired_hooks():
        return [e for e in webhook.received()
                if (e["body"] or {}).get("type") == "alarm_fired" and e["body"]["data"].get("alarm_id") == alarm["id"]]

    def fired_pushes():
        return [e for e in webpush.received()
                if e["id"] == "bob-web" and ok(e["status"])
                and (e.get("payload") or {}).get("data", {}).get("type") == "alarm_fired"
                and e["payload"]["data"].get("alarm_id") == alarm["id"]]

    deadline = time.monotonic() + (fire - time.time()) + FIRE_WAIT_SECONDS
    hooks = wait_until(f"alarm_fired at the webhook within {FIRE_WAIT_SECONDS} s of the fire",
                       deadline, lambda: [e for e in fired_hooks() if ok(e["status"])])
    pushes = wait_until(f"alarm_fired at B's Web Push endpoint within {FIRE_WAIT_SECONDS} s of the fire",
                        deadline, fired_pushes)
    time.sleep(SETTLE_SECONDS)
    hooks, pushes = fired_hooks(), fired_pushes()
    if len(hooks) != 1:
        raise Failure(f"the webhook got alarm_fired {len(hooks)} times, expected exactly once: {hooks}")
    hook = hooks[0]
    if not hook["signature_ok"]:
        raise Failure(f"the webhook's alarm_fired signature does not verify: {hook}")
    if hook["body"]["recipients"] != [b["user"]["id"]]:
        raise Failure(f"alarm_fired recipients {hook['body']['recipients']}, expected B only")
    push = pushes[0]
    if push["payload"]["notification"].get("title") != title:
        raise Failure(f"decrypted title {push['payload']['notification']!r}, expected {title!r}")
    if push["headers"].get("urgency") != "high":
        raise Failure(f"alarm_fired Urgency {push['headers'].get('urgency')!r}, expected high")
    hook_lag = hook["received_at"] - fire
    push_lag = push["received_at"] - fire
    push_ttl = int(push["headers"]["ttl"])
    for name, lag in (("webhook", hook_lag), ("Web Push", push_lag)):
        if not 0 <= lag < ALARM_FIRED_TTL_SECONDS:
            raise Failure(f"{name} alarm_fired lag {lag:.3f} s is outside [0, TTL {ALARM_FIRED_TTL_SECONDS} s)")
    fired_retries = send_retries(log_path, f"alarm_fired:{alarm['id']}:")
    log(f"alarm_fired: webhook once (signature ok) {hook_lag * 1000:.0f} ms after the fire; "
        f"B's Web Push decrypted {title!r} {push_lag * 1000:.0f} ms after (TTL header {push_ttl}), "
        f"{len(pushes)} push(es); sends the server retried: {len(fired_retries)} {fired_retries or ''}")

    # --- crash between COMMIT and send ----------------------------------------------------------
    webhook.call("POST", "/script", {"answers": [{"status": 503, "retry_after": "1"}] * 200, "replace": True},
                 expected=204)
    answer = server.call("POST", f"/v1/groups/{group['id']}/alarms/{alarm['id']}/completions",
                         {"status": "completed", "scheduled_at": alarm["next_fire_at"]}, b["token"], expected=201)
    server.kill()  # SIGKILL as soon as the 201 is read
    completion = answer["completion"]["id"]
    key = f"shared_completion:{completion}"
    log(f"B completed ({completion}); server SIGKILLed right after the 201")

    def completion_hooks():
        return [e for e in webhook.received() if (e["body"] or {}).get("type") == "shared_completion"
                and e["body"]["data"].get("completion_id") == completion]

    restarted_at = time.time()
    before_kill = [e for e in completion_hooks() if e["received_at"] < restarted_at]
    if any(ok(e["status"]) for e in before_kill):
        raise Failure("the webhook answered the completion 2xx before the kill: not a crash between commit and send")
    server = Server(processes, args.server, flags, log_path)
    log(f"restarted on {server.port}, same data directory")
    deadline = time.monotonic() + REDELIVERY_WAIT_SECONDS
    first = wait_until(f"the restarted server's attempt at {key}", deadline,
                       lambda: [e for e in completion_hooks() if e["received_at"] > restarted_at])[0]
    if ok(first["status"]):
        raise Failure(f"the restarted server's first attempt was answered {first['status']}, not the scripted 503")
    webhook.call("POST", "/script", {"answers": [], "replace": True}, expected=204)
    answered_at = time.time()
    delivered = wait_until(f"{key} answered 2xx at the webhook after the restart", deadline,
                           lambda: [e for e in completion_hooks() if ok(e["status"])])
    time.sleep(SETTLE_SECONDS)
    attempts = completion_hooks()
    delivered = [e for e in attempts if ok(e["status"])]
    if delivered[0]["body"]["recipients"] != [a["user"]["id"]] or not delivered[0]["signature_ok"]:
        raise Failure(f"shared_completion delivery wrong: {delivered[0]}")
    after_restart = [e for e in attempts if e["received_at"] > restarted_at]
    refused = [e for e in after_restart if not ok(e["status"])]
    first_ms = (first["received_at"] - restarted_at) * 1000
    delivered_ms = (delivered[0]["received_at"] - answered_at) * 1000
    log(f"shared_completion after the crash: {len(before_kill)} attempt(s) before the kill; the restarted "
        f"server's first attempt {first_ms:.0f} ms after the restart began, {len(refused)} answered 503; "
        f"delivered {delivered_ms:.0f} ms after the webhook answered 2xx again; "
        f"2xx deliveries {len(delivered)} (duplicates {len(delivered) - 1})")

    # The fire is not sent again by the restarted server (its outbox key is unique).
    hooks = fired_hooks()
    if len(hooks) != 1:
        raise Failure(f"after the restart the webhook holds alarm_fired {len(hooks)} times, expected 1")
    print(f"SUMMARY alarm_fired webhook_lag_ms={hook_lag * 1000:.0f} webpush_lag_ms={push_lag * 1000:.0f} "
          f"webhook_count=1 webpush_count={len(pushes)} retried={len(fired_retries)} ttl_s={ALARM_FIRED_TTL_SECONDS}; "
          f"shared_completion after SIGKILL: attempts_before_kill={len(before_kill)} "
          f"restart_to_first_attempt_ms={first_ms:.0f} answered_503={len(refused)} "
          f"reopened_to_delivery_ms={delivered_ms:.0f} delivered={len(delivered)} duplicates={len(delivered) - 1}",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args()
    processes = Processes(os.path.join(args.work, "pids"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still kill the children (finally)
    try:
        run(args, processes)
    except Failure as failure:
        print(f"FAIL: {failure}", file=sys.stderr, flush=True)
        return 1
    except Exception as error:  # noqa: BLE001 - a fake or the server gone, a malformed answer: say so
        traceback.print_exc()
        print(f"FAIL: unexpected {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        return 1
    finally:
        processes.kill_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
