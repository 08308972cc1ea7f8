public import Foundation
public import HeraldStore

extension PostgresStore {
    public func preferences(topic: String, subject: PreferenceSubject) async throws -> StoredPreferences {
        let rows = try await session("read preferences") { session in
            try await session.rows(StoreSQL.preferences(topic: topic, subject: subject, .postgres))
        }
        return try StoreSQL.storedPreferences(rows)
    }

    public func updatePreferences(
        topic: String, subject: PreferenceSubject, choices: [String: Bool?], at date: Date
    ) async throws -> StoredPreferences {
        let statements = StoreSQL.updatePreferences(
            topic: topic, subject: subject, choices: choices, at: date, .postgres)
        let rows = try await transaction("record preferences") { session in
            for statement in statements { try await session.execute(statement) }
            return try await session.rows(StoreSQL.preferences(topic: topic, subject: subject, .postgres))
        }
        return try StoreSQL.storedPreferences(rows)
    }
}
