#!/usr/bin/env bash
# Online guessing of invite codes and passwords: one user, many users, many client IPs.
#
#   Reliability/bruteforce.sh [IPS=20]
#
# Starts chronir-server on a temporary data directory and runs Reliability/bruteforce.py, which binds
# its client sockets to 127.0.0.x source addresses (all of 127/8 is loopback on Linux) and guesses
# until every (user, IP) pair is refused with 429. Prints the attempts that got through per window
# and the expected time to guess one invite code. Fails when any scenario lets through more than the
# documented budget (codes: 10 per user, 30 per IP per hour; logins per 15 minutes: 10 per IP and per
# (email, IP), 50 per email from all IPs and then one more per IP that has not failed yet for that
# email — docs/security.md, finding 6) or when the expected time for one code from one address is
# under a year.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Reliability/lib.sh
ips=${1:-20}
find_binaries
# Every account below is registered from 127.0.0.1: lift the per-address registration limit
# (docs/security-limits.md; Reliability/connection-limits.sh tests it at its default).
export CHRONIR_REGISTRATIONS_PER_IP_PER_HOUR=1000000 CHRONIR_REGISTRATIONS_PER_HOUR=1000000
work=$(mktemp -d)
trap 'server_stop_all; rm -rf "$work"' EXIT
start_server "$work/server.log" --data-dir "$work/data" --log-level notice  # real scrypt cost: parallel guesses overlap as they would
python3 Reliability/bruteforce.py "$base" --ips "$ips" | tee "$work/out"

through() { grep "^$1 " "$work/out" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/ && $(i+1) == "attempts") print $i}'; }
check() {  # check LABEL MAX
    local got
    got=$(through "$1")
    [ -n "$got" ] && [ "$got" -le "$2" ] || { echo "BRUTEFORCE FAIL: '$1' let $got through, budget $2" >&2; exit 1; }
}
check "codes: 1 user, 1 IP" 10
check "codes: 10 users, 1 IP" 30
check "codes: $((ips * 3)) users, $ips IPs" $((ips * 30))
check "passwords: 1 email, 1 IP" 10
check "passwords: 1 email, $ips IPs" $((50 + ips))
check "passwords: 5 emails, 1 IP" 10
check "passwords: 1 email, 1 IP, 50 parallel" 10
years=$(grep 'from 1 IP:' "$work/out" | grep -o '= [0-9,.]* years' | tr -d '=, years')
awk -v y="$years" 'BEGIN { exit !(y >= 1) }' || { echo "BRUTEFORCE FAIL: $years years for one code from one IP" >&2; exit 1; }
echo "bruteforce: every budget held"
