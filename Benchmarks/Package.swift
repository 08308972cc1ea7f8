// swift-tools-version: 6.1
import PackageDescription

// Kept apart from the main package so that `swift build` and CI never build ordo-one/benchmark.
let package = Package(
    name: "HeraldBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "herald", path: ".."),
        // Naming the trait drops the default RuntimeInterposer trait, whose package this mirror does not carry.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HeraldCore", package: "herald"),
                .product(name: "HeraldTesting", package: "herald"),
            ],
            path: "Benchmarks/CoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
