import Foundation
import HeraldAPNS
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import ServiceLifecycle
import Testing

@testable import HeraldServer

/// Graceful shutdown ends even while a client holds a half-sent request (the connection is closed after the grace
/// period) or waits for a notification APNs keeps asking to retry, and every service (the background send worker, the
/// store) stops.
@Suite("Server: graceful shutdown", .timeLimit(.minutes(1)))
struct ShutdownTests {
    @Test("a half-sent body does not hold the shutdown; the service group ends and SQLite leaves no -wal or -shm")
    func halfSentBody() async throws {
        try await LiveServer.run(configure: {
            $0.limits.shutdownGracePeriod = .milliseconds(200)
            $0.limits.requestTimeout = .seconds(3600)
            $0.limits.idleTimeout = .seconds(3600)
        }) { server, database in
            let path = String(database.url.dropFirst("sqlite://".count))
            let client = try await RawHTTPConnection.connect(port: server.port)
            // Two pipelined requests in one write: once the first is answered, the server has read the second's head
            // and waits for its body.
            try await client.write(
                "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"
                    + "POST /api/token HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"token\": ")
            let first = await client.read(until: #""status":"ok"}"#)
            #expect(RawResponse(first)?.status == 200, "\(first)")
            // Returns only once every service ended, the background worker and the store included.
            await server.shutdown()
            _ = await client.readUntilClosed()
            #expect(FileManager.default.fileExists(atPath: path))
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "the store was closed")
            #expect(!FileManager.default.fileExists(atPath: path + "-shm"), "the store was closed")
        }
    }

    @Test(
        "an inline send waiting to retry what APNs answered 503 does not hold the shutdown for its retry window: the notification ends failed, saying why, and the caller gets that answer"
    )
    func inlineSendRetrying() async throws {
        try await TrustingEmulator.with(inbox: .countingOnly, faults: FaultConfiguration(serviceUnavailable: 1)) {
            key, emulator, host in
            try await LiveServer.run(configure: {
                $0.apns = .custom(host)
                $0.apps = [AppConfiguration(bundleID: ServerHarness.topic, credentials: .key(key))]
                // Short backoffs, the default window of 10 minutes: APNs answers 503 to every attempt for all of it.
                $0.sending.retry = RetryPolicy(initialBackoff: .milliseconds(5), maximumBackoff: .milliseconds(20))
            }) { server, _ in
                let token = StoreConformance.token(1)
                try await DeviceSeeding.register(
                    [TokenRegistration(token: token, topic: ServerHarness.topic, environment: .production)],
                    in: server.application.store)
                let secret = try await SendTests.key(server.application)
                let client = try await RawHTTPConnection.connect(port: server.port)
                let body = #"{"target": {"token": "\#(token.hex)"}, "alert": "held by 503s"}"#
                try await client.write(
                    "POST /api/send HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(secret)\r\n"
                        + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
                await emulator.waitForCounters { $0.faults["ServiceUnavailable", default: 0] >= 2 }
                // Returns once every service ended: before, after the retry window (the suite's time limit first).
                await server.shutdown()
                let text = await client.readUntilClosed()
                let answer = try #require(RawResponse(text), "\(text)")
                #expect(answer.status == 200, "\(text)")
                let json = try JSONValue(parsing: answer.body)
                #expect(json["counts"]?["failed"]?.intValue == 1, "\(text)")
                let message = json["outcomes"]?.arrayValue?.first?["message"]?.stringValue ?? ""
                #expect(message.hasPrefix("Not sent again: the server began to shut down"), "\(message)")
                #expect(message.contains("503"), "what the last attempt met: \(message)")
            }
        }
    }
}
