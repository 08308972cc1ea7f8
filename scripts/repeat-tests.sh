#!/usr/bin/env bash
# Runs the whole test suite RUNS times, PARALLEL runs at a time side by side, each under scripts/watch-tests.py (a run
# that stops making progress fails with its unfinished tests and thread stacks), and prints one row per run: status,
# wall time, tests, and the tests that failed. Issue 28's measure of a suite that neither hangs nor flakes
# (docs/testing.md, "Wall time").
#
#   swift build --build-tests
#   export HERALD_TEST_DATABASE_URL=…                 # PostgreSQL cases too, as CI runs them
#   scripts/repeat-tests.sh 10                        # ten runs one after the other
#   scripts/repeat-tests.sh 10 2                      # ten runs, two at a time
#   REPEAT_FILTER=QuietHoursTests scripts/repeat-tests.sh 20   # one suite, twenty times
#
# The test binary (.build/debug/heraldPackageTests.xctest) runs directly: two `swift test` cannot share one .build
# (SwiftPM locks it, and the second waits for the first). Each run's output: $REPEAT_LOG_DIR/run-N.log. Exits 1 when
# any run failed or hung.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:?usage: scripts/repeat-tests.sh RUNS [PARALLEL]}
parallel=${2:-1}
binary=.build/debug/heraldPackageTests.xctest
logs=${REPEAT_LOG_DIR:-/tmp/herald-repeat-$(date -u +%Y%m%dT%H%M%S)}
[ -x "$binary" ] || { echo "No test build at $binary: run 'swift build --build-tests' first." >&2; exit 2; }
case "$parallel" in 1 | 2 | 3 | 4) ;; *) echo "PARALLEL is 1 to 4, not $parallel." >&2; exit 2 ;; esac
mkdir -p "$logs"
export NO_COLOR=1 SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-12}
[ -n "${HERALD_TEST_DATABASE_URL:-}" ] || echo "HERALD_TEST_DATABASE_URL is not set: PostgreSQL cases are skipped." >&2

one_run() {
    local n=$1 start end status
    start=$(date +%s.%N)
    status=0
    HERALD_TEST_SCREENSHOTS="$logs/screenshots-$n" \
        scripts/watch-tests.py "$logs/run-$n.log" -- "$binary" --testing-library swift-testing \
        ${REPEAT_FILTER:+--filter "$REPEAT_FILTER"} > "$logs/run-$n.watch" 2>&1 ||
        status=$?
    end=$(date +%s.%N)
    echo "$n $status $start $end" > "$logs/run-$n.result"
}

echo "Logs: $logs; $runs runs, $parallel at a time; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
n=1
while [ "$n" -le "$runs" ]; do
    pids=()
    for _ in $(seq 1 "$parallel"); do
        [ "$n" -le "$runs" ] || break
        echo "run $n started $(date -u +%H:%M:%S)" >&2
        one_run "$n" &
        pids+=($!)
        n=$((n + 1))
    done
    wait "${pids[@]}"
done

python3 - "$logs" "$runs" "$parallel" <<'PY'
import os, re, statistics, sys
logs, runs, parallel = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
print(f"| run | status | wall time | tests | failed tests |")
print("|---:|---|---:|---|---|")
walls, bad = [], 0
for n in range(1, runs + 1):
    number, status, start, end = open(f"{logs}/run-{n}.result").read().split()
    wall = float(end) - float(start)
    walls.append(wall)
    log = open(f"{logs}/run-{n}.log", errors="replace").read()
    summary = re.findall(r"Test run with (\d+ tests? in \d+ suites?) (passed|failed)", log)
    failed = sorted(set(re.findall(r'✘ Test (".*?") (?:with \d+ test cases? )?failed', log)))
    word = {"0": "passed", "124": "HUNG"}.get(status, f"failed ({status})")
    bad += status != "0"
    print(f"| {n} | {word} | {wall:.0f} s | {summary[-1][0] if summary else '?'} | {', '.join(failed) or '-'} |")
print()
print(f"{runs - bad} of {runs} runs clean, {parallel} at a time; wall time median {statistics.median(walls):.0f} s, "
      f"max {max(walls):.0f} s")
sys.exit(1 if bad else 0)
PY
