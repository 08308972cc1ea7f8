public import Foundation
public import HeraldStore

extension PostgresStore {
    public func preferences(topic: String, subject: PreferenceSubject) async throws -> StoredPreferences {
        let (rows, quietHours) = try await session("read preferences") { session in
            (
                try await session.rows(StoreSQL.preferences(topic: topic, subject: subject, .postgres)),
                try await session.rows(StoreSQL.ownQuietHours(topic: topic, subject: subject, .postgres))
            )
        }
        return try StoreSQL.storedPreferences(rows, quietHours: quietHours)
    }

    public func updatePreferences(
        topic: String, subject: PreferenceSubject, choices: [String: Bool?], quietHours: OwnQuietHoursChange,
        at date: Date
    ) async throws -> StoredPreferences {
        let statements = StoreSQL.updatePreferences(
            topic: topic, subject: subject, choices: choices, quietHours: quietHours, at: date, .postgres)
        let (rows, quiet) = try await transaction("record preferences") { session in
            for statement in statements { try await session.execute(statement) }
            return (
                try await session.rows(StoreSQL.preferences(topic: topic, subject: subject, .postgres)),
                try await session.rows(StoreSQL.ownQuietHours(topic: topic, subject: subject, .postgres))
            )
        }
        return try StoreSQL.storedPreferences(rows, quietHours: quiet)
    }
}
