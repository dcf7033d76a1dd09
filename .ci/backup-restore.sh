#!/usr/bin/env bash
# The documented backup and restore (docs/operations.md#backup-and-restore), performed: deploy/backup.sh while
# the server runs and writes; a change after the backup; stop; restore into a fresh data directory
# exactly as docs/operations.md says; `chronir-admin db check` and `audit verify` on it; start the server on
# it and check the data over HTTP — the user logs in, the group and its alarm are there, the invite
# code made before the backup still works (server.secret came along), the post-backup group is not; a photo
# attached before the backup downloads byte-equal (its file came along under attachments/), one attached
# after it is not listed.
# Usage: .ci/backup-restore.sh [PATH/TO/chronir-server [PATH/TO/chronir-admin]]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bin=$(realpath "${1:-.build/debug/chronir-server}")
admin=$(realpath "${2:-$(dirname "$bin")/chronir-admin}")
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "BACKUP-RESTORE FAIL: $*" >&2; echo "--- server log:" >&2; tail -30 "$work/log" >&2 || true; exit 1; }

start() {  # start DATA-DIR: runs the server, sets pid and base
    : >"$work/log"
    "$bin" --port 0 --data-dir "$1" --public-dir none --default-tier premium --password-hashing fast \
        --log-format json 2>"$work/log" &
    pid=$!
    local port=""
    for _ in $(seq 1 100); do
        port=$(grep -o '"address":"127.0.0.1:[0-9]*"' "$work/log" 2>/dev/null | head -1 | grep -o '[0-9]*"$' | tr -d '"' || true)
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || fail "server exited during start-up"
        sleep 0.1
    done
    [ -n "$port" ] || fail "server did not report its port"
    base="http://127.0.0.1:$port"
}
stop() {
    kill -TERM "$pid"
    local status=0
    wait "$pid" || status=$?
    pid=""
    [ "$status" = 0 ] || fail "server exit status $status after SIGTERM"
}
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"  # api, json

# 1. A live server with data.
start "$work/data"
owner=$(api 201 POST /v1/auth/register '{"email":"owner@example.com","password":"owner password","display_name":"Owner"}' | json "['token']")
group=$(api 201 POST /v1/groups '{"name":"Flat 4B"}' "$owner" | json "['group']['id']")
alarm=$(api 201 POST "/v1/groups/$group/alarms" '{"title":"Rent","timezone":"UTC","times_of_day":[{"hour":9,"minute":0}],"schedule":{"type":"monthly_date","days_of_month":[1],"start_date":"2026-01-01"}}' "$owner" | json "['id']")
code=$(api 201 POST "/v1/groups/$group/invite-code" "" "$owner" | json "['code']")
# png W H — a valid RGB PNG (zlib, no imaging library needed); the server decodes and re-encodes it.
png() {
    python3 -c 'import struct,sys,zlib
w,h=int(sys.argv[1]),int(sys.argv[2])
def chunk(t,d): return struct.pack(">I",len(d))+t+d+struct.pack(">I",zlib.crc32(t+d)&0xffffffff)
raw=b"".join(b"\0"+bytes((x*7+y*3)%256 for x in range(w) for _ in range(3)) for y in range(h))
sys.stdout.buffer.write(b"\x89PNG\r\n\x1a\n"+chunk(b"IHDR",struct.pack(">IIBBBBB",w,h,8,2,0,0,0))+chunk(b"IDAT",zlib.compress(raw))+chunk(b"IEND",b""))' "$1" "$2"
}
upload() {  # upload FILE: attaches FILE to the alarm, prints the attachment document
    local got
    got=$(curl -s -o "$work/body" -w '%{http_code}' -X POST "$base/v1/groups/$group/alarms/$alarm/attachments" \
        -H 'Content-Type: image/png' -H "Authorization: Bearer $owner" --data-binary "@$1") || fail "upload: curl failed"
    [ "$got" = 201 ] || fail "upload: status $got: $(cat "$work/body")"
    cat "$work/body"
}
png 64 48 >"$work/photo.png"
photo=$(upload "$work/photo.png")
photo_id=$(echo "$photo" | json "['id']")
photo_sha=$(echo "$photo" | json "['sha256']")

# 2. Backup while the server runs — and while it writes (a rename loop in the background).
( for i in $(seq 1 40); do
      curl -s -o /dev/null -X PATCH "$base/v1/groups/$group" -H 'Content-Type: application/json' \
          -H "Authorization: Bearer $owner" --data "{\"name\":\"Flat 4B ($i)\"}"
  done ) &
writer=$!
CHRONIR_DATA_DIR="$work/data" CHRONIR_ADMIN="$admin" deploy/backup.sh "$work/backups" >"$work/backup.txt" ||
    fail "deploy/backup.sh: $(cat "$work/backup.txt")"
wait "$writer"
backup=$(sed -n 's/^backup: //p' "$work/backup.txt" | head -1)
[ -f "$backup/chronir.sqlite" ] && [ -f "$backup/server.secret" ] || fail "backup incomplete: $(ls -la "$backup")"
[ -f "$backup/attachments/${photo_sha:0:2}/${photo_sha:2:2}/$photo_sha" ] || fail "the photo's file is not in the backup"
[ "$(find "$backup/attachments" -type f | wc -l)" = 2 ] || fail "backup attachments: want the photo and its thumbnail"
[ "$(stat -c %a "$backup/server.secret")" = 600 ] || fail "server.secret copy is not 0600"
# Retention: with KEEP=1 a second backup removes the first.
sleep 1
CHRONIR_DATA_DIR="$work/data" CHRONIR_ADMIN="$admin" deploy/backup.sh "$work/backups2" >/dev/null
CHRONIR_DATA_DIR="$work/data" CHRONIR_ADMIN="$admin" deploy/backup.sh "$work/backups2" 1 >/dev/null
[ "$(find "$work/backups2" -mindepth 1 -maxdepth 1 -name 'chronir-*' | wc -l)" = 1 ] || fail "retention kept more than 1"

# A change after the backup, which the restore must not have.
later=$(api 201 POST /v1/groups '{"name":"After the backup"}' "$owner" | json "['group']['id']")
png 50 50 >"$work/later.png"
later_photo=$(upload "$work/later.png" | json "['id']")
stop

# 3. Restore, as docs/operations.md#backup-and-restore says: a fresh data directory with the two files.
restored="$work/restored"
install -d -m 0700 "$restored"
install -m 0600 "$backup/chronir.sqlite" "$restored/chronir.sqlite"
install -m 0600 "$backup/server.secret" "$restored/server.secret"
cp -a "$backup/attachments" "$restored/attachments"
"$admin" db check --data-dir "$restored" >/dev/null || fail "db check on the restored database"
"$admin" audit verify --data-dir "$restored" | grep -q '^ok: ' || fail "audit verify on the restored database"

# 4. The server on the restored directory has the data as of the backup.
start "$restored"
token=$(api 200 POST /v1/auth/login '{"email":"owner@example.com","password":"owner password"}' | json "['token']")
api 200 GET "/v1/groups/$group" "" "$token" | grep -q '"name":"Flat 4B' || fail "group missing after restore"
api 200 GET "/v1/groups/$group/alarms/$alarm" "" "$token" >/dev/null
api 404 GET "/v1/groups/$later" "" "$token" >/dev/null
curl -sf -o "$work/restored.png" -H "Authorization: Bearer $token" "$base/v1/groups/$group/alarms/$alarm/attachments/$photo_id" ||
    fail "the photo attached before the backup does not download after restore"
[ "$(sha256sum "$work/restored.png" | cut -d' ' -f1)" = "$photo_sha" ] || fail "the restored photo differs from the stored one"
listed=$(api 200 GET "/v1/groups/$group/alarms/$alarm" "" "$token" |
    python3 -c "import json,sys; print(','.join(a['id'] for a in json.load(sys.stdin)['attachments']))")
[ "$listed" = "$photo_id" ] || fail "the restored alarm lists attachments [$listed], want [$photo_id] (not $later_photo)"
guest=$(api 201 POST /v1/auth/register '{"email":"guest@example.com","password":"guest password","display_name":"Guest"}' | json "['token']")
api 200 POST /v1/join "{\"code\":\"$code\"}" "$guest" | grep -q "\"$group\"" || fail "invite code made before the backup"
stop
"$admin" audit verify --data-dir "$restored" | grep -q '^ok: ' || fail "audit verify after serving the restored database"
echo "backup-restore: online backup, restore into a fresh directory, db check, audit verify, data and attachments served: ok"
