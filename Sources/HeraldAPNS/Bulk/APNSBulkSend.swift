public import HeraldCore

/// How a notification started without a task went on its first attempt: it ended, or the rest of its work (a
/// backoff and more attempts) needs a task. The one answer type of the task-free path, from the client up to the
/// fan-out: each layer maps the result, none wraps it in its own enum.
public enum APNSStarted<Result: Sendable>: Sendable {
    /// Accepted, rejected for good, or failed: the end.
    case finished(Result)
    /// The retry policy wants more: run this in a task for the end.
    case continuing(@Sendable () async -> Result)

    /// The same answer with its result transformed (now, or at the end of the continuation).
    public func map<Other: Sendable>(_ transform: @escaping @Sendable (Result) -> Other) -> APNSStarted<Other> {
        switch self {
        case .finished(let result): .finished(transform(result))
        case .continuing(let rest): .continuing { transform(await rest()) }
        }
    }
}

/// The one bulk loop of Herald's senders: the server's fan-out and `herald send --repeat` (through
/// ``APNSClient/sendAll(_:maximumInFlight:onDelivery:)``) both drive one of these.
///
/// It keeps at most ``permits`` items in flight — an item counts from its start until the caller says it is done with
/// its outcome (``finished(_:)``), which may be later than APNs's answer (the fan-out's permits count a device until its
/// outcome is recorded). The caller may change ``permits`` at any time, also below what is in flight (the fan-out's
/// come from a shared budget that grows and shrinks): nothing in flight is taken back, nothing more starts until
/// what is in flight falls below them.
///
/// An item goes out without a task while the sender has a free stream; only an item that must wait for a stream, or
/// a first attempt that asked for a retry, gets a child task of the caller's group. Every answer — task-free or from a
/// task — comes back through the one `answered` callback with its item, so the caller's loop drains them in batches
/// from its own queue (a ``HeraldCore/BatchQueue``) alongside its other events and calls ``outcome(of:in:)`` on each.
///
/// A value owned by the caller's loop: not shared between tasks. To stop at once, call ``cancelInFlight()`` and cancel
/// the group its tasks run in: every item in flight then answers promptly, those APNs had not answered with
/// ``APNSClientError/Code/cancelled`` (never sent, or its stream reset), so the loop can wait for its in-flight count
/// to reach zero without waiting for APNs. Cancelling the group alone ends the child tasks, but the requests written
/// without a task would hold their streams until APNs answers, with nobody waiting for them.
public struct APNSBulkSend<Item: Sendable, Result: Sendable> {
    /// An answer to hand to ``outcome(of:in:)``: the item it is for and how it went.
    public struct Answer: Sendable {
        public let item: Item
        public let started: APNSStarted<Result>
    }

    /// Starts an item without a task when a stream is free now; calls back once, from any thread, without blocking.
    /// Returns `false` when nothing could start without waiting. The ``APNSCancellation`` is the bulk send's: the
    /// request must carry it (``APNSClient/startSending(_:to:cancellation:answered:)``) so that ``cancelInFlight()``
    /// reaches it.
    public typealias Start = @Sendable (
        Item, APNSCancellation, _ answered: @escaping @Sendable (APNSStarted<Result>) -> Void
    ) -> Bool
    /// Sends an item from a task, waiting for a stream, and returns how it ended.
    public typealias Send = @Sendable (Item) async -> Result

    private let startWithoutTask: Start
    private let sendInTask: Send
    private let answered: @Sendable (Answer) -> Void

    /// The most items in flight; may change at any time, also below ``inFlight``.
    public var permits: Int
    /// Items started whose end the caller has not yet reported with ``finished(_:)``.
    public private(set) var inFlight = 0
    /// What cancels the items started without a task (``cancelInFlight()``).
    public let cancellation = APNSCancellation()

    /// - Parameters:
    ///   - permits: The most items in flight at first.
    ///   - start: Starts an item without a task if it can (``APNSClient/startSending(_:to:cancellation:answered:)``).
    ///   - send: Sends an item from a task (``APNSClient/send(_:to:)-(PreparedNotification,_)``).
    ///   - answered: Where every answer goes, from any thread; it must not block (push it to the caller's queue).
    public init(permits: Int, start: @escaping Start, send: @escaping Send, answered: @escaping @Sendable (Answer) -> Void) {
        self.permits = permits
        self.startWithoutTask = start
        self.sendInTask = send
        self.answered = answered
    }

    /// Whether one more item may start now.
    public var hasPermit: Bool { inFlight < permits }

    /// Starts an item if a permit is free: without a task when a stream is free, else in a child task of `group`.
    /// - Returns: `false`, sending nothing, when every permit is in use.
    @discardableResult
    public mutating func start(_ item: Item, in group: inout ThrowingDiscardingTaskGroup<any Error>) -> Bool {
        guard hasPermit else { return false }
        inFlight += 1
        let answered = answered
        let started = startWithoutTask(item, cancellation) { answered(Answer(item: item, started: $0)) }
        if !started {
            let send = sendInTask
            group.addTask { answered(Answer(item: item, started: .finished(await send(item)))) }
        }
        return true
    }

    /// The end of an answer when it is there; a continuing one gets a child task of `group`, whose end comes back
    /// through `answered` as a finished answer.
    public func outcome(of answer: Answer, in group: inout ThrowingDiscardingTaskGroup<any Error>) -> Result? {
        switch answer.started {
        case .finished(let result):
            return result
        case .continuing(let rest):
            let answered = answered
            let item = answer.item
            group.addTask { answered(Answer(item: item, started: .finished(await rest()))) }
            return nil
        }
    }

    /// Cancels every item started without a task that APNs has not answered: each answers
    /// ``APNSClientError/Code/cancelled`` promptly (never sent, or its stream reset), and any item started afterwards
    /// too. Cancel the group given to ``start(_:in:)`` and ``outcome(of:in:)`` for the items that run in tasks.
    public func cancelInFlight() {
        cancellation.cancel()
    }

    /// The caller is done with `count` outcomes: their permits are free again.
    public mutating func finished(_ count: Int) {
        precondition(count <= inFlight, "finished more items than are in flight")
        inFlight -= count
    }
}

/// One notification of a bulk send through ``APNSClient``, with what the caller wants back with its outcome.
public struct APNSBulkItem<Context: Sendable>: Sendable {
    public var notification: PreparedNotification
    public var token: DeviceToken
    public var context: Context

    public init(_ notification: PreparedNotification, to token: DeviceToken, context: Context) {
        self.notification = notification
        self.token = token
        self.context = context
    }
}

extension APNSClient {
    /// A bulk send through this client: items carry a context of the caller's that comes back with each outcome.
    /// - Parameters:
    ///   - permits: The most notifications in flight at first (see ``APNSBulkSend/permits``).
    ///   - answered: Where every answer goes, from any thread; it must not block.
    public func bulkSend<Context: Sendable>(
        permits: Int, answered: @escaping @Sendable (APNSBulkSend<APNSBulkItem<Context>, APNSDelivery>.Answer) -> Void
    ) -> APNSBulkSend<APNSBulkItem<Context>, APNSDelivery> {
        APNSBulkSend(
            permits: permits,
            start: { item, cancellation, answered in
                self.startSending(item.notification, to: item.token, cancellation: cancellation, answered: answered)
            },
            send: { item in await self.send(item.notification, to: item.token) },
            answered: answered)
    }
}
