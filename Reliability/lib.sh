# Shared helpers for the Reliability/*.sh scripts (sourced, not run).

# start_server LOG [chronir-server flags…] — starts $SERVER in the background on an ephemeral
# 127.0.0.1 port with JSON logs to LOG; sets $server_pid and $base (http://127.0.0.1:PORT).
start_server() {
    local log=$1
    shift
    touch "$log"
    "$SERVER" --host 127.0.0.1 --port 0 --public-dir none --log-format json "$@" 2>>"$log" &
    server_pid=$!
    local port="" from
    from=$(wc -l <"$log")
    for _ in $(seq 1 1200); do  # up to 60 s: the machine may be busy
        port=$(tail -n +"$((from + 1))" "$log" 2>/dev/null | grep -o '"address":"127.0.0.1:[0-9]*"' | head -1 \
            | grep -o '[0-9]*"$' | tr -d '"' || true)
        [ -n "$port" ] && break
        kill -0 "$server_pid" 2>/dev/null || { echo "server exited during start-up:" >&2; tail -20 "$log" >&2; return 1; }
        sleep 0.05
    done
    [ -n "$port" ] || { echo "server did not report its port" >&2; return 1; }
    base="http://127.0.0.1:$port"
}

# Flags that turn the per-user write budgets off (docs/security-budgets.md), for the scripts that
# load the server with a few users on purpose (crash, soak): their point is the server under load,
# not 429s. Reliability/write-budget.sh keeps the defaults.
no_write_budgets=(--write-budget-per-minute 0 --write-bytes-per-hour 0)

# rss_kib PID — resident set size in KiB (VmRSS); peak_kib PID — VmHWM.
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
peak_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
fd_count() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }

# find_binaries — sets SERVER and ADMIN from $CHRONIR_BIN_DIR or .build/{release,debug}.
find_binaries() {
    local dir=${CHRONIR_BIN_DIR:-}
    if [ -z "$dir" ]; then
        for d in .build/release .build/debug; do
            [ -x "$d/chronir-server" ] && { dir=$d; break; }
        done
    fi
    [ -n "$dir" ] && [ -x "$dir/chronir-server" ] || { echo "no chronir-server built (swift build)" >&2; exit 2; }
    SERVER=$(realpath "$dir/chronir-server")
    ADMIN=$(realpath "$dir/chronir-admin")
}
