#!/usr/bin/env bash
# The container recipe's runtime stage, run for real without a registry (docs/operations.md#deploying):
#  1. a Debian 12 root from debootstrap (--variant=minbase, as debian:bookworm-slim; kept in
#     .build/container/ and made once) becomes the local image localhost/chronir-ci/debian:bookworm-slim;
#  2. buildah (Debian's, --isolation chroot: crun cannot run here) runs deploy/Containerfile's runtime
#     stage's own RUN line in a container of it — apt-get install of the runtime packages, the chronir
#     user — and copies in what the stage copies (the binaries, Public/);
#  3. chronir-server starts in it as the chronir user with the stage's ENV, answers /healthz, takes a
#     HEIC photo (stored as JPEG) and a PDF (thumbnail by poppler) as attachments, shows an alarm in
#     Europe/Madrid (tzdata), and stops on SIGTERM; chronir-admin runs.
# The binaries are the debug build's, so the Swift runtime libraries it links are copied in beside them:
# the stand-in for the recipe's --static-swift-stdlib (there is no Swift toolchain image in Debian to
# run the build stage from). Needs root and network access to a Debian mirror (apt-get, debootstrap).
# Usage: .ci/container.sh [PATH/TO/chronir-server]  (chronir-admin: the same directory)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bin=$(realpath "${1:-.build/debug/chronir-server}")
admin="$(dirname "$bin")/chronir-admin"
cache=$repo/.build/container
containerfile=${CHRONIR_CONTAINERFILE:-deploy/Containerfile}
image=localhost/chronir-ci/debian:bookworm-slim
fail() { echo "container: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "needs root (buildah, debootstrap)"
need=()
command -v buildah >/dev/null || need+=(buildah)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
mkdir -p "$cache"

# 1. the base image.
if ! buildah images -q "$image" 2>/dev/null | grep -q .; then
    if [ ! -x "$cache/rootfs/bin/sh" ]; then
        rm -rf "$cache/rootfs"
        debootstrap --variant=minbase bookworm "$cache/rootfs" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 \
            || fail "debootstrap failed: $(tail -3 "$cache/debootstrap.log")"
    fi
    base=$(buildah from scratch)
    buildah copy "$base" "$cache/rootfs" / >/dev/null
    buildah commit -q "$base" "$image" >/dev/null
    buildah rm "$base" >/dev/null
fi

# 2. the runtime stage: its RUN line as written, then what its COPY lines copy.
container=chronir-ci-runtime-$$
server_pid=""
work=$(mktemp -d)
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    buildah rm "$container" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
run_line=$(python3 - "$containerfile" <<'EOF'
import re, sys
text = open(sys.argv[1]).read().replace("\\\n", " ")
stage = re.split(r"(?m)^FROM\s", text)[-1]
runs = re.findall(r"(?m)^RUN\s+(.*)$", stage)
if len(runs) != 1:
    sys.exit(f"the runtime stage has {len(runs)} RUN lines; this script runs exactly one")
print(runs[0])
EOF
)
buildah from --name "$container" "$image" >/dev/null
buildah run --isolation chroot "$container" -- sh -c "$run_line" >"$work/run.log" 2>&1 \
    || fail "$containerfile: the runtime stage's RUN failed: $(tail -5 "$work/run.log")"
buildah copy "$container" "$bin" "$admin" /usr/local/bin/ >/dev/null
buildah copy "$container" Public /usr/local/share/chronir/Public >/dev/null
swift_libs=$(ldd "$bin" "$admin" | awk '$3 ~ /\/lib\/swift\// {print $3}' | sort -u)
for lib in $swift_libs; do buildah copy "$container" "$lib" "$(dirname "$lib")/" >/dev/null; done
missing=$(buildah run --isolation chroot "$container" -- sh -c \
    'for f in /usr/local/bin/chronir-server /usr/local/bin/chronir-admin /usr/lib/*/vips-modules-*/vips-heif.so \
        /usr/lib/*/vips-modules-*/vips-poppler.so; do ldd "$f" | sed -n "s|^|$f: |; /not found/p"; done')
[ -z "$missing" ] || fail "libraries missing in the runtime stage: $missing"

# 3. run it as the stage runs it: its ENV, the chronir user, /var/lib/chronir.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
stage_env=$(python3 - "$containerfile" <<'EOF'
import re, sys
text = open(sys.argv[1]).read().replace("\\\n", " ")
stage = re.split(r"(?m)^FROM\s", text)[-1]
print(" ".join(p for m in re.findall(r"(?m)^ENV\s+(.*)$", stage) for p in m.split()))
EOF
)
# shellcheck disable=SC2086
buildah run --isolation chroot --user chronir "$container" -- env $stage_env CHRONIR_HOST=127.0.0.1 CHRONIR_PORT="$port" \
    CHRONIR_PASSWORD_HASHING=fast CHRONIR_LOG_FORMAT=text /usr/local/bin/chronir-server >"$work/server.log" 2>&1 &
base=http://127.0.0.1:$port
for _ in $(seq 100); do
    curl -sf "$base/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -sf "$base/healthz" >/dev/null || fail "no /healthz from the server in the container: $(tail -5 "$work/server.log")"
server_pid=$(ss -ltnpH "sport = :$port" | sed -nE 's/.*pid=([0-9]+).*/\1/p' | head -1)
[ -n "$server_pid" ] || fail "no process listens on $port"
source .ci/lib.sh
token=$(api 201 POST /v1/auth/register '{"email":"ana@example.com","password":"correct horse battery","display_name":"Ana"}' \
    | json "['token']")
group=$(api 201 POST /v1/groups '{"name":"Flat"}' "$token" | json "['group']['id']")
alarm=$(api 201 POST "/v1/groups/$group/alarms" \
    '{"title":"Rent","schedule":{"type":"custom_days","interval_days":1,"start_date":"2026-01-01"},"times_of_day":[{"hour":10,"minute":0}],"timezone":"Europe/Madrid"}' \
    "$token" | json "['id']")

# A HEIC made by the host's libvips (the build's libvips-dev) and a one-page PDF.
cat >"$work/heic.c" <<'EOF'
#include <vips/vips.h>
int main(int argc, char **argv) {
    VipsImage *black, *grey;
    if (VIPS_INIT(argv[0]) || vips_black(&black, 64, 48, "bands", 3, NULL) || vips_linear1(black, &grey, 1.0, 128.0, NULL)) return 1;
    return vips_heifsave(grey, argv[1], "compression", VIPS_FOREIGN_HEIF_COMPRESSION_HEVC, NULL) ? 2 : 0;
}
EOF
# shellcheck disable=SC2046
cc "$work/heic.c" -o "$work/heic" $(pkg-config --cflags --libs vips) && "$work/heic" "$work/photo.heic" || fail "could not make a HEIC here"
python3 - "$work/page.pdf" <<'EOF'
import sys
stream = b"0 0 1 rg 10 10 180 80 re f"
objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
           b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R >>",
           b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"]
out, offsets = b"%PDF-1.4\n", []
for number, body in enumerate(objects, 1):
    offsets.append(len(out))
    out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
xref = len(out)
out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
open(sys.argv[1], "wb").write(out)
EOF
upload() { # TYPE FILE → the attachment JSON (fails unless 201)
    local got
    got=$(curl -s -o "$work/body" -w '%{http_code}' -X POST "$base/v1/groups/$group/alarms/$alarm/attachments" \
        -H "Authorization: Bearer $token" -H "Content-Type: $1" --data-binary "@$2")
    [ "$got" = 201 ] || fail "upload of $1: status $got: $(cat "$work/body")"
    cat "$work/body"
}
heic=$(upload image/heic "$work/photo.heic")
[ "$(json "['file_type']" <<<"$heic")" = image/jpeg ] || fail "the HEIC was not stored as JPEG: $heic"
pdf=$(upload application/pdf "$work/page.pdf")
[ "$(json "['thumbnail']['width']" <<<"$pdf")" = 200 ] || fail "the PDF has no thumbnail: $pdf"
next=$(api 200 GET "/v1/groups/$group/alarms/$alarm" "" "$token" | json "['next_fire_at']")
# 10:00 in Europe/Madrid: 09:00Z in winter, 08:00Z in summer (without tzdata the zone is refused at creation).
case "$next" in *T09:00:00.000Z | *T08:00:00.000Z) ;; *) fail "10:00 in Europe/Madrid should be 08:00 or 09:00Z, got $next" ;; esac
buildah run --isolation chroot --user chronir "$container" -- /usr/local/bin/chronir-admin --help >/dev/null \
    || fail "chronir-admin does not run in the container"

kill -TERM "$server_pid"
for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$server_pid" 2>/dev/null || fail "the server did not stop on SIGTERM"
server_pid=""
grep -q "stopped" "$work/server.log" || fail "no 'stopped' line after SIGTERM: $(tail -3 "$work/server.log")"
echo "container: the runtime stage of deploy/Containerfile on a debootstrap root (buildah $(buildah --version | awk '{print $3}')," \
    "isolation chroot): server up, HEIC stored as JPEG, PDF thumbnail, Europe/Madrid, SIGTERM stop, chronir-admin runs" \
    "($SECONDS s)"
