#!/usr/bin/env bash
# The scale-out write path over a network (issue 35): PostgreSQL instances that reach their database
# through a delay proxy (loopback, a fixed delay per direction: Benchmarks/loadgen/delayproxy.c) the
# way a database one network hop away would be reached, beside the same PostgreSQL's own rate at that
# distance (`pgbench -N`). Several server builds run interleaved in one sitting, so old and new code
# meet the same machine load.
#
#   Benchmarks/network.sh [SECONDS] [DELAY_US] [RUNS]                  (defaults 15 300 2)
#   SERVERS="old=/work/bench/chronir-server-base new=.build/release/chronir-server" Benchmarks/network.sh
#
# SERVERS: space-separated LABEL=BINARY pairs (default: new=the release build, built if missing);
# ARGS_<LABEL>: more server flags for that label (e.g. ARGS_w2="--database-writers 2").
# Each label gets its own database on one throwaway PostgreSQL 15 cluster (scripts/lib/postgres.sh:
# fsync and synchronous_commit on), seeded once with WRITERS (64) accounts without a group.
# Per run and label, in this order:
#   direct1  one instance connected to PostgreSQL directly;
#   proxy1   one instance through the proxy (DELAY_US per direction, so ≈ 2 × DELAY_US more per
#            round trip);
#   proxy2   two instances through the proxy at once.
# Each phase: one `wrk -t2 -c16 -d SECONDS` per instance of `PATCH /v1/me {"display_name": …}`
# (WRITE=alarm: a personal alarm's edit; WRITE=shared: a shared alarm's; WRITE=device: a device's registration) rotating over the WRITERS tokens (Benchmarks/lib.sh
# write_lua); writes/s summed over the instances, p50/p99 the higher of the instances'. Then, unless
# SUBS=0, cross-instance delivery with both instances through the proxy: SUBS (1000) accounts in one group with a socket each on instance B, the group renamed through A
# (delivery_phase in Benchmarks/lib.sh: LATENCY_RUNS (100) mutations one at a time, then SECONDS with 4
# in flight), so each change travels A's COMMIT → NOTIFY → B's LISTEN → B's read → B's fan-out, every
# database step across the proxy. Once per run: `pgbench -N` (TPC-B without the contended branch/teller
# updates; scale 10), 32 clients, SECONDS, through the proxy and directly. The round trip the proxy
# adds is measured first: `pgbench -c1` of `SELECT 1` through the proxy and directly (average latency).
#
# The goals (issue 35), at 0.5–0.7 ms round trip: proxy2 ≥ 0.8 × pgbench -N through the proxy,
# p99 ≤ 50 ms; proxy2 ≥ 1.6 × proxy1; cross-instance delivery p99 ≤ 50 ms; direct1 ≥ 0.5 × SQLite (Benchmarks/backends.sh) at the same
# durability. Needs wrk, gcc, pgbench and PostgreSQL's server binaries. Everything is bounded: each
# phase lasts SECONDS, the proxy exits by itself after two hours. PROFILE_DIR=DIR samples each label's
# one-instance phases (direct1, proxy1) of the first run with perf (Benchmarks/lib.sh profile_start;
# their writes/s then count the sampling's cost).
source "$(dirname "$0")/lib.sh"
source scripts/lib/postgres.sh  # pg_start, pg_stop
seconds=${1:-15}
delay_us=${2:-300}
runs=${3:-2}
writers=${WRITERS:-64}
subs=${SUBS:-1000}
latency_runs=${LATENCY_RUNS:-100}
connections=16
pgbench_clients=32
# Room for SUBS members in one group and their sockets (as Benchmarks/backends.sh); none without SUBS.
group_flags=()
if [ "$subs" -gt 0 ]; then group_flags=(--max-members "$((subs > 2 ? subs : 2))" --max-connections $((subs + 2000))); fi
trap 'server_stop_all TERM; [ -n "${proxy_pid:-}" ] && kill "$proxy_pid" 2>/dev/null; pg_stop; cleanup' EXIT
chmod 755 "$work"

if [ -z "${SERVERS:-}" ]; then
    [ -x .build/release/chronir-server ] || swift build -c release --product chronir-server >/dev/null
    SERVERS="new=$PWD/.build/release/chronir-server"
fi
gcc -O2 -Wall -pthread -o "$work/delayproxy" Benchmarks/loadgen/delayproxy.c
WSLOAD=$work/wsload
gcc -O2 -o "$WSLOAD" Benchmarks/loadgen/wsload.c
results=$work/results
: >"$results"
note() { echo "$1 $2" >>"$results"; }
got() { awk -v k="$1" '$1==k {printf "%s%s", sep, $2; sep=" / "} END {if (sep == "") print "n/a"; else print ""}' "$results"; }
log() { echo "[$(date -u +%H:%M:%S)] $* (load $(load))" >&2; }
wrk_ms() {  # wrk_ms FILE PERCENT: wrk's latency percentile in milliseconds
    awk -v p="$2%" '$1 == p {
        v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
        printf "%.1f", (u == "us" ? v / 1000 : u == "s" ? v * 1000 : u == "m" ? v * 60000 : v)
    }' "$1"
}

# write_phase NAME PORT…: one wrk per port at once; notes NAME.{writes,p50,p99,load}.
write_phase() {
    local name=$1 port i=0 files=() wrk_pids=() f rate=0 p50=0 p99=0
    shift
    log "writes: $name ($# instance(s), ${seconds}s)"
    for port in "$@"; do
        i=$((i + 1))
        f=$work/wrk.$name.$i
        wrk -t2 -c"$connections" -d"${seconds}s" --latency -s "$work/patch.$label.lua" "http://127.0.0.1:$port" >"$f" 2>"$f.err" &
        wrk_pids+=($!)
        files+=("$f")
    done
    # One instance: its CPU and the cluster's are counted (CH_PID is that instance), and perf may sample it.
    local one=$(( $# == 1 )) server_ticks pg_ticks
    if [ $one = 1 ]; then server_ticks=$(cpu_ticks "$CH_PID"); pg_ticks=$(pg_cpu_ticks); profile_start "$CH_PID" "$name"; fi
    for i in "${!wrk_pids[@]}"; do wait "${wrk_pids[$i]}" || { cat "${files[$i]}" "${files[$i]}.err" >&2; exit 1; }; done
    if [ $one = 1 ]; then
        profile_stop
        server_ticks=$(($(cpu_ticks "$CH_PID") - server_ticks)); pg_ticks=$(($(pg_cpu_ticks) - pg_ticks))
    fi
    for f in "${files[@]}"; do
        if [ -s "$f.err" ]; then echo "$name: non-200 answers:" >&2; sort "$f.err" | uniq -c | head -5 >&2; exit 1; fi
        rate=$(awk -v a="$rate" '/^Requests\/sec/ {printf "%.0f", a + $2}' "$f")
        p50=$(awk -v a="$p50" -v b="$(wrk_ms "$f" 50)" 'BEGIN {print (b + 0 > a + 0 ? b : a)}')
        p99=$(awk -v a="$p99" -v b="$(wrk_ms "$f" 99)" 'BEGIN {print (b + 0 > a + 0 ? b : a)}')
    done
    note "$name.writes" "$rate"; note "$name.p50" "$p50"; note "$name.p99" "$p99"; note "$name.load" "$(load | cut -d' ' -f1)"
    # CPU per write: the server's, and every PostgreSQL process's.
    if [ $one = 1 ]; then
        local writes
        writes=$(awk -v r="$rate" -v s="$seconds" 'BEGIN {printf "%d", r * s}')
        note "$name.server_us" "$(awk -v t="$server_ticks" -v w="$writes" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.0f", t / hz * 1e6 / w}')"
        note "$name.pg_us" "$(awk -v t="$pg_ticks" -v w="$writes" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.0f", t / hz * 1e6 / w}')"
    fi
    log "  $rate writes/s, p50 $p50 ms, p99 $p99 ms"
}

# User+sys clock ticks of every PostgreSQL process of the cluster (postmaster and backends).
pg_cpu_ticks() {
    local pid total=0
    local postmaster
    postmaster=$(head -1 "$pg_data/postmaster.pid")
    for pid in "$postmaster" $(pgrep -P "$postmaster"); do total=$((total + $(cpu_ticks "$pid" 2>/dev/null || echo 0))); done
    echo "$total"
}
psql_do() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }
url_for() { echo "postgresql://chronir@127.0.0.1:$1/$2?sslmode=disable"; }  # url_for PORT DATABASE

pg_start "$work/pg"
proxy_port=$(server_free_port)
"$work/delayproxy" "$proxy_port" "$pg_port" "$delay_us" 7200 2>"$work/proxy.log" &
proxy_pid=$!
server_wait_tcp "$proxy_port"

# The round trip: one client, SELECT 1, directly and through the proxy.
echo 'SELECT 1;' >"$work/select1.sql"
for via in direct proxy; do
    port=$pg_port; [ $via = proxy ] && port=$proxy_port
    pgbench -n -M prepared -c1 -T 3 -f "$work/select1.sql" "$(url_for "$port" postgres)" >"$work/rtt.$via" 2>&1
    note "rtt.$via" "$(awk '/^latency average/ {print $4}' "$work/rtt.$via")"
done
log "round trip: direct $(got rtt.direct) ms, through the proxy $(got rtt.proxy) ms"

psql_do "$(url_for "$pg_port" postgres)" -c "CREATE DATABASE bench_pgbench"
pgbench -i -q -s 10 "$(url_for "$pg_port" bench_pgbench)" >/dev/null 2>&1

labels=()
for pair in $SERVERS; do
    label=${pair%%=*}
    labels+=("$label")
    binary=${pair#*=}
    eval "binary_$label=\$binary"
    CHRONIR_SERVER=$binary
    eval "extra=(\${ARGS_$label:-})"
    psql_do "$(url_for "$pg_port" postgres)" -c "CREATE DATABASE bench_$label"
    CH_DATA_DIR=$work/$label.a CH_LOG=$work/$label.a.log start_chronir "${group_flags[@]}" --database-url "$(url_for "$pg_port" "bench_$label")" "${extra[@]}"
    CH_SEED_DIR=$work/$label.writers seed_chronir "$writers" --no-group --prefix writer $(write_seed)
    write_lua "$work/$label.writers/tokens" >"$work/patch.$label.lua"
    if [ "$subs" -gt 0 ]; then CH_SEED_DIR=$work/$label.subs seed_chronir "$subs" --prefix sub; fi
    server_stop "$CH_PID" TERM
    mkdir -m 700 "$work/$label.b"
    cp "$work/$label.a/server.secret" "$work/$label.b/server.secret"
done

echo "network: ${seconds}s per phase, ${delay_us} us per direction, $runs run(s), servers: $SERVERS; $(nproc) cores, load $(load)"
for run in $(seq 1 "$runs"); do
    for label in "${labels[@]}"; do
        eval "CHRONIR_SERVER=\$binary_$label"
        eval "extra=(\${ARGS_$label:-})"
        direct=$(url_for "$pg_port" "bench_$label")
        proxied=$(url_for "$proxy_port" "bench_$label")
        CH_DATA_DIR=$work/$label.a CH_LOG=$work/$label.a.log start_chronir "${group_flags[@]}" --database-url "$direct" "${extra[@]}"
        write_phase "$label.direct1" "$CH_PORT"
        server_stop "$CH_PID" TERM
        CH_DATA_DIR=$work/$label.a CH_LOG=$work/$label.a.log start_chronir "${group_flags[@]}" --database-url "$proxied" "${extra[@]}"
        a_port=$CH_PORT
        write_phase "$label.proxy1" "$a_port"
        CH_DATA_DIR=$work/$label.b CH_LOG=$work/$label.b.log start_chronir "${group_flags[@]}" --database-url "$proxied" "${extra[@]}"
        write_phase "$label.proxy2" "$a_port" "$CH_PORT"
        if [ "$subs" -gt 0 ]; then delivery_phase "$label.cross" "$CH_PORT" "$a_port" "$work/$label.subs"; fi
        server_stop_all TERM
    done
    for via in proxy direct; do
        port=$pg_port; [ $via = proxy ] && port=$proxy_port
        log "pgbench -N $via ($pgbench_clients clients, ${seconds}s)"
        pgbench -n -N -M prepared -c "$pgbench_clients" -j 2 -T "$seconds" "$(url_for "$port" bench_pgbench)" \
            >"$work/pgbench.$via" 2>&1 || { cat "$work/pgbench.$via" >&2; exit 1; }
        note "pgbench.$via" "$(awk '/^tps/ {printf "%.0f", $3}' "$work/pgbench.$via")"
        log "  $(got "pgbench.$via" | awk -F' / ' '{print $NF}') transactions/s"
    done
done

echo
echo "round trip (pgbench -c1 SELECT 1, average latency): direct $(got rtt.direct) ms, through the proxy $(got rtt.proxy) ms"
echo
echo "| build | phase | writes/s (each run) | p50 ms | p99 ms | server CPU µs per write | PostgreSQL CPU µs per write | load |"
echo "|---|---|---|---|---|---|---|---|"
for label in "${labels[@]}"; do
    for phase in direct1 proxy1 proxy2; do
        echo "| $label | $phase | $(got "$label.$phase.writes") | $(got "$label.$phase.p50") | $(got "$label.$phase.p99") |" \
            "$(got "$label.$phase.server_us") | $(got "$label.$phase.pg_us") | $(got "$label.$phase.load") |"
    done
done
echo "| pgbench -N, $pgbench_clients clients | through the proxy | $(got pgbench.proxy) | | | | | |"
echo "| pgbench -N, $pgbench_clients clients | direct | $(got pgbench.direct) | | | | | |"
if [ "$subs" -gt 0 ]; then
    echo
    echo "| build | cross-instance delivery to $subs subscribers, through the proxy | p50 ms | p99 ms | max ms | under load p50 / p99 ms | deliveries/s | load |"
    echo "|---|---|---|---|---|---|---|---|"
    for label in "${labels[@]}"; do
        n=$label.cross
        echo "| $label | ($latency_runs one at a time, then ${seconds}s with 4 in flight) | $(got "$n.latency_p50_ms") |" \
            "$(got "$n.latency_p99_ms") | $(got "$n.latency_max_ms") | $(got "$n.loaded_latency_p50_ms") / $(got "$n.loaded_latency_p99_ms") |" \
            "$(got "$n.deliveries_per_s") | $(got "$n.load") |"
    done
fi
