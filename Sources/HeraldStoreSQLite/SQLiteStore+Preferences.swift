public import Foundation
public import HeraldStore

extension SQLiteStore {
    public func preferences(topic: String, subject: PreferenceSubject) async throws -> StoredPreferences {
        let statement = StoreSQL.preferences(topic: topic, subject: subject, .sqlite)
        return try StoreSQL.storedPreferences(try await read("read preferences") { db in try db.rows(statement) })
    }

    public func updatePreferences(
        topic: String, subject: PreferenceSubject, choices: [String: Bool?], at date: Date
    ) async throws -> StoredPreferences {
        let statements = StoreSQL.updatePreferences(
            topic: topic, subject: subject, choices: choices, at: date, .sqlite)
        let rows = try await write("record preferences") { db in
            for statement in statements { try db.execute(statement) }
            return try db.rows(StoreSQL.preferences(topic: topic, subject: subject, .sqlite))
        }
        return try StoreSQL.storedPreferences(rows)
    }
}
