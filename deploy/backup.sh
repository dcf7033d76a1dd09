#!/usr/bin/env bash
# Online backup of a chronir data directory, safe while chronir-server runs: the database through
# SQLite's online backup API (`chronir-admin db backup`, integrity-checked), plus server.secret —
# without it, restored invite codes no longer match (they are stored only as HMAC under the secret).
# The attachment files the copy's rows name go along (`db backup --attachments`, docs/attachments.md).
# Writes DEST/chronir-YYYYMMDDTHHMMSSZ/{chronir.sqlite,server.secret,attachments/} (0700/0600) and keeps the
# newest KEEP (default 14) such backups in DEST. Restore: docs/operations.md#backup-and-restore.
#
# Usage: deploy/backup.sh DEST [KEEP]   (env: CHRONIR_DATA_DIR, default /var/lib/chronir;
#        CHRONIR_ADMIN, default chronir-admin on PATH). Run it as the user that owns the data
#        directory, e.g. `runuser -u chronir -- /usr/local/bin/chronir-backup /var/backups/chronir`.
set -euo pipefail
dest=${1:?usage: backup.sh DEST [KEEP]}
keep=${2:-14}
data=${CHRONIR_DATA_DIR:-/var/lib/chronir}
admin=${CHRONIR_ADMIN:-chronir-admin}
umask 077

[ -f "$data/chronir.sqlite" ] || { echo "backup: no database at $data/chronir.sqlite" >&2; exit 1; }
[ -f "$data/server.secret" ] || { echo "backup: no server.secret in $data" >&2; exit 1; }
mkdir -p "$dest"
name="chronir-$(date -u +%Y%m%dT%H%M%SZ)"
partial="$dest/.$name.partial"
rm -rf "$partial"
mkdir "$partial"
"$admin" db backup "$partial/chronir.sqlite" --attachments "$partial/attachments" --data-dir "$data"
cp "$data/server.secret" "$partial/server.secret"
chmod 0600 "$partial/chronir.sqlite" "$partial/server.secret"
mv "$partial" "$dest/$name"   # complete backups only ever appear under their final name
echo "backup: $dest/$name"

# Retention: the newest $keep complete backups stay.
find "$dest" -mindepth 1 -maxdepth 1 -type d -name 'chronir-*' | sort -r | tail -n +"$((keep + 1))" |
    while read -r old; do rm -rf -- "$old"; echo "backup: removed $old"; done
