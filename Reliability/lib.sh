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

# pg_start DIR — a throwaway PostgreSQL cluster in DIR (initdb + pg_ctl, trust auth, user chronir,
# no fsync) on a free loopback port, run as the postgres user when this script runs as root. Sets
# pg_url (a libpq URI for --database-url and psql) and pg_port. DIR must be new or empty;
# pg_stop (idempotent, never fails) belongs in the EXIT trap before DIR is removed:
#   trap 'server_stop_all; pg_stop; rm -rf "$work"' EXIT
pg_dir=""
pg_bin=""
pg_as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_start() {
    pg_dir=$1
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    mkdir -p "$pg_dir"
    chmod 755 "$(dirname "$pg_dir")"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$pg_dir"
    pg_port=$(server_free_port)
    pg_as_postgres "$pg_bin/initdb" -D "$pg_dir/data" -U chronir -A trust -E UTF8 --no-sync -N >/dev/null
    pg_as_postgres "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w -t 60 \
        -o "-p $pg_port -k $pg_dir -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
    pg_url="postgresql://chronir@127.0.0.1:$pg_port/postgres?sslmode=disable"
}
pg_stop() {
    [ -n "$pg_dir" ] || return 0
    pg_as_postgres "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    return 0
}
