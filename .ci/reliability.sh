#!/usr/bin/env bash
# Reliability checks that fit CI (Reliability/README.md), against the built binaries in
# ${1:-.build/debug}: crash durability (20 SIGKILLs under write load), brute-force budgets, and slow
# and hostile clients (1,000 slowloris, 1,000 WebSocket clients that never read, malformed frames, a
# connection burst past the limit) with the normal client's p99 < 50 ms, and PostgreSQL: two
# instances, then three behind nginx (cross-instance delivery, SIGKILL of one under load, the
# sweeper once per period), and notifications end to end on the real clock (an alarm at the next
# minute to the webhook and Web Push fakes; a completion committed just before a SIGKILL sent after
# the restart), and attachments killed mid-upload and before their row (nothing half-stored after the
# sweep), and failovers under load to a synchronous standby (every acknowledged write present and
# delivered through at most a resume) and to an asynchronous one behind the primary (lost writes
# counted, every subscriber of a lost change reset, no silent gap). Storage failures (disk
# full / read-only → 503) are unit tests (StorageFailureTests) run by `swift test`. The 10-minute
# soak is nightly-style: Reliability/soak.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export CHRONIR_BIN_DIR=${1:-.build/debug}
need=()
command -v python3 >/dev/null || need+=(python3)
command -v openssl >/dev/null || need+=(openssl)  # notifications.sh: its throwaway CA
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
step() { printf '\n--> %s  (%ss)\n' "$*" "$SECONDS"; }

step "crash durability: 20 SIGKILLs under write load"
Reliability/crash.sh 20 normal
step "crash durability on PostgreSQL: 10 SIGKILLs of the server, every other one with PostgreSQL crashed too (issue 16)"
Reliability/crash.sh 10 postgres
step "notifications end to end: an alarm due at the next minute reaches the webhook once and Web Push decrypted; a completion committed before SIGKILL is sent after the restart (issue 17)"
Reliability/notifications.sh
step "brute force: invite codes and passwords, 1 user / many users / 20 client IPs"
Reliability/bruteforce.sh 20
step "slow and hostile clients while a normal client measures p99"
Reliability/hostile.sh 40 1000 1000 2000 2500
step "red team findings (issue 15): login lockout, secrets in logs, erased accounts, suspension oracle, dotfiles"
Reliability/redteam.sh
step "connection and registration limits from one client address (issue 15 #1, #2)"
Reliability/connection-limits.sh 100
step "write budgets: one member flooding 2,000-character notes for 20 s"
EXPECT_BUDGETS=1 Reliability/write-budget.sh 20 4
step "two instances on one PostgreSQL database: a change through A reaches a socket on B (issue 16)"
Reliability/two-instances.sh 200
step "three instances behind nginx: 300 sockets, cross-instance delivery, SIGKILL mid-load, sweeper once per period, presence across instances (issue 16)"
Reliability/three-instances.sh 300 40 --check-presence
step "failover: a synchronous standby promoted after SIGKILL of the primary's machine under load through two instances; every acknowledged write present and delivered, no reset (issue 39)"
Reliability/failover.sh sync 6
step "failover: an asynchronous standby behind the primary promoted after SIGKILL; lost writes counted, every subscriber of a lost change reset, no silent gap (issue 39)"
Reliability/failover.sh async 6
step "attachments under SIGKILL: mid-upload and between the stored files and the row; nothing half-stored after restart + sweep (issue 20)"
Reliability/attachment-crash.sh
step "reliability done"
