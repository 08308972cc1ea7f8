package import Foundation

extension StoreSQL {
    /// A subject's choices for an app: category, enabled (0 or 1), updated_at.
    package static func preferences(topic: String, subject: PreferenceSubject, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            "SELECT category, enabled, updated_at FROM preference_choices WHERE topic = $1 AND subject = $2",
            [.text(topic), .text(subject.key)])
    }

    /// Sets one category on or off for a subject.
    package static func choosePreference(
        topic: String, subject: PreferenceSubject, category: String, enabled: Bool, at date: Date,
        _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            INSERT INTO preference_choices (topic, subject, category, enabled, updated_at) VALUES ($1, $2, $3, $4, $5) \
            ON CONFLICT (topic, subject, category) DO UPDATE SET enabled = excluded.enabled, \
            updated_at = excluded.updated_at
            """,
            [
                .text(topic), .text(subject.key), .text(category), .integer(enabled ? 1 : 0),
                .integer(StoreTime.microseconds(date)),
            ])
    }

    /// Forgets a subject's choice for one category: it follows the app's default again.
    package static func forgetPreference(
        topic: String, subject: PreferenceSubject, category: String, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect, "DELETE FROM preference_choices WHERE topic = $1 AND subject = $2 AND category = $3",
            [.text(topic), .text(subject.key), .text(category)])
    }

    /// A subject's own quiet hours for an app: quiet_hours, updated_at (no row: the app's window).
    package static func ownQuietHours(topic: String, subject: PreferenceSubject, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect, "SELECT quiet_hours, updated_at FROM preference_quiet_hours WHERE topic = $1 AND subject = $2",
            [.text(topic), .text(subject.key)])
    }

    /// The statement that records a change of a subject's own quiet hours; `nil` for ``OwnQuietHoursChange/keep``.
    package static func changeOwnQuietHours(
        topic: String, subject: PreferenceSubject, _ change: OwnQuietHoursChange, at date: Date,
        _ dialect: SQLStatement.Dialect
    ) -> SQLStatement? {
        switch change {
        case .keep:
            return nil
        case .appWindow:
            return SQLStatement(
                dialect, "DELETE FROM preference_quiet_hours WHERE topic = $1 AND subject = $2",
                [.text(topic), .text(subject.key)])
        case .own(let own):
            return SQLStatement(
                dialect,
                """
                INSERT INTO preference_quiet_hours (topic, subject, quiet_hours, updated_at) VALUES ($1, $2, $3, $4) \
                ON CONFLICT (topic, subject) DO UPDATE SET quiet_hours = excluded.quiet_hours, \
                updated_at = excluded.updated_at
                """,
                [.text(topic), .text(subject.key), .text(own.description), .integer(StoreTime.microseconds(date))])
        }
    }

    /// The statements that record `choices` and the quiet-hours change, in a stable order.
    package static func updatePreferences(
        topic: String, subject: PreferenceSubject, choices: [String: Bool?], quietHours: OwnQuietHoursChange,
        at date: Date, _ dialect: SQLStatement.Dialect
    ) -> [SQLStatement] {
        updatePreferences(topic: topic, subject: subject, choices: choices, at: date, dialect)
            + [changeOwnQuietHours(topic: topic, subject: subject, quietHours, at: date, dialect)].compactMap { $0 }
    }

    /// The statements that record `choices`, in a stable order.
    package static func updatePreferences(
        topic: String, subject: PreferenceSubject, choices: [String: Bool?], at date: Date,
        _ dialect: SQLStatement.Dialect
    ) -> [SQLStatement] {
        choices.keys.sorted().map { category in
            if let enabled = choices[category] ?? nil {
                choosePreference(
                    topic: topic, subject: subject, category: category, enabled: enabled, at: date, dialect)
            } else {
                forgetPreference(topic: topic, subject: subject, category: category, dialect)
            }
        }
    }

    /// The choices the rows of ``preferences(topic:subject:_:)`` and ``ownQuietHours(topic:subject:_:)`` hold.
    package static func storedPreferences(_ rows: [any StoredRow], quietHours: [any StoredRow]) throws
        -> StoredPreferences
    {
        var preferences = try storedPreferences(rows)
        if let row = quietHours.first {
            // A stored text this version cannot read follows the app's window rather than failing the person's view.
            preferences.quietHours = OwnQuietHours(try row.text(0))
            let updated = StoreTime.date(try row.integer(1))
            preferences.updatedAt = max(preferences.updatedAt ?? updated, updated)
        }
        return preferences
    }

    /// The choices the rows of ``preferences(topic:subject:_:)`` hold.
    package static func storedPreferences(_ rows: [any StoredRow]) throws -> StoredPreferences {
        var preferences = StoredPreferences()
        for row in rows {
            preferences.choices[try row.text(0)] = try row.integer(1) != 0
            let updated = StoreTime.date(try row.integer(2))
            preferences.updatedAt = max(preferences.updatedAt ?? updated, updated)
        }
        return preferences
    }
}
