#!/usr/bin/env bash
# Builds a libFuzzer harness with swiftc and runs it on a scratch copy of its seed corpus.
#
#   Tests/Fuzz/fuzz.sh http|ws [libFuzzer options, e.g. -runs=100000 | -max_total_time=600]
#
# Build products, the working corpus (seeds plus what the fuzzer finds) and crash artifacts go to
# .build-fuzz/ (gitignored). A crash's reproducer is .build-fuzz/artifacts-<target>/crash-*: rerun it
# with `.build-fuzz/fuzz-<target> <file>`, fix, then commit it into Tests/Fuzz/corpus/<target>/.
# Adding a harness = one case below + Tests/Fuzz/corpus/<name>/ (+ an optional <name>.dict).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # the repository root

usage() { echo "usage: $0 <http|ws> [libFuzzer options…]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
target=$1
shift

case "$target" in
    http) sources=(Sources/Wire/*.swift Tests/Fuzz/FuzzSupport.swift Tests/Fuzz/HTTPParserFuzz.swift) ;;
    ws) sources=(Sources/Wire/*.swift Tests/Fuzz/FuzzSupport.swift Tests/Fuzz/WebSocketFrameFuzz.swift) ;;
    *) usage ;;
esac

out=.build-fuzz
binary=$out/fuzz-$target
corpus=$out/corpus-$target
artifacts=$out/artifacts-$target
log=$out/fuzz-$target.log
mkdir -p "$out" "$corpus" "$artifacts"

linker=()
command -v ld.lld >/dev/null && linker=(-use-ld=lld)  # gold warns about ASan's local symbols
echo "building $binary"
# Wire imports CZlib (permessage-deflate): its module map, and libz.
swiftc -sanitize=fuzzer,address -parse-as-library -swift-version 6 -O -g "${linker[@]}" \
    -I Sources/CZlib -lz "${sources[@]}" -o "$binary"

cp Tests/Fuzz/corpus/"$target"/* "$corpus"/
options=(-artifact_prefix="$artifacts/" -print_final_stats=1)
[[ -f Tests/Fuzz/$target.dict ]] && options+=(-dict="Tests/Fuzz/$target.dict")

echo "running $binary $corpus ${options[*]} $*"
set +e
"$binary" "$corpus" "${options[@]}" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

executions=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1 || true)
crashes=$(find "$artifacts" -type f -name 'crash-*' | wc -l)
echo "fuzz-$target: executions=${executions:-unknown} crash-artifacts=$crashes exit-status=$status"
exit "$status"
