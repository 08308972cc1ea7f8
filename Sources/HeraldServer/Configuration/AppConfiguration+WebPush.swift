import Foundation
public import HeraldCore

extension AppConfiguration {
    /// An app's Web Push side (docs/web-push.md): the VAPID key its website's subscriptions are made with, the
    /// contact push services see, and the site's origin.
    public struct WebPush: Sendable, CustomStringConvertible {
        /// The application server key: its public half is the page's `applicationServerKey`.
        public var vapidKey: VAPIDKey
        /// The VAPID `sub`: a `mailto:` or `https:` URL a push service can reach the sender at.
        public var subject: String
        /// The website's origin (`https://example.com`): the only origin whose pages may register subscriptions from
        /// a browser (CORS), and where a notification without a link of its own opens. `nil`: registrations come from
        /// the site's own backend only.
        public var origin: String?
        /// How its web messages are written: Declarative Web Push (the default), or classic for a site whose service
        /// worker shows every message itself.
        public var format: WebPushMessage.Format

        /// - Throws: ``ConfigurationError`` for a subject or origin push services and browsers would refuse.
        public init(
            vapidKey: VAPIDKey, subject: String, origin: String? = nil, format: WebPushMessage.Format = .declarative
        ) throws(ConfigurationError) {
            do {
                try VAPID.check(subject: subject)
            } catch {
                throw ConfigurationError(error.message)
            }
            if let origin {
                guard Self.isOrigin(origin) else {
                    throw ConfigurationError(
                        "The web origin is \"\(origin)\": write the site's origin as a browser does, such as https://example.com (scheme, host and any port; no path)."
                    )
                }
            }
            self.vapidKey = vapidKey
            self.subject = subject
            self.origin = origin
            self.format = format
        }

        /// `https://host[:port]` (or `http://localhost…` for a developer's machine), lowercase, no path.
        static func isOrigin(_ text: String) -> Bool {
            guard let url = URL(string: text), let scheme = url.scheme, let host = url.host, !host.isEmpty,
                url.path.isEmpty, url.query == nil, url.fragment == nil, url.user == nil, text == text.lowercased()
            else { return false }
            return scheme == "https" || (scheme == "http" && (host == "localhost" || host == "127.0.0.1"))
        }

        /// Never the private key.
        public var description: String { "WebPush(\(vapidKey), \(subject), \(origin ?? "no origin"), \(format))" }
    }
}
