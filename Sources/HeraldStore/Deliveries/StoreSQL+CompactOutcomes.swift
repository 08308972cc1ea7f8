import Crypto
import Foundation
package import HeraldCore

extension APNSID {
    /// The `apns-id` a send gives a device: the name-based (version 5) UUID of the token's hex in the send id's
    /// namespace, the same on every attempt, after every restart and on every instance (`uuid.uuid5(uuid.UUID(send_id),
    /// token_hex)` in Python). An outcome under it stores no apns-id (migration 27): readers derive it again.
    package static func derived(send: SendID, token: DeviceToken) -> APNSID {
        // Once per device of a fan-out: hashed from the token's stored text and into a tuple, with no array made.
        var hash = Insecure.SHA1()
        withUnsafeBytes(of: send.uuid.uuid) { hash.update(bufferPointer: $0) }
        var hex = token.hex
        hex.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        hash.finalize().withUnsafeBytes { digest in
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: digest.prefix(16))) }
        }
        uuid.6 = uuid.6 & 0x0F | 0x50
        uuid.8 = uuid.8 & 0x3F | 0x80
        return APNSID(UUID(uuid: uuid))
    }
}

/// Compact outcomes (migration 27, docs/storage.md "Outcomes, compactly"): `send_outcomes` names its send by `sends.ref` (an
/// integer) and holds the token as bytes, and an accepted outcome under the apns-id its send derives stores none.
/// Statements speak hex and send ids as everywhere else; these expressions translate at the table's edge.
extension StoreSQL {
    /// The hex of a stored token column, as ``DeviceToken/hex`` spells it (lowercase).
    package static func tokenHex(_ column: String, _ dialect: SQLStatement.Dialect) -> String {
        switch dialect {
        case .sqlite: "lower(hex(\(column)))"
        case .postgres: "encode(\(column), 'hex')"
        }
    }

    /// The stored bytes of a token given as hex (a placeholder or column).
    package static func tokenBytes(_ hex: String, _ dialect: SQLStatement.Dialect) -> String {
        switch dialect {
        case .sqlite: "herald_unhex(\(hex))"
        case .postgres: "decode(\(hex), 'hex')"
        }
    }

    /// The last 8 bytes of a stored token column: the expression of the index `send_outcomes_token` (migration 27),
    /// word for word, so that both backends use it. Every token has 8 bytes or more (``DeviceToken/minimumByteCount``).
    package static func tokenSuffix(_ column: String) -> String {
        "substr(\(column), length(\(column)) - 7)"
    }

    /// The hex of the last 8 bytes of a token, bound where ``tokenSuffix(_:)`` is compared (through ``tokenBytes(_:_:)``).
    package static func suffixHex(_ token: DeviceToken) -> String {
        String(token.hex.suffix(2 * 8))
    }

    /// A condition that a stored token column is a token whose hex and suffix hex are bound at two placeholders:
    /// through the index `send_outcomes_token` first.
    package static func tokenIs(
        _ column: String, hex: String, suffixHex: String, _ dialect: SQLStatement.Dialect
    ) -> String {
        "\(tokenSuffix(column)) = \(tokenBytes(suffixHex, dialect)) AND \(column) = \(tokenBytes(hex, dialect))"
    }

    /// `send_outcomes` (with an alias, when given) read through the index `send_outcomes_token`: a statement that finds
    /// outcomes by token (``tokenIs(_:hex:suffixHex:_:)``). SQLite is told (`INDEXED BY`): without statistics (the
    /// store never runs `ANALYZE`) it would rather walk a send's whole range of the primary key, a million rows for a
    /// campaign, than the few of one device. PostgreSQL's planner has its statistics.
    package static func outcomesByToken(_ dialect: SQLStatement.Dialect, alias: String? = nil) -> String {
        let table = "send_outcomes" + (alias.map { " \($0)" } ?? "")
        return dialect == .sqlite ? table + " INDEXED BY send_outcomes_token" : table
    }

    /// The `ref` of the send whose id is given (a placeholder or column): one lookup of the sends' primary key.
    package static func sendReference(_ id: String) -> String {
        "(SELECT ref FROM sends WHERE id = \(id))"
    }

    /// ``outcomeColumns`` as read: the token as hex. Columns of `alias` (`"o."`, or empty).
    package static func selectedOutcomeColumns(_ dialect: SQLStatement.Dialect, alias: String = "") -> String {
        outcomeColumnNames.map { $0 == "token" ? tokenHex(alias + $0, dialect) : alias + $0 }
            .joined(separator: ", ")
    }

    /// The apns-id an outcome stores: none when it is the one its send derives.
    package static func storedAPNSID(_ outcome: DeliveryOutcome, send: SendID) -> String? {
        guard case .accepted(let id) = outcome.result else { return nil }
        return id == APNSID.derived(send: send, token: outcome.token) ? nil : id.headerValue
    }
}
