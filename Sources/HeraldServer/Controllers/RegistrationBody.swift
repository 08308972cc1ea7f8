import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore

/// The body of `POST /api/token`, parsed and checked against docs/api-registration.md.
///
/// Parsing never touches the store: a body that fails here changes nothing.
struct RegistrationBody: RegistrationRuleFields {
    var token: DeviceToken
    var environment: APNSEnvironment
    /// `nil` when the body names no topic: the server's only app then applies.
    var topic: String?
    var userID: String?
    var preferredLanguages: [String]
    var appVersion: String?
    var platform: Platform?
    var installationID: UUID?
    var tokenKind: TokenKind
    var tags: [String]
    var timeZone: String?
    var activityType: String?
    var activityID: String?
    var activitiesEnabled: Bool?
    var frequentPushesEnabled: Bool?
    /// A web subscription's endpoint and keys (`"tokenKind": "webpush"`); its token is derived from the endpoint.
    var webPush: WebPushSubscription?

    /// Parses a request body.
    /// - Parameter pushServices: The push services a web subscription's endpoint may name.
    /// - Throws: ``APIError`` `400` with `invalidJSON`, `missingToken`, `badDeviceToken`, `missingEnvironment`,
    ///   `environmentConflict`, `endpointNotAllowed` or `invalidField`; the message names the field.
    init(json bytes: some Collection<UInt8>, pushServices: PushServiceHosts = .default) throws(APIError) {
        let fields = try JSONFields(body: bytes)
        try TextRules.checkNoNUL(in: .object(fields.members))
        tokenKind =
            try fields.string("tokenKind").map { name throws(APIError) in
                guard let kind = TokenKind(name: name) else {
                    throw APIError.invalidField(
                        "tokenKind", "use one of " + TokenKind.all.map(\.name).joined(separator: ", "))
                }
                return kind
            } ?? .device
        if tokenKind.isWebPush {
            let subscription = try Self.parseSubscription(fields, pushServices: pushServices)
            webPush = subscription
            token = subscription.token
            if let given = try fields.string("token"), (try? DeviceToken(hex: given)) != token {
                throw APIError.invalidField(
                    "token",
                    "a webpush token is the SHA-256 of the subscription's endpoint (\(token.hex)): leave it out, the server derives it"
                )
            }
            // A subscription belongs to no APNs environment; one named is kept, for sends that name one.
            environment = try Self.parseEnvironment(
                debug: fields.bool("debug"), name: fields.string("environment"), unnamed: .production)
        } else {
            guard fields["subscription"] == nil else {
                throw APIError.invalidField(
                    "subscription", "only a web push registration (\"tokenKind\": \"webpush\") has one")
            }
            (token, environment) = try Self.parseTokenAndEnvironment(fields)
        }
        topic = try fields.string("topic")
        userID = try fields.string("userId")
        appVersion = try fields.string("appVersion")
        preferredLanguages = try fields.strings("preferredLanguages", maximumCount: RegistrationRules.maximumLanguages)
        tags = try fields.strings("tags", maximumCount: RegistrationRules.maximumTags)
        platform = try fields.string("platform").map { name throws(APIError) in
            guard let platform = Platform(name: name) else {
                throw APIError.invalidField("platform", "use iOS, macOS, tvOS, watchOS or visionOS")
            }
            return platform
        }
        installationID = try fields.string("installationId").map { text throws(APIError) in
            guard let uuid = UUID(text: text) else {
                throw APIError.invalidField(
                    "installationId", "it must be a UUID such as 2f1c6a4e-8d0b-4c55-9a37-1f3e5b7d9c01")
            }
            return uuid
        }
        timeZone = try fields.string("timeZone")
        activityType = try fields.string("activityType")
        activityID = try fields.string("activityId")
        activitiesEnabled = try fields.bool("activitiesEnabled")
        frequentPushesEnabled = try fields.bool("frequentPushesEnabled")
        try checkRules()
    }

    /// A browser's `PushSubscription.toJSON()`: `endpoint` on an allowed push service, and `keys.p256dh`, `keys.auth`.
    private static func parseSubscription(_ fields: JSONFields, pushServices: PushServiceHosts) throws(APIError)
        -> WebPushSubscription
    {
        guard let members = try fields.object("subscription") else {
            throw APIError(
                .badRequest, reason: "missingSubscription",
                "A webpush registration needs \"subscription\": the browser's PushSubscription.toJSON(), {\"endpoint\": …, \"keys\": {\"p256dh\": …, \"auth\": …}}."
            )
        }
        let subscription = JSONFields(members)
        guard let endpoint = try subscription.string("endpoint") else {
            throw APIError.invalidField("subscription.endpoint", "it is missing: send the subscription's endpoint URL")
        }
        let keys = JSONFields(try subscription.object("keys") ?? [:])
        guard let p256dh = try keys.string("p256dh"), let auth = try keys.string("auth") else {
            throw APIError.invalidField(
                "subscription.keys", "it needs p256dh and auth, as PushSubscription.toJSON() gives them")
        }
        do {
            return try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth, hosts: pushServices)
        } catch where error.code == .endpointNotAllowed {
            throw APIError(.badRequest, reason: "endpointNotAllowed", error.message)
        } catch where error.code == .invalidEndpoint {
            throw APIError(.badRequest, reason: "invalidField", "The field \"subscription.endpoint\" is invalid: \(error.message)")
        } catch {
            throw APIError(.badRequest, reason: "invalidField", "The field \"subscription.keys\" is invalid: \(error.message)")
        }
    }

    /// An APNs token and the environment it belongs to.
    private static func parseTokenAndEnvironment(_ fields: JSONFields) throws(APIError)
        -> (DeviceToken, APNSEnvironment)
    {
        guard let tokenValue = fields["token"] else {
            throw APIError(
                .badRequest, reason: "missingToken",
                "The body has no \"token\": send the device token as hex, such as {\"token\": \"<hex>\", \"debug\": true}."
            )
        }
        guard case .string(let hex) = tokenValue else {
            throw APIError.invalidField("token", "it must be a string of hex digits, not \(tokenValue.typeName)")
        }
        return (
            try parseToken(hex),
            try parseEnvironment(debug: fields.bool("debug"), name: fields.string("environment"))
        )
    }

    private func checkRules() throws(APIError) {
        do {
            try checkRegistrationRules()
        } catch {
            throw APIError.invalidField(error.field, error.rule)
        }
        if let timeZone, !TokenRegistration.isTimeZoneID(timeZone) {
            throw APIError.invalidField(
                "timeZone", "this server's time-zone database has no zone \(timeZone): use an IANA id such as Europe/Paris")
        }
    }

    /// Parses a token from a body or a path, with the core's message.
    static func parseToken(_ hex: String) throws(APIError) -> DeviceToken {
        do {
            return try DeviceToken(hex: hex)
        } catch {
            throw APIError(.badRequest, reason: "badDeviceToken", error.description)
        }
    }

    /// - Parameter unnamed: The environment when the body names none; `nil`: the body must name one.
    private static func parseEnvironment(debug: Bool?, name: String?, unnamed: APNSEnvironment? = nil)
        throws(APIError) -> APNSEnvironment
    {
        let named = try name.map { text throws(APIError) in
            guard let environment = APNSEnvironment(name: text) else {
                throw APIError.invalidField("environment", "use \"development\" or \"production\"")
            }
            return environment
        }
        switch (debug, named) {
        case (nil, nil):
            if let unnamed { return unnamed }
            throw APIError(
                .badRequest, reason: "missingEnvironment",
                "The body says neither \"debug\" nor \"environment\": send \"debug\": true for a development (sandbox) token, false for production. There is no default, because a wrong environment makes APNs reject the token."
            )
        case (let debug?, let named?) where debug != named.isDevelopment:
            throw APIError(
                .badRequest, reason: "environmentConflict",
                "\"debug\": \(debug) and \"environment\": \"\(named.name)\" disagree: send one, or make them match.")
        case (_, let named?):
            return named
        case (let debug?, nil):
            return debug ? .development : .production
        }
    }

    /// The registration to store for an app.
    func registration(topic: String) -> TokenRegistration {
        TokenRegistration(
            token: token, topic: topic, environment: environment, tokenKind: tokenKind, userID: userID,
            installationID: installationID, preferredLanguages: preferredLanguages, appVersion: appVersion,
            platform: platform, tags: tags, timeZone: timeZone, activityType: activityType, activityID: activityID,
            activitiesEnabled: activitiesEnabled, frequentPushesEnabled: frequentPushesEnabled, webPush: webPush)
    }
}

/// The members of a JSON object body, read with errors that name the field. `null` counts as absent.
struct JSONFields {
    let members: [String: JSONValue]

    /// Parses a body that must be a JSON object.
    /// - Throws: ``APIError`` `invalidJSON`.
    init(body bytes: some Collection<UInt8>) throws(APIError) {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw APIError.invalidJSON(error.description)
        }
        guard case .object(let members) = value else {
            throw APIError.invalidJSON("it is \(value.typeName)")
        }
        self.members = members
    }

    init(_ members: [String: JSONValue]) { self.members = members }

    subscript(_ name: String) -> JSONValue? {
        guard let value = members[name], value != .null else { return nil }
        return value
    }

    func string(_ name: String, bytes: ClosedRange<Int>? = nil) throws(APIError) -> String? {
        guard let value = self[name] else { return nil }
        guard case .string(let text) = value else {
            throw APIError.invalidField(name, "it must be a string, not \(value.typeName)")
        }
        if let bytes, !bytes.contains(text.utf8.count) {
            throw APIError.invalidField(name, "it must have \(bytes.lowerBound) to \(bytes.upperBound) bytes")
        }
        return text
    }

    func bool(_ name: String) throws(APIError) -> Bool? {
        guard let value = self[name] else { return nil }
        guard case .bool(let flag) = value else {
            throw APIError.invalidField(name, "it must be true or false, not \(value.typeName)")
        }
        return flag
    }

    func integer(_ name: String, in range: ClosedRange<Int>? = nil) throws(APIError) -> Int? {
        guard let value = self[name] else { return nil }
        guard case .integer(let number) = value else {
            throw APIError.invalidField(name, "it must be a whole number, not \(value.typeName)")
        }
        if let range, !range.contains(number) {
            throw APIError.invalidField(name, "it must be from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    func strings(_ name: String, maximumCount: Int) throws(APIError) -> [String] {
        guard let value = self[name] else { return [] }
        guard case .array(let elements) = value else {
            throw APIError.invalidField(name, "it must be an array of strings, not \(value.typeName)")
        }
        guard elements.count <= maximumCount else {
            throw APIError.invalidField(name, "send at most \(maximumCount) entries")
        }
        return try elements.map { element throws(APIError) in
            guard case .string(let text) = element else {
                throw APIError.invalidField(name, "every entry must be a string, not \(element.typeName)")
            }
            return text
        }
    }

    func object(_ name: String) throws(APIError) -> [String: JSONValue]? {
        guard let value = self[name] else { return nil }
        guard case .object(let members) = value else {
            throw APIError.invalidField(name, "it must be an object, not \(value.typeName)")
        }
        return members
    }
}
