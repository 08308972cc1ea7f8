import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import Testing

@testable import HeraldAPNS

/// The retry policy's judgement of one attempt after another, without sockets: results are made up, and time moves
/// only when a test moves the manual clocks.
@Suite("Retry: a window of time, not a count of attempts")
struct RetryJudgementTests {
    let clock = ManualClock()
    let wallClock = ManualWallClock(Date(timeIntervalSince1970: 1_767_312_000))
    let token = try! DeviceToken(hex: String(repeating: "d0", count: 32))

    /// A client that is never run: judging needs its policy, clocks and metrics, not a connection.
    func client(_ retry: RetryPolicy = RetryPolicy()) throws -> APNSClient {
        let configuration = APNSClientConfiguration(
            destination: .custom(host: "127.0.0.1", port: 1, environment: .development),
            credentials: .token(
                ProviderTokenCache(key: TestSigningKeys.make(keyID: "ABC123DEFG", teamID: "DEF123GHIJ"))),
            retry: retry)
        return try APNSClient(configuration: configuration, clock: clock, wallClock: wallClock, randomSeed: 5)
    }

    func send(expiration: APNSExpiration? = nil) throws -> APNSClient.Send {
        let notification = try PushNotification(
            Payload(aps: APS(alert: .body("Hi"))), topic: "com.example.app", expiration: expiration
        )
        .prepare()
        return APNSClient.Send(
            notification: notification, body: ByteBuffer(), token: token,
            apnsID: "9e0c4b2a-6f1d-4c3e-8a5b-7d2f1e0c9b8a",
            providerToken: nil, template: APNSHeaderTemplate(fields: []))
    }

    /// One attempt that met `result`: it begins on the client's clock, then the policy judges it.
    func attempt(_ client: APNSClient, _ send: inout APNSClient.Send, _ result: Result<APNSResponse, APNSClientError>)
        -> APNSClient.Verdict
    {
        send.progress.begin(at: client.clockTime())
        return client.judge(result, &send)
    }

    static func answer(_ reason: APNSReason) -> Result<APNSResponse, APNSClientError> {
        var response = APNSResponse()
        response.status = reason.status ?? 500
        response.body = ByteBuffer(string: #"{"reason":"\#(reason.rawValue)"}"#)
        return .success(response)
    }

    static let accepted: Result<APNSResponse, APNSClientError> = {
        var response = APNSResponse()
        response.status = 200
        return .success(response)
    }()
    static let cutOff = Result<APNSResponse, APNSClientError>.failure(
        APNSClientError(.connectionClosed, "The connection to APNs closed before it answered."))
    static let refused = Result<APNSResponse, APNSClientError>.failure(
        APNSClientError(.notProcessed, "APNs refused the stream (REFUSED_STREAM); it was not processed."))

    /// The delay of a retry; records an issue when the verdict is final.
    func delay(_ verdict: APNSClient.Verdict, sourceLocation: SourceLocation = #_sourceLocation) -> Duration? {
        guard case .retry(let delay, _) = verdict else {
            Issue.record("expected a retry, got \(verdict)", sourceLocation: sourceLocation)
            return nil
        }
        return delay
    }

    /// The failure a final verdict carries; records an issue otherwise.
    func failure(_ verdict: APNSClient.Verdict, sourceLocation: SourceLocation = #_sourceLocation) -> APNSClientError? {
        guard case .final(let delivery) = verdict, case .failed(let error) = delivery.outcome else {
            Issue.record("expected a final failure, got \(verdict)", sourceLocation: sourceLocation)
            return nil
        }
        return error
    }

    @Test("an answer asking for a retry is retried while the window lasts; the last backoff ends at the window's end")
    func beforeTheWindow() throws {
        let client = try client(RetryPolicy(initialBackoff: .seconds(1), maximumBackoff: .seconds(30)))
        var send = try send()
        let first = try #require(delay(attempt(client, &send, Self.answer(.tooManyRequests))))
        #expect(first <= .seconds(1))
        clock.advance(by: .seconds(600) - .milliseconds(500))
        let last = try #require(delay(attempt(client, &send, Self.answer(.serviceUnavailable))))
        #expect(last <= .milliseconds(500), "no backoff runs past the window")
        clock.advance(by: last)
        #expect(send.attempts == 2)
    }

    @Test("past the window, an answer asking for a retry ends failed, with what each attempt met counted by kind")
    func afterTheWindow() throws {
        let client = try client()
        var send = try send()
        let misses =
            Array(repeating: Self.answer(.tooManyRequests), count: 4) + Array(repeating: Self.cutOff, count: 3)
            + [Self.answer(.serviceUnavailable)]
        for miss in misses {
            _ = try #require(delay(attempt(client, &send, miss)))
            clock.advance(by: .seconds(75))
        }
        #expect(clock.now.offset == .seconds(600))
        let verdict = attempt(client, &send, Self.answer(.serviceUnavailable))
        let error = try #require(failure(verdict))
        #expect(
            error.code == .retryLater && error.rejection?.reason == .serviceUnavailable
                && error.rejection?.status == 503)
        #expect(
            error.message.hasPrefix("Gave up after 9 attempts over 10 min 0 s, the retry window of 10 min 0 s"),
            "\(error)")
        #expect(
            error.message.contains(
                "429 TooManyRequests ×4, connection closed or stream reset before an answer ×3, 503 ServiceUnavailable ×2; the last: APNs answered 503 ServiceUnavailable."
            ),
            "\(error)")
        #expect(error.message.contains("HERALD_RETRY_WINDOW") && error.message.contains("What to do:"), "\(error)")
        if case .final(let delivery) = verdict { #expect(delivery.attempts == 9) }
    }

    @Test("the message stays short however many attempts there were")
    func boundedMessage() throws {
        let client = try client(RetryPolicy(maximumAttempts: 1000, initialBackoff: .milliseconds(1)))
        var send = try send()
        let kinds = [
            Self.answer(.tooManyRequests), Self.cutOff, Self.refused, Self.answer(.serviceUnavailable),
            Self.answer(.shutdown),
            Self.answer(.internalServerError),
        ]
        for index in 0..<900 {
            _ = try #require(delay(attempt(client, &send, kinds[index % kinds.count])))
            clock.advance(by: .milliseconds(500))
        }
        clock.advance(by: .seconds(600))
        let error = try #require(failure(attempt(client, &send, Self.cutOff)))
        #expect(error.message.hasPrefix("Gave up after 901 attempts over 17 min 30 s"), "\(error)")
        #expect(error.message.count < 800, "\(error.message.count) characters: \(error)")
    }

    @Test("lost connections no longer use up the retries of a 429: time decides, not the count")
    func lostConnectionsDoNotCount() throws {
        // Issue 24: five attempts, most of them cut off with their connection, gave up a notification APNs had asked
        // to be retried (429), after a few seconds.
        let client = try client()
        var send = try send()
        for miss in [
            Self.answer(.tooManyRequests), Self.cutOff, Self.cutOff, Self.cutOff, Self.answer(.tooManyRequests),
            Self.cutOff,
            Self.refused, Self.cutOff, Self.answer(.tooManyRequests), Self.cutOff,
        ] {
            let wait = try #require(delay(attempt(client, &send, miss)))
            clock.advance(by: wait)
        }
        guard case .final(let delivery) = attempt(client, &send, Self.accepted) else {
            Issue.record("expected the end")
            return
        }
        #expect(delivery.outcome.isAccepted && delivery.attempts == 11 && delivery.unprocessedAttempts == 1)
    }

    @Test("never past apns-expiration: the backoff stops at it, and an answer after it ends the retries")
    func expiration() throws {
        let client = try client(RetryPolicy(initialBackoff: .seconds(120), maximumBackoff: .seconds(120)))
        var send = try send(expiration: .at(wallClock.now().addingTimeInterval(60)))
        let first = try #require(delay(attempt(client, &send, Self.answer(.serviceUnavailable))))
        #expect(first <= .seconds(60), "the backoff ends at the expiration")
        clock.advance(by: .seconds(61))
        wallClock.advance(by: .seconds(61))
        let error = try #require(failure(attempt(client, &send, Self.cutOff)))
        #expect(error.code == .connectionClosed)
        #expect(
            error.message.contains(
                "Gave up after 2 attempts over 1 min 1 s: its apns-expiration (2026-01-02T00:01:00Z)"), "\(error)")
        #expect(error.message.contains("It has expired"), "\(error)")
    }

    @Test("apns-expiration 0 is tried once: no retry after an answer or a cut-off, but a refused stream goes out again")
    func onceOnly() throws {
        let client = try client()
        var answered = try send(expiration: .immediately)
        let error = try #require(failure(attempt(client, &answered, Self.answer(.tooManyRequests))))
        #expect(
            error.code == .retryLater && error.message.hasPrefix("Not sent again after 1 attempt: apns-expiration 0"),
            "\(error)")
        var cut = try send(expiration: .immediately)
        #expect(try #require(failure(attempt(client, &cut, Self.cutOff))).code == .connectionClosed)
        var refused = try send(expiration: .immediately)
        #expect(delay(attempt(client, &refused, Self.refused)) == .zero, "never processed: re-sent at once")
        #expect(delay(attempt(client, &refused, Self.refused)).map { $0 > .zero } == true, "the next one backs off")
    }

    @Test("RetryPolicy.none never sends twice, not even what APNs never processed")
    func none() throws {
        let client = try client(.none)
        for result in [Self.answer(.serviceUnavailable), Self.refused, Self.cutOff] {
            var send = try send()
            let error = try #require(failure(attempt(client, &send, result)))
            #expect(error.message.contains("cap of 1 attempt (maximumAttempts)"), "\(error)")
        }
    }

    @Test("the safety cap counts every attempt and ends the retries even inside the window")
    func cap() throws {
        let client = try client(RetryPolicy(maximumAttempts: 3, initialBackoff: .milliseconds(1)))
        var send = try send()
        _ = try #require(delay(attempt(client, &send, Self.refused)))
        _ = try #require(delay(attempt(client, &send, Self.answer(.tooManyRequests))))
        let error = try #require(failure(attempt(client, &send, Self.cutOff)))
        #expect(
            error.message.hasPrefix("Gave up after 3 attempts over 0 ms, the retry policy's cap of 3 attempts"),
            "\(error)")
    }

    @Test(
        "durations read as people write them",
        arguments: [
            (Duration.milliseconds(35), "35 ms"), (.milliseconds(4_200), "4.2 s"), (.seconds(600), "10 min 0 s"),
            (.seconds(7_500), "2 h 5 min"),
        ])
    func spoken(duration: Duration, text: String) {
        #expect(duration.spoken == text)
    }
}
