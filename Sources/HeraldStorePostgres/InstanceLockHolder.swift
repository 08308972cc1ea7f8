import HeraldCore
import Logging
import Synchronization

/// Holds an instance's advisory lock (``PostgresStore/withInstanceLock(_:_:)``) in a task of its own, and takes it
/// again when its connection is lost while the process lives: until it has it again, another process started with the
/// same instance id could take it and put back the sends this one is running, and each would send them.
final class InstanceLockHolder: Sendable {
    private struct State {
        var held = false
        var task: Task<Void, Never>?
    }

    private let state = Mutex(State())
    private let instance: String
    private let logger: Logger
    /// How long the holder waits between tries once the lock was lost.
    static let retakeInterval: Duration = .seconds(1)

    init(instance: String, logger: Logger) {
        self.instance = instance
        self.logger = logger
    }

    /// Whether the lock is held on a live connection.
    var isHeld: Bool { state.withLock { $0.held } }

    /// Tries to take the lock, unless it is held: `attempt` takes it on a connection, calls its argument with whether
    /// it did, and holds it until cancelled or its connection closes.
    /// - Returns: Whether the lock is held now.
    /// - Throws: A store error when the database could not be asked.
    func take(
        _ attempt: @escaping @Sendable (_ taken: @escaping @Sendable (Bool) -> Void) async throws -> Void
    ) async throws -> Bool {
        let answer = OneShot<Result<Bool, any Error>>()
        let started = state.withLock { state -> Bool in
            guard !state.held, state.task == nil else { return false }
            state.task = Task { await self.hold(attempt, answer: answer) }
            return true
        }
        // Held already, or the holder is taking it again after a loss.
        guard started else { return isHeld }
        return try await answer.waitEvenIfCancelled().get()
    }

    /// Takes the lock and holds it; once held and lost, takes it again every ``retakeInterval`` until cancelled.
    private func hold(
        _ attempt: @escaping @Sendable (_ taken: @escaping @Sendable (Bool) -> Void) async throws -> Void,
        answer: OneShot<Result<Bool, any Error>>
    ) async {
        var retaking = false
        while !Task.isCancelled {
            var failure: (any Error)?
            do {
                try await attempt { taken in
                    if taken { self.state.withLock { $0.held = true } }
                    if !answer.fulfil(.success(taken)), taken {
                        self.logger.notice("Took the lock of instance \(self.instance) again")
                    }
                }
            } catch {
                failure = error
                _ = answer.fulfil(.failure(error))
            }
            let lost = state.withLock { state in
                defer { state.held = false }
                return state.held
            }
            guard !Task.isCancelled else { break }
            if lost {
                retaking = true
                logger.warning(
                    "Lost the lock of instance \(instance) with its database connection: taking it again once the database answers")
            } else if retaking, let failure {
                logger.debug("Could not take the lock of instance \(instance) again yet", metadata: ["error": "\(failure)"])
            }
            // Not taken, or not asked: the caller tries again (the worker at its polls).
            guard retaking else { break }
            try? await Task.sleep(for: Self.retakeInterval)
        }
        state.withLock { $0.task = nil }
    }

    /// Releases the lock (its holder's connection goes back to the pool) and waits for that.
    func release() async {
        let task = state.withLock { $0.task }
        task?.cancel()
        await task?.value
    }
}
