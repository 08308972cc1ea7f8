#!/usr/bin/env bash
# Benchmarks of `herald serve` (release build); results go to docs/benchmarks.md.
#
#   scripts/bench-server.sh register [sqlite|postgres] [SECONDS] [CONNECTIONS]   defaults: sqlite 30 64
#       wrk posts the book's registration body with a distinct token per request (scripts/bench/register.lua) for
#       SECONDS, after the same wrk run against a bare Hummingbird "hello" route (`herald hello`, the framework's
#       ceiling). Prints requests/s and p99 of both, and the server's CPU time per registration. On PostgreSQL, pgbench's
#       simple-update runs first on the same database, with as many clients as wrk has connections: the database's
#       own limit for short durable write transactions. On SQLite, scripts/bench/sqlite-registrations.py runs the
#       statements of 100,000 registrations first, in a file of the same schema: SQLite's own limit for them.
#   scripts/bench-server.sh fanout [sqlite|postgres] [DEVICES]                  defaults: sqlite 1000000
#       Seeds DEVICES tokens of one app (half development, half production), then one send to the whole app through
#       `herald emulator --counting-only` in its own process. Prints the wall time of the send (the send record's
#       createdAt to updatedAt), the server's peak RSS (VmHWM), the CPU time the server, the emulator and PostgreSQL used,
#       and what the send added to the database (SQLite's file, PostgreSQL's relations) and PostgreSQL's WAL, per
#       notification, and how long `GET /api/sends/{id}?limit=100` took while the send ran (read each second) and after
#       it ended (its first, middle and last page); then, as the ceiling, `herald send` alone pushes
#       DEVICES notifications to the same emulator (1,000 in flight, 4 connections; 400 to nginx) and the ratio of the two rates.
#       LATENCY=100ms adds that much emulated APNs latency to every answer (the emulator's --latency);
#       APNS_SINK=nginx pushes to the shared yardstick's nginx HTTP/2 sink instead (../shared/bench, or BENCH_DIR),
#       and adds h2load against the same sink as a second ceiling;
#       PG_SETTINGS="-c shared_preload_libraries=pg_stat_statements" prints PostgreSQL's costliest statements of the send;
#       HERALD_BENCH_PERF=/tmp/perf.data records a perf profile of the server during the send (and during wrk in
#       the transactional and register modes); HERALD_BENCH_PERF_CALL_GRAPH=dwarf,16384 unwinds with DWARF, through
#       libraries built without frame pointers (Debian's SQLite).
#   scripts/bench-server.sh webfanout [sqlite|postgres] [SUBSCRIPTIONS]          defaults: sqlite 100000
#       Web Push: SUBSCRIPTIONS subscriptions made at `herald emulator --counting-only`'s push service (one key pair,
#       POST /subscriptions {"count"}) and seeded as one app's webpush registrations, then one alert to the whole app:
#       each message made declarative, encrypted (RFC 8291) and VAPID-signed, posted to the emulator, which checks the
#       JWT and decrypts it. Prints the wall time, the CPU of the server, the emulator and PostgreSQL per message; then,
#       as the ceiling, `herald webpush send` alone sends as many to one subscription of the same emulator (1,000 in
#       flight, 4 connections, as the server), and the ratio of the two rates.
#   scripts/bench-server.sh transactional [sqlite|postgres] [SECONDS] [CONNECTIONS]   defaults: sqlite 30 64
#       A backend's push per event: wrk posts `POST /api/send` to one registered token (scripts/bench/send.lua), each
#       answered inline with the APNs outcome, against `herald emulator --counting-only`. As the ceiling, `herald send`
#       pushes to the same emulator with CONNECTIONS in flight on 1 connection. Prints both rates, the p50/p99 of the
#       server, their ratio, and the CPU time the server and the emulator used per send during wrk.
#   scripts/bench-server.sh lanes [sqlite|postgres] [DEVICES]                   defaults: sqlite 1000000
#       The scheduler's lanes: one-token inline sends offered at INLINE_RATE (500) a second for INLINE_SECONDS (20),
#       open loop (scripts/bench/open-loop.py), idle and then while a campaign to DEVICES devices at `rate: 1000` runs;
#       then 20 sends to one user's 300 devices during the campaign, each timed from its createdAt to its updatedAt.
#   scripts/bench-server.sh fairness [sqlite|postgres] [DEVICES]                defaults: sqlite 200000
#       Two apps with DEVICES devices each, one send to every device of each started together: when each ends.
#   scripts/bench-server.sh instances postgres [DEVICES]                       default: 300000
#       One send to DEVICES devices with LATENCY (100ms) of emulated APNs latency, run by one `herald serve` and then
#       by two on one PostgreSQL database (a fresh schema each): the wall time of each and their ratio.
#   scripts/bench-server.sh preferences [sqlite|postgres] [DEVICES]             default: 1000000
#       One send to every one of DEVICES devices with no rule, then one with every rule: a category OPTED_OUT (10)
#       percent of the people turned off, quiet hours QUIET (20) percent of the devices are in (dropped), a frequency
#       cap (CAP, default marketing:1000/1d, which nobody reaches: it costs the claim and removes no one) and OWN (10)
#       percent of the people (of those quiet devices) with their own quiet hours (half none, half a window they are in),
#       alternately, ROUNDS (3) times each: the wall times, their medians and ratio.
#   scripts/bench-server.sh retention [sqlite|postgres] [DEVICES]               default: 100000
#       SENDS (10) sends to every one of DEVICES devices, the server stopped, the sends made 40 days older (on PostgreSQL
#       with their period of send records, closed after them, so that retention drops its partitions), the server
#       started again: its first retention run deletes their outcomes (the sends stay, with their counts) while
#       registrations are offered at REGISTER_RATE (500) a second for REGISTER_SECONDS (60), open loop; then the same
#       load with retention idle. Prints the database's size before and after (SQLite's file; pg_database_size and
#       Herald's schema), bytes per outcome, both p99s and retention's log line; then (AGAIN=1, the default) SENDS
#       sends again, to show the space freed is reused. Each send's wall time gives the fan-out speed (devices a second,
#       median over the sends). PG_WAIT_SAMPLES=1 (postgres): samples what the active statements wait for
#       (pg_stat_activity every 10 ms) while retention deletes and idle, with checkpoints, WAL and autovacuum meanwhile.
#
# HERALD_BENCH_SERVER_LOG=/path/to/file keeps the server's log (standard output and error) there.
# HERALD_BENCH_BINARY=/path/to/herald runs that build instead of building this tree (to measure a baseline in the same
# session). PostgreSQL: set HERALD_BENCH_DATABASE_URL to a database the script may fill (it creates a schema per run), or let
# it start a throwaway cluster on 127.0.0.1 as .ci/run does (needs Debian's postgresql), with PG_SETTINGS added to its
# settings (e.g. PG_SETTINGS="-c wal_compression=lz4"). Needs wrk and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

mode=${1:-register}
backend=${2:-sqlite}
work=$(mktemp -d /tmp/herald-bench.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ -n "${pg_ctl_cmd:-}" ]; then "${pg_ctl_cmd[@]}" stop >/dev/null 2>&1 || true; fi
    if [ -n "${sink_pid:-}" ]; then "$bench_dir/sink.sh" stop >/dev/null 2>&1 || true; fi
    if [ -n "${HERALD_BENCH_SERVER_LOG:-}" ] && [ -f "$work/serve.log" ]; then cp "$work/serve.log" "$HERALD_BENCH_SERVER_LOG"; fi
    rm -rf "$work" "${pg_dir:-}"
}
trap cleanup EXIT

log() { printf '==> %s\n' "$*" >&2; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() {  # URL: waits until it answers 200
    for _ in $(seq 1 300); do
        if curl -sf -o /dev/null "$1"; then return 0; fi
        sleep 0.1
    done
    echo "$1 did not come up" >&2
    return 1
}

if [ -n "${HERALD_BENCH_BINARY:-}" ]; then
    herald="$HERALD_BENCH_BINARY"
else
    log "Building herald (release)"
    swift build -c release --product herald 2>&1 | tail -n 3 >&2
    herald="$root/.build/release/herald"
fi

start_postgres() {
    local bin port
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    port=$(free_port)
    pg_dir=$(mktemp -d /tmp/herald-bench-pg.XXXXXX)
    as_pg=()
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres:postgres "$pg_dir"
        as_pg=(runuser -u postgres --)
    fi
    pg_ctl_cmd=("${as_pg[@]}" "$bin/pg_ctl" -D "$pg_dir/data" -m fast)
    log "Starting PostgreSQL on 127.0.0.1:$port"
    "${as_pg[@]}" "$bin/initdb" -D "$pg_dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    # Durable commits, as in production; shared_buffers sized for a million devices. PG_SETTINGS adds server settings
    # (e.g. "-c wal_compression=lz4").
    "${pg_ctl_cmd[@]}" -l "$pg_dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $pg_dir -c max_connections=200 -c shared_buffers=512MB ${PG_SETTINGS:-}" \
        start >/dev/null
    "${as_pg[@]}" "$bin/psql" -q -h "$pg_dir" -p "$port" -U postgres -d postgres \
        -c "CREATE ROLE herald LOGIN PASSWORD 'bench'" -c "CREATE DATABASE herald_bench OWNER herald" >/dev/null
    if [[ "${PG_SETTINGS:-}" == *pg_stat_statements* ]]; then
        "${as_pg[@]}" "$bin/psql" -q -h "$pg_dir" -p "$port" -U postgres -d herald_bench \
            -c "CREATE EXTENSION pg_stat_statements" -c "GRANT pg_read_all_stats TO herald" >/dev/null
    fi
    HERALD_BENCH_DATABASE_URL="postgres://herald:bench@127.0.0.1:$port/herald_bench?sslmode=disable"
}

database_url() {
    case "$backend" in
        sqlite) echo "sqlite://$work/herald.sqlite" ;;
        postgres)
            local schema="bench_$(date +%s)"
            case "$HERALD_BENCH_DATABASE_URL" in
                *\?*) echo "$HERALD_BENCH_DATABASE_URL&schema=$schema&pool=20" ;;
                *) echo "$HERALD_BENCH_DATABASE_URL?schema=$schema&pool=20" ;;
            esac
            ;;
        *) echo "backend is sqlite or postgres" >&2; exit 2 ;;
    esac
}

# CPU time a process has used so far, in microseconds (user + system, from /proc/PID/stat).
# HERALD_BENCH_PERF=/path/to/perf.data: a perf profile of the server while the benchmark measures it.
start_perf() {  # PID
    [ -n "${HERALD_BENCH_PERF:-}" ] || return 0
    perf record -F 499 ${HERALD_BENCH_PERF_CALL_GRAPH:+--call-graph "$HERALD_BENCH_PERF_CALL_GRAPH"} -g -p "$1" -o "$HERALD_BENCH_PERF" >/dev/null 2>&1 &
    perf_pid=$!
}

stop_perf() {
    if [ -n "${perf_pid:-}" ]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; perf_pid=; fi
}

cpu_micros() {  # PID
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%d\n", ($12 + $13) * 1000000 / hz }' "/proc/$1/stat"
}

# CPU time the PostgreSQL this script started has used so far, in microseconds: the postmaster and its live
# processes (backends, checkpointer, WAL writer), with what their exited children used; 0 for a database it did not
# start (HERALD_BENCH_DATABASE_URL given) or SQLite (in the server's process).
database_cpu_micros() {
    local postmaster
    postmaster=$(head -n 1 "${pg_dir:-/nonexistent}/data/postmaster.pid" 2>/dev/null) || { echo 0; return; }
    for stat in /proc/[0-9]*/stat; do cat "$stat" 2>/dev/null; echo; done | awk -v hz="$(getconf CLK_TCK)" -v pm="$postmaster" '
        NF { pid = $1; sub(/^.*\) /, ""); if (pid == pm || $2 == pm) total += $12 + $13 + $14 + $15 }
        END { printf "%d\n", total * 1000000 / hz }'
}

# The database's size in bytes: the SQLite file (measure with the server stopped: no WAL), or PostgreSQL's
# pg_database_size and then the total of the relations of the benchmark's schema (tables, indexes, TOAST).
database_size() {
    case "$backend" in
        sqlite) stat -c %s "$work/herald.sqlite" ;;
        postgres)
            local schema
            schema=$(sed -n 's/.*schema=\([a-z0-9_]*\).*/\1/p' <<<"$url")
            psql "${HERALD_BENCH_DATABASE_URL}" -At -c "SELECT pg_database_size(current_database()) || ' ' || \
                (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = '$schema' AND c.relkind IN ('r', 'm'))"
            ;;
    esac
}

# PostgreSQL's WAL position in bytes (0 on SQLite): the difference of two is the WAL written between them.
database_wal_bytes() {
    case "$backend" in
        postgres) psql "${HERALD_BENCH_DATABASE_URL}" -At -c "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint" ;;
        *) echo 0 ;;
    esac
}

# Context switches of a process's threads so far (voluntary and involuntary, threads still alive).
context_switches() {  # PID
    cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { total += $2 } END { print total + 0 }'
}

# Runs wrk and prints "requests/s p99 non-2xx p50".
run_wrk() {  # URL SCRIPT(or -) SECONDS CONNECTIONS
    local out="$work/wrk-$RANDOM.txt" args=(-t2 -c"$4" -d"$3"s --latency)
    [ "$2" != "-" ] && args+=(-s "$2")
    RUN=$RANDOM wrk "${args[@]}" "$1" >"$out"
    cat "$out" >&2
    awk '
        /Requests\/sec:/ { rps = $2 }
        $1 == "99%" { p99 = $2 }
        $1 == "50%" { p50 = $2 }
        /Non-2xx or 3xx responses:/ { errors = $5 }
        END { printf "%s %s %d %s\n", rps, p99, errors, p50 }
    ' "$out"
}

server_env() {  # DATABASE_URL PORT VAR=VALUE… COMMAND…: replaces the calling (sub)shell, so its PID is the server's
    exec env -u HERALD_CONFIG HERALD_LISTEN="127.0.0.1:$2" HERALD_DATABASE_URL="$1" HERALD_RATE_LIMIT=0 \
        HERALD_LOG_LEVEL="${server_log_level:-warning}" HERALD_EMULATOR_ADMIN_PORT=off HERALD_EMULATOR_CA_FILE="$work/serve-ca.pem" "${@:3}"
}

if [ "$backend" = postgres ] && [ -z "${HERALD_BENCH_DATABASE_URL:-}" ]; then start_postgres; fi
server_extra=()

start_emulator() {
    log "Starting herald emulator --counting-only${LATENCY:+ --latency $LATENCY}"
    emulator_production=$(free_port)
    emulator_development=$(free_port)
    emulator_admin=$(free_port)
    emulator_webpush=$(free_port)
    "$herald" emulator --production-port "$emulator_production" --development-port "$emulator_development" \
        --admin-port "$emulator_admin" --web-push-port "$emulator_webpush" --ca-file "$work/ca.pem" --counting-only \
        ${LATENCY:+--latency "$LATENCY"} \
        >"$work/emulator.log" 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$emulator_admin/health"
}

# The emulator writes its key as AuthKey_EMULATOR01.p8; the nginx sink takes any key.
key_id=EMULATOR01
team_id=EMULATORTM

# APNS_SINK=nginx: the shared yardstick's nginx HTTP/2 sink (../shared/bench, or BENCH_DIR) instead of the emulator.
# It answers 200 to every POST after reading the body, verifies nothing, and runs one worker; its CPU is read from
# its processes. Sets the ports start_server pushes to, like start_emulator.
start_nginx_sink() {
    bench_dir="${BENCH_DIR:-$root/../shared/bench}"
    if [ ! -x "$bench_dir/sink.sh" ]; then
        echo "APNS_SINK=nginx needs the shared yardstick: set BENCH_DIR to the folder of its sink.sh" >&2
        exit 2
    fi
    export BENCH_WORK="$work/sink" SINK_PORT SINK_CPUS="" CLIENT_CPUS=""
    SINK_PORT=$(free_port)
    log "Starting the nginx HTTP/2 sink on 127.0.0.1:$SINK_PORT"
    "$bench_dir/gen-certs.sh" >/dev/null
    "$bench_dir/sink.sh" start >/dev/null
    sink_pid=$(cat "$BENCH_WORK/nginx.pid")
    key_id=ABC123DEFG
    team_id=DEF123GHIJ
    cp "$BENCH_WORK/key.p8" "$work/AuthKey_$key_id.p8"
    cp "$BENCH_WORK/ca.pem" "$work/ca.pem"
    emulator_production=$SINK_PORT
    emulator_development=$SINK_PORT
}

# CPU time of what answers the pushes (the emulator, or nginx's master and worker), in microseconds.
sink_cpu_micros() {
    if [ -n "${sink_pid:-}" ]; then
        python3 -c "print(int(float('$("$bench_dir/sink.sh" cpu)') * 1e6))"
    else
        cpu_micros "${pids[0]}"
    fi
}

# Seeds COUNT devices of TOPIC (half development, half production) with tokens from FIRST on, of USER when given;
# migrates the database first.
seed_devices() {  # DATABASE_URL COUNT TOPIC FIRST [USER]
    local url=$1 count=$2 topic=$3 first=$4 user=${5:-} now schema
    log "Seeding $count devices of $topic${user:+ (user $user)}"
    "$herald" tokens add "$(printf 'ff%.0s' $(seq 1 32))" --debug --database-url "$url" >/dev/null  # migrates
    "$herald" tokens remove "$(printf 'ff%.0s' $(seq 1 32))" --database-url "$url" >/dev/null
    now=$(($(date +%s) * 1000000))
    case "$backend" in
        sqlite)
            python3 - "$work/herald.sqlite" "$count" "$now" "$topic" "$first" "$user" <<'PY'
import sqlite3, sys
path, count, now, topic, first = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
user = sys.argv[6] or None
db = sqlite3.connect(path)
rows = ((f"{i:064x}", topic, "development" if i % 2 else "production", "device", user, now, now, now)
        for i in range(first, first + count))
db.executemany("INSERT INTO devices (token, topic, environment, token_kind, user_id, registered_at, created_at, "
               "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
db.commit()
PY
            ;;
        postgres)
            schema=$(sed -n 's/.*schema=\([a-z0-9_]*\).*/\1/p' <<<"$url")
            local user_sql=NULL
            [ -n "$user" ] && user_sql="'$user'"
            psql "${HERALD_BENCH_DATABASE_URL}" -q -c "SET search_path TO $schema;
                INSERT INTO devices (token, topic, environment, token_kind, user_id, registered_at, created_at, updated_at)
                SELECT lpad(to_hex(i), 64, '0'), '$topic', CASE WHEN i % 2 = 1 THEN 'development' ELSE 'production' END,
                       'device', $user_sql, $now, $now, $now FROM generate_series($first, $first + $count - 1) AS i;"
            # Measured on a settled database: the bulk insert's dirty pages written and its rows' visibility set, not
            # flushed by a checkpoint or vacuumed by autovacuum while the benchmark runs.
            psql "${HERALD_BENCH_DATABASE_URL}" -q -c "SET search_path TO $schema" -c "VACUUM ANALYZE devices"
            if [ -n "${pg_dir:-}" ]; then
                "${as_pg[@]}" psql -q -h "$pg_dir" -p "$(sed -nE 's/.*:([0-9]+)\/.*/\1/p' <<<"$HERALD_BENCH_DATABASE_URL")" \
                    -U postgres -d postgres -c CHECKPOINT
            fi
            ;;
    esac
}

# Seeds the web push subscriptions of a POST /subscriptions {"count"} answer (FILE) as webpush registrations of TOPIC,
# each under the SHA-256 of its endpoint, as registration stores them; migrates the database first.
seed_subscriptions() {  # DATABASE_URL FILE TOPIC
    local url=$1 file=$2 topic=$3 now schema
    log "Seeding the subscriptions of $file as $topic's webpush registrations"
    "$herald" tokens add "$(printf 'ff%.0s' $(seq 1 32))" --debug --database-url "$url" >/dev/null  # migrates
    "$herald" tokens remove "$(printf 'ff%.0s' $(seq 1 32))" --database-url "$url" >/dev/null
    now=$(($(date +%s) * 1000000))
    python3 - "$file" "$topic" "$now" "$work/subscriptions.csv" <<'PY'
import csv, hashlib, json, sys
made, topic, now = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
keys = made["keys"]
with open(sys.argv[4], "w", newline="") as out:
    rows = csv.writer(out)
    for endpoint in made["endpoints"]:
        rows.writerow([hashlib.sha256(endpoint.encode()).hexdigest(), topic, "production", "webpush", endpoint,
                       keys["p256dh"], keys["auth"], now, now, now])
PY
    local columns="token, topic, environment, token_kind, push_endpoint, push_p256dh, push_auth, registered_at, created_at, updated_at"
    case "$backend" in
        sqlite)
            python3 - "$work/herald.sqlite" "$work/subscriptions.csv" "$columns" <<'PY'
import csv, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = [row[:7] + [int(value) for value in row[7:]] for row in csv.reader(open(sys.argv[2]))]
db.executemany(f"INSERT INTO devices ({sys.argv[3]}) VALUES ({', '.join('?' * 10)})", rows)
db.commit()
PY
            ;;
        postgres)
            schema=$(sed -n 's/.*schema=\([a-z0-9_]*\).*/\1/p' <<<"$url")
            psql "${HERALD_BENCH_DATABASE_URL}" -q -c "SET search_path TO $schema" \
                -c "\\copy devices ($columns) FROM '$work/subscriptions.csv' CSV" \
                -c "VACUUM ANALYZE devices"
            ;;
    esac
}

start_server() {  # DATABASE_URL: herald serve pushing to the emulator; sets port and server_pid
    port=$(free_port)
    (cd "$work" && server_env "$1" "$port" HERALD_APNS=custom HERALD_APNS_PRODUCTION_PORT="$emulator_production" \
        HERALD_APNS_DEVELOPMENT_PORT="$emulator_development" HERALD_APNS_CA_FILE="$work/ca.pem" \
        HERALD_KEY_FILE="$work/AuthKey_$key_id.p8" HERALD_TEAM_ID="$team_id" HERALD_API_KEYS="bench:send:$secret" \
        ${server_config:+HERALD_CONFIG="$server_config"} "${server_extra[@]}" "$herald" serve >"$work/serve.log" 2>&1) &
    pids+=($!)
    server_pid=${pids[-1]}
    wait_for "http://127.0.0.1:$port/ready"
}

# One send through the API, then its record polled once a second until it completed or failed: prints the record.
# Posts a send and reads it each second until it ends (`GET /api/sends/{id}`, a page of 100 outcomes, as the console
# reads it); prints its last record. The time of each read goes to $work/reads.txt (seconds), and the send's id to
# $work/send-id.txt.
send_and_wait() {  # PORT BODY
    local answer id record status
    answer=$(curl -s -H "Authorization: Bearer $secret" "http://127.0.0.1:$1/api/send" -d "$2")
    id=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["id"])' "$answer")
    echo "$id" >"$work/send-id.txt"
    while true; do
        record=$(curl -s -w '\n%{time_total}' -H "Authorization: Bearer $secret" "http://127.0.0.1:$1/api/sends/$id?limit=100")
        tail -n 1 <<<"$record" >>"$work/reads.txt"
        if [ -s "$work/console.jar" ]; then
            curl -s -o /dev/null -w '%{time_total}\n' -b "$work/console.jar" "http://127.0.0.1:$1/console/sends/$id" \
                >>"$work/console-reads.txt"
        fi
        record=$(head -n -1 <<<"$record")
        status=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["status"])' "$record")
        [ "$status" = completed ] || [ "$status" = failed ] && break
        sleep 1
    done
    printf '%s\n' "$record"
}

# send_and_wait, with the CPU the server, what answers the pushes and PostgreSQL spent meanwhile: sets record,
# server_cpu, emulator_cpu and db_cpu (microseconds).
measured_send() {  # PORT BODY
    server_cpu=$(cpu_micros "$server_pid")
    emulator_cpu=$(sink_cpu_micros)
    db_cpu=$(database_cpu_micros)
    record=$(send_and_wait "$1" "$2")
    server_cpu=$(( $(cpu_micros "$server_pid") - server_cpu ))
    emulator_cpu=$(( $(sink_cpu_micros) - emulator_cpu ))
    db_cpu=$(( $(database_cpu_micros) - db_cpu ))
}

# Signs in to the console with the benchmark's key: the session cookie goes to $work/console.jar, which send_and_wait
# and ended_send_reads then use to read the console's send page too.
console_sign_in() {  # PORT
    local token
    token=$(curl -s -c "$work/console.jar" "http://127.0.0.1:$1/console/sign-in" |
        sed -n 's/.*name="_csrf" value="\([^"]*\)".*/\1/p' | head -n 1)
    curl -s -o /dev/null -b "$work/console.jar" -c "$work/console.jar" --data-urlencode "_csrf=$token" \
        --data-urlencode "key=$secret" "http://127.0.0.1:$1/console/sign-in"
    grep -q herald_session "$work/console.jar" || { log "Console sign-in failed: no console reads"; : >"$work/console.jar"; }
}

# Reads of an ended send: its first page, a page from its middle and its last, and the console's send page, ten times
# each; prints the median and the slowest of each, in milliseconds.
ended_send_reads() {  # PORT ID DEVICES
    local page times=()
    for page in "" "after=$(( $3 / 2 ))&" "after=$(( $3 - 50 ))&"; do
        for _ in $(seq 1 10); do
            times+=("$page$(curl -s -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $secret" \
                "http://127.0.0.1:$1/api/sends/$2?${page}limit=100")")
        done
    done
    if [ -s "$work/console.jar" ]; then
        for _ in $(seq 1 10); do
            times+=("console page&$(curl -s -o /dev/null -w '%{time_total}' -b "$work/console.jar" \
                "http://127.0.0.1:$1/console/sends/$2")")
        done
    fi
    python3 - "${times[@]}" <<'PY'
import statistics, sys
pages = {}
for value in sys.argv[1:]:
    where, _, seconds = value.rpartition("&") if "&" in value else ("", "", value)
    pages.setdefault(where or "first", []).append(float(seconds) * 1000)
print("; ".join(f"{'first page' if where == 'first' else where} {statistics.median(t):.1f} ms (slowest {max(t):.1f})"
                for where, t in pages.items()))
PY
}

# `herald send` alone against the emulator's production port: prints its JSON summary line.
bare_sender() {  # COUNT CONCURRENCY CONNECTIONS TOKEN
    # Its CPU (user and system seconds) goes to $work/bare-sender.cpu, with GNU time where installed.
    local timed=()
    if [ -x /usr/bin/time ]; then timed=(/usr/bin/time -f '%U %S' -o "$work/bare-sender.cpu"); fi
    "${timed[@]}" "$herald" send --key "$work/AuthKey_$key_id.p8" --key-id "$key_id" --team-id "$team_id" \
        --topic com.example.app --production --host 127.0.0.1 --port "$emulator_production" --ca-file "$work/ca.pem" \
        --token "$4" --repeat "$1" --concurrency "$2" --connections "$3" \
        --title "Hello" --body "to everyone" --summary-json | tail -n 1 || true
}

case "$mode" in
register)
    seconds=${3:-30}
    connections=${4:-64}
    hello_port=$(free_port)
    "$herald" hello --port "$hello_port" >/dev/null 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$hello_port/hello"
    log "wrk against the Hummingbird hello route ($seconds s, $connections connections)"
    read -r hello_rps hello_p99 _ hello_p50 < <(run_wrk "http://127.0.0.1:$hello_port/hello" - "$seconds" "$connections")
    kill "${pids[0]}"

    url=$(database_url)
    pgbench_tps=""
    if [ "$backend" = postgres ]; then
        # The same PostgreSQL's limit for short durable write transactions: pgbench's simple-update (an update, a
        # select and an insert per transaction, prepared), as many clients as wrk has connections, in a schema of its own.
        pgbench_schema="pgbench_$(date +%s)"
        psql "$HERALD_BENCH_DATABASE_URL" -q -c "CREATE SCHEMA $pgbench_schema" >/dev/null
        log "pgbench simple-update on the same PostgreSQL ($seconds s, $connections clients)"
        PGOPTIONS="-c search_path=$pgbench_schema" pgbench -q -i -s 10 "$HERALD_BENCH_DATABASE_URL" >/dev/null 2>&1
        pgbench_tps=$(PGOPTIONS="-c search_path=$pgbench_schema" pgbench -n -M prepared -b simple-update \
            -c "$connections" -j 2 -T "$seconds" "$HERALD_BENCH_DATABASE_URL" 2>/dev/null |
            sed -nE 's/^tps = ([0-9.]+).*/\1/p')
        PGOPTIONS="-c client_min_messages=warning" psql "$HERALD_BENCH_DATABASE_URL" -q -c "DROP SCHEMA $pgbench_schema CASCADE" >/dev/null
    fi
    sqlite_alone=""
    if [ "$backend" = sqlite ]; then
        # SQLite's own limit for the same writes: the statements of a registration, as many per transaction as wrk has
        # connections (the most the group commit can gather), durable, one writer, in a file whose schema herald made;
        # 100,000 of them, about what a run of 10 to 20 s stores, so the tables are about as large.
        "$herald" keys list --database-url "sqlite://$work/sqlite-alone.sqlite" >/dev/null
        log "SQLite alone: the statements of 100,000 registrations, $connections per transaction"
        sqlite_alone=$(python3 scripts/bench/sqlite-registrations.py "$work/sqlite-alone.sqlite" --count 100000 --batch "$connections")
    fi
    port=$(free_port)
    (cd "$work" && server_env "$url" "$port" "$herald" serve >"$work/serve.log" 2>&1) &
    pids+=($!)
    server_pid=${pids[-1]}
    wait_for "http://127.0.0.1:$port/ready"
    log "wrk posting registrations to herald serve on $backend ($seconds s, $connections connections)"
    start_perf "$server_pid"
    server_cpu=$(cpu_micros "$server_pid")
    read -r rps p99 errors p50 < <(run_wrk "http://127.0.0.1:$port" scripts/bench/register.lua "$seconds" "$connections")
    server_cpu=$(( $(cpu_micros "$server_pid") - server_cpu ))
    stop_perf
    created=$(curl -s "http://127.0.0.1:$port/metrics" | awk -F' ' '/^herald_registrations_total\{result="created"\}/ { print $2 }')
    echo "| Route | Requests/s | p50 | p99 | Errors |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    echo "| Hummingbird \`GET /hello\` (ceiling) | $hello_rps | $hello_p50 | $hello_p99 | 0 |"
    echo "| \`POST /api/token\`, $backend | $rps | $p50 | $p99 | $errors |"
    python3 -c "print(f'registrations / hello = {float(\"$rps\") / float(\"$hello_rps\"):.2f}')"
    if [ -n "$sqlite_alone" ]; then
        read -r alone_rate alone_cpu alone_system <<<"$sqlite_alone"
        python3 -c "print(f'SQLite alone, the same statements: {float(\"$alone_rate\"):,.0f} registrations/s, {float(\"$alone_cpu\"):.0f} µs of CPU each ({float(\"$alone_system\"):.0f} µs system); registrations / SQLite alone = {float(\"$rps\") / float(\"$alone_rate\"):.2f}')"
    fi
    if [ -n "$pgbench_tps" ]; then
        python3 -c "print(f'pgbench simple-update on the same PostgreSQL: {float(\"$pgbench_tps\"):,.0f} transactions/s; registrations / pgbench = {float(\"$rps\") / float(\"$pgbench_tps\"):.2f}')"
    fi
    echo
    echo "Registrations stored (created): $created"
    python3 -c "print(f'CPU per registration during wrk: server {int(\"$server_cpu\") / max(1, int(float(\"$created\"))):.0f} µs')"
    ;;
fanout)
    devices=${3:-1000000}
    url=$(database_url)
    if [ "${APNS_SINK:-emulator}" = nginx ]; then start_nginx_sink; else start_emulator; fi

    seed_devices "$url" "$devices" com.example.app 1

    secret="bench-secret-$(date +%s%N)-0123456789abcdef"
    seeded=$(database_size)
    start_server "$url"

    console_sign_in "$port"
    start_perf "$server_pid"
    log "One send to every device of the app"
    wal=$(database_wal_bytes)
    measured_send "$port" '{"target": {"topic": "com.example.app"}, "alert": {"title": "Hello", "body": "to everyone"}}'
    wal=$(( $(database_wal_bytes) - wal ))
    server_cpu_per_notification=$(python3 -c "print($server_cpu / $devices)")
    stop_perf
    peak=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$server_pid/status")
    ended_reads=$(ended_send_reads "$port" "$(cat "$work/send-id.txt")" "$devices")
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    if [[ "${PG_SETTINGS:-}" == *pg_stat_statements* ]]; then
        # PG_SETTINGS="-c shared_preload_libraries=pg_stat_statements": where PostgreSQL spent its time.
        # Planning counts only with pg_stat_statements.track_planning=on in PG_SETTINGS.
        psql "${HERALD_BENCH_DATABASE_URL}" -c "SELECT round(total_exec_time::numeric, 0) AS exec_ms, \
            round(total_plan_time::numeric, 0) AS plan_ms, calls, rows, \
            left(regexp_replace(query, '\s+', ' ', 'g'), 140) AS query FROM pg_stat_statements \
            ORDER BY total_exec_time + total_plan_time DESC LIMIT 20" \
            -c "SELECT round(sum(total_exec_time)::numeric, 0) AS all_exec_ms, \
            round(sum(total_plan_time)::numeric, 0) AS all_plan_ms, sum(calls) AS all_calls FROM pg_stat_statements" >&2
    fi
    # What the send added to the database, the server stopped (SQLite's WAL checkpointed into the file).
    grown=$(database_size)
    python3 - "$record" "$peak" "$devices" "$backend" "$server_cpu" "$emulator_cpu" "${APNS_SINK:-emulator}" "$db_cpu" \
        "$seeded" "$grown" "$wal" "$(cat "$work/reads.txt")" "$ended_reads" "$(cat "$work/console-reads.txt" 2>/dev/null)" <<'PY'
import json, sys
from datetime import datetime
record, peak, devices, backend = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
server_cpu, emulator_cpu, sink, db_cpu = int(sys.argv[5]), int(sys.argv[6]), sys.argv[7], int(sys.argv[8])
# PostgreSQL: the schema's relations (the second number); SQLite: the file.
seeded, grown, wal = int(sys.argv[9].split()[-1]), int(sys.argv[10].split()[-1]), int(sys.argv[11])
parse = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))
seconds = (parse(record["updatedAt"]) - parse(record["createdAt"])).total_seconds()
counts = record["counts"]
print("| Fan-out | Devices | Wall time | Notifications/s | Peak RSS (server) | Accepted | Rejected | Failed |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
print(f"| {backend}, {sink} | {devices:,} | {seconds:.1f} s | {devices / seconds:,.0f} | {peak} MB | {counts['accepted']:,} | {counts['rejected']:,} | {counts['failed']:,} |")
print()
database = f", PostgreSQL {db_cpu / devices:.1f} µs ({db_cpu / 1e6 / seconds:.2f} cores)" if db_cpu > 0 else ""
print(f"CPU per notification: server {server_cpu / devices:.1f} µs ({server_cpu / 1e6 / seconds:.2f} cores), "
      f"{sink} {emulator_cpu / devices:.1f} µs ({emulator_cpu / 1e6 / seconds:.2f} cores){database}")
written = f", WAL {wal / devices:.1f} B ({wal / 1e6 / seconds:.1f} MB/s)" if wal > 0 else ""
print(f"Database growth per notification: {(grown - seeded) / devices:.1f} B ({(grown - seeded) / 1e6:,.1f} MB){written}")
import statistics
reads = [float(t) * 1000 for t in sys.argv[12].split()]
print(f"GET /api/sends/{{id}}?limit=100 while sending: median {statistics.median(reads):.1f} ms, slowest {max(reads):.1f} ms "
      f"({len(reads)} reads); ended: {sys.argv[13]}")
console = [float(t) * 1000 for t in sys.argv[14].split()]
if console:
    print(f"GET /console/sends/{{id}} while sending: median {statistics.median(console):.1f} ms, "
          f"slowest {max(console):.1f} ms ({len(console)} reads)")
PY
    if [ -z "${sink_pid:-}" ]; then curl -s "http://127.0.0.1:$emulator_admin/counters" >&2; echo >&2; fi

    if [ -n "${sink_pid:-}" ]; then
        # A fresh nginx: after a million requests its worker had grown to 140 MB and answered the next client at
        # 2,000/s (it keeps a connection's memory until the connection closes).
        "$bench_dir/sink.sh" stop >/dev/null
        "$bench_dir/sink.sh" start >/dev/null
        sink_pid=$(cat "$BENCH_WORK/nginx.pid")
    fi
    # A token the fan-out did not use: the emulator remembers each token's environment. nginx slows down with 1,000
    # streams in flight on 4 connections (33k/s for 100,000, 7k/s for 300,000, against 58k/s with 400), so its
    # ceiling is measured with 400, as scripts/bench-sender.sh does.
    in_flight=1000
    if [ -n "${sink_pid:-}" ]; then in_flight=400; fi
    log "Ceiling: herald send alone, $devices notifications to the same ${APNS_SINK:-emulator} ($in_flight in flight, 4 connections)"
    summary=$(bare_sender "$devices" "$in_flight" 4 "$(printf 'ee%.0s' $(seq 1 32))")
    h2load_rate=0
    if [ -n "${sink_pid:-}" ]; then
        log "The sink's limit: h2load, 4 connections, 100 streams each"
        h2load_rate=$("$bench_dir/h2load.sh" 4 200000 100 | sed -nE 's/^finished in .* ([0-9.]+) req\/s.*/\1/p')
    fi
    bare_cpu=$(cat "$work/bare-sender.cpu" 2>/dev/null || true)
    python3 - "$summary" "$record" "$devices" "$h2load_rate" "$bare_cpu" "${server_cpu_per_notification:-}" <<'PY'
import json, sys
from datetime import datetime
summary, record, devices, h2load = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
bare_cpu, server_cpu = sys.argv[5].split(), sys.argv[6]
parse = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))
seconds = (parse(record["updatedAt"]) - parse(record["createdAt"])).total_seconds()
print()
print(f"Ceiling, herald send alone: {summary['rate']:,.0f} notifications/s ({summary['ok']:,} ok, {summary['failed']} failed); "
      f"fan-out / ceiling = {devices / seconds / summary['rate']:.2f}")
if len(bare_cpu) == 2 and summary["ok"]:
    per = (float(bare_cpu[0]) + float(bare_cpu[1])) * 1e6 / summary["ok"]
    ratio = f"; server / herald send = {float(server_cpu) / per:.2f}" if server_cpu else ""
    print(f"CPU per notification, herald send alone: {per:.1f} µs{ratio}")
if h2load:
    print(f"The sink's limit, h2load: {h2load:,.0f} requests/s; fan-out / h2load = {devices / seconds / h2load:.2f}")
PY
    ;;
webfanout)
    devices=${3:-100000}
    url=$(database_url)
    start_emulator
    read -r vapid_private vapid_public < <("$herald" vapid generate --json |
        python3 -c 'import json, sys; k = json.load(sys.stdin); print(k["privateKey"], k["publicKey"])')
    log "Making $devices subscriptions at the emulator's push service"
    curl -sf -X POST "http://127.0.0.1:$emulator_admin/subscriptions" \
        -d "{\"count\": $devices, \"applicationServerKey\": \"$vapid_public\"}" >"$work/subscriptions.json"
    seed_subscriptions "$url" "$work/subscriptions.json" com.example.app

    secret="bench-secret-$(date +%s%N)-0123456789abcdef"
    server_extra=(HERALD_VAPID_PRIVATE_KEY="$vapid_private" HERALD_VAPID_SUBJECT=mailto:bench@example.com
        HERALD_WEB_ORIGIN=https://example.com HERALD_WEB_PUSH_HOSTS="127.0.0.1:$emulator_webpush")
    start_server "$url"
    start_perf "$server_pid"
    log "One alert to every subscription of the app"
    measured_send "$port" '{"target": {"topic": "com.example.app"}, "alert": {"title": "Hello", "body": "to everyone"}}'
    stop_perf
    peak=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$server_pid/status")
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    counters=$(curl -s "http://127.0.0.1:$emulator_admin/counters")

    read -r endpoint p256dh auth < <(python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); print(m["endpoints"][0], m["keys"]["p256dh"], m["keys"]["auth"])' "$work/subscriptions.json")
    log "Ceiling: herald webpush send alone, $devices messages to one subscription of the same emulator (1000 in flight, 4 connections)"
    bare_emulator_cpu=$(sink_cpu_micros)
    timed=()
    if [ -x /usr/bin/time ]; then timed=(/usr/bin/time -f '%U %S' -o "$work/bare-sender.cpu"); fi
    summary=$("${timed[@]}" "$herald" webpush send --endpoint="$endpoint" --p256dh="$p256dh" --auth="$auth" \
        --vapid-key="$vapid_private" --subject mailto:bench@example.com --title Hello --body "to everyone" \
        --navigate https://example.com --ca-file "$work/ca.pem" --repeat "$devices" --concurrency 1000 --connections 4 \
        --summary-json | tail -n 1 || true)
    bare_emulator_cpu=$(( $(sink_cpu_micros) - bare_emulator_cpu ))
    python3 - "$record" "$summary" "$devices" "$backend" "$server_cpu" "$emulator_cpu" "$db_cpu" "$peak" \
        "$(cat "$work/bare-sender.cpu" 2>/dev/null)" "$bare_emulator_cpu" "$counters" <<'PY'
import json, sys
from datetime import datetime
record, summary, devices, backend = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
server_cpu, emulator_cpu, db_cpu, peak = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
bare_cpu, bare_emulator_cpu, counters = sys.argv[9].split(), int(sys.argv[10]), json.loads(sys.argv[11])
parse = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))
seconds = (parse(record["updatedAt"]) - parse(record["createdAt"])).total_seconds()
counts = record["counts"]
rate = devices / seconds
print("| Web Push fan-out | Subscriptions | Wall time | Messages/s | Peak RSS (server) | Accepted | Rejected | Failed |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
print(f"| {backend}, emulator | {devices:,} | {seconds:.1f} s | {rate:,.0f} | {peak} MB | {counts['accepted']:,} | {counts['rejected']:,} | {counts['failed']:,} |")
print()
database = f", PostgreSQL {db_cpu / devices:.1f} µs" if db_cpu > 0 else ""
print(f"CPU per message: server {server_cpu / devices:.1f} µs ({server_cpu / 1e6 / seconds:.2f} cores), "
      f"emulator {emulator_cpu / devices:.1f} µs ({emulator_cpu / 1e6 / seconds:.2f} cores){database}")
print(f"The emulator's push service: {counters.get('webPush')}")
print(f"Ceiling, herald webpush send alone: {summary['rate']:,.0f} messages/s ({summary['ok']:,} ok, {summary['failed']} failed); "
      f"fan-out / ceiling = {rate / summary['rate']:.2f}")
if len(bare_cpu) == 2 and summary["ok"]:
    per = (float(bare_cpu[0]) + float(bare_cpu[1])) * 1e6 / summary["ok"]
    print(f"CPU per message, herald webpush send alone: {per:.1f} µs (emulator {bare_emulator_cpu / summary['ok']:.1f} µs); "
          f"server / bare sender = {server_cpu / devices / per:.2f}")
PY
    ;;
transactional)
    seconds=${3:-30}
    connections=${4:-64}
    url=$(database_url)
    start_emulator
    token=$(printf 'ab%.0s' $(seq 1 32))
    "$herald" tokens add "$token" --topic com.example.app --environment production --database-url "$url" >/dev/null
    secret="bench-secret-$(date +%s%N)-0123456789abcdef"
    start_server "$url"
    start_perf "$server_pid"
    log "wrk posting one-token sends to herald serve on $backend ($seconds s, $connections connections)"
    server_cpu=$(cpu_micros "$server_pid")
    emulator_cpu=$(cpu_micros "${pids[0]}")
    switches=$(context_switches "$server_pid")
    read -r rps p99 errors p50 < <(TOKEN=$token SECRET=$secret \
        run_wrk "http://127.0.0.1:$port" scripts/bench/send.lua "$seconds" "$connections")
    server_cpu=$(( $(cpu_micros "$server_pid") - server_cpu ))
    switches=$(( $(context_switches "$server_pid") - switches ))
    emulator_cpu=$(( $(cpu_micros "${pids[0]}") - emulator_cpu ))
    stop_perf
    accepted=$(curl -s "http://127.0.0.1:$emulator_admin/counters" | python3 -c 'import json, sys; print(json.load(sys.stdin)["accepted"])')
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    count=$(python3 -c "print(max(10000, int(float('$rps') * 10)))")
    log "Ceiling: herald send alone, $count notifications, $connections in flight on 1 connection"
    summary=$(bare_sender "$count" "$connections" 1 "$token")
    python3 - "$summary" "$rps" "$p50" "$p99" "$errors" "$backend" "$accepted" "$server_cpu" "$emulator_cpu" "$switches" "$seconds" <<'PY'
import json, sys
summary, rps, p50, p99, errors, backend, accepted, server_cpu, emulator_cpu, switches, seconds = json.loads(sys.argv[1]), float(sys.argv[2]), *sys.argv[3:]
print("| Transactional send (one token, inline) | Requests/s | p50 | p99 | Errors |")
print("| --- | ---: | ---: | ---: | ---: |")
print(f"| `POST /api/send`, {backend} | {rps:,.0f} | {p50} | {p99} | {errors} |")
print(f"| `herald send` alone (ceiling) | {summary['rate']:,.0f} | | | {summary['failed']} |")
print()
print(f"Accepted by the emulator during wrk: {accepted}; server / ceiling = {rps / summary['rate']:.2f}")
sends = int(accepted) or rps * int(seconds)  # (nothing reaches the emulator when the sender is stubbed out)
print(f"CPU per send during wrk: server {int(server_cpu) / sends:.0f} µs, emulator {int(emulator_cpu) / sends:.0f} µs; "
      f"server context switches per send: {int(switches) / sends:.1f}")
PY
    ;;
lanes)
    # Issue 24's aims for the scheduler, against the counting emulator: a 300-device send to one user while a
    # campaign paced at `rate: 1000` runs (20 tries, completion time from the send's createdAt to its updatedAt), and
    # one-token inline sends offered at a fixed rate (open loop, scripts/bench/open-loop.py), idle and during the
    # campaign.
    devices=${3:-1000000}
    inline_rate=${INLINE_RATE:-500}
    inline_seconds=${INLINE_SECONDS:-20}
    url=$(database_url)
    start_emulator
    seed_devices "$url" "$devices" com.example.app 1
    seed_devices "$url" 300 com.example.app $((devices + 1)) bench-user
    token=$(printf 'ab%.0s' $(seq 1 32))
    "$herald" tokens add "$token" --topic com.example.app --environment production --database-url "$url" >/dev/null
    secret="bench-secret-$(date +%s%N)-0123456789abcdef"
    start_server "$url"
    inline_body="{\"target\": {\"token\": \"$token\"}, \"alert\": \"your code is 123456\"}"
    open_loop() {
        python3 scripts/bench/open-loop.py "http://127.0.0.1:$port/api/send" "$inline_rate" "$inline_seconds" \
            --header "Authorization: Bearer $secret" --body "$inline_body"
    }
    log "Inline one-token sends, idle: $inline_rate/s for $inline_seconds s (open loop)"
    start_perf "$server_pid"
    server_cpu=$(cpu_micros "$server_pid")
    db_cpu=$(database_cpu_micros)
    switches=$(context_switches "$server_pid")
    idle=$(open_loop)
    server_cpu=$(( $(cpu_micros "$server_pid") - server_cpu ))
    db_cpu=$(( $(database_cpu_micros) - db_cpu ))
    switches=$(( $(context_switches "$server_pid") - switches ))
    stop_perf
    log "A campaign to $devices devices at rate 1000"
    campaign=$(curl -s -H "Authorization: Bearer $secret" "http://127.0.0.1:$port/api/send" \
        -d '{"target": {"topic": "com.example.app"}, "alert": "campaign", "rate": 1000}')
    campaign_id=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["id"])' "$campaign")
    log "Inline one-token sends during the campaign"
    busy=$(open_loop)
    log "20 sends to one user's 300 devices during the campaign"
    user_sends=$(python3 - "http://127.0.0.1:$port" "$secret" <<'PY'
import json, sys, time, urllib.request
from datetime import datetime
base, secret = sys.argv[1], sys.argv[2]
def call(method, path, body=None):
    request = urllib.request.Request(base + path, method=method, data=body and body.encode(),
                                     headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())
parse = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))
times = []
for _ in range(20):
    send = call("POST", "/api/send", '{"target": {"user": "bench-user"}, "alert": "your order shipped"}')
    while send["status"] in ("queued", "running"):
        time.sleep(0.01)
        send = call("GET", f"/api/sends/{send['id']}?limit=1")
    assert send["status"] == "completed" and send["counts"]["accepted"] == 300, send
    times.append((parse(send["updatedAt"]) - parse(send["createdAt"])).total_seconds())
times.sort()
print(json.dumps({"p50": times[9], "p99": times[-1], "min": times[0], "lane": send["lane"]}))
PY
)
    campaign_record=$(curl -s -H "Authorization: Bearer $secret" "http://127.0.0.1:$port/api/sends/$campaign_id?limit=1")
    curl -s -X DELETE -H "Authorization: Bearer $secret" "http://127.0.0.1:$port/api/sends/$campaign_id" >/dev/null
    python3 - "$idle" "$busy" "$user_sends" "$campaign_record" "$backend" "$devices" "$inline_rate" "$server_cpu" "$db_cpu" "$switches" <<'PY'
import json, sys
idle, busy, user, campaign = (json.loads(a) for a in sys.argv[1:5])
backend, devices, rate = sys.argv[5], int(sys.argv[6]), sys.argv[7]
server_cpu, db_cpu, switches = int(sys.argv[8]), int(sys.argv[9]), int(sys.argv[10])
print(f"Campaign: {devices:,} devices of one app at rate 1000 on {backend}; "
      f"{campaign['counts']['accepted']:,} sent while measuring ({campaign['status']}, lane {campaign['lane']})")
print()
print("| What | p50 | p99 | max | errors |")
print("| --- | ---: | ---: | ---: | ---: |")
print(f"| inline one-token send at {rate}/s, idle | {idle['p50_ms']} ms | {idle['p99_ms']} ms | {idle['max_ms']} ms | {idle['errors']} |")
print(f"| inline one-token send at {rate}/s, during the campaign | {busy['p50_ms']} ms | {busy['p99_ms']} ms | {busy['max_ms']} ms | {busy['errors']} |")
print(f"| 300-device user send ({user['lane']} lane), during the campaign, 20 tries | {user['p50'] * 1000:.0f} ms | {user['p99'] * 1000:.0f} ms | | 0 |")
print()
print(f"inline p99 during the campaign / idle = {busy['p99_ms'] / idle['p99_ms']:.2f} (aim ≤ 1.2 and < 10 ms)")
database = f", PostgreSQL {db_cpu / max(1, idle['requests']):.0f} µs" if db_cpu > 0 else ""
requests = max(1, idle['requests'])
print(f"CPU per inline send, idle: server {server_cpu / requests:.0f} µs{database}; "
      f"server context switches per send: {switches / requests:.1f}")
PY
    ;;
fairness)
    # Two apps' sends of DEVICES devices each, started together: how far apart they end (issue 24: within 10 %).
    devices=${3:-200000}
    url=$(database_url)
    start_emulator
    seed_devices "$url" "$devices" com.alpha.app 1
    seed_devices "$url" "$devices" com.beta.app $((devices + 1))
    credentials="\"keyFile\": \"$work/AuthKey_$key_id.p8\", \"keyId\": \"$key_id\", \"teamId\": \"$team_id\""
    printf '{"apps": [{"topic": "com.alpha.app", %s}, {"topic": "com.beta.app", %s}]}' "$credentials" "$credentials" \
        >"$work/apps.json"
    secret="bench-secret-$(date +%s%N)-0123456789abcdef"
    server_config="$work/apps.json" start_server "$url"
    log "One send to every device of each app, started together"
    ids=()
    for app in com.alpha.app com.beta.app; do
        answer=$(curl -s -H "Authorization: Bearer $secret" "http://127.0.0.1:$port/api/send" \
            -d "{\"target\": {\"topic\": \"$app\"}, \"alert\": \"hello\"}")
        ids+=("$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["id"])' "$answer")")
    done
    python3 - "http://127.0.0.1:$port" "$secret" "$devices" "$backend" "${ids[@]}" <<'PY'
import json, sys, time, urllib.request
from datetime import datetime
base, secret, devices, backend, ids = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
def get(path):
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {secret}"})
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())
parse = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))
records = {}
while len(records) < len(ids):
    for send_id in ids:
        record = get(f"/api/sends/{send_id}?limit=1")
        if record["status"] not in ("queued", "running"):
            records[send_id] = record
    time.sleep(0.5)
start = min(parse(r["createdAt"]) for r in records.values())
ends = [(parse(records[i]["updatedAt"]) - start).total_seconds() for i in ids]
print("| App | Devices | Ended after | Accepted |")
print("| --- | ---: | ---: | ---: |")
for app, send_id, end in zip(["com.alpha.app", "com.beta.app"], ids, ends):
    print(f"| {app} ({backend}) | {devices:,} | {end:.1f} s | {records[send_id]['counts']['accepted']:,} |")
print()
print(f"the later / the earlier = {max(ends) / min(ends):.3f} (aim ≤ 1.10)")
PY
    ;;
instances)
    # One send to DEVICES devices on PostgreSQL, with LATENCY of emulated APNs latency (100ms by default): run by one
    # `herald serve`, then by two on the same database (issue 24: two instances ≤ 0.6 × the time of one).
    [ "$backend" = postgres ] || { echo "instances needs postgres: two servers share one database" >&2; exit 2; }
    devices=${3:-300000}
    LATENCY=${LATENCY:-100ms}
    start_emulator
    secret="bench-secret-$(date +%s%N)-0123456789abcdef"
    results=()
    for count in 1 2; do
        url=$(database_url)
        seed_devices "$url" "$devices" com.example.app 1
        ports=()
        for index in $(seq 1 "$count"); do
            HERALD_INSTANCE_ID="bench-$index" start_server "$url"
            ports+=("$port")
        done
        log "One send to $devices devices, $count instance(s)"
        read -r -a cpu_before < <(head -n 1 /proc/stat)
        record=$(send_and_wait "${ports[0]}" \
            '{"target": {"topic": "com.example.app"}, "alert": {"title": "Hello", "body": "to everyone"}}')
        read -r -a cpu_after < <(head -n 1 /proc/stat)
        # The machine's busy share during the send (every process: servers, emulator, PostgreSQL): user through
        # steal, against the whole.
        busy=0 all=0
        for field in 1 2 3 4 5 6 7 8; do
            delta=$(( cpu_after[field] - cpu_before[field] ))
            all=$(( all + delta ))
            if [ "$field" -ne 4 ] && [ "$field" -ne 5 ]; then busy=$(( busy + delta )); fi
        done
        record=$(python3 -c 'import json, sys; r = json.loads(sys.argv[1]); r["machineBusy"] = int(sys.argv[2]) / max(1, int(sys.argv[3])); print(json.dumps(r))' "$record" "$busy" "$all")
        results+=("$record")
        for pid in "${pids[@]:1}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
        pids=("${pids[0]}")
        sleep 1
    done
    python3 - "$devices" "$LATENCY" "${results[@]}" <<'PY'
import json, sys
from datetime import datetime
devices, latency, records = int(sys.argv[1]), sys.argv[2], [json.loads(a) for a in sys.argv[3:]]
parse = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))
times = [(parse(r["updatedAt"]) - parse(r["createdAt"])).total_seconds() for r in records]
print(f"| Instances on one PostgreSQL | Devices | APNs latency | Wall time | Notifications/s | Accepted | Failed | Shards | Machine busy |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for count, (record, seconds) in enumerate(zip(records, times), start=1):
    shards = record.get("shards", [])
    print(f"| {count} | {devices:,} | {latency} | {seconds:.1f} s | {devices / seconds:,.0f} | "
          f"{record['counts']['accepted']:,} | {record['counts']['failed']:,} | {len(shards)} | {record['machineBusy']:.0%} |")
print()
print(f"two instances / one = {times[1] / times[0]:.2f} (aim ≤ 0.6)")
PY
    ;;
preferences)
    # Issue 27's cost of the rules about the person: the same send to every device with no rule, then with a category
    # that OPTED_OUT (10) percent of the people turned off and quiet hours that QUIET (20) percent of the devices are
    # in (dropped), alternately, ROUNDS (3) times each; the rules run in the device query, so the send with them should
    # take no longer (it sends fewer).
    devices=${3:-1000000}
    opted_out=${OPTED_OUT:-10}
    rounds=${ROUNDS:-3}
    url=$(database_url)
    start_emulator
    seed_devices "$url" "$devices" com.example.app 1
    log "Turning marketing off for $opted_out % of the devices' people (their tokens: no user or installation)"
    now=$(($(date +%s) * 1000000))
    choices="INSERT INTO preference_choices (topic, subject, category, enabled, updated_at)"
    case "$backend" in
        sqlite)
            python3 - "$work/herald.sqlite" "$devices" "$opted_out" "$now" "$choices" <<'PY'
import sqlite3, sys
path, devices, percent, now, insert = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
db = sqlite3.connect(path)
step = 100 // percent
db.executemany(insert + " VALUES ('com.example.app', ?, 'marketing', 0, ?)",
               ((f"t:{i:064x}", now) for i in range(1, devices + 1, step)))
db.commit()
PY
            ;;
        postgres)
            schema=$(sed -n 's/.*schema=\([a-z0-9_]*\).*/\1/p' <<<"$url")
            psql "${HERALD_BENCH_DATABASE_URL}" -q -c "SET search_path TO $schema; $choices
                SELECT 'com.example.app', 't:' || lpad(to_hex(i), 64, '0'), 'marketing', 0, $now
                FROM generate_series(1, $devices, 100 / $opted_out) AS i; ANALYZE preference_choices"
            ;;
    esac
    # Quiet hours: QUIET (20) percent of the devices (every fifth, by seed number) are in UTC, inside a window of the
    # two hours around now; the others registered no zone and count as being in Etc/GMT+12 (UTC-12), outside it.
    quiet=${QUIET:-20}
    quiet_step=$((100 / quiet))
    log "Putting $quiet % of the devices in a time zone inside the quiet hours"
    case "$backend" in
        sqlite)
            python3 - "$work/herald.sqlite" "$devices" "$quiet_step" <<'PY'
import sqlite3, sys
path, devices, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
db = sqlite3.connect(path)
db.executemany("UPDATE devices SET time_zone = 'UTC' WHERE token = ?",
               ((f"{i:064x}",) for i in range(step, devices + 1, step)))
db.commit()
PY
            ;;
        postgres)
            psql "${HERALD_BENCH_DATABASE_URL}" -q -c "SET search_path TO $schema; UPDATE devices SET time_zone = 'UTC'
                WHERE token IN (SELECT lpad(to_hex(i), 64, '0') FROM generate_series($quiet_step, $devices, $quiet_step) AS i);
                "
            psql "${HERALD_BENCH_DATABASE_URL}" -q -c "SET search_path TO $schema" -c "VACUUM ANALYZE devices"
            ;;
    esac
    quiet_window="$(date -u -d '-1 hour' +%H:%M)-$(date -u -d '+1 hour' +%H:%M)"
    # Own quiet hours: OWN (10) percent of the people (every tenth seed: devices in UTC, in the app's quiet hours), half
    # with none ("off": awake now), half with a window of their own that also holds now: their devices are judged by
    # (zone, window) pair in the device query, and the first half are sent to.
    own=${OWN:-10}
    own_step=$((100 / own))
    own_quiet="$(date -u -d '-2 hour' +%H:%M)-$(date -u -d '+1 hour' +%H:%M)"
    log "Giving $own % of the people their own quiet hours (half none, half $own_quiet)"
    own_insert="INSERT INTO preference_quiet_hours (topic, subject, quiet_hours, updated_at)"
    case "$backend" in
        sqlite)
            python3 - "$work/herald.sqlite" "$devices" "$own_step" "$now" "$own_insert" "$own_quiet" <<'PY'
import sqlite3, sys
path, devices, step, now, insert, window = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
db = sqlite3.connect(path)
db.executemany(insert + " VALUES ('com.example.app', ?, ?, ?)",
               ((f"t:{i:064x}", "off" if (i // step) % 2 == 0 else window, now) for i in range(step, devices + 1, step)))
db.commit()
PY
            ;;
        postgres)
            psql "${HERALD_BENCH_DATABASE_URL}" -q -c "SET search_path TO $schema; $own_insert
                SELECT 'com.example.app', 't:' || lpad(to_hex(i), 64, '0'),
                CASE WHEN (i / $own_step) % 2 = 0 THEN 'off' ELSE '$own_quiet' END, $now
                FROM generate_series($own_step, $devices, $own_step) AS i; ANALYZE preference_quiet_hours"
            ;;
    esac
    cap=${CAP:-marketing:1000/1d}
    secret="bench-secret-$(date +%s%N)-0123456789abcdef"
    HERALD_PREFERENCE_CATEGORIES=marketing HERALD_QUIET_HOURS="$quiet_window" HERALD_QUIET_HOURS_TIME_ZONE=Etc/GMT+12 \
        HERALD_FREQUENCY_CAPS="$cap" start_server "$url"
    records=()
    for round in $(seq 1 "$rounds"); do
        for category in none marketing; do
            log "Round $round: one send to every device, category $category"
            # Without rules: no category (so no cap), quiet hours ignored. With: the category and its cap, and quiet
            # hours dropped (a deferral would last until the window's end).
            rule=", \"quietHours\": \"ignore\""
            [ "$category" = none ] || rule=", \"preferenceCategory\": \"$category\", \"quietHours\": \"drop\""
            records+=("$(send_and_wait "$port" "{\"target\": {\"topic\": \"com.example.app\"}, \"alert\": \"sale\"$rule}")")
        done
    done
    python3 - "$devices" "$backend" "${records[@]}" <<'PY'
import json, statistics, sys
from datetime import datetime
devices, backend, records = int(sys.argv[1]), sys.argv[2], [json.loads(a) for a in sys.argv[3:]]
parse = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))
seconds = lambda r: (parse(r["updatedAt"]) - parse(r["createdAt"])).total_seconds()
plain, ruled = [seconds(r) for r in records[0::2]], [seconds(r) for r in records[1::2]]
print("| Send to every device | Devices | Sent | Suppressed: preference | Suppressed: quiet hours | Suppressed: cap | Wall times | Median |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for name, runs, record in (("no rule", plain, records[0]), ("every rule", ruled, records[1])):
    suppressed = record.get('suppressed', {})
    print(f"| {backend}, {name} | {devices:,} | {record['counts']['accepted']:,} | "
          f"{suppressed.get('preference', 0):,} | {suppressed.get('quietHoursDropped', 0):,} | "
          f"{suppressed.get('frequencyCap', 0):,} | {', '.join(f'{t:.1f}' for t in runs)} s | {statistics.median(runs):.1f} s |")
print()
print(f"the send with the rule runs at {statistics.median(plain) / statistics.median(ruled):.2f} × the speed of the one "
      f"without, over the same target (aim ≥ 0.9)")
PY
    ;;
retention)
    # Issue 25's retention figures: the database's size after SENDS (10) sends to DEVICES devices, and after retention
    # deleted their outcomes; and registrations offered at REGISTER_RATE (500) a second for REGISTER_SECONDS (60), open
    # loop (scripts/bench/open-loop.py), while retention deletes and then idle (REGISTER_SECONDS should cover the run:
    # retention's line says how long it took).
    devices=${3:-100000}
    sends=${SENDS:-10}
    register_rate=${REGISTER_RATE:-500}
    register_seconds=${REGISTER_SECONDS:-60}
    url=$(database_url)
    start_emulator
    seed_devices "$url" "$devices" com.example.app 1
    secret="bench-secret-$(date +%s%N)-0123456789abcdef"
    stop_server() {
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    }
    run_sends() {  # appends each send's wall time in seconds to $work/fanout.txt
        log "$sends sends to every one of $devices devices"
        local started
        for _ in $(seq 1 "$sends"); do
            started=$(date +%s%N)
            send_and_wait "$port" '{"target": {"topic": "com.example.app"}, "alert": "campaign"}' >/dev/null
            echo "$(( ($(date +%s%N) - started) / 1000000 ))" >>"$work/fanout.txt"
        done
    }
    seeded=$(database_size)
    start_server "$url"
    run_sends
    stop_server
    before=$(database_size)
    if [ "$backend" = sqlite ]; then
        # What the outcomes cost, table by table and index by index (SQLite's dbstat).
        breakdown=$(python3 - "$work/herald.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 8").fetchall()
print(", ".join(f"{name} {size / 1e6:,.0f} MB" for name, size in rows))
PY
)
    else
        # The same for PostgreSQL: each relation of Herald's schema (tables, their indexes, TOAST), largest first.
        breakdown=$(psql "${HERALD_BENCH_DATABASE_URL}" -At -c "SELECT string_agg(c.relname || ' ' || \
            round(pg_relation_size(c.oid) / 1e6) || ' MB', ', ' ORDER BY pg_relation_size(c.oid) DESC) FROM (SELECT c.oid, \
            c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
            WHERE n.nspname = '$(sed -n 's/.*schema=\([a-z0-9_]*\).*/\1/p' <<<"$url")' \
            ORDER BY pg_relation_size(c.oid) DESC LIMIT 8) c")
    fi
    # 40 days older: past the outcomes' 30 days, within the sends' 90 (a send keeps its counts).
    shift_sql="UPDATE sends SET created_at = created_at - 3456000000000, updated_at = updated_at - 3456000000000"
    case "$backend" in
        sqlite) python3 -c 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute(sys.argv[2]); db.commit()' \
            "$work/herald.sqlite" "$shift_sql" ;;
        postgres)
            # The periods of send records (migration 31) too: the open one, which holds the sends, closed right after
            # the last of them ended and the next opened, as a retention run then would have (herald's roll, in SQL).
            # A build before migration 31 has no periods: only the sends move.
            roll_sql="DO \$\$ DECLARE p record; shift bigint := 3456000000000; BEGIN \
                IF to_regclass('send_record_periods') IS NULL THEN RETURN; END IF; \
                SELECT * INTO p FROM send_record_periods ORDER BY period DESC LIMIT 1; \
                EXECUTE format('CREATE TABLE send_outcomes_p%s PARTITION OF send_outcomes FOR VALUES FROM (%s) TO (%s)', \
                    p.period + 1, p.end_ref, p.end_ref + 1099511627776); \
                EXECUTE format('CREATE TABLE send_acceptances_p%s PARTITION OF send_acceptances FOR VALUES FROM (%s) TO (%s)', \
                    p.period + 1, p.end_ref, p.end_ref + 1099511627776); \
                UPDATE send_record_periods SET closed_at = closed_at - shift WHERE period < p.period; \
                UPDATE send_record_periods SET opened_at = opened_at - shift, \
                    closed_at = (SELECT max(updated_at) + 1 FROM sends) WHERE period = p.period; \
                INSERT INTO send_record_periods (period, first_ref, end_ref, opened_at, length) VALUES (p.period + 1, \
                    p.end_ref, p.end_ref + 1099511627776, (SELECT max(updated_at) + 1 FROM sends), p.length); \
                PERFORM setval(pg_get_serial_sequence('sends', 'ref'), p.end_ref - 1); END \$\$"
            psql "${HERALD_BENCH_DATABASE_URL}" -q -v ON_ERROR_STOP=1 \
                -c "SET search_path TO $(sed -n 's/.*schema=\([a-z0-9_]*\).*/\1/p' <<<"$url")" -c "$shift_sql" -c "$roll_sql" ;;
    esac
    log "Retention at start, with registrations at $register_rate/s for $register_seconds s (open loop)"
    register_body='{"token": "00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9", "debug": true}'
    open_loop() {
        python3 scripts/bench/open-loop.py "http://127.0.0.1:$port/api/token" "$register_rate" "$register_seconds" \
            --body "$register_body"
    }
    # PG_WAIT_SAMPLES=1: what the registrations wait for, while retention deletes and idle: pg_stat_activity sampled
    # every 10 ms in one session, each sample its own transaction (a sampler holding one transaction open for the
    # minute would keep every row version the registrations leave from being pruned, and slow what it measures), the
    # active statements by kind and wait event; then what checkpoints, the WAL and autovacuum did meanwhile.
    sample_waits() {  # LABEL: in the background, for REGISTER_SECONDS
        [ "$backend" = postgres ] && [ "${PG_WAIT_SAMPLES:-0}" = 1 ] || return 0
        local schema
        schema=$(sed -n 's/.*schema=\([a-z0-9_]*\).*/\1/p' <<<"$url")
        {
            psql "${HERALD_BENCH_DATABASE_URL}" -At -F ' ' -c "SELECT '$1: checkpoints and buffers before', \
                checkpoints_timed, checkpoints_req, buffers_checkpoint, buffers_backend FROM pg_stat_bgwriter" \
                -c "SELECT '$1: WAL before', wal_records, wal_fpi, wal_bytes, wal_write, wal_sync FROM pg_stat_wal"
            psql "${HERALD_BENCH_DATABASE_URL}" -At -F ' ' -c "CREATE TEMP TABLE samples (what text, wait text)" -c " \
                DO \$\$ BEGIN FOR i IN 1..$((register_seconds * 100)) LOOP PERFORM pg_stat_clear_snapshot(); \
                INSERT INTO samples SELECT CASE WHEN query LIKE '%herald_register%' THEN 'register' \
                WHEN query LIKE 'DELETE%' OR query LIKE 'UPDATE sends SET outcomes_deleted_at%' \
                OR query LIKE 'SELECT id FROM sends WHERE outcomes_deleted_at%' THEN 'retention' \
                ELSE left(regexp_replace(query, '\\s+', ' ', 'g'), 40) END, \
                coalesce(wait_event_type || ':' || wait_event, 'on CPU') FROM pg_stat_activity \
                WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'; \
                COMMIT; PERFORM pg_sleep(0.01); END LOOP; END \$\$" \
                -c "SELECT '$1: sampled', what, wait, count(*) FROM samples GROUP BY what, wait ORDER BY what, 4 DESC" \
                | grep -v '^CREATE TABLE$\|^DO$'
            psql "${HERALD_BENCH_DATABASE_URL}" -At -F ' ' -c "SELECT '$1: checkpoints and buffers after', \
                checkpoints_timed, checkpoints_req, buffers_checkpoint, buffers_backend FROM pg_stat_bgwriter" \
                -c "SELECT '$1: WAL after', wal_records, wal_fpi, wal_bytes, wal_write, wal_sync FROM pg_stat_wal" \
                -c "SELECT '$1: autovacuum so far', relname, autovacuum_count, autoanalyze_count, n_dead_tup \
                    FROM pg_stat_user_tables WHERE schemaname = '$schema' AND autovacuum_count + autoanalyze_count > 0"
        } >>"$work/waits.txt" 2>&1 &
        sampler_pid=$!
    }
    sampled_open_loop() {  # LABEL
        sampler_pid=
        sample_waits "$1"
        open_loop
        if [ -n "$sampler_pid" ]; then wait "$sampler_pid" || true; fi
    }
    # Info level, for retention's line; the server's first run starts once the store is migrated.
    server_log_level=info start_server "$url"
    during=$(sampled_open_loop during)
    for _ in $(seq 1 600); do grep -q "Retention deleted" "$work/serve.log" && break; sleep 1; done
    retention_line=$(grep -m1 "Retention deleted" "$work/serve.log" || echo "retention did not finish")
    log "Registrations again, retention idle"
    idle=$(sampled_open_loop idle)
    if [ -f "$work/waits.txt" ]; then cat "$work/waits.txt"; echo; fi
    stop_server
    after=$(database_size)
    # The space retention freed is reused: as many sends again, and their outcomes fit in it (PostgreSQL's files do
    # not shrink; SQLite's grow back).
    again=$after
    if [ "${AGAIN:-1}" = 1 ]; then
        start_server "$url"
        run_sends
        stop_server
        again=$(database_size)
    fi
    python3 - "$backend" "$devices" "$sends" "$seeded" "$before" "$after" "$again" "$during" "$idle" \
        "$retention_line" "$register_rate" "${breakdown:-}" "$(cat "$work/fanout.txt")" <<'PY'
import json, statistics, sys
backend, devices, sends = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seeded, before, after, again = [list(map(int, a.split())) for a in sys.argv[4:8]]
during, idle = json.loads(sys.argv[8]), json.loads(sys.argv[9])
line, rate, breakdown = sys.argv[10], sys.argv[11], sys.argv[12]
fanout = [int(ms) / 1000 for ms in sys.argv[13].split()]
mb = lambda b: f"{b / 1e6:,.0f} MB"
outcomes = sends * devices
print(f"| {backend}: {sends} sends × {devices:,} devices | seeded | after the sends | after retention | after {sends} sends again |")
print("| --- | ---: | ---: | ---: | ---: |")
print(f"| {'file' if backend == 'sqlite' else 'pg_database_size'} | {mb(seeded[0])} | {mb(before[0])} | {mb(after[0])} | {mb(again[0])} |")
if len(before) > 1:
    print(f"| Herald's schema (tables, indexes, TOAST) | {mb(seeded[1])} | {mb(before[1])} | {mb(after[1])} | {mb(again[1])} |")
print(f"| growth per outcome | | {(before[-1] - seeded[-1]) / outcomes:,.0f} bytes | | |")
print()
if breakdown:
    print(f"After the sends, by table and index: {breakdown}")
    print()
print(f"Registrations at {rate}/s, open loop: during retention p50 {during['p50_ms']:.1f} ms, p99 {during['p99_ms']:.1f} ms, "
      f"max {during['max_ms']:.0f} ms, errors {during['errors']}; idle p50 {idle['p50_ms']:.1f} ms, p99 {idle['p99_ms']:.1f} ms, "
      f"max {idle['max_ms']:.0f} ms; p99 ratio {during['p99_ms'] / max(idle['p99_ms'], 0.001):.1f}")
print(line[line.index("Retention deleted"):] if "Retention deleted" in line else line)
print(f"Fan-out: {len(fanout)} sends to {devices:,} devices, wall times {', '.join(f'{t:.1f}' for t in fanout)} s; "
      f"median {statistics.median(fanout):.1f} s, {devices / statistics.median(fanout):,.0f} devices/s")
PY
    ;;
*)
    echo "usage: scripts/bench-server.sh register|fanout|transactional|lanes|fairness|instances|retention [sqlite|postgres] [...]" >&2
    exit 2
    ;;
esac
