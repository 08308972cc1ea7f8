import Foundation
import HTTPTypes
import HeraldAPNS
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// What a send records per device: the status docs/server.md promises, and what the server did about the answer.
@Suite("Sends: recorded outcomes", .timeLimit(.minutes(2)))
struct SendOutcomeRecordTests {
    @Test(
        "a retryable answer that outlasts the attempts is recorded as failed, not as APNs's rejection",
        arguments: Backend.available)
    func giveUpIsFailed(backend: Backend) async throws {
        try await ServerHarness.withServer(
            backend,
            configure: {
                $0.sending.retry = RetryPolicy(maximumAttempts: 2, initialBackoff: .milliseconds(1))
            }
        ) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let token = testToken(0xc1)
            _ = try emulator.createDevice(token: token, environment: .development, topic: ServerHarness.topic)
            try await client.register(token, debug: true)
            try emulator.setFaults(FaultConfiguration(serviceUnavailable: 1))

            let answer = try await client.call(
                .post, "/api/send", body: #"{"target": {"token": "\#(token.hex)"}, "alert": "hi"}"#, bearer: key)
            let outcome = try #require(answer.json["outcomes"]?.arrayValue?.first, "\(answer)")
            #expect(outcome["status"]?.stringValue == "failed" && outcome["httpStatus"] == nil, "\(outcome)")
            #expect(outcome["message"]?.stringValue?.contains("503") == true)
            #expect(answer.json["counts"]?["failed"]?.intValue == 1 && answer.json["counts"]?["rejected"]?.intValue == 0)
            let stored = try await client.call(
                .get, "/api/sends/\(answer.json["id"]?.stringValue ?? "")", bearer: key)
            #expect(stored.json["outcomes"]?.arrayValue?.first?["status"]?.stringValue == "failed")
            #expect(try await app.store.device(token)?.isActive == true, "a give-up leaves the token alone")
        }
    }

    @Test(
        "a background send stores what the server did per device, and GET /api/sends/{id} shows it",
        arguments: Backend.available)
    func backgroundActions(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: { $0.limits.inlineSendLimit = 1 }) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let live = testToken(0xc2)
            let dead = testToken(0xc3)
            let mislabelled = testToken(0xc4)
            for token in [live, dead, mislabelled] {
                _ = try emulator.createDevice(token: token, environment: .development, topic: ServerHarness.topic)
            }
            try emulator.markUnregistered(dead, at: Date(timeIntervalSinceNow: 3_600))
            try await client.register(live, debug: true)
            try await client.register(dead, debug: true)
            try await client.register(mislabelled, debug: false)

            let answer = try await client.call(
                .post, "/api/send", body: #"{"target": {"topic": "\#(ServerHarness.topic)"}, "alert": "hi"}"#,
                bearer: key)
            #expect(answer.status == .accepted, "\(answer)")
            let id = try #require(answer.json["id"]?.stringValue)
            _ = try await app.worker.waitUntilFinished(try #require(SendID(id)))
            let stored = try await client.call(.get, "/api/sends/\(id)", bearer: key)
            let outcomes = stored.json["outcomes"]?.arrayValue ?? []
            func action(_ token: DeviceToken) -> String? {
                outcomes.first { $0["token"]?.stringValue == token.hex }?["action"]?.stringValue
            }
            #expect(outcomes.count == 3, "\(stored)")
            #expect(action(live) == nil)
            #expect(action(dead) == "removed")
            #expect(action(mislabelled) == "environmentCorrected")
        }
    }
}
