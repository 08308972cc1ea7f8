import Foundation
import GRDB
import Synchronization

/// Group commit: writes that arrive while one transaction is being written are committed together in the next, so a
/// burst of writes (registrations, inline sends, outcome batches) costs one fsync per batch instead of one each.
///
/// Each write runs in its own savepoint inside the batch's transaction, so one that fails leaves the others intact
/// and is rolled back as if it had been its own transaction; if the commit itself fails, every write of the batch
/// fails and nothing of it is written. A batch holds at most ``maximumBatch`` writes. A write is durable when
/// ``perform(_:)`` returns, exactly as without batching.
final class GroupCommit: Sendable {
    private struct Entry: Sendable {
        /// Runs the write; returns how to report its success once the batch is committed.
        let write: @Sendable (Database) throws -> @Sendable () -> Void
        let fail: @Sendable (any Error) -> Void
    }

    private struct State {
        var pending: [Entry] = []
        var writing = false
    }

    /// The most writes committed in one transaction.
    static let maximumBatch = 256

    private let writer: any DatabaseWriter
    private let state = Mutex(State())

    init(writer: any DatabaseWriter) {
        self.writer = writer
    }

    /// Runs `write` with the next batch and returns its result once that batch is committed.
    /// - Throws: what `write` threw (its savepoint rolled back), or the commit's error.
    func perform<T: Sendable>(_ write: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let entry = Entry(
                write: { db in
                    let value = try write(db)
                    return { continuation.resume(returning: value) }
                },
                fail: { continuation.resume(throwing: $0) })
            let start = state.withLock { state in
                state.pending.append(entry)
                guard !state.writing else { return false }
                state.writing = true
                return true
            }
            if start { writeNextBatch() }
        }
    }

    /// Writes the pending entries as one transaction, then the next batch, until none is pending.
    private func writeNextBatch() {
        let batch = state.withLock { state -> [Entry] in
            let batch = Array(state.pending.prefix(Self.maximumBatch))
            state.pending.removeFirst(batch.count)
            if batch.isEmpty { state.writing = false }
            return batch
        }
        guard !batch.isEmpty else { return }
        writer.asyncWriteWithoutTransaction { db in
            var results: [Result<@Sendable () -> Void, any Error>] = []
            results.reserveCapacity(batch.count)
            do {
                try db.inTransaction {
                    for entry in batch {
                        var succeed: (@Sendable () -> Void)?
                        do {
                            try db.inSavepoint {
                                succeed = try entry.write(db)
                                return .commit
                            }
                            results.append(.success(succeed!))
                        } catch {
                            results.append(.failure(error))
                        }
                    }
                    return .commit
                }
            } catch {
                results = batch.map { _ in .failure(error) }
            }
            for (entry, result) in zip(batch, results) {
                switch result {
                case .success(let succeed): succeed()
                case .failure(let error): entry.fail(error)
                }
            }
            self.writeNextBatch()
        }
    }
}
