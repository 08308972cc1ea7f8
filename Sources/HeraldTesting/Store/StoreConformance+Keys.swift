import Crypto
import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var keyCases: [Case] {
        [
            Case("API keys are stored hashed, listed without secrets, looked up and revoked", apiKeys),
            Case("a key stored by schema 1 (unsalted SHA-256) still works and is re-hashed on first use", legacyKeys),
            Case("instances share the newest provider token per key id", providerTokens),
        ]
    }

    static func apiKeys(_ context: Context) async throws {
        let store = context.store
        let created = try await store.createAPIKey(
            name: "backend", scopes: [.send, .register], at: context.clock.now())
        let other = try await store.createAPIKey(
            name: "ops", scopes: [.admin], at: context.clock.now().addingTimeInterval(1))
        let secret = created.secret.value
        let lookupID = try #require(created.secret.lookupID)
        #expect(secret.hasPrefix(APIKeySecret.prefix + lookupID + "_") && created.secret.secretCharacterCount == 43)
        #expect(secret != other.secret.value)
        #expect(created.key.prefix == APIKeySecret.prefix + lookupID && !created.key.description.contains(secret))
        let stored = try #require(try await store.storedAPIKeys(lookupID: lookupID).first)
        #expect(stored.key == created.key && stored.credential.scheme == .hmacSHA256)
        #expect(stored.credential.salt.count == 32 && stored.credential.hash.count == 64)
        #expect(!stored.credential.hash.contains(secret) && stored.credential.verifies(created.secret))

        #expect(try await store.apiKey(forSecret: secret) == created.key)
        #expect(try await store.apiKey(forSecret: secret + "x") == nil)
        #expect(try await store.apiKey(forSecret: String(secret.dropLast())) == nil)
        #expect(try await store.apiKeys() == [created.key, other.key])
        #expect(created.key.allows(.send) && !created.key.allows(.admin))

        #expect(try await store.revokeAPIKey(created.key.id))
        #expect(try await !store.revokeAPIKey(created.key.id), "already revoked")
        #expect(try await !store.revokeAPIKey(UUID()))
        #expect(try await store.apiKey(forSecret: secret) == nil, "a revoked key stops authenticating")
        #expect(try await store.apiKey(forSecret: other.secret.value) == other.key)
        let listed = try await store.apiKeys()
        #expect(listed.first?.revokedAt == context.clock.now() && listed.last?.isActive == true)
        await #expect(throws: StoreError.self) { try await store.createAPIKey(name: "", scopes: [.send]) }
    }

    static func legacyKeys(_ context: Context) async throws {
        let store = context.store
        let secret = APIKeySecret("hrld_" + String(repeating: "Ab9-", count: 11))
        let legacyHash = Hex.string(SHA256.hash(data: Data(secret.value.utf8)))
        let key = APIKey(
            id: UUID(), name: "old", scopes: [.send], prefix: "", createdAt: context.clock.now(), revokedAt: nil)
        try await store.insertAPIKey(
            key, credential: APIKeyCredential(scheme: .legacySHA256, lookupID: nil, salt: "", hash: legacyHash))
        #expect(try await store.apiKey(forSecret: secret.value + "x") == nil)
        #expect(try await store.apiKey(forSecret: secret.value) == key)
        let stored = try #require(try await store.storedAPIKeys(lookupID: nil).first)
        #expect(stored.credential.scheme == .hmacSHA256 && stored.credential.hash != legacyHash)
        #expect(try await store.apiKey(forSecret: secret.value) == key, "the re-hashed key still works")
    }

    static func providerTokens(_ context: Context) async throws {
        let store = context.store
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        func token(_ jwt: String, key: String = "ABC123DEFG", at offset: TimeInterval) -> ProviderToken {
            ProviderToken(jwt: jwt, keyID: key, teamID: "TEAM123456", issuedAt: start.addingTimeInterval(offset))
        }
        #expect(try await store.latestProviderToken(keyID: "ABC123DEFG") == nil)
        #expect(try await store.saveProviderToken(token("a.b.c", at: 0)))
        #expect(try await store.saveProviderToken(token("z.z.z", key: "OTHERKEY01", at: 0)))
        try await context.withSecondInstance { (other) async throws in
            #expect(try await other.latestProviderToken(keyID: "ABC123DEFG") == token("a.b.c", at: 0))
            #expect(try await !other.saveProviderToken(token("old.old.old", at: -60)), "an older token is not saved")
            #expect(
                try await !other.saveProviderToken(token("same.same.same", at: 0)), "nor one issued at the same time")
            #expect(try await other.saveProviderToken(token("d.e.f", at: 1_500)))
        }
        #expect(try await store.latestProviderToken(keyID: "ABC123DEFG") == token("d.e.f", at: 1_500))
        #expect(try await store.latestProviderToken(keyID: "OTHERKEY01")?.jwt == "z.z.z")
    }
}
