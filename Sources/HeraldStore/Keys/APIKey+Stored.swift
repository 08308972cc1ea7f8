import Foundation
import HeraldCore

extension APIKey {
    /// Rebuilds a key from its stored columns; both backends read rows through this.
    /// - Throws: ``StoreError`` `.corruptRecord` when the id is not a UUID.
    package init(
        storedID id: String, name: String, scopes: String, prefix: String, createdAt: Int64, revokedAt: Int64?
    ) throws {
        guard let uuid = UUID(text: id) else {
            throw StoreError(.corruptRecord, "A stored API key has an unreadable id: revoke it and create a new one.")
        }
        self.init(
            id: uuid, name: name, scopes: Self.scopes(stored: scopes), prefix: prefix,
            createdAt: StoreTime.date(createdAt), revokedAt: revokedAt.map(StoreTime.date))
    }

    /// The id as stored: lowercase.
    package var storedID: String { id.lowercasedText }
}
