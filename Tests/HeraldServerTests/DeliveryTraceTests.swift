import Foundation
import HTTPTypes
import HeraldAPNS
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// `GET /api/sends/{id}/devices/{token}`: one notification's timeline and verdict, through the real server, its store
/// and its emulator.
@Suite("Server: delivery trace", .timeLimit(.minutes(2)))
struct DeliveryTraceTests {
    static func trace(_ client: ServerClient, send: String, _ token: DeviceToken, key: String) async throws
        -> JSONValue
    {
        let answer = try await client.call(.get, "/api/sends/\(send)/devices/\(token.hex)", bearer: key)
        #expect(answer.status == .ok, "\(answer)")
        return answer.json
    }

    static func events(_ trace: JSONValue) -> [String] {
        trace["timeline"]?.arrayValue?.compactMap { $0["event"]?.stringValue } ?? []
    }

    @Test(
        "a development notification APNs accepted at once: one attempt, its apns-unique-id for Apple's console, and a verdict that follows the device's receipts",
        arguments: Backend.available)
    func acceptedThenOpened(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let key = try await SendTests.key(app)
            let token = testToken(0xd1)
            try await client.register(token, debug: true)
            let sent = try await client.call(
                .post, "/api/send", body: #"{"target": {"token": "\#(token.hex)"}, "alert": "hi"}"#, bearer: key)
            let id = try #require(sent.json["id"]?.stringValue, "\(sent)")

            var trace = try await Self.trace(client, send: id, token, key: key)
            #expect(Self.events(trace) == ["accepted", "attempt"], "\(trace)")
            #expect(trace["verdict"]?["code"] == "acceptedNotReported")
            #expect(trace["verdict"]?["text"]?.stringValue?.contains("the device never reported it") == true)
            let unique = try #require(trace["apnsUniqueId"]?.stringValue, "the sandbox answers with one")
            #expect(trace["pushNotificationsConsole"]?.stringValue?.hasPrefix("https://") == true)
            let attempt = try #require(trace["timeline"]?.arrayValue?.last)
            #expect(attempt["httpStatus"] == 200 && attempt["apnsUniqueId"]?.stringValue == unique)
            #expect(attempt["apnsId"] == sent.json["outcomes"]?.arrayValue?.first?["apnsId"])
            #expect(trace["attempts"] == 1 && trace["environment"] == "development" && trace["token"] == .string(token.hex))

            let reported = try await client.call(
                .post, "/api/events",
                body: ReceiptsTests.events(ReceiptsTests.event("opened", token, send: id)))
            #expect(reported.status == .ok, "\(reported)")
            trace = try await Self.trace(client, send: id, token, key: key)
            #expect(trace["verdict"]?["code"] == "opened", "\(trace)")
            #expect(Self.events(trace).suffix(2) == ["received", "opened"])

            // A device the send never reached, and an unknown send.
            let other = try await Self.trace(client, send: id, testToken(0xd9), key: key)
            #expect(other["verdict"]?["code"] == "notTargeted" && Self.events(other) == ["accepted"])
            let unknown = try await client.call(.get, "/api/sends/\(SendID())/devices/\(token.hex)", bearer: key)
            #expect(unknown.status == .notFound && unknown.reason == "unknownSend")
            let bad = try await client.call(.get, "/api/sends/\(id)/devices/xyz", bearer: key)
            #expect(bad.status == .badRequest, "\(bad)")
        }
    }

    @Test(
        "retried attempts are kept one by one with their status and wait, and a give-up is a failed verdict",
        arguments: Backend.available)
    func retries(backend: Backend) async throws {
        try await ServerHarness.withServer(
            backend, configure: { $0.sending.retry = RetryPolicy(maximumAttempts: 3, initialBackoff: .milliseconds(1)) }
        ) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let token = testToken(0xd2)
            try await client.register(token, debug: true)
            try emulator.setFaults(FaultConfiguration(serviceUnavailable: 1))
            let sent = try await client.call(
                .post, "/api/send", body: #"{"target": {"token": "\#(token.hex)"}, "alert": "hi"}"#, bearer: key)
            let id = try #require(sent.json["id"]?.stringValue, "\(sent)")

            let trace = try await Self.trace(client, send: id, token, key: key)
            #expect(Self.events(trace) == ["accepted", "attempt", "attempt", "attempt"], "\(trace)")
            let attempts = trace["timeline"]?.arrayValue?.filter { $0["event"] == "attempt" } ?? []
            #expect(attempts.map { $0["number"]?.intValue } == [1, 2, 3])
            #expect(attempts.allSatisfy { $0["httpStatus"] == 503 && $0["reason"] == "ServiceUnavailable" })
            #expect(attempts.dropLast().allSatisfy { $0["retryAfterMs"] != nil && $0["connection"] != nil })
            #expect(attempts.last?["retryAfterMs"] == nil, "the last attempt was not retried")
            #expect(trace["verdict"]?["code"] == "failed" && trace["attempts"] == 3, "\(trace)")
        }
    }

    @Test(
        "an environment correction shows both hosts' attempts, and a 410 shows the token's removal",
        arguments: Backend.available)
    func correctionAndRemoval(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let mislabelled = testToken(0xd3)
            let gone = testToken(0xd4)
            for token in [mislabelled, gone] {
                _ = try emulator.createDevice(token: token, environment: .development, topic: ServerHarness.topic)
            }
            try emulator.markUnregistered(gone, at: Date(timeIntervalSinceNow: 3_600))
            try await client.register(mislabelled, debug: false)
            try await client.register(gone, debug: true)
            let sent = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"tokens": ["\#(mislabelled.hex)", "\#(gone.hex)"]}, "alert": "hi"}"#, bearer: key)
            let id = try #require(sent.json["id"]?.stringValue, "\(sent)")

            let corrected = try await Self.trace(client, send: id, mislabelled, key: key)
            #expect(Self.events(corrected) == ["accepted", "attempt", "attempt", "environmentCorrected"], "\(corrected)")
            let attempts = corrected["timeline"]?.arrayValue?.filter { $0["event"] == "attempt" } ?? []
            #expect(attempts.map { $0["environment"]?.stringValue } == ["production", "development"])
            #expect(attempts.map { $0["reason"]?.stringValue } == ["BadDeviceToken", nil])
            #expect(corrected["environment"] == "development" && corrected["attempts"] == 2)
            #expect(corrected["verdict"]?["text"]?.stringValue?.contains("corrected the token's environment") == true)

            let removed = try await Self.trace(client, send: id, gone, key: key)
            #expect(Self.events(removed) == ["accepted", "attempt", "tokenRemoved"], "\(removed)")
            #expect(removed["verdict"]?["code"] == "removed")
            #expect(removed["timeline"]?.arrayValue?[1]["httpStatus"] == 410)
        }
    }

    @Test("a send-only key sees the token redacted; an admin key sees it whole")
    func redaction() async throws {
        try await ServerHarness.withServer { client, app in
            let admin = try await SendTests.key(app)
            let sendOnly = try await app.store.createAPIKey(name: "send", scopes: [.send]).secret.value
            let token = testToken(0xd5)
            try await client.register(token, debug: true)
            let sent = try await client.call(
                .post, "/api/send", body: #"{"target": {"token": "\#(token.hex)"}, "alert": "hi"}"#, bearer: admin)
            let id = try #require(sent.json["id"]?.stringValue)
            #expect(try await Self.trace(client, send: id, token, key: sendOnly)["token"] == .string(token.redacted))
            #expect(try await Self.trace(client, send: id, token, key: admin)["token"] == .string(token.hex))
            let anonymous = try await client.call(.get, "/api/sends/\(id)/devices/\(token.hex)")
            #expect(anonymous.status == .unauthorized)
        }
    }
}
