#!/usr/bin/env bash
# Metrics smoke test of a built chronir-server: by default /metrics is not served; with
# --metrics-port 0 and CHRONIR_METRICS_TOKEN it is served on that separate port only, 401 without
# the token, and the exposition counts the API requests made before it (route template, status).
# Usage: .ci/metrics.sh PATH/TO/chronir-server
set -euo pipefail
bin=$(realpath "$1")
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "METRICS FAIL: $*" >&2; echo "--- server log:" >&2; cat "$work/log" >&2; exit 1; }
c() { curl --noproxy '*' -s "$@"; }

start() {  # start [FLAGS…]: runs the server, sets pid, api and mport (empty without a metrics port)
    : >"$work/log"
    "$bin" --port 0 --data-dir "$work/data" --public-dir none --log-format json "$@" 2>"$work/log" &
    pid=$!
    api=""
    for _ in $(seq 1 100); do
        api=$(grep '"msg":"listening"' "$work/log" | grep -o '127.0.0.1:[0-9]*' | head -1 | cut -d: -f2 || true)
        [ -n "$api" ] && break
        kill -0 "$pid" 2>/dev/null || fail "server exited during start-up"
        sleep 0.1
    done
    [ -n "$api" ] || fail "server did not report its port"
    mport=$(grep '"msg":"metrics listening"' "$work/log" | grep -o '127.0.0.1:[0-9]*' | cut -d: -f2 || true)
}
stop() { kill "$pid"; wait "$pid" || fail "server exit status $?"; pid=""; }

start
[ "$(c -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api/metrics")" = 404 ] || fail "/metrics served by default"
stop

token=ci-metrics-token-0123456789
CHRONIR_METRICS_TOKEN=$token start --metrics-port 0
[ -n "$mport" ] || fail "no 'metrics listening' line"
for _ in 1 2 3; do c "http://127.0.0.1:$api/healthz" >/dev/null; done
c "http://127.0.0.1:$api/no/such/path" >/dev/null
[ "$(c -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api/metrics")" = 404 ] || fail "/metrics also on the API port"
[ "$(c -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/metrics")" = 401 ] || fail "no 401 without the token"
c -H "Authorization: Bearer $token" "http://127.0.0.1:$mport/metrics" >"$work/metrics"
grep -qx 'chronir_http_requests_total{method="GET",route="/healthz",status="200"} 3' "$work/metrics" \
    || fail "healthz count: $(grep chronir_http_requests_total "$work/metrics")"
grep -qx 'chronir_http_requests_total{method="GET",route="unmatched",status="404"} 2' "$work/metrics" \
    || fail "unmatched count: $(grep chronir_http_requests_total "$work/metrics")"
grep -q '^chronir_sqlite_transaction_duration_seconds_count{kind="write"} ' "$work/metrics" || fail "no SQLite series"
stop  # the log sink is buffered: read the log once the server has flushed it on exit
grep -q '"msg":"connection opened"' "$work/log" || fail "no connection log line"
echo "metrics: ok ($(grep -c '^chronir_' "$work/metrics") samples)"
