#!/usr/bin/env bash
# Registration and password-reset timing for known vs unknown addresses (issue 18, docs/security.md #13):
# a built chronir-server with mail configured (an SMTP URL nothing listens on: mails stay pending, which
# changes nothing in the request path) and the production scrypt cost; N requests each way, alternating,
# one at a time; prints the median and p90 of curl's time_total per kind. Usage:
#   swift build -c release --product chronir-server && Benchmarks/enumeration-timing.sh [N]
set -euo pipefail
N=${1:-20}
BIN=${BIN:-.build/release/chronir-server}
[ -x "$BIN" ] || BIN=.build/debug/chronir-server
DATA=$(mktemp -d)
PORT=$((20000 + RANDOM % 20000))
"$BIN" --port "$PORT" --data-dir "$DATA" --public-dir none --log-level warning \
  --smtp-url smtp://127.0.0.1:9 --mail-from chronir@bench.test --registrations-per-ip-per-hour 100000 \
  --registrations-per-hour 100000 2>"$DATA/server.log" &
PID=$!
trap 'kill $PID 2>/dev/null; [ -n "${KEEP_LOG:-}" ] && cat "$DATA/server.log" >&2; rm -rf "$DATA"' EXIT
for _ in $(seq 600); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
post() { curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H 'content-type: application/json' -d "$2" "http://127.0.0.1:$PORT$1"; }
post /v1/auth/register '{"email":"taken@bench.test","password":"correct horse","display_name":"T"}' >/dev/null
: >"$DATA/new"; : >"$DATA/taken"; : >"$DATA/rknown"; : >"$DATA/runknown"
for i in $(seq "$N"); do
  post /v1/auth/register "{\"email\":\"new$i@bench.test\",\"password\":\"correct horse\",\"display_name\":\"N\"}" >>"$DATA/new"
  post /v1/auth/register '{"email":"taken@bench.test","password":"correct horse","display_name":"T"}' >>"$DATA/taken"
done
# Password reset: 20 per client network per hour, so 10 each way, each naming another address (3 per
# address per hour): the known ones are accounts registered above.
for i in $(seq 10); do
  post /v1/auth/password-reset "{\"email\":\"new$i@bench.test\"}" >>"$DATA/rknown"
  post /v1/auth/password-reset "{\"email\":\"nobody$i@bench.test\"}" >>"$DATA/runknown"
done
stats() {
  sort -k2 -n "$1" | awk -v name="$2" '{c[NR]=$1; t[NR]=$2} END {printf "%-22s n=%d status=%s median=%.1f ms p90=%.1f ms\n", name, NR, c[1], t[int((NR+1)/2)]*1000, t[int(NR*0.9+0.5)]*1000}'
}
stats "$DATA/new" "register new"
stats "$DATA/taken" "register taken"
stats "$DATA/rknown" "reset known"
stats "$DATA/runknown" "reset unknown"
