public import Foundation

/// At most so many notifications per person in a period: for one preference category of an app, or for all of them.
///
/// Periods are fixed windows counted from 1970-01-01 00:00 UTC: a day is a UTC day, a week starts on a Thursday, an
/// hour on the hour. A window's count starts at zero when it begins, whatever the last window held.
public struct FrequencyCap: Sendable, Hashable, CustomStringConvertible {
    /// The longest period, in seconds (a year).
    public static let maximumPeriodSeconds = 366 * 86_400

    /// The category it counts; `nil`: every non-mandatory category of the app (and sends with none), written `*`.
    public var category: String?
    /// The most notifications a person gets in one window.
    public var limit: Int
    /// The window's length, in seconds.
    public var periodSeconds: Int

    public init(category: String?, limit: Int, periodSeconds: Int) {
        self.category = category
        self.limit = limit
        self.periodSeconds = periodSeconds
    }

    /// The stored scope: the category, or `*` for all.
    package var scope: String { category ?? "*" }

    /// The window holding `date`: its start, in microseconds since 1970, and its end.
    package func window(at date: Date) -> (start: Int64, end: Int64) {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let period = Int64(periodSeconds)
        let start = seconds - ((seconds % period) + period) % period
        return (start * 1_000_000, (start + period) * 1_000_000)
    }

    /// As the configuration writes it: `marketing:3/1d`, `*:10/1d`.
    public var description: String {
        let period =
            if periodSeconds % 604_800 == 0 { "\(periodSeconds / 604_800)w" }
            else if periodSeconds % 86_400 == 0 { "\(periodSeconds / 86_400)d" }
            else if periodSeconds % 3_600 == 0 { "\(periodSeconds / 3_600)h" }
            else if periodSeconds % 60 == 0 { "\(periodSeconds / 60)m" }
            else { "\(periodSeconds)s" }
        return "\(scope):\(limit)/\(period)"
    }
}

/// What ``FrequencyCapStore/claimFrequencyCaps(_:topic:subjects:send:recordOnSend:at:)`` decided for a batch.
public struct FrequencyCapClaim: Sendable, Hashable {
    /// The subject keys that may be notified: each cap had room, or the send had claimed them already.
    public var allowed: Set<String>
    /// The devices left out (one per entry of `subjects` whose subject is not allowed).
    public var suppressed: Int

    public init(allowed: Set<String>, suppressed: Int) {
        self.allowed = allowed
        self.suppressed = suppressed
    }
}

/// One subject's counter in one window of a cap.
public struct FrequencyCapCounter: Sendable, Hashable {
    /// The notifications counted in the window.
    public var count: Int
    /// The send that counted last.
    public var lastSend: SendID?
}

/// Counts the notifications each person got per app, cap and window, for every instance: a send claims a batch of
/// subjects before it sends to them, and the claim and its check are one transaction, so a cap holds when several
/// sends (on several instances) reach the same people at once.
///
/// A claim is spent when it is made: a notification that then fails, or a device left unsent by a crash, still
/// counts, so a person gets at most the cap, sometimes fewer. A send that claims the same subject again (another of
/// their devices, a resumed run, another shard) spends nothing more while it is the last send that subject's row
/// counted. Methods throw ``StoreError``.
public protocol FrequencyCapStore: Sendable {
    /// Claims one notification in the current window of every cap for each subject, for those that have room in all
    /// of them; the others are left as they were.
    /// - Parameters:
    ///   - subjects: One ``PreferenceSubject`` key per device of the batch (repeated for a person's devices).
    ///   - send: The claiming send: a subject it claimed already is allowed without spending more.
    ///   - recordOnSend: Whether the devices left out are added to the send's `suppressed.frequencyCap` in the same
    ///     transaction (a background send, whose row exists).
    func claimFrequencyCaps(
        _ caps: [FrequencyCap], topic: String, subjects: [String], send: SendID, recordOnSend: Bool, at date: Date
    ) async throws -> FrequencyCapClaim

    /// A subject's counter of each cap in the window holding `date`, in the order of `caps` (`nil`: never counted):
    /// what a delivery trace reads to say a cap left the device out.
    func frequencyCapCounters(_ caps: [FrequencyCap], topic: String, subject: String, at date: Date) async throws
        -> [FrequencyCapCounter?]

    /// Deletes up to `limit` counters whose window ended before `date`; returns how many.
    func purgeFrequencyWindows(endedBefore date: Date, limit: Int) async throws -> Int
}
