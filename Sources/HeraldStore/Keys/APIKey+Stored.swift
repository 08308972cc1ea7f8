import Foundation
import HeraldCore

extension APIKey {
    /// Rebuilds a key from its stored columns; both backends read rows through this.
    /// - Throws: ``StoreError`` `.corruptRecord` when the id is not a UUID or the environment is unknown.
    package init(
        storedID id: String, name: String, scopes: String, prefix: String, createdAt: Int64, revokedAt: Int64?,
        apps: String, environment: String?, expiresAt: Int64?, lastUsedAt: Int64?
    ) throws {
        guard let uuid = UUID(text: id) else {
            throw StoreError(.corruptRecord, "A stored API key has an unreadable id: revoke it and create a new one.")
        }
        var parsedEnvironment: APNSEnvironment?
        if let environment {
            guard let known = APNSEnvironment(name: environment) else {
                throw StoreError(
                    .corruptRecord, "The stored API key \(name) has an unknown environment: revoke it and create a new one.")
            }
            parsedEnvironment = known
        }
        self.init(
            id: uuid, name: name, scopes: Self.scopes(stored: scopes), prefix: prefix,
            createdAt: StoreTime.date(createdAt), revokedAt: revokedAt.map(StoreTime.date),
            apps: Set(apps.split(separator: " ").map(String.init)), environment: parsedEnvironment,
            expiresAt: expiresAt.map(StoreTime.date), lastUsedAt: lastUsedAt.map(StoreTime.date))
    }

    /// The id as stored: lowercase.
    package var storedID: String { id.lowercasedText }
}
