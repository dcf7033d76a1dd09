#!/usr/bin/env bash
# Failover (docs/operations.md, High availability): a PostgreSQL primary and its streaming standby
# (pg_basebackup -R) on loopback, synchronous (synchronous_standby_names='*') or asynchronous, two
# instances on the multi-host URL with target_session_attrs=read-write. Reliability/failover.py loads both instances
# (each writer renames its own group, alternating A and B), with a subscriber on every group on both
# instances; a few seconds in, the primary's machine dies (SIGKILL to the postmaster and every
# process it started) and the standby is promoted a second later. Checks: every 2xx write reached
# every subscriber of its group once, in order, through at most a resume (no reset); a non-2xx is a
# 503; each group's final name is its last acknowledged one; `chronir-admin audit verify` on the new
# primary. Prints writes acknowledged/present, changes delivered/expected, kill → first write and
# kill → first change.
# `async`: the standby is asynchronous, and the kill first cuts its replication (primary_conninfo to a
# dead port) and lets the primary commit at least 20 more changes the standby never receives: the
# acknowledged writes among them are lost. Checks: they are counted and reported, every write after
# the kill is present, the instances start a new change-log epoch and every subscriber that had a lost
# change is reset — never a silent gap (failover.py's docstring has the exact rule).
#
#   Reliability/failover.sh [sync|async] [WRITERS=6]      (CHRONIR_BIN_DIR picks the binaries)
set -euo pipefail
cd "$(dirname "$0")/.."
source Reliability/lib.sh
find_binaries
replication=${1:-sync}
writers=${2:-6}
case "$replication" in sync | async) ;; *) echo "usage: Reliability/failover.sh [sync|async] [WRITERS]" >&2; exit 2 ;; esac

work=$(mktemp -d /tmp/chronir-failover-XXXXXX)
standby_data=""
stop_standby() { [ -z "$standby_data" ] || pg_as_postgres "$pg_bin/pg_ctl" -D "$standby_data" -m immediate -w stop >/dev/null 2>&1 || true; }
trap 'server_stop_all; pg_stop; stop_standby; rm -rf "$work"' EXIT
mkdir -p "$work/a" "$work/b"
chmod 700 "$work/a" "$work/b"
pg_start "$work/pg" fsync=off
primary_port=$pg_port
primary_data=$pg_data
standby_port=$(server_free_port)
mkdir -p "$work/standby"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$work/standby"
standby_data=$work/standby/data
pg_as_postgres "$pg_bin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U chronir -D "$standby_data" -R -X stream --no-sync
pg_as_postgres "$pg_bin/pg_ctl" -D "$standby_data" -l "$work/standby/log" -w -t 60 \
    -o "-p $standby_port -k $work/standby -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
primary_url="postgresql://chronir@127.0.0.1:$primary_port/postgres?sslmode=disable"
standby_url="postgresql://chronir@127.0.0.1:$standby_port/postgres?sslmode=disable"
psql_primary() { psql -X -q -At -d "$primary_url" -c "$1"; }
if [ "$replication" = sync ]; then
    psql_primary "ALTER SYSTEM SET synchronous_standby_names = '*'"
    psql_primary "SELECT pg_reload_conf()" >/dev/null
fi
for _ in $(seq 100); do [ "$(psql_primary "SELECT sync_state FROM pg_stat_replication")" = "$replication" ] && break; sleep 0.1; done
[ "$(psql_primary "SELECT sync_state FROM pg_stat_replication")" = "$replication" ] ||
    { echo "FAILOVER FAIL: the standby's replication is not $replication" >&2; exit 1; }

url="postgresql://chronir@127.0.0.1:$primary_port,127.0.0.1:$standby_port/postgres?sslmode=disable&target_session_attrs=read-write"
flags=(--database-url "$url" --password-hashing fast --default-tier premium --registrations-per-ip-per-hour 1000 "${no_write_budgets[@]}")
start_server "$work/a.log" --data-dir "$work/a" "${flags[@]}"
a_port=$server_port
cp "$work/a/server.secret" "$work/b/server.secret"
start_server "$work/b.log" --data-dir "$work/b" "${flags[@]}"
b_port=$server_port
echo "instances: A on $a_port, B on $b_port; primary on $primary_port, $replication standby on $standby_port"

# The machine dies: the postmaster and its children at once (children listed before it dies).
kill_cmd="pm=\$(head -1 $primary_data/postmaster.pid); kids=\$(ps -o pid= --ppid \$pm); kill -KILL \$pm \$kids"
if [ "$replication" = async ]; then
    # Before it dies, the standby stops receiving (its walreceiver restarts against a dead port) and the
    # primary commits at least 20 changes the standby never gets (each bounded: 10 s).
    head="SELECT COALESCE(MAX(seq), 0) FROM change_log"
    cut_cmd="psql -X -q -At -d '$standby_url' -c \"ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=1 user=chronir'\" -c 'SELECT pg_reload_conf()' >/dev/null
        for _ in \$(seq 100); do [ \"\$(psql -X -q -At -d '$primary_url' -c 'SELECT count(*) FROM pg_stat_replication')\" = 0 ] && break; sleep 0.1; done
        cut=\$(psql -X -q -At -d '$primary_url' -c '$head')
        for _ in \$(seq 100); do [ \"\$(psql -X -q -At -d '$primary_url' -c '$head')\" -ge \$((cut + 20)) ] && break; sleep 0.1; done"
    kill_cmd="$cut_cmd; $kill_cmd"
fi
promote_cmd="$(declare -f pg_as_postgres); pg_as_postgres $pg_bin/pg_ctl -D $standby_data -w -t 60 promote >/dev/null"
python3 Reliability/failover.py --a "$a_port" --b "$b_port" --writers "$writers" --replication "$replication" \
    --database-url "$url" --kill-cmd "$kill_cmd" --promote-cmd "$promote_cmd" || { echo "FAILOVER FAIL: see above" >&2; tail -n 20 "$work/a.log" "$work/b.log" >&2; exit 1; }
pg_data=""  # the primary is dead: nothing for pg_stop to do
"$ADMIN" audit verify --database-url "$url" || { echo "FAILOVER FAIL: audit verify on the new primary" >&2; exit 1; }
echo "failover: all checks passed"
