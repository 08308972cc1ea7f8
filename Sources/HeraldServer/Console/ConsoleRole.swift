import HeraldStore

/// What a console session may do, from the key it signed in with (docs/security.md, "The console").
///
/// - `admin`: a key with the `admin` scope, or the one-time link: everything, keys and the audit log included.
/// - `operator`: a key with `send`: compose, send, cancel sends, end activities, create and delete channels.
/// - `viewer`: a key with `read`: every page but keys and the audit log, no change.
enum ConsoleRole: String, Sendable, Comparable {
    case viewer
    case `operator`
    case admin

    init(_ session: ConsoleSession) {
        guard let key = session.apiKey else {
            self = .admin
            return
        }
        self = key.allows(.admin) ? .admin : key.allows(.send) ? .operator : .viewer
    }

    /// Whether a key may sign in at all.
    static func signsIn(_ key: APIKey) -> Bool { key.allows(.admin) || key.allows(.send) || key.allows(.read) }

    private var rank: Int {
        switch self {
        case .viewer: 0
        case .operator: 1
        case .admin: 2
        }
    }

    static func < (lhs: ConsoleRole, rhs: ConsoleRole) -> Bool { lhs.rank < rhs.rank }
}
