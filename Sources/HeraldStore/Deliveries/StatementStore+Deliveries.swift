package import Foundation
package import HeraldCore

extension StatementStore {
    public func tokensWithOutcomes(of id: SendID, among tokens: [DeviceToken]) async throws -> Set<DeviceToken> {
        guard let statement = StoreSQL.recordedTokens(of: id, among: tokens, dialect) else { return [] }
        return try StoreSQL.recordedTokens(in: try await readRows("read which devices a send has done", statement))
            .filter(tokens)
    }

    public func claimNextQueuedSend(
        worker: String, leaseUntil: Date, lanes: Set<SendLane>, excluding: Set<SendID>, precedence: ClaimPrecedence
    ) async throws -> SendRecord? {
        guard !lanes.isEmpty else { return nil }
        // One UPDATE: no other claim can run between choosing the send and taking it.
        let claim = StoreSQL.claimSend(
            worker: worker, leaseUntil: leaseUntil, lanes: lanes, excluding: excluding, precedence: precedence,
            at: clock.now(), dialect)
        return try await writeRows("claim a send", claim).first?.send()
    }

    public func waitingSends() async throws -> [SendLane: WaitingSends] {
        try StoreSQL.waitingLanes(
            try await readRows("count the waiting sends", StoreSQL.waitingSends(at: clock.now(), dialect)))
    }

    public func renewLease(of id: SendID, worker: String, until: Date) async throws -> Bool {
        let statement = StoreSQL.renewLease(of: id, worker: worker, until: until, at: clock.now(), dialect)
        return try await !writeRows("renew a lease", statement).isEmpty
    }

    public func rescheduleSend(_ id: SendID, worker: String, sendAt: Date, sentThrough: Date) async throws -> Bool {
        let statement = StoreSQL.rescheduleSend(
            id, worker: worker, sendAt: sendAt, sentThrough: sentThrough, at: clock.now(), dialect)
        return try await !writeRows("reschedule a send", statement).isEmpty
    }

    public func nextSendAt(after date: Date) async throws -> Date? {
        try await readRows("find the next scheduled send", StoreSQL.nextSendAt(after: date, dialect)).first?
            .optionalInteger(0).map(StoreTime.date)
    }
}
