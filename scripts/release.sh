#!/usr/bin/env bash
# Packages `herald` for machines without a Swift toolchain: dist/herald-<version>-linux-<arch>.tar.gz and its
# .sha256, plus dist/herald/ (the same files unpacked), which the Dockerfile copies (docs/operations.md).
#
#   scripts/release.sh                          release build, Swift runtime and Foundation linked statically
#   scripts/release.sh --configuration debug    debug build (dynamic): the toolchain's runtime libraries go beside it
#   scripts/release.sh --binary PATH            package a herald already built (CI: .build/debug/herald)
#   options: --version V (default: git describe), --output DIR (default: dist)
# The same settings as environment variables: HERALD_RELEASE_CONFIGURATION, HERALD_RELEASE_BINARY, HERALD_VERSION,
# HERALD_RELEASE_OUTPUT.
set -euo pipefail
cd "$(dirname "$0")/.."

configuration=${HERALD_RELEASE_CONFIGURATION:-release}
binary=${HERALD_RELEASE_BINARY:-}
version=${HERALD_VERSION:-}
output=${HERALD_RELEASE_OUTPUT:-dist}
while [ $# -gt 0 ]; do
    case "$1" in
        --configuration|-c) configuration=$2; shift 2 ;;
        --binary) binary=$2; shift 2 ;;
        --version) version=$2; shift 2 ;;
        --output) output=$2; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$configuration" in release|debug) ;; *) echo "release.sh: --configuration is release or debug" >&2; exit 2 ;; esac

log() { printf '==> %s\n' "$*" >&2; }

if [ -z "$binary" ]; then
    if [ "$configuration" = release ]; then
        # --static-swift-stdlib links the Swift runtime, Dispatch and Foundation (with ICU's data) into the binary, so
        # it needs only libc, libstdc++ and the system's SQLite. About 23 minutes on two shared cores.
        log "swift build -c release --product herald --static-swift-stdlib"
        swift build -c release --product herald --static-swift-stdlib
    else
        log "swift build -c debug --product herald"
        swift build -c debug --product herald
    fi
    binary=$(swift build -c "$configuration" --show-bin-path)/herald
fi
[ -x "$binary" ] || { echo "release.sh: $binary is not an executable: build it first or drop --binary" >&2; exit 1; }

if [ -z "$version" ]; then
    version=$(git describe --tags --always --dirty 2>/dev/null || echo unknown)
fi
# A debug package is for CI's image test, not for users: its name says so.
if [ "$configuration" = debug ]; then version="$version-debug"; fi
arch=$(uname -m)
name="herald-$version-linux-$arch"

mkdir -p "$output"
stage="$output/herald"
rm -rf "$stage"
mkdir -p "$stage"
cp "$binary" "$stage/herald"
# Debug information is most of a binary's size; the symbol table stays, so crash backtraces still name functions.
strip --strip-debug "$stage/herald"
chmod 0755 "$stage/herald"

# Libraries the binary still takes from a Swift toolchain: none in a release build. A debug build links the runtime
# dynamically, so the toolchain's libraries are copied beside it, where its RUNPATH ($ORIGIN) finds them.
toolchain_libs=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /\/swift\// { print $3 }')
if [ -n "$toolchain_libs" ]; then
    if [ "$configuration" = release ]; then
        echo "release.sh: the release binary still links Swift libraries dynamically:" >&2
        echo "$toolchain_libs" >&2
        exit 1
    fi
    # Not grep -q: stopping at the first match can kill readelf with SIGPIPE, which pipefail reports as a failure.
    readelf -d "$binary" | grep 'RUNPATH.*\$ORIGIN' >/dev/null || {
        echo "release.sh: $binary has no \$ORIGIN in its RUNPATH, so libraries beside it would not be found" >&2
        exit 1
    }
    for lib in $toolchain_libs; do
        cp -L "$lib" "$stage/"
        strip --strip-debug "$stage/$(basename "$lib")"
    done
    log "copied $(echo "$toolchain_libs" | wc -l) Swift runtime libraries beside the debug binary"
fi
missing=$(ldd "$stage/herald" | awk '/not found/ { print $1 }')
[ -z "$missing" ] || { echo "release.sh: libraries not found: $missing" >&2; exit 1; }

for doc in README.md LICENSE LICENSE.md LICENSE.txt NOTICE; do
    if [ -f "$doc" ]; then cp "$doc" "$stage/"; fi
done

# What the package needs from the system, for the README and the Dockerfile to name.
log "system libraries herald needs: $(ldd "$stage/herald" | awk '$2 == "=>" { print $1 }' \
    | grep -v -E '^(libswift|libFoundation|lib_FoundationICU|libdispatch|libBlocksRuntime)' | sort | tr '\n' ' ')"

tarball="$name.tar.gz"
# The tarball's top folder carries the version; files owned by root and dated by the commit, so two packagings of
# the same build differ only in the binary's own bytes.
mtime=$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
tar -C "$output" --transform "s,^herald,$name," --owner=0 --group=0 --numeric-owner --mtime="$mtime" --sort=name \
    -czf "$output/$tarball" herald
(cd "$output" && sha256sum "$tarball" > "$tarball.sha256")

log "$output/$tarball ($(du -h "$output/$tarball" | cut -f1); herald $(du -h "$stage/herald" | cut -f1) unpacked)"
log "$output/$tarball.sha256: $(cut -d' ' -f1 "$output/$tarball.sha256")"
echo "$output/$tarball"
