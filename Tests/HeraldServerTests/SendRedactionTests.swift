import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// A key with only the `send` scope sees device tokens redacted; an `admin` key sees them whole.
@Suite("Server: token redaction for send keys", .timeLimit(.minutes(2)))
struct SendRedactionTests {
    @Test(
        "the inline send answer and GET /api/sends/{id} show …<last 8 hex digits> to a send-only key, the whole token to an admin key",
        arguments: Backend.available)
    func redacted(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let tokens = [testToken(0x31), testToken(0x32)]
            for token in tokens { try await client.register(token, debug: true, extra: #", "tags": ["all"]"#) }
            let sender = try await app.store.createAPIKey(name: "sender", scopes: [.send]).secret.value
            let admin = try await app.store.createAPIKey(name: "admin", scopes: [.send, .admin]).secret.value
            let body = #"{"target": {"tag": "all"}, "alert": "x"}"#

            let sent = try await client.call(.post, "/api/send", body: body, bearer: sender)
            #expect(sent.status == .ok, "\(sent)")
            let id = try #require(sent.json["id"]?.stringValue)
            let status = try await client.call(.get, "/api/sends/\(id)", bearer: sender)
            for answer in [sent, status] {
                let shown = answer.json["outcomes"]?.arrayValue?.compactMap { $0["token"]?.stringValue } ?? []
                #expect(Set(shown) == Set(tokens.map(\.redacted)), "\(answer)")
                for token in tokens { #expect(!answer.body.contains(token.hex), "\(answer)") }
            }

            let full = try await client.call(.get, "/api/sends/\(id)", bearer: admin)
            let shown = full.json["outcomes"]?.arrayValue?.compactMap { $0["token"]?.stringValue } ?? []
            #expect(Set(shown) == Set(tokens.map(\.hex)), "\(full)")
            let inline = try await client.call(.post, "/api/send", body: body, bearer: admin)
            #expect(
                Set(inline.json["outcomes"]?.arrayValue?.compactMap { $0["token"]?.stringValue } ?? [])
                    == Set(tokens.map(\.hex)), "\(inline)")
        }
    }
}
