import Foundation
import HeraldCore
import Logging

/// A request as the transport received it.
struct EmulatedRequest {
    var method: String
    var path: String
    /// Regular (non-pseudo) headers in arrival order, names lowercase.
    var headers: [(name: String, value: String)]
    var body: [UInt8]
}

/// What to answer, and what else to do.
struct EmulatedResponse {
    var status: Int
    var reason: APNSReason?
    /// For 410 `Unregistered`: when APNs learned the token was dead.
    var timestamp: Date?
    var apnsID: String
    var uniqueID: String?
    var fault: FaultInjector.Decision = .none
    var delayMilliseconds: Double = 0
    /// Broadcast and channel-management answers name the request id `apns-request-id`, not `apns-id`.
    var isChannelRequest = false
    /// `apns-channel-id` of a channel just created.
    var channelID: String?
    /// The JSON body of a successful answer (a channel read, the channel list).
    var successBody: [UInt8]?

    /// The JSON body: the reason of an error, or what a successful read answers.
    var body: [UInt8]? {
        guard let reason else { return successBody }
        var object: [String: JSONValue] = ["reason": .string(reason.rawValue)]
        if let timestamp { object["timestamp"] = .integer(Int((timestamp.timeIntervalSince1970 * 1000).rounded(.down))) }
        return JSONValue.object(object).jsonBytes
    }
}

/// Checks a `POST /3/device/<token>` request in the order of apns-protocol.md §10 and delivers it; on the broadcast
/// and channel-management listeners, their requests (`RequestProcessor+Channels.swift`).
///
/// Written from the protocol document, not from Herald's sender: the two are checked against one outcome table,
/// so a misunderstanding they shared would fail a test instead of agreeing with itself.
struct RequestProcessor: Sendable {
    let environment: APNSEnvironment
    let verifier: ProviderTokenVerifier
    let registry: DeviceRegistry
    let faults: FaultInjector
    /// Which API this listener serves.
    var service: EmulatorService = .devicePush
    /// The channels, for the broadcast and channel-management listeners.
    var channels: ChannelRegistry?
    var channelSettings = EmulatorConfiguration.Channels()
    /// The push service, for the Web Push listener.
    var webPush: WebPushService?
    var logger: Logger?
    /// APNs' 20-minute limit on switching provider tokens per connection.
    static let tokenChangeInterval: TimeInterval = 20 * 60

    func process(_ request: EmulatedRequest, connection: inout ConnectionAuthentication, now: Date, ids: inout IDGenerator) -> EmulatedResponse {
        if service == .webPush, let webPush {
            return processWebPush(request, service: webPush, connection: &connection, now: now, ids: &ids)
        }
        if service != .devicePush, let channels {
            return processChannelRequest(request, channels: channels, connection: &connection, now: now, ids: &ids)
        }
        let suppliedID = request.headers.first { $0.name == "apns-id" }?.value
        let apnsID = suppliedID ?? ids.next()
        var response = check(request, connection: &connection, now: now, apnsID: apnsID)
        if environment.sendsUniqueID { response.uniqueID = ids.next() }
        if let reason = response.reason { registry.countRejection(reason) }
        return response
    }

    func reject(_ reason: APNSReason, _ apnsID: String, timestamp: Date? = nil) -> EmulatedResponse {
        EmulatedResponse(status: reason.status ?? 400, reason: reason, timestamp: timestamp, apnsID: apnsID)
    }

    private func check(_ request: EmulatedRequest, connection: inout ConnectionAuthentication, now: Date, apnsID: String) -> EmulatedResponse {
        // 1. Method and path.
        guard request.method == "POST" else { return reject(.methodNotAllowed, apnsID) }
        let prefix = "/3/device/"
        guard request.path.hasPrefix(prefix) || request.path == "/3/device" else { return reject(.badPath, apnsID) }
        let tokenText = request.path.dropFirst(min(prefix.count, request.path.count))
        if tokenText.isEmpty { return reject(.missingDeviceToken, apnsID) }
        if tokenText.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }) { return reject(.badPath, apnsID) }

        // 2. Duplicate headers.
        guard let headers = Self.uniqueHeaders(request) else { return reject(.duplicateHeaders, apnsID) }

        // 3. Authentication.
        if let reason = authenticate(headers, connection: &connection, now: now) { return reject(reason, apnsID) }

        // 4. Headers.
        if let id = headers["apns-id"], APNSID(headerValue: id) == nil { return reject(.badMessageID, apnsID) }
        var pushType = APNSPushType.alert
        if let value = headers["apns-push-type"] {
            guard let parsed = APNSPushType(headerValue: value) else { return reject(.invalidPushType, apnsID) }
            pushType = parsed
        }
        var priority = APNSPriority.immediate
        if let value = headers["apns-priority"] {
            guard let parsed = APNSPriority(headerValue: value) else { return reject(.badPriority, apnsID) }
            priority = parsed
        }
        if pushType == .background, priority != .considerPower { return reject(.badPriority, apnsID) }
        if pushType == .liveactivity, priority == .prioritizePowerOver { return reject(.badPriority, apnsID) }
        var expiration: Int?
        if let value = headers["apns-expiration"] {
            // Above 2^32-1 is milliseconds by mistake (year 2106+ in seconds): APNs' answer is unknown; the emulator
            // refuses it so the sender bug shows here instead of as a notification stored for 30 days.
            guard let parsed = APNSExpiration(headerValue: value), parsed.secondsSince1970 <= Int(UInt32.max) else {
                return reject(.badExpirationDate, apnsID)
            }
            expiration = parsed.secondsSince1970
        }
        let collapseID = headers["apns-collapse-id"]
        if let collapseID, collapseID.isEmpty || collapseID.utf8.count > 64 { return reject(.badCollapseID, apnsID) }
        let topic: String
        switch (headers["apns-topic"], connection.method) {
        case (let value?, _) where !value.isEmpty:
            topic = value
        case (_, .certificate(_, let defaultTopic)):
            topic = defaultTopic
        default:
            return reject(.missingTopic, apnsID)
        }
        guard Self.isWellFormedTopic(topic) else { return reject(.badTopic, apnsID) }
        switch connection.method {
        case .token:
            // A topic with another push type's suffix is still the key's app: that mismatch is the token's topic
            // (DeviceTokenNotForTopic, apns-protocol.md §2.4), not a topic the key may not use.
            let bundleID = pushType.bundleID(fromTopic: topic) ?? Self.bareBundleID(topic)
            if let key = connection.boundKey, !key.covers(bundleID: bundleID) { return reject(.topicDisallowed, apnsID) }
        case .certificate(let topics, _):
            if !topics.contains(topic) || pushType == .location { return reject(.topicDisallowed, apnsID) }
        }
        if pushType.bundleID(fromTopic: topic) == nil { return reject(.deviceTokenNotForTopic, apnsID) }

        // 5. Token.
        guard tokenText.utf8.allSatisfy(Self.isHexDigit), let token = try? DeviceToken(hex: tokenText) else {
            return reject(.badDeviceToken, apnsID)
        }
        if case .reject(let reason, let timestamp) = registry.admit(token: token, environment: environment, topic: topic) {
            return reject(reason, apnsID, timestamp: timestamp)
        }

        // 6. Body.
        if request.body.isEmpty { return reject(.payloadEmpty, apnsID) }
        if request.body.count > pushType.maximumPayloadSize { return reject(.payloadTooLarge, apnsID) }
        guard case .object(let object)? = try? JSONValue(parsing: request.body) else { return reject(.badRequestPayload, apnsID) }

        // 7. Injected faults stand in for APNs' own transient failures.
        let fault: FaultInjector.Decision
        let delay: Double
        switch injectFault(apnsID) {
        case .answer(let response):
            return response
        case .proceed(let decision, let milliseconds):
            fault = decision
            delay = milliseconds
        }

        // 8. Accept and deliver.
        let entry = InboxEntry(
            apnsID: apnsID, pushType: headers["apns-push-type"], topic: topic,
            priority: headers["apns-priority"].flatMap { Int($0) }, expiration: expiration, collapseID: collapseID,
            receivedAt: now, payload: request.body,
            startsActivity: pushType == .liveactivity && object["aps"]?["event"]?.stringValue == "start")
        let budgeted = Self.countsAgainstBudget(pushType: pushType, priority: priority, payload: object)
        registry.deliver(entry, to: token, environment: environment, budgetedActivity: budgeted ? "device" : nil)
        return EmulatedResponse(status: 200, reason: nil, apnsID: apnsID, fault: fault, delayMilliseconds: delay)
    }

    /// A push to a web subscription: the injected faults first (a push service's 429s and 5xx), then the service's
    /// checks. The answer carries no `apns-id` a sender would read; the status and `{"reason"}` are what count.
    private func processWebPush(
        _ request: EmulatedRequest, service: WebPushService, connection: inout ConnectionAuthentication, now: Date,
        ids: inout IDGenerator
    ) -> EmulatedResponse {
        let id = ids.next()
        var decision = FaultInjector.Decision.none
        var delay = 0.0
        switch injectFault(id) {
        case .answer(let response): return response
        case .proceed(let fault, let milliseconds): (decision, delay) = (fault, milliseconds)
        }
        let (status, reason) = service.process(request, now: now)
        if status == 201 { connection.hasValidatedRequest = true }
        var response = EmulatedResponse(
            status: status, reason: reason.map { APNSReason($0) }, apnsID: id, fault: decision, delayMilliseconds: delay)
        response.isChannelRequest = true
        return response
    }

    /// What an injected fault does to a request that passed every check.
    enum FaultOutcome {
        /// Answer this instead (a 429/500/503, or no answer at all).
        case answer(EmulatedResponse)
        /// Go on; the real answer carries the GOAWAY decision and the added latency.
        case proceed(FaultInjector.Decision, delayMilliseconds: Double)
    }

    /// Step 7 for every API: injected faults stand in for APNs' own transient failures, and are counted.
    func injectFault(_ id: String) -> FaultOutcome {
        let (fault, delay) = faults.decide()
        switch fault {
        case .status(let reason):
            registry.countFault(reason.rawValue)
            var response = reject(reason, id)
            response.delayMilliseconds = delay
            return .answer(response)
        case .reset, .noResponse, .refuseStream:
            registry.countFault(fault == .reset ? "reset" : fault == .noResponse ? "noResponse" : "refusedStream")
            return .answer(EmulatedResponse(status: 0, reason: nil, apnsID: id, fault: fault, delayMilliseconds: delay))
        case .goAway, .none:
            return .proceed(fault, delayMilliseconds: delay)
        }
    }

    /// Whether a Live Activity push counts against the activity's hourly budget: priority-10 updates and ends do;
    /// priority 5 and starts do not (apns-protocol.md §4.5).
    static func countsAgainstBudget(pushType: APNSPushType, priority: APNSPriority, payload: [String: JSONValue]) -> Bool {
        pushType == .liveactivity && priority == .immediate && payload["aps"]?["event"]?.stringValue != "start"
    }

    /// The headers by name; `nil` when one came twice (`DuplicateHeaders`).
    static func uniqueHeaders(_ request: EmulatedRequest) -> [String: String]? {
        var headers = [String: String]()
        headers.reserveCapacity(request.headers.count)
        for (name, value) in request.headers {
            if headers.updateValue(value, forKey: name) != nil { return nil }
        }
        return headers
    }

    /// Checks the provider token against the connection's rules (§3.1) and binds the connection to its key; the
    /// reason to refuse, or `nil`. Certificate connections are authenticated by their handshake.
    func authenticate(_ headers: [String: String], connection: inout ConnectionAuthentication, now: Date) -> APNSReason? {
        if case .token = connection.method {
            let verified: ProviderTokenVerifier.Verified
            if let cached = connection.verifiedToken, let header = headers["authorization"],
                header.utf8.count == cached.jwt.utf8.count + 7, header.hasSuffix(cached.jwt), Self.hasBearerPrefix(header)
            {
                guard now.timeIntervalSince(cached.issuedAt) <= verifier.maximumAge else { return .expiredProviderToken }
                verified = cached
            } else {
                do {
                    verified = try verifier.verify(authorization: headers["authorization"], now: now)
                } catch {
                    return error.reason
                }
            }
            if let bound = connection.boundKey {
                guard verified.key.teamID == bound.teamID else { return .invalidProviderToken }
                guard verified.key.keyID == bound.keyID else { return .unrelatedKeyIDInToken }
            }
            if let restricted = verified.key.environment, restricted != environment {
                return .badEnvironmentKeyIDInToken
            }
            if connection.currentJWT != verified.jwt {
                if let last = connection.lastTokenChange, connection.currentJWT != nil,
                    now.timeIntervalSince(last) < Self.tokenChangeInterval
                {
                    return .tooManyProviderTokenUpdates
                }
                connection.currentJWT = verified.jwt
                connection.lastTokenChange = now
            }
            connection.boundKey = verified.key
            connection.verifiedToken = verified
        }
        connection.hasValidatedRequest = true
        return nil
    }

    /// The `bearer ` scheme, in any case, checked without building a lowercased copy of the whole header.
    private static func hasBearerPrefix(_ header: String) -> Bool {
        let scheme = header.utf8.prefix(7)
        return scheme.count == 7 && zip(scheme, "bearer ".utf8).allSatisfy { $0 | 0x20 == $1 }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    /// The bundle id in a topic, whatever push type's suffix it carries.
    static func bareBundleID(_ topic: String) -> String {
        guard let implied = APNSPushType.impliedBySuffix(ofTopic: topic) else { return topic }
        return implied.bundleID(fromTopic: topic) ?? topic
    }

    static func isWellFormedTopic(_ topic: String) -> Bool {
        topic.utf8.count <= 255 && !topic.hasPrefix(".") && !topic.hasSuffix(".")
            && topic.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }
}
