#!/usr/bin/env bash
# Herald as a peer of the shared sender yardstick (../shared/bench): reads its environment and prints its
# JSON summary line. Use it in an EXTRA_PEERS file:  herald<TAB>/path/to/scripts/herald-peer.sh
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
herald="${HERALD_BIN:-$here/.build/release/herald}"
exec taskset -c "${CLIENT_CPUS:-0}" "$herald" send \
  --key "$BENCH_WORK/key.p8" --key-id "${BENCH_KEY_ID:-ABC123DEFG}" --team-id "${BENCH_TEAM_ID:-DEF123GHIJ}" \
  --topic com.example.app --push-type alert --priority 10 --expiration 0 \
  --token "${DEVICE_TOKEN}" --repeat "${BENCH_N}" --concurrency "${HERALD_CONCURRENCY:-${BENCH_CONCURRENCY}}" \
  --connections "${HERALD_CONNECTIONS:-1}" \
  --payload "$BENCH_DIR/payload.json" --host "${SINK_HOST:-localhost}" --port "${SINK_PORT}" \
  --ca-file "$BENCH_WORK/ca.pem" --summary-json
