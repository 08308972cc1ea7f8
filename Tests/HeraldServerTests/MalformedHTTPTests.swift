import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldServer

/// Malformed HTTP gets the API's `{"error","reason"}` body; a client hanging up mid-body is not an error in the log.
@Suite("Server: malformed HTTP", .timeLimit(.minutes(1)))
struct MalformedHTTPTests {
    static let start = "POST /api/token HTTP/1.1\r\nHost: localhost\r\n"

    @Test(
        "huge headers are 431, NUL in a header, conflicting Content-Length and Content-Length with Transfer-Encoding are 400, each with the JSON error"
    )
    func rawSockets() async throws {
        try await LiveServer.run { server, _ in
            for (name, request, status, reason) in [
                (
                    "huge header", Self.start + "X-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n", 431,
                    "headersTooLarge"
                ),
                ("NUL in a header", Self.start + "X-Bad: a\u{0}b\r\nContent-Length: 2\r\n\r\n{}", 400, "malformedHTTP"),
                (
                    "conflicting Content-Length", Self.start + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400,
                    "malformedHTTP"
                ),
                (
                    "Content-Length and Transfer-Encoding",
                    Self.start + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 400,
                    "malformedHTTP"
                ),
            ] {
                let connection = try await RawHTTPConnection.connect(port: server.port)
                try await connection.write(request)
                let text = await connection.readUntilClosed()
                let answer = try #require(RawResponse(text), "\(name): \(text)")
                #expect(answer.status == status, "\(name): \(answer)")
                let json = try? JSONValue(parsing: Array(answer.body.utf8))
                #expect(json?["reason"]?.stringValue == reason, "\(name): \(answer)")
                #expect(json?["error"]?.stringValue?.isEmpty == false, "\(name): \(answer)")
            }
        }
    }

    @Test("curl with headers over the limit gets 431 and the JSON error")
    func curlHugeHeaders() async throws {
        try await LiveServer.run { server, _ in
            let result = try await ProcessRunner.run(
                "curl",
                [
                    "-s", "-w", "\n%{http_code}", "-H", "X-Big: \(String(repeating: "a", count: 20_000))",
                    "http://127.0.0.1:\(server.port)/health",
                ])
            var lines = result.standardOutput.split(separator: "\n", omittingEmptySubsequences: false)
            let status = lines.popLast()
            #expect(status == "431", "\(result.standardOutput)")
            #expect(lines.joined(separator: "\n").contains(#""reason":"headersTooLarge""#), "\(result.standardOutput)")
        }
    }

    @Test("a client hanging up mid-body is logged below error level")
    func hangUpMidBody() async throws {
        let capture = LogCapture()
        try await LiveServer.run(logger: capture.logger()) { server, _ in
            let client = try await RawHTTPConnection.connect(port: server.port)
            try await client.write(Self.start + "Content-Length: 100\r\n\r\n{\"token\": ")
            await client.close()
            let line = try await capture.waitForLine {
                $0.contains("went away") || $0.contains("Malformed request body") || $0.contains("Request failed")
            }
            #expect(!line.hasPrefix("error") && !line.hasPrefix("critical"), "\(line)")
        }
        #expect(!capture.all.contains { $0.hasPrefix("error") }, "\(capture.all.filter { $0.hasPrefix("error") })")
    }
}
