import HeraldStore
import Synchronization

/// The outcome groups (counts per outcome and reason) of ended sends, which no longer change: a send to a million
/// devices groups a million rows, once.
final class EndedSendGroups: Sendable {
    /// Sends remembered; beyond, one is forgotten for each new one.
    static let capacity = 512

    private let groups = Mutex<[SendID: [OutcomeGroup]]>([:])

    /// The send's groups, counted by the store unless the send has ended and they were counted before.
    func groups(of send: SendRecord, in store: any Store) async throws -> [OutcomeGroup] {
        // A cancelled send's worker may still record what it had in flight until it lets the send go.
        let ended = send.status.isFinal && send.worker == nil
        if ended, let known = groups.withLock({ $0[send.id] }) { return known }
        // A running send's page is read again and again while its batches grow: its first-try acceptances come
        // from its counts; an ended one's from its records, once.
        let counted = try await store.outcomeGroups(of: send.id, acceptancesFromCounts: !ended)
        if ended {
            groups.withLock { groups in
                if groups.count >= Self.capacity, let any = groups.keys.first { groups.removeValue(forKey: any) }
                groups[send.id] = counted
            }
        }
        return counted
    }
}
