public import Foundation
public import HeraldCore
public import HeraldStore

/// The limits a new API key may carry, read the same way by `herald keys create`, `POST /api/keys` and the console:
/// the apps it is for, one environment, and when it expires (docs/security.md).
public struct APIKeyLimits: Sendable, Hashable {
    /// The apps (bundle ids); empty: every app.
    public var apps: Set<String>
    /// The one environment; `nil`: both.
    public var environment: APNSEnvironment?
    /// When it stops working; `nil`: never.
    public var expiresAt: Date?

    /// Reads the limits people write.
    /// - Parameters:
    ///   - apps: Bundle ids, each 1 to 255 bytes without white space.
    ///   - environment: `production` or `development` (or `sandbox`), if given.
    ///   - expires: How long from `now` (`90d`, `12h`, `30m`), or an RFC 3339 instant; it must be in the future.
    /// - Throws: ``APIKeyLimitsError`` naming the field and what to write.
    public init(apps: [String], environment: String?, expires: String?, now: Date) throws(APIKeyLimitsError) {
        for app in apps where app.isEmpty || app.utf8.count > 255 || app.contains(where: \.isWhitespace) {
            throw APIKeyLimitsError(field: "app", "\"\(app)\" is not a bundle id: write one like com.example.app.")
        }
        self.apps = Set(apps)
        if let environment {
            guard let parsed = APNSEnvironment(name: environment) else {
                throw APIKeyLimitsError(field: "environment", "\"\(environment)\" is no environment: write production or development.")
            }
            self.environment = parsed
        }
        if let expires {
            guard let date = Self.expiry(expires, now: now), date > now else {
                throw APIKeyLimitsError(
                    field: "expires",
                    "\"\(expires)\" is not a time to come: write a duration such as 90d, 12h or 30m, or an instant such as 2027-01-31T00:00:00Z.")
            }
            self.expiresAt = date
        }
    }

    /// `90d`, `12h`, `30m` from `now`, or an RFC 3339 instant; `nil` for anything else.
    static func expiry(_ text: String, now: Date) -> Date? {
        if let unit = text.last, let count = Int(text.dropLast()), count > 0, count <= 36_500 * 24 * 60 {
            let seconds: Int? =
                switch unit {
                case "d": count * 86_400
                case "h": count * 3_600
                case "m": count * 60
                default: nil
                }
            if let seconds { return now.addingTimeInterval(TimeInterval(seconds)) }
        }
        return RFC3339.date(text)
    }
}

/// A key limit that cannot be read: which field, and what to write instead.
public struct APIKeyLimitsError: Error, Sendable, CustomStringConvertible {
    /// `app`, `environment` or `expires`.
    public let field: String
    /// What is wrong and what to write.
    public let message: String

    init(field: String, _ message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { message }
}

extension APIKeyLimits {
    /// A key with its scopes and limits in words, never its secret: what the CLI prints and the audit log keeps.
    public static func describe(_ key: APIKey) -> String {
        "\(key.name) (\(key.prefix.isEmpty ? "no prefix" : key.prefix + "…")), scopes \(key.scopes.sorted().map(\.rawValue).joined(separator: ","))"
            + describeLimits(key)
    }

    /// A key's apps, environment and expiry in words: `, apps com.alpha.app, production only, expires …`.
    public static func describeLimits(_ key: APIKey) -> String {
        var words = key.apps.isEmpty ? ", every app" : ", apps \(key.apps.sorted().joined(separator: ","))"
        if let environment = key.environment { words += ", \(environment.name) only" }
        if let expiresAt = key.expiresAt { words += ", expires \(RFC3339.string(expiresAt))" }
        return words
    }
}
