/// How an app's sends rank against other apps' sends of the same lane (docs/sending.md, "Priorities"): a `high`
/// app's waiting send is claimed before a `normal` one's, and gets the shared in-flight budget before it; `low` comes
/// last. Lanes still come first: a priority never lifts a campaign above a Live Activity update.
public enum AppPriority: String, Sendable, Hashable, CaseIterable {
    case high
    case normal
    case low

    /// The order in which priorities are served: 0 first.
    public var rank: Int {
        switch self {
        case .high: 0
        case .normal: 1
        case .low: 2
        }
    }
}

/// The order in which the waiting sends of a lane are claimed: by their app's priority, then oldest first.
public struct ClaimPrecedence: Sendable, Hashable {
    /// Each app's priority by bundle id; an app not listed (or a send stored without its app) is `normal`.
    public var priorities: [String: AppPriority]

    public init(priorities: [String: AppPriority] = [:]) {
        self.priorities = priorities
    }

    /// Oldest first, whatever the app.
    public static let none = ClaimPrecedence()

    /// The apps of a priority, sorted: one configuration is one statement text.
    func apps(_ priority: AppPriority) -> [String] {
        priorities.filter { $0.value == priority }.keys.sorted()
    }
}
