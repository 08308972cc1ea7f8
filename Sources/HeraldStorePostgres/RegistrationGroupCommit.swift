import Foundation
import HeraldCore
import HeraldStore
import Synchronization

/// Group commit of registrations: those that arrive while one batch is being stored are stored together in the next,
/// with one call of `herald_register_batch` — one round trip, one transaction and one WAL flush for the batch instead
/// of one each. Each registration is durable when its ``register(_:at:)`` returns, exactly as without batching.
///
/// Nothing waits for a timer: a lone registration is sent at once, and a batch is whatever arrived while the previous
/// one was stored, at most ``maximumBatch``. One batch is stored at a time, so an instance's batches never wait for
/// each other's row locks. Within a batch, registrations are applied in token order, and in arrival order for one
/// token (the last wins): two instances' batches then lock the tokens they both register in the same order, and do
/// not deadlock on them. (A move-aside deletes other tokens, in no set order; a deadlock there fails one batch's call,
/// which is then stored one by one.)
///
/// Every caller gets its own answer. When the batch's call fails with an error of the server — a registration the
/// database refuses, or a deadlock with another instance — nothing of the batch was stored, and its registrations are
/// stored one by one, in the same order, each caller getting its own result or error. When the server cannot be
/// reached, every caller of the batch gets that error.
///
/// The store owns it: ``run(storeBatch:storeOne:)`` runs inside ``PostgresStore/run()`` and stops with it.
package final class RegistrationGroupCommit: Sendable {
    /// A validated registration waiting for its batch, the registration time it will be stored with, and its caller.
    struct Pending: Sendable {
        let registration: TokenRegistration
        let registeredAt: Date
        let reply: CheckedContinuation<UpsertResult, any Error>
    }

    /// What the group commit did since its store was made: for tests, and to see batch sizes in a profile.
    package struct Statistics: Sendable, Hashable {
        /// Registrations queued for a batch.
        package var registrations = 0
        /// Batch calls sent.
        package var batches = 0
        /// The most registrations in one batch call.
        package var largestBatch = 0
        /// Batches whose call failed, and whose registrations were then stored one by one.
        package var batchesStoredOneByOne = 0
    }

    /// The most registrations in one call: bounds the call's parameters (about 200 bytes per registration) and the
    /// time the batch's row locks are held.
    static let maximumBatch = 256

    private let queue = BatchQueue<Pending>()
    private let counters = Mutex(Statistics())

    init() {}

    /// What the group commit did so far.
    var statistics: Statistics { counters.withLock { $0 } }

    /// Stores a validated registration with the next batch; returns once that batch is committed.
    ///
    /// Waits for ``run(storeBatch:storeOne:)`` to run. A caller whose task is cancelled still waits for its batch: the
    /// registration may be stored by then.
    /// - Throws: ``HeraldStore/StoreError``: the registration's own error, or the batch's when the server cannot be
    ///   reached; `.closed` when the store stopped first.
    func register(_ registration: TokenRegistration, at registeredAt: Date) async throws -> UpsertResult {
        try await withCheckedThrowingContinuation { reply in
            guard queue.push(Pending(registration: registration, registeredAt: registeredAt, reply: reply)) else {
                reply.resume(throwing: Self.stopped)
                return
            }
            counters.withLock { $0.registrations += 1 }
        }
    }

    /// Stores batches until the task is cancelled, then fails the registrations still waiting with `.closed`.
    /// - Parameters:
    ///   - storeBatch: Stores registrations with one call, in the given order; returns their results in that order.
    ///   - storeOne: Stores one registration on its own.
    func run(
        storeBatch: @escaping @Sendable ([Pending]) async throws -> [UpsertResult],
        storeOne: @escaping @Sendable (Pending) async throws -> UpsertResult
    ) async {
        while !Task.isCancelled, let waiting = try? await queue.take() {
            for start in stride(from: 0, to: waiting.count, by: Self.maximumBatch) {
                let batch = waiting[start..<min(start + Self.maximumBatch, waiting.count)]
                await store(Self.inLockOrder(batch), storeBatch: storeBatch, storeOne: storeOne)
            }
        }
        for pending in queue.close() { pending.reply.resume(throwing: Self.stopped) }
    }

    /// Stores one batch and answers each of its callers.
    private func store(
        _ batch: [Pending], storeBatch: @Sendable ([Pending]) async throws -> [UpsertResult],
        storeOne: @Sendable (Pending) async throws -> UpsertResult
    ) async {
        counters.withLock { counters in
            counters.batches += 1
            counters.largestBatch = max(counters.largestBatch, batch.count)
        }
        do {
            let results = try await storeBatch(batch)
            precondition(results.count == batch.count, "storeBatch answers every registration")
            for (pending, result) in zip(batch, results) { pending.reply.resume(returning: result) }
            return
        } catch let error as StoreError where error.code == .backend && batch.count > 1 {
            // The server refused the call, and rolled all of it back: find out whose registration it was.
            counters.withLock { $0.batchesStoredOneByOne += 1 }
        } catch {
            for pending in batch { pending.reply.resume(throwing: Self.callerError(error)) }
            return
        }
        for pending in batch {
            do {
                pending.reply.resume(returning: try await storeOne(pending))
            } catch {
                pending.reply.resume(throwing: Self.callerError(error))
            }
        }
    }

    /// A batch in token order, keeping arrival order among registrations of one token.
    private static func inLockOrder(_ batch: ArraySlice<Pending>) -> [Pending] {
        batch.enumerated().sorted { first, second in
            first.element.registration.token != second.element.registration.token
                ? first.element.registration.token < second.element.registration.token
                : first.offset < second.offset
        }.map(\.element)
    }

    /// The error to give a caller: the store's stopping cancels the batch in flight, which the caller did not ask for.
    private static func callerError(_ error: any Error) -> any Error {
        error is CancellationError ? stoppedInFlight : error
    }

    private static let stopped = StoreError(
        .closed, "The PostgreSQL store stopped before storing the registration: nothing was stored. Register again.")

    private static let stoppedInFlight = StoreError(
        .closed,
        "The PostgreSQL store stopped while storing the registration: it may or may not be stored. Register again.")
}
