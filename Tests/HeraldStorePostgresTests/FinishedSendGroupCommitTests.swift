import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldStorePostgres

/// Inline sends recorded by group commit: the records of sends that finish while a batch is stored go together in one
/// statement, each caller answered its own record, as if alone.
///
/// Cases hold `LOCK TABLE sends` from a connection of their own: the batch in flight waits for it, the next records
/// gather, and the lock's release sends them as one batch.
@Suite(
    "PostgreSQL inline sends by group commit", .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"),
    .timeLimit(.minutes(2)))
struct FinishedSendGroupCommitTests {
    @Test(
        "120 sends recorded at once go in two calls; each caller gets its own record, counts, outcomes and audit entry")
    func concurrentSends() async throws {
        try await RegistrationGroupCommitTests.withCase { store, own, clock in
            let now = clock.now()
            let actor = AuditActor(kind: .apiKey, keyID: n0Key, name: "batch")
            let sends = (0..<120).map { n in
                (
                    send: NewSend(
                        target: "user \(n)", summary: "alert \(n)", status: .completed, targetCount: n % 4,
                        counts: n % 10 == 0 ? OutcomeCounts(rejected: 1) : OutcomeCounts(),
                        audit: n % 3 == 0
                            ? nil
                            : AuditEntry(
                                at: now, actor: actor, address: n % 2 == 0 ? nil : "10.0.0.\(n)", action: .sendCreated,
                                subject: "send \(n)", detail: "alert \(n)")),
                    outcomes: (0..<(n % 4)).map { k in
                        StoreConformance.outcome(
                            1000 * n + k,
                            k == 1
                                ? .rejected(status: 410, reason: .unregistered, timestamp: now)
                                : .accepted(apnsID: APNSID()), at: now, action: k == 1 ? .removed : nil)
                    }
                )
            }
            let before = store.finishedSendCommits.value
            let results = try await recordInOneBatch(sends, on: store, gatheredBy: own)

            let statistics = store.finishedSendCommits.value
            #expect(statistics.batches - before.batches <= 2, "the first call waits for the lock, the rest gather")
            #expect(statistics.largestBatch >= 119)
            #expect(statistics.batchesStoredOneByOne == 0)
            for (result, sent) in zip(results, sends) {
                let record = try result.get()
                var counts = sent.send.counts
                counts.add(kinds: sent.outcomes.map(\.result.kind))
                #expect(record.id == sent.send.id && record.target == sent.send.target && record.counts == counts)
                #expect(
                    record.createdAt == now && record.status == .completed
                        && record.targetCount == sent.send.targetCount)
                #expect(try await store.send(sent.send.id) == record)
                #expect(try await store.outcomes(of: sent.send.id, after: nil, limit: 10).outcomes == sent.outcomes)
            }
            let audited = try await store.auditEntries(AuditQuery(keyID: n0Key), after: nil, limit: 1_000).entries
            #expect(Set(audited) == Set(sends.compactMap(\.send.audit)), "each send's entry, written with it")
        }
    }

    private let n0Key = UUID()

    @Test("a send id twice in one batch, or already stored, is refused for that caller alone; nothing of it is written")
    func duplicateIDs() async throws {
        try await RegistrationGroupCommitTests.withCase { store, own, clock in
            let now = clock.now()
            let stored = try await store.recordFinishedSend(
                NewSend(target: "first", summary: "s", status: .completed), outcomes: [])
            let twice = NewSend(target: "twice", summary: "s", status: .completed)
            let accepted = StoreConformance.outcome(1, .accepted(apnsID: APNSID()), at: now)
            let failed = StoreConformance.outcome(2, .failed(message: "no connection"), at: now)
            let sends = [
                (send: twice, outcomes: [accepted]),
                (send: NewSend(id: stored.id, target: "again", summary: "s", status: .completed), outcomes: [failed]),
                (send: NewSend(target: "other", summary: "s", status: .completed), outcomes: [failed]),
                (
                    send: NewSend(id: twice.id, target: "twice again", summary: "s", status: .completed),
                    outcomes: [failed]
                ),
            ]
            let results = try await recordInOneBatch(sends, on: store, gatheredBy: own, inOrder: true)

            #expect(store.finishedSendCommits.value.largestBatch == 4, "one batch held all four")
            #expect(try results[0].get().target == "twice")
            #expect(try results[2].get().counts == OutcomeCounts(failed: 1))
            for refused in [1, 3] {
                #expect(throws: StoreError.self, "send \(refused)") { try results[refused].get() }
            }
            #expect(try await store.send(twice.id)?.target == "twice")
            #expect(try await store.outcomes(of: twice.id, after: nil, limit: 10).outcomes == [accepted])
            #expect(try await store.send(stored.id) == stored)
            #expect(try await store.outcomes(of: stored.id, after: nil, limit: 10).outcomes.isEmpty)
        }
    }

    @Test("150 reads of devices by token at once go in two queries; each gets its own device, or nil when unregistered")
    func batchedDeviceReads() async throws {
        try await RegistrationGroupCommitTests.withCase { store, own, _ in
            for n in 1...50 { _ = try await store.upsert(StoreConformance.registration(n, user: "user \(n)")) }
            _ = try await store.invalidate(token: StoreConformance.token(50), reason: .unregistered, at: nil)
            let tokens = (0..<150).map { StoreConformance.token(1 + $0 % 75) }
            let before = store.deviceReadCommits.value
            let results = try await RegistrationGroupCommitTests.inOneBatch(
                tokens.count, lockedBy: own, table: "devices", mode: "ACCESS EXCLUSIVE",
                statistics: store.deviceReadCommits,
                blocker: { _ = try await store.device(StoreConformance.token(1)) }, inOrder: false,
                submit: { try await store.device(tokens[$0]) })

            let statistics = store.deviceReadCommits.value
            #expect(statistics.batches - before.batches <= 2, "the first query waits for the lock, the rest gather")
            #expect(statistics.largestBatch >= 149)
            for (token, result) in zip(tokens, results) {
                let device = try result.get()
                let n = Int(token.hex, radix: 16)!
                if n <= 50 {
                    #expect(device?.token == token && device?.userID == "user \(n)")
                    #expect(device?.isActive == (n != 50), "an invalidated device is read as it is stored")
                } else {
                    #expect(device == nil, "token \(n) is not registered")
                }
            }
        }
    }

    /// Records sends concurrently while `own` holds the sends table, so that they gather into one batch, and returns
    /// each one's outcome, in their order.
    /// - Parameter inOrder: Queue them one after the other, so the batch holds them in this order.
    private func recordInOneBatch(
        _ sends: [(send: NewSend, outcomes: [DeliveryOutcome])], on store: PostgresStore, gatheredBy own: OwnConnection,
        inOrder: Bool = false
    ) async throws -> [Result<SendRecord, any Error>] {
        try await RegistrationGroupCommitTests.inOneBatch(
            sends.count, lockedBy: own, table: "sends", statistics: store.finishedSendCommits,
            blocker: {
                _ = try await store.recordFinishedSend(
                    NewSend(target: "blocker", summary: "s", status: .completed), outcomes: [])
            },
            inOrder: inOrder,
            submit: { try await store.recordFinishedSend(sends[$0].send, outcomes: sends[$0].outcomes) })
    }
}
