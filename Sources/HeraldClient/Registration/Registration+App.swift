public import Foundation
public import HeraldCore

extension Registration {
    /// This app's registration of a token, filled in from the app's bundle and the device's settings.
    ///
    /// The topic is the bundle id, the app version `CFBundleShortVersionString`, the languages
    /// `Locale.preferredLanguages`, the platform and time zone the current ones. The Apple glue registers every kind
    /// of token through it, so the device token, the push-to-start token and each activity's update token describe the
    /// installation alike.
    /// - Parameters:
    ///   - token: the token to register.
    ///   - kind: what the token addresses; `.device` by default.
    ///   - environment: which APNs the token belongs to.
    ///   - bundle: the app's bundle; `.main` by default.
    ///   - installationID: the id from ``InstallationID``.
    ///   - userID: the signed-in user's id, if any.
    ///   - tags: labels the server can target.
    public init(
        app token: DeviceToken, kind: TokenKind = .device, environment: APNSEnvironment, bundle: Bundle = .main,
        installationID: UUID?, userID: String?, tags: [String]
    ) {
        self.init(
            token: token, environment: environment, topic: bundle.bundleIdentifier, userID: userID,
            preferredLanguages: Locale.preferredLanguages,
            appVersion: bundle.infoDictionary?["CFBundleShortVersionString"] as? String, platform: .current,
            installationID: installationID, tokenKind: kind, tags: tags)
    }
}
