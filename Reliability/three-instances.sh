#!/usr/bin/env bash
# Three chronir-server instances on one PostgreSQL database behind nginx (issue 16). Starts a
# throwaway PostgreSQL cluster (scripts/lib/postgres.sh pg_start), instances A, B and C on their own
# ports with the same --database-url and server.secret (sweeper period 2 s), and nginx with
# deploy/nginx/chronir-cluster.conf — only its listen ports and upstream ports replaced, TLS lines
# removed (plain HTTP on loopback) — unprivileged, non-daemon, in a temporary prefix. Then
# Reliability/three_instances.py checks, failing loudly on any miss:
#   a. cross-instance delivery: SUBSCRIBERS sockets spread over A, B, C directly and nginx; CHANGES
#      completions and renames posted on A reach every socket once, in seq order (p50/p99 per placement);
#   b. kill mid-load: writers post through nginx while C gets SIGKILL; C's clients resume through
#      nginx with since + epoch; every acknowledged write reaches every socket exactly once;
#   c. the sweeper: over the run, each job ran once per period across the three (`sweep` log lines);
#   d. with --check-presence: a member on B is in the presence a member on A sees, and back.
#
#   Reliability/three-instances.sh [SUBSCRIBERS=300] [CHANGES=40] [--check-presence]
#   (CHRONIR_BIN_DIR picks the binaries)
set -euo pipefail
cd "$(dirname "$0")/.."
source Reliability/lib.sh
source scripts/lib/nginx.sh
find_binaries
positional=()
extra=()
for arg in "$@"; do
    case $arg in
        --check-presence) extra+=(--check-presence) ;;
        *) positional+=("$arg") ;;
    esac
done
subscribers=${positional[0]:-300}
changes=${positional[1]:-40}
sweep_period=2
nginx=$(nginx_binary)
[ -x "$nginx" ] || { echo "nginx is not installed (apt-get install nginx)" >&2; exit 2; }

work=$(mktemp -d /tmp/chronir-three-XXXXXX)
nginx_pid=""
stop_nginx() { [ -z "$nginx_pid" ] || { kill "$nginx_pid" 2>/dev/null; wait "$nginx_pid" 2>/dev/null; } || true; }
trap 'server_stop_all; stop_nginx; pg_stop; rm -rf "$work"' EXIT
fail() {
    echo "THREE-INSTANCES FAIL: $*" >&2
    for i in a b c; do
        echo "--- instance ${i^^} log, last lines above info:" >&2
        grep -v '"level":"info"' "$work/$i.log" | tail -5 >&2 || true
    done
    echo "--- nginx error log (tail):" >&2; tail -20 "$work/nginx/error.log" >&2 2>/dev/null || true
    exit 1
}
mkdir -p "$work/a" "$work/b" "$work/c" "$work/nginx"
chmod 700 "$work/a" "$work/b" "$work/c"
pg_start "$work/pg" fsync=off

# Same database and server.secret for all three; nginx (127.0.0.1) is their trusted proxy. The load
# is a few users on purpose: the write budgets and the per-address registration limit are lifted.
flags=(--database-url "$pg_url" --password-hashing fast --default-tier premium --max-members 1000
       --registrations-per-ip-per-hour 1000 --trusted-proxies 127.0.0.1 --sweep-period "$sweep_period"
       "${no_write_budgets[@]}")
# C starts first: its sweeper timers lead, so it tends to hold the sweeps until it is killed and the
# check sees another instance take them over. `disown`: bash would report C's SIGKILL as "Killed".
start_server "$work/c.log" --data-dir "$work/c" "${flags[@]}" || fail "instance C did not start"
c_port=$server_port
c_pid=$server_pid
disown "$c_pid"
cp "$work/c/server.secret" "$work/a/server.secret"
cp "$work/c/server.secret" "$work/b/server.secret"
start_server "$work/a.log" --data-dir "$work/a" "${flags[@]}" || fail "instance A did not start"
a_port=$server_port
start_server "$work/b.log" --data-dir "$work/b" "${flags[@]}" || fail "instance B did not start"
b_port=$server_port

# The repo's cluster sample with only these lines changed; every other directive is used as written.
proxy_port=$(server_free_port)
redirect_port=$(server_free_port)
sed -e "s|^\(\s*\)listen 443 ssl;|\1listen 127.0.0.1:$proxy_port;|" \
    -e "s|^\(\s*\)listen 80;|\1listen 127.0.0.1:$redirect_port;|" \
    -e '/listen \[::\]/d' -e '/^\s*ssl_/d' -e '/Strict-Transport-Security/d' \
    -e "s|server 127.0.0.1:8081 |server 127.0.0.1:$a_port |" \
    -e "s|server 127.0.0.1:8082 |server 127.0.0.1:$b_port |" \
    -e "s|server 127.0.0.1:8083 |server 127.0.0.1:$c_port |" \
    deploy/nginx/chronir-cluster.conf >"$work/nginx/chronir-cluster.conf"
for line in "listen 127.0.0.1:$proxy_port;" "server 127.0.0.1:$a_port " "server 127.0.0.1:$b_port " "server 127.0.0.1:$c_port "; do
    grep -q "$line" "$work/nginx/chronir-cluster.conf" ||
        fail "deploy/nginx/chronir-cluster.conf no longer has the lines this script replaces ($line)"
done
nginx_start "$work/nginx" "$work/nginx/chronir-cluster.conf" 4096 || fail "nginx -t"
server_wait_http "$proxy_port" "$nginx_pid" || fail "nginx did not come up"
echo "instances: A on $a_port, B on $b_port, C on $c_port (pid $c_pid); nginx on $proxy_port; PostgreSQL on $pg_port"

python3 Reliability/three_instances.py --a "$a_port" --b "$b_port" --c "$c_port" --proxy "$proxy_port" \
    --kill-pid "$c_pid" --logs "$work/a.log" "$work/b.log" "$work/c.log" --sweep-period "$sweep_period" \
    --subscribers "$subscribers" --changes "$changes" "${extra[@]}" || fail "see above"
# Every WebSocket went through nginx's upgrade path (the map sends Connection: upgrade).
grep -q '"GET /v1/realtime HTTP/1.1" 101' "$work/nginx/access.log" || fail "no 101 for /v1/realtime in nginx's log"
echo "three instances: all checks passed"
