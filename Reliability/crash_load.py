#!/usr/bin/env python3
"""Write load for Reliability/crash.sh, and the checker that runs after every crash.

  crash_load.py load   BASE_URL ACK_FILE [--workers N] [--tag T]
      Registers users, creates groups (owner = creator), invite codes, joins, shared alarms and
      completions through the HTTP API until the server goes away. After each 2xx response has been
      read completely, appends what it acknowledged to ACK_FILE (one JSON object per line, flushed) — so ACK_FILE holds exactly the writes the client saw acknowledged.

  crash_load.py verify DB_FILE ACK_FILE
      Opens the database (after the crash; SQLite replays the WAL) and checks:
        * every acknowledged write is present (users, groups + owner, memberships, alarms, completions);
        * no partial write: every group has exactly one active owner, every user / group / member /
          alarm / completion row has its change_log row, and every change_log 'added' document of
          those kinds has its row;
        * the change log is gap-free: seq runs 1..N without holes, each batch starts at its first seq
          and its rows are consecutive.
      Prints one summary line; exits 1 on the first kind of violation (listing up to 10 examples).

  crash_load.py verify --postgres PSQL DATABASE_URL ACK_FILE
      The same checks on PostgreSQL: the tables they read are dumped with `PSQL --csv` into an
      in-memory SQLite database, so one checker serves both engines.
"""
import argparse
import csv
import http.client
import json
import random
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse

# Five times a day with the longest lead window (a week): 35 occurrences can be answered ahead, more
# than the 3–12 completions a worker posts per alarm (answering earlier than the lead window is 409
# ANSWER_TOO_EARLY, docs/design.md#occurrence-states).
SCHEDULE = {"schedule": {"type": "custom_days", "interval_days": 1, "start_date": "2020-01-01"},
            "times_of_day": [{"hour": h, "minute": 0} for h in (0, 5, 10, 15, 20)], "timezone": "UTC",
            "answer_lead_minutes": 10080}


class ServerGone(Exception):
    pass


class Client:
    def __init__(self, base):
        u = urllib.parse.urlparse(base)
        self.host, self.port = u.hostname, u.port
        self.conn = None

    def call(self, method, path, body=None, token=None):
        headers = {"Host": f"{self.host}:{self.port}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
            self.conn.request(method, path, body=data, headers=headers)
            resp = self.conn.getresponse()
            raw = resp.read()  # the whole body: only then is the write acknowledged
        except (OSError, http.client.HTTPException) as e:
            self.conn = None
            raise ServerGone(str(e))
        if resp.getheader("Connection", "").lower() == "close":
            self.conn.close()
            self.conn = None
        return resp.status, (json.loads(raw) if raw else None)


class Acks:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.lock = threading.Lock()
        self.count = 0

    def add(self, **record):
        with self.lock:
            self.f.write(json.dumps(record) + "\n")
            self.f.flush()  # the server is killed, not this process: flushing is enough
            self.count += 1


def worker(base, acks, tag, index, stats):
    c = Client(base)
    rng = random.Random(f"{tag}-{index}")
    n = 0

    def expect(status, method, path, body=None, token=None):
        got, doc = c.call(method, path, body, token)
        if got != status:
            stats["unexpected"] += 1
            raise RuntimeError(f"{method} {path}: {got} {doc}")
        return doc

    def register():
        nonlocal n
        n += 1
        email = f"{tag}-{index}-{n}@example.com"
        doc = expect(201, "POST", "/v1/auth/register",
                     {"email": email, "password": "correct horse", "display_name": f"U{index}-{n}"})
        acks.add(t="user", id=doc["user"]["id"], email=email)
        return doc["token"], doc["user"]["id"]

    try:
        while True:
            owner_token, owner_id = register()
            doc = expect(201, "POST", "/v1/groups", {"name": f"G {tag} {index} {n}"}, owner_token)
            gid = doc["group"]["id"]
            acks.add(t="group", id=gid, owner=owner_id)
            code = expect(201, "POST", f"/v1/groups/{gid}/invite-code", None, owner_token)["code"]
            member_token, member_id = register()
            expect(200, "POST", "/v1/join", {"code": code}, member_token)
            acks.add(t="member", group=gid, user=member_id)
            alarm = expect(201, "POST", f"/v1/groups/{gid}/alarms",
                           dict(SCHEDULE, title="Rent", completion_rule="any"), owner_token)
            acks.add(t="alarm", id=alarm["id"], group=gid)
            for _ in range(rng.randint(3, 12)):
                token, uid = rng.choice([(owner_token, owner_id), (member_token, member_id)])
                scheduled = alarm["occurrence"]["scheduled_at"]
                doc = expect(201, "POST", f"/v1/groups/{gid}/alarms/{alarm['id']}/completions",
                             {"status": "completed", "scheduled_at": scheduled}, token)
                acks.add(t="completion", id=doc["completion"]["id"], alarm=alarm["id"], group=gid, user=uid)
                alarm = doc["alarm"]
    except ServerGone:
        return
    except RuntimeError as e:
        print(f"worker {index}: {e}", file=sys.stderr)


def load(args):
    acks = Acks(args.ack)
    stats = {"unexpected": 0}
    threads = [threading.Thread(target=worker, args=(args.base, acks, args.tag, i, stats), daemon=True)
               for i in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"load {args.tag}: {acks.count} writes acknowledged, {stats['unexpected']} unexpected answers")
    sys.exit(1 if stats["unexpected"] else 0)


# What verify reads: table -> columns (the integer ones convert from psql's text).
CHECKED_COLUMNS = {
    "users": ["id", "email"],
    "groups": ["id", "deleted_ms"],
    "group_members": ["group_id", "user_id", "role", "status"],
    "shared_alarms": ["id", "group_id"],
    "shared_completions": ["id", "alarm_id", "user_id"],
    "change_log": ["kind", "entity_id", "op", "seq", "batch"],
}
INTEGER_COLUMNS = {"deleted_ms", "seq", "batch"}


def postgres_copy(psql, url):
    """The tables verify reads, from PostgreSQL into an in-memory SQLite database."""
    db = sqlite3.connect(":memory:")
    for table, columns in CHECKED_COLUMNS.items():
        db.execute(f"CREATE TABLE {table} ({', '.join(columns)})")
        out = subprocess.run([psql, url, "--csv", "-v", "ON_ERROR_STOP=1", "-c",
                              f"SELECT {', '.join(columns)} FROM {table}"],
                             check=True, capture_output=True, text=True).stdout
        rows = list(csv.reader(out.splitlines()))[1:]  # psql --csv: a header, then rows; NULL is empty

        def value(column, text):
            if text == "":
                return None
            return int(text) if column in INTEGER_COLUMNS else text
        db.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})",
                       [[value(c, v) for c, v in zip(columns, row)] for row in rows])
    return db


def verify(args):
    if args.postgres:
        db = postgres_copy(args.postgres, args.db)
    else:
        db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    acked = [json.loads(line) for line in open(args.ack) if line.strip()]
    problems = {}

    def bad(kind, what):
        problems.setdefault(kind, []).append(what)

    def one(sql, *params):
        return db.execute(sql, params).fetchone()

    for a in acked:
        t = a["t"]
        if t == "user":
            row = one("SELECT email FROM users WHERE id = ?", a["id"])
            if row is None or row[0] != a["email"]:
                bad("acknowledged user missing", a)
        elif t == "group":
            if one("SELECT 1 FROM groups WHERE id = ?", a["id"]) is None:
                bad("acknowledged group missing", a)
            elif one("SELECT 1 FROM group_members WHERE group_id = ? AND user_id = ? AND role = 'owner' "
                     "AND status = 'active'", a["id"], a["owner"]) is None:
                bad("acknowledged group without its owner", a)
        elif t == "member":
            if one("SELECT 1 FROM group_members WHERE group_id = ? AND user_id = ? AND status = 'active'",
                   a["group"], a["user"]) is None:
                bad("acknowledged join missing", a)
        elif t == "alarm":
            if one("SELECT 1 FROM shared_alarms WHERE id = ? AND group_id = ?", a["id"], a["group"]) is None:
                bad("acknowledged alarm missing", a)
        elif t == "completion":
            if one("SELECT 1 FROM shared_completions WHERE id = ? AND alarm_id = ? AND user_id = ?",
                   a["id"], a["alarm"], a["user"]) is None:
                bad("acknowledged completion missing", a)

    # Partial writes: every row has its change-log row and the other way round.
    for gid, owners in db.execute(
            "SELECT g.id, (SELECT count(*) FROM group_members m WHERE m.group_id = g.id AND m.role = 'owner' "
            "AND m.status = 'active') FROM groups g WHERE g.deleted_ms IS NULL"):
        if owners != 1:
            bad("group without exactly one active owner", gid)
    logged = {}  # kind -> entity ids with any change_log row; added[kind] -> ids with an 'added' row
    added = {}
    for kind, eid, op in db.execute("SELECT kind, entity_id, op FROM change_log"):
        logged.setdefault(kind, set()).add(eid)
        if op == "added":
            added.setdefault(kind, set()).add(eid)
    pairs = [("users", "user"), ("groups", "group"), ("shared_alarms", "shared_alarm"),
             ("shared_completions", "shared_completion")]
    for table, kind in pairs:
        rows = {eid for (eid,) in db.execute(f"SELECT id FROM {table}")}
        for eid in rows - logged.get(kind, set()):
            bad(f"{table} row without change_log row", eid)
        for eid in added.get(kind, set()) - rows:
            bad(f"change_log 'added' {kind} without its {table} row", eid)
    for gid, uid in db.execute("SELECT group_id, user_id FROM group_members"):
        if f"{gid}:{uid}" not in logged.get("member", set()):
            bad("member row without change_log row", (gid, uid))

    # Gap-free change log.
    count, lo, hi = one("SELECT count(*), min(seq), max(seq) FROM change_log")
    if count and (lo != 1 or hi != count):
        bad("change_log seq has gaps", f"count={count} min={lo} max={hi}")
    for batch, first, last, rows in db.execute(
            "SELECT batch, min(seq), max(seq), count(*) FROM change_log GROUP BY batch"):
        if batch != first or last - first + 1 != rows:
            bad("change_log batch not contiguous", batch)

    kinds = {}
    for a in acked:
        kinds[a["t"]] = kinds.get(a["t"], 0) + 1
    summary = " ".join(f"{k}={v}" for k, v in sorted(kinds.items()))
    if problems:
        for kind, items in problems.items():
            print(f"VIOLATION {kind}: {len(items)}: {items[:10]}")
        sys.exit(1)
    print(f"verify ok: {len(acked)} acknowledged writes present ({summary}); change_log seq 1..{hi or 0} "
          f"gap-free; no partial writes")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("load")
    lp.add_argument("base")
    lp.add_argument("ack")
    lp.add_argument("--workers", type=int, default=4)
    lp.add_argument("--tag", default=str(int(time.time())))
    vp = sub.add_parser("verify")
    vp.add_argument("--postgres", metavar="PSQL", help="db is a PostgreSQL URL, read with this psql")
    vp.add_argument("db")
    vp.add_argument("ack")
    args = p.parse_args()
    load(args) if args.cmd == "load" else verify(args)


if __name__ == "__main__":
    main()
