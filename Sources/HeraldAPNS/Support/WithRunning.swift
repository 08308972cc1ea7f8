/// Runs `run` in a child task for the duration of `body`, then calls `shutdown` (which must make `run` return) and
/// waits for it, also when `body` throws: the clients' `withClient` helpers.
func withRunning<Result: Sendable>(
    _ run: @escaping @Sendable () async -> Void, shutdown: () async -> Void, _ body: () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await run() }
        do {
            let result = try await body()
            await shutdown()
            try await group.waitForAll()
            return result
        } catch {
            await shutdown()
            try? await group.waitForAll()
            throw error
        }
    }
}
