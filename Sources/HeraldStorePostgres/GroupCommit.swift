import Foundation
import HeraldCore
import HeraldStore

/// Group commit: writes that arrive while one batch is being stored are stored together in the next, with one call —
/// one round trip, one transaction and one WAL flush for the batch instead of one each. Each write is durable when
/// ``submit(_:)`` returns, exactly as without batching.
///
/// Nothing waits for a timer: a lone write is sent at once, and a batch is whatever arrived while the previous one was
/// stored, at most ``maximumBatch``. One batch is stored at a time, so an instance's batches never wait for each
/// other's row locks. Each batch is put in the order the store locks its rows in
/// (``init(stopped:stoppedInFlight:order:)``), so two instances' batches lock rows they share in the same order and do
/// not deadlock on them.
///
/// Every caller gets its own answer. When the batch's call fails with an error of the server — a write the database
/// refuses, or a deadlock with another instance — nothing of the batch was stored, and its writes are stored one by
/// one, in the same order, each caller getting its own result or error. When the server cannot be reached, every caller of
/// the batch gets that error.
///
/// The store owns it: ``run(storeBatch:storeOne:)`` runs inside ``PostgresStore/run()`` and stops with it. Used for
/// registrations (`herald_register_batch`) and for inline sends (`StoreSQL.insertFinishedSends`); and, with nothing to
/// commit, for reads of devices by token, which arrive one per inline send (`StoreSQL.selectDevices`).
package final class GroupCommit<Item: Sendable, Output: Sendable>: Sendable {
    private struct Pending: Sendable {
        let item: Item
        let reply: CheckedContinuation<Output, any Error>
    }

    /// The most writes in one call: bounds the call's parameters and the time the batch's row locks are held.
    static var maximumBatch: Int { 256 }

    private let queue = BatchQueue<Pending>()
    private let counters = WatchedState(GroupCommitStatistics(), readyWhen: { _ in false })
    private let order: @Sendable ([Item]) -> [Int]
    private let stopped: StoreError
    private let stoppedInFlight: StoreError

    /// - Parameters:
    ///   - stopped: What a caller is told when the store stopped before its batch was sent: that nothing was done.
    ///   - stoppedInFlight: What a caller is told when the store stopped while its batch was in flight.
    ///   - order: The positions of a batch's items in the order to store them (the order their rows are locked in).
    init(stopped: String, stoppedInFlight: String, order: @escaping @Sendable ([Item]) -> [Int]) {
        self.order = order
        self.stopped = StoreError(.closed, stopped)
        self.stoppedInFlight = StoreError(.closed, stoppedInFlight)
    }

    /// What the group commit did so far, for tests to read and to wait on (`wait(until:)`) instead of polling.
    var statistics: WatchedState<GroupCommitStatistics> { counters }

    /// Stores a write with the next batch; returns once that batch is committed.
    ///
    /// Waits for ``run(storeBatch:storeOne:)`` to run. A caller whose task is cancelled still waits for its batch: the
    /// write may be stored by then.
    /// - Throws: ``HeraldStore/StoreError``: the write's own error, or the batch's when the server cannot be reached;
    ///   `.closed` when the store stopped first.
    func submit(_ item: Item) async throws -> Output {
        try await withCheckedThrowingContinuation { reply in
            guard queue.push(Pending(item: item, reply: reply)) else {
                reply.resume(throwing: stopped)
                return
            }
            counters.update { $0.submitted += 1 }
        }
    }

    /// Stores batches until the task is cancelled, then fails the writes still waiting with `.closed`.
    /// - Parameters:
    ///   - storeBatch: Stores writes with one call, in the given order; returns their results in that order.
    ///   - storeOne: Stores one write on its own.
    func run(
        storeBatch: @escaping @Sendable ([Item]) async throws -> [Output],
        storeOne: @escaping @Sendable (Item) async throws -> Output
    ) async {
        while !Task.isCancelled, let waiting = try? await queue.take() {
            for start in stride(from: 0, to: waiting.count, by: Self.maximumBatch) {
                let batch = Array(waiting[start..<min(start + Self.maximumBatch, waiting.count)])
                let ordered = order(batch.map(\.item)).map { batch[$0] }
                precondition(ordered.count == batch.count, "order places every item of a batch once")
                await store(ordered, storeBatch: storeBatch, storeOne: storeOne)
            }
        }
        for pending in queue.close() { pending.reply.resume(throwing: stopped) }
    }

    /// Stores one batch and answers each of its callers.
    private func store(
        _ batch: [Pending], storeBatch: @Sendable ([Item]) async throws -> [Output],
        storeOne: @Sendable (Item) async throws -> Output
    ) async {
        counters.update { counters in
            counters.batches += 1
            counters.largestBatch = max(counters.largestBatch, batch.count)
        }
        do {
            let results = try await storeBatch(batch.map(\.item))
            precondition(results.count == batch.count, "storeBatch answers every write")
            for (pending, result) in zip(batch, results) { pending.reply.resume(returning: result) }
            return
        } catch let error as StoreError where error.code == .backend && batch.count > 1 {
            // The server refused the call, and rolled all of it back: find out whose write it was.
            counters.update { $0.batchesStoredOneByOne += 1 }
        } catch {
            for pending in batch { pending.reply.resume(throwing: callerError(error)) }
            return
        }
        for pending in batch {
            do {
                pending.reply.resume(returning: try await storeOne(pending.item))
            } catch {
                pending.reply.resume(throwing: callerError(error))
            }
        }
    }

    /// The error to give a caller: the store's stopping cancels the batch in flight, which the caller did not ask for.
    private func callerError(_ error: any Error) -> any Error {
        error is CancellationError ? stoppedInFlight : error
    }
}

/// What the group commit did since its store was made: for tests, and to see batch sizes in a profile.
package struct GroupCommitStatistics: Sendable, Hashable {
    /// Writes queued for a batch.
    package var submitted = 0
    /// Batch calls sent.
    package var batches = 0
    /// The most writes in one batch call.
    package var largestBatch = 0
    /// Batches whose call failed, and whose writes were then stored one by one.
    package var batchesStoredOneByOne = 0
}

/// A registration waiting for its batch, and the registration time it will be stored with.
struct PendingRegistration: Sendable {
    let registration: TokenRegistration
    let registeredAt: Date

    /// A batch's registrations in token order, keeping arrival order among registrations of one token (the last
    /// wins): two instances' batches then lock the tokens they both register in the same order. (A move-aside deletes
    /// other tokens, in no set order; a deadlock there fails one batch's call, which is then stored one by one.)
    static func lockOrder(_ batch: [PendingRegistration]) -> [Int] {
        batch.indices.sorted { first, second in
            batch[first].registration.token != batch[second].registration.token
                ? batch[first].registration.token < batch[second].registration.token
                : first < second
        }
    }
}
