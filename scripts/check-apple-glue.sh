#!/usr/bin/env bash
# Compiles Sources/HeraldClient (its Apple glue included) on Linux against stand-ins of UserNotifications, UIKit and
# ActivityKit, as for iOS, and runs the glue's tests through them (docs/apple-glue.md).
#
#   scripts/check-apple-glue.sh                    compile and test; exit 1 when either fails
#   scripts/check-apple-glue.sh --deliberate-error also prove the check can fail: a copy of the glue with an error
#                                                  planted must not compile (CI runs both)
set -euo pipefail
cd "$(dirname "$0")/.."
check=AppleGlueCheck
generated=$check/Generated

log() { printf '\n==> %s\n' "$*"; }

# Sources/HeraldCore and Sources/HeraldClient as they are, with the platform conditions of their `#if` lines read as on
# an iPhone: os(iOS) holds, the other platforms and the Simulator and Mac Catalyst environments do not. The stand-in
# modules make canImport(UserNotifications), canImport(UIKit) and canImport(ActivityKit) hold.
generate() {
    rm -rf "$generated"
    mkdir -p "$generated/AppleGlueTests"
    cp -R Sources/HeraldCore "$generated/HeraldCore"
    cp -R Sources/HeraldClient "$generated/HeraldClient"
    python3 - "$generated/HeraldClient" <<'PY'
import pathlib, re, sys
conditions = {
    r"os\(iOS\)": "true", r"os\(macOS\)": "false", r"os\(tvOS\)": "false", r"os\(watchOS\)": "false",
    r"os\(visionOS\)": "false", r"targetEnvironment\(macCatalyst\)": "false", r"targetEnvironment\(simulator\)": "false",
}
for path in pathlib.Path(sys.argv[1]).rglob("*.swift"):
    lines = path.read_text().split("\n")
    for index, line in enumerate(lines):
        if re.match(r"\s*#(if|elseif)\b", line):
            for pattern, value in conditions.items():
                line = re.sub(pattern, value, line)
            lines[index] = line
    path.write_text("\n".join(lines))
PY
    # The glue's tests, with the SDK tests' loopback HTTP server and the count they wait on.
    cp $check/Tests/AppleGlueTests/*.swift "$generated/AppleGlueTests/"
    sed '/^import HeraldTesting$/d' Tests/HeraldClientTests/Support/LoopbackHTTPServer.swift \
        > "$generated/AppleGlueTests/LoopbackHTTPServer.swift"
    sed 's/^public final class CountSignal/final class CountSignal/' Sources/HeraldTesting/CountSignal.swift \
        > "$generated/AppleGlueTests/CountSignal.swift"
}

generate
log "Building Sources/HeraldClient against the stand-ins, as for iOS"
swift build --package-path "$check" --build-tests 2>&1 | grep -v '^\[' | tail -n 40
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
    echo "The Apple glue does not compile against the stand-ins (above)." >&2
    exit 1
fi
log "Testing the glue through the stand-ins"
swift test --package-path "$check" --skip-build

if [ "${1:-}" = "--deliberate-error" ]; then
    log "A deliberate error in the glue must fail the check"
    # Inside the file's `#if canImport(UserNotifications)`, where only the stand-ins let the compiler see it.
    python3 - "$generated/HeraldClient/AppleGlue/PushNotifications.swift" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
cut = text.rindex("#endif")
open(path, "w").write(text[:cut] + 'func deliberateError() { let _: Int = "the check must catch this" }\n' + text[cut:])
PY
    if swift build --package-path "$check" --target HeraldClient >/dev/null 2>&1; then
        echo "A copy of the glue with an error planted compiled: the check proves nothing." >&2
        exit 1
    fi
    echo "The planted error failed the build, as it must."
    generate
fi
