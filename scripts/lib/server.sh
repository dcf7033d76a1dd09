# The one way a script starts chronir-server and waits for it (sourced, not run; bash).
# Reliability/lib.sh and Benchmarks/lib.sh source it and wrap server_start with their own flags;
# Benchmarks/http-healthz.sh uses it directly. (.ci/*.sh keep `--port 0` and read the port from the
# log: .ci/metrics.sh counts every /healthz request, which a /healthz wait would disturb.)
#
#   server_start LOG BINARY [FLAG…]
#       Picks a free 127.0.0.1 port, runs `BINARY --port PORT FLAG…` in the background with stderr
#       appended to LOG, and waits until GET /healthz answers (≤ 60 s: the machine may be busy).
#       Sets server_pid, server_port and base (http://127.0.0.1:PORT) and records the pid for
#       server_stop_all. `--metrics-port auto` among the flags is replaced by a second free port and
#       sets metrics_base (http://127.0.0.1:MPORT); pass the token as --metrics-token or
#       CHRONIR_METRICS_TOKEN as usual. Returns 1 (LOG's tail on stderr) when the server exits during
#       start-up or does not answer; retries with new ports (3 times) when the port was taken
#       meanwhile ("Address already in use").
#   server_stop PID [SIGNAL=KILL]
#       Signals PID and reaps it. Never fails: a killed server's status (137) must not become the
#       script's exit status under `set -e`, in an EXIT trap or anywhere else.
#   server_stop_all [SIGNAL=KILL]
#       server_stop for every server server_start started and that is not stopped yet — what an
#       EXIT trap calls: `trap 'server_stop_all; rm -rf "$work"' EXIT`.
#   server_free_port, server_wait_http PORT [PID], server_wait_tcp PORT
#       The pieces, for other servers (the Benchmarks' references): a free port; wait (≤ 60 s) until
#       GET /healthz on PORT answers 200 (or fail at once when PID exits); wait until PORT accepts.

server_pids=()

server_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

server_wait_http() {
    local port=$1 pid=${2:-}
    for _ in $(seq 1 600); do
        curl --noproxy '*' -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
        [ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 2
        sleep 0.1
    done
    echo "server on port $port did not come up" >&2
    return 1
}

server_wait_tcp() {
    for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
    echo "server on port $1 did not come up" >&2
    return 1
}

server_start() {
    local log=$1 binary=$2 attempt status from flag previous
    shift 2
    touch "$log"
    for attempt in 1 2 3; do
        local args=()
        metrics_base=""
        previous=""
        for flag in "$@"; do
            if [ "$flag" = auto ] && [ "$previous" = --metrics-port ]; then
                flag=$(server_free_port)
                metrics_base="http://127.0.0.1:$flag"
            fi
            args+=("$flag")
            previous=$flag
        done
        server_port=$(server_free_port)
        from=$(wc -l <"$log")
        "$binary" --port "$server_port" "${args[@]}" 2>>"$log" &
        server_pid=$!
        server_pids+=("$server_pid")
        base="http://127.0.0.1:$server_port"
        status=0
        server_wait_http "$server_port" "$server_pid" || status=$?
        [ "$status" = 0 ] && return 0
        server_stop "$server_pid"
        if [ "$status" = 2 ] && tail -n +"$((from + 1))" "$log" | grep -q 'Address already in use' && [ "$attempt" -lt 3 ]; then
            continue
        fi
        [ "$status" = 2 ] && echo "server exited during start-up:" >&2
        tail -20 "$log" >&2
        return 1
    done
}

server_stop() {
    local pid=$1 signal=${2:-KILL} keep=() p
    kill -"$signal" "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    for p in "${server_pids[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
    server_pids=("${keep[@]}")
    return 0
}

server_stop_all() {
    local p
    for p in "${server_pids[@]}"; do server_stop "$p" "${1:-KILL}"; done
    return 0
}
