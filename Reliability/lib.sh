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

# python_venv — the interpreter of .build/python-venv, created (python3 -m venv + pip install -r)
# unless its stamp, requirements.installed, equals Tests/Fakes/requirements.txt.
python_venv() {
    local dir=.build/python-venv requirements=Tests/Fakes/requirements.txt
    mkdir -p .build
    (
        flock 9
        if [ ! -x "$dir/bin/python" ] || ! cmp -s "$requirements" "$dir/requirements.installed"; then
            echo "creating $dir from $requirements" >&2
            rm -rf "$dir"
            python3 -m venv "$dir"
            "$dir/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$requirements"
            cp "$requirements" "$dir/requirements.installed"
        fi
    ) 9>.build/python-venv.lock >&2
    echo "$PWD/$dir/bin/python"
}

# make_test_ca DIR — a throwaway CA (DIR/ca.pem) and a server certificate for 127.0.0.1 and localhost
# (DIR/server.pem, DIR/server.key; P-256, two days), as TestSupport's TestCertificateAuthority makes
# them; openssl's output in DIR/openssl.log. Fails when openssl does.
make_test_ca() {
    local dir=$1
    local key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
    {
        openssl req -x509 "${key[@]}" -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 -subj "/CN=Chronir Reliability CA" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
        openssl req "${key[@]}" -keyout "$dir/server.key" -out "$dir/server.csr" -subj /CN=localhost
        printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1" "basicConstraints=critical,CA:FALSE" \
            "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >"$dir/server.ext"
        openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -set_serial 1 -days 2 \
            -extfile "$dir/server.ext" -out "$dir/server.pem"
    } >"$dir/openssl.log" 2>&1
}
