#!/usr/bin/env bash
# Attachments under SIGKILL (issue 20, docs/attachments.md#storage): nothing half-stored survives a crash.
#
#   Reliability/attachment-crash.sh
#
# One server on a temporary data directory (binaries: $CHRONIR_BIN_DIR or .build/release or .build/debug):
#   1. a committed 2 MB PDF upload;
#   2. SIGKILL while a 5 MB upload is half sent (its body streamed to attachments/.tmp-*);
#   3. SIGKILL between the content file's store and its row: this script holds the SQLite write lock
#      (BEGIN IMMEDIATE) while a whole upload is sent, waits until its content file appears under
#      attachments/ab/cd/, then kills the server — deterministic, no hook in the server;
#   4. every file aged 8 days (past the 7-day grace), restart with --sweep-period 2, and check: exactly the
#      committed row, its file and thumbnail whole (SHA-256 = name), no .tmp-*, no file without a row, no row
#      for either killed upload, and the committed upload downloads byte-equal.
# Reliability/attachment_crash.py does the client side of each step. Exits non-zero on the first failed check.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Reliability/lib.sh
find_binaries
work=$(mktemp -d)
trap 'server_stop_all; rm -rf "$work"' EXIT
data=$work/data
log=$work/server.log
py=Reliability/attachment_crash.py
flags=(--data-dir "$data" --default-tier premium --password-hashing fast "${no_write_budgets[@]}")
started=$SECONDS

start_server "$log" "${flags[@]}"
python3 "$py" setup "$base" "$data"
python3 "$py" mid-upload "$base" "$data" "$server_pid"
server_stop "$server_pid"

start_server "$log" "${flags[@]}"
python3 "$py" before-row "$base" "$data" "$server_pid"
server_stop "$server_pid"

python3 "$py" age "$data"
start_server "$log" "${flags[@]}" --sweep-period 2
python3 "$py" verify "$base" "$data"
echo "attachment crash: ok in $((SECONDS - started)) s"
