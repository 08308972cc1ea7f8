public import Foundation
public import HeraldCore
public import HeraldStore

extension PostgresStore {
    public func insertAPIKey(_ key: APIKey, credential: APIKeyCredential) async throws {
        try await transaction("store an API key") { session in
            try await session.execute(StoreSQL.insertAPIKey(key, credential: credential, .postgres))
        }
    }

    public func apiKeys() async throws -> [APIKey] {
        try await session("list API keys") { session in
            try await session.rows(StoreSQL.apiKeys(.postgres)).map { try $0.apiKey() }
        }
    }

    public func revokeAPIKey(_ id: UUID) async throws -> Bool {
        let now = clock.now()
        return try await transaction("revoke an API key") { session in
            try await !session.rows(StoreSQL.revokeAPIKey(id, at: now, .postgres)).isEmpty
        }
    }

    public func storedAPIKeys(lookupID: String?) async throws -> [StoredAPIKey] {
        try await session("look up an API key") { session in
            try await session.rows(StoreSQL.storedAPIKeys(lookupID: lookupID, .postgres)).map { try $0.storedAPIKey() }
        }
    }

    public func replaceAPIKeyCredential(_ id: UUID, with credential: APIKeyCredential) async throws {
        try await session("re-hash an API key") { session in
            try await session.execute(StoreSQL.replaceAPIKeyCredential(id, with: credential, .postgres))
        }
    }

    public func recordAPIKeyUse(_ id: UUID, at now: Date, resolution: TimeInterval) async throws -> Bool {
        try await session("record an API key's use") { session in
            try await !session.rows(StoreSQL.recordAPIKeyUse(id, at: now, resolution: resolution, .postgres)).isEmpty
        }
    }

    public func latestProviderToken(keyID: String) async throws -> ProviderToken? {
        try await session("read a provider token") { session in
            try await session.rows(StoreSQL.latestProviderToken(keyID: keyID, .postgres)).first?.providerToken()
        }
    }

    public func saveProviderToken(_ token: ProviderToken) async throws -> Bool {
        try await session("save a provider token") { session in
            try await !session.rows(StoreSQL.saveProviderToken(token, .postgres)).isEmpty
        }
    }
}
