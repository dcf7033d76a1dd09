#!/usr/bin/env bash
# Writes/s and write latency through HTTP: `PATCH /v1/me {"display_name": …}` with wrk, at
# `--durability normal` and `full`, alternating in one run (issue 23). WRITE=alarm: each account
# edits a personal alarm of its own instead (`PATCH /v1/me/alarms/{id}`, Benchmarks/lib.sh);
# WRITE=shared: the shared alarm of a group of its own (`PATCH /v1/groups/{id}/alarms/{aid}`);
# WRITE=device: its phone's registration (`PUT /v1/me/devices/phone`).
#
#   Benchmarks/writes.sh [SECONDS] [WRITERS] [CONNECTIONS]        (defaults 10 64 16)
#   RUNS=3 CHRONIR_SERVER=… BASELINE_SERVER=… PROFILE_DIR=… Benchmarks/writes.sh
#
# One fresh release server per durability (and per binary: BASELINE_SERVER adds the same pair for
# another chronir-server binary, "before"), each seeded with WRITERS accounts (no group; per-user
# write budgets off, default log level). Each run: `wrk -t2 -cCONNECTIONS -dSECONDS --latency`, the
# requests rotating over the WRITERS tokens; every non-200 answer is counted (the run fails on any).
# The servers take turns in an order that alternates from run to run; the table gives medians of
# RUNS, with p50/p99 latency, and the load average beside every run. PROFILE_DIR=DIR adds an uncounted
# `perf record -g` run of the first server (Benchmarks/lib.sh). Needs wrk, gcc, python3.
source "$(dirname "$0")/lib.sh"
seconds=${1:-10}
writers=${2:-64}
connections=${3:-16}
if [ -z "${CHRONIR_SERVER:-}" ]; then
    swift build -c release --product chronir-server >/dev/null
    CHRONIR_SERVER=$PWD/.build/release/chronir-server
fi

wrk_ms() {  # wrk_ms FILE PERCENT: wrk's latency percentile in milliseconds (wrk prints us, ms or s)
    awk -v p="$2%" '$1 == p { v = $2; if (v ~ /us$/) printf "%.2f", v / 1000; else if (v ~ /ms$/) printf "%.2f", v + 0; else printf "%.2f", v * 1000; print "" }' "$1"
}

names=()
declare -A port_of pid_of
add() {  # add NAME BINARY DURABILITY
    CHRONIR_SERVER=$2 CH_DATA_DIR=$work/data-$1 CH_LOG=$work/$1.log start_chronir --durability "$3"
    port_of[$1]=$CH_PORT
    pid_of[$1]=$CH_PID
    CH_SEED_DIR=$work/seed-$1 seed_chronir "$writers" --no-group $(write_seed) >/dev/null
    write_lua "$work/seed-$1/tokens" >"$work/$1.lua"
    names+=("$1")
}
add normal "$CHRONIR_SERVER" normal
add full "$CHRONIR_SERVER" full
if [ -n "${BASELINE_SERVER:-}" ]; then
    add normal-before "$BASELINE_SERVER" normal
    add full-before "$BASELINE_SERVER" full
fi

measure() {  # measure NAME RUN
    local name=$1 run=$2 out=$work/$1.$2
    wait_idle "${pid_of[$name]}"
    [ "$run" = profile ] && profile_start "${pid_of[$name]}" "$name"
    wrk -t2 -c"$connections" -d"${seconds}s" --latency -s "$work/$name.lua" "http://127.0.0.1:${port_of[$name]}" \
        >"$out" 2>"$out.err"
    profile_stop
    if [ -s "$out.err" ]; then
        echo "$name: $(wc -l <"$out.err") non-200 answers, first: $(head -1 "$out.err")" >&2
        exit 1
    fi
    awk '/Requests\/sec/ {printf "%.0f\n", $2}' "$out" >"$out.rps"
    wrk_ms "$out" 50 >"$out.p50"
    wrk_ms "$out" 99 >"$out.p99"
    printf '%-14s run %s  %6s writes/s  p50 %s ms  p99 %s ms  load %s\n' \
        "$name" "$run" "$(cat "$out.rps")" "$(cat "$out.p50")" "$(cat "$out.p99")" "$(load)"
}

echo "writes: $(write_what), wrk -t2 -c$connections -d${seconds}s over $writers accounts; $(nproc) cores, $RUNS runs, alternating"
if [ -n "${PROFILE_DIR:-}" ]; then measure "${names[0]}" profile; fi
for run in $(seq 1 "$RUNS"); do
    for i in "${!names[@]}"; do measure "${names[$(((i + run - 1) % ${#names[@]}))]}" "$run"; done
done
med() { cat "$work/$1".[0-9]."$2" | median; }
echo
echo "| server | writes/s | p50 | p99 |"
echo "|---|---|---|---|"
for name in "${names[@]}"; do
    echo "| $name | $(med "$name" rps) | $(med "$name" p50) ms | $(med "$name" p99) ms |"
done
echo "(medians of $RUNS runs; full/normal: $(ratio "$(med full rps)" "$(med normal rps)"); load at the end $(load))"
