// A stand-in for the parts of Apple's ActivityKit that Herald's Apple glue uses, for compiling it on Linux
// (docs/apple-glue.md). Written from Apple's documented declarations (the iOS 18 SDK). `Activity` is not declared
// Sendable here: the glue must not depend on whether the SDK in use declares it so. The parts marked "Stand-in only"
// are not Apple's API: `ActivityCenter` plays the system, starting and ending activities and handing out tokens.
public import Foundation
import Synchronization

@available(iOS 16.1, *)
public protocol ActivityAttributes: Decodable, Encodable {
    associatedtype ContentState: Decodable, Encodable, Hashable
}

@available(iOS 16.1, *)
public enum ActivityState: Equatable, Hashable, Sendable {
    case active
    case ended
    case dismissed
    @available(iOS 16.2, *)
    case stale
}

@available(iOS 16.1, *)
public final class Activity<Attributes: ActivityAttributes>: Identifiable {
    public let id: String
    public let attributes: Attributes
    private let record: ActivityCenter.Record

    fileprivate init(id: String, attributes: Attributes, record: ActivityCenter.Record) {
        self.id = id
        self.attributes = attributes
        self.record = record
    }

    public var activityState: ActivityState { record.state }

    /// The activity's update tokens, the current one first.
    public var pushTokenUpdates: PushTokenUpdates { PushTokenUpdates(stream: record.tokens()) }

    public typealias PushTokenUpdates = ActivityKitUpdates<Data>
    public typealias ActivityStateUpdates = ActivityKitUpdates<ActivityState>
    @available(iOS 17.2, *)
    public typealias PushToStartTokenUpdates = ActivityKitUpdates<Data>

    /// The activity's states, from its next change.
    public var activityStateUpdates: ActivityStateUpdates { ActivityStateUpdates(stream: record.states()) }

    /// The activities of this type running now.
    public static var activities: [Activity<Attributes>] { ActivityCenter.shared.activities(of: Attributes.self) }

    /// The activities of this type started from now on, in the app or by a push.
    public static var activityUpdates: ActivityUpdates {
        ActivityUpdates(stream: ActivityCenter.shared.starts(of: Attributes.self))
    }

    /// The push-to-start tokens of this type, the current one first.
    @available(iOS 17.2, *)
    public static var pushToStartTokenUpdates: PushToStartTokenUpdates {
        PushToStartTokenUpdates(stream: ActivityCenter.shared.pushToStartTokens(of: Attributes.self))
    }

    public struct ActivityUpdates: AsyncSequence {
        public typealias Element = Activity<Attributes>
        let stream: AsyncStream<ActivityCenter.Started>

        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: AsyncStream<ActivityCenter.Started>.Iterator
            public mutating func next() async -> Activity<Attributes>? {
                guard let started = await base.next() else { return nil }
                return Activity(id: started.record.id, attributes: started.attributes as! Attributes, record: started.record)
            }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }
    }
}

// MARK: Stand-in only

/// The shape of ActivityKit's sequences of tokens and states (`Activity.PushTokenUpdates`, …), which the SDK declares
/// as separate nested types of this one shape.
public struct ActivityKitUpdates<Element>: AsyncSequence {
    let stream: AsyncStream<Element>

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<Element>.Iterator
        public mutating func next() async -> Element? { await base.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }
}

/// Plays the system for tests: starts and ends activities, hands out push-to-start and update tokens.
public final class ActivityCenter: Sendable {
    public static let shared = ActivityCenter()

    /// One activity as the system keeps it: its state and tokens, and who observes them.
    final class Record: Sendable {
        let id: String
        let type: ObjectIdentifier
        private let state_ = Mutex<(state: ActivityState, token: Data?, tokenObservers: [AsyncStream<Data>.Continuation], stateObservers: [AsyncStream<ActivityState>.Continuation])>((.active, nil, [], []))

        init(id: String, type: ObjectIdentifier) {
            self.id = id
            self.type = type
        }

        var state: ActivityState { state_.withLock { $0.state } }

        func tokens() -> AsyncStream<Data> {
            let (stream, continuation) = AsyncStream<Data>.makeStream()
            state_.withLock { record in
                if let token = record.token { continuation.yield(token) }
                if record.state == .active { record.tokenObservers.append(continuation) } else { continuation.finish() }
            }
            return stream
        }

        func states() -> AsyncStream<ActivityState> {
            let (stream, continuation) = AsyncStream<ActivityState>.makeStream()
            state_.withLock { record in
                if record.state == .active { record.stateObservers.append(continuation) } else {
                    continuation.yield(record.state)
                    continuation.finish()
                }
            }
            return stream
        }

        func issue(_ token: Data) {
            state_.withLock { record in
                record.token = token
                for observer in record.tokenObservers { observer.yield(token) }
            }
        }

        func end(_ state: ActivityState) {
            state_.withLock { record in
                record.state = state
                for observer in record.stateObservers {
                    observer.yield(state)
                    observer.finish()
                }
                for observer in record.tokenObservers { observer.finish() }
                record.stateObservers = []
                record.tokenObservers = []
            }
        }
    }

    /// A start, for `activityUpdates`: the attributes travel as `any Sendable` and are cast back by the typed side.
    public struct Started: Sendable {
        let record: Record
        let attributes: any Sendable
    }

    private struct Types {
        var running: [ObjectIdentifier: [(record: Record, attributes: any Sendable)]] = [:]
        var startObservers: [ObjectIdentifier: [AsyncStream<Started>.Continuation]] = [:]
        var pushToStartTokens: [ObjectIdentifier: Data] = [:]
        var pushToStartObservers: [ObjectIdentifier: [AsyncStream<Data>.Continuation]] = [:]
    }

    private let types = Mutex(Types())
    /// The person's settings, and who observes them (``ActivityAuthorizationInfo``).
    let authorizationState = Mutex<(current: Authorization, observers: [@Sendable (Authorization, Authorization) -> Void], finishers: [@Sendable () -> Void])>(
        (Authorization(), [], []))
    /// Yields whenever an observer of starts subscribes: tests wait on it rather than sleep.
    private let subscriptions = AsyncStream<Void>.makeStream()

    func activities<Attributes: ActivityAttributes>(of type: Attributes.Type) -> [Activity<Attributes>] {
        types.withLock { $0.running[ObjectIdentifier(type)] ?? [] }.map {
            Activity(id: $0.record.id, attributes: $0.attributes as! Attributes, record: $0.record)
        }
    }

    func starts<Attributes: ActivityAttributes>(of type: Attributes.Type) -> AsyncStream<Started> {
        let (stream, continuation) = AsyncStream<Started>.makeStream()
        types.withLock { $0.startObservers[ObjectIdentifier(type), default: []].append(continuation) }
        subscriptions.continuation.yield()
        return stream
    }

    func pushToStartTokens<Attributes: ActivityAttributes>(of type: Attributes.Type) -> AsyncStream<Data> {
        let (stream, continuation) = AsyncStream<Data>.makeStream()
        types.withLock { types in
            if let token = types.pushToStartTokens[ObjectIdentifier(type)] { continuation.yield(token) }
            types.pushToStartObservers[ObjectIdentifier(type), default: []].append(continuation)
        }
        return stream
    }

    /// Starts an activity (as a push-to-start or the app does), and reports it to `activityUpdates`' observers.
    public func start<Attributes: ActivityAttributes & Sendable>(_ attributes: Attributes, id: String) {
        let record = Record(id: id, type: ObjectIdentifier(Attributes.self))
        types.withLock { types in
            types.running[record.type, default: []].append((record, attributes))
            for observer in types.startObservers[record.type] ?? [] {
                observer.yield(Started(record: record, attributes: attributes))
            }
        }
    }

    /// Hands an activity a new update token.
    public func issueUpdateToken(_ token: Data, toActivity id: String) {
        record(id)?.issue(token)
    }

    /// Ends an activity (`.ended` or `.dismissed`): its observers see the state, and its token sequence finishes.
    public func end(activity id: String, as state: ActivityState = .ended) {
        guard let record = record(id) else { return }
        types.withLock { types in types.running[record.type]?.removeAll { $0.record.id == id } }
        record.end(state)
    }

    /// Hands out a new push-to-start token for a type.
    public func issuePushToStartToken<Attributes: ActivityAttributes>(_ token: Data, for type: Attributes.Type) {
        types.withLock { types in
            types.pushToStartTokens[ObjectIdentifier(type)] = token
            for observer in types.pushToStartObservers[ObjectIdentifier(type)] ?? [] { observer.yield(token) }
        }
    }

    /// Returns once something observes the starts of activities of `type` (`Activity.activityUpdates`).
    public func waitForStartObserver<Attributes: ActivityAttributes>(of type: Attributes.Type) async {
        var iterator = subscriptions.stream.makeAsyncIterator()
        while types.withLock({ ($0.startObservers[ObjectIdentifier(type)] ?? []).isEmpty }) {
            guard await iterator.next() != nil else { return }
        }
    }

    /// Ends every activity and forgets every token: a new launch.
    public func reset() {
        let records = types.withLock { types in
            defer { types = Types() }
            for observers in types.startObservers.values { for observer in observers { observer.finish() } }
            for observers in types.pushToStartObservers.values { for observer in observers { observer.finish() } }
            return types.running.values.joined().map(\.record)
        }
        for record in records { record.end(.dismissed) }
        let finishers = authorizationState.withLock { state in
            defer { state = (Authorization(), [], []) }
            return state.finishers
        }
        for finish in finishers { finish() }
    }

    private func record(_ id: String) -> Record? {
        types.withLock { types in types.running.values.joined().first { $0.record.id == id }?.record }
    }
}

/// What the person allows: `ActivityAuthorizationInfo` as ActivityKit declares it (iOS 16.1+; frequent pushes 16.2+).
@available(iOS 16.1, *)
public final class ActivityAuthorizationInfo: Sendable {
    public typealias ActivityEnablementUpdates = ActivityKitUpdates<Bool>
    @available(iOS 16.2, *)
    public typealias FrequentPushEnablementUpdates = ActivityKitUpdates<Bool>

    public init() {}

    /// Whether the person allows the app's Live Activities (Settings).
    public var areActivitiesEnabled: Bool { ActivityCenter.shared.authorization.activitiesEnabled }

    /// Whether the person allows frequent updates of the app's Live Activities.
    @available(iOS 16.2, *)
    public var frequentPushesEnabled: Bool { ActivityCenter.shared.authorization.frequentPushesEnabled }

    /// Each change of ``areActivitiesEnabled`` (its new value).
    public var activityEnablementUpdates: ActivityEnablementUpdates {
        ActivityKitUpdates(stream: ActivityCenter.shared.authorizationChanges { $0.activitiesEnabled })
    }

    /// Each change of ``frequentPushesEnabled``.
    @available(iOS 16.2, *)
    public var frequentPushEnablementUpdates: FrequentPushEnablementUpdates {
        ActivityKitUpdates(stream: ActivityCenter.shared.authorizationChanges { $0.frequentPushesEnabled })
    }
}

extension ActivityCenter {
    /// The person's choices in Settings.
    public struct Authorization: Sendable, Hashable {
        public var activitiesEnabled = true
        public var frequentPushesEnabled = true

        public init(activitiesEnabled: Bool = true, frequentPushesEnabled: Bool = true) {
            self.activitiesEnabled = activitiesEnabled
            self.frequentPushesEnabled = frequentPushesEnabled
        }
    }

    var authorization: Authorization { authorizationState.withLock { $0.current } }

    func authorizationChanges(_ value: @escaping @Sendable (Authorization) -> Bool) -> AsyncStream<Bool> {
        let (stream, continuation) = AsyncStream<Bool>.makeStream()
        authorizationState.withLock { state in
            state.observers.append { before, after in
                if value(before) != value(after) { continuation.yield(value(after)) }
            }
            state.finishers.append { continuation.finish() }
        }
        return stream
    }

    /// The person changes a setting: observers of the setting that changed see its new value.
    public func setAuthorization(_ authorization: Authorization) {
        authorizationState.withLock { state in
            let before = state.current
            state.current = authorization
            guard before != authorization else { return }
            for observer in state.observers { observer(before, authorization) }
        }
    }
}
