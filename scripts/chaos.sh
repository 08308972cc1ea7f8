#!/usr/bin/env bash
# Herald through its database's faults, measured (docs/reliability.md, "Database faults, measured"): a release build of
# `herald serve` on PostgreSQL, `herald emulator --counting-only`, one paced send to DEVICES devices per run, and in it
# a crash-restart, a 30 s outage, a failover to a promoted standby, a 30 s partition, connections gone silent for good.
# Prints a table: per scenario, lost and duplicate notifications, time to resume after the database's return, the
# slowest API answer during the fault, registrations answered 201 and missing afterwards, and how long SIGTERM takes
# with the database away.
#
#   scripts/chaos.sh [SCENARIO…]          default: restart outage failover partition silent
#
# DEVICES (50000), RATE (2500 a second), RUNS (10 per scenario), CHAOS_LOG_LEVEL (the server's, notice). HERALD_BENCH_BINARY=/path/to/herald runs that build
# instead of building this tree in release. Needs Debian's postgresql (each run makes its own clusters on 127.0.0.1)
# and python3; run as root or as a user that may run PostgreSQL's programs. Runs split over several invocations make one
# table: python3 scripts/chaos/chaos.py --table-from first.log second.log (their saved output).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${HERALD_BENCH_BINARY:-}" ]; then
    herald="$HERALD_BENCH_BINARY"
else
    echo "==> Building herald (release)" >&2
    swift build -c release --product herald 2>&1 | tail -n 3 >&2
    herald="$(pwd)/.build/release/herald"
fi
exec python3 scripts/chaos/chaos.py --herald "$herald" --devices "${DEVICES:-50000}" --rate "${RATE:-2500}" \
    --runs "${RUNS:-10}" "$@"
