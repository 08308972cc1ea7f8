import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HummingbirdTesting
import HeraldTesting
import Testing

@testable import HeraldServer

/// API keys: long enough secrets, salted keyed hashes, no secret characters in clear, schema-1 keys re-hashed.
@Suite("Server: API key storage", .timeLimit(.minutes(2)))
struct APIKeyHashingTests {
    @Test(
        "a HERALD_API_KEYS secret under 32 characters stops the start with a message naming the entry, not the secret")
    func shortSecret() throws {
        let short = "abcdefghij0123456789abcdefghij1"
        #expect(throws: ConfigurationError.self) {
            try ServerConfiguration(environment: ["HERALD_API_KEYS": "ci:send:\(short)"])
        }
        do {
            _ = try ServerConfiguration(environment: ["HERALD_API_KEYS": "ci:send:\(short)"])
        } catch {
            #expect(error.message.contains("ci") && error.message.contains("32") && !error.message.contains(short))
        }
        // The lookup id of the hrld_<id>_ form is not secret: 32 characters must follow it.
        #expect(throws: ConfigurationError.self) {
            try ServerConfiguration(environment: ["HERALD_API_KEYS": "ci:send:hrld_0123abcd_\(short)"])
        }
        let configuration = try ServerConfiguration(environment: ["HERALD_API_KEYS": "ci:send:\(short)x"])
        #expect(configuration.apiKeys.map(\.name) == ["ci"])
    }

    @Test(
        "configured keys are stored salted: the same secret hashes differently per key, no character of it is kept, a revoked one is not revived",
        arguments: Backend.available)
    func bootstrapStorage(backend: Backend) async throws {
        let secret = "a-configured-secret-of-forty-characters!!"
        let database = try TestDatabase.make(backend)
        func run(_ body: @escaping @Sendable (ServerClient, HeraldApplication) async throws -> Void) async throws {
            var configuration = ServerHarness.configuration(databaseURL: database.url)
            configuration.apiKeys = [.init(name: "deploy", scopes: [.send], secret: secret)]
            let app = try await buildApplication(configuration: configuration)
            try await app.test(.router) { client in try await body(ServerClient(client: client), app) }
        }
        do {
            try await run { client, app in
                #expect(try await client.call(.get, "/api/sends/\(UUID())", bearer: secret).status == .notFound)
                let stored = try await app.store.storedAPIKeys(lookupID: nil)
                #expect(stored.count == 1 && stored[0].credential.scheme == .hmacSHA256)
                #expect(stored[0].key.prefix.isEmpty, "no character of a configured secret is kept")
                let again = APIKeyCredential.make(for: APIKeySecret(secret))
                #expect(again.hash != stored[0].credential.hash && again.salt != stored[0].credential.salt)
                #expect(try await app.store.revokeAPIKey(stored[0].key.id))
            }
            try await run { client, app in
                let keys = try await app.store.apiKeys()
                #expect(keys.count == 1, "a revoked configured key is not created again")
                let answer = try await client.call(.get, "/api/sends/\(UUID())", bearer: secret)
                #expect(answer.status == .unauthorized)
            }
        } catch {
            await database.cleanup()
            throw error
        }
        await database.cleanup()
    }
}
