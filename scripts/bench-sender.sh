#!/usr/bin/env bash
# Herald's sender: notifications/s, CPU seconds and peak RSS for N notifications of ~250 bytes, in three settings:
#   (a) herald emulator, no added latency      (b) herald emulator, 100 ms added per response
#   (c) the nginx HTTP/2 sink, with h2load against the same sink in the same run as the yardstick
#
#   scripts/bench-sender.sh [N]          default N=1000000; CONNECTIONS (4), CONCURRENCY (in flight without added
#                                        latency, 400) and LATENCY_CONCURRENCY (with 100 ms, 4000) are overridable
#
# Needs the shared yardstick (../shared/bench or BENCH_DIR): nginx + echo module, h2load, /usr/bin/time.
# Client pinned to CPU 0, servers to CPU 1 (as the yardstick does).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
BENCH_DIR="${BENCH_DIR:-$here/../shared/bench}"
source "$BENCH_DIR/env.sh"
n="${1:-1000000}"
connections="${CONNECTIONS:-4}"; low_concurrency="${CONCURRENCY:-400}"; latency_concurrency="${LATENCY_CONCURRENCY:-4000}"
emulator_port="${EMULATOR_PORT:-9443}"
"$BENCH_DIR/gen-certs.sh" >/dev/null
echo "building herald (release)…" >&2
(cd "$here" && swift build -c release --product herald >/dev/null)
herald="$here/.build/release/herald"
results="$BENCH_WORK/herald-sender.txt"; : > "$results"

# One sender run under /usr/bin/time: prints "label rate cpu_seconds peak_rss_mb ok failed".
sender() {  # label port concurrency
  local out="$BENCH_WORK/sender-$1.out" concurrency="$3"
  /usr/bin/time -v -o "$BENCH_WORK/sender-$1.time" taskset -c "${CLIENT_CPUS:-0}" "$herald" send \
    --key "$BENCH_WORK/key.p8" --key-id ABC123DEFG --team-id DEF123GHIJ --topic com.example.app \
    --push-type alert --priority 10 --expiration 0 --token "$DEVICE_TOKEN" --repeat "$n" \
    --concurrency "$concurrency" --connections "$connections" --payload "$BENCH_DIR/payload.json" \
    --host localhost --port "$2" --ca-file "$BENCH_WORK/ca.pem" --summary-json > "$out"
  python3 - "$1" "$out" "$BENCH_WORK/sender-$1.time" <<'PY' | tee -a "$results"
import json, re, sys
label, out, timing = sys.argv[1:4]
summary = json.loads(open(out).read().strip().splitlines()[-1])
t = open(timing).read()
cpu = float(re.search(r"User time \(seconds\): ([\d.]+)", t).group(1)) + float(re.search(r"System time \(seconds\): ([\d.]+)", t).group(1))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
print(f"{label:28s} {summary['rate']:>10,.0f}/s  cpu {cpu:6.1f} s  peak RSS {rss:6.1f} MB  ok {summary['ok']} failed {summary['failed']}")
PY
}

start_emulator() {  # extra flags…
  taskset -c "${SINK_CPUS:-1}" "$herald" emulator --development-port "$emulator_port" --production-port 0 --no-admin \
    --key "$BENCH_WORK/key.p8" --key-id ABC123DEFG --team-id DEF123GHIJ --counting-only \
    --tls-certificate "$BENCH_WORK/server.pem" --tls-key "$BENCH_WORK/server.key" "$@" >"$BENCH_WORK/emulator.log" 2>&1 &
  emulator_pid=$!
  for _ in $(seq 1 100); do grep -q "APNs emulator" "$BENCH_WORK/emulator.log" 2>/dev/null && return; sleep 0.1; done
  echo "the emulator did not start: $(cat "$BENCH_WORK/emulator.log")" >&2; exit 1
}
stop_emulator() { kill "$emulator_pid" 2>/dev/null || true; wait "$emulator_pid" 2>/dev/null || true; }
trap 'stop_emulator; "$BENCH_DIR/sink.sh" stop >/dev/null 2>&1 || true' EXIT

echo "== (a) herald emulator, no added latency"
start_emulator; sender "a-emulator" "$emulator_port" "$low_concurrency"; stop_emulator
echo "== (b) herald emulator, 100 ms per response"
start_emulator --latency 100ms; sender "b-emulator-100ms" "$emulator_port" "$latency_concurrency"; stop_emulator
echo "== (c) nginx sink: h2load, then herald"
"$BENCH_DIR/sink.sh" start >/dev/null
h2load_rate=$("$BENCH_DIR/h2load.sh" "$connections" 200000 100 | grep -E '^finished in' | sed -E 's/.* ([0-9.]+) req\/s.*/\1/')
printf '%-28s %10.0f/s\n' "c-h2load-c$connections-m100" "$h2load_rate" | tee -a "$results"
sender "c-nginx" "$SINK_PORT" "$low_concurrency"
"$BENCH_DIR/sink.sh" stop >/dev/null
herald_rate=$(grep c-nginx "$results" | awk '{print $2}' | tr -d ',/s')
python3 -c "print(f'herald / h2load on the sink = {float($herald_rate)/float($h2load_rate):.2f}')" | tee -a "$results"
