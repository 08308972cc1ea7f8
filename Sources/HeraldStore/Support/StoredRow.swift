import Foundation
package import HeraldCore

/// A result row as both backends expose it: columns read by position, as text or 64-bit integers.
///
/// Each backend makes its driver's row type conform; the records are then read from rows by the shared code
/// below, so SQLite and PostgreSQL cannot disagree on how a column is read.
package protocol StoredRow {
    /// The text in a column, or `nil` for `NULL`.
    /// - Throws: ``StoreError`` `.corruptRecord` when the column holds something else.
    func optionalText(_ index: Int) throws -> String?
    /// The integer in a column, or `nil` for `NULL`.
    /// - Throws: ``StoreError`` `.corruptRecord` when the column holds something else.
    func optionalInteger(_ index: Int) throws -> Int64?
    /// The bytes in a column (a `BLOB` or `bytea`), or `nil` for `NULL`.
    /// - Throws: ``StoreError`` `.corruptRecord` when the column holds something else.
    func optionalBytes(_ index: Int) throws -> [UInt8]?
}

extension StoredRow {
    /// The text in a column that is never `NULL`.
    package func text(_ index: Int) throws -> String {
        guard let value = try optionalText(index) else { throw Self.unexpectedNull(index) }
        return value
    }

    /// The integer in a column that is never `NULL`.
    package func integer(_ index: Int) throws -> Int64 {
        guard let value = try optionalInteger(index) else { throw Self.unexpectedNull(index) }
        return value
    }

    /// The bytes in a column that is never `NULL`.
    package func bytes(_ index: Int) throws -> [UInt8] {
        guard let value = try optionalBytes(index) else { throw Self.unexpectedNull(index) }
        return value
    }

    /// The error for a column that holds a value of the wrong type.
    package static func unexpectedType(_ index: Int) -> StoreError {
        StoreError(
            .corruptRecord, "Column \(index + 1) of a stored row has an unexpected type: was the table changed by hand?"
        )
    }

    private static func unexpectedNull(_ index: Int) -> StoreError {
        StoreError(.corruptRecord, "Column \(index + 1) of a stored row is NULL where Herald never writes NULL.")
    }

    /// A registration from the columns of ``DeviceQuery/columns``.
    package func device() throws -> DeviceRegistration {
        try DeviceRegistration(
            storedToken: text(0), topic: text(1), environment: text(2), tokenKind: text(3), userID: optionalText(4),
            installationID: optionalText(5), preferredLanguages: StoredList.decode(text(6)),
            appVersion: optionalText(7), platform: optionalText(8), tags: StoredList.decode(text(9)),
            registeredAt: integer(10), createdAt: integer(11), updatedAt: integer(12),
            invalidatedAt: optionalInteger(13), invalidationReason: optionalText(14), apnsTimestamp: optionalInteger(15),
            timeZone: optionalText(16), activityType: optionalText(17), activityID: optionalText(18),
            staleAt: optionalInteger(19), activitiesEnabled: StoredFlag.value(optionalText(20)),
            frequentPushesEnabled: StoredFlag.value(optionalText(21)), pushEndpoint: optionalText(22),
            pushP256dh: optionalText(23), pushAuth: optionalText(24))
    }

    /// A send from the columns of ``StoreSQL/sendColumns``.
    package func send() throws -> SendRecord {
        try SendRecord(
            storedID: text(0), createdAt: integer(1), updatedAt: integer(2), target: text(3), summary: text(4),
            job: optionalText(5), status: text(6), targetCount: optionalInteger(7).map(Int.init),
            accepted: Int(integer(8)), rejected: Int(integer(9)), failed: Int(integer(10)),
            checkpoint: optionalText(11), worker: optionalText(12), leaseUntil: optionalInteger(13),
            message: optionalText(14), sendAt: optionalInteger(15), sentThrough: optionalInteger(16), lane: text(17),
            shardCount: optionalInteger(18).map(Int.init), suppressedByPreference: Int(integer(19)),
            topic: optionalText(20), suppressedByFrequencyCap: Int(integer(21)),
            suppressedQuietHours: (dropped: Int(integer(22)), deferred: Int(integer(23))),
            suppressedActivitiesDisabled: Int(integer(24)))
    }

    /// An outcome of a send from the columns of ``StoreSQL/selectedOutcomeColumns(_:alias:)``, with its sequence
    /// number. An accepted outcome that stores no `apns-id` has the one its send derives (migration 27).
    package func outcome(send: SendID) throws -> (sequence: Int64, outcome: DeliveryOutcome) {
        let token = try text(1)
        let kind = try text(3)
        var apnsID = try optionalText(4)
        if apnsID == nil, kind == "accepted" {
            apnsID = APNSID.derived(send: send, token: try DeviceToken(storedHex: token)).headerValue
        }
        let outcome = try DeliveryOutcome(
            token: token, environment: text(2), kind: kind, apnsID: apnsID,
            status: optionalInteger(5).map(Int.init), reason: optionalText(6), apnsTimestamp: optionalInteger(7),
            message: optionalText(8), at: integer(9), action: optionalText(10), apnsUniqueID: optionalText(11))
        return (try integer(0), outcome)
    }

    /// An API key from the columns of ``StoreSQL/apiKeyColumns``.
    package func apiKey() throws -> APIKey {
        try APIKey(
            storedID: text(0), name: text(1), scopes: text(2), prefix: text(3), createdAt: integer(4),
            revokedAt: optionalInteger(5), apps: text(6), environment: optionalText(7), expiresAt: optionalInteger(8),
            lastUsedAt: optionalInteger(9))
    }

    /// A key and its credential from the columns of ``StoreSQL/storedAPIKeyColumns``.
    /// - Throws: ``StoreError`` `.corruptRecord` for an unknown hash scheme.
    package func storedAPIKey() throws -> StoredAPIKey {
        guard let scheme = APIKeyCredential.Scheme(rawValue: try text(10)) else {
            throw StoreError(
                .corruptRecord, "A stored API key has an unknown hash scheme: revoke it and create a new one.")
        }
        return StoredAPIKey(
            key: try apiKey(),
            credential: APIKeyCredential(
                scheme: scheme, lookupID: try optionalText(11), salt: try text(12), hash: try text(13)))
    }

    /// A provider token from the columns of ``StoreSQL/latestProviderToken(keyID:dialect:)``.
    package func providerToken() throws -> ProviderToken {
        try ProviderToken(jwt: text(0), keyID: text(1), teamID: text(2), issuedAt: StoreTime.date(integer(3)))
    }
}
