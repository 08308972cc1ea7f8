import Foundation
@testable import HeraldAPNS
import HeraldCore
import HeraldEmulator
import NIOCore
import HeraldTesting
import Testing

@Suite("Sender: the shared outcome table from the client side", .timeLimit(.minutes(2)))
struct SenderOutcomeTests {
    let harness = SenderHarness()

    /// The cases a caller can express through the typed API; the rest (GET, raw paths, duplicate or malformed
    /// headers) cannot be produced by the sender at all.
    static let expressible = APNSOutcomeTable.cases.filter { testCase in
        guard testCase.method == "POST", testCase.duplicatedHeader == nil else { return false }
        switch testCase.target {
        case .rawPath, .rawToken: return false
        default: break
        }
        if testCase.authorization == .missing || testCase.authorization == .garbage { return false }
        for (name, value) in testCase.headers {
            switch name {
            case "apns-id": if value.flatMap(APNSID.init(headerValue:)) == nil { return false }
            case "apns-push-type": if value.flatMap(APNSPushType.init(headerValue:)) == nil { return false }
            case "apns-priority": if value.flatMap(APNSPriority.init(headerValue:)) == nil { return false }
            case "apns-expiration": if value.flatMap(APNSExpiration.init(headerValue:)) == nil { return false }
            default: break
            }
        }
        return true
    }

    func notification(for testCase: APNSOutcomeTable.Case) -> PushNotification {
        let headers = testCase.requestHeaders
        return PushNotification(
            body: .raw(testCase.body.bytes), pushType: (headers["apns-push-type"] ?? nil).flatMap { APNSPushType(headerValue: $0) } ?? .alert,
            topic: (headers["apns-topic"] ?? nil) ?? "", priority: (headers["apns-priority"] ?? nil).flatMap(APNSPriority.init(headerValue:)),
            expiration: (headers["apns-expiration"] ?? nil).flatMap(APNSExpiration.init(headerValue:)),
            collapseID: headers["apns-collapse-id"] ?? nil, apnsID: (headers["apns-id"] ?? nil).flatMap(APNSID.init(headerValue:)))
    }

    func token(for target: APNSOutcomeTable.Target) -> DeviceToken {
        switch target {
        case .developmentDevice: harness.developmentDevice
        case .productionDeviceOnDevelopment: harness.productionDevice
        case .voipDevice: harness.voipDevice
        case .unregisteredDevice: harness.unregisteredDevice
        case .expiredDevice: harness.expiredDevice
        case .unknownToken, .rawToken, .rawPath: harness.unknownDevice
        }
    }

    @Test("each expressible case ends as the table says", arguments: expressible)
    func outcome(_ testCase: APNSOutcomeTable.Case) async throws {
        let credentials: APNSCredentials?
        switch testCase.authorization {
        case .expired:
            // A signer whose clock runs two hours behind APNs': every token it makes is already expired.
            let lagging = ManualWallClock(harness.clock.now().addingTimeInterval(-7200))
            credentials = .token(ProviderTokenCache(key: harness.key, clock: lagging))
        case .unknownKey:
            credentials = .token(ProviderTokenCache(key: TestSigningKeys.make(keyID: "ZZZ999YYYX", teamID: "DEF123GHIJ"), clock: harness.clock))
        default:
            credentials = nil
        }
        try await harness.run(client: { harness.clientConfiguration($0, credentials: credentials) }) { emulator, client in
            let notification = notification(for: testCase)
            if testCase.caughtBeforeSending {
                #expect {
                    try notification.prepare()
                } throws: { ($0 as? NotificationValidationError)?.reason == testCase.reason }
                #expect(emulator.counters.accepted + emulator.counters.totalRejected == 0)
                return
            }
            let delivery = try await client.send(notification, to: token(for: testCase.target))
            switch delivery.outcome {
            case .accepted(let apnsID, let uniqueID):
                #expect(testCase.status == 200)
                #expect(uniqueID != nil)
                // The typed API sends apns-id in Apple's canonical lowercase form.
                if let supplied = testCase.headers["apns-id"] ?? nil { #expect(apnsID == supplied.lowercased()) }
            case .rejected(let rejection):
                #expect(rejection.status == testCase.status)
                #expect(rejection.reason == testCase.reason)
                #expect(rejection.apnsID == delivery.apnsID)
                if testCase.reason == .unregistered {
                    #expect(rejection.timestamp == Date(timeIntervalSince1970: Double(APNSOutcomeTable.unregisteredAtMilliseconds) / 1000))
                }
                // Only ExpiredProviderToken is retried (once, with a refreshed token); other 4xx never are. Attempts APNs
                // never processed (the previous case's connection closing under a loaded machine) are not decisions.
                #expect(
                    delivery.attempts - delivery.unprocessedAttempts == (testCase.reason == .expiredProviderToken ? 2 : 1),
                    "\(delivery)")
            case .failed(let error):
                Issue.record("expected \(testCase.status), got a failure: \(error)")
            }
        }
    }

    @Test("an error body that is not JSON still yields the status and apns-id")
    func undecodableRejection() {
        var response = APNSResponse()
        response.status = 500
        response.apnsID = "abc"
        let rejection = APNSClient.rejection(from: response, apnsID: "fallback")
        #expect(rejection.status == 500 && rejection.apnsID == "abc" && rejection.reason.rawValue == "HTTP500")
        response.body = .init(string: "<html>oops</html>")
        response.apnsID = nil
        let html = APNSClient.rejection(from: response, apnsID: "fallback")
        #expect(html.apnsID == "fallback" && html.status == 500)
    }

    @Test("backoff is full jitter under a doubling ceiling, capped")
    func backoff() {
        let policy = RetryPolicy(maximumAttempts: 8, initialBackoff: .seconds(1), maximumBackoff: .seconds(10))
        var random = SeededRandomNumberGenerator(seed: 3)
        for attempt in 1...7 {
            let ceiling = min(10.0, pow(2.0, Double(attempt - 1)))
            let delays = (0..<200).map { _ in policy.backoff(after: attempt, using: &random) }
            #expect(delays.allSatisfy { $0 >= .zero && $0 <= .seconds(ceiling) })
            #expect(delays.contains { $0 > .seconds(ceiling * 0.8) }, "uses the whole range")
            #expect(delays.contains { $0 < .seconds(ceiling * 0.2) })
        }
    }
}
