import DequeModule
import Foundation
import HeraldCore
import NIOCore
import NIOSSL
import Synchronization

/// The connections to one destination: hands out stream slots within each connection's `MAX_CONCURRENT_STREAMS`,
/// opens connections up to the configured maximum when all are full, and makes callers wait (back-pressure)
/// when every slot is taken.
///
/// Connections are opened by ``run()`` (structured: every connection task is a child of the pool's task group),
/// on demand from ``lease()``.
final class ConnectionPool: Sendable {
    struct Lease: Sendable {
        let connection: APNSConnection
    }

    private enum SlotState {
        case connecting
        case ready(APNSConnection)
        /// GOAWAY received or closed: finishes what it has, takes nothing new.
        case draining(APNSConnection)
    }

    private struct Slot {
        var state: SlotState
        var streamLimit = 1
        var inFlight = 0
        var lastUsed = ContinuousClock.now
    }

    private struct Waiter {
        let continuation: CheckedContinuation<Lease, any Error>
    }

    private struct State {
        var slots: [Int: Slot] = [:]
        var waiters: [Int: Waiter] = [:]
        var waiterOrder = Deque<Int>()
        var nextID = 0
        var isShutDown = false
        var cancelledWaiters: Set<Int> = []
        /// The most streams one connection carried at once: proof that the server's raised limit was used.
        var mostStreamsOnOneConnection = 0
    }

    private let state = Mutex(State())
    private let configuration: APNSClientConfiguration
    private let sslContext: NIOSSLContext
    private let metrics: APNSMetrics
    private let connectRequests: AsyncStream<Int>
    private let connectRequestSink: AsyncStream<Int>.Continuation

    init(configuration: APNSClientConfiguration, sslContext: NIOSSLContext, metrics: APNSMetrics) {
        self.configuration = configuration
        self.sslContext = sslContext
        self.metrics = metrics
        (connectRequests, connectRequestSink) = AsyncStream.makeStream(of: Int.self)
    }

    // MARK: Leasing

    /// A stream slot on a connection with room, waiting for one if every connection is full.
    func lease() async throws -> Lease {
        let first: Result<Lease, any Error>? = state.withLock { state in
            if state.isShutDown { return .failure(APNSClientError(.shutdown, "The APNs client is shut down.")) }
            return takeSlot(&state).map { .success($0) }
        }
        if let first { return try first.get() }
        let waiterID = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let immediate: Result<Lease, any Error>? = state.withLock { state in
                    if state.isShutDown { return .failure(APNSClientError(.shutdown, "The APNs client is shut down.")) }
                    if state.cancelledWaiters.remove(waiterID) != nil { return .failure(CancellationError()) }
                    // A slot may have freed up between the first look and now.
                    if let lease = takeSlot(&state) { return .success(lease) }
                    state.waiters[waiterID] = Waiter(continuation: continuation)
                    state.waiterOrder.append(waiterID)
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLock { state in
                guard let waiter = state.waiters.removeValue(forKey: waiterID) else {
                    // Not registered yet: leave a note so registration fails instead of waiting forever.
                    state.cancelledWaiters.insert(waiterID)
                    return nil
                }
                return waiter
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// A stream slot right now if one is free, without waiting; nil when every connection is full (one more may be
    /// opening) or the pool is shut down.
    func tryLease() -> Lease? {
        state.withLock { state in state.isShutDown ? nil : takeSlot(&state) }
    }

    /// Takes a slot on the least busy ready connection with room. Asks for one more connection (if the maximum
    /// allows and none is being opened) when every connection is full, returning `nil`, or when every connection
    /// carries ``APNSClientConfiguration/streamsPerConnectionBeforeSpreading`` streams, still returning the slot.
    private func takeSlot(_ state: inout State) -> Lease? {
        // By index and field: copying whole slots out of the dictionary costs a retain and release per connection
        // on every lease.
        var best: (index: Dictionary<Int, Slot>.Index, inFlight: Int)?
        var connecting = false
        var usable = 0
        for index in state.slots.indices {
            switch state.slots.values[index].state {
            case .connecting:
                connecting = true
                usable += 1
            case .ready:
                usable += 1
                let inFlight = state.slots.values[index].inFlight
                if inFlight < state.slots.values[index].streamLimit, best == nil || inFlight < best!.inFlight { best = (index, inFlight) }
            case .draining:
                break
            }
        }
        let mayOpen = !connecting && usable < configuration.maximumConnections && !state.isShutDown
        if let best, case .ready(let connection) = state.slots.values[best.index].state {
            state.slots.values[best.index].inFlight += 1
            state.mostStreamsOnOneConnection = max(state.mostStreamsOnOneConnection, best.inFlight + 1)
            state.slots.values[best.index].lastUsed = .now
            if mayOpen, best.inFlight + 1 >= configuration.streamsPerConnectionBeforeSpreading { openConnection(&state) }
            return Lease(connection: connection)
        }
        if mayOpen { openConnection(&state) }
        return nil
    }

    private func openConnection(_ state: inout State) {
        let id = state.nextID
        state.nextID += 1
        state.slots[id] = Slot(state: .connecting)
        connectRequestSink.yield(id)
    }

    /// Returns a slot. Hands it straight to the longest waiter when the connection still takes streams.
    func release(_ lease: Lease) {
        var closeDrained = false
        let resumed: [(CheckedContinuation<Lease, any Error>, Lease)] = state.withLock { state in
            guard let index = state.slots.index(forKey: lease.connection.id) else { return [] }
            state.slots.values[index].inFlight -= 1
            if case .draining = state.slots.values[index].state, state.slots.values[index].inFlight == 0 { closeDrained = true }
            return state.waiterOrder.isEmpty ? [] : wakeWaiters(&state)
        }
        for (continuation, lease) in resumed { continuation.resume(returning: lease) }
        if closeDrained { lease.connection.channel.close(promise: nil) }
    }

    /// Marks a connection as unusable for new streams (after `Shutdown`, `TooManyProviderTokenUpdates`…).
    /// The connection closes once its last stream is released.
    func retire(_ connection: APNSConnection) {
        let idle: Bool = state.withLock { state in
            guard case .ready(let ready)? = state.slots[connection.id]?.state, ready === connection else { return false }
            state.slots[connection.id]!.state = .draining(connection)
            return state.slots[connection.id]!.inFlight == 0
        }
        if idle { connection.channel.close(promise: nil) }
    }

    private func wakeWaiters(_ state: inout State) -> [(CheckedContinuation<Lease, any Error>, Lease)] {
        var resumed: [(CheckedContinuation<Lease, any Error>, Lease)] = []
        while let id = state.waiterOrder.first {
            // Cancelled waiters leave their id behind; skip it.
            guard state.waiters[id] != nil else {
                state.waiterOrder.removeFirst()
                continue
            }
            guard let lease = takeSlot(&state) else { break }
            state.waiterOrder.removeFirst()
            resumed.append((state.waiters.removeValue(forKey: id)!.continuation, lease))
        }
        return resumed
    }

    // MARK: Connections

    /// Opens connections on demand until the pool shuts down; closes idle ones.
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.closeIdleConnections() }
            for await id in connectRequests {
                group.addTask { await self.open(id) }
            }
            group.cancelAll()
        }
    }

    private func open(_ id: Int) async {
        let events = APNSConnectionHandler.Events(
            streamLimitChanged: { [weak self] limit in self?.streamLimitChanged(id, limit) },
            goingAway: { [weak self] reason in self?.goingAway(id, reason: reason) },
            streamsIdle: { [weak self] in self?.touch(id) },
            closed: { [weak self] in self?.connectionClosed(id) })
        do {
            let connection = try await APNSConnection.connect(
                id: id, destination: configuration.destination, sslContext: sslContext, configuration: configuration, events: events)
            metrics.connectionOpened()
            let resumed: [(CheckedContinuation<Lease, any Error>, Lease)]? = state.withLock { state in
                guard !state.isShutDown, state.slots[id] != nil else { return nil }
                state.slots[id]!.state = .ready(connection)
                return wakeWaiters(&state)
            }
            guard let resumed else {
                await connection.close()
                metrics.connectionClosed()
                return
            }
            for (continuation, lease) in resumed { continuation.resume(returning: lease) }
            try? await connection.channel.closeFuture.get()
            metrics.connectionClosed()
        } catch {
            let failure = (error as? APNSClientError) ?? APNSClientError(.connectFailed, "\(error)")
            // Waiters fail with a retryable error: their send's retry policy backs off and asks again, which is
            // the reconnect backoff.
            let failed: [CheckedContinuation<Lease, any Error>] = state.withLock { state in
                state.slots[id] = nil
                let hasOtherConnections = state.slots.values.contains { if case .ready = $0.state { true } else { false } }
                guard !hasOtherConnections else { return [] }
                let waiting = state.waiterOrder.compactMap { state.waiters.removeValue(forKey: $0)?.continuation }
                state.waiterOrder.removeAll()
                return waiting
            }
            for continuation in failed { continuation.resume(throwing: failure) }
        }
    }

    private func streamLimitChanged(_ id: Int, _ limit: Int) {
        let resumed: [(CheckedContinuation<Lease, any Error>, Lease)] = state.withLock { state in
            guard state.slots[id] != nil else { return [] }
            state.slots[id]!.streamLimit = max(0, limit)
            return wakeWaiters(&state)
        }
        for (continuation, lease) in resumed { continuation.resume(returning: lease) }
    }

    private func goingAway(_ id: Int, reason: String?) {
        metrics.goAway(reason: reason)
        let resumed: [(CheckedContinuation<Lease, any Error>, Lease)] = state.withLock { state in
            guard let slot = state.slots[id], case .ready(let connection) = slot.state else { return [] }
            state.slots[id]!.state = .draining(connection)
            // Waiters need another connection now.
            return wakeWaiters(&state)
        }
        for (continuation, lease) in resumed { continuation.resume(returning: lease) }
    }

    private func touch(_ id: Int) {
        state.withLock { state in state.slots[id]?.lastUsed = .now }
    }

    private func connectionClosed(_ id: Int) {
        let resumed: [(CheckedContinuation<Lease, any Error>, Lease)] = state.withLock { state in
            state.slots[id] = nil
            return wakeWaiters(&state)
        }
        for (continuation, lease) in resumed { continuation.resume(returning: lease) }
    }

    private func closeIdleConnections() async {
        guard let idleTimeout = configuration.idleTimeout else { return }
        let interval = min(idleTimeout, .seconds(30))
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            let idle: [APNSConnection] = state.withLock { state in
                state.slots.values.compactMap { slot in
                    guard case .ready(let connection) = slot.state, slot.inFlight == 0,
                        slot.lastUsed.duration(to: .now) >= idleTimeout
                    else { return nil }
                    return connection
                }
            }
            for connection in idle {
                retire(connection)
                await connection.close()
            }
        }
    }

    /// Stops leasing, fails waiters, and closes every connection (after in-flight streams settle or fail).
    func shutdown() async {
        let (waiting, connections): ([CheckedContinuation<Lease, any Error>], [APNSConnection]) = state.withLock { state in
            state.isShutDown = true
            let waiting = state.waiterOrder.compactMap { state.waiters.removeValue(forKey: $0)?.continuation }
            state.waiterOrder.removeAll()
            let connections = state.slots.values.compactMap { slot -> APNSConnection? in
                switch slot.state {
                case .ready(let connection), .draining(let connection): connection
                case .connecting: nil
                }
            }
            return (waiting, connections)
        }
        connectRequestSink.finish()
        for continuation in waiting { continuation.resume(throwing: APNSClientError(.shutdown, "The APNs client shut down.")) }
        for connection in connections { await connection.close() }
    }

    /// The most streams one connection carried at once so far, for tests.
    var mostStreamsOnOneConnection: Int { state.withLock { $0.mostStreamsOnOneConnection } }

    /// Connections open now, for metrics and tests.
    var connectionCount: Int { state.withLock { $0.slots.count } }
}
