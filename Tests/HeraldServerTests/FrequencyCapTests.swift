import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// Frequency caps: at most so many non-mandatory alerts per person and period, counted in the store by every instance.
@Suite("Server: frequency caps", .timeLimit(.minutes(3)))
struct FrequencyCapTests {
    static let topic = ServerHarness.topic
    /// Noon UTC: the day's window does not end while a test runs, until the test moves the clock.
    static let noon = Date(timeIntervalSince1970: 20_500 * 86_400 + 43_200)

    /// `orders` mandatory, `social` and `marketing` on by default; one marketing and two of anything a day.
    static func configure(_ configuration: inout ServerConfiguration) {
        configuration.apps[0].preferenceCategories = [
            try! PreferenceCategory(name: "orders", mode: .mandatory),
            try! PreferenceCategory(name: "social", mode: .on),
            try! PreferenceCategory(name: "marketing", mode: .on),
        ]
        configuration.apps[0].frequencyCaps = [
            try! FrequencyCap(parsing: "marketing:1/day"), try! FrequencyCap(parsing: "*:2/1d"),
        ]
    }

    /// `[targetCount, suppressed.preference, suppressed.frequencyCap, counts.accepted]` of a send's JSON.
    static func counts(_ answer: ServerClient.Answer) -> [Int?] {
        [
            answer.json["targetCount"]?.intValue, answer.json["suppressed"]?["preference"]?.intValue,
            answer.json["suppressed"]?["frequencyCap"]?.intValue, answer.json["counts"]?["accepted"]?.intValue,
        ]
    }

    @Test(
        "a cap leaves out the devices of people who had their share; a preference opt-out and a mandatory category are not capped; the counts add up; the next window starts again",
        arguments: Backend.available)
    func capsPerPerson(backend: Backend) async throws {
        let clock = ManualWallClock(Self.noon)
        try await ServerHarness.withServer(backend, clock: clock, configure: Self.configure) { client, app in
            let emulator = try #require(app.emulator)
            let bearer = try await SendTests.key(app)
            let sender = try await app.store.createAPIKey(name: "sender", scopes: [.send]).secret.value
            // alice has two devices; bob one; a bare token; dave turned marketing off.
            let devices = (1...5).map { testToken($0) }
            try await client.register(devices[0], debug: true, extra: #", "userId": "alice""#)
            try await client.register(devices[1], debug: true, extra: #", "userId": "alice""#)
            try await client.register(devices[2], debug: true, extra: #", "userId": "bob""#)
            try await client.register(devices[3], debug: true)
            try await client.register(devices[4], debug: true, extra: #", "userId": "dave""#)
            let optOut = try await client.call(
                .put, "/api/preferences/\(devices[4].hex)", body: #"{"categories": {"marketing": false}}"#)
            #expect(optOut.status == .ok, "\(optOut)")

            func send(_ category: String, extra: String = "", key: String? = nil) async throws -> ServerClient.Answer {
                try await client.call(
                    .post, "/api/send",
                    body: #"{"target": {"topic": "\#(Self.topic)"}, "alert": "hi", "preferenceCategory": "\#(category)"\#(extra)}"#,
                    bearer: key ?? bearer)
            }
            // Every send's counts add up: the whole target is targetCount + preference, and of targetCount the cap
            // left out some and the rest were accepted.
            #expect(Self.counts(try await send("marketing")) == [4, 1, 0, 4], "dave opted out; nobody capped yet")
            let capped = try await send("marketing")
            #expect(Self.counts(capped) == [4, 1, 4, 0], "one marketing a day: \(capped)")
            let cappedID = try #require(capped.json["id"]?.stringValue)
            let trace = try await client.call(.get, "/api/sends/\(cappedID)/devices/\(devices[0].hex)", bearer: bearer)
            #expect(trace.json["verdict"]?["code"]?.stringValue == "frequencyCapped", "\(trace)")
            #expect(trace.body.contains("marketing:1/1d"), "\(trace)")
            #expect(Self.counts(try await send("orders")) == [5, 0, 0, 5], "mandatory: never capped, not counted")
            #expect(Self.counts(try await send("social")) == [5, 0, 0, 5], "the second of the day for all but dave")
            #expect(Self.counts(try await send("social")) == [5, 0, 4, 1], "two a day: only dave has room")

            // Waiving the caps is an admin's.
            let refused = try await send("social", extra: #", "frequencyCap": false"#, key: sender)
            #expect(refused.status == .forbidden && refused.reason == "insufficientScope", "\(refused)")
            #expect(Self.counts(try await send("social", extra: #", "frequencyCap": false"#)) == [5, 0, 0, 5])

            // The dry run estimates from the counters of the moment.
            let dry = try await client.call(
                .post, "/api/send?dryRun=true",
                body: #"{"target": {"topic": "\#(Self.topic)"}, "alert": "hi", "preferenceCategory": "social"}"#,
                bearer: bearer)
            #expect(dry.status == .ok && dry.json["suppressed"]?["frequencyCap"]?.intValue == 5, "\(dry)")

            // A background send claims in its worker, and its record counts those left out.
            let paced = try await send("social", extra: #", "rate": 1000"#)
            #expect(paced.status == .accepted, "\(paced)")
            let pacedID = try #require(paced.json["id"]?.stringValue.flatMap(SendID.init))
            let finished = try await app.worker.waitUntilFinished(pacedID)
            #expect(finished.suppressed.frequencyCap == 5 && finished.counts.accepted == 0, "\(finished)")
            let status = try await client.call(.get, "/api/sends/\(pacedID)", bearer: bearer)
            #expect(Self.counts(status) == [5, 0, 5, 0], "\(status)")

            let metrics = try await client.call(.get, "/metrics")
            #expect(
                metrics.body.contains(#"herald_notifications_suppressed_total{reason="frequencyCap"} 13"#),
                "\(metrics.body)")
            // alice: marketing, orders, social, the waived social.
            #expect(try emulator.inbox(for: devices[0]).count == 4 && emulator.inbox(for: devices[1]).count == 4)
            #expect(try emulator.inbox(for: devices[4]).count == 4, "dave: orders, social twice, the waived social")

            // The next day, a new window.
            clock.advance(by: .seconds(86_400))
            #expect(Self.counts(try await send("marketing")) == [4, 1, 0, 4])
        }
    }

    @Test(
        "two instances on one PostgreSQL database sending to the same people at once hold one cap",
        .enabled(if: Backend.available.contains(.postgres), "needs HERALD_TEST_DATABASE_URL"))
    func capAcrossInstances() async throws {
        try await TestDatabase.with(.postgres) { url in
            let devices = (1...20).map { testToken($0) }
            try await ServerHarness.withTwoInstances(databaseURL: url) {
                $0.apps[0].frequencyCaps = [try! FrequencyCap(parsing: "*:2/day")]
            } _: { emulator, one, two in
                let (first, clientOne) = one
                let clientTwo = two.1
                for (index, device) in devices.enumerated() {
                    try await clientOne.register(device, debug: false, extra: #", "userId": "person\#(index)""#)
                }
                let bearer = try await SendTests.key(first)
                @Sendable func sends(_ client: ServerClient) async throws -> [[Int?]] {
                    var answers: [[Int?]] = []
                    for _ in 0..<3 {
                        let answer = try await client.call(
                            .post, "/api/send", body: #"{"target": {"topic": "\#(Self.topic)"}, "alert": "hi"}"#,
                            bearer: bearer)
                        #expect(answer.status == .ok, "\(answer)")
                        answers.append(Self.counts(answer))
                    }
                    return answers
                }
                async let fromOne = sends(clientOne)
                async let fromTwo = sends(clientTwo)
                let answers = try await fromOne + fromTwo
                #expect(answers.map { $0[3] ?? 0 }.reduce(0, +) == 40, "two each for 20 people: \(answers)")
                #expect(answers.map { $0[2] ?? 0 }.reduce(0, +) == 80, "the other four each left out: \(answers)")
                for device in devices {
                    #expect(try emulator.inbox(for: device).count == 2)
                }
            }
        }
    }
}
