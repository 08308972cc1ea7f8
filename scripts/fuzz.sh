#!/usr/bin/env bash
# Runs Herald's libFuzzer targets (the Fuzz/ package) for a while each, starting from the committed seed corpus.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     defaults: 60 seconds, every target
#
# Targets: json, payload, device-token, http2-frames, http2-connection, hpack (Sources/HeraldFuzzing). Each run grows a working
# corpus in Fuzz/.build/corpus/<target>/ (the committed seeds in Fuzz/Corpus/ are only read), and prints one summary
# line: executions, executions per second, coverage, and the corpus size. A finding stops the script with the
# crashing input saved under Fuzz/.build/findings/<target>/; once fixed, copy it into Fuzz/Corpus/<target>/ so that
# `swift test` (HeraldFuzzingTests) replays it from then on.
#
# FUZZ_CONFIGURATION=debug builds faster (CI) at a lower execution rate; the default is release.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(json payload device-token http2-frames http2-connection hpack)
configuration="${FUZZ_CONFIGURATION:-release}"

cd "$here/Fuzz"
echo "building the fuzzer ($configuration, libFuzzer + AddressSanitizer)…" >&2
mkdir -p .build
# `--sanitize fuzzer` makes SwiftPM link libFuzzer's main instead of the target's; the combined -sanitize=fuzzer,address
# after it is what swiftc keeps, because it honours only the last of several -sanitize= flags (SwiftPM's
# `--sanitize fuzzer --sanitize address` leaves Swift code without coverage counters, and libFuzzer then finds "no
# interesting inputs"). C targets get no AddressSanitizer: only Swift code is under test here.
flags=(-c "$configuration" --sanitize fuzzer -Xswiftc -sanitize=fuzzer,address)
swift build "${flags[@]}" >.build/fuzz-build.log 2>&1 || {
    tail -n 40 .build/fuzz-build.log >&2
    exit 1
}
binary="$(swift build "${flags[@]}" --show-bin-path)/HeraldFuzzer"

printf '| target | seconds | executions | exec/s | coverage (edges) | corpus |\n| --- | ---: | ---: | ---: | ---: | ---: |\n'
for target in "${targets[@]}"; do
    [ -d "Corpus/$target" ] || { echo "no target '$target' (Fuzz/Corpus/$target is missing)" >&2; exit 2; }
    work=".build/corpus/$target"
    findings=".build/findings/$target"
    mkdir -p "$work" "$findings"
    log=".build/fuzz-$target.log"
    status=0
    # -rss_limit_mb bounds a leak; -max_len covers the largest APNs body (5 KB) with room for the control bytes.
    HERALD_FUZZ_TARGET="$target" "$binary" "$work" "Corpus/$target" -max_total_time="$seconds" \
        -max_len=8192 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$findings/" >"$log" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
        grep -E 'Fatal error|ERROR|SUMMARY|Test unit written' "$log" | head -n 20 >&2 || tail -n 20 "$log" >&2
        echo "fuzz target $target found a problem: see Fuzz/$log and Fuzz/$findings/" >&2
        exit 1
    fi
    runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
    rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")
    coverage=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 | awk '{print $2}')
    corpus=$(find "$work" -type f | wc -l)
    printf '| %s | %s | %s | %s | %s | %s |\n' "$target" "$seconds" "$runs" "$rate" "${coverage:-?}" "$corpus"
done
