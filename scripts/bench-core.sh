#!/usr/bin/env bash
# Runs the HeraldCore benchmarks (Benchmarks/, ordo-one/benchmark, release build) and prints the medians, and
# their ratios to the Foundation and signing baselines, as Markdown tables for docs/benchmarks.md.
# Extra arguments go to the plugin, e.g. --filter 'DeviceToken.*'. The plugin's full tables are kept in
# Benchmarks/.build/bench-core.txt.
set -euo pipefail
cd "$(dirname "$0")/../Benchmarks"

log=.build/bench-core.txt
mkdir -p .build
swift package --disable-sandbox benchmark --no-progress --time-units nanoseconds "$@" >"$log" 2>&1 || {
    tail -n 40 "$log"
    exit 1
}

# Each benchmark's name stands alone on a line above its table; the p50 column is the fifth '│'-separated field.
awk '
    function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
    function p50(line,  fields) { split(line, fields, "│"); return trim(fields[5]) + 0 }
    /^[A-Za-z]+\.[^ ]+$/ { name = $0; names[++count] = name }
    /│ Time \(wall clock\)/ { wall[name] = p50($0) }
    /│ Instructions/ { instructions[name] = p50($0) }
    /│ Malloc \(total\)/ { mallocs[name] = p50($0) }
    function ratio(subject, baseline) {
        if ((subject in wall) && (baseline in wall) && wall[subject] > 0)
            printf "| %s | %s | %.1f |\n", subject, baseline, wall[baseline] / wall[subject]
    }
    END {
        print "| Benchmark (median per operation) | Wall time (ns) | Instructions | Mallocs |"
        print "| --- | ---: | ---: | ---: |"
        for (i = 1; i <= count; i++) {
            n = names[i]
            printf "| %s | %d | %s | %d |\n", n, wall[n], (n in instructions) ? instructions[n] : "n/a", mallocs[n]
        }
        print ""
        print "| Herald | Baseline | Baseline time ÷ Herald time |"
        print "| --- | --- | ---: |"
        ratio("Payload.encode+validate", "Baseline.JSONEncoder.encode")
        ratio("Payload.encode+validate", "Baseline.JSONSerialization.encode")
        ratio("Payload.decode+validate", "Baseline.JSONDecoder.decode")
        ratio("Payload.decode+validate", "Baseline.JSONSerialization.decode")
        ratio("ProviderTokenCache.hit", "ProviderTokenCache.miss")
        ratio("WebPush.encrypt", "Baseline.swift-crypto.aes128gcm")
    }
' "$log"
