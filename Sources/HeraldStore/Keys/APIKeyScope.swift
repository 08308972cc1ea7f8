/// What an API key may do. An open set: a scope this build does not know is kept as its name.
public struct APIKeyScope: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// Send notifications and read their delivery records.
    public static let send = APIKeyScope(rawValue: "send")
    /// Manage tokens, keys and apps.
    public static let admin = APIKeyScope(rawValue: "admin")
    /// Register and unregister tokens.
    public static let register = APIKeyScope(rawValue: "register")
    /// Read what `send` and `admin` keys read (sends, activities, channels, devices), change nothing: the viewer role.
    public static let read = APIKeyScope(rawValue: "read")

    /// The scopes this build knows.
    public static let known: [APIKeyScope] = [.send, .admin, .register, .read]

    public var description: String { rawValue }

    public static func < (lhs: APIKeyScope, rhs: APIKeyScope) -> Bool { lhs.rawValue < rhs.rawValue }
}
