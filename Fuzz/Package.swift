// swift-tools-version: 6.1
import PackageDescription

// Kept apart from the main package so that `swift build` never links libFuzzer. Build and run it with
// scripts/fuzz.sh, which passes `--sanitize fuzzer --sanitize address` so that Herald's code is instrumented too.
let package = Package(
    name: "HeraldFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "herald", path: ".."),
    ],
    targets: [
        // One libFuzzer binary for every target; HERALD_FUZZ_TARGET picks which (scripts/fuzz.sh sets it).
        .executableTarget(
            name: "HeraldFuzzer",
            dependencies: [.product(name: "HeraldFuzzing", package: "herald")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
