import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

@testable import HeraldServer

/// Runs a server in-process for a test, over its own database and in-process emulator.
enum ServerHarness {
    static let topic = AppConfiguration.defaultBundleID

    /// A configuration for tests: any free port, no rate limit, the in-process emulator without admin port or CA file.
    static func configuration(databaseURL: String) -> ServerConfiguration {
        var configuration = ServerConfiguration(
            listen: .init(port: 0), databaseURL: databaseURL, apns: .emulator(.init(adminPort: nil, caFile: nil)))
        configuration.limits.registrationsPerMinute = 0
        configuration.sending.pollInterval = .seconds(3600)
        return configuration
    }

    /// Builds a server on a fresh database and runs `body` with a router test client.
    /// - Parameters:
    ///   - configure: Changes to the test configuration.
    ///   - clock: The wall clock of records (registrations, 410 comparisons); the system clock by default.
    ///   - sleepClock: What the worker, backoffs and paced sends wait on; the continuous clock by default.
    ///   - prepare: Runs on the migrated store before the server starts (a previous instance's leftovers).
    static func withServer(
        _ backend: Backend = .sqlite, clock: any WallClock = SystemWallClock(),
        sleepClock: any Clock<Duration> = ContinuousClock(), testing: TestingSetup = .router, logger: Logger? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in },
        prepare: (@Sendable (any Store) async throws -> Void)? = nil,
        _ body: @escaping @Sendable (ServerClient, HeraldApplication) async throws -> Void
    ) async throws {
        let database = try TestDatabase.make(backend)
        do {
            if let prepare {
                let store = try StoreFactory.open(url: database.url, clock: clock)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await store.run() }
                    try await store.migrate()
                    try await prepare(store)
                    await store.close()
                    group.cancelAll()
                }
            }
            let app = try await build(
                databaseURL: database.url, clock: clock, sleepClock: sleepClock, logger: logger, configure: configure)
            try await app.test(testing) { client in
                try await body(ServerClient(client: client), app)
            }
        } catch {
            await database.cleanup()
            throw error
        }
        await database.cleanup()
    }
}

extension ServerHarness {
    /// A logger for tests that keeps warnings and above.
    static func quietLogger(_ label: String = "herald.test") -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = .warning
        return logger
    }

    /// Builds a server on a database with the test configuration, logging warnings and above unless given a logger.
    static func build(
        databaseURL: String, clock: any WallClock = SystemWallClock(),
        sleepClock: any Clock<Duration> = ContinuousClock(), logger: Logger?,
        configure: (inout ServerConfiguration) -> Void
    ) async throws -> HeraldApplication {
        var configuration = configuration(databaseURL: databaseURL)
        configure(&configuration)
        let logger = logger ?? quietLogger()
        return try await buildApplication(
            configuration: configuration,
            dependencies: ServerDependencies(logger: logger, clock: clock, sleepClock: sleepClock))
    }
}

extension APNSMode.CustomHost {
    /// The device-push listeners of a running emulator, trusting its CA: what `HERALD_APNS=custom` gives a server
    /// that shares the emulator with others.
    static func devicePush(of emulator: APNSEmulator) throws -> APNSMode.CustomHost {
        APNSMode.CustomHost(
            host: "127.0.0.1", productionPort: try #require(emulator.port(for: .production, service: .devicePush)),
            developmentPort: try #require(emulator.port(for: .development, service: .devicePush)),
            trustPEM: emulator.certificateAuthorityPEM)
    }
}

/// A test client that speaks JSON.
struct ServerClient: Sendable {
    let client: any TestClientProtocol

    struct Answer: Sendable, CustomStringConvertible {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let body: String

        /// The body as JSON, or `.null` when it is not JSON.
        var json: JSONValue { (try? JSONValue(parsing: body)) ?? .null }
        /// The `reason` of an error body.
        var reason: String? { json["reason"]?.stringValue }
        var description: String { "\(status.code) \(body)" }
    }

    @discardableResult
    func call(
        _ method: HTTPRequest.Method, _ uri: String, body: String? = nil, bearer: String? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> Answer {
        var headers = extra
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        if body != nil, headers[.contentType] == nil { headers[.contentType] = "application/json" }
        let response = try await client.execute(
            uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
        return Answer(status: response.status, headers: response.headers, body: String(buffer: response.body))
    }

    /// Registers a token with the book's body plus extra fields, and expects `201` or `200`.
    @discardableResult
    func register(
        _ token: DeviceToken, debug: Bool, extra: String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Answer {
        let answer = try await call(
            .post, "/api/token", body: #"{"token": "\#(token.hex)", "debug": \#(debug)\#(extra)}"#)
        #expect(answer.status == .created || answer.status == .ok, "\(answer)", sourceLocation: sourceLocation)
        return answer
    }
}

/// Test tokens: distinct, valid, easy to tell apart.
func testToken(_ byte: Int, bytes: Int = 32) -> DeviceToken {
    try! DeviceToken(hex: String(repeating: String(format: "%02x", byte), count: bytes))
}

extension ServerHarness {
    /// Two server instances on one database, sending to one emulator of their own (which trusts their signing key), each
    /// with a router test client: what a test of state shared across instances needs.
    /// - Parameter configure: Changes to each instance's configuration, after its app and emulator are set.
    static func withTwoInstances(
        databaseURL url: String, configure: @escaping (inout ServerConfiguration) -> Void,
        _ body: @escaping @Sendable (APNSEmulator, (HeraldApplication, ServerClient), (HeraldApplication, ServerClient))
            async throws -> Void
    ) async throws {
        try await SharedEmulator.with(databaseURL: url) { shared in
            let first = try await shared.instance("one", configure: configure)
            let second = try await shared.instance("two", configure: configure)
            try await first.test(.router) { one in
                try await second.test(.router) { two in
                    try await body(
                        shared.emulator, (first, ServerClient(client: one)), (second, ServerClient(client: two)))
                }
            }
        }
    }
}
