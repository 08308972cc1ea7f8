import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// Bearer API keys on the send and admin APIs.
@Suite("Server: API keys", .timeLimit(.minutes(2)))
struct AuthTests {
    static let send = #"{"target": {"user": "nobody"}, "alert": "x"}"#

    @Test(
        "no key, an unknown key and a malformed header are 401; a revoked key is 401 once the verified-key memory lapses; a key without the scope is 403",
        arguments: Backend.available)
    func keys(backend: Backend) async throws {
        let clock = ManualWallClock()
        try await ServerHarness.withServer(backend, clock: clock) { client, app in
            let missing = try await client.call(.post, "/api/send", body: Self.send)
            #expect(
                missing.status == .unauthorized && missing.reason == "missingAPIKey"
                    && missing.headers[.wwwAuthenticate] == "Bearer")
            let unknown = try await client.call(.post, "/api/send", body: Self.send, bearer: "hrld_not-a-key")
            #expect(unknown.status == .unauthorized && unknown.reason == "invalidAPIKey")
            let basic = try await client.call(
                .post, "/api/send", body: Self.send, headers: [.authorization: "Basic dXNlcjpwYXNz"])
            #expect(basic.status == .unauthorized && basic.reason == "invalidAPIKey")

            let adminOnly = try await app.store.createAPIKey(name: "admin", scopes: [.admin])
            let wrongScope = try await client.call(.post, "/api/send", body: Self.send, bearer: adminOnly.secret.value)
            #expect(wrongScope.status == .forbidden && wrongScope.reason == "insufficientScope")
            #expect(try await client.call(.get, "/api/devices?user=x", bearer: adminOnly.secret.value).status == .ok)

            let sender = try await app.store.createAPIKey(name: "sender", scopes: [.send])
            #expect(
                try await client.call(.post, "/api/send", body: Self.send, bearer: sender.secret.value).status == .ok)
            let notAdmin = try await client.call(.get, "/api/devices?user=x", bearer: sender.secret.value)
            #expect(notAdmin.status == .forbidden && notAdmin.reason == "insufficientScope")
            let sendsNeedSend = try await client.call(.get, "/api/sends/\(UUID())", bearer: adminOnly.secret.value)
            #expect(sendsNeedSend.status == .forbidden)

            // Revoked by another process (herald keys revoke): the server trusts the key it verified a moment ago for
            // APIKeyVerifier.lifetime, then asks the store again.
            #expect(try await app.store.revokeAPIKey(sender.key.id))
            let remembered = try await client.call(.post, "/api/send", body: Self.send, bearer: sender.secret.value)
            #expect(remembered.status == .ok)
            clock.advance(by: .seconds(APIKeyVerifier.lifetime + 1))
            let revoked = try await client.call(.post, "/api/send", body: Self.send, bearer: sender.secret.value)
            #expect(revoked.status == .unauthorized && revoked.reason == "invalidAPIKey")
            let stillRevoked = try await client.call(.post, "/api/send", body: Self.send, bearer: sender.secret.value)
            #expect(stillRevoked.status == .unauthorized, "a refused key is not remembered as valid")
        }
    }

    @Test("keys from HERALD_API_KEYS are created at start, stored hashed, and work")
    func bootstrapKeys() async throws {
        let secret = "bootstrap-secret-0123456789abcdef-0123456789"
        try await ServerHarness.withServer(configure: {
            $0.apiKeys = [.init(name: "deploy", scopes: [.send], secret: secret)]
        }) { client, app in
            #expect(try await client.call(.post, "/api/send", body: Self.send, bearer: secret).status == .ok)
            let keys = try await app.store.apiKeys()
            #expect(keys.map(\.name) == ["deploy"] && !keys[0].prefix.contains(secret))
        }
    }
}
