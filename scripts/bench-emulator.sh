#!/usr/bin/env bash
# The emulator's sustained rate under h2load, next to the nginx HTTP/2 sink measured in the same run.
#
#   scripts/bench-emulator.sh [N] [CONNECTIONS] [STREAMS]      defaults: 200000 4 100
#
# Needs the shared yardstick (../shared/bench, or BENCH_DIR=…): nginx + echo module and h2load
# (`apt-get install nginx libnginx-mod-http-echo nghttp2-client`). Both servers are pinned to CPU 1 and
# h2load to CPU 0; both serve the same certificate and get the same 250-byte payload, headers and JWT.
# The emulator runs in counting-only mode and really verifies the JWT and every header.
# MEMORY_N (default 1000000) notifications are then sent to measure the emulator's peak RSS.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
BENCH_DIR="${BENCH_DIR:-$here/../shared/bench}"
source "$BENCH_DIR/env.sh"
n="${1:-200000}"; c="${2:-4}"; m="${3:-100}"
memory_n="${MEMORY_N:-1000000}"
emulator_port="${EMULATOR_PORT:-9443}"

"$BENCH_DIR/gen-certs.sh" >/dev/null
echo "building herald (release)…" >&2
(cd "$here" && swift build -c release --product herald >/dev/null)
herald="$here/.build/release/herald"

uris() {  # distinct 32-byte tokens, as h2load -i reads them
  python3 -c "
for i in range(100000):
    print('https://localhost:$1/3/device/%064x' % i)" > "$BENCH_WORK/uris-$1.txt"
  echo "$BENCH_WORK/uris-$1.txt"
}
jwt="$("$BENCH_DIR/make-jwt.py" "$BENCH_WORK/key.p8")"
run_h2load() {  # port count
  taskset -c "${CLIENT_CPUS:-0}" h2load -n "$2" -c "$c" -m "$m" -t 1 -d "$BENCH_DIR/payload.json" -i "$(uris "$1")" \
    -H 'content-type: application/json' -H 'apns-topic: com.example.app' -H 'apns-push-type: alert' \
    -H 'apns-priority: 10' -H 'apns-expiration: 0' -H "authorization: bearer $jwt"
}
rate() { grep -E '^finished in' | sed -E 's/.* ([0-9.]+) req\/s.*/\1/'; }

echo "== nginx sink (return 200 after reading the body)"
"$BENCH_DIR/sink.sh" start >/dev/null
trap '"$BENCH_DIR/sink.sh" stop >/dev/null 2>&1 || true; [[ -n "${emulator_pid:-}" ]] && kill "$emulator_pid" 2>/dev/null || true' EXIT
nginx_out="$(run_h2load "$SINK_PORT" "$n")"
echo "$nginx_out" | grep -E '^(finished|requests|status codes)'
"$BENCH_DIR/sink.sh" stop >/dev/null

echo "== herald emulator (counting only, JWT verified)"
taskset -c "${SINK_CPUS:-1}" "$herald" emulator --development-port "$emulator_port" --production-port 0 --no-admin \
  --key "$BENCH_WORK/key.p8" --key-id ABC123DEFG --team-id DEF123GHIJ --counting-only \
  --tls-certificate "$BENCH_WORK/server.pem" --tls-key "$BENCH_WORK/server.key" >"$BENCH_WORK/emulator.log" 2>&1 &
emulator_pid=$!
for _ in $(seq 1 100); do grep -q "APNs emulator" "$BENCH_WORK/emulator.log" 2>/dev/null && break; sleep 0.1; done
cpu_ticks() { awk '{print $14 + $15}' "/proc/$emulator_pid/stat"; }
ticks_before="$(cpu_ticks)"
emulator_out="$(run_h2load "$emulator_port" "$n")"
ticks_after="$(cpu_ticks)"
echo "$emulator_out" | grep -E '^(finished|requests|status codes)'
# The emulator's own CPU per request: when h2load (one core) is the limit, this says how far the emulator is from its own.
python3 -c "t=($ticks_after-$ticks_before)/$(getconf CLK_TCK); print(f'emulator CPU: {t:.2f} s for $n requests = {t*1e6/$n:.1f} µs per request')"

nginx_rate="$(echo "$nginx_out" | rate)"; emulator_rate="$(echo "$emulator_out" | rate)"
python3 -c "print(f'emulator / nginx = {float($emulator_rate)/float($nginx_rate):.2f}  ({float($emulator_rate):,.0f} vs {float($nginx_rate):,.0f} req/s)')"

if [[ "$memory_n" -gt 0 ]]; then
  echo "== memory: $memory_n more notifications"
  run_h2load "$emulator_port" "$memory_n" | grep -E '^(finished|status codes)'
  grep -E 'VmHWM|VmRSS' "/proc/$emulator_pid/status"
fi
