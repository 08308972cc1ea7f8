// swift-tools-version: 6.1
import PackageDescription

let upcomingFeatures: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "herald",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .library(name: "HeraldTesting", targets: ["HeraldTesting"]),
        .library(name: "HeraldClient", targets: ["HeraldClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // The shared APNs vocabulary: tokens, headers, payload, validation, JWT, encryption. No NIO, no HTTP.
        .target(
            name: "HeraldCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: upcomingFeatures
        ),
        // The SDK apps link: registration upload, environment detection, decoding, service-extension helpers.
        // Core only: never NIO, Hummingbird or the stores. Apple glue compiles only where UserNotifications exists.
        .target(
            name: "HeraldClient",
            dependencies: ["HeraldCore"],
            swiftSettings: upcomingFeatures
        ),
        // Test support that ships as a library: manual clocks, fixtures, harnesses.
        .target(
            name: "HeraldTesting",
            dependencies: ["HeraldCore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldCoreTests",
            dependencies: ["HeraldCore", "HeraldTesting", .product(name: "Crypto", package: "swift-crypto")],
            resources: [.copy("Fixtures")],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldClientTests",
            dependencies: ["HeraldClient", "HeraldCore", "HeraldTesting"],
            resources: [.copy("Fixtures")],
            swiftSettings: upcomingFeatures
        ),
    ],
    swiftLanguageModes: [.v6]
)
