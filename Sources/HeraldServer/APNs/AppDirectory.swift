import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore

/// The apps a deployment serves, and the rules that depend on them: the default topic and registration keys.
struct AppDirectory: Sendable {
    /// One app as the server uses it.
    struct App: Sendable {
        let bundleID: String
        let contentKey: ContentEncryptionKey?
        /// Whether its notifications carry the `herald` key (delivery receipts).
        let receipts: Bool
        /// SHA-256 of each registration key: compared in constant time, never logged.
        let registrationKeyDigests: [SHA256.Digest]
        /// The kinds of notification people may turn off, and the one of a send that names none.
        let preferenceCategories: [PreferenceCategory]
        let defaultPreferenceCategory: String?
        /// At most so many non-mandatory alerts per person and period.
        var frequencyCaps: [FrequencyCap] = []
        /// The app's quiet hours, and the zone they are judged in for devices that registered none.
        let quietHours: QuietHours?
        let quietHoursTimeZone: TimeZone
        /// The app's website: its VAPID key, subject and origin; `nil`: the app takes no web subscriptions.
        let webPush: AppConfiguration.WebPush?

        /// Checks that the app takes tokens of a kind: web subscriptions only with a VAPID key, for they are made with
        /// its public half and every push to them is signed with it.
        /// - Throws: ``APIError`` `400 webPushNotConfigured`.
        func checkTakes(_ kind: TokenKind) throws(APIError) {
            guard kind.isWebPush, webPush == nil else { return }
            throw APIError(
                .badRequest, reason: "webPushNotConfigured",
                "\(bundleID) takes no web push subscriptions: configure its VAPID key (HERALD_VAPID_PRIVATE_KEY and HERALD_VAPID_SUBJECT, docs/web-push.md) first."
            )
        }
    }

    let apps: [String: App]
    /// The push services a web subscription's endpoint may name.
    let pushServices: PushServiceHosts
    /// Whether any app has registration keys: then every registration must carry one.
    let requiresRegistrationKey: Bool

    init(_ configurations: [AppConfiguration], pushServices: PushServiceHosts = .default) {
        var apps: [String: App] = [:]
        for configuration in configurations {
            apps[configuration.bundleID] = App(
                bundleID: configuration.bundleID, contentKey: configuration.contentKey,
                receipts: configuration.receipts,
                registrationKeyDigests: configuration.registrationKeys.map { SHA256.hash(data: Data($0.utf8)) },
                preferenceCategories: configuration.preferenceCategories,
                defaultPreferenceCategory: configuration.defaultPreferenceCategory,
                frequencyCaps: configuration.frequencyCaps,
                quietHours: configuration.quietHours, quietHoursTimeZone: configuration.quietHoursTimeZone,
                webPush: configuration.webPush)
        }
        self.apps = apps
        self.pushServices = pushServices
        requiresRegistrationKey = apps.values.contains { !$0.registrationKeyDigests.isEmpty }
    }

    /// The app a request names, or the only app when it names none; for what a caller asks, see
    /// ``app(named:field:seenBy:)``.
    /// - Throws: ``APIError`` `400 missingTopic` (several apps, none named) or `400 unknownTopic`.
    func app(named topic: String?, field: String = "topic") throws(APIError) -> App {
        try app(named: topic, field: field, seenBy: nil)
    }

    /// The app a caller's request names, or the only app when it names none. The errors' words list only the apps the
    /// caller sees: a key limited to some apps (an API key, a registration key shipped inside an app) learns nothing
    /// of the deployment's other apps from them.
    /// - Parameter visible: The apps the caller is limited to; `nil`: every app.
    /// - Throws: ``APIError`` `400 missingTopic` (several apps, none named) or `400 unknownTopic`.
    func app(named topic: String?, field: String = "topic", seenBy visible: Set<String>?) throws(APIError) -> App {
        // Only for the errors' words: registrations and sends that name a served app do not pay for the list.
        func seen() -> [String] { apps.keys.filter { visible?.contains($0) ?? true }.sorted() }
        guard let topic else {
            guard apps.count == 1, let only = apps.values.first else {
                let seen = seen()
                let choices = seen.isEmpty ? "" : ", one of \(seen.joined(separator: ", "))"
                throw APIError(
                    .badRequest, reason: "missingTopic",
                    "This server serves several apps: say which with \"\(field)\" (the bundle id)\(choices).")
            }
            return only
        }
        guard let app = apps[topic] else {
            let seen = seen()
            let choices = seen.isEmpty ? "an app it serves" : "one of \(seen.joined(separator: ", "))"
            throw APIError(
                .badRequest, reason: "unknownTopic",
                "This server does not serve the app \(topic): use \(choices), or configure it.")
        }
        return app
    }

    /// The app a caller's request names (or the server's only app), which the caller must be allowed: the lookup and
    /// the access check in one, so that no route does one without the other.
    /// - Throws: ``APIError`` `400 missingTopic`, `400 unknownTopic` (naming only the caller's apps), or
    ///   `403 appNotAllowed` for an app the caller named and is not allowed.
    func app(named topic: String?, field: String = "topic", for caller: KeyAccess) throws(APIError) -> App {
        let app = try app(named: topic, field: field, seenBy: caller.topics)
        try caller.check(app: app.bundleID)
        return app
    }

    /// The topics a presented registration key opens, checked before the body is read.
    /// - Returns: `nil` when registration is open (no app has keys).
    /// - Throws: ``APIError`` `401 missingRegistrationKey` or `401 invalidRegistrationKey`.
    func topicsAllowed(byRegistrationKey presented: String?) throws(APIError) -> Set<String>? {
        guard requiresRegistrationKey else { return nil }
        guard let presented, !presented.isEmpty else {
            throw APIError(
                .unauthorized, reason: "missingRegistrationKey",
                "This server needs the app's registration key: send it in the X-Herald-Registration-Key header.")
        }
        let digest = SHA256.hash(data: Data(presented.utf8))
        var topics = Set<String>()
        for app in apps.values where app.registrationKeyDigests.contains(where: { Self.equal($0, digest) }) {
            topics.insert(app.bundleID)
        }
        guard !topics.isEmpty else {
            throw APIError(
                .unauthorized, reason: "invalidRegistrationKey",
                "The X-Herald-Registration-Key is not one this server knows: use the key configured for your app.")
        }
        return topics
    }

    /// Compares two digests without stopping at the first difference.
    private static func equal(_ a: SHA256.Digest, _ b: SHA256.Digest) -> Bool {
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}

extension Optional where Wrapped == Set<String> {
    /// Whether a registration key opens a topic (`nil`: registration is open).
    func opens(_ topic: String) -> Bool {
        guard let topics = self else { return true }
        return topics.contains(topic)
    }

    /// Checks that a registration key opens the topic a registration names.
    ///
    /// Only for a topic the caller named: a request about a token alone (its removal, its preferences, its receipts)
    /// finds another app's token as unknown as a missing one (``opens(_:)``), so that a key shipped inside one app
    /// cannot learn which tokens another app has.
    /// - Throws: ``APIError`` `403 topicNotAllowed`.
    func check(_ topic: String) throws(APIError) {
        guard !opens(topic) else { return }
        throw APIError(
            .forbidden, reason: "topicNotAllowed",
            "This registration key belongs to another app: it cannot register tokens of \(topic).")
    }
}
