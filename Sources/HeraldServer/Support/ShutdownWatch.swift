import HeraldAPNS
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// Names the services a graceful shutdown still waits for.
///
/// A service group stops its services one after the other, each once the one after it has ended, so one service that
/// never ends holds the whole stop in silence until a supervisor kills the process. The watch logs, at `notice`, every
/// `interval` from the shutdown's start until the application ends, which services have not ended yet, and how many
/// HTTP requests are still being answered (the HTTP server stops first, once every answer is written).
final class ShutdownWatch: Sendable {
    private let running = Mutex<[String: Int]>([:])
    private let requests = Atomic<Int>(0)
    private let interval: Duration
    private let clock: any Clock<Duration>
    private let logger: Logger

    init(interval: Duration, clock: any Clock<Duration>, logger: Logger) {
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    /// The service, counted as running under `name` from the start of its run to its end.
    func observe(_ service: any Service, as name: String) -> any Service {
        ObservedService(service: service, name: name, watch: self)
    }

    /// The names of the services whose run has started and not ended, sorted, after the HTTP requests in progress.
    var stillRunning: [String] {
        let requests = requests.load(ordering: .relaxed)
        let services = running.withLock { running in
            running.sorted { $0.key < $1.key }.flatMap { name, count in Array(repeating: name, count: count) }
        }
        return (requests > 0 ? ["\(requests) HTTP request\(requests == 1 ? "" : "s") in progress"] : []) + services
    }

    /// Counts the requests the router answers, from their start to their response, and ends the APNs retries of what
    /// they send when the shutdown begins (``HeraldAPNS/APNSRetryScope``): a caller waiting for its answer must not
    /// hold the stop for a retry window of ten minutes.
    func requestsAtShutdown<Context: RequestContext>() -> some RouterMiddleware<Context> {
        RequestsAtShutdown(watch: self)
    }

    private struct RequestsAtShutdown<Context: RequestContext>: RouterMiddleware {
        let watch: ShutdownWatch

        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
            async throws -> Response
        {
            watch.requests.add(1, ordering: .relaxed)
            defer { watch.requests.subtract(1, ordering: .relaxed) }
            return try await APNSRetryScope.endingAtGracefulShutdown { try await next(request, context) }
        }
    }

    /// Runs `body` (the service group), and from a graceful shutdown's start until `body` ends, reports every
    /// `interval` the services that have not ended.
    func reporting(while body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await body() }
            group.addTask { await self.reportWhileStopping() }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    private func reportWhileStopping() async {
        guard (try? await gracefulShutdown()) != nil else { return }
        var waited = Duration.zero
        while (try? await clock.sleep(for: interval)) != nil {
            waited += interval
            let names = stillRunning
            guard !names.isEmpty else { continue }
            logger.notice(
                "Still stopping \(waited.components.seconds) s after the shutdown began: waiting for \(names.joined(separator: ", "))")
        }
    }

    fileprivate func started(_ name: String) {
        running.withLock { $0[name, default: 0] += 1 }
    }

    fileprivate func ended(_ name: String) {
        running.withLock { running in
            running[name, default: 1] -= 1
            if running[name] == 0 { running.removeValue(forKey: name) }
        }
    }
}

private struct ObservedService: Service {
    let service: any Service
    let name: String
    let watch: ShutdownWatch

    func run() async throws {
        watch.started(name)
        defer { watch.ended(name) }
        try await service.run()
    }
}
