import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// Bodies over an endpoint's limit are `413 payloadTooLarge` with the API's JSON error, however they are framed.
@Suite("Server: body limits", .timeLimit(.minutes(1)))
struct BodyLimitTests {
    /// A chunked request whose chunks add up to `size` bytes of a JSON string, so no Content-Length warns the server.
    static func chunkedRequest(path: String, size: Int, headers: String = "") -> String {
        let chunk = String(repeating: "a", count: 1024)
        var text =
            "POST \(path) HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\(headers)Connection: close\r\n\r\n"
        for _ in 0..<(size / chunk.utf8.count + 1) {
            text += String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n"
        }
        return text + "0\r\n\r\n"
    }

    @Test("a chunked body over the limit is 413 payloadTooLarge on /api/token and /api/send, not 500")
    func chunkedOverLimit() async throws {
        try await ServerHarness.withServer(testing: .live, configure: { $0.limits.sendBodyBytes = 4096 }) {
            client, app in
            let port = try #require(client.client.port)
            let key = try await app.store.createAPIKey(name: "limit", scopes: [.send]).secret.value
            for (path, size, headers) in [
                ("/api/token", ServerConfiguration.Limits.registrationBodyBytes + 1, ""),
                ("/api/send", 4097, "Authorization: Bearer \(key)\r\n"),
            ] {
                let connection = try await RawHTTPConnection.connect(port: port)
                try await connection.write(Self.chunkedRequest(path: path, size: size, headers: headers))
                let answer = try #require(RawResponse(await connection.readUntilClosed()), "no answer on \(path)")
                #expect(answer.status == 413, "\(path): \(answer)")
                let json = try JSONValue(parsing: Array(answer.body.utf8))
                #expect(json["reason"]?.stringValue == "payloadTooLarge", "\(path): \(answer)")
                #expect(json["error"]?.stringValue?.isEmpty == false)
                await connection.close()
            }
        }
    }
}
