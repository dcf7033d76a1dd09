#!/usr/bin/env bash
# Property-based API check: schemathesis (PyPI) generates requests from Public/openapi.yaml — valid
# and invalid ones — and sends them to the built chronir-server (ephemeral port, fresh data dir),
# authenticated as a premium user who owns a group with a member, an alarm, a completion and
# invitations; generated path ids (and the join code) are those real ones half of the time. Fails on
# any 5xx, on a response whose status, Content-Type or body the document does not describe, and on
# any error the server logs.
#
# First everything except the three operations that end the caller's session or the fixture, then
# those three one by one: DELETE /v1/groups/{id}, POST /v1/auth/logout (with a second session),
# DELETE /v1/me. GET /v1/realtime is left out: a generated valid handshake gets its 101 and turns
# the client's pooled connection into a WebSocket (.ci/proxy.sh and Tests/AppTests/RealtimeTests
# cover it). One worker: hypothesis' lambda introspection is not thread-safe on CPython 3.11 ("AST
# constructor recursion depth mismatch" with two). Bounded: --max-examples per operation
# (default 25) and a hard timeout per pass.
#
# Usage: .ci/schemathesis.sh [PATH/TO/chronir-server]   (env: SCHEMATHESIS_MAX_EXAMPLES,
#        SCHEMATHESIS_SEED, CHRONIR_CI_VENV — the venv, default .build/ci-venv, reused between runs)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-.build/debug/chronir-server}")
max_examples=${SCHEMATHESIS_MAX_EXAMPLES:-25}
seed=${SCHEMATHESIS_SEED:-$RANDOM$RANDOM}
venv=${CHRONIR_CI_VENV:-$PWD/.build/ci-venv}
schemathesis_version=4.32.5

if [ ! -x "$venv/bin/schemathesis" ] || ! "$venv/bin/schemathesis" --version | grep -q "$schemathesis_version"; then
    python3 -m venv --help >/dev/null 2>&1 && python3 -c 'import ensurepip' 2>/dev/null || {
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; }
    [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install -q "schemathesis==$schemathesis_version"
fi

work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fail() {
    echo "SCHEMATHESIS FAIL: $*" >&2
    echo "--- server log (warnings and worse):" >&2
    grep -E '"level":"(warning|error|critical)"' "$work/log" | tail -50 >&2 || true
    exit 1
}

# Write budgets off: one owner sends hundreds of generated writes in seconds (WriteBudgetRouteTests
# covers the 429s). Schemathesis registers many accounts from 127.0.0.1 within the hour: lift that limit.
CHRONIR_REGISTRATIONS_PER_IP_PER_HOUR=1000000 CHRONIR_REGISTRATIONS_PER_HOUR=1000000 \
"$bin" --port 0 --data-dir "$work/data" --public-dir Public --default-tier premium --password-hashing fast \
    --write-budget-per-minute 0 --write-bytes-per-hour 0 --log-format json 2>"$work/log" &
pid=$!
port=""
for _ in $(seq 1 100); do
    port=$(grep -o '"address":"127.0.0.1:[0-9]*"' "$work/log" 2>/dev/null | head -1 | grep -o '[0-9]*"$' | tr -d '"' || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "server exited during start-up"
    sleep 0.1
done
[ -n "$port" ] || fail "server did not report its port"
base="http://127.0.0.1:$port"
echo "chronir-server pid $pid on $base; schemathesis $schemathesis_version, seed $seed, max $max_examples examples"

# The fixture, over HTTP: owner (premium) with a group, a member, an alarm, a completion, an email
# invitation (to the owner's own address, so that declining it can succeed) and a link invitation;
# their ids and the invite code go into schemathesis' dictionaries. A second session of the owner
# is for the logout pass.
python3 - "$base" "$work/schemathesis.toml" "$work/logout-token" <<'PY' || fail "fixture"
import json, sys, urllib.request
base, config_path, logout_path = sys.argv[1:4]

def call(method, path, body=None, token=None, want=None):
    req = urllib.request.Request(base + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    if body is not None: req.add_header("Content-Type", "application/json")
    if token: req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req) as r:
        assert want is None or r.status == want, (method, path, r.status)
        data = r.read()
        return json.loads(data) if data else None

owner = call("POST", "/v1/auth/register",
             {"email": "owner@example.com", "password": "owner password", "display_name": "Owner"}, want=201)
token = owner["token"]
member = call("POST", "/v1/auth/register",
              {"email": "member@example.com", "password": "member password", "display_name": "Member"}, want=201)
group = call("POST", "/v1/groups", {"name": "Flat 4B"}, token, want=201)["group"]["id"]
code = call("POST", "/v1/groups/%s/invite-code" % group, None, token, want=201)["code"]
call("POST", "/v1/join", {"code": code}, member["token"], want=200)
alarm = call("POST", "/v1/groups/%s/alarms" % group, {
    "title": "HVAC filter", "timezone": "Europe/Berlin", "times_of_day": [{"hour": 9, "minute": 0}],
    # Daily: its occurrence is always within the 24-hour lead window, so the completion below is accepted
    # whatever the date (a monthly one on the 1st is 409 ANSWER_TOO_EARLY most of the month).
    "schedule": {"type": "custom_days", "interval_days": 1, "start_date": "2026-01-01"}}, token, want=201)["id"]
call("POST", "/v1/groups/%s/alarms/%s/completions" % (group, alarm), {"status": "completed"}, member["token"],
     want=201)
email_invite = call("POST", "/v1/groups/%s/invitations" % group, {"invitee_email": "owner@example.com"}, token,
                    want=201)["invitation"]["id"]
link = call("POST", "/v1/groups/%s/invitations" % group, {}, token, want=201)
second = call("POST", "/v1/auth/login", {"email": "owner@example.com", "password": "owner password"}, want=200)

def values(items): return "values = [" + ", ".join(json.dumps(v) for v in items) + "]"
dictionaries = {
    "groups": [group], "users": [owner["user"]["id"], member["user"]["id"]], "alarms": [alarm],
    "invitations": [email_invite, link["invitation"]["id"], link["token"]], "codes": [code],
}
bindings = {"path.id": "groups", "path.user_id": "users", "path.aid": "alarms", "path.ref": "invitations",
            "query.user_id": "users", "body.code": "codes"}
lines = ["# generated by .ci/schemathesis.sh", 'headers = { Authorization = "Bearer %s" }' % token]
for name, items in dictionaries.items():
    lines += ["[dictionaries.%s]" % name, values(items)]
lines.append("[parameters]")
for key, name in bindings.items():
    lines.append('"%s" = { dictionary = "%s", probability = 0.5 }' % (key, name))
open(config_path, "w").write("\n".join(lines) + "\n")
open(logout_path, "w").write(second["token"])
PY

checks=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance
final='^(DELETE /v1/me|POST /v1/auth/logout|DELETE /v1/groups/\{id\})$'
run() {  # run PASS-NAME [schemathesis options…]
    local name=$1; shift
    echo "--- pass: $name"
    (cd "$work" && timeout 900 "$venv/bin/schemathesis" --config-file "$work/schemathesis.toml" run \
        "$base/openapi.yaml" --checks "$checks" --max-examples "$max_examples" --seed "$seed" \
        --request-timeout 10 --workers 1 --generation-database none --no-color "$@") \
        || fail "schemathesis pass '$name' failed (seed $seed)"
}
start=$SECONDS
run "all but the session-ending operations" --exclude-name-regex "$final" --exclude-path /v1/realtime
run "DELETE /v1/groups/{id}" --include-name 'DELETE /v1/groups/{id}'
run "POST /v1/auth/logout (a second session)" --include-name 'POST /v1/auth/logout' \
    -H "Authorization: Bearer $(cat "$work/logout-token")"
run "DELETE /v1/me" --include-name 'DELETE /v1/me'
kill -0 "$pid" 2>/dev/null || fail "server died"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
[ "$status" = 0 ] || fail "server exit status $status after SIGTERM"
if grep -qE '"level":"(error|critical)"' "$work/log"; then fail "the server logged errors"; fi
echo "schemathesis: no 5xx, every response matched Public/openapi.yaml ($((SECONDS - start)) s)"
