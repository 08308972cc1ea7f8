public import Foundation
public import HeraldCore
public import HeraldStore
import ServiceLifecycle

/// The behaviour every ``HeraldStore/Store`` backend must have, as one function per behaviour.
///
/// Each backend's test target runs every case against its own fixture:
///
/// ```swift
/// @Test(arguments: StoreConformance.cases)
/// func conformance(_ check: StoreConformance.Case) async throws {
///     try await StoreConformance.run(check, on: makeFixture())
/// }
/// ```
///
/// Cases report failures with Swift Testing's `#expect`, so they must run inside a test. Times come from a
/// ``ManualWallClock``: no case sleeps.
public enum StoreConformance {
    /// One behaviour.
    public struct Case: Sendable, CustomStringConvertible {
        /// The behaviour, as a sentence.
        public let name: String
        let body: @Sendable (Context) async throws -> Void

        init(_ name: String, _ body: @escaping @Sendable (Context) async throws -> Void) {
            self.name = name
            self.body = body
        }

        public var description: String { name }
    }

    /// What a case works with: a running, migrated store, its clock, and a way to open a second instance.
    public struct Context: Sendable {
        /// The store under test, running and migrated.
        public let store: any Store
        /// The clock every store of the case reads.
        public let clock: ManualWallClock
        let fixture: StoreFixture

        /// Runs `body` with a second store on the same database, running and migrated: another server instance.
        public func withSecondInstance<T: Sendable>(_ body: (any Store) async throws -> T) async throws -> T {
            try await StoreConformance.withRunning(try fixture.open(clock), body)
        }
    }

    /// Every case.
    public static var cases: [Case] {
        tokenCases + deliveryCases + keyCases + lifecycleCases + consoleCases + receiptCases + activityCases
            + channelCases + shardCases + idempotencyCases + retentionCases + preferenceCases + webhookCases
            + traceCases + pushToStartCheckCases + accessCases + frequencyCapCases + ownQuietHoursCases + compactOutcomeCases
            + sendRecordCases
    }

    /// Runs one case on a fresh database: opens a store, runs and migrates it, runs the case, then cleans up.
    public static func run(_ check: Case, on fixture: StoreFixture) async throws {
        let clock = ManualWallClock()
        do {
            let store = try fixture.open(clock)
            try await withRunning(store) { store in
                try await check.body(Context(store: store, clock: clock, fixture: fixture))
            }
        } catch {
            await fixture.cleanup()
            throw error
        }
        await fixture.cleanup()
    }

    /// Runs a store's service while `body` uses it (migrated first, unless `migrate` is false), then stops it.
    public static func withRunning<T: Sendable>(
        _ store: any Store, migrate: Bool = true, _ body: (any Store) async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            do {
                if migrate { try await store.migrate() }
                let result = try await body(store)
                group.cancelAll()
                await store.close()
                return result
            } catch {
                group.cancelAll()
                await store.close()
                throw error
            }
        }
    }

    // MARK: Fixtures for cases

    /// A token whose hex is `n` zero-padded to 64 digits, so tokens sort as their numbers do.
    public static func token(_ n: Int) -> DeviceToken {
        let hex = String(n, radix: 16)
        // 64 hex digits is a valid 32-byte token; the padding keeps the order numeric.
        return try! DeviceToken(hex: String(repeating: "0", count: 64 - hex.count) + hex)
    }

    /// The topic cases register under.
    public static let topic = "com.example.herald"

    /// A registration with defaults for what a case does not care about.
    public static func registration(
        _ n: Int, topic: String = topic, environment: APNSEnvironment = .production, kind: TokenKind = .device,
        user: String? = nil, installation: UUID? = nil, tags: [String] = [], languages: [String] = []
    ) -> TokenRegistration {
        TokenRegistration(
            token: token(n), topic: topic, environment: environment, tokenKind: kind, userID: user,
            installationID: installation, preferredLanguages: languages, tags: tags)
    }

    /// Every registration a query matches, walking pages of `pageSize`.
    public static func all(_ store: any Store, _ query: DeviceQuery, pageSize: Int = 1_000) async throws
        -> [DeviceRegistration]
    {
        var devices: [DeviceRegistration] = []
        for try await device in store.allDevices(matching: query, pageSize: pageSize) { devices.append(device) }
        return devices
    }
}
