#!/usr/bin/env bash
# HTTP keep-alive throughput on a tiny endpoint: chronir-server beside the ceiling of its own
# architecture — a bare DispatchSource loop answering a canned 200 (Benchmarks/dispatch-ceiling) —
# measured alternately in one run, medians of RUNS.
#
#   Benchmarks/http-healthz.sh [SECONDS] [CONNECTIONS]        (defaults 10 64)
#   RUNS=3 CHRONIR_SERVER=… BASELINE_SERVER=… BENCH_NGINX=1 BENCH_HUMMINGBIRD=1 SYSCALLS=1 Benchmarks/http-healthz.sh
#
# chronir-server (release; CHRONIR_SERVER or built here) runs at its default log level (info: one
# access-log line per request). The ceiling is compiled with `swiftc -O` into a temp dir. Each run
# does `wrk -t2 -cN -dS --latency` (after a 1 s warm-up) against GET /healthz of every server, in
# an order that alternates from run to run, and prints req/s, the CPU the server used (user+sys
# from /proc; per request too — steadier than req/s on a machine shared with other work) and the
# load average. Optional, in the same rotation: BASELINE_SERVER (another
# chronir-server binary, e.g. the one before a change: "chronir-before"), nginx (`return 200` of
# the same body; BENCH_NGINX=1, needs nginx-light) and Hummingbird 2 (BENCH_HUMMINGBIRD=1;
# Benchmarks/hummingbird-hello, first build takes minutes).
# SYSCALLS=1 adds, after the runs, one bounded run per server under `strace -c -f` (syscalls per
# request; strace slows the server, so only the counts mean anything) and one under `perf stat`
# (context switches = wake-ups, and CPU per request).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh  # server_start, server_stop_all, server_free_port, server_wait_http
seconds=${1:-10}
conns=${2:-64}
RUNS=${RUNS:-3}
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
load() { cut -d' ' -f1-3 /proc/loadavg; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b+0 == 0) print "n/a"; else printf "%.2f", a/b }'; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "n/a"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
ms() { awk -v v="$1" 'BEGIN { if (v ~ /us$/) printf "%.3f", v/1000; else if (v ~ /ms$/) printf "%.3f", v+0; else printf "%.3f", v*1000 }'; }

names=()
declare -A pid_of url_of
add_server() { names+=("$1"); pid_of[$1]=$2; url_of[$1]="http://127.0.0.1:$3/healthz"; }

run_wrk() {  # run_wrk NAME RUN
    local name=$1 run=$2 pid=${pid_of[$1]} url=${url_of[$1]} before after hz out=$work/$1.$2
    wrk -t2 -c"$conns" -d1s "$url" >/dev/null  # warm-up
    before=$(cpu_ticks "$pid")
    wrk -t2 -c"$conns" -d"${seconds}s" --latency "$url" >"$out.txt"
    after=$(cpu_ticks "$pid")
    hz=$(getconf CLK_TCK)
    awk '/Requests\/sec/ {print $2}' "$out.txt" >"$out.rps"
    awk -v t="$((after - before))" -v hz="$hz" '/requests in/ {printf "%.2f\n", t / hz * 1e6 / $1}' "$out.txt" >"$out.cpu"
    printf '%-16s run %s %10s req/s   server CPU %3.0f%% of one core, %5s µs/request   p50 %s ms  p99 %s ms   load %s\n' \
        "$name" "$run" "$(cat "$out.rps")" "$(echo "100*($after-$before)/$hz/$seconds" | bc -l)" "$(cat "$out.cpu")" \
        "$(ms "$(awk '$1=="50%" {print $2}' "$out.txt")")" "$(ms "$(awk '$1=="99%" {print $2}' "$out.txt")")" "$(load)"
}

if [ -z "${CHRONIR_SERVER:-}" ]; then
    swift build -c release --product chronir-server >/dev/null
    CHRONIR_SERVER=$PWD/.build/release/chronir-server
fi
swiftc -O -parse-as-library -o "$work/dispatch-ceiling" Benchmarks/dispatch-ceiling/main.swift

server_start "$work/server.log" "$CHRONIR_SERVER" --data-dir "$work/data" --public-dir none
add_server chronir-server "$server_pid" "$server_port"
cport=$(server_free_port)
"$work/dispatch-ceiling" "$cport" &
pids+=($!)
server_wait_http "$cport" $!
add_server dispatch-ceiling "${pids[-1]}" "$cport"
if [ -n "${BASELINE_SERVER:-}" ]; then
    server_start "$work/baseline.log" "$BASELINE_SERVER" --data-dir "$work/baseline-data" --public-dir none
    add_server chronir-before "$server_pid" "$server_port"
fi
if [ "${BENCH_HUMMINGBIRD:-0}" = 1 ]; then
    swift build -c release --package-path Benchmarks/hummingbird-hello >/dev/null
    hport=$(server_free_port)
    Benchmarks/hummingbird-hello/.build/release/HelloHummingbird "$hport" 2>/dev/null &
    pids+=($!)
    server_wait_http "$hport" $!
    add_server hummingbird-2 "${pids[-1]}" "$hport"
fi
if [ "${BENCH_NGINX:-0}" = 1 ]; then
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
    server_wait_http "$nport" $!
    add_server nginx "${pids[-1]}" "$nport"
fi

echo "wrk -t2 -c$conns -d${seconds}s, keep-alive, GET /healthz (15-byte JSON body), $(nproc) cores, $RUNS runs, alternating"
count=${#names[@]}
for run in $(seq 1 "$RUNS"); do
    for i in $(seq 0 $((count - 1))); do run_wrk "${names[$(((i + run - 1) % count))]}" "$run"; done
done
med() { cat "$work/$1".*."$2" | median; }
echo
echo "| server | req/s (median of $RUNS) | ratio to dispatch-ceiling | server CPU per request (median) |"
echo "|---|---|---|---|"
for name in "${names[@]}"; do
    echo "| $name | $(med "$name" rps) | $(ratio "$(med "$name" rps)" "$(med dispatch-ceiling rps)") | $(med "$name" cpu) µs |"
done
echo "(load at the end: $(load))"

if [ "${SYSCALLS:-0}" = 1 ]; then
    echo
    echo "per request, one bounded ${seconds}s run each (strace -c -f; then perf stat -e context-switches,task-clock):"
    for name in "${names[@]}"; do
        [ "$name" = nginx ] || [ "$name" = hummingbird-2 ] && continue
        strace -c -f -o "$work/$name.strace" -p "${pid_of[$name]}" &
        tracer=$!
        sleep 1
        wrk -t2 -c"$conns" -d"${seconds}s" "${url_of[$name]}" >"$work/$name.straced"
        kill -INT "$tracer"; wait "$tracer" || true
        requests=$(awk '/requests in/ {print $1}' "$work/$name.straced")
        echo "$name: $requests requests under strace"
        awk -v r="$requests" '$1 ~ /^[0-9.]+$/ && NF >= 5 { name=$NF; calls=$4; printf "    %-16s %6.2f per request\n", name, calls/r }' \
            "$work/$name.strace" | sort -k2 -g -r | head -8
        if command -v perf >/dev/null; then
            perf stat -e context-switches,task-clock -p "${pid_of[$name]}" -o "$work/$name.perfstat" &
            tracer=$!
            sleep 0.5
            wrk -t2 -c"$conns" -d"${seconds}s" "${url_of[$name]}" >"$work/$name.perfed"
            kill -INT "$tracer"; wait "$tracer" || true
            requests=$(awk '/requests in/ {print $1}' "$work/$name.perfed")
            awk -v r="$requests" '
                /context-switches/ { gsub(",", "", $1); printf "    context switches %.3f per request\n", $1/r }
                /task-clock/ { gsub(",", "", $1); printf "    CPU %.1f µs per request\n", $1*1000/r }' "$work/$name.perfstat"
        fi
    done
fi
