// swift-tools-version: 6.1
// Herald's Apple glue (Sources/HeraldClient/AppleGlue) compiled on Linux against stand-ins of Apple's frameworks, as
// for iOS, and tested through them: scripts/check-apple-glue.sh fills Generated/ and runs it (docs/apple-glue.md).
// Not part of the herald package: the stand-in modules must never be visible to a real build.
import PackageDescription

let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "HeraldAppleGlueCheck",
    dependencies: [.package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0")],
    targets: [
        .target(name: "UserNotifications", path: "StandIns/UserNotifications", swiftSettings: settings),
        .target(name: "UIKit", path: "StandIns/UIKit", swiftSettings: settings),
        .target(name: "ActivityKit", path: "StandIns/ActivityKit", swiftSettings: settings),
        .target(
            name: "HeraldCore", dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            path: "Generated/HeraldCore", swiftSettings: settings),
        .target(
            name: "HeraldClient", dependencies: ["HeraldCore", "UserNotifications", "UIKit", "ActivityKit"],
            // A warning in the glue (a concurrency diagnostic Swift will make an error) fails the check.
            path: "Generated/HeraldClient", swiftSettings: settings + [.unsafeFlags(["-warnings-as-errors"])]),
        .testTarget(
            name: "AppleGlueTests", dependencies: ["HeraldClient", "HeraldCore", "UserNotifications", "UIKit", "ActivityKit"],
            path: "Generated/AppleGlueTests", swiftSettings: settings),
    ]
)
