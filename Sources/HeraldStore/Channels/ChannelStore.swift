public import Foundation
public import HeraldCore

/// Broadcast channels the server created on APNs (apns-protocol.md §1.4): which app and environment each belongs to,
/// its storage policy, and whether it was deleted. APNs never reissues a deleted id, so a deleted channel stays
/// recorded and is refused by id. Methods throw ``StoreError`` (or `CancellationError`).
public protocol ChannelStore: Sendable {
    /// Records a channel APNs created.
    /// - Returns: `false` when a channel with that id is recorded already: nothing is written.
    func recordChannel(_ channel: NewChannel) async throws -> Bool

    /// A channel, live or deleted; `nil` when unknown.
    func channel(id: String) async throws -> ChannelRecord?

    /// The live channels of an app, ordered by id (in the database's text order), after the cursor `after` (an id),
    /// at most `limit` of them.
    /// - Parameters:
    ///   - environment: Only this environment's; `nil` for both.
    func liveChannels(topic: String, environment: APNSEnvironment?, after: String?, limit: Int) async throws
        -> [ChannelRecord]

    /// Marks a live channel deleted, in one statement: two racing deletions cannot both mark it.
    /// - Returns: the channel as stored now, with ``ChannelRecord/deletedAt`` set; `nil` when unknown. A channel
    ///   deleted earlier is returned unchanged.
    func markChannelDeleted(id: String) async throws -> ChannelRecord?

    /// Records that APNs accepted a broadcast on a channel: it is in use.
    func markChannelUsed(id: String) async throws

    /// Live channels per app and environment: what counts against APNs's cap of 10,000 per app and environment.
    func liveChannelCounts() async throws -> [LiveChannelCount]

    /// Live channels no running activity follows, that either had activities (all of them ended) or were last used
    /// (by a broadcast, else created) before `unusedBefore`, by id: what the channel tidy deletes.
    func idleChannels(unusedBefore: Date, limit: Int) async throws -> [ChannelRecord]
}

/// What ``ChannelStore/recordChannel(_:)`` records; the creation time is the store's clock.
public struct NewChannel: Sendable, Hashable {
    /// APNs's base64 id (`apns-channel-id`).
    public var id: String
    /// The app (bundle id).
    public var topic: String
    public var environment: APNSEnvironment
    /// `message-storage-policy`: 0 (no message stored) or 1 (the most recent one).
    public var storagePolicy: Int

    public init(id: String, topic: String, environment: APNSEnvironment, storagePolicy: Int) {
        self.id = id
        self.topic = topic
        self.environment = environment
        self.storagePolicy = storagePolicy
    }
}

/// A broadcast channel as stored.
public struct ChannelRecord: Sendable, Hashable {
    public var id: String
    public var topic: String
    public var environment: APNSEnvironment
    /// 0 or 1, as ``NewChannel/storagePolicy``.
    public var storagePolicy: Int
    public var createdAt: Date
    /// When it was deleted through the server; `nil` while live.
    public var deletedAt: Date?

    /// Whether it takes broadcasts: not deleted.
    public var isLive: Bool { deletedAt == nil }
}

/// How many live channels an app has in an environment.
public struct LiveChannelCount: Sendable, Hashable {
    public var topic: String
    public var environment: APNSEnvironment
    public var count: Int

    public init(topic: String, environment: APNSEnvironment, count: Int) {
        self.topic = topic
        self.environment = environment
        self.count = count
    }
}
