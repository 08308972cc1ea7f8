import Foundation
import HeraldCore
import Logging

/// Broadcast (`POST /4/broadcasts/apps/<bundle-id>`) and channel management (`/1/apps/<bundle-id>/channels`,
/// `/all-channels`), checked with the strictness of device pushes, in this order:
///
/// 1. path (`404 BadPath`) and method (`405 MethodNotAllowed`);
/// 2. a header sent twice (`DuplicateHeaders`);
/// 3. the provider token, as for device pushes (403 reasons, `429 TooManyProviderTokenUpdates`);
/// 4. the bundle id: a push-type suffix (`TopicDisallowed`), not covered by the credential (`403 TopicMismatch`), the
///    Broadcast capability off (`FeatureNotEnabled`);
/// 5. `apns-request-id` (`BadMessageId`);
/// 6. the operation's own checks (below), then injected faults, then the answer with `apns-request-id`.
extension RequestProcessor {
    /// Stored broadcasts wait at most this long for a device to come online.
    static let broadcastStorage: TimeInterval = 8 * 3600

    func processChannelRequest(
        _ request: EmulatedRequest, channels: ChannelRegistry, connection: inout ConnectionAuthentication, now: Date, ids: inout IDGenerator
    ) -> EmulatedResponse {
        let requestID = request.headers.first { $0.name == "apns-request-id" }?.value ?? ids.next()
        var response = checkChannelRequest(request, channels: channels, connection: &connection, now: now, requestID: requestID)
        response.isChannelRequest = true
        if let reason = response.reason { registry.countRejection(reason) }
        return response
    }

    private func checkChannelRequest(
        _ request: EmulatedRequest, channels: ChannelRegistry, connection: inout ConnectionAuthentication, now: Date, requestID: String
    ) -> EmulatedResponse {
        // 1. Path and method.
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
        let operation: String
        let bundleID: String
        switch service {
        case .broadcast:
            guard parts.count == 5, parts[0].isEmpty, parts[1] == "4", parts[2] == "broadcasts", parts[3] == "apps", !parts[4].isEmpty else {
                return reject(.badPath, requestID)
            }
            guard request.method == "POST" else { return reject(.methodNotAllowed, requestID) }
            operation = "broadcast"
            bundleID = String(parts[4])
        default:
            guard parts.count == 5, parts[0].isEmpty, parts[1] == "1", parts[2] == "apps", !parts[3].isEmpty,
                parts[4] == "channels" || parts[4] == "all-channels"
            else { return reject(.badPath, requestID) }
            let allowed = parts[4] == "channels" ? ["POST", "GET", "DELETE"] : ["GET"]
            guard allowed.contains(request.method) else { return reject(.methodNotAllowed, requestID) }
            operation = parts[4] == "channels" ? request.method : "LIST"
            bundleID = String(parts[3])
        }
        guard Self.isWellFormedTopic(bundleID) else { return reject(.badPath, requestID) }

        // 2. Duplicate headers; 3. authentication.
        guard let headers = Self.uniqueHeaders(request) else { return reject(.duplicateHeaders, requestID) }
        if let reason = authenticate(headers, connection: &connection, now: now) { return reject(reason, requestID) }

        // 4. The bundle id.
        if APNSPushType.impliedBySuffix(ofTopic: bundleID) != nil { return reject(.topicDisallowed, requestID) }
        switch connection.method {
        case .token:
            if let key = connection.boundKey, !key.covers(bundleID: bundleID) { return reject(.topicMismatch, requestID) }
        case .certificate(let topics, _):
            if !topics.contains(bundleID) { return reject(.topicMismatch, requestID) }
        }
        if let enabled = channelSettings.enabledBundleIDs, !enabled.contains(bundleID) { return reject(.featureNotEnabled, requestID) }

        // 5. The request id.
        if let id = headers["apns-request-id"], APNSID(headerValue: id) == nil { return reject(.badMessageID, requestID) }

        // 6. The operation.
        var response: EmulatedResponse
        switch operation {
        case "broadcast":
            response = checkBroadcast(request, headers: headers, bundleID: bundleID, channels: channels, requestID: requestID)
        case "POST":
            response = checkCreate(request.body, bundleID: bundleID, channels: channels, requestID: requestID)
        case "LIST":
            let list = channels.ids(bundleID: bundleID, environment: environment).map(JSONValue.string)
            response = EmulatedResponse(status: 200, reason: nil, apnsID: requestID)
            response.successBody = JSONValue.object(["channels": .array(list)]).jsonBytes
        default:
            guard let id = headers["apns-channel-id"] else { return reject(.missingChannelID, requestID) }
            guard ChannelRegistry.isWellFormed(id) else { return reject(.badChannelID, requestID) }
            guard let channel = channels.channel(id, bundleID: bundleID, environment: environment) else {
                return reject(.channelNotRegistered, requestID)
            }
            if operation == "GET" {
                response = EmulatedResponse(status: 200, reason: nil, apnsID: requestID)
                response.successBody = JSONValue.object([
                    "message-storage-policy": .integer(channel.storagePolicy), "push-type": "LiveActivity",
                ]).jsonBytes
            } else {
                response = EmulatedResponse(status: 204, reason: nil, apnsID: requestID)
            }
        }
        guard response.reason == nil else { return response }

        // 7. Injected faults, then the change itself.
        switch injectFault(requestID) {
        case .answer(let answer):
            return answer
        case .proceed(let fault, let delay):
            response.fault = fault
            response.delayMilliseconds = delay
        }
        switch operation {
        case "broadcast":
            deliverBroadcast(request, headers: headers, bundleID: bundleID, channels: channels, requestID: requestID, now: now)
        case "POST":
            let policy = (try? JSONValue(parsing: request.body))?["message-storage-policy"]?.intValue ?? 0
            guard let channel = channels.create(bundleID: bundleID, environment: environment, storagePolicy: policy) else {
                return reject(.cannotCreateChannelConfig, requestID)
            }
            response.channelID = channel.id
            logger?.info("Channel created", metadata: [
                "herald.channel_id": "\(channel.id)", "herald.bundle_id": "\(bundleID)", "herald.environment": "\(environment)",
            ])
            registry.countChannelRequest()
        case "DELETE":
            _ = channels.delete(headers["apns-channel-id"]!, bundleID: bundleID, environment: environment)
            logger?.info("Channel deleted", metadata: ["herald.channel_id": "\(headers["apns-channel-id"]!)", "herald.environment": "\(environment)"])
            registry.countChannelRequest()
        default:
            registry.countChannelRequest()
        }
        return response
    }

    /// `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}` and room for another channel.
    private func checkCreate(_ body: [UInt8], bundleID: String, channels: ChannelRegistry, requestID: String) -> EmulatedResponse {
        if body.isEmpty { return reject(.payloadEmpty, requestID) }
        guard case .object(let fields)? = try? JSONValue(parsing: body) else { return reject(.badRequestPayload, requestID) }
        if fields.keys.contains(where: { $0 != "message-storage-policy" && $0 != "push-type" }) { return reject(.badRequestParams, requestID) }
        guard let pushType = fields["push-type"] else { return reject(.missingPushType, requestID) }
        guard pushType.stringValue?.lowercased() == "liveactivity" else { return reject(.invalidPushType, requestID) }
        guard let policy = fields["message-storage-policy"]?.intValue, policy == 0 || policy == 1 else {
            return reject(.badRequestParams, requestID)
        }
        if channels.ids(bundleID: bundleID, environment: environment).count >= channels.limitPerApp {
            return reject(.cannotCreateChannelConfig, requestID)
        }
        return EmulatedResponse(status: 201, reason: nil, apnsID: requestID)
    }

    /// The broadcast's headers, channel and body.
    private func checkBroadcast(
        _ request: EmulatedRequest, headers: [String: String], bundleID: String, channels: ChannelRegistry, requestID: String
    ) -> EmulatedResponse {
        guard let pushType = headers["apns-push-type"] else { return reject(.missingPushType, requestID) }
        // Apple's pages spell it liveactivity, Liveactivity and LiveActivity.
        guard pushType.lowercased() == APNSPushType.liveactivity.rawValue else { return reject(.invalidPushType, requestID) }
        guard let id = headers["apns-channel-id"] else { return reject(.missingChannelID, requestID) }
        guard ChannelRegistry.isWellFormed(id) else { return reject(.badChannelID, requestID) }
        if let value = headers["apns-priority"] {
            guard let priority = APNSPriority(headerValue: value), priority != .prioritizePowerOver else { return reject(.badPriority, requestID) }
        }
        var expiration = 0
        if let value = headers["apns-expiration"] {
            guard let parsed = APNSExpiration(headerValue: value), parsed.secondsSince1970 <= Int(UInt32.max) else {
                return reject(.badExpirationDate, requestID)
            }
            expiration = parsed.secondsSince1970
        }
        guard let channel = channels.channel(id, bundleID: bundleID, environment: environment) else { return reject(.channelNotRegistered, requestID) }
        if channel.storagePolicy == 0, expiration != 0 { return reject(.badExpirationDate, requestID) }
        if request.body.isEmpty { return reject(.payloadEmpty, requestID) }
        if request.body.count > BroadcastNotification.maximumPayloadSize { return reject(.payloadTooLarge, requestID) }
        guard case .object? = try? JSONValue(parsing: request.body) else { return reject(.badRequestPayload, requestID) }
        return EmulatedResponse(status: 200, reason: nil, apnsID: requestID)
    }

    /// Puts an accepted broadcast in every subscriber's inbox, or stores it for those offline when the channel
    /// stores its newest message: for 8 hours, or until its `apns-expiration` if sooner; never with expiration 0.
    private func deliverBroadcast(
        _ request: EmulatedRequest, headers: [String: String], bundleID: String, channels: ChannelRegistry, requestID: String, now: Date
    ) {
        let id = headers["apns-channel-id"]!
        guard let channel = channels.channel(id, bundleID: bundleID, environment: environment) else { return }
        let expiration = headers["apns-expiration"].flatMap { Int($0) }
        let priority = headers["apns-priority"].flatMap { APNSPriority(headerValue: $0) } ?? .immediate
        var storeUntil: Date?
        if channel.storagePolicy == 1, expiration != 0 {
            let longest = now.addingTimeInterval(Self.broadcastStorage)
            storeUntil = expiration.map { min(longest, Date(timeIntervalSince1970: TimeInterval($0))) } ?? longest
        }
        var entry = InboxEntry(
            apnsID: requestID, pushType: APNSPushType.liveactivity.rawValue, topic: bundleID,
            priority: headers["apns-priority"].flatMap { Int($0) }, expiration: expiration, collapseID: nil, receivedAt: now,
            payload: request.body)
        entry.channelID = id
        var payload: [String: JSONValue] = [:]
        if case .object(let object)? = try? JSONValue(parsing: request.body) { payload = object }
        registry.deliverBroadcast(
            entry, to: channel.subscribers, environment: environment, storeUntil: storeUntil,
            budgeted: Self.countsAgainstBudget(pushType: .liveactivity, priority: priority, payload: payload))
    }
}
