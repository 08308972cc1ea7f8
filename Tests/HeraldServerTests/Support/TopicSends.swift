import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// The background send to the test app's whole topic that the fault tests make, and what they check of it.
enum TopicSends {
    /// Registers devices 1…`count` of the test app, the even ones in production and the odd ones in development
    /// (or where `environment` says).
    static func register(
        _ count: Int, in store: any Store,
        environment: @escaping @Sendable (Int) -> APNSEnvironment = { $0 % 2 == 0 ? .production : .development }
    ) async throws {
        try await DeviceSeeding.register(
            (1...count).lazy.map { n in
                TokenRegistration(token: StoreConformance.token(n), topic: ServerHarness.topic, environment: environment(n))
            }, in: store)
    }

    /// Sends an alert to the whole topic in the background; returns the send's id.
    static func start(_ client: ServerClient, key: String, alert: String) async throws -> SendID {
        let answer = try await client.call(
            .post, "/api/send", body: #"{"target": {"topic": "\#(ServerHarness.topic)"}, "alert": "\#(alert)"}"#,
            bearer: key)
        return try #require(SendID(answer.json["id"]?.stringValue ?? ""), "\(answer)")
    }

    /// Waits for the send's end and checks it completed with every one of `count` devices accepted, and that the
    /// emulator got each notification once.
    static func expectEveryDeviceOnce(
        _ id: SendID, count: Int, app: HeraldApplication, emulator: APNSEmulator,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let finished = try await app.worker.waitUntilFinished(id)
        #expect(finished.status == .completed, "\(finished)", sourceLocation: sourceLocation)
        #expect(
            finished.counts.accepted == count && finished.counts.total == count, "\(finished.counts)",
            sourceLocation: sourceLocation)
        let counters = emulator.counters
        #expect(counters.duplicateAPNSIDs == 0, "nothing sent twice: \(counters)", sourceLocation: sourceLocation)
        #expect(counters.accepted == count, "\(counters)", sourceLocation: sourceLocation)
    }
}
