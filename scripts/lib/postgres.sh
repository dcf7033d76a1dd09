# A throwaway PostgreSQL cluster for scripts (sourced, not run; bash): the Reliability/*-instances.sh
# drills and Benchmarks/backends.sh start their instances' database with it. Needs
# scripts/lib/server.sh (server_free_port) sourced first.
#
#   pg_start DIR [SETTING…]
#       initdb + pg_ctl start in DIR (created; owned by the postgres user when run as root, which
#       PostgreSQL requires, so DIR's parent is made searchable: chmod 755) on a free 127.0.0.1 port,
#       trust authentication for the user chronir, the socket in DIR too. Sets pg_bin (the newest
#       /usr/lib/postgresql/*/bin), pg_port, pg_data and pg_url (libpq URI of the `postgres`
#       database, sslmode=disable). The server runs with the distribution's defaults (fsync and
#       synchronous_commit on), as a production primary would, plus each SETTING (`fsync=off` for
#       drills that measure correctness, not the disk).
#   pg_stop
#       Immediate shutdown of the cluster pg_start started; never fails (for EXIT traps).
#   pg_crash
#       The same immediate shutdown as a crash drill: no checkpoint, the next start replays the WAL.
#   pg_restart
#       Starts the cluster pg_start made again, on the same port with the same settings.
#   pg_as_postgres COMMAND…
#       Runs COMMAND as the postgres user when this script runs as root, else as is.

pg_as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pg_start() {
    local dir=$1 setting
    shift
    pg_options=""
    for setting in "$@"; do pg_options+=" -c $setting"; done
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    mkdir -p "$dir"
    chmod 755 "$(dirname "$dir")"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
    pg_dir=$dir
    pg_data=$dir/data
    pg_port=$(server_free_port)
    pg_as_postgres "$pg_bin/initdb" -D "$pg_data" -U chronir -A trust -E UTF8 --no-sync -N >/dev/null
    pg_restart
    pg_url="postgresql://chronir@127.0.0.1:$pg_port/postgres?sslmode=disable"
}

pg_restart() {
    pg_as_postgres "$pg_bin/pg_ctl" -D "$pg_data" -l "$pg_dir/log" -w -t 60 \
        -o "-p $pg_port -k $pg_dir -c listen_addresses=127.0.0.1$pg_options" start >/dev/null
}

pg_crash() {
    pg_as_postgres "$pg_bin/pg_ctl" -D "$pg_data" -m immediate -w stop >/dev/null
}

pg_stop() {
    [ -n "${pg_data:-}" ] || return 0
    pg_as_postgres "$pg_bin/pg_ctl" -D "$pg_data" -m immediate -w stop >/dev/null 2>&1 || true
    return 0
}
