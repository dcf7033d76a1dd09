# Shared helpers for the Reliability/*.sh scripts (sourced, not run).

source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/server.sh"  # server_start, server_stop, server_stop_all

# start_server LOG [chronir-server flags…] — starts $SERVER in the background (scripts/lib/server.sh:
# a free 127.0.0.1 port, ready once /healthz answers) with JSON logs to LOG; sets $server_pid and
# $base (http://127.0.0.1:PORT). The scripts' EXIT trap is `server_stop_all; rm -rf "$work"`.
start_server() {
    local log=$1
    shift
    server_start "$log" "$SERVER" --host 127.0.0.1 --public-dir none --log-format json "$@"
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

source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/postgres.sh"  # pg_start, pg_stop, pg_as_postgres
