#!/usr/bin/env bash
# The whole test suite under AddressSanitizer (and, on request, ThreadSanitizer), each in its own
# build directory (.build-asan, .build-tsan; gitignored). Fails on any failing test or sanitizer report.
#   .ci/sanitizers.sh [address|thread]…   (default: address)
# ThreadSanitizer is not in the default: it reports races on state guarded by Synchronization.Mutex
# (ReaderPool, HTTPServer's Bookkeeping: both accesses inside `withLock`) because the Linux Mutex's
# futex is invisible to TSan; its closure is inlined, so no suppression can name it.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C.UTF-8
# XCTest's own runner leaks a few objects at exit (no XCTest cases here); nothing of ours is suppressed.
export LSAN_OPTIONS="suppressions=$PWD/Reliability/lsan.supp:print_suppressions=0"
export TSAN_OPTIONS="halt_on_error=1"
sanitizers=("$@")
[ ${#sanitizers[@]} -gt 0 ] || sanitizers=(address)
for s in "${sanitizers[@]}"; do
    case "$s" in address) scratch=.build-asan ;; thread) scratch=.build-tsan ;; *) echo "unknown: $s" >&2; exit 2 ;; esac
    echo "==> swift test --sanitize=$s --scratch-path $scratch  (${SECONDS}s)"
    swift build --build-tests --sanitize="$s" --scratch-path "$scratch"
    swift test --skip-build --sanitize="$s" --scratch-path "$scratch" 2>&1 | tee "$scratch/test-output.txt"
    grep -Eq 'Test run with [1-9][0-9]* tests? .* passed' "$scratch/test-output.txt"
    if grep -q 'Sanitizer' "$scratch/test-output.txt"; then echo "sanitizer report in $s run" >&2; exit 1; fi
done
echo "sanitizers done (${SECONDS}s)"
