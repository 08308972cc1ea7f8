#!/usr/bin/env bash
# Reproduces the headline rows of docs/benchmarks.md ("Today's figures"): runs the benchmarks behind them with
# scripts/bench-server.sh, one after the other, and prints each as a Markdown row — its figure, its ceiling measured
# in the same run, the ratio with a bar, the build and date, and the command — ready to paste into the table.
#
#   scripts/bench-headline.sh [ROW...]     rows: sqlite postgres inline (default: all three, about 12 minutes)
#
#   sqlite     one send to 1,000,000 devices on SQLite          (bench-server.sh fanout sqlite 1000000)
#   postgres   the same on PostgreSQL, with pg_stat_statements   (bench-server.sh fanout postgres 1000000)
#   inline     POST /api/send to one token, answered inline      (bench-server.sh transactional postgres 20 64)
#
# DEVICES (1000000) changes the fan-out's size. HERALD_BENCH_BINARY runs a given release build instead of building this
# tree (its build is then named by `git describe` of the tree, so set HERALD_BENCH_BUILD to say which it is). Each
# benchmark's full output is kept in $HEADLINE_WORK (default: a new temporary folder), whose path is printed first.
# Run it on a machine with nothing else running: the figures are CPU-bound on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."

rows=("$@")
[ "${#rows[@]}" -gt 0 ] || rows=(sqlite postgres inline)
for row in "${rows[@]}"; do
    case "$row" in
        sqlite | postgres | inline) ;;
        *) echo "unknown row '$row': the rows are sqlite, postgres and inline" >&2; exit 2 ;;
    esac
done
devices="${DEVICES:-1000000}"
work="${HEADLINE_WORK:-$(mktemp -d /tmp/herald-headline.XXXXXX)}"
mkdir -p "$work"
build="${HERALD_BENCH_BUILD:-$(git describe --always --dirty 2>/dev/null || echo unknown)}"
date=$(date -u +%Y-%m-%d)
echo "==> Outputs in $work" >&2

pg_settings="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on"
for row in "${rows[@]}"; do
    echo "==> $row" >&2
    case "$row" in
        sqlite) scripts/bench-server.sh fanout sqlite "$devices" >"$work/$row.txt" 2>&1 ;;
        postgres) PG_SETTINGS="$pg_settings" scripts/bench-server.sh fanout postgres "$devices" >"$work/$row.txt" 2>&1 ;;
        inline) scripts/bench-server.sh transactional postgres 20 64 >"$work/$row.txt" 2>&1 ;;
    esac || { echo "the $row benchmark failed: see $work/$row.txt" >&2; exit 1; }
done

python3 - "$work" "$build" "$date" "$devices" "$pg_settings" "${rows[@]}" <<'PY'
import re, sys

work, build, date, devices, pg_settings, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6:]


def find(pattern, text, what):
    match = re.search(pattern, text, re.MULTILINE)
    if not match:
        sys.exit(f"{what}: not found in the benchmark's output ({pattern})")
    return match


def number(text):
    return float(text.replace(",", ""))


def bar(ratio, width=10):
    filled = max(0, min(width, round(ratio * width)))
    return "█" * filled + "░" * (width - filled)


def fanout(backend, text):
    result = find(rf"^\| {backend}, \S+ \| [\d,]+ \| ([\d.]+) s \| ([\d,]+) \|", text, "the fan-out's row")
    cpu = find(r"^CPU per notification: server ([\d.]+) µs(?:.*PostgreSQL ([\d.]+) µs)?", text, "CPU per notification")
    growth = find(r"^Database growth per notification: ([\d.]+) B[^,\n]*(?:, WAL ([\d.]+) B)?", text, "database growth")
    reads = find(r"^GET /api/sends/\{id\}\?limit=100 while sending: median ([\d.]+) ms.*first page ([\d.]+) ms", text,
                 "the send's reads")
    ceiling = find(r"^Ceiling, herald send alone: ([\d,]+) notifications/s", text, "the ceiling")
    rate, limit = number(result[2]), number(ceiling[1])
    parts = [f"{result[1]} s, {result[2]} notifications/s", f"server {cpu[1]} µs"]
    if cpu[2]:
        parts.append(f"PostgreSQL {cpu[2]} µs")
    figure = ", ".join(parts) + f" CPU and {growth[1]} B of database"
    if growth[2]:
        figure += f" and {growth[2]} B of WAL"
    figure += (f" per notification; `GET /api/sends/{{id}}` {reads[1]} ms median while it runs, {reads[2]} ms after")
    command = f"scripts/bench-server.sh fanout {backend} {devices}"
    if backend == "postgres":
        command = f'PG_SETTINGS="{pg_settings}" {command}'
    name = "SQLite" if backend == "sqlite" else "PostgreSQL"
    return (f"one send to {devices:,} devices, {name}", figure, f"`herald send` {ceiling[1]}/s", rate / limit, command)


def inline(text):
    result = find(r"^\| `POST /api/send`, postgres \| ([\d,]+) \| (\S+) \| (\S+) \|", text, "the inline sends' row")
    ceiling = find(r"^\| `herald send` alone \(ceiling\) \| ([\d,]+) \|", text, "the ceiling")
    cpu = find(r"^CPU per send during wrk: server (\d+) µs", text, "CPU per send")
    figure = f"{result[1]}/s, p99 {result[3]}, {cpu[1]} µs server CPU per send"
    ratio = number(result[1]) / number(ceiling[1])
    return ("inline sends (`POST /api/send`, one token), PostgreSQL", figure, f"`herald send` {ceiling[1]}/s", ratio,
            "scripts/bench-server.sh transactional postgres 20 64")


print("| what | figure | ceiling, same run | ratio | build, date | command |")
print("|---|---|---|---:|---|---|")
for row in rows:
    text = open(f"{work}/{row}.txt", encoding="utf-8").read()
    what, figure, ceiling, ratio, command = inline(text) if row == "inline" else fanout(row, text)
    print(f"| {what} | {figure} | {ceiling} | `{bar(ratio)}` {ratio:.2f} | `{build}`, {date} | `{command}` |")
PY
