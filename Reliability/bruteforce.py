#!/usr/bin/env python3
"""Online guessing against a running chronir-server (Reliability/bruteforce.sh starts one).

  bruteforce.py BASE_URL [--ips N]

Scenarios (each with fresh accounts and fresh source addresses, so budgets don't mix):
  codes: one user from one IP; many users from one IP; many users from N IPs (127.0.0.x source
         addresses, 3 users each) — random well-formed invite codes via POST /v1/join.
  passwords: one email from one IP; one email from N IPs; many emails from one IP — POST /v1/auth/login.
Every scenario sends attempts until each (user, IP) pair is refused with 429 (one also sends 50 wrong
passwords at once, to see whether the check and the record of a failure are atomic); "through" counts the
attempts the server evaluated (404 / 401) — with 1-hour (codes) and 15-minute (logins) windows and a
run of a few seconds, that is the budget per window. Prints one line per scenario and the expected
time to guess one code, (31^6 / 2) / (code attempts per hour), for 1 and N addresses.
"""
import argparse
import http.client
import json
import random
import secrets
import sys
import urllib.parse

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_SPACE = len(ALPHABET) ** 6
HOURS_PER_YEAR = 24 * 365.25


class Http:
    def __init__(self, base, source_ip):
        u = urllib.parse.urlparse(base)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10, source_address=(source_ip, 0))

    def post(self, path, body, token=None):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.conn.request("POST", path, body=json.dumps(body), headers=headers)
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else {})


run_id = secrets.token_hex(3)
counter = 0


def register(base, ip="127.0.0.1"):
    global counter
    counter += 1
    email = f"bf-{run_id}-{counter}@example.com"
    status, doc = Http(base, ip).post("/v1/auth/register",
                                      {"email": email, "password": "correct horse", "display_name": "Eve"})
    assert status == 201, (status, doc)
    return email, doc["token"]


def random_code(rng):
    return "".join(rng.choice(ALPHABET) for _ in range(6))


def guess_codes(base, pairs, rng, cap=200):
    """pairs: [(ip, token)]. Each pair guesses until 429. Returns (through, refused)."""
    through = refused = 0
    for ip, token in pairs:
        h = Http(base, ip)
        for _ in range(cap):
            status, doc = h.post("/v1/join", {"code": random_code(rng)}, token)
            if status == 429:
                refused += 1
                break
            if status == 200:
                sys.exit(f"guessed a real code from {ip}: {doc}")
            assert status == 404, (status, doc)
            through += 1
    return through, refused


def guess_passwords(base, attempts, cap=200):
    """attempts: [(ip, email)]. Each pair tries wrong passwords until 429. Returns through."""
    through = 0
    for ip, email in attempts:
        h = Http(base, ip)
        for _ in range(cap):
            status, doc = h.post("/v1/auth/login", {"email": email, "password": secrets.token_hex(8)})
            if status == 429:
                break
            assert status == 401, (status, doc)
            through += 1
    return through


def guess_passwords_concurrently(base, ip, email, n):
    """n wrong passwords for one email from one IP, all in flight at once. Returns through."""
    import threading
    results = []

    def one():
        try:
            results.append(Http(base, ip).post("/v1/auth/login", {"email": email, "password": secrets.token_hex(8)})[0])
        except OSError:
            results.append(0)
    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results.count(401)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("base")
    p.add_argument("--ips", type=int, default=20, help="source addresses 127.0.0.x for the many-IP scenarios")
    args = p.parse_args()
    rng = random.Random()
    base = args.base
    ips = [f"127.0.{i // 250 + 1}.{i % 250 + 2}" for i in range(args.ips + 5)]
    solo_ip, multi_user_ip, pw_ip, pw_many_ip = ips[:4]
    spread = ips[4:-1]

    results = {}
    _, token = register(base)
    results["codes: 1 user, 1 IP"] = guess_codes(base, [(solo_ip, token)], rng)[0]
    users = [register(base)[1] for _ in range(10)]
    results["codes: 10 users, 1 IP"] = guess_codes(base, [(multi_user_ip, t) for t in users], rng)[0]
    pairs = [(ip, register(base)[1]) for ip in spread for _ in range(3)]
    results[f"codes: {len(pairs)} users, {len(spread)} IPs"] = guess_codes(base, pairs, rng)[0]

    email, _ = register(base)
    results["passwords: 1 email, 1 IP"] = guess_passwords(base, [(pw_ip, email)])
    email, _ = register(base)
    results[f"passwords: 1 email, {len(spread)} IPs"] = guess_passwords(base, [(ip, email) for ip in spread])
    emails = [register(base)[0] for _ in range(5)]
    results["passwords: 5 emails, 1 IP"] = guess_passwords(base, [(pw_many_ip, e) for e in emails])
    email, _ = register(base)
    results["passwords: 1 email, 1 IP, 50 parallel"] = guess_passwords_concurrently(base, ips[-1], email, 50)

    for name, through in results.items():
        window = "hour" if name.startswith("codes") else "15 min"
        print(f"{name:<32} {through:>5} attempts evaluated per {window} window (then 429)")

    per_ip = results["codes: 10 users, 1 IP"]
    spread_rate = results[f"codes: {len(pairs)} users, {len(spread)} IPs"]
    for label, rate in [("1 IP", per_ip), (f"{len(spread)} IPs", spread_rate), ("254 IPs (a /24)", per_ip * 254)]:
        years = CODE_SPACE / 2 / rate / HOURS_PER_YEAR
        print(f"expected time to guess one code from {label}: {CODE_SPACE:,}/2 / {rate}/h = {years:,.1f} years")
    needed = CODE_SPACE / 2 / HOURS_PER_YEAR / per_ip
    print(f"addresses needed to get under one year for one code: {needed:,.0f}")


if __name__ == "__main__":
    main()
