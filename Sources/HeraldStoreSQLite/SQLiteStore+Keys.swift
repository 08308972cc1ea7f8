public import Foundation
import GRDB
public import HeraldCore
public import HeraldStore

extension SQLiteStore {
    public func insertAPIKey(_ key: APIKey, credential: APIKeyCredential) async throws {
        try await write("store an API key") { db in
            try db.execute(StoreSQL.insertAPIKey(key, credential: credential, .sqlite))
        }
    }

    public func apiKeys() async throws -> [APIKey] {
        try await read("list API keys") { db in
            try db.rows(StoreSQL.apiKeys(.sqlite)).map { try $0.apiKey() }
        }
    }

    public func revokeAPIKey(_ id: UUID) async throws -> Bool {
        let now = clock.now()
        return try await write("revoke an API key") { db in
            try !db.rows(StoreSQL.revokeAPIKey(id, at: now, .sqlite)).isEmpty
        }
    }

    public func storedAPIKeys(lookupID: String?) async throws -> [StoredAPIKey] {
        try await read("look up an API key") { db in
            try db.rows(StoreSQL.storedAPIKeys(lookupID: lookupID, .sqlite)).map { try $0.storedAPIKey() }
        }
    }

    public func replaceAPIKeyCredential(_ id: UUID, with credential: APIKeyCredential) async throws {
        try await write("re-hash an API key") { db in
            try db.execute(StoreSQL.replaceAPIKeyCredential(id, with: credential, .sqlite))
        }
    }

    public func recordAPIKeyUse(_ id: UUID, at now: Date, resolution: TimeInterval) async throws -> Bool {
        try await write("record an API key's use") { db in
            try !db.rows(StoreSQL.recordAPIKeyUse(id, at: now, resolution: resolution, .sqlite)).isEmpty
        }
    }

    public func latestProviderToken(keyID: String) async throws -> ProviderToken? {
        try await read("read a provider token") { db in
            try db.rows(StoreSQL.latestProviderToken(keyID: keyID, .sqlite)).first?.providerToken()
        }
    }

    public func saveProviderToken(_ token: ProviderToken) async throws -> Bool {
        try await write("save a provider token") { db in
            try !db.rows(StoreSQL.saveProviderToken(token, .sqlite)).isEmpty
        }
    }
}
