public import Foundation
public import HeraldStore
import HeraldCore

/// What an endpoint's URL and events must be, checked the same way by the API, the console and the CLI.
public enum WebhookEndpointRules {
    /// The longest URL accepted, in bytes.
    public static let maximumURLBytes = 2048
    /// The longest description, in bytes.
    public static let maximumDescriptionBytes = 500
    /// Why an endpoint an operator paused (API, console or CLI) is paused.
    public static let pausedByAdministrator = "Paused by an administrator."

    /// An endpoint as the audit log describes it: its URL without query or fragment (a receiver's token may ride in
    /// the query, and the log holds no secret) and its events.
    public static func auditDetail(url: String, events: [WebhookEventType]) -> String {
        var shown = shownURL(url)
        // The log keeps 1,000 bytes of detail; a URL may have 2,048.
        if shown.utf8.count > 600 { shown = String(shown.prefix(600)) + "…" }
        return "\(shown) for \(events.map(\.rawValue).joined(separator: ", "))"
    }

    /// An endpoint's URL without its query, fragment, user name or password, for those who may see the endpoint but
    /// not a secret a receiver put in its URL (the audit log, `read` keys): empty when it does not parse.
    public static func shownURL(_ url: String) -> String {
        guard var parts = URLComponents(string: url) else { return "" }
        parts.query = nil
        parts.fragment = nil
        parts.user = nil
        parts.password = nil
        return parts.string ?? ""
    }

    /// Why a URL is refused, or `nil` when it is fine: `http` or `https`, a host, no user name or password, no
    /// fragment. `http` is for receivers on the same host; production receivers use `https` (verified TLS).
    public static func problem(withURL text: String) -> String? {
        guard text.utf8.count <= maximumURLBytes else { return "it must have at most \(maximumURLBytes) bytes" }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return "it must be an http:// or https:// URL" }
        guard let host = url.host, !host.isEmpty else { return "it must name a host" }
        guard url.user == nil, url.password == nil else {
            return "it must not carry a user name or password: the signature authenticates Herald"
        }
        guard url.fragment == nil else { return "it must not have a #fragment" }
        return nil
    }

    /// Why a description is refused, or `nil` when it is fine: at most ``maximumDescriptionBytes`` bytes, no control
    /// characters (it is shown in the console, the CLI's listing and the audit log).
    public static func problem(withDescription text: String) -> String? {
        guard text.utf8.count <= maximumDescriptionBytes, !RegistrationRules.hasControlCharacter(text) else {
            return "it has at most \(maximumDescriptionBytes) bytes and no control characters"
        }
        return nil
    }

    /// Event types from their names.
    /// - Throws: the first unknown name, and the ones known, as ``UnknownEventType``.
    public static func eventTypes(_ names: [String]) throws(UnknownEventType) -> [WebhookEventType] {
        try names.map { name throws(UnknownEventType) in
            guard let type = WebhookEventType(rawValue: name), type != .test else { throw UnknownEventType(name: name) }
            return type
        }
    }

    /// A name that is not a subscribable event type.
    public struct UnknownEventType: Error, Sendable, CustomStringConvertible {
        public let name: String
        public var description: String {
            "\"\(name)\" is not an event type: use \(WebhookEventType.subscribable.map(\.rawValue).joined(separator: ", "))"
        }
    }

    /// The `webhook.test` event "send a test event" writes.
    public static func testEvent(app: String, at now: Date) -> WebhookEventDraft {
        WebhookEventDraft(
            type: .test, app: app,
            data: .object([
                "message": .string("A test event from Herald: this endpoint receives and verifies deliveries."),
                "at": .string(RFC3339.string(now)),
            ]), at: now)
    }
}
