/// Runs `body`, then awaits `cleanup`, whether `body` returned or threw, and returns or rethrows what `body` did.
///
/// For the cleanup a test would put in `defer { Task { await … } }`: nothing awaits that task, so the test ends (and
/// the next one starts) while the cleanup still runs, and a cleanup that hangs or crashes is seen by nobody.
public func withCleanup<T>(
    isolation: isolated (any Actor)? = #isolation,
    _ cleanup: () async -> Void,
    _ body: () async throws -> T
) async throws -> T {
    let result: Result<T, any Error>
    do {
        result = .success(try await body())
    } catch {
        result = .failure(error)
    }
    await cleanup()
    return try result.get()
}
