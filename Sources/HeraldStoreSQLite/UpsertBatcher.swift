import Foundation
import GRDB
import HeraldStore
import Synchronization

/// Group commit for registrations: upserts that arrive while one transaction is being written are committed together
/// in the next, so a burst of registrations costs one fsync per batch instead of one each.
///
/// Each registration runs in its own savepoint inside the batch's transaction, so one that fails leaves the others
/// intact; if the commit itself fails, every registration of the batch fails and nothing of it is written. A batch
/// holds at most ``maximumBatch`` registrations, and each batch is a separate write on GRDB's queue, so other writes
/// (invalidations, delivery records) still get their turn between batches. A registration is durable when its
/// `upsert` returns, exactly as without batching.
final class UpsertBatcher: Sendable {
    private struct Entry: Sendable {
        let registration: TokenRegistration
        let now: Date
        let continuation: CheckedContinuation<UpsertResult, any Error>
    }

    private struct State {
        var pending: [Entry] = []
        var writing = false
    }

    /// The most registrations committed in one transaction.
    static let maximumBatch = 256

    private let writer: any DatabaseWriter
    private let write: @Sendable (TokenRegistration, Date, Database) throws -> UpsertResult
    private let mapError: @Sendable (any Error) -> any Error
    private let state = Mutex(State())

    /// - Parameters:
    ///   - write: Writes one validated registration inside a transaction.
    ///   - mapError: Turns a driver error into the store's error.
    init(
        writer: any DatabaseWriter,
        write: @escaping @Sendable (TokenRegistration, Date, Database) throws -> UpsertResult,
        mapError: @escaping @Sendable (any Error) -> any Error
    ) {
        self.writer = writer
        self.write = write
        self.mapError = mapError
    }

    /// Stores a validated registration with the next batch and returns once that batch is committed.
    func upsert(_ registration: TokenRegistration, at now: Date) async throws -> UpsertResult {
        try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { state in
                state.pending.append(Entry(registration: registration, now: now, continuation: continuation))
                guard !state.writing else { return false }
                state.writing = true
                return true
            }
            if start { writeNextBatch() }
        }
    }

    /// Writes the pending registrations as one transaction, then the next batch, until none is pending.
    private func writeNextBatch() {
        let batch = state.withLock { state -> [Entry] in
            let batch = Array(state.pending.prefix(Self.maximumBatch))
            state.pending.removeFirst(batch.count)
            if batch.isEmpty { state.writing = false }
            return batch
        }
        guard !batch.isEmpty else { return }
        writer.asyncWriteWithoutTransaction { [write, mapError] db in
            var results: [Result<UpsertResult, any Error>] = []
            results.reserveCapacity(batch.count)
            do {
                try db.inTransaction {
                    for entry in batch {
                        var stored: UpsertResult?
                        do {
                            try db.inSavepoint {
                                stored = try write(entry.registration, entry.now, db)
                                return .commit
                            }
                            results.append(.success(stored!))
                        } catch {
                            results.append(.failure(mapError(error)))
                        }
                    }
                    return .commit
                }
            } catch {
                results = batch.map { _ in .failure(mapError(error)) }
            }
            for (entry, result) in zip(batch, results) { entry.continuation.resume(with: result) }
            self.writeNextBatch()
        }
    }
}
