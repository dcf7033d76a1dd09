#!/usr/bin/env bash
# deploy/ follows the code: the Debian packages the built binaries need are the ones the container
# recipe installs and the ones docs/operations.md tells a systemd host to install.
#
#  1. Every shared library the binaries load — `ldd` of chronir-server and chronir-admin, plus the
#     libvips modules the image relies on for HEIC and PDF (dlopen'ed, so not in the binary's `ldd`)
#     — is mapped to its Debian package with `dpkg -S`. A library no package owns must be the Swift
#     runtime's (the recipe links it statically, `--static-swift-stdlib`); anything else fails.
#  2. deploy/Containerfile's runtime stage (its last FROM) must name every package the binaries
#     link directly (ELF NEEDED) except the base image's own (Priority required and their Depends:
#     libc6, libgcc-s1),
#     and every package of step 1 must be in the Depends closure of what it names plus the base
#     (`apt-get install --no-install-recommends` installs exactly that closure).
#  3. The same for the package list in docs/operations.md between `<!-- runtime-packages -->` and
#     `<!-- /runtime-packages -->` (what a systemd host installs before deploy/chronir.service).
#  4. The recipe's build stage installs every `-dev` package scripts/setup's `build=(…)` names
#     (the README's list: what Package.swift's system-library targets link).
# Needs a Debian host with the build packages installed (scripts/setup run). Offline: apt-cache reads
# the installed packages only. Usage: .ci/deploy-check.sh [PATH/TO/chronir-server]  (chronir-admin:
# the same directory)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-.build/debug/chronir-server}")
admin="$(dirname "$bin")/chronir-admin"
containerfile=${CHRONIR_CONTAINERFILE:-deploy/Containerfile}
operations=${CHRONIR_OPERATIONS_DOC:-docs/operations.md}
failures=0
fail() { echo "deploy-check: $*" >&2; failures=$((failures + 1)); }

[ -x "$bin" ] || { echo "deploy-check: no binary at $bin (build first)" >&2; exit 2; }
[ -x "$admin" ] || { echo "deploy-check: no chronir-admin beside $bin" >&2; exit 2; }
command -v dpkg >/dev/null || { echo "deploy-check: needs dpkg (a Debian host)" >&2; exit 2; }

# Where the toolchain keeps the Swift runtime (libswiftCore.so, libFoundation.so, …).
swift_runtime=$(dirname "$(realpath "$(command -v swift)")")/../lib/swift/linux
swift_runtime=$(realpath "$swift_runtime")

# The package list of one Dockerfile stage's `apt-get install` (stage: build | runtime).
stage_packages() {
    python3 - "$containerfile" "$1" <<'EOF'
import re, sys
text = open(sys.argv[1]).read().replace("\\\n", " ")
stages = re.split(r"(?m)^FROM\s", text)[1:]
stage = stages[0] if sys.argv[2] == "build" else stages[-1]
names = []
for m in re.finditer(r"apt-get install([^&\n]*)", stage):
    names += [w for w in m.group(1).split() if not w.startswith("-")]
print(" ".join(names))
EOF
}

# The packages named between the markers of docs/operations.md.
doc_packages() {
    python3 - "$operations" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"<!-- runtime-packages -->(.*?)<!-- /runtime-packages -->", text, re.S)
if not m:
    sys.exit(sys.argv[1] + ": no <!-- runtime-packages --> … <!-- /runtime-packages --> block")
block = m.group(1).replace("\\\n", " ")
m = re.search(r"apt-get install([^\n`]*)", block)
print(" ".join(w for w in (m.group(1).split() if m else []) if not w.startswith("-")))
EOF
}

# Every package in the Depends/Pre-Depends closure of the arguments (installed packages only).
closure() {
    apt-cache depends --recurse --important --installed "$@" 2>/dev/null \
        | sed -E 's/^ *(\|)?(Depends|PreDepends): //; s/[<>]//g; s/:any$//; s/^ +//' | sort -u
}

# 1. libraries → packages.
modules=()
vips=$(ldd "$bin" | awk '/libvips\.so/ {print $3}')
if [ -n "$vips" ]; then
    for name in heif poppler; do
        module=$(ls "$(dirname "$(realpath "$vips")")"/vips-modules-*/vips-$name.so 2>/dev/null | head -1 || true)
        if [ -n "$module" ]; then modules+=("$module"); else fail "libvips has no vips-$name.so module here"; fi
    done
fi
declare -A lddout=() owners=() all=() direct=()
libs=()
for file in "$bin" "$admin" "${modules[@]}"; do
    lddout[$file]=$(ldd "$file")
    while read -r lib; do
        case "$(realpath "$lib")" in "$swift_runtime"/*) continue ;; esac
        libs+=("$lib:$file")
    done < <(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"${lddout[$file]}")
done
# One dpkg -S for every library under each name it may be listed as (usrmerge: ldd may say /lib,
# dpkg /usr/lib, or the reverse).
candidates() { local r; r=$(realpath "$1"); printf '%s\n' "$1" "$r" "/usr$1" "/usr$r" "${1#/usr}" "${r#/usr}"; }
while IFS= read -r line; do
    owners[${line#*: }]=${line%%:*}
done < <(for entry in "${libs[@]}"; do candidates "${entry%%:*}"; done | sort -u | xargs dpkg -S 2>/dev/null || true)
owner() {
    local candidate
    for candidate in $(candidates "$1"); do
        [ -n "${owners[$candidate]:-}" ] && { echo "${owners[$candidate]}"; return 0; }
    done
    return 1
}
for entry in "${libs[@]}"; do
    lib=${entry%%:*}
    if pkg=$(owner "$lib"); then all[$pkg]=1; else fail "$lib (needed by $(basename "${entry#*:}")) belongs to no package"; fi
done
for file in "$bin" "$admin"; do
    for needed in $(readelf -d "$file" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p'); do
        lib=$(awk -v n="$needed" '$1 == n && $3 ~ /^\// {print $3} $1 ~ /^\// && $1 ~ ("/" n "$") {print $1}' <<<"${lddout[$file]}")
        [ -n "$lib" ] || { fail "$(basename "$file") needs $needed, which ldd does not resolve"; continue; }
        case "$(realpath "$lib")" in "$swift_runtime"/*) continue ;; esac
        pkg=$(owner "$lib") && direct[$pkg]=1
    done
done
[ ${#all[@]} -gt 0 ] || fail "ldd found no libraries (a static binary?)"

# What debian:*-slim has before the recipe installs anything: Priority required (+ apt).
base=$(dpkg-query -W -f='${Package} ${Priority} ${Essential}\n' | awk '$2 == "required" || $3 == "yes" {print $1}')
base="$base apt"
# shellcheck disable=SC2086
base_reach=$(closure $base)

# 2./3. a package list against the libraries.
check_list() {
    local what=$1 listed=$2 pkg
    [ -n "$listed" ] || { fail "$what names no packages"; return; }
    local reach
    # shellcheck disable=SC2086
    reach=$(closure $listed $base)
    for pkg in "${!direct[@]}"; do
        if ! grep -qx "$pkg" <<<"$(tr ' ' '\n' <<<"$listed")" && ! grep -qx "$pkg" <<<"$base_reach"; then
            fail "$what does not name $pkg (the binaries link its library directly)"
        fi
    done
    for pkg in "${!all[@]}"; do
        grep -qx "$pkg" <<<"$reach" || fail "$what does not install $pkg (a library of it is loaded; name it or a package depending on it)"
    done
}
runtime=$(stage_packages runtime)
check_list "$containerfile's runtime stage" "$runtime"
documented=$(doc_packages) || { fail "$operations: no runtime-packages block"; documented=""; }
check_list "$operations's runtime-packages block" "$documented"

# 4. the build stage against scripts/setup's build list.
build_stage=" $(stage_packages build) "
for pkg in $(sed -nE 's/^build=\((.*)\)/\1/p' scripts/setup); do
    [[ "$build_stage" == *" $pkg "* ]] || fail "$containerfile's build stage does not install $pkg (scripts/setup's build list)"
done

if [ "$failures" -gt 0 ]; then
    echo "deploy-check: $failures problem(s)" >&2
    exit 1
fi
echo "deploy-check: ${#all[@]} packages behind $(basename "$bin"), chronir-admin and the libvips heif/poppler modules;" \
    "direct: $(printf '%s ' "${!direct[@]}" | xargs -n1 | sort | xargs); all installed by the runtime stage and named in $operations"
