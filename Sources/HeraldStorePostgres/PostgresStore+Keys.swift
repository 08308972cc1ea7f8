public import Foundation
public import HeraldCore
public import HeraldStore

extension PostgresStore {
    public func insertAPIKey(_ key: APIKey, secretHash: String) async throws {
        try await session("store an API key") { session in
            try await session.execute(StoreSQL.insertAPIKey(key, secretHash: secretHash, .postgres))
        }
    }

    public func apiKeys() async throws -> [APIKey] {
        try await session("list API keys") { session in
            try await session.rows(StoreSQL.apiKeys(.postgres)).map { try $0.apiKey() }
        }
    }

    public func revokeAPIKey(_ id: UUID) async throws -> Bool {
        let now = clock.now()
        return try await session("revoke an API key") { session in
            try await !session.rows(StoreSQL.revokeAPIKey(id, at: now, .postgres)).isEmpty
        }
    }

    public func apiKey(secretHash: String) async throws -> APIKey? {
        try await session("look up an API key") { session in
            try await session.rows(StoreSQL.apiKey(secretHash: secretHash, .postgres)).first?.apiKey()
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
