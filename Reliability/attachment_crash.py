"""Attachment crash checks (Reliability/attachment-crash.sh; docs/attachments.md#storage).

Phases, each run against a server the shell script started (and restarts in between):
  setup BASE DATA            register, group, shared alarm; one committed upload (state.json)
  mid-upload BASE DATA PID   half a 5 MB body sent, its .tmp-* file seen on disk → SIGKILL
  before-row BASE DATA PID   the database's write lock held (BEGIN IMMEDIATE from here) while a whole
                             upload is sent: its content file appears, its row insert waits → SIGKILL
  age DATA                   every file under attachments/ 8 days old (past the sweep's 7-day grace)
  verify BASE DATA           after a restart with a short sweep period: every row's files present and
                             whole (SHA-256 = name), no .tmp-*, no file without a row, no row for the
                             killed uploads; the committed upload downloads byte-equal
"""
import hashlib, http.client, json, os, signal, socket, sqlite3, sys, threading, time

from sample_pdf import pdf

phase = sys.argv[1]


def fail(message):
    print(f"ATTACHMENT CRASH FAIL ({phase}): {message}", file=sys.stderr)
    sys.exit(1)


def call(base, method, path, body=None, token=None, content_type="application/json"):
    host, port = base.split("//")[1].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    headers = {"Content-Type": content_type} if body is not None else {}
    if token:
        headers["Authorization"] = "Bearer " + token
    if isinstance(body, str):
        body = body.encode()
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def files(data):
    """Every file under attachments/: (path, name)."""
    root = os.path.join(data, "attachments")
    found = []
    for directory, _, names in os.walk(root):
        found += [(os.path.join(directory, n), n) for n in names]
    return found


def wait_for(condition, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.02)
    fail(f"timed out waiting for {what}")


def state_path(data):
    return os.path.join(data, "..", "state.json")


def load_state(data):
    return json.load(open(state_path(data)))


def upload_path(state):
    return f"/v1/groups/{state['group']}/alarms/{state['alarm']}/attachments"


if phase == "setup":
    base, data = sys.argv[2], sys.argv[3]
    s, d = call(base, "POST", "/v1/auth/register",
                json.dumps({"email": "crash@example.com", "password": "correct horse", "display_name": "Ana"}))
    if s != 201:
        fail(f"register: {s} {d[:200]}")
    token = json.loads(d)["token"]
    s, d = call(base, "POST", "/v1/groups", json.dumps({"name": "Crash"}), token)
    group = json.loads(d)["group"]["id"]
    alarm_body = json.dumps({"title": "Filter", "schedule": {"type": "custom_days", "interval_days": 1,
                             "start_date": "2026-02-01"}, "times_of_day": [{"hour": 10, "minute": 0}],
                             "timezone": "UTC", "completion_rule": "any", "assigned_to_uids": []})
    s, d = call(base, "POST", f"/v1/groups/{group}/alarms", alarm_body, token)
    if s != 201:
        fail(f"alarm: {s} {d[:200]}")
    state = {"token": token, "group": group, "alarm": json.loads(d)["id"]}
    committed = pdf(2_000_000, "committed-")
    s, d = call(base, "POST", upload_path(state), committed, token, "application/pdf")
    if s != 201:
        fail(f"committed upload: {s} {d[:200]}")
    state["committed"] = json.loads(d)["id"]
    state["committed_sha"] = hashlib.sha256(committed).hexdigest()
    json.dump(state, open(state_path(data), "w"))
    print(f"setup: committed upload {state['committed']}")

elif phase == "mid-upload":
    base, data, pid = sys.argv[2], sys.argv[3], int(sys.argv[4])
    state = load_state(data)
    body = pdf(5_000_000, "killed-mid-body-")
    host, port = base.split("//")[1].split(":")
    sock = socket.create_connection((host, int(port)))
    head = (f"POST {upload_path(state)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {state['token']}\r\n"
            f"Content-Type: application/pdf\r\nContent-Length: {len(body)}\r\n\r\n")
    sock.sendall(head.encode() + body[: len(body) // 2])
    wait_for(lambda: any(n.startswith(".tmp-") for _, n in files(data)), 20, "the upload's .tmp file")
    os.kill(pid, signal.SIGKILL)
    sock.close()
    state["mid_sha"] = hashlib.sha256(body).hexdigest()
    json.dump(state, open(state_path(data), "w"))
    print(f"mid-upload: SIGKILL with {sum(1 for _, n in files(data) if n.startswith('.tmp-'))} .tmp file(s) on disk")

elif phase == "before-row":
    base, data, pid = sys.argv[2], sys.argv[3], int(sys.argv[4])
    state = load_state(data)
    body = pdf(3_000_000, "killed-before-its-row-")
    sha = hashlib.sha256(body).hexdigest()
    lock = sqlite3.connect(os.path.join(data, "chronir.sqlite"), timeout=30, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # the server's row insert waits for this (busy_timeout 5 s)
    reply = {}
    threading.Thread(target=lambda: reply.update(status=call(base, "POST", upload_path(state), body,
                                                             state["token"], "application/pdf")[0]),
                     daemon=True).start()
    before = {p: os.stat(p).st_mtime_ns for p, n in files(data) if not n.startswith(".tmp-")}

    def thumbnail_stored():
        # A new file besides the content, or an existing one touched (an identical thumbnail is shared).
        now = {p: os.stat(p).st_mtime_ns for p, n in files(data) if not n.startswith(".tmp-") and n != sha}
        return any(p not in before or before[p] != t for p, t in now.items())
    # Both the content file and its thumbnail stored: everything but the row is done.
    wait_for(lambda: os.path.exists(os.path.join(data, "attachments", sha[:2], sha[2:4], sha)) and thumbnail_stored(),
             20, "the content file and thumbnail stored before the row")
    os.kill(pid, signal.SIGKILL)
    lock.execute("ROLLBACK")
    lock.close()
    if reply:
        fail(f"the upload was answered ({reply}) although its row could not be written")
    state["before_row_sha"] = sha
    json.dump(state, open(state_path(data), "w"))
    print("before-row: SIGKILL with the content file and thumbnail stored and the row insert waiting")

elif phase == "age":
    data = sys.argv[2]
    old = time.time() - 8 * 24 * 3600
    for path, _ in files(data):
        os.utime(path, (old, old))
    print(f"age: {len(files(data))} file(s) set 8 days old")

elif phase == "verify":
    base, data = sys.argv[2], sys.argv[3]
    state = load_state(data)
    db = sqlite3.connect(f"file:{os.path.join(data, 'chronir.sqlite')}?mode=ro", uri=True)
    rows = db.execute("SELECT id, sha256, thumbnail_sha256 FROM attachments").fetchall()
    named = {sha for _, sha, _ in rows} | {thumb for _, _, thumb in rows}

    def settled():
        names = [n for _, n in files(data)]
        return not any(n.startswith(".tmp-") for n in names) and set(names) == named
    deadline = time.time() + 30
    while time.time() < deadline and not settled():
        time.sleep(0.2)
    on_disk = files(data)
    leftovers = [n for _, n in on_disk if n.startswith(".tmp-")]
    if leftovers:
        fail(f"temporary files left after the sweep: {leftovers}")
    unnamed = sorted({n for _, n in on_disk} - named)
    if unnamed:
        fail(f"files no row names after the sweep: {unnamed}")
    for path, name in on_disk:
        digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
        if digest != name:
            fail(f"{path} is not whole: its SHA-256 is {digest}")
    missing = sorted(named - {n for _, n in on_disk})
    if missing:
        fail(f"rows whose files are missing: {missing}")
    shas = {sha for _, sha, _ in rows}
    for key in ("mid_sha", "before_row_sha"):
        if state.get(key) in shas:
            fail(f"a row exists for the killed upload ({key})")
    if state["committed_sha"] not in shas or len(rows) != 1:
        fail(f"expected exactly the committed upload's row, found {rows}")
    s, d = call(base, "GET", f"{upload_path(state)}/{state['committed']}", None, state["token"])
    if s != 200 or hashlib.sha256(d).hexdigest() != state["committed_sha"]:
        fail(f"the committed upload does not download whole: {s}")
    print(f"verify: 1 row, its 2 files whole; no orphan row, no half file, no .tmp left ({len(on_disk)} files)")
else:
    fail("unknown phase")
