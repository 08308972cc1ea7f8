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
        .executable(name: "herald", targets: ["HeraldCLI"]),
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .library(name: "HeraldAPNS", targets: ["HeraldAPNS"]),
        .library(name: "HeraldEmulator", targets: ["HeraldEmulator"]),
        .library(name: "HeraldTesting", targets: ["HeraldTesting"]),
        .library(name: "HeraldClient", targets: ["HeraldClient"]),
        .library(name: "HeraldStore", targets: ["HeraldStore"]),
        .library(name: "HeraldStoreSQLite", targets: ["HeraldStoreSQLite"]),
        .library(name: "HeraldStorePostgres", targets: ["HeraldStorePostgres"]),
        .library(name: "HeraldSending", targets: ["HeraldSending"]),
        .library(name: "HeraldServer", targets: ["HeraldServer"]),
        .library(name: "HeraldWebhooks", targets: ["HeraldWebhooks"]),
        .library(name: "HeraldFuzzing", targets: ["HeraldFuzzing"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // FullFoundation only: the server reads its configuration itself, so swift-configuration is not needed.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
    ],
    targets: [
        // The shared APNs vocabulary: tokens, headers, payload, validation, JWT, encryption. No NIO, no HTTP.
        .target(
            name: "HeraldCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: upcomingFeatures
        ),
        // HTTP/2 framing (RFC 9113), fixed-shape HPACK literals and the one connection state machine (stream states,
        // SETTINGS, windows, limits) that the sender and the emulator both drive. Checked against curl, h2load, nginx.
        .target(
            name: "HeraldHTTP2",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: upcomingFeatures
        ),
        // The fuzz targets' properties, one per parser that reads what strangers send. The libFuzzer driver lives in
        // the separate Fuzz/ package; HeraldFuzzingTests replays the committed corpus on every `swift test`.
        .target(
            name: "HeraldFuzzing",
            dependencies: [
                "HeraldCore",
                "HeraldHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: upcomingFeatures
        ),
        // The sender: pooled, multiplexed HTTP/2 to APNs with retries. Core + NIO only: not the server, not the emulator.
        .target(
            name: "HeraldAPNS",
            dependencies: [
                "HeraldCore",
                "HeraldHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcomingFeatures
        ),
        // A local APNs over HTTP/2 + TLS. Must not import the APNs client: both are checked against one outcome table.
        .target(
            name: "HeraldEmulator",
            dependencies: [
                "HeraldCore",
                "HeraldHTTP2",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcomingFeatures
        ),
        // The send engine: accepted jobs, the fan-out, the worker with its lanes, shards and shared in-flight budget,
        // broadcasts. No HTTP: the server, the console and the CLI are adapters over it.
        .target(
            name: "HeraldSending",
            dependencies: [
                "HeraldCore",
                "HeraldStore",
                "HeraldAPNS",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcomingFeatures
        ),
        // Signed webhooks: the deliverer of the store's outbox, its HTTP/1.1 client (NIO) and the signature. No
        // Hummingbird: the server starts it as one of its services.
        .target(
            name: "HeraldWebhooks",
            dependencies: [
                "HeraldCore",
                "HeraldStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcomingFeatures
        ),
        // The provider server: registration, send API, background sends, operations. Hummingbird 2 over all of the above.
        .target(
            name: "HeraldServer",
            dependencies: [
                "HeraldCore",
                "HeraldAPNS",
                "HeraldEmulator",
                "HeraldStore",
                "HeraldStoreSQLite",
                "HeraldStorePostgres",
                "HeraldSending",
                "HeraldWebhooks",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Mustache", package: "swift-mustache"),
                // herald doctor: binding the listen address, loading certificates as the sender does, reading them.
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            // The console's templates, style sheet, scripts and icon, and docs/openapi.yaml (through a link in
            // OpenAPI/), embedded in the binary as bytes: no resource bundle to ship, no generated copy to keep in step.
            resources: [
                .embedInCode("Console/Assets"), .embedInCode("OpenAPI/openapi.yaml"), .embedInCode("WebClient/Assets"),
            ],
            swiftSettings: upcomingFeatures
        ),
        // The `herald` command: thin commands over the libraries.
        .executableTarget(
            name: "HeraldCLI",
            dependencies: [
                "HeraldCore",
                "HeraldAPNS",
                "HeraldEmulator",
                "HeraldServer",
                "HeraldStore",
                "HeraldStoreSQLite",
                "HeraldWebhooks",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcomingFeatures
        ),
        // The SDK apps link: registration upload, environment detection, decoding, service-extension helpers.
        // Core only: never NIO, Hummingbird or the stores. Apple glue compiles only where UserNotifications exists.
        .target(
            name: "HeraldClient",
            dependencies: ["HeraldCore"],
            swiftSettings: upcomingFeatures
        ),
        // The token registry and delivery records behind one interface; the SQL both backends share.
        .target(
            name: "HeraldStore",
            dependencies: [
                "HeraldCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcomingFeatures
        ),
        // The embedded backend: SQLite through GRDB (the system's libsqlite3).
        .target(
            name: "HeraldStoreSQLite",
            dependencies: [
                "HeraldStore",
                "HeraldCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the hot statements: see SQLiteStatementRunner.swift.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcomingFeatures
        ),
        // The backend for several instances: PostgreSQL through postgres-nio's connection pool.
        .target(
            name: "HeraldStorePostgres",
            dependencies: [
                "HeraldStore",
                "HeraldCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcomingFeatures
        ),
        // Test support that ships as a library: manual clocks, fixtures, harnesses.
        .target(
            name: "HeraldTesting",
            dependencies: [
                "HeraldCore",
                "HeraldStore",
                "HeraldStoreSQLite",
                "HeraldStorePostgres",
                "HeraldSending",
                "HeraldAPNS",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldHTTP2Tests",
            dependencies: [
                "HeraldHTTP2", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldSendingTests",
            dependencies: ["HeraldSending", "HeraldStore", "HeraldCore", "HeraldTesting", "HeraldAPNS"],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldFuzzingTests",
            dependencies: ["HeraldFuzzing", "HeraldCore"],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldAPNSTests",
            dependencies: [
                "HeraldAPNS", "HeraldEmulator", "HeraldCore", "HeraldTesting", "HeraldHTTP2", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldEmulatorTests",
            dependencies: [
                "HeraldEmulator", "HeraldCore", "HeraldTesting", "HeraldCLI", "HeraldHTTP2",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldCLITests",
            dependencies: [
                "HeraldCLI", "HeraldAPNS", "HeraldCore", "HeraldEmulator", "HeraldTesting", "HeraldStore", "HeraldStoreSQLite",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldCoreTests",
            dependencies: ["HeraldCore", "HeraldTesting", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldClientTests",
            dependencies: ["HeraldClient", "HeraldCore", "HeraldTesting"],
            resources: [.copy("Fixtures")],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldStoreSQLiteTests",
            dependencies: [
                "HeraldStoreSQLite", "HeraldStore", "HeraldCore", "HeraldTesting",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldServerTests",
            dependencies: [
                "HeraldClient",
                "HeraldServer", "HeraldCLI", "HeraldStore", "HeraldStoreSQLite", "HeraldStorePostgres", "HeraldEmulator",
                "HeraldAPNS", "HeraldCore", "HeraldSending", "HeraldTesting", "HeraldWebhooks",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The console's browser flows (Playwright), run by ConsoleBrowserTests.
            exclude: [
                "Console/browser_flows.py", "Console/trace_flows.py", "Console/viewer_walk.py", "Console/quiet_flows.py", "Console/web_push_flow.py",
            ],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "HeraldStorePostgresTests",
            dependencies: [
                "HeraldStorePostgres", "HeraldStore", "HeraldCore", "HeraldTesting",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: upcomingFeatures
        ),
    ],
    swiftLanguageModes: [.v6]
)
