import Foundation
import HeraldTesting
import ServiceLifecycle
import Testing

@testable import HeraldServer

/// Graceful shutdown ends even while a client holds a half-sent request: the connection is closed after the grace
/// period, and every service (the background send worker, the store) stops.
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
}
