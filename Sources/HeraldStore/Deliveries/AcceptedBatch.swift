package import Foundation
package import HeraldCore

/// The devices of a send that APNs accepted on the first attempt under the apns-id the send derives
/// (``APNSID/derived(send:token:)``), with nothing else to say about them but the sandbox's `apns-unique-id`: one row
/// of `send_acceptances` (migration 30, docs/storage.md "Send records"), instead of a row of `send_outcomes` each.
///
/// Its tokens are stored as one value, their bytes one after the other in ascending order, all of one length: a
/// member is found by its position (`instr` on SQLite, `position` on PostgreSQL), its sequence number is the batch's
/// plus its index, and the row keeps the first and last token so that a device's batch is found through the index
/// `(send_ref, environment, last_token, first_token)`. The unique ids, when the batch keeps them, are stored the same way, 16 bytes each in the
/// tokens' order. A recording gives the rest of its outcomes a row each (``OutcomeRecording``).
package struct AcceptedBatch: Sendable, Hashable {
    /// A device of the batch, and the sandbox's `apns-unique-id` of its notification when the batch keeps them.
    package struct Member: Sendable, Hashable {
        package let token: DeviceToken
        package let uniqueID: UUID?
        /// The token's bytes, made once.
        let bytes: [UInt8]

        package init(token: DeviceToken, uniqueID: UUID?) {
            self.init(token: token, bytes: token.bytes, uniqueID: uniqueID)
        }

        init(token: DeviceToken, bytes: [UInt8], uniqueID: UUID?) {
            self.token = token
            self.bytes = bytes
            self.uniqueID = uniqueID
        }
    }

    /// The environment the batch was sent to.
    package var environment: APNSEnvironment
    /// When the last of its answers came.
    package var at: Date
    /// Its devices, ascending by their tokens' bytes, distinct, all of one length; all with a unique id or none.
    package private(set) var members: [Member]

    /// A batch of tokens of one length, every one with a unique id or none; sorted and made distinct here.
    package init(environment: APNSEnvironment, at: Date, members: some Sequence<Member>) {
        self.environment = environment
        self.at = at
        let sorted = members.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        // Distinct: a token given twice is kept once.
        var distinct: [Member] = []
        distinct.reserveCapacity(sorted.count)
        for member in sorted where distinct.last?.bytes != member.bytes { distinct.append(member) }
        self.members = distinct
        precondition(Set(self.members.map(\.token.byteCount)).count <= 1, "a batch holds tokens of one length")
        precondition(Set(self.members.map { $0.uniqueID == nil }).count <= 1, "a batch keeps every unique id or none")
    }

    /// Its tokens, in order.
    package var tokens: [DeviceToken] { members.map(\.token) }

    /// The bytes of every token, in order: the stored value.
    package var storedTokens: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(members.count * tokenLength)
        for member in members { bytes.append(contentsOf: member.bytes) }
        return bytes
    }

    /// The 16 bytes of every member's unique id, in order; `nil` when the batch keeps none.
    package var storedUniqueIDs: [UInt8]? {
        guard members.first?.uniqueID != nil else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(members.count * 16)
        for member in members {
            withUnsafeBytes(of: member.uniqueID!.uuid) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// The length of its tokens in bytes.
    package var tokenLength: Int { members.first?.token.byteCount ?? 0 }

    /// A batch's stored tokens, searched in place: sorted tokens of one length, found by bisection without a
    /// `DeviceToken` made for any.
    package struct StoredTokens: Sendable {
        private let bytes: [UInt8]
        private let tokenLength: Int

        /// - Throws: ``StoreError`` `.corruptRecord` when the value is not whole tokens of that length.
        package init(_ bytes: [UInt8], tokenLength: Int) throws {
            guard tokenLength >= DeviceToken.minimumByteCount, bytes.count % tokenLength == 0 else {
                throw StoreError(
                    .corruptRecord, "A stored batch of accepted devices is not whole tokens: was it changed by hand?")
            }
            self.bytes = bytes
            self.tokenLength = tokenLength
        }

        /// Whether a token (its bytes) is one of them.
        package func contains(_ token: [UInt8]) -> Bool {
            guard token.count == tokenLength else { return false }
            return bytes.withUnsafeBytes { stored in
                token.withUnsafeBytes { wanted in
                    var (low, high) = (0, stored.count / tokenLength)
                    while low < high {
                        let middle = (low + high) / 2
                        let order = memcmp(stored.baseAddress! + middle * tokenLength, wanted.baseAddress!, tokenLength)
                        if order == 0 { return true }
                        if order < 0 { low = middle + 1 } else { high = middle }
                    }
                    return false
                }
            }
        }
    }

    /// The tokens of a stored value.
    /// - Throws: ``StoreError`` `.corruptRecord` when the value is not whole tokens of that length.
    package static func tokens(stored bytes: [UInt8], tokenLength: Int) throws -> [DeviceToken] {
        guard tokenLength >= DeviceToken.minimumByteCount, bytes.count % tokenLength == 0 else {
            throw StoreError(.corruptRecord, "A stored batch of accepted devices is not whole tokens: was it changed by hand?")
        }
        return try stride(from: 0, to: bytes.count, by: tokenLength).map { start in
            guard let token = try? DeviceToken(data: bytes[start..<start + tokenLength]) else {
                throw StoreError(.corruptRecord, "A stored batch of accepted devices holds an unreadable token.")
            }
            return token
        }
    }

    /// The unique id of the member at an index, from the stored unique ids (`nil`: the batch keeps none).
    /// - Throws: ``StoreError`` `.corruptRecord` when the value holds no unique id at that index.
    package static func uniqueID(at index: Int, stored bytes: [UInt8]?) throws -> String? {
        guard let bytes else { return nil }
        guard index >= 0, bytes.count >= (index + 1) * 16 else {
            throw StoreError(.corruptRecord, "A stored batch of accepted devices lacks a unique id: was it changed by hand?")
        }
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { $0.copyBytes(from: bytes[index * 16..<(index + 1) * 16]) }
        return UUID(uuid: uuid).uuidString.lowercased()
    }

    /// The index of a token among a stored value's, from the 1-based byte position at which the statement found it
    /// (0: not found). A position inside a token (the bytes matched across two neighbours) is looked up in the
    /// stored value, when the statement returned it.
    package static func index(
        of token: DeviceToken, position: Int64, tokenLength: Int64, stored bytes: [UInt8]?
    ) throws -> Int? {
        guard position > 0, tokenLength > 0 else { return nil }
        if (position - 1) % tokenLength == 0 { return Int((position - 1) / tokenLength) }
        guard let bytes else { return nil }
        return try tokens(stored: bytes, tokenLength: Int(tokenLength)).firstIndex(of: token)
    }

    /// The member an outcome is in a batch, if it can be: accepted at once under the apns-id its send derives, nothing
    /// done to the registry, and a sandbox `apns-unique-id`, if any, a UUID as APNs writes it (lowercase); `nil` for an
    /// outcome that keeps a row.
    package static func member(_ outcome: DeliveryOutcome, of send: SendID) -> Member? {
        member(outcome, bytes: outcome.token.bytes, of: send)
    }

    /// ``member(_:of:)`` for an outcome whose token's bytes are made already.
    static func member(_ outcome: DeliveryOutcome, bytes: [UInt8], of send: SendID) -> Member? {
        guard case .accepted(let id) = outcome.result, outcome.action == nil, outcome.attempts.isEmpty else {
            return nil
        }
        var uniqueID: UUID?
        if let text = outcome.apnsUniqueID {
            guard let parsed = UUID(lowercasedText: text) else { return nil }
            uniqueID = parsed
        }
        guard id == APNSID.derived(send: send, token: outcome.token) else { return nil }
        return Member(token: outcome.token, bytes: bytes, uniqueID: uniqueID)
    }

    /// Whether an outcome can be part of a batch (``member(_:of:)``).
    package static func holds(_ outcome: DeliveryOutcome, of send: SendID) -> Bool { member(outcome, of: send) != nil }

    /// A member's outcome, as readers give it: accepted under the derived apns-id at the batch's time.
    package static func outcome(
        of token: DeviceToken, send: SendID, environment: APNSEnvironment, at: Date, uniqueID: String?
    ) -> DeliveryOutcome {
        DeliveryOutcome(
            token: token, environment: environment, result: .accepted(apnsID: .derived(send: send, token: token)), at: at,
            apnsUniqueID: uniqueID)
    }
}
