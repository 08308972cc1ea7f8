#!/usr/bin/env bash
# Soak test of crashes and shutdowns; results go to docs/reliability.md.
#
#   scripts/soak.sh [MINUTES] [sqlite|postgres] [DEVICES]        defaults: 5 sqlite 100000
#
# Runs `herald serve` (release build) against `herald emulator` in its own process, with faults (1 % 503, 0.5 % 429,
# 50–150 ms of latency; HERALD_SOAK_FAULTS replaces the first two, e.g. "--fault503 0.01 --goaway-rate 0.0005"),
# and for MINUTES keeps killing and restarting the server: `kill -9` and SIGTERM in turn, 3–8 s apart, while a
# client registers new tokens and background sends to DEVICES seeded devices are queued (a new one whenever fewer
# than two are unfinished), so a kill lands in the middle of a send. Then it restarts the server once more, lets
# every send finish, and prints:
#   - lost: devices of a finished send without an outcome, and sends that never finished;
#   - duplicates: the emulator's count of apns-ids it saw twice (every re-send keeps its device's apns-id), in all
#     and per kill (those that appear between a restart and the next kill are charged to the kill);
#   - acknowledged-but-missing registrations: tokens the server answered 200/201 for and does not have;
#   - resume times: from the restarted process's start to the interrupted send's next recorded outcome.
#
# PostgreSQL: set HERALD_SOAK_DATABASE_URL to a database the script may fill (it creates a schema per run). Every
# restart keeps the instance id (HERALD_INSTANCE_ID=soak), so the resume times are those of a restarted instance; run
# with HERALD_SOAK_INSTANCE_IDS=each to give every restart a new id and measure another instance's take-over (the
# lease) instead.
# HERALD_SOAK_BINARY runs another herald binary instead of building one; HERALD_SOAK_KEEP names a folder to copy the
# server's and the emulator's logs to. Needs curl and python3. Everything listens on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

minutes=${1:-5}
backend=${2:-sqlite}
devices=${3:-100000}
work=$(mktemp -d /tmp/herald-soak.XXXXXX)
emulator_pid=
cleanup() {
    if [ -n "$emulator_pid" ]; then kill "$emulator_pid" 2>/dev/null || true; wait "$emulator_pid" 2>/dev/null || true; fi
    if [ -n "${HERALD_SOAK_KEEP:-}" ]; then cp "$work"/*.log "$HERALD_SOAK_KEEP"/ 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

log() { printf '==> %s\n' "$*" >&2; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

if [ -n "${HERALD_SOAK_BINARY:-}" ]; then
    herald=$HERALD_SOAK_BINARY  # another build, to try the script itself
else
    log "Building herald (release)"
    swift build -c release --product herald 2>&1 | tail -n 3 >&2
    herald="$root/.build/release/herald"
fi

case "$backend" in
    sqlite) url="sqlite://$work/herald.sqlite" ;;
    postgres)
        : "${HERALD_SOAK_DATABASE_URL:?set HERALD_SOAK_DATABASE_URL to a PostgreSQL database the script may fill}"
        schema="soak_$(date +%s)"
        case "$HERALD_SOAK_DATABASE_URL" in
            *\?*) url="$HERALD_SOAK_DATABASE_URL&schema=$schema" ;;
            *) url="$HERALD_SOAK_DATABASE_URL?schema=$schema" ;;
        esac
        ;;
    *) echo "backend is sqlite or postgres" >&2; exit 2 ;;
esac

log "Starting herald emulator with faults"
emulator_production=$(free_port)
emulator_development=$(free_port)
emulator_admin=$(free_port)
"$herald" emulator --production-port "$emulator_production" --development-port "$emulator_development" \
    --admin-port "$emulator_admin" --ca-file "$work/ca.pem" --counting-only \
    ${HERALD_SOAK_FAULTS:---fault503 0.01 --fault429 0.005} --latency 50ms-150ms >"$work/emulator.log" 2>&1 &
emulator_pid=$!
for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$emulator_admin/health" && break; sleep 0.1; done

log "Seeding $devices devices tagged soak"
"$herald" tokens add "$(printf 'ff%.0s' $(seq 1 32))" --debug --database-url "$url" >/dev/null  # migrates
"$herald" tokens remove "$(printf 'ff%.0s' $(seq 1 32))" --database-url "$url" >/dev/null
for i in $(seq 1 "$devices"); do printf '%064x\n' "$i"; done >"$work/seed.txt"
# Through the CLI's bulk path would take minutes; the registry's columns are documented in docs/storage.md.
python3 - "$backend" "$url" "$work/seed.txt" <<'PY'
import sys, time, json, subprocess
backend, url, seed = sys.argv[1], sys.argv[2], sys.argv[3]
now = int(time.time() * 1_000_000)
tokens = [line.strip() for line in open(seed)]
rows = [(t, "com.example.app", "development" if i % 2 else "production", "device", '["soak"]', now, now, now)
        for i, t in enumerate(tokens)]
insert_device = ("INSERT INTO devices (token, topic, environment, token_kind, tags, registered_at, created_at, updated_at) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
insert_tag = "INSERT INTO device_tags (tag, token) VALUES ('soak', ?)"
if backend == "sqlite":
    import sqlite3
    db = sqlite3.connect(url[len("sqlite://"):])
    db.executemany(insert_device, rows)
    db.executemany(insert_tag, [(t,) for t in tokens])
    db.commit()
else:
    import re
    schema = re.search(r"schema=([a-z0-9_]+)", url).group(1)
    base = re.sub(r"[?&]schema=[a-z0-9_]+", "", url)
    values = ",".join(f"('{t}','com.example.app','{'development' if i % 2 else 'production'}','device','[\"soak\"]',{now},{now},{now})"
                      for i, t in enumerate(tokens))
    tags = ",".join(f"('soak','{t}')" for t in tokens)
    sql = (f"SET search_path TO {schema}; INSERT INTO devices (token, topic, environment, token_kind, tags, registered_at, "
           f"created_at, updated_at) VALUES {values}; INSERT INTO device_tags (tag, token) VALUES {tags};")
    subprocess.run(["psql", base, "-q", "-v", "ON_ERROR_STOP=1"], input=sql, text=True, check=True)
PY

secret="soak-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
port=$(free_port)
log "Soaking for $minutes minutes on $backend: kill -9 and SIGTERM in turn, registrations and sends meanwhile"
env -u HERALD_CONFIG HERALD_LISTEN="127.0.0.1:$port" HERALD_DATABASE_URL="$url" HERALD_RATE_LIMIT=0 \
    HERALD_LOG_LEVEL=notice HERALD_APNS=custom HERALD_APNS_PRODUCTION_PORT="$emulator_production" \
    HERALD_APNS_DEVELOPMENT_PORT="$emulator_development" HERALD_APNS_CA_FILE="$work/ca.pem" \
    HERALD_KEY_FILE="$work/AuthKey_EMULATOR01.p8" HERALD_TEAM_ID=EMULATORTM \
    HERALD_API_KEYS="soak:send+admin:$secret" HERALD_INSTANCE_ID=soak \
    python3 - "$herald" "$port" "$secret" "$minutes" "$emulator_admin" "$work" "$devices" <<'PY'
import http.client, json, os, random, signal, statistics, subprocess, sys, threading, time

herald, port, secret, minutes, admin, work, devices = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7])
random.seed(12)

def call(method, path, body=None, timeout=10):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, (json.loads(data) if data else None)

def start():
    log = open(os.path.join(work, "serve.log"), "a")
    environment = dict(os.environ)
    if os.environ.get("HERALD_SOAK_INSTANCE_IDS") == "each":
        environment["HERALD_INSTANCE_ID"] = f"soak-{time.monotonic_ns()}"
    process = subprocess.Popen([herald, "serve"], cwd=work, stdout=log, stderr=subprocess.STDOUT, env=environment)
    started = time.monotonic()
    while True:
        try:
            if call("GET", "/ready", timeout=1)[0] == 200:
                return process, started
        except OSError:
            pass
        if process.poll() is not None:
            sys.exit(f"herald serve exited with {process.returncode}: see {work}/serve.log")
        time.sleep(0.05)

# Registrations go on the whole time, through restarts; only a 200/201 counts as acknowledged.
acknowledged, stop = [], threading.Event()
def register():
    while not stop.is_set():
        token = os.urandom(32).hex()
        try:
            status, _ = call("POST", "/api/token", {"token": token, "debug": True, "userId": "soak"}, timeout=5)
            if status in (200, 201):
                acknowledged.append(token)
        except OSError:
            time.sleep(0.05)
registrar = threading.Thread(target=register, daemon=True)

def progress(send_id):
    status, record = call("GET", f"/api/sends/{send_id}?limit=1", timeout=5)
    return record["status"], sum(record["counts"].values())

def duplicates():
    connection = http.client.HTTPConnection("127.0.0.1", admin, timeout=10)
    connection.request("GET", "/counters")
    return json.loads(connection.getresponse().read())["duplicateApnsIds"]

sends, kills, resumes = [], {"kill -9": 0, "SIGTERM": 0}, {"kill -9": [], "SIGTERM": []}
# Re-sends show up after the restart: those until the next kill are charged to this kill.
resent = {"kill -9": [], "SIGTERM": []}
deadline = time.monotonic() + minutes * 60
process, _ = start()
registrar.start()
cycle = 0
while time.monotonic() < deadline:
    if sum(1 for s in sends if progress(s)[0] not in ("completed", "failed")) < 2:
        status, answer = call("POST", "/api/send", {"target": {"tag": "soak"}, "alert": {"title": f"soak {cycle}"}})
        assert status == 202, (status, answer)
        sends.append(answer["id"])
    time.sleep(random.uniform(3, 8))
    # The send in progress now: the oldest one not finished.
    running = next((s for s in sends if progress(s)[0] not in ("completed", "failed")), None)
    before = progress(running)[1] if running else None
    if cycle > 0:
        resent[how].append(duplicates() - duplicates_at_kill)
    how = "kill -9" if cycle % 2 == 0 else "SIGTERM"
    duplicates_at_kill = duplicates()
    process.send_signal(signal.SIGKILL if how == "kill -9" else signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        print(f"SIGTERM did not end the server within 60 s (cycle {cycle}); killing it", file=sys.stderr)
        process.kill()
        process.wait()
    kills[how] += 1
    launched = time.monotonic()
    process, _ = start()
    if running:
        while True:
            state, total = progress(running)
            if state in ("completed", "failed") or total > before:
                resumes[how].append(time.monotonic() - launched)
                break
            if time.monotonic() - launched > 300:
                resumes[how].append(float("inf"))
                break
            time.sleep(0.05)
    cycle += 1

stop.set()
registrar.join()
# Let every send finish on the last instance.
while any(progress(s)[0] not in ("completed", "failed") for s in sends):
    time.sleep(0.5)
if cycle > 0:
    resent[how].append(duplicates() - duplicates_at_kill)
lost, unfinished, failed = 0, 0, 0
for s in sends:
    status, record = call("GET", f"/api/sends/{s}?limit=1")
    if record["status"] != "completed":
        unfinished += 1
    lost += record["targetCount"] - sum(record["counts"].values())
    failed += record["counts"]["failed"]
missing = sum(1 for token in acknowledged if call("GET", f"/api/devices/{token}")[0] != 200)
connection = http.client.HTTPConnection("127.0.0.1", admin, timeout=10)
connection.request("GET", "/counters")
counters = json.loads(connection.getresponse().read())
process.send_signal(signal.SIGTERM)
process.wait(timeout=60)

def summary(values):
    if not values:
        return "-"
    return f"median {statistics.median(values):.2f} s, max {max(values):.2f} s ({len(values)} restarts)"
print(f"| Soak | {minutes:g} min | {len(sends)} sends of {devices:,} devices | {kills['kill -9']} × kill -9 | {kills['SIGTERM']} × SIGTERM |")
print(f"lost: {lost} (sends not completed: {unfinished}); outcomes recorded as failed: {failed}")
print(f"duplicates (emulator, duplicate apns-ids): {counters['duplicateApnsIds']} in all")
for how in ("kill -9", "SIGTERM"):
    if resent[how]:
        print(f"  after {how}: mean {statistics.mean(resent[how]):.0f}, max {max(resent[how])} per {how}")
print(f"accepted by the emulator: {counters['accepted']}; faults: {counters['faults']}; GOAWAYs: {counters.get('goAways', 0)}")
print(f"registrations acknowledged: {len(acknowledged)}, missing afterwards: {missing}")
print(f"resume after kill -9: {summary(resumes['kill -9'])}")
print(f"resume after SIGTERM: {summary(resumes['SIGTERM'])}")
PY
