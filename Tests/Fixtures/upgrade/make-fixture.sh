#!/usr/bin/env bash
# Makes the upgrade fixtures: a database as an earlier Herald left it, on both backends.
#
#   HERALD_BINARY=<an earlier herald> Tests/Fixtures/upgrade/make-fixture.sh [postgres://… to also make the dump]
#
# Runs that binary's `herald serve` (in-process emulator) on a fresh SQLite file, fills it through the HTTP API with
# one of each kind of record (devices with users, tags, languages and time zones; an inline send with a rejection; a
# background send; a scheduled send still queued; receipts; a Live Activity; a broadcast channel and a broadcast; an
# API key), then keeps the file as herald-schema-N.sqlite. With a PostgreSQL URL it does the same in a fresh schema
# and keeps `pg_dump --inserts` of it as herald-schema-N.postgres.sql, the schema renamed herald_fixture.
# UpgradeTests opens each, migrates it with today's Herald and checks every record.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
herald=${HERALD_BINARY:?set HERALD_BINARY to the earlier herald binary}
postgres=${1:-}
secret="hrld_f1x70001_$(printf 'u%.0s' $(seq 1 43))"
work=$(mktemp -d /tmp/herald-fixture.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
token() { printf '%064x' "$1"; }

fill() {
    local url=$1 port
    port=$(free_port)
    HERALD_DATABASE_URL="$url" HERALD_LISTEN="127.0.0.1:$port" HERALD_APNS=emulator HERALD_EMULATOR_ADMIN_PORT=off \
        HERALD_EMULATOR_CA_FILE="$work/ca.pem" HERALD_API_KEYS="fixture:send+admin:$secret" HERALD_INLINE_SEND_LIMIT=3 \
        HERALD_INSTANCE_ID=fixture HERALD_LOG_LEVEL=warning "$herald" serve >"$work/serve.log" 2>&1 &
    pid=$!
    local server="http://127.0.0.1:$port"
    for _ in $(seq 1 100); do curl -sf -o /dev/null "$server/ready" && break; sleep 0.1; done
    api() { curl -sS --fail-with-body -X "$1" "$server$2" -H "Authorization: Bearer $secret" -H 'Content-Type: application/json' ${3:+-d "$3"}; }
    register() { curl -sf -o /dev/null "$server/api/token" -H 'Content-Type: application/json' -d "$1"; }
    register "{\"token\": \"$(token 1)\", \"debug\": true, \"userId\": \"alice\", \"tags\": [\"beta\", \"fr\"], \"preferredLanguages\": [\"fr-CA\", \"en\"], \"timeZone\": \"America/Montreal\", \"appVersion\": \"2.1\", \"platform\": \"iOS\"}"
    register "{\"token\": \"$(token 2)\", \"debug\": false, \"userId\": \"alice\"}"
    register "{\"token\": \"$(token 3)\", \"debug\": true, \"userId\": \"bob\", \"tags\": [\"beta\"]}"
    register "{\"token\": \"$(token 4)\", \"debug\": true, \"tokenKind\": \"liveactivity-start\", \"activityType\": \"DeliveryAttributes\", \"userId\": \"bob\"}"
    register "{\"token\": \"$(token 5)\", \"debug\": true, \"tokenKind\": \"liveactivity\", \"activityId\": \"order-7\", \"userId\": \"bob\"}"
    register "{\"token\": \"$(token 6)\", \"debug\": true, \"tokenKind\": \"voip\", \"userId\": \"carol\"}"
    for n in $(seq 10 29); do register "{\"token\": \"$(token "$n")\", \"debug\": true, \"tags\": [\"crowd\"]}"; done
    # The emulator's admin API is off: token 2 is a production token the emulator does not know, so APNs rejects it.
    local inline background
    inline=$(api POST /api/send '{"target": {"user": "alice"}, "alert": {"title": "Hello", "body": "Inline"}, "localizations": {"fr": {"title": "Bonjour"}}}')
    background=$(api POST /api/send '{"target": {"tag": "crowd"}, "alert": "Background", "collapseId": "crowd-1"}')
    api POST /api/send '{"target": {"tag": "beta"}, "alert": "Later", "sendAt": "2027-11-20T09:00:00Z"}' >/dev/null
    api POST /api/activities '{"activityId": "order-7", "activityType": "DeliveryAttributes", "target": {"user": "bob"}, "attributes": {"order": 7}, "contentState": {"stage": "packed"}, "alert": {"title": "Order 7", "body": "Packed"}}' >"$work/activity.json" || { cat "$work/activity.json" >&2; exit 1; }
    local channel
    channel=$(api POST /api/channels '{"environment": "development", "storagePolicy": 1}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["channel"]["id"])')
    api POST "/api/channels/$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$channel")/broadcast" \
        '{"event": "update", "contentState": {"stage": "shipped"}}' >/dev/null
    local send_id
    send_id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$inline")
    curl -sf -o /dev/null "$server/api/events" -H 'Content-Type: application/json' -d "{\"events\": [
        {\"type\": \"received\", \"token\": \"$(token 1)\", \"sendId\": \"$send_id\", \"at\": \"2026-11-26T10:00:00Z\"},
        {\"type\": \"opened\", \"token\": \"$(token 1)\", \"sendId\": \"$send_id\", \"at\": \"2026-11-26T10:00:05Z\"}]}"
    # The background send completes before the server stops.
    local background_id
    background_id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$background")
    for _ in $(seq 1 100); do
        api GET "/api/sends/$background_id" | grep -q '"status":"completed"' && break
        sleep 0.1
    done
    kill "$pid"; wait "$pid" || true; pid=
}

version_of() { python3 - "$1" <<'PY'
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("SELECT MAX(version) FROM herald_migrations").fetchone()[0])
PY
}

fill "sqlite://$work/herald.sqlite"
version=$(version_of "$work/herald.sqlite")
python3 - "$work/herald.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.execute("PRAGMA journal_mode = DELETE")
db.execute("VACUUM")
PY
cp "$work/herald.sqlite" "$here/herald-schema-$version.sqlite"
echo "wrote $here/herald-schema-$version.sqlite"

if [ -n "$postgres" ]; then
    schema="herald_fixture_$$"
    separator='?'; [[ "$postgres" == *'?'* ]] && separator='&'
    fill "$postgres${separator}schema=$schema"
    base=${postgres%%\?*}
    pg_dump --dbname="$base" --schema="$schema" --inserts --no-owner --no-privileges --no-comments \
        | sed -e "s/$schema/herald_fixture/g" -e '/^SELECT pg_catalog.set_config/d' -e '/^SET /d' \
            -e '/^\\restrict /d' -e '/^\\unrestrict /d' \
        >"$here/herald-schema-$version.postgres.sql"
    psql --dbname="$base" -q -c "DROP SCHEMA $schema CASCADE"
    echo "wrote $here/herald-schema-$version.postgres.sql"
fi
