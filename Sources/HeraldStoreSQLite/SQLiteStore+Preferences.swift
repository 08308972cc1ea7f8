public import Foundation
public import HeraldStore

extension SQLiteStore {
    public func preferences(topic: String, subject: PreferenceSubject) async throws -> StoredPreferences {
        let (rows, quietHours) = try await read("read preferences") { db in
            (
                try db.rows(StoreSQL.preferences(topic: topic, subject: subject, .sqlite)),
                try db.rows(StoreSQL.ownQuietHours(topic: topic, subject: subject, .sqlite))
            )
        }
        return try StoreSQL.storedPreferences(rows, quietHours: quietHours)
    }

    public func updatePreferences(
        topic: String, subject: PreferenceSubject, choices: [String: Bool?], quietHours: OwnQuietHoursChange,
        at date: Date
    ) async throws -> StoredPreferences {
        let statements = StoreSQL.updatePreferences(
            topic: topic, subject: subject, choices: choices, quietHours: quietHours, at: date, .sqlite)
        let (rows, quiet) = try await write("record preferences") { db in
            for statement in statements { try db.execute(statement) }
            return (
                try db.rows(StoreSQL.preferences(topic: topic, subject: subject, .sqlite)),
                try db.rows(StoreSQL.ownQuietHours(topic: topic, subject: subject, .sqlite))
            )
        }
        return try StoreSQL.storedPreferences(rows, quietHours: quiet)
    }
}
