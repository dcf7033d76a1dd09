#!/usr/bin/env bash
# Smoke test of a built chronir-server on an ephemeral port with a fresh data directory:
# health, readiness, register, login, me, logout; chronir-admin on the live database (create,
# set-tier, suspend → the user's token stops working, audit, db check, db backup); then SIGTERM must
# exit 0. Usage: .ci/smoke.sh PATH/TO/chronir-server [PATH/TO/chronir-admin]
set -euo pipefail
bin=$(realpath "$1")
admin=$(realpath "${2:-$(dirname "$1")/chronir-admin}")
work=$(mktemp -d)
trap 'kill -9 "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "SMOKE FAIL: $*" >&2; echo "--- server log:" >&2; cat "$work/log" >&2; exit 1; }

"$bin" --port 0 --data-dir "$work/data" --public-dir none --log-format json 2>"$work/log" &
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
echo "server pid $pid on $base"

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"  # api, json

api 200 GET /healthz >/dev/null
api 200 GET /readyz >/dev/null
reg=$(api 201 POST /v1/auth/register '{"email":" Smoke@Example.com ","password":"correct horse","display_name":"Smoke"}')
[ "$(echo "$reg" | json "['user']['email']")" = "smoke@example.com" ] || fail "email not normalised: $reg"
api 409 POST /v1/auth/register '{"email":"smoke@example.com","password":"correct horse","display_name":"Again"}' >/dev/null
api 401 POST /v1/auth/login '{"email":"smoke@example.com","password":"wrong password"}' >/dev/null
login=$(api 200 POST /v1/auth/login '{"email":"smoke@example.com","password":"correct horse"}')
token=$(echo "$login" | json "['token']")
me=$(api 200 GET /v1/me "" "$token")
[ "$(echo "$me" | json "['display_name']")" = "Smoke" ] || fail "me: $me"
api 401 GET /v1/me >/dev/null
api 204 POST /v1/auth/logout "" "$token" >/dev/null
api 401 GET /v1/me "" "$token" >/dev/null
api 404 GET /v1/nothing-here >/dev/null
api 405 DELETE /healthz >/dev/null

# chronir-admin against the live database.
A() { "$admin" "$@" --data-dir "$work/data"; }
password=$(A users create ops@example.com --name Ops | sed -n 's/^one-time password: //p')
[ -n "$password" ] || fail "admin users create printed no password"
A users set-tier ops@example.com premium --reason smoke >/dev/null
ops=$(api 200 POST /v1/auth/login "{\"email\":\"ops@example.com\",\"password\":\"$password\"}")
[ "$(echo "$ops" | json "['user']['tier']")" = "premium" ] || fail "tier set by admin not visible: $ops"
ops_token=$(echo "$ops" | json "['token']")
api 200 GET /v1/me "" "$ops_token" >/dev/null
A users suspend ops@example.com --reason smoke </dev/null >/dev/null 2>&1 && fail "suspend without --yes and no terminal must refuse"
A users suspend ops@example.com --reason smoke --yes >/dev/null
api 401 GET /v1/me "" "$ops_token" >/dev/null
api 401 POST /v1/auth/login "{\"email\":\"ops@example.com\",\"password\":\"$password\"}" >/dev/null
A audit --json | grep -q '"event":"user_suspended"' || fail "audit does not show the suspension"
A db check >/dev/null || fail "db check failed"
A db backup "$work/backup.sqlite" >/dev/null || fail "db backup failed"
"$admin" users show ops@example.com --json --db "$work/backup.sqlite" | grep -q '"status":"suspended"' || fail "backup lacks data"
A users show nobody@example.com >/dev/null 2>&1 && fail "unknown user must exit non-zero"

# Groups through the API, moderated with chronir-admin while the server runs.
echo "owner pass 1" | A users create owner@example.com --password-stdin --tier premium >/dev/null
owner=$(api 200 POST /v1/auth/login '{"email":"owner@example.com","password":"owner pass 1"}' | json "['token']")
group=$(api 201 POST /v1/groups '{"name":"Flat 4B"}' "$owner" | json "['group']['id']")
A groups list --json | grep -q "\"$group\"" || fail "groups list lacks the new group"
code=$(A invites rotate "$group" --json | json "['code']")
guest=$(api 201 POST /v1/auth/register '{"email":"guest@example.com","password":"guest pass 1","display_name":"Guest"}' | json "['token']")
api 200 POST /v1/join "{\"code\":\"$code\"}" "$guest" >/dev/null
[ "$(A members list "$group" --json | json ".__len__()")" = 2 ] || fail "members list after join"
A groups show "$group" | grep -q "invite code: live" || fail "groups show: code status"
A groups freeze "$group" --reason smoke >/dev/null
api 409 PATCH "/v1/groups/$group" '{"name":"Frozen?"}' "$owner" >/dev/null
api 200 GET "/v1/groups/$group" "" "$guest" >/dev/null
A groups unfreeze "$group" --reason smoke >/dev/null
api 200 PATCH "/v1/groups/$group" '{"name":"Flat 4C"}' "$owner" >/dev/null
A members remove "$group" guest@example.com --reason smoke --yes >/dev/null
api 404 GET "/v1/groups/$group" "" "$guest" >/dev/null
A invites rotate "$group" >/dev/null
other=$(api 201 POST /v1/auth/register '{"email":"other@example.com","password":"other pass 1","display_name":"Other"}' | json "['token']")
api 404 POST /v1/join "{\"code\":\"$code\"}" "$other" >/dev/null   # the rotated-out code is dead
A groups delete "$group" --reason smoke --yes >/dev/null
api 404 GET "/v1/groups/$group" "" "$owner" >/dev/null
A users delete other@example.com --reason smoke --yes >/dev/null
api 401 GET /v1/me "" "$other" >/dev/null
A users show other@example.com >/dev/null 2>&1 && fail "a deleted account is still found by email"
A stats --json | python3 -c 'import json,sys; s=json.load(sys.stdin); assert s["groups"] == 0 and s["users"] >= 4, s' \
    || fail "stats"

# The change log is a hash chain: intact now; an edit behind the server's back is caught.
A audit verify | grep -q '^ok: ' || fail "audit verify on an intact log"
python3 - "$work/data/chronir.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("DROP TRIGGER change_log_no_update")
db.execute("UPDATE change_log SET actor = 'user:mallory' WHERE seq = 3")
db.commit()
PY
A audit verify >"$work/verify.txt" 2>&1 && fail "audit verify missed a tampered row"
grep -q 'BROKEN at seq 3' "$work/verify.txt" || fail "audit verify: $(cat "$work/verify.txt")"

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[ "$status" = 0 ] || fail "SIGTERM: exit status $status, want 0"
grep -q '"msg":"stopped"' "$work/log" || fail "no 'stopped' log line after SIGTERM"
echo "smoke: all checks passed (server API, chronir-admin on the live database); SIGTERM exit 0"
