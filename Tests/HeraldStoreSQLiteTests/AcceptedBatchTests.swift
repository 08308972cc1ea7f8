import Foundation
import HeraldCore
import HeraldStore
import Testing

/// ``AcceptedBatch`` apart from any database: which outcomes a batch holds, its stored values, and finding a member.
@Suite("Send records: a batch of first-try acceptances")
struct AcceptedBatchTests {
    let send = SendID()
    let at = Date(timeIntervalSince1970: 1_800_000_000)

    func token(_ hex: String) throws -> DeviceToken { try DeviceToken(hex: hex) }

    func accepted(_ token: DeviceToken, uniqueID: String? = nil) -> DeliveryOutcome {
        DeliveryOutcome(
            token: token, environment: .development, result: .accepted(apnsID: .derived(send: send, token: token)), at: at,
            apnsUniqueID: uniqueID)
    }

    @Test("a batch holds a first-try acceptance under the derived apns-id, with a unique id as APNs writes it; anything more keeps a row")
    func holds() throws {
        let device = try token(String(repeating: "ab", count: 32))
        #expect(AcceptedBatch.member(accepted(device), of: send) == .init(token: device, uniqueID: nil))
        let unique = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
        #expect(AcceptedBatch.member(accepted(device, uniqueID: unique), of: send)?.uniqueID == UUID(uuidString: unique))
        #expect(!AcceptedBatch.holds(accepted(device, uniqueID: unique.uppercased()), of: send), "not as APNs writes it")
        #expect(!AcceptedBatch.holds(accepted(device, uniqueID: "not-a-uuid"), of: send))
        #expect(!AcceptedBatch.holds(accepted(device), of: SendID()), "another send's derived apns-id")
        var corrected = accepted(device)
        corrected.action = .environmentCorrected
        #expect(!AcceptedBatch.holds(corrected, of: send))
        var retried = accepted(device)
        retried.attempts = [DeliveryAttempt(number: 1, at: at, environment: .development, status: 429)]
        #expect(!AcceptedBatch.holds(retried, of: send))
        let own = DeliveryOutcome(token: device, environment: .production, result: .accepted(apnsID: APNSID()), at: at)
        #expect(!AcceptedBatch.holds(own, of: send))
        let rejected = DeliveryOutcome(
            token: device, environment: .production, result: .rejected(status: 400, reason: .badDeviceToken, timestamp: nil),
            at: at)
        #expect(!AcceptedBatch.holds(rejected, of: send))
    }

    @Test("members are sorted and distinct; their tokens and unique ids are stored in that order and read back")
    func storedValues() throws {
        let tokens = try ["0a0b0c0d0e0f1011", "0102030405060708", "a1a2a3a4a5a6a7a8"].map(token)
        let ids = [UUID(), UUID(), UUID()]
        let batch = AcceptedBatch(
            environment: .development, at: at,
            members: zip(tokens, ids).map { AcceptedBatch.Member(token: $0, uniqueID: $1) }
                + [AcceptedBatch.Member(token: tokens[0], uniqueID: ids[0])])
        #expect(batch.tokens == [tokens[1], tokens[0], tokens[2]])
        #expect(try AcceptedBatch.tokens(stored: batch.storedTokens, tokenLength: 8) == batch.tokens)
        let stored = try #require(batch.storedUniqueIDs)
        #expect(stored.count == 48)
        #expect(try AcceptedBatch.uniqueID(at: 0, stored: stored) == ids[1].uuidString.lowercased())
        #expect(try AcceptedBatch.uniqueID(at: 2, stored: stored) == ids[2].uuidString.lowercased())
        #expect(throws: StoreError.self) { try AcceptedBatch.uniqueID(at: 3, stored: stored) }
        #expect(try AcceptedBatch.uniqueID(at: 0, stored: nil) == nil)
        #expect(throws: StoreError.self) { try AcceptedBatch.tokens(stored: [1, 2, 3], tokenLength: 8) }
        let plain = AcceptedBatch(environment: .production, at: at, members: [.init(token: tokens[0], uniqueID: nil)])
        #expect(plain.storedUniqueIDs == nil)
    }

    @Test("a member is found at a token's start; bytes matched across two neighbours are looked up in the stored tokens")
    func index() throws {
        let (left, right, across) = try (token("0102030405060708"), token("090a0b0c0d0e0f10"), token("05060708090a0b0c"))
        let stored = left.bytes + right.bytes
        #expect(try AcceptedBatch.index(of: right, position: 9, tokenLength: 8, stored: nil) == 1)
        #expect(try AcceptedBatch.index(of: left, position: 1, tokenLength: 8, stored: nil) == 0)
        #expect(try AcceptedBatch.index(of: across, position: 5, tokenLength: 8, stored: stored) == nil)
        #expect(try AcceptedBatch.index(of: across, position: 5, tokenLength: 8, stored: nil) == nil)
        #expect(try AcceptedBatch.index(of: left, position: 0, tokenLength: 8, stored: nil) == nil)
        // A token that matched across two neighbours first and is a member further on.
        let member = try token("0506070809050607")
        let crafted = try token("0102030405060708").bytes + token("0905060708090a0b").bytes + member.bytes
        #expect(try AcceptedBatch.index(of: member, position: 5, tokenLength: 8, stored: crafted) == 2)
    }

    @Test("stored tokens are searched in place: every member is found, nothing else, whatever its length")
    func storedTokensSearch() throws {
        let tokens = (0..<300).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255) } }
            .sorted { $0.lexicographicallyPrecedes($1) }
        let stored = try AcceptedBatch.StoredTokens(tokens.flatMap { $0 }, tokenLength: 32)
        #expect(tokens.allSatisfy(stored.contains))
        for token in tokens.prefix(20) {
            var other = token
            other[31] ^= 0x01
            #expect(stored.contains(other) == tokens.contains(other))
            #expect(!stored.contains(Array(token.prefix(16))), "another length")
        }
        #expect(throws: StoreError.self) { try AcceptedBatch.StoredTokens([1, 2, 3], tokenLength: 32) }
    }
}
