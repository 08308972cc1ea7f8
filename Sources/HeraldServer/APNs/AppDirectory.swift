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
    }

    let apps: [String: App]
    /// Whether any app has registration keys: then every registration must carry one.
    let requiresRegistrationKey: Bool

    init(_ configurations: [AppConfiguration]) {
        var apps: [String: App] = [:]
        for configuration in configurations {
            apps[configuration.bundleID] = App(
                bundleID: configuration.bundleID, contentKey: configuration.contentKey,
                receipts: configuration.receipts,
                registrationKeyDigests: configuration.registrationKeys.map { SHA256.hash(data: Data($0.utf8)) },
                preferenceCategories: configuration.preferenceCategories,
                defaultPreferenceCategory: configuration.defaultPreferenceCategory,
                frequencyCaps: configuration.frequencyCaps,
                quietHours: configuration.quietHours, quietHoursTimeZone: configuration.quietHoursTimeZone)
        }
        self.apps = apps
        requiresRegistrationKey = apps.values.contains { !$0.registrationKeyDigests.isEmpty }
    }

    /// The app a request names, or the only app when it names none.
    /// - Throws: ``APIError`` `400 missingTopic` (several apps, none named) or `400 unknownTopic`.
    func app(named topic: String?, field: String = "topic") throws(APIError) -> App {
        guard let topic else {
            guard apps.count == 1, let only = apps.values.first else {
                throw APIError(
                    .badRequest, reason: "missingTopic",
                    "This server serves several apps: say which with \"\(field)\" (the bundle id), one of \(apps.keys.sorted().joined(separator: ", "))."
                )
            }
            return only
        }
        guard let app = apps[topic] else {
            throw APIError(
                .badRequest, reason: "unknownTopic",
                "This server does not serve the app \(topic): use one of \(apps.keys.sorted().joined(separator: ", ")), or configure it."
            )
        }
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
    /// Checks that a registration key opens a topic (`nil`: registration is open).
    /// - Throws: ``APIError`` `403 topicNotAllowed`.
    func check(_ topic: String) throws(APIError) {
        if let topics = self, !topics.contains(topic) {
            throw APIError(
                .forbidden, reason: "topicNotAllowed",
                "This registration key belongs to another app: it cannot register or remove tokens of \(topic).")
        }
    }
}
