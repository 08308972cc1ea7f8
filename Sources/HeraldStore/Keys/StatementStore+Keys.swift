package import Foundation
package import HeraldCore

extension StatementStore {
    public func insertAPIKey(_ key: APIKey, credential: APIKeyCredential) async throws {
        _ = try await writeRows("store an API key", StoreSQL.insertAPIKey(key, credential: credential, dialect))
    }

    public func apiKeys() async throws -> [APIKey] {
        try await readRows("list API keys", StoreSQL.apiKeys(dialect)).map { try $0.apiKey() }
    }

    public func revokeAPIKey(_ id: UUID) async throws -> Bool {
        try await !writeRows("revoke an API key", StoreSQL.revokeAPIKey(id, at: clock.now(), dialect)).isEmpty
    }

    public func storedAPIKeys(lookupID: String?) async throws -> [StoredAPIKey] {
        try await readRows("look up an API key", StoreSQL.storedAPIKeys(lookupID: lookupID, dialect)).map {
            try $0.storedAPIKey()
        }
    }

    public func replaceAPIKeyCredential(_ id: UUID, with credential: APIKeyCredential) async throws {
        _ = try await writeRows("re-hash an API key", StoreSQL.replaceAPIKeyCredential(id, with: credential, dialect))
    }

    public func recordAPIKeyUse(_ id: UUID, at now: Date, resolution: TimeInterval) async throws -> Bool {
        try await !writeRows(
            "record an API key's use", StoreSQL.recordAPIKeyUse(id, at: now, resolution: resolution, dialect)
        ).isEmpty
    }

    public func latestProviderToken(keyID: String) async throws -> ProviderToken? {
        try await readRows("read a provider token", StoreSQL.latestProviderToken(keyID: keyID, dialect)).first?
            .providerToken()
    }

    public func saveProviderToken(_ token: ProviderToken) async throws -> Bool {
        try await !writeRows("save a provider token", StoreSQL.saveProviderToken(token, dialect)).isEmpty
    }
}
