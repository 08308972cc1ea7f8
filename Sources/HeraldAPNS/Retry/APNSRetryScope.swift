import ServiceLifecycle

/// Whether the retries of the notifications a task sends end when a graceful shutdown begins.
///
/// By default a notification APNs asked to retry is sent again until its retry window runs out (ten minutes), whatever
/// else happens: a background send's worker decides itself what a shutdown does to what it has in flight. A caller
/// that waits for the answer (an HTTP request) cannot wait that long once the process is stopping: inside
/// ``endingAtGracefulShutdown(_:)``, a wait for a retry ends as soon as the graceful shutdown of the service the task
/// runs in begins, and the notification ends `failed` with ``APNSClientError/Code/shutdown``, saying what its attempts
/// met. An attempt already written still gets APNs's answer.
public enum APNSRetryScope {
    @TaskLocal static var endsAtGracefulShutdown = false

    /// Runs `body` with the retries of what it sends ending when a graceful shutdown begins.
    public static func endingAtGracefulShutdown<Result: Sendable>(
        _ body: () async throws -> Result, isolation: isolated (any Actor)? = #isolation
    ) async rethrows -> Result {
        try await $endsAtGracefulShutdown.withValue(true, operation: body, isolation: isolation)
    }
}

/// How the wait before a retry ended.
enum RetryPause {
    /// The backoff passed: send again.
    case elapsed
    /// The task was cancelled.
    case cancelled
    /// A graceful shutdown began, in an ``APNSRetryScope/endingAtGracefulShutdown(_:isolation:)`` scope.
    case shuttingDown
}
