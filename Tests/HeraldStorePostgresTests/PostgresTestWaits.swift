import Logging
import PostgresNIO

/// Waits the PostgreSQL suites share: for a task that might never end, and for PostgreSQL to show a session waiting.
enum PostgresTestWaits {
    /// The task's result, or `nil` when `limit` passes first (the task is then cancelled). Never waits on the task
    /// itself, which a statement postgres-nio never answers could hold forever.
    static func outcome<T: Sendable>(of task: Task<T, any Error>, within limit: Duration) async -> Result<T, any Error>? {
        let (ended, signal) = AsyncStream.makeStream(of: Result<T, any Error>?.self)
        let watcher = Task { signal.yield(await task.result) }
        let timer = Task {
            try await Task.sleep(for: limit)
            signal.yield(nil)
        }
        defer {
            timer.cancel()
            watcher.cancel()
        }
        for await value in ended {
            if value == nil { task.cancel() }
            return value
        }
        return nil
    }

    /// Returns once `query`, a count, finds a row (a session waiting for a lock, say), asking every 20 ms.
    static func until(_ client: PostgresClient, counts query: PostgresQuery) async throws {
        while true {
            let rows = try await client.query(query, logger: Logger(label: "test"))
            for try await count in rows.decode(Int.self) where count > 0 { return }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
