import Foundation
public import HeraldCore
import Synchronization

/// The emulator's broadcast channels and their subscribers (apns-protocol.md §1.4). Called from event-loop threads:
/// every operation is one short critical section.
final class ChannelRegistry: Sendable {
    struct Channel: Sendable {
        let id: String
        let bundleID: String
        let environment: APNSEnvironment
        /// `message-storage-policy`: 0 stores nothing, 1 the newest message.
        let storagePolicy: Int
        /// Creation order, for the list.
        let sequence: Int
        /// Subscribed devices' tokens (hex).
        var subscribers: Set<String> = []
    }

    private struct App: Hashable {
        let bundleID: String
        let environment: APNSEnvironment
    }

    private struct State {
        var channels: [String: Channel] = [:]
        /// Every id ever given out, deleted ones included: APNs never reissues an id.
        var issued: Set<String> = []
        var counts: [App: Int] = [:]
        var nextSequence = 0
        var random: SeededRandomNumberGenerator
    }

    /// The longest `apns-channel-id` accepted; longer is `BadChannelId`.
    static let maximumIDLength = 128

    private let state: Mutex<State>
    let limitPerApp: Int

    init(limitPerApp: Int, seed: UInt64) {
        self.limitPerApp = limitPerApp
        state = Mutex(State(random: SeededRandomNumberGenerator(seed: seed ^ 0xC4A7_7E15)))
    }

    /// Whether `id` is something APNs could have issued: standard base64 of at most ``maximumIDLength`` characters.
    static func isWellFormed(_ id: String) -> Bool {
        id.utf8.count <= maximumIDLength && id.utf8.count % 4 == 0 && Data(base64Encoded: id) != nil
            && Data(base64Encoded: id)?.isEmpty == false
    }

    /// A new channel with a random id never given out before; `nil` when the app has ``limitPerApp`` channels.
    func create(bundleID: String, environment: APNSEnvironment, storagePolicy: Int) -> Channel? {
        state.withLock { state in
            let app = App(bundleID: bundleID, environment: environment)
            guard state.counts[app, default: 0] < limitPerApp else { return nil }
            var id: String
            repeat {
                let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &state.random) }
                id = Data(bytes).base64EncodedString()
            } while !state.issued.insert(id).inserted
            let channel = Channel(id: id, bundleID: bundleID, environment: environment, storagePolicy: storagePolicy, sequence: state.nextSequence)
            state.nextSequence += 1
            state.channels[id] = channel
            state.counts[app, default: 0] += 1
            return channel
        }
    }

    /// The channel, if it exists for this app in this environment (a channel of another app or environment does not).
    func channel(_ id: String, bundleID: String, environment: APNSEnvironment) -> Channel? {
        state.withLock { state in
            guard let channel = state.channels[id], channel.bundleID == bundleID, channel.environment == environment else { return nil }
            return channel
        }
    }

    /// Deletes a channel; its id stays issued. `false` when it does not exist for this app and environment.
    func delete(_ id: String, bundleID: String, environment: APNSEnvironment) -> Bool {
        state.withLock { state in
            guard let channel = state.channels[id], channel.bundleID == bundleID, channel.environment == environment else { return false }
            state.channels[id] = nil
            state.counts[App(bundleID: bundleID, environment: environment), default: 1] -= 1
            return true
        }
    }

    /// The ids of an app's channels in one environment, oldest first.
    func ids(bundleID: String, environment: APNSEnvironment) -> [String] {
        state.withLock { state in
            state.channels.values.filter { $0.bundleID == bundleID && $0.environment == environment }.sorted { $0.sequence < $1.sequence }.map(\.id)
        }
    }

    /// Every channel, oldest first.
    func all() -> [Channel] {
        state.withLock { $0.channels.values.sorted { $0.sequence < $1.sequence } }
    }

    /// Subscribes (or unsubscribes) a device of the channel's environment and app, as a Live Activity does.
    func setSubscribed(_ subscribed: Bool, device: VirtualDevice, to id: String) throws(EmulatorError) {
        try state.withLock { state throws(EmulatorError) in
            guard let channel = state.channels[id] else { throw EmulatorError("No channel \(id): create it through the channel-management API first.") }
            guard channel.environment == device.environment else {
                throw EmulatorError("Channel \(id) is a \(channel.environment) channel and the device is a \(device.environment) device: channels do not cross environments.")
            }
            guard RequestProcessor.bareBundleID(device.topic) == channel.bundleID else {
                throw EmulatorError("Channel \(id) belongs to \(channel.bundleID), the device to \(device.topic): a device subscribes to its own app's channels.")
            }
            if subscribed {
                state.channels[id]!.subscribers.insert(device.token.hex)
            } else {
                state.channels[id]!.subscribers.remove(device.token.hex)
            }
        }
    }

    /// The channels a device is subscribed to, oldest first.
    func subscriptions(of device: VirtualDevice) -> [String] {
        state.withLock { state in
            state.channels.values.filter { $0.environment == device.environment && $0.subscribers.contains(device.token.hex) }
                .sorted { $0.sequence < $1.sequence }.map(\.id)
        }
    }
}

/// A broadcast channel as the emulator holds it.
public struct EmulatedChannel: Sendable, Hashable {
    /// The base64 id APNs gave it.
    public let id: String
    public let bundleID: String
    public let environment: APNSEnvironment
    /// `message-storage-policy`: 0 stores nothing, 1 the newest message for 8 hours.
    public let storagePolicy: Int
    /// The subscribed devices' tokens, in hex order.
    public let subscribers: [String]

    init(_ channel: ChannelRegistry.Channel) {
        id = channel.id
        bundleID = channel.bundleID
        environment = channel.environment
        storagePolicy = channel.storagePolicy
        subscribers = channel.subscribers.sorted()
    }
}
