import Foundation
import HeraldCore
import Synchronization

/// The emulator's devices, inboxes and counters. Called from event-loop threads, so every operation is a short
/// critical section under one lock; no I/O happens inside it.
final class DeviceRegistry: Sendable {
    struct Key: Hashable {
        let environment: APNSEnvironment
        let token: String
    }

    fileprivate struct Record {
        var device: VirtualDevice
        var inbox: [InboxEntry] = []
        var pending: InboxEntry?
        /// The newest message of each storing channel that arrived while offline, and until when it waits.
        var pendingBroadcasts: [String: (entry: InboxEntry, until: Date)] = [:]
        /// Per Live Activity (`device`, `channel:<id>`): when its priority-10 updates of the last hour arrived, and how
        /// many were over the budget.
        var budget: [String: (recent: [Date], dropped: Int)] = [:]
    }

    private struct State {
        var records: [Key: Record] = [:]
        var startedActivities: [StartedActivity] = []
        var seenAPNSIDs = Set<UInt64>()
        var random: SeededRandomNumberGenerator
        var liveActivityBudget: Int?
    }

    enum Lookup {
        case deliver
        case reject(APNSReason, timestamp: Date?)
    }

    private let state: Mutex<State>
    /// Changed only inside `state`'s lock (``withCounters(_:)``), so a task that sees a count also sees the inbox
    /// entries it counts.
    private let counters = WatchedState(EmulatorCounters(), readyWhen: { _ in true })
    private let mode: EmulatorConfiguration.DeviceMode
    private let inboxMode: EmulatorConfiguration.InboxMode

    init(mode: EmulatorConfiguration.DeviceMode, inbox: EmulatorConfiguration.InboxMode, seed: UInt64, liveActivityBudget: Int? = nil) {
        self.mode = mode
        self.inboxMode = inbox
        state = Mutex(State(random: SeededRandomNumberGenerator(seed: seed ^ 0xD3A1_5EED), liveActivityBudget: liveActivityBudget))
    }

    // MARK: Delivery

    /// Checks the token against the registry (§10 step 5). In permissive mode an unknown token becomes a device
    /// of this environment and topic on first use.
    func admit(token: DeviceToken, environment: APNSEnvironment, topic: String) -> Lookup {
        state.withLock { state in
            let key = Key(environment: environment, token: token.hex)
            if state.records[key] == nil {
                let other = Key(environment: environment.other, token: token.hex)
                if state.records[other] != nil || mode == .strict { return .reject(.badDeviceToken, timestamp: nil) }
                state.records[key] = Record(device: VirtualDevice(token: token, environment: environment, topic: topic, state: .active, isOnline: true))
            }
            let device = state.records[key]!.device
            guard device.topic == topic else { return .reject(.deviceTokenNotForTopic, timestamp: nil) }
            switch device.state {
            case .active: return .deliver
            case .unregistered(let since): return .reject(.unregistered, timestamp: since)
            case .expired: return .reject(.expiredToken, timestamp: nil)
            }
        }
    }

    /// Records an accepted notification: counters always, the inbox unless counting only.
    /// - Parameter budgetedActivity: the Live Activity a priority-10 update counts against (`device`), or `nil`.
    func deliver(_ notification: InboxEntry, to token: DeviceToken, environment: APNSEnvironment, budgetedActivity: String? = nil) {
        withCounters { state, counters in
            if Self.isDuplicate(notification.apnsID, in: &state.seenAPNSIDs) { counters.duplicateAPNSIDs += 1 }
            counters.accepted += 1
            guard case .recording(let capacity) = inboxMode else { return }
            let key = Key(environment: environment, token: token.hex)
            guard let record = state.records[key] else { return }
            if record.device.isOnline {
                guard Self.withinBudget(budgetedActivity, of: key, at: notification.receivedAt, in: &state, counters: &counters) else { return }
                state.records[key]!.append(notification, capacity: capacity, dropped: &counters.droppedFromInbox)
                Self.arrived(notification, on: key, in: &state, counters: &counters)
            } else if notification.expiration != 0 {
                // Offline: APNs stores one notification per app and device; the newest replaces the older.
                state.records[key]!.pending = notification
            }
        }
    }

    /// Records an accepted broadcast: each online subscriber gets it now (within its budget for the channel's
    /// activity); an offline one keeps it as the channel's stored message until `storeUntil` when the channel stores
    /// one (`nil`: it does not, or the broadcast's expiration is 0).
    func deliverBroadcast(_ entry: InboxEntry, to tokens: some Sequence<String>, environment: APNSEnvironment, storeUntil: Date?, budgeted: Bool) {
        withCounters { state, counters in
            counters.broadcasts += 1
            guard case .recording(let capacity) = inboxMode, let channelID = entry.channelID else { return }
            for token in tokens {
                let key = Key(environment: environment, token: token)
                guard let record = state.records[key], record.device.state == .active else { continue }
                if record.device.isOnline {
                    guard Self.withinBudget(
                        budgeted ? "channel:" + channelID : nil, of: key, at: entry.receivedAt, in: &state, counters: &counters)
                    else { continue }
                    state.records[key]!.append(entry, capacity: capacity, dropped: &counters.droppedFromInbox)
                    counters.broadcastDeliveries += 1
                } else if let storeUntil {
                    state.records[key]!.pendingBroadcasts[channelID] = (entry, storeUntil)
                }
            }
        }
    }

    /// A notification reached the device: a push-to-start starts its activity there, unless the device ignores starts.
    private static func arrived(_ entry: InboxEntry, on key: Key, in state: inout State, counters: inout EmulatorCounters) {
        guard entry.startsActivity, let device = state.records[key]?.device else { return }
        guard device.startsActivities else {
            counters.pushToStartsIgnored += 1
            return
        }
        counters.activitiesStarted += 1
        let attributesType = (try? JSONValue(parsing: entry.payload))?["aps"]?["attributes-type"]?.stringValue
        state.startedActivities.append(
            StartedActivity(
                token: device.token, environment: device.environment, apnsID: entry.apnsID,
                attributesType: attributesType, startedAt: entry.receivedAt))
    }

    /// The activities push-to-starts started, in the order they started.
    func startedActivities() -> [StartedActivity] { state.withLock { $0.startedActivities } }

    func setStartsActivities(_ token: DeviceToken, _ starts: Bool) throws(EmulatorError) {
        try mutate(token) { $0.device.startsActivities = starts }
    }

    func countChannelRequest() { withCounters { $1.channelRequests += 1 } }

    /// Whether one more priority-10 update of `activity` fits the device's hourly budget; counts it either way.
    private static func withinBudget(
        _ activity: String?, of key: Key, at now: Date, in state: inout State, counters: inout EmulatorCounters
    ) -> Bool {
        guard let activity, let limit = state.liveActivityBudget else { return true }
        var use = state.records[key]!.budget[activity] ?? ([], 0)
        use.recent.removeAll { now.timeIntervalSince($0) >= 3600 }
        let fits = use.recent.count < limit
        if fits {
            use.recent.append(now)
        } else {
            use.dropped += 1
            counters.liveActivityBudgetDropped += 1
        }
        state.records[key]!.budget[activity] = use
        return fits
    }

    /// Priority-10 Live Activity updates per activity and hour; `nil` for no budget.
    var liveActivityBudget: Int? {
        get { state.withLock { $0.liveActivityBudget } }
        set { state.withLock { $0.liveActivityBudget = newValue } }
    }

    /// Every activity that received a budgeted update: its use in the hour before `now`, and its drops.
    func budgetUse(now: Date) -> [LiveActivityBudgetUse] {
        state.withLock { state in
            state.records.values.flatMap { record in
                record.budget.map { activity, use in
                    LiveActivityBudgetUse(
                        token: record.device.token, activity: activity,
                        usedThisHour: use.recent.filter { now.timeIntervalSince($0) < 3600 }.count, dropped: use.dropped)
                }
            }.sorted { ($0.token.hex, $0.activity) < ($1.token.hex, $1.activity) }
        }
    }

    func countRejection(_ reason: APNSReason) {
        withCounters { $1.rejected[reason.rawValue, default: 0] += 1 }
    }

    func countFault(_ name: String) {
        withCounters { $1.faults[name, default: 0] += 1 }
    }

    func countClientReset() {
        withCounters { $1.clientResets += 1 }
    }
    func countConnection() { withCounters { $1.connections += 1 } }
    func countGoAway() { withCounters { $1.goAways += 1 } }

    private static func isDuplicate(_ apnsID: String, in seen: inout Set<UInt64>) -> Bool {
        // An 8-byte fingerprint keeps a million ids in a few MB; collisions are ~1e-8 at that count.
        var hasher = Hasher()
        hasher.combine(apnsID.lowercased())
        let fingerprint = UInt64(bitPattern: Int64(hasher.finalize()))
        return !seen.insert(fingerprint).inserted
    }

    // MARK: Administration

    func create(token: DeviceToken?, byteCount: Int, environment: APNSEnvironment, topic: String) throws(EmulatorError) -> VirtualDevice {
        try state.withLock { state throws(EmulatorError) in
            let resolved: DeviceToken
            if let token {
                resolved = token
            } else {
                let bytes = (0..<byteCount).map { _ in UInt8.random(in: 0...255, using: &state.random) }
                do throws(DeviceTokenError) {
                    resolved = try DeviceToken(data: bytes)
                } catch {
                    throw EmulatorError(error.description)
                }
            }
            let key = Key(environment: environment, token: resolved.hex)
            if let existing = state.records[Key(environment: environment.other, token: resolved.hex)] {
                throw EmulatorError("Token \(resolved.redacted) already exists in \(existing.device.environment): a token belongs to one environment.")
            }
            let device = VirtualDevice(token: resolved, environment: environment, topic: topic, state: .active, isOnline: true)
            state.records[key] = Record(device: device)
            return device
        }
    }

    func devices() -> [VirtualDevice] {
        state.withLock { $0.records.values.map(\.device).sorted { $0.token < $1.token } }
    }

    func device(_ token: DeviceToken) -> VirtualDevice? {
        state.withLock { state in findKey(token, in: state).flatMap { state.records[$0]?.device } }
    }

    func remove(_ token: DeviceToken) -> Bool {
        state.withLock { state in
            guard let key = findKey(token, in: state) else { return false }
            state.records[key] = nil
            return true
        }
    }

    func setState(_ token: DeviceToken, _ newState: VirtualDevice.State) throws(EmulatorError) {
        try mutate(token) { $0.device.state = newState }
    }

    /// Takes a device offline or back online; coming online delivers the stored notification unless it expired.
    func setOnline(_ token: DeviceToken, _ online: Bool, now: Date) throws(EmulatorError) {
        let capacity: Int
        if case .recording(let value) = inboxMode { capacity = value } else { capacity = 0 }
        let found: Result<Void, EmulatorError> = withCounters { state, counters in
            guard let key = findKey(token, in: state) else { return .failure(Self.unknown(token)) }
            state.records[key]!.device.isOnline = online
            if online, let pending = state.records[key]!.pending {
                state.records[key]!.pending = nil
                let expired = pending.expiration.map { $0 != 0 && Double($0) < now.timeIntervalSince1970 } ?? false
                if !expired, capacity > 0 {
                    state.records[key]!.append(pending, capacity: capacity, dropped: &counters.droppedFromInbox)
                    Self.arrived(pending, on: key, in: &state, counters: &counters)
                }
            }
            // Each storing channel's newest message arrives if it is still within its 8 hours (or its expiration).
            if online {
                let stored = state.records[key]!.pendingBroadcasts.values.sorted { $0.entry.receivedAt < $1.entry.receivedAt }
                state.records[key]!.pendingBroadcasts = [:]
                for (entry, until) in stored where until >= now && capacity > 0 {
                    state.records[key]!.append(entry, capacity: capacity, dropped: &counters.droppedFromInbox)
                    counters.broadcastDeliveries += 1
                }
            }
            return .success(())
        }
        try found.get()
    }

    func inbox(_ token: DeviceToken) throws(EmulatorError) -> [InboxEntry] {
        try state.withLock { state throws(EmulatorError) in
            guard let key = findKey(token, in: state) else { throw Self.unknown(token) }
            return state.records[key]!.inbox
        }
    }

    func clearInbox(_ token: DeviceToken) throws(EmulatorError) {
        try mutate(token) { $0.inbox.removeAll() }
    }

    func currentCounters() -> EmulatorCounters { counters.value }

    /// Returns once `condition` holds for the counters (at once if it does), or when the task is cancelled.
    func waitForCounters(_ condition: @escaping @Sendable (EmulatorCounters) -> Bool) async {
        await counters.wait(until: condition)
    }

    func resetCounters() {
        withCounters { state, counters in
            counters = EmulatorCounters()
            state.seenAPNSIDs.removeAll()
            for key in state.records.keys {
                for activity in state.records[key]!.budget.keys { state.records[key]!.budget[activity]!.dropped = 0 }
            }
        }
    }

    /// Runs `body` on the records and the counters under `state`'s lock; waiters whose condition the counters then
    /// meet are let through.
    private func withCounters<Result: Sendable>(_ body: (inout State, inout EmulatorCounters) -> Result) -> Result {
        state.withLock { state in counters.update { counters in body(&state, &counters) } }
    }

    private func mutate(_ token: DeviceToken, _ body: (inout Record) -> Void) throws(EmulatorError) {
        try state.withLock { state throws(EmulatorError) in
            guard let key = findKey(token, in: state) else { throw Self.unknown(token) }
            body(&state.records[key]!)
        }
    }

    private func findKey(_ token: DeviceToken, in state: State) -> Key? {
        for environment in APNSEnvironment.all {
            let key = Key(environment: environment, token: token.hex)
            if state.records[key] != nil { return key }
        }
        return nil
    }

    private static func unknown(_ token: DeviceToken) -> EmulatorError {
        EmulatorError("No device with token \(token.redacted): create it first, or send to it in permissive mode.")
    }
}

extension DeviceRegistry.Record {
    /// Appends honouring `apns-collapse-id` (the newer replaces the older) and the inbox capacity.
    fileprivate mutating func append(_ entry: InboxEntry, capacity: Int, dropped: inout Int) {
        if let collapseID = entry.collapseID, let index = inbox.firstIndex(where: { $0.collapseID == collapseID }) {
            inbox.remove(at: index)
        }
        inbox.append(entry)
        if inbox.count > capacity {
            let excess = inbox.count - capacity
            inbox.removeFirst(excess)
            dropped += excess
        }
    }
}
