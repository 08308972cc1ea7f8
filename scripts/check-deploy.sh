#!/usr/bin/env bash
# Checks everything in deploy/ (docs/operations.md), from a clean machine, in about a minute and a half:
#   1. deploy/kubernetes: every object against the Kubernetes schemas (kubernetes-validate, bundled, offline), then
#      how they fit together and fit the code (scripts/deploy/check-manifests.py); the kustomize rendering when kubectl
#      is installed (it is not in Debian);
#   2. deploy/systemd: `systemd-analyze verify` (no warning allowed) and its offline security exposure;
#   3. deploy/prometheus: `promtool check rules`, `promtool test rules` (each alert has a test);
#   4. a real `herald serve` under the unit's seccomp filters (SystemCallFilter, RestrictAddressFamilies,
#      MemoryDenyWriteExecute), sending to `herald emulator` while Debian's Prometheus scrapes it and evaluates the
#      rules: each Grafana panel's query returns data, each recording rule too, each metric name is exported, and the
#      Deployment's probe paths answer 200 (scripts/deploy/check-live.py);
#   5. `herald serve` as the unit runs it: an unprivileged user, no capabilities, a read-only file system but for its
#      state directory, the same filters; a send must reach the emulator.
# HERALD_BINARY names the herald to run (default .build/debug/herald, what CI builds). Installs what is missing
# (Debian's prometheus, python3-seccomp; PyPI's kubernetes-validate, PyYAML). Everything listens on 127.0.0.1, on free
# ports; every process it starts is stopped on exit; the whole run is killed after CHECK_DEPLOY_TIMEOUT seconds (600).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ -z "${CHECK_DEPLOY_BOUNDED:-}" ]; then
    export CHECK_DEPLOY_BOUNDED=1
    exec timeout -k 15 "${CHECK_DEPLOY_TIMEOUT:-600}" "$0" "$@"
fi

started=$(date +%s)
log() { printf '\n==> %s\n' "$*"; }
step() { printf '  %s\n' "$*"; }
fail() {
    printf '\n✘ check-deploy: %s\n' "$*" >&2
    exit 1
}

herald=${HERALD_BINARY:-.build/debug/herald}
case "$herald" in /*) ;; *) herald="$root/$herald" ;; esac
[ -x "$herald" ] || fail "no herald binary at $herald: build it (swift build) or set HERALD_BINARY"

work=$(mktemp -d /tmp/herald-check-deploy.XXXXXX)
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    # Every process must stop on SIGTERM: a server that does not within 30 s is a bug (its log says, every 10 s, what
    # the stop waits for), reported with the logs below, then killed.
    local deadline=$(($(date +%s) + 30))
    for pid in "${pids[@]}"; do
        while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
        if kill -0 "$pid" 2>/dev/null; then
            printf '\n✘ check-deploy: %s did not stop within 30 s of SIGTERM\n' "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" >&2
            kill -9 "$pid" 2>/dev/null || true
            [ "$status" -ne 0 ] || status=1
        fi
        wait "$pid" 2>/dev/null || true
    done
    if [ "$status" -ne 0 ]; then
        # What the servers said; they never log a secret, a key or a full token.
        for file in "$work"/*.log; do
            [ -s "$file" ] || continue
            printf '\n--- %s (last lines)\n' "$(basename "$file")" >&2
            tail -n 15 "$file" >&2
        done
    fi
    rm -rf "$work"
    printf '\ncheck-deploy: %s after %d s\n' "$([ "$status" -eq 0 ] && echo passed || echo FAILED)" \
        "$(($(date +%s) - started))"
    exit "$status"
}
trap cleanup EXIT
trap 'echo "check-deploy: stopped (signal or CHECK_DEPLOY_TIMEOUT)" >&2; exit 124' TERM INT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() {  # URL [SECONDS]: until it answers 200, or the process started last has ended
    local tries=$((${2:-30} * 10))
    for _ in $(seq 1 "$tries"); do
        if curl -sf -o /dev/null "$1"; then return 0; fi
        kill -0 "${pids[-1]}" 2>/dev/null || fail "the process that should answer $1 has ended"
        sleep 0.1
    done
    fail "$1 did not answer within ${2:-30} s"
}

log "Tools"
apt_packages=()
# "install ok installed": a removed package whose configuration files stay is still known to `dpkg -s`.
need_apt() {
    dpkg-query -W -f '${Status}' "$1" 2>/dev/null | grep -q 'install ok installed' || apt_packages+=("$1")
}
need_apt prometheus      # promtool, and the server that evaluates the dashboard's queries
need_apt python3-seccomp # run-hardened.py builds the unit's seccomp filters with libseccomp, as systemd does
need_apt systemd         # systemd-analyze
need_apt openssl
need_apt curl
if [ "${#apt_packages[@]}" -gt 0 ]; then
    step "installing Debian packages: ${apt_packages[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # The prometheus package would start its own service on :9090; this script starts its own on loopback.
    policy=/usr/sbin/policy-rc.d
    made_policy=0
    if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1; fi
    apt-get install -y -qq "${apt_packages[@]}" >/dev/null
    if [ "$made_policy" -eq 1 ]; then rm -f "$policy"; fi
fi
if ! python3 -c 'import kubernetes_validate, yaml' 2>/dev/null; then
    step "installing PyPI's kubernetes-validate and PyYAML"
    python3 -m pip install --quiet kubernetes-validate pyyaml
fi
step "$(promtool --version 2>&1 | head -n 1); $(systemd-analyze --version | head -n 1); kubernetes-validate $(python3 -m kubernetes_validate --version)"
step "herald: $herald"

log "[1/5] Kubernetes manifests (deploy/kubernetes)"
manifests=()
for file in deploy/kubernetes/*.yaml; do
    case "$file" in */kustomization.yaml | */servicemonitor.yaml) ;; *) manifests+=("$file") ;; esac
done
# The oldest Kubernetes still maintained when this was written, and the newest the package knows.
for version in 1.31.0 "$(python3 -m kubernetes_validate --version)"; do
    python3 -m kubernetes_validate --strict --quiet -k "$version" "${manifests[@]}" ||
        fail "deploy/kubernetes does not validate against Kubernetes $version (above)"
    step "${#manifests[@]} files valid against the Kubernetes $version schemas (strict: no unknown fields)"
done
step "servicemonitor.yaml: the Prometheus Operator's CRD has no bundled schema; checked structurally below"
python3 scripts/deploy/check-manifests.py deploy/kubernetes Sources || fail "deploy/kubernetes does not fit together (above)"
if command -v kubectl >/dev/null; then
    kubectl kustomize deploy/kubernetes >"$work/rendered.yaml" || fail "kubectl kustomize deploy/kubernetes failed"
    python3 -m kubernetes_validate --strict --quiet --no-warn "$work/rendered.yaml" ||
        fail "the kustomize rendering of deploy/kubernetes does not validate"
    step "kubectl kustomize renders it, and the rendering validates"
else
    step "kubectl is not installed (not in Debian): the kustomize rendering is not checked"
fi

log "[2/5] systemd unit (deploy/systemd)"
# verify needs ExecStart's binary to exist: a copy of the unit runs the binary under test instead of /usr/local/bin.
mkdir -p "$work/unit"
sed "s|^ExecStart=/usr/local/bin/herald |ExecStart=$herald |" deploy/systemd/herald.service >"$work/unit/herald.service"
grep -q "^ExecStart=$herald " "$work/unit/herald.service" || fail "herald.service's ExecStart is no longer /usr/local/bin/herald …"
# Unknown or misspelt settings are only warnings for verify: any output fails the check.
verify_output=$(systemd-analyze verify "$work/unit/herald.service" 2>&1) || fail "systemd-analyze verify: $verify_output"
[ -z "$verify_output" ] || fail "systemd-analyze verify warns: $verify_output"
step "systemd-analyze verify: no error, no warning"
exposure=$(systemd-analyze security --offline=true --threshold=20 "$work/unit/herald.service" 2>&1) ||
    fail "the unit's exposure is above 2.0: $(tail -n 1 <<<"$exposure")"
step "$(tail -n 1 <<<"$exposure" | sed 's/ for .*herald.service//')"
unknown_names=""
for name in $(grep -ohE '^#?HERALD_[A-Z0-9_]+' deploy/systemd/herald.env deploy/systemd/herald.service | tr -d '#' | sort -u) \
    $(grep -ohE 'HERALD_[A-Z0-9_]+=' deploy/systemd/herald.service | tr -d '=' | sort -u); do
    grep -rqF "\"$name\"" Sources || unknown_names="$unknown_names $name"
done
[ -z "$unknown_names" ] || fail "herald.env or herald.service set variables the code never reads:$unknown_names"
step "every HERALD_* name in herald.env and herald.service is read by the code"

log "[3/5] Prometheus rules (deploy/prometheus)"
promtool check rules deploy/prometheus/herald-rules.yml | sed 's/^/  /' || fail "promtool check rules"
(cd deploy/prometheus && promtool test rules herald-rules.test.yml) | sed 's/^/  /'
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "promtool test rules (above)"

log "[4/5] herald serve under the unit's seccomp filters, scraped by Prometheus: rules and dashboard on real data"
# The APNs: herald emulator with faults, so that every panel has something to show: 5 % 429s (retries), a GOAWAY
# every 25 streams (connection churn), latency from 10 to 40 ms (the latency histogram, and a background send that
# takes a few seconds).
chmod 755 "$work"
mkdir -p "$work/bin" "$work/state"
# A copy any user can run: the unprivileged server of step 5 may not reach a build folder under a home directory.
cp "$herald" "$work/bin/herald"
cp scripts/deploy/run-hardened.py "$work/bin/"
cp deploy/systemd/herald.service "$work/unit/hardened.service"
chmod 755 "$work/bin/herald" "$work/bin/run-hardened.py"
emulator_production=$(free_port)
emulator_development=$(free_port)
emulator_admin=$(free_port)
"$work/bin/herald" emulator --production-port "$emulator_production" --development-port "$emulator_development" \
    --broadcast-production-port 0 --broadcast-development-port 0 --channels-production-port 0 \
    --channels-development-port 0 --web-push-port 0 --admin-port "$emulator_admin" --ca-file "$work/ca.pem" \
    --fault-429 0.05 --goaway-after 25 --latency 10ms-40ms >"$work/emulator.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$emulator_admin/health"
# A second app whose key the emulator does not know: its pushes meet InvalidProviderToken, APNs's answer to a
# wrong .p8, for the token-auth panel and recording rule.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/AuthKey_WRONGKEY01.p8" 2>/dev/null
# A third app with a certificate shaped like Apple's (UID, common name, both environment extensions), for the
# certificate-expiry metric the alerts watch; nothing is sent to it.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 200 -keyout "$work/push.key" \
    -out "$work/push.pem" -subj "/UID=com.example.cert/CN=Apple Push Services: com.example.cert" \
    -addext "1.2.840.113635.100.6.3.1=DER:0500" -addext "1.2.840.113635.100.6.3.2=DER:0500" 2>/dev/null
chmod 644 "$work"/AuthKey_*.p8 "$work/ca.pem" "$work/push.key" "$work/push.pem"
cat >"$work/herald.json" <<EOF
{"apps": [
  {"topic": "com.example.app", "teamId": "EMULATORTM", "keyFile": "$work/AuthKey_EMULATOR01.p8"},
  {"topic": "com.example.other", "teamId": "WRONGTEAM1", "keyFile": "$work/AuthKey_WRONGKEY01.p8"},
  {"topic": "com.example.cert", "certificateFile": "$work/push.pem", "privateKeyFile": "$work/push.key"}]}
EOF
secret=$(python3 -c 'import secrets; print(secrets.token_urlsafe(40))')
server_environment=(
    HERALD_CONFIG="$work/herald.json" HERALD_DATABASE_URL=sqlite://herald.sqlite HERALD_APNS=custom
    HERALD_APNS_HOST=127.0.0.1 HERALD_APNS_PRODUCTION_PORT="$emulator_production"
    HERALD_APNS_DEVELOPMENT_PORT="$emulator_development" HERALD_APNS_CA_FILE="$work/ca.pem"
    HERALD_API_KEYS="check:send+admin:$secret" HERALD_INLINE_SEND_LIMIT=5 HERALD_RATE_LIMIT=0 HERALD_LOG_LEVEL=notice
)
server_port=$(free_port)
metrics_port=$(free_port)
# --keep-privileges: the filters only, as root; step 5 adds the unprivileged user. A refused call fails with the
# unit's EPERM here: as root (never under the unit) SQLite gives its journal the database's owner with fchown, which
# ~@privileged refuses and SQLite ignores.
(cd "$work/state" && exec env -u HERALD_LISTEN "${server_environment[@]}" HERALD_LISTEN="127.0.0.1:$server_port" \
    HERALD_METRICS_LISTEN="127.0.0.1:$metrics_port" \
    /usr/bin/python3 "$work/bin/run-hardened.py" "$work/unit/hardened.service" --keep-privileges -- \
    "$work/bin/herald" serve) >"$work/serve.log" 2>&1 &
pids+=($!)
server="http://127.0.0.1:$server_port"
wait_for "$server/ready" 60
step "$(head -n 1 "$work/serve.log")"

code=$(curl -s -o /dev/null -w '%{http_code}' "$server/metrics")
[ "$code" = 404 ] || fail "the API's port answers /metrics $code with HERALD_METRICS_LISTEN set: it must be 404"
step "/metrics is served on its own listener (127.0.0.1:$metrics_port); the API's port answers it 404"

prometheus_port=$(free_port)
# deploy/prometheus/scrape-config.yml's job, its targets replaced by this server's metrics listener.
python3 - "$work/prometheus.yml" "$root/deploy/prometheus/herald-rules.yml" "127.0.0.1:$metrics_port" <<'EOF'
import sys, yaml
output, rules, target = sys.argv[1:4]
config = yaml.safe_load(open("deploy/prometheus/scrape-config.yml"))
job = config["scrape_configs"][0]
assert job["job_name"] == "herald", job
job["static_configs"] = [{"targets": [target]}]
yaml.safe_dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "rule_files": [rules],
                "scrape_configs": [job]}, open(output, "w"))
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus" \
    --web.listen-address="127.0.0.1:$prometheus_port" --log.level=warn >"$work/prometheus.log" 2>&1 &
pids+=($!)
prometheus_url="http://127.0.0.1:$prometheus_port"
wait_for "$prometheus_url/-/ready" 60
step "Prometheus $(prometheus --version 2>&1 | head -n 1 | awk '{print $3}') on 127.0.0.1:$prometheus_port scrapes the server every second"

api() {  # METHOD PATH [BODY]: the answer's body; fails on a status other than 2xx
    curl -sf -X "$1" -H "Authorization: Bearer $secret" "$server$2" ${3:+-d "$3"}
}
token() { printf '%064x' "$1"; }
for i in $(seq 1 40); do
    curl -sf -o /dev/null "$server/api/token" -d "{\"token\": \"$(token $((1000 + i)))\", \"debug\": $([ $((i % 2)) -eq 0 ] && echo true || echo false), \"topic\": \"com.example.app\", \"userId\": \"many\"}" ||
        fail "registration $i failed"
done
for i in 1 2 3; do
    curl -sf -o /dev/null "$server/api/token" \
        -d "{\"token\": \"$(token $((2000 + i)))\", \"debug\": false, \"topic\": \"com.example.other\", \"userId\": \"other\"}"
done
curl -sf -o /dev/null -X DELETE "$server/api/token/$(token 1040)" || fail "unregistration failed"
# A device the app was deleted from: APNs answers 410 Unregistered, and Herald takes the token out of sends.
curl -sf -o /dev/null "http://127.0.0.1:$emulator_admin/devices" \
    -d "{\"environment\": \"production\", \"topic\": \"com.example.app\", \"token\": \"$(token 1001)\"}"
curl -sf -o /dev/null -X POST "http://127.0.0.1:$emulator_admin/devices/$(token 1001)/unregister" -d '{}'
step "registered 43 devices of two apps, unregistered one; the emulator answers one of them 410 Unregistered"

answer=$(api POST /api/send '{"target": {"user": "many"}, "topic": "com.example.app", "alert": {"title": "Check"}}') ||
    fail "the background send was refused"
send_id=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' <<<"$answer")
api POST /api/send '{"target": {"user": "other"}, "topic": "com.example.other", "alert": {"title": "Check"}}' >/dev/null ||
    fail "the send to the app with the wrong key was refused"
# Traffic while Prometheus scrapes, every 0.3 s: an inline send to each app and a registration update. A labelled
# counter appears at its first increment, which rate() cannot see: only increments after that show as a rate.
(
    while true; do
        api POST /api/send "{\"target\": {\"token\": \"$(token 1002)\"}, \"topic\": \"com.example.app\", \"alert\": {\"title\": \"Tick\"}}" >/dev/null || true
        api POST /api/send "{\"target\": {\"token\": \"$(token 2001)\"}, \"topic\": \"com.example.other\", \"alert\": {\"title\": \"Tick\"}}" >/dev/null || true
        curl -s -o /dev/null "$server/api/token" -d "{\"token\": \"$(token 1003)\", \"debug\": false, \"topic\": \"com.example.app\", \"userId\": \"many\"}" || true
        sleep 0.3
    done
) &
pids+=($!)
traffic_pid=$!
status=""
for _ in $(seq 1 600); do
    status=$(api GET "/api/sends/$send_id?limit=1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])') || true
    [ "$status" = completed ] && break
    sleep 0.1
done
[ "$status" = completed ] || fail "the background send $send_id is $status after 60 s"
counts=$(api GET "/api/sends/$send_id?limit=1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["counts"])')
step "background send to 39 devices completed: $counts"
# A delivery receipt for a device the send reached.
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
receipt=$(curl -sf "$server/api/events" \
    -d "{\"events\": [{\"type\": \"opened\", \"token\": \"$(token 1004)\", \"sendId\": \"$send_id\", \"at\": \"$now\"}]}") ||
    fail "the receipt was refused"
step "receipt reported: $receipt"

# Rates over a minute need a few scrapes of the traffic; wait until Prometheus holds 20 s of it.
for _ in $(seq 1 60); do
    samples=$(curl -sf "$prometheus_url/api/v1/query" --data-urlencode 'query=count_over_time(herald_send_budget_total{job="herald"}[1m])' |
        python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
    [ "${samples%.*}" -ge 20 ] && break
    sleep 1
done
curl -sf "http://127.0.0.1:$metrics_port/metrics" >"$work/metrics.txt"
python3 scripts/deploy/check-live.py "$prometheus_url" "$work/metrics.txt" deploy/grafana/herald.json \
    deploy/prometheus/herald-rules.yml deploy/prometheus/herald-rules.test.yml ||
    fail "the dashboard or the rules do not fit the server's real metrics (above)"
for path in $(python3 -c '
import sys, yaml
container = yaml.safe_load(open("deploy/kubernetes/deployment.yaml"))["spec"]["template"]["spec"]["containers"][0]
print(" ".join(sorted({container[p]["httpGet"]["path"] for p in ("startupProbe", "livenessProbe", "readinessProbe")})))'); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$server$path")
    [ "$code" = 200 ] || fail "the Deployment probes $path, which answers $code"
    step "probe $path answers 200"
done
if grep -q 'run-hardened.py: .*MemoryDenyWriteExecute' "$work/serve.log"; then
    step "the server ran all this under MemoryDenyWriteExecute, SystemCallFilter and RestrictAddressFamilies"
else
    fail "the server did not run under the unit's filters: $(head -n 1 "$work/serve.log")"
fi
kill "$traffic_pid"

log "[5/5] herald serve as the unit runs it: an unprivileged user, no capabilities, read-only but its state directory"
uid=61184 # the first id systemd gives DynamicUser= services
mkdir -p "$work/unprivileged"
chown "$uid:$uid" "$work/unprivileged"
server_port=$(free_port)
# ProtectSystem=strict and ProtectHome=yes as mounts in a namespace of its own: the root file system read-only, the
# state directory bound writable over it, an empty /root and /home. HERALD_SECCOMP_KILL=1: a call the filter refuses
# kills the server instead of failing with EPERM, so no code path can quietly absorb one. HERALD_RETRY_WINDOW=5: a
# send that cannot reach the emulator fails in seconds rather than after 10 minutes.
HERALD_SECCOMP_KILL=1 unshare --mount --propagation private sh -c '
    mount --bind "$1" "$1" && mount -o remount,bind,ro / &&
    mount -t tmpfs -o ro tmpfs /home && mount -t tmpfs -o ro tmpfs /root && shift && exec "$@"' \
    sh "$work/unprivileged" env -C "$work/unprivileged" "${server_environment[@]}" HERALD_RETRY_WINDOW=5 \
    HERALD_LISTEN="127.0.0.1:$server_port" HERALD_DATABASE_URL=sqlite://herald.sqlite \
    /usr/bin/python3 "$work/bin/run-hardened.py" "$work/unit/hardened.service" --uid "$uid" -- \
    "$work/bin/herald" serve >"$work/serve-unprivileged.log" 2>&1 &
pids+=($!)
server="http://127.0.0.1:$server_port"
wait_for "$server/ready" 60
step "$(head -n 1 "$work/serve-unprivileged.log")"
[ -f "$work/unprivileged/herald.sqlite" ] || fail "the unprivileged server wrote no database in its state directory"
curl -sf -o /dev/null "$server/api/token" -d "{\"token\": \"$(token 3001)\", \"debug\": false, \"topic\": \"com.example.app\"}" ||
    fail "the unprivileged server refused a registration"
outcome=$(api POST /api/send "{\"target\": {\"token\": \"$(token 3001)\"}, \"topic\": \"com.example.app\", \"alert\": {\"title\": \"Unprivileged\"}}") ||
    fail "the unprivileged server refused the send"
read -r status message < <(python3 -c '
import json, sys
outcome = json.load(sys.stdin)["outcomes"][0]
print(outcome["status"], outcome.get("message", outcome.get("reason", "")))' <<<"$outcome")
if [ "$status" = accepted ]; then
    step "as user $uid with no capabilities, on a read-only file system, a send reached the emulator"
else
    fail "as user $uid with no capabilities the send was not accepted: $outcome"
fi
