# Shared helpers of the Benchmarks/*.sh scripts (sourced, not run).
#
# Binaries (each script builds what is not given, in release mode):
#   CHRONIR_SERVER   chronir-server binary   (default: swift build -c release → .build/release/chronir-server)
#   CHRONIR_WS_ECHO  chronir-ws-echo binary  (default: .build/release/chronir-ws-echo)
#   HUMMINGBIRD_WS   the reference server    (default: Benchmarks/hummingbird-ws/.build/release/HummingbirdWS;
#                    its first release build takes several minutes)
#   RUNS             repetitions; the table shows medians (default 3)
# The load generator (Benchmarks/loadgen/wsload.c) is compiled with gcc -O2 into a temp dir.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/server.sh  # server_start, server_stop_all, server_free_port, server_wait_http/tcp
RUNS=${RUNS:-3}
work=$(mktemp -d)
pids=()
cleanup() {
    server_stop_all TERM
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    [ -n "${KEEP_WORK:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }  # user+sys clock ticks of a process
wait_idle() {  # wait_idle PID: until the process used < 10% of a core over 0.5 s (≤ 30 s), so a
    # server still working off the previous measurement's backlog does not steal the next one's CPU
    local a b hz
    hz=$(getconf CLK_TCK)
    for _ in $(seq 1 60); do
        a=$(cpu_ticks "$1"); sleep 0.5; b=$(cpu_ticks "$1")
        [ $(((b - a) * 20)) -lt "$hz" ] && return 0
    done
}
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "n/a"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
field() { awk -v k="$1" '$1==k {print $2}' "$2"; }  # field KEY FILE: value of a `key value` line
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b+0 == 0) print "n/a"; else printf "%.2f", a/b }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

build_binaries() {  # resolves CHRONIR_SERVER, CHRONIR_WS_ECHO, HUMMINGBIRD_WS, WSLOAD (builds missing ones)
    if [ -z "${CHRONIR_SERVER:-}" ] || [ -z "${CHRONIR_WS_ECHO:-}" ]; then
        swift build -c release --product chronir-server >/dev/null
        swift build -c release --product chronir-ws-echo >/dev/null
    fi
    CHRONIR_SERVER=${CHRONIR_SERVER:-$PWD/.build/release/chronir-server}
    CHRONIR_WS_ECHO=${CHRONIR_WS_ECHO:-$PWD/.build/release/chronir-ws-echo}
    if [ -z "${HUMMINGBIRD_WS:-}" ]; then
        swift build -c release --package-path Benchmarks/hummingbird-ws >/dev/null
        HUMMINGBIRD_WS=$PWD/Benchmarks/hummingbird-ws/.build/release/HummingbirdWS
    fi
    WSLOAD=$work/wsload
    gcc -O2 -o "$WSLOAD" Benchmarks/loadgen/wsload.c
}

start_hummingbird() {  # sets HB_PORT, HB_PID
    HB_PORT=$(server_free_port)
    "$HUMMINGBIRD_WS" "$HB_PORT" 2>"$work/hummingbird.log" &
    HB_PID=$!
    pids+=("$HB_PID")
    server_wait_http "$HB_PORT" "$HB_PID"
}

start_ws_echo() {  # sets ECHO_PORT, ECHO_PID (no compression: the load generator offers none anyway)
    ECHO_PORT=$(server_free_port)
    "$CHRONIR_WS_ECHO" --port "$ECHO_PORT" --no-deflate >"$work/echo.out" 2>"$work/echo.log" &
    ECHO_PID=$!
    pids+=("$ECHO_PID")
    server_wait_tcp "$ECHO_PORT"
}

# Benchmarks write as few users as fast as they can on purpose: the per-user write budgets
# (docs/security-budgets.md) are off, or every run would measure 429s.
# CH_DATA_DIR (default $work/data) and CH_LOG (default $work/chronir.log) let a script start several.
start_chronir() {  # start_chronir EXTRA_FLAGS...: sets CH_PORT, CH_PID (benchmark accounts: fast hashing, no write budgets)
    local data=${CH_DATA_DIR:-$work/data}
    mkdir -p -m 700 "$data"
    # One load generator on 127.0.0.1 plays every client: lift the per-address limits and the
    # per-user write budgets.
    CHRONIR_REGISTRATIONS_PER_IP_PER_HOUR=1000000 CHRONIR_REGISTRATIONS_PER_HOUR=1000000 \
        CHRONIR_MAX_CONNECTIONS_PER_IP=10000 CHRONIR_MAX_WEBSOCKETS_PER_IP=10000 \
        server_start "${CH_LOG:-$work/chronir.log}" "$CHRONIR_SERVER" --data-dir "$data" --public-dir none \
        --default-tier premium --password-hashing fast --write-budget-per-minute 0 --write-bytes-per-hour 0 "$@"
    CH_PORT=$server_port
    CH_PID=$server_pid
}

seed_chronir() {  # seed_chronir USERS [--no-group] [--prefix NAME] [--personal-alarm]: writes ${CH_SEED_DIR:-$work/seed}/{tokens,owner,group}
    python3 Benchmarks/loadgen/chronir_seed.py "$CH_PORT" "$1" "${CH_SEED_DIR:-$work/seed}" "${@:2}"
}

# PROFILE_DIR=DIR: chronir's first measured run is sampled with `perf record -F 999 -g` (cpu-clock;
# this VM has no hardware counters) and DIR/NAME.perf.txt gets the flat report (self time by symbol,
# demangled with swift-demangle).
profile_start() {  # profile_start PID NAME
    [ -n "${PROFILE_DIR:-}" ] && [ ! -e "$PROFILE_DIR/$2.perf.data" ] || return 0
    mkdir -p "$PROFILE_DIR"
    perf record -e cpu-clock -F 999 -g -p "$1" -o "$PROFILE_DIR/$2.perf.data" >/dev/null 2>&1 &
    PERF_PID=$!
    PERF_NAME=$2
    sleep 0.5
}
profile_stop() {
    [ -n "${PERF_PID:-}" ] || return 0
    kill -INT "$PERF_PID"; wait "$PERF_PID" || true
    profile_report "$PROFILE_DIR/$PERF_NAME.perf.data" "$PROFILE_DIR/$PERF_NAME.perf.txt"
    PERF_PID=
}
profile_report() {  # profile_report PERF_DATA TEXT: the flat report (self time by symbol, demangled)
    perf report -i "$1" --no-children --sort dso,symbol --stdio -g none 2>/dev/null \
        | grep -v '^$' | grep -v '^ *|' | grep -v '^ *-' | head -80 | swift demangle --simplified >"$2" || true
}

# wrk script: request N of wrk thread K carries token 2N + K mod WRITERS (every caller runs `wrk -t2`):
# the two threads take disjoint halves of the tokens, so they never write one account's row at the
# same time (with one counter each they sent the same token at once and the row locks of
# `.concurrent` writes made them queue). Every non-200 answer is reported on stderr.
# WRITE=me (default): `PATCH /v1/me {"display_name": …}`; WRITE=alarm: `PATCH /v1/me/alarms/{id}
# {"title": …}`, the token's own personal alarm (seeded with `seed_chronir … --personal-alarm`);
# WRITE=shared: `PATCH /v1/groups/{id}/alarms/{aid} {"title": …}`, the shared alarm in the token's own
# group (`--shared-alarm`: TOKENS_FILE's directory holds their paths, `shared_alarms`); WRITE=device:
# `PUT /v1/me/devices/phone`, an iPhone's APNs token of the account's own (what every app start
# sends; the first of each account creates it, 201).
write_seed() {  # write_seed: the seed_chronir flag WRITE needs (none for WRITE=me)
    case "${WRITE:-me}" in
    alarm) echo --personal-alarm ;;
    shared) echo --shared-alarm ;;
    esac
}
write_what() {  # write_what: the request WRITE measures, for the reports
    case "${WRITE:-me}" in
    alarm) echo "PATCH /v1/me/alarms/{id}" ;;
    shared) echo "PATCH /v1/groups/{id}/alarms/{aid}" ;;
    device) echo "PUT /v1/me/devices/{id}" ;;
    *) echo "PATCH /v1/me" ;;
    esac
}
write_lua() {  # write_lua TOKENS_FILE > script
    printf 'local tokens = {'
    sed 's/.*/"&",/' "$1" | tr -d '\n'
    printf '}\nlocal paths = {'
    if [ "${WRITE:-me}" = shared ]; then sed 's/.*/"&",/' "$(dirname "$1")/shared_alarms" | tr -d '\n'; fi
    printf '}\n'
    printf 'local alarm = %s\n' "$([ "${WRITE:-me}" = alarm ] && echo true || echo false)"
    printf 'local device = %s\n' "$([ "${WRITE:-me}" = device ] && echo true || echo false)"
    cat <<'LUA'
local threads = 0
setup = function(thread)
    thread:set("lane", threads)
    threads = threads + 1
end
local counter = 0
request = function()
    counter = counter + 1
    local index = ((counter * 2 + (lane or 0)) % #tokens) + 1
    local headers = {["Authorization"] = "Bearer " .. tokens[index], ["Content-Type"] = "application/json"}
    if #paths > 0 then
        return wrk.format("PATCH", paths[index], headers, '{"title":"Filter ' .. counter .. '"}')
    end
    if device then
        return wrk.format("PUT", "/v1/me/devices/phone", headers,
            string.format('{"platform":"ios","provider":"apns","token":"%064x","app_version":"%d"}', index, counter))
    end
    if alarm then
        return wrk.format("PATCH", string.format("/v1/me/alarms/00000000-0000-0000-0000-%012x", index), headers,
            '{"title":"Rent ' .. counter .. '"}')
    end
    return wrk.format("PATCH", "/v1/me", headers, '{"display_name":"writer ' .. counter .. '"}')
end
response = function(status, headers, body)
    if status ~= 200 and not (device and status == 201) then io.stderr:write("status " .. status .. ": " .. body .. "\n") end
end
LUA
}

# delivery_phase NAME SUB_PORT HTTP_PORT SEED_DIR: mutation → delivery latency (wsload fanout): $subs
# sockets on SUB_PORT subscribed to the seeded group, its owner renaming it through HTTP_PORT,
# $latency_runs mutations one at a time then $seconds with 4 in flight. Needs WSLOAD and the caller's
# `note` and `log`; notes NAME.{latency_p50_ms,latency_p99_ms,…,load}.
delivery_phase() {
    local name=$1 sub_port=$2 http_port=$3 seed=$4 out=$work/fanout.$1
    local group owner
    group=$(cat "$seed/group"); owner=$(cat "$seed/owner")
    log "delivery: $name ($subs subscribers on :$sub_port, mutations on :$http_port)"
    "$WSLOAD" fanout --port "$sub_port" --http-port "$http_port" --path /v1/realtime --tokens "$seed/tokens" \
        --subs "$subs" --subscribe "{\"op\":\"subscribe\",\"topic\":\"group:$group\"}" \
        --method PATCH --target "/v1/groups/$group" --auth "$owner" --body '{"name":"bench %d"}' \
        --latency-runs "$latency_runs" --seconds "$seconds" --inflight 4 >"$out" 2>"$out.err" \
        || { echo "wsload fanout failed ($name):" >&2; cat "$out" "$out.err" >&2; exit 1; }
    [ "$(field latency_timeouts "$out")" = 0 ] || echo "warning: $name: $(field latency_timeouts "$out") mutations not delivered to every subscriber within 5 s" >&2
    local k
    for k in latency_p50_ms latency_p99_ms latency_max_ms deliveries_per_s loaded_latency_p50_ms loaded_latency_p99_ms subscribe_s; do
        note "$name.$k" "$(field "$k" "$out")"
    done
    note "$name.load" "$(load | cut -d' ' -f1)"
}
