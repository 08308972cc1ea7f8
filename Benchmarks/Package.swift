// swift-tools-version: 6.1
import PackageDescription

// Kept apart from the main package so that `swift build` and CI never build ordo-one/benchmark.

/// What the benchmarks and the profiling driver both measure, on the same inputs.
let heraldUnderTest: [Target.Dependency] = [
    "CoreFixtures",
    .product(name: "HeraldCore", package: "herald"),
    .product(name: "HeraldTesting", package: "herald"),
]

let package = Package(
    name: "HeraldBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "herald", path: ".."),
        // The Web Push encryption's baseline calls swift-crypto directly: the same version as Herald's.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        // Naming the trait drops the default RuntimeInterposer trait, whose package is not available on our machines.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // The plugin runs every executable target whose folder sits in Benchmarks/Benchmarks/.
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: heraldUnderTest + [
                .product(name: "Benchmark", package: "benchmark"), .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/CoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .target(name: "CoreFixtures", dependencies: [.product(name: "HeraldCore", package: "herald")]),
        // A bare loop over one hot path, for callgrind; kept out of Benchmarks/Benchmarks/ so the plugin skips it.
        .executableTarget(name: "CoreProfile", dependencies: heraldUnderTest),
    ],
    swiftLanguageModes: [.v6]
)
