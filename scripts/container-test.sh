#!/usr/bin/env bash
# Builds Herald's image and runs it with podman, then runs compose.yaml with podman-compose (docs/operations.md).
#
#   scripts/container-test.sh [all|image|compose]       default: all
#
# image:   the Dockerfile on a package of herald (scripts/release.sh); one container with the in-process emulator:
#          /health, the process's user (not root), a registration, a send answered `accepted`, the notification in the
#          emulator's inbox, `podman healthcheck run`, a graceful stop (exit 0) and a restart that finds its data in
#          the volume; prints the image's size.
# compose: compose.yaml (two instances on PostgreSQL, `herald emulator`): 2,000 devices, one paced send started on
#          one instance, that instance stopped mid-send; the other must finish it: `completed`, every device accepted.
#
# What it packages: HERALD_PACKAGE=DIR (an unpacked package, such as dist/herald from scripts/release.sh), else
# HERALD_BINARY (default .build/debug/herald: CI's build, whose Swift runtime libraries go beside it).
# No image registry is needed: the base image debian:bookworm-slim, when podman has none, is made with debootstrap
# from this machine's Debian mirror and kept for the next run (HERALD_CONTAINER_KEEP_BASE=0 removes it).
# Everything else it makes (containers, images, volumes, networks) is removed at the end. Runs as root (rootful podman,
# debootstrap); installs Debian's podman, runc, debootstrap and DNS plugin and PyPI's podman-compose when missing.
# Bounded by HERALD_CONTAINER_TEST_TIMEOUT seconds (default 1200).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ -z "${HERALD_CONTAINER_TEST_BOUNDED:-}" ]; then
    # timeout signals its whole process group, so podman and curl stop too and the cleanup below still runs.
    HERALD_CONTAINER_TEST_BOUNDED=1 exec timeout -k 60 "${HERALD_CONTAINER_TEST_TIMEOUT:-1200}" bash "$0" "$@"
fi

mode=${1:-all}
case "$mode" in all|image|compose) ;; *) echo "container-test.sh: all, image or compose" >&2; exit 2 ;; esac
started=$(date +%s)
log() { printf '==> [%3ds] %s\n' "$(( $(date +%s) - started ))" "$*" >&2; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "run as root: rootful podman and debootstrap"

work=$(mktemp -d /tmp/herald-container-test.XXXXXX)
tag="ct-$$"
image="localhost/herald:$tag"
postgres_image="localhost/herald-postgres:$tag"
project="herald-ct-$$"
made_images=()
made_base=0
container=""
volume=""
compose_up=0

# podman without systemd (CI's machine) cannot arm the healthcheck timers and says so on every container start:
# noise, since the test runs the healthcheck itself.
pm() { podman "$@" 2> >(grep -v 'unable to get systemd connection' >&2); }
compose() {
    python3 -m podman_compose -p "$project" -f "$root/compose.yaml" -f "$work/compose.override.yaml" "$@" \
        >>"$work/compose.log" 2>&1
}
# Logs shown on failure, without the console's one-time sign-in links or API key secrets.
redact() { sed -E 's,(sign-in/)[A-Za-z0-9_-]+,\1…,g; s,hrld_[A-Za-z0-9_]+,hrld_…,g'; }

cleanup() {
    status=$?
    trap - EXIT INT TERM
    if [ "$status" -ne 0 ]; then
        if [ -n "$container" ]; then
            log "the container's log (last 40 lines)"
            pm logs --tail 40 "$container" 2>&1 | redact >&2 || true
        fi
        if [ "$compose_up" -eq 1 ]; then
            for service in herald-1 herald-2 emulator postgres; do
                log "compose: $service's log (last 25 lines)"
                pm logs --tail 25 "${project}_${service}_1" 2>&1 | redact >&2 || true
            done
        fi
        if [ -f "$work/compose.log" ]; then
            log "podman-compose's output (last 20 lines)"
            tail -n 20 "$work/compose.log" | redact >&2
        fi
    fi
    log "cleaning up"
    if [ -n "$container" ]; then pm rm -f -v "$container" >/dev/null 2>&1 || true; fi
    if [ -n "$volume" ]; then pm volume rm -f "$volume" >/dev/null 2>&1 || true; fi
    if [ "$compose_up" -eq 1 ]; then
        # -v on each container removes the anonymous volumes of the image's VOLUME too; down -v the named ones.
        for id in $(podman ps -a -q --filter "label=io.podman.compose.project=$project" 2>/dev/null); do
            pm rm -f -v "$id" >/dev/null 2>&1 || true
        done
        compose down -v >/dev/null 2>&1 || true
    fi
    for made in "${made_images[@]}"; do pm rmi -f "$made" >/dev/null 2>&1 || true; done
    if [ "$made_base" -eq 1 ] && [ "${HERALD_CONTAINER_KEEP_BASE:-1}" = 0 ]; then
        pm rmi -f debian:bookworm-slim >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
    log "done (exit $status)"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 143' INT TERM

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() {  # URL SECONDS: until it answers 200
    local deadline=$(( $(date +%s) + $2 ))
    until curl -sf -o /dev/null --max-time 5 "$1"; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "$1 did not answer 200 within $2 s"
        sleep 1
    done
}
json() {  # EXPRESSION: evaluates it on the JSON document read from standard input, bound to `d`
    python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}
random_token() { python3 -c 'import secrets; print(secrets.token_hex(32))'; }

# --- What podman needs -------------------------------------------------------------------------------------------
apt_packages=()
need_apt() { dpkg -s "$1" >/dev/null 2>&1 || apt_packages+=("$1"); }
need_apt podman
need_apt runc         # crun, podman's other runtime, fails on CI's machine (its cgroups)
need_apt golang-github-containernetworking-plugin-dnsname   # compose's services find each other by name
need_apt curl
need_apt binutils     # strip, for scripts/release.sh
if ! podman image exists debian:bookworm-slim 2>/dev/null; then need_apt debootstrap; fi
if [ "${#apt_packages[@]}" -gt 0 ]; then
    log "installing Debian packages: ${apt_packages[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # Installing podman must not start its services.
    policy=/usr/sbin/policy-rc.d
    made_policy=0
    if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1; fi
    apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
    if [ "$made_policy" -eq 1 ]; then rm -f "$policy"; fi
fi
if [ "$mode" != image ] && ! python3 -c 'import podman_compose' 2>/dev/null; then
    log "installing podman-compose (PyPI)"
    python3 -m pip install --quiet podman-compose
fi

# runc, and no default ulimits: podman's default nofile limit cannot be applied in CI's sandbox. A file of the test's
# own, so the machine's podman settings stay as they are.
cat > "$work/containers.conf" <<'EOF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF="$work/containers.conf"

# --- The base image -------------------------------------------------------------------------------------------------
debian_mirror() {  # the first Debian mirror APT uses here for bookworm
    python3 - <<'PY'
import glob, re
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in re.split(r"\n\s*\n", open(path).read()):
        fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
        if "deb" in fields.get("Types", "").split() and "bookworm" in fields.get("Suites", "").split():
            print(fields["URIs"].split()[0]); raise SystemExit
for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        for line in open(path):
            m = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+bookworm\s", line)
            if m: print(m.group(1)); raise SystemExit
    except FileNotFoundError:
        pass
print("http://deb.debian.org/debian")
PY
}
if podman image exists debian:bookworm-slim; then
    log "base image debian:bookworm-slim: $(podman image inspect --format '{{index .Labels "org.herald.base"}}' debian:bookworm-slim 2>/dev/null | sed 's/^$/from a registry/') (kept from an earlier run)"
else
    mirror=$(debian_mirror)
    log "making debian:bookworm-slim: debootstrap --variant=minbase bookworm from $mirror (about a minute)"
    debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
        || { tail -n 20 "$work/debootstrap.log" >&2; fail "debootstrap failed"; }
    # What the registry's slim image leaves out, and tells dpkg to leave out of later installs.
    rm -rf "$work/rootfs"/var/cache/apt/archives/*.deb "$work/rootfs"/var/lib/apt/lists/* \
        "$work/rootfs"/usr/share/man/* "$work/rootfs"/usr/share/info/* "$work/rootfs"/usr/share/locale/*
    find "$work/rootfs/usr/share/doc" -type f ! -name copyright -delete
    cat > "$work/rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
    tar -C "$work/rootfs" -c . | pm import --quiet --change 'CMD ["bash"]' \
        --change "LABEL org.herald.base=debootstrap-minbase-$(date -u +%Y-%m-%d)" - debian:bookworm-slim >/dev/null
    rm -rf "$work/rootfs"
    made_base=1
fi

# --- The herald image -----------------------------------------------------------------------------------------------
context="$work/context"
mkdir -p "$context/dist" "$context/deploy"
if [ -n "${HERALD_PACKAGE:-}" ]; then
    [ -x "$HERALD_PACKAGE/herald" ] || fail "HERALD_PACKAGE=$HERALD_PACKAGE has no herald"
    log "package: $HERALD_PACKAGE"
    cp -a "$HERALD_PACKAGE" "$context/dist/herald"
else
    binary=${HERALD_BINARY:-.build/debug/herald}
    [ -x "$binary" ] || fail "$binary is missing: build it (swift build), or set HERALD_BINARY or HERALD_PACKAGE"
    configuration=release
    # grep without -q reads all of ldd's output: -q stops at the first match, ldd dies of SIGPIPE writing the rest,
    # and under pipefail the test is false, so a debug binary was packaged as a release one (CI failed, 2026-12-02).
    if ldd "$binary" | grep '/swift/' >/dev/null; then configuration=debug; fi
    log "packaging $binary ($configuration, built $(date -u -r "$binary" +%Y-%m-%dT%H:%MZ)) with scripts/release.sh"
    scripts/release.sh --binary "$binary" --configuration "$configuration" --output "$context/dist" >/dev/null
    rm -f "$context"/dist/*.tar.gz "$context"/dist/*.sha256
fi
cp Dockerfile .dockerignore "$context/"
cp -a deploy/container "$context/deploy/"
log "podman build $image"
made_images+=("$image")
build_started=$(date +%s)
podman build --isolation chroot --format docker --pull=never -t "$image" "$context" >"$work/build.log" 2>&1 \
    || { tail -n 30 "$work/build.log" >&2; fail "podman build failed"; }
image_bytes=$(podman image inspect --format '{{.Size}}' "$image")
base_bytes=$(podman image inspect --format '{{.Size}}' debian:bookworm-slim)
log "built in $(( $(date +%s) - build_started )) s: $(( image_bytes / 1000000 )) MB, of which the base image $(( base_bytes / 1000000 )) MB"
rm -rf "$context"

# --- One container --------------------------------------------------------------------------------------------------
test_image() {
    local port secret token title answer status
    port=$(free_port)
    secret=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
    # The secret goes in a file, not on a command line that podman or ps would show.
    # A short retry window: a send APNs cannot take fails within the test's time, saying why.
    printf 'HERALD_API_KEYS=ct:send+admin:%s\nHERALD_RETRY_WINDOW=20\n' "$secret" > "$work/image.env"
    chmod 600 "$work/image.env"
    volume="herald-ct-$$-data"
    container="herald-ct-$$"
    log "image: podman run (127.0.0.1:$port -> 8080, volume $volume)"
    pm run -d --name "$container" --env-file "$work/image.env" -p "127.0.0.1:$port:8080" \
        -v "$volume:/var/lib/herald" "$image" >/dev/null
    wait_for "http://127.0.0.1:$port/health" 60

    local user
    user=$(podman top "$container" huser user args | awk '/herald serve/ { print $1, $2 }')
    log "image: herald serve runs as uid/user: $user"
    [ -n "$user" ] || fail "no herald serve process in the container"
    case "$user" in "0 "*|*" root") fail "herald serve runs as root" ;; esac
    [ "$(pm exec "$container" id -u)" != 0 ] || fail "a command in the container runs as root"

    token=$(random_token)
    title="container test $$"
    status=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/api/token" \
        -d "{\"token\": \"$token\", \"debug\": true}")
    [ "$status" = 201 ] || fail "registration answered $status, not 201"
    answer=$(curl -s --max-time 60 -H "Authorization: Bearer $secret" "http://127.0.0.1:$port/api/send" \
        -d "{\"target\": {\"token\": \"$token\"}, \"alert\": {\"title\": \"$title\"}}")
    [ "$(json 'd["status"], d["counts"]["accepted"]' <<<"$answer")" = "('completed', 1)" ] \
        || fail "the send did not end accepted: $(redact <<<"$answer")"
    log "image: registered a device and sent to it: accepted"
    # The in-process emulator's admin API listens on the container's loopback only: read the inbox from inside, with
    # bash (the image has no curl).
    local inbox
    inbox=$(pm exec "$container" bash -c 'exec 3<>/dev/tcp/127.0.0.1/7480 &&
        printf "GET /devices/%s/inbox HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" "$1" >&3 &&
        timeout 10 cat <&3' inbox "$token")
    grep -q "$title" <<<"$inbox" || fail "the emulator's inbox does not hold the notification: $inbox"
    log "image: the notification is in the emulator's inbox"
    # /metrics is on the image's private listener (HERALD_METRICS_LISTEN, 9464, not published), not the API's port.
    status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/metrics")
    [ "$status" = 404 ] || fail "the published API port answers /metrics $status, not 404"
    local scraped
    scraped=$(pm exec "$container" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9464 &&
        printf "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" >&3 && timeout 10 cat <&3')
    grep -q '^herald_' <<<"$scraped" || fail "the private metrics listener (9464) did not answer with metrics"
    log "image: /metrics answers on the private listener 9464 only; the published port answers 404"

    pm healthcheck run "$container" || fail "podman healthcheck run failed"
    [ "$(podman inspect --format '{{.State.Health.Status}}' "$container")" = healthy ] || fail "the container is not healthy"
    log "image: podman healthcheck run: healthy"

    pm stop -t 30 "$container" >/dev/null
    [ "$(podman inspect --format '{{.State.ExitCode}}' "$container")" = 0 ] || fail "herald did not exit 0 on SIGTERM"
    pm start "$container" >/dev/null
    wait_for "http://127.0.0.1:$port/health" 60
    status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $secret" \
        "http://127.0.0.1:$port/api/devices/$token")
    [ "$status" = 200 ] || fail "after a restart the device is gone ($status): the volume did not keep the database"
    log "image: stopped with SIGTERM (exit 0), started again: the device is still registered (volume)"
    pm rm -f -v "$container" >/dev/null
    pm volume rm -f "$volume" >/dev/null
    container=""
    volume=""
    log "image: passed"
}

# --- compose.yaml ---------------------------------------------------------------------------------------------------
test_compose() {
    local devices=${HERALD_CONTAINER_TEST_DEVICES:-2000} rate=${HERALD_CONTAINER_TEST_RATE:-100}
    local port1 port2 emulator_port
    port1=$(free_port); port2=$(free_port); emulator_port=$(free_port)
    log "compose: building deploy/postgres (Debian's PostgreSQL)"
    made_images+=("$postgres_image")
    podman build --isolation chroot --format docker --pull=never -t "$postgres_image" deploy/postgres >"$work/build.log" 2>&1 \
        || { tail -n 30 "$work/build.log" >&2; fail "building deploy/postgres failed"; }
    # Registrations come from one address faster than the per-client limit allows; a short retry window makes a send
    # APNs cannot take fail within the test's time.
    cat > "$work/compose.override.yaml" <<'EOF'
services:
  herald-1:
    environment:
      HERALD_RATE_LIMIT: "0"
      HERALD_RETRY_WINDOW: "20"
  herald-2:
    environment:
      HERALD_RATE_LIMIT: "0"
      HERALD_RETRY_WINDOW: "20"
EOF
    export HERALD_COMPOSE_IMAGE="$image" HERALD_COMPOSE_POSTGRES_IMAGE="$postgres_image" \
        HERALD_COMPOSE_PORT_1="$port1" HERALD_COMPOSE_PORT_2="$port2" HERALD_COMPOSE_EMULATOR_PORT="$emulator_port"
    log "compose: podman-compose up (project $project; 127.0.0.1:$port1, :$port2, emulator :$emulator_port)"
    compose_up=1
    compose up -d || fail "podman-compose up failed"
    wait_for "http://127.0.0.1:$port1/ready" 120
    wait_for "http://127.0.0.1:$port2/ready" 120
    log "compose: both instances ready on PostgreSQL"

    local secret
    secret=$(podman exec "${project}_herald-1_1" herald keys create ct --scope send --scope admin 2>/dev/null \
        | grep -o -E 'hrld_[A-Za-z0-9_-]+' | head -n 1)
    [ -n "$secret" ] || fail "herald keys create printed no secret"

    log "compose: registering $devices devices on herald-1"
    python3 - "$port1" "$devices" <<'PY' || fail "registering the devices failed"
import http.client, json, secrets, sys
port, count = int(sys.argv[1]), int(sys.argv[2])
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
for _ in range(count):
    connection.request("POST", "/api/token", json.dumps({"token": secrets.token_hex(32), "debug": True}),
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    body = response.read()
    if response.status != 201:
        sys.exit(f"registration answered {response.status}: {body[:200]!r}")
PY

    local answer id
    answer=$(curl -s -H "Authorization: Bearer $secret" "http://127.0.0.1:$port1/api/send" \
        -d "{\"target\": {\"topic\": \"com.example.app\"}, \"alert\": {\"title\": \"compose test\"}, \"rate\": $rate}")
    id=$(json 'd.get("id", "")' <<<"$answer")
    [ -n "$id" ] || fail "the send was not accepted: $(redact <<<"$answer")"
    log "compose: send $id to $devices devices at $rate a second, created on herald-1"

    # Whichever instance claimed it is stopped once it has sent some (SIGTERM, as `podman-compose stop` does).
    local record worker="" recorded=0 deadline=$(( $(date +%s) + 60 ))
    while [ -z "$worker" ]; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "no instance started the send within 60 s"
        record=$(curl -s -H "Authorization: Bearer $secret" "http://127.0.0.1:$port1/api/sends/$id?limit=1")
        recorded=$(json 'sum(d["counts"].values())' <<<"$record")
        if [ "$(json 'd["status"]' <<<"$record")" = running ] && [ "$recorded" -gt 0 ]; then
            worker=$(json 'd.get("worker", "")' <<<"$record")
        fi
        sleep 0.5
    done
    local runner=${worker%%/*} other other_port
    case "$runner" in
        herald-1) other=herald-2; other_port=$port2 ;;
        herald-2) other=herald-1; other_port=$port1 ;;
        *) fail "the send runs on an unknown worker: $worker" ;;
    esac
    log "compose: $runner runs the send ($recorded of $devices recorded); stopping $runner"
    compose stop "$runner" || fail "podman-compose stop $runner failed"
    [ "$(podman inspect --format '{{.State.ExitCode}}' "${project}_${runner}_1")" = 0 ] \
        || fail "$runner did not exit 0 on SIGTERM"
    record=$(curl -s -H "Authorization: Bearer $secret" "http://127.0.0.1:$other_port/api/sends/$id?limit=1")
    recorded=$(json 'sum(d["counts"].values())' <<<"$record")
    [ "$recorded" -lt "$devices" ] || fail "the send ended before $runner stopped: use more devices or a lower rate"
    log "compose: $runner stopped with $recorded of $devices recorded; waiting for $other to finish the send"

    local status taken_over=0
    deadline=$(( $(date +%s) + 180 ))
    while :; do
        record=$(curl -s -H "Authorization: Bearer $secret" "http://127.0.0.1:$other_port/api/sends/$id?limit=1")
        status=$(json 'd["status"]' <<<"$record")
        case "$(json 'd.get("worker", "")' <<<"$record")" in "$other"/*) taken_over=1 ;; esac
        case "$status" in completed|failed|cancelled) break ;; esac
        [ "$(date +%s)" -lt "$deadline" ] || fail "the send is still $status 180 s after $runner stopped"
        sleep 0.5
    done
    [ "$taken_over" -eq 1 ] || fail "$other was never seen running the send"
    [ "$(json 'd["status"], d["counts"]["accepted"], d["counts"]["rejected"], d["counts"]["failed"]' <<<"$record")" \
        = "('completed', $devices, 0, 0)" ] || fail "the send did not complete with every device accepted: $record"
    local received
    received=$(curl -s "http://127.0.0.1:$emulator_port/counters" | json 'd["accepted"]')
    log "compose: $other finished the send: completed, $devices of $devices accepted (the emulator accepted $received)"
    log "compose: passed"
}

case "$mode" in
    image) test_image ;;
    compose) test_compose ;;
    all) test_image; test_compose ;;
esac
log "image size: $(( image_bytes / 1000000 )) MB ($(( (image_bytes - base_bytes) / 1000000 )) MB above debian:bookworm-slim)"
log "container tests ($mode) passed"
