import Foundation
import HTTPTypes
import HeraldAPNS
import HeraldCore
import HeraldSending
import HeraldStore
import Logging

/// Broadcast channels as the API and the console manage them: created on APNs with the app's client for an
/// environment and recorded, looked up, deleted on APNs and marked deleted, each with the caller's one access check.
/// ``ChannelController`` decodes requests into these calls (``ChannelCreation``) and the console builds them from its
/// forms; neither calls the other.
///
/// APNs's refusals are 4xx answers with APNs's reason (`BadExpirationDate`, `ChannelNotRegistered`, …), never 5xx; no
/// answer from APNs is `502`.
struct ChannelOperations: Sendable {
    let store: any Store
    let apps: AppDirectory
    let senders: APNSSenders
    let audit: AuditTrail

    /// A channel created on APNs and recorded.
    struct Created {
        var channel: ChannelRecord
        var apnsRequestID: String
    }

    /// Creates a channel on APNs with the app's client for an environment and records it, for `caller`: what
    /// `POST /api/channels` does, and the console's *Create channel*.
    /// - Throws: ``APIError`` `403 appNotAllowed` or `environmentNotAllowed` for a caller limited elsewhere, `400`
    ///   for an app not served, APNs's refusal as its 4xx, `502` without an answer.
    func createChannel(_ creation: ChannelCreation, by caller: Caller) async throws -> Created {
        let logger = caller.logger
        let app = try apps.app(named: creation.topic, for: caller.access)
        let environment = creation.environment
        try caller.access.check(environment: environment)
        let policy = creation.storagePolicy
        let client = try apnsClient(app.bundleID, environment)
        let reply: APNSChannelReply<APNSChannel>
        do {
            reply = try await client.createChannel(bundleID: app.bundleID, storagePolicy: policy)
        } catch {
            throw Self.creationFailure(error, app: app.bundleID, environment: environment)
        }
        let channel = NewChannel(
            id: reply.value.id.rawValue, topic: app.bundleID, environment: environment, storagePolicy: policy.rawValue)
        guard try await store.recordChannel(channel), let record = try await store.channel(id: channel.id) else {
            throw APIError(
                .badGateway, reason: "channelIdReused",
                "APNs created a channel with the id of one recorded already; APNs never reissues ids: check that this server talks to the APNs it expects."
            )
        }
        logger.info(
            "Channel created",
            metadata: [
                LogKey.channelID: "\(record.id)", LogKey.topic: "\(record.topic)",
                LogKey.environment: "\(environment)",
            ])
        await audit.record(
            .channelCreated, by: caller, app: record.topic, subject: record.id, detail: record.environment.name)
        return Created(channel: record, apnsRequestID: reply.requestID)
    }

    /// A channel deleted on APNs and marked deleted here.
    struct Deleted {
        /// The record, with its deletion time.
        var channel: ChannelRecord
        var apnsRequestID: String?
        /// APNs answered `ChannelNotRegistered`: it no longer knew the channel, which is marked deleted all the same.
        var unknownToAPNs: Bool
    }

    /// Deletes a live channel `caller` sees on APNs and marks it deleted: what `DELETE /api/channels/{id}` does, and
    /// the console's *Delete*.
    func deleteChannel(_ id: String, by caller: Caller) async throws -> Deleted {
        let logger = caller.logger
        let channel = try await live(id, for: caller.access)
        let client = try apnsClient(channel.topic, channel.environment)
        let apnsID = try Self.channelID(channel.id, field: "id")
        var requestID: String?
        var unknownToAPNs = false
        do {
            requestID = try await client.deleteChannel(apnsID, bundleID: channel.topic).requestID
        } catch let error where error.reason == .channelNotRegistered {
            // APNs no longer knows it (deleted elsewhere, or the broadcast capability was switched off): it is gone
            // either way, so the record follows.
            unknownToAPNs = true
            requestID = error.requestID
        } catch {
            throw Self.failure(error)
        }
        guard let deleted = try await store.markChannelDeleted(id: channel.id) else { throw Self.unknown(channel.id) }
        logger.info("Channel deleted", metadata: [LogKey.channelID: "\(channel.id)"])
        await audit.record(.channelDeleted, by: caller, app: deleted.topic, subject: deleted.id)
        return Deleted(channel: deleted, apnsRequestID: requestID, unknownToAPNs: unknownToAPNs)
    }

    /// A recorded channel, live or deleted, that `caller` sees; another app's or environment's is
    /// `404 unknownChannel`, as if it did not exist: its id alone must not tell a limited caller that it exists.
    func recorded(_ text: String, for caller: KeyAccess) async throws -> ChannelRecord {
        let id = try Self.channelID(text, field: "id")
        guard let channel = try await store.channel(id: id.rawValue), caller.sees(app: channel.topic),
            caller.sees(environment: channel.environment)
        else { throw Self.unknown(id.rawValue) }
        return channel
    }

    /// A recorded channel that `caller` sees, refused once deleted.
    func live(_ id: String, for caller: KeyAccess) async throws -> ChannelRecord {
        let channel = try await recorded(id, for: caller)
        guard channel.isLive else {
            throw APIError(
                .conflict, reason: "channelDeleted",
                "The channel \(channel.id) was deleted: it takes no broadcast and APNs never gives its id again. Create a new one."
            )
        }
        return channel
    }

    private func apnsClient(_ bundleID: String, _ environment: APNSEnvironment) throws(APIError) -> APNSClient {
        guard let client = senders.client(bundleID: bundleID, environment: environment) else {
            throw APIError(
                .badRequest, reason: "unknownTopic",
                "This server has no APNs client for \(bundleID) in \(environment): configure the app.")
        }
        return client
    }

    /// An environment by its name.
    /// - Throws: ``APIError`` `400 invalidField` naming `field`.
    static func environment(_ text: String, field: String) throws(APIError) -> APNSEnvironment {
        switch text {
        case "development": return .development
        case "production": return .production
        default: throw APIError.invalidField(field, "it must be development or production")
        }
    }

    static func channelID(_ text: String, field: String) throws(APIError) -> APNSChannelID {
        guard let id = APNSChannelID(text) else {
            throw APIError.invalidField(field, "a channel id is APNs's base64 id: 1 to 1,024 visible ASCII characters")
        }
        return id
    }

    static func unknown(_ id: String) -> APIError {
        APIError(
            .notFound, reason: "unknownChannel",
            "This server has not created a channel \(id): create one with POST /api/channels, or list them with GET /api/channels."
        )
    }

    /// How APNs's refusal or silence answers: its own 4xx reasons as 4xx with that reason, never 5xx; no answer `502`.
    /// - Parameter send: The send a broadcast was recorded as, named in the message.
    static func failure(_ error: APNSChannelError, send: SendID? = nil) -> APIError {
        let message = error.message + (send.map { " The broadcast is recorded as the failed send \($0)." } ?? "")
        if error.code == .rejected, let rejection = error.rejection {
            let status: HTTPResponse.Status =
                switch rejection.status {
                case 413: .contentTooLarge
                case 429: .tooManyRequests
                case 500...: .serviceUnavailable
                default: .badRequest
                }
            return APIError(status, reason: rejection.reason.rawValue, message)
        }
        if error.code == .invalidRequest { return APIError(.badRequest, reason: "invalidBroadcast", message) }
        return APIError(.badGateway, reason: "apnsUnavailable", message)
    }

    /// A channel creation APNs refused for the app or the provider's authority: how an App ID without the Broadcast
    /// Capability fails its first channel, with a reason that does not say so. The answer says where to switch it on.
    static func creationFailure(_ error: APNSChannelError, app: String, environment: APNSEnvironment) -> APIError {
        let failure = failure(error)
        guard error.code == .rejected, let rejection = error.rejection,
            rejection.status == 403 || [.topicDisallowed, .badTopic].contains(rejection.reason)
        else { return failure }
        return APIError(
            failure.status, reason: failure.reason,
            failure.message
                + " Broadcast channels need the Broadcast Capability on the App ID \(app): switch it on in the Apple Developer portal (Certificates, Identifiers & Profiles → Identifiers → \(app) → Capabilities), not in Xcode; and check that the key or certificate is this app's team's, for \(environment.name).")
    }

    static func json(_ channel: ChannelRecord) -> [String: JSONValue] {
        var members: [String: JSONValue] = [
            "id": .string(channel.id), "topic": .string(channel.topic), "environment": .string(channel.environment.name),
            "storagePolicy": .integer(channel.storagePolicy), "status": .string(channel.isLive ? "live" : "deleted"),
            "createdAt": .string(RFC3339.string(channel.createdAt)),
        ]
        if let deleted = channel.deletedAt { members["deletedAt"] = .string(RFC3339.string(deleted)) }
        return members
    }
}

/// A broadcast channel to create: `POST /api/channels`, and the console's *Create channel*.
struct ChannelCreation: Sendable, Hashable {
    /// The app; `nil`: the server's (or the caller's) only app.
    var topic: String?
    /// A channel lives in one environment.
    var environment: APNSEnvironment
    var storagePolicy: APNSMessageStoragePolicy = .noMessageStored

    init(topic: String?, environment: APNSEnvironment, storagePolicy: APNSMessageStoragePolicy = .noMessageStored) {
        self.topic = topic
        self.environment = environment
        self.storagePolicy = storagePolicy
    }

    /// Decodes `POST /api/channels`'s fields.
    /// - Throws: ``APIError`` `400 missingEnvironment`, `invalidField` naming the field.
    init(json fields: JSONFields) throws(APIError) {
        self.init(
            topic: try fields.string("topic"), environment: try Self.environment(try fields.string("environment")),
            storagePolicy: try Self.storagePolicy(try fields.integer("storagePolicy")))
    }

    /// The environment a channel is created in, which must be given.
    /// - Throws: ``APIError`` `400 missingEnvironment`, `invalidField`.
    static func environment(_ name: String?) throws(APIError) -> APNSEnvironment {
        guard let name, !name.isEmpty else {
            throw APIError(
                .badRequest, reason: "missingEnvironment",
                "The field \"environment\" is missing: a channel lives in one environment, development or production.")
        }
        return try ChannelOperations.environment(name, field: "environment")
    }

    /// A storage policy by its number; `nil`: 0.
    /// - Throws: ``APIError`` `400 invalidField` naming `storagePolicy`.
    static func storagePolicy(_ number: Int?) throws(APIError) -> APNSMessageStoragePolicy {
        guard let policy = APNSMessageStoragePolicy(rawValue: number ?? 0) else {
            throw APIError.invalidField("storagePolicy", "it must be 0 (no message stored) or 1 (the most recent one)")
        }
        return policy
    }
}
