import HeraldCore
package import Foundation

extension StatementStore {
    public func preferences(topic: String, subject: PreferenceSubject) async throws -> StoredPreferences {
        let (choices, quietHours) = try await readRows(
            "read preferences",
            [
                StoreSQL.preferences(topic: topic, subject: subject, dialect),
                StoreSQL.ownQuietHours(topic: topic, subject: subject, dialect),
            ]
        ).pair
        return try StoreSQL.storedPreferences(choices, quietHours: quietHours)
    }

    public func updatePreferences(
        topic: String, subject: PreferenceSubject, choices: [String: Bool?], quietHours: OwnQuietHoursChange,
        at date: Date
    ) async throws -> StoredPreferences {
        let changes = StoreSQL.updatePreferences(
            topic: topic, subject: subject, choices: choices, quietHours: quietHours, at: date, dialect)
        let rows = try await writeRows(
            "record preferences",
            changes + [
                StoreSQL.preferences(topic: topic, subject: subject, dialect),
                StoreSQL.ownQuietHours(topic: topic, subject: subject, dialect),
            ])
        return try StoreSQL.storedPreferences(rows[rows.count - 2], quietHours: rows[rows.count - 1])
    }
}
