import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A webhook receiver on 127.0.0.1 (a free port) for tests: keeps every request, answers what `answer` says for
/// the request of that index (0-based; it may wait, to hold a delivery in flight), and counts requests and events.
final class WebhookReceiver: Sendable {
    struct Delivery: Sendable {
        let signature: String
        let body: [UInt8]
        let status: Int
        /// The body's events.
        var events: [JSONValue] { (try? JSONValue(parsing: body))?.arrayValue ?? [] }
    }

    /// Requests that arrived.
    let arrived = CountSignal()
    /// Events in the requests answered 2xx.
    let accepted = CountSignal()
    private let answer: @Sendable (Int) async -> Int
    private let state = Mutex<(arrivals: Int, deliveries: [Delivery], acceptedEvents: Int)>((0, [], 0))

    private init(answer: @escaping @Sendable (Int) async -> Int) { self.answer = answer }

    /// Every request answered so far, in the order answered.
    var deliveries: [Delivery] { state.withLock { $0.deliveries } }

    /// The events of the requests answered 2xx, in order.
    var acceptedEvents: [JSONValue] {
        deliveries.filter { (200..<300).contains($0.status) }.flatMap(\.events)
    }

    /// Runs a receiver while `body` runs with its URL.
    static func with(
        answer: @escaping @Sendable (Int) async -> Int = { _ in 200 },
        _ body: @escaping @Sendable (WebhookReceiver, String) async throws -> Void
    ) async throws {
        let receiver = WebhookReceiver(answer: answer)
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            let bytes = Array(try await request.body.collect(upTo: 16 << 20).readableBytesView)
            let index = receiver.state.withLock { state in
                state.arrivals += 1
                return state.arrivals - 1
            }
            receiver.arrived.update(index + 1)
            let status = await receiver.answer(index)
            let delivery = Delivery(
                signature: request.headers[HTTPField.Name("Herald-Signature")!] ?? "", body: bytes, status: status)
            let accepted = receiver.state.withLock { state in
                state.deliveries.append(delivery)
                if (200..<300).contains(status) { state.acceptedEvents += delivery.events.count }
                return state.acceptedEvents
            }
            receiver.accepted.update(accepted)
            return Response(status: HTTPResponse.Status(code: status))
        }
        var logger = Logger(label: "webhook-receiver")
        logger.logLevel = .warning
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { portContinuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(
            configuration: .init(services: [application], gracefulShutdownSignals: [], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { return }
            do {
                try await body(receiver, "http://127.0.0.1:\(port)/hook")
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
