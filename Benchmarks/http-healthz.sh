#!/usr/bin/env bash
# HTTP keep-alive throughput on a tiny endpoint, chronir-server beside nginx on the same machine.
#
#   Benchmarks/http-healthz.sh [SECONDS] [CONNECTIONS]
#
# Builds chronir-server in release mode, starts it on a free port with its default log level (info:
# one access-log line per request), runs `wrk -t2 -cN -dS` against GET /healthz, and reports
# requests/s with the CPU time the server used (user+sys from /proc). Then the same against nginx
# (`return 200` of the same 15-byte body) for a ratio, and — with BENCH_HUMMINGBIRD=1 — the same
# endpoint on Hummingbird 2 / SwiftNIO (Benchmarks/hummingbird-hello, built in release mode; the first
# build takes a few minutes). Needs: wrk, nginx (apt-get install wrk nginx-light).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh  # server_start, server_stop_all, server_free_port, server_wait_http
seconds=${1:-10}
conns=${2:-64}
work=$(mktemp -d)
pids=()
trap 'server_stop_all TERM; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

cpu_ticks() {  # user+sys ticks of a process and its direct children (nginx workers)
    local total=0 p
    for p in "$1" $(pgrep -P "$1" || true); do
        total=$((total + $(awk '{print $14+$15}' "/proc/$p/stat")))
    done
    echo "$total"
}

run_wrk() {  # run_wrk NAME PID URL
    local name=$1 pid=$2 url=$3 before after hz rps
    wrk -t2 -c"$conns" -d1s "$url" >/dev/null  # warm-up
    before=$(cpu_ticks "$pid")
    wrk -t2 -c"$conns" -d"${seconds}s" --latency "$url" >"$work/$name.txt"
    after=$(cpu_ticks "$pid")
    hz=$(getconf CLK_TCK)
    rps=$(awk '/Requests\/sec/ {print $2}' "$work/$name.txt")
    printf '%-16s %10s req/s   server CPU %5.2f s over %ss (%3.0f%% of one core)   p50 %s  p99 %s\n' \
        "$name" "$rps" "$(echo "($after-$before)/$hz" | bc -l)" "$seconds" \
        "$(echo "100*($after-$before)/$hz/$seconds" | bc -l)" \
        "$(awk '$1=="50%" {print $2}' "$work/$name.txt")" "$(awk '$1=="99%" {print $2}' "$work/$name.txt")"
    echo "$rps" >"$work/$name.rps"
}

swift build -c release --product chronir-server >/dev/null
server_start "$work/server.log" .build/release/chronir-server --data-dir "$work/data" --public-dir none
port=$server_port
server=$server_pid
echo "wrk -t2 -c$conns -d${seconds}s, keep-alive, GET /healthz (15-byte JSON body), $(nproc) cores"
run_wrk chronir-server "$server" "http://127.0.0.1:$port/healthz"

if [ "${BENCH_HUMMINGBIRD:-0}" = 1 ]; then
    swift build -c release --package-path Benchmarks/hummingbird-hello >/dev/null
    hport=$(server_free_port)
    Benchmarks/hummingbird-hello/.build/release/HelloHummingbird "$hport" 2>/dev/null &
    pids+=($!)
    hb=$!
    server_wait_http "$hport" "$hb"
    run_wrk hummingbird-2 "$hb" "http://127.0.0.1:$hport/healthz"
    echo "ratio chronir/hummingbird: $(echo "$(cat "$work/chronir-server.rps")/$(cat "$work/hummingbird-2.rps")" | bc -l | cut -c1-5)"
fi

if command -v nginx >/dev/null; then
    nport=$(server_free_port)
    mkdir -p "$work/nginx"
    cat >"$work/nginx/nginx.conf" <<CONF
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $work/nginx; proxy_temp_path $work/nginx; fastcgi_temp_path $work/nginx;
    uwsgi_temp_path $work/nginx; scgi_temp_path $work/nginx;
    server {
        listen 127.0.0.1:$nport;
        location = /healthz { default_type application/json; return 200 '{"status":"ok"}'; }
    }
}
CONF
    nginx -c "$work/nginx/nginx.conf" -g 'daemon off;' &
    pids+=($!)
    nginx_master=$!
    server_wait_http "$nport" "$nginx_master"
    run_wrk nginx "$nginx_master" "http://127.0.0.1:$nport/healthz"
    echo "ratio chronir/nginx: $(echo "$(cat "$work/chronir-server.rps")/$(cat "$work/nginx.rps")" | bc -l | cut -c1-5)"
fi
