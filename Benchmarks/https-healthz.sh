#!/usr/bin/env bash
# HTTPS (native TLS, issue 22): chronir-server beside nginx terminating TLS with the same
# certificate, on the same machine, in one run.
#
#   Benchmarks/https-healthz.sh [SECONDS] [CONNECTIONS] [BINARY]
#
# 1. Keep-alive: `wrk -t2 -cN -dS` over https against GET /healthz (15-byte JSON body): requests/s
#    and server CPU, as Benchmarks/http-healthz.sh does for plain HTTP; goal ≥ 0.6× nginx.
# 2. Handshakes: `openssl s_time` (one client process, sequential connections, TLS 1.3,
#    ECDHE-ECDSA P-256): full handshakes per second (`-new`) and resumed ones from a session
#    ticket (`-reuse`), for both servers.
# Both servers: the same P-256 certificate, TLS 1.2+1.3, the server's access log at its default
# (info) and nginx's off, as in http-healthz.sh. BINARY defaults to a fresh release build.
# Needs: wrk, nginx, openssl.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh  # server_free_port
seconds=${1:-10}
conns=${2:-64}
binary=${3:-}
handshake_seconds=$((seconds / 2 > 2 ? seconds / 2 : 2))
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

if [ -z "$binary" ]; then
    swift build -c release --product chronir-server >/dev/null
    binary=.build/release/chronir-server
fi

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
    -days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null

cpu_ticks() {  # user+sys ticks of a process and its direct children (nginx workers)
    local total=0 p
    for p in "$1" $(pgrep -P "$1" || true); do
        total=$((total + $(awk '{print $14+$15}' "/proc/$p/stat")))
    done
    echo "$total"
}

wait_https() {  # wait_https PORT PID
    for _ in $(seq 1 100); do
        curl -sk -o /dev/null "https://127.0.0.1:$1/healthz" && return 0
        kill -0 "$2" 2>/dev/null || { echo "server exited" >&2; return 1; }
        sleep 0.1
    done
    return 1
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

run_s_time() {  # run_s_time NAME PORT → full TLS 1.3 handshakes/s, full and resumed (ticket) TLS 1.2 handshakes/s
    local name=$1 port=$2 spec out rate resumed
    for spec in "full TLS 1.3:-new -tls1_3" "full TLS 1.2:-new -tls1_2" "resumed TLS 1.2:-reuse -tls1_2"; do
        # shellcheck disable=SC2086
        out=$(openssl s_time -connect "127.0.0.1:$port" ${spec#*:} -time "$handshake_seconds" 2>&1)
        # "N connections in S real seconds": S is whole seconds; the progress line has a char per connection
        # ('*' new, 'r' resumed).
        rate=$(awk '/connections in [0-9]+ real seconds/ {printf "%.0f", $1/$4}' <<<"$out")
        resumed=$( (grep -E '^[*r]+$' <<<"$out" || true) | tr -cd r | wc -c)
        printf '%-16s %-16s %6s handshakes/s   (%s of them resumed; one client process)\n' "$name" "${spec%%:*}" "$rate" "$resumed"
    done
}

port=$(server_free_port)
"$binary" --port "$port" --data-dir "$work/data" --public-dir none --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" \
    2>"$work/server.log" &
server=$!
pids+=("$server")
wait_https "$port" "$server"
echo "wrk -t2 -c$conns -d${seconds}s, keep-alive over TLS 1.3, GET /healthz (15-byte JSON body), $(nproc) cores"
run_wrk chronir-server "$server" "https://127.0.0.1:$port/healthz"

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
        listen 127.0.0.1:$nport ssl;
        ssl_certificate $work/cert.pem;
        ssl_certificate_key $work/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_tickets on;
        location = /healthz { default_type application/json; return 200 '{"status":"ok"}'; }
    }
}
CONF
nginx -c "$work/nginx/nginx.conf" -g 'daemon off;' &
nginx_master=$!
pids+=("$nginx_master")
wait_https "$nport" "$nginx_master"
run_wrk nginx "$nginx_master" "https://127.0.0.1:$nport/healthz"
echo "ratio chronir/nginx (keep-alive over TLS): $(echo "$(cat "$work/chronir-server.rps")/$(cat "$work/nginx.rps")" | bc -l | cut -c1-5)"
run_s_time chronir-server "$port"
run_s_time nginx "$nport"
