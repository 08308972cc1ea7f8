import Foundation
import HeraldCore
import HeraldSending
import HeraldStore
import Logging

/// A change to a person's notification preferences, whichever door it came through — the app for its own user
/// (`PUT /api/preferences/{token}`), an admin (`PUT /api/devices/{token}/preferences`) or the console's form: stored
/// the one way, logged the one way, and audited in the same words when an operator made it.
struct PreferenceChanges: Sendable {
    let store: any Store
    let clock: any WallClock
    let audit: AuditTrail

    /// Categories turned on, off or back to their default (`nil`), and the person's own quiet hours.
    struct Change: Sendable, Hashable {
        var choices: [String: Bool?] = [:]
        var quietHours: OwnQuietHoursChange = .keep

        /// The change in words, as the audit log shows it: `marketing off, news default, quiet hours 23:00-07:00`.
        var description: String {
            var words = choices.keys.sorted().map { name in
                "\(name) \(choices[name].flatMap { $0.map { $0 ? "on" : "off" } } ?? "default")"
            }
            switch quietHours {
            case .keep: break
            case .appWindow: words.append("quiet hours default")
            case .own(let own): words.append("quiet hours \(own)")
            }
            return words.joined(separator: ", ")
        }
    }

    /// Stores the change for the person (`subject`) of an app.
    /// - Parameters:
    ///   - audited: Whether the audit log records it: an admin's or a console session's change, not an app changing
    ///     its own user's choices, which is that user's doing.
    ///   - auditSubject: What the audit entry names: a redacted token, or the person.
    func apply(
        _ change: Change, topic: String, subject: PreferenceSubject, by caller: Caller, audited: Bool,
        auditSubject: String
    ) async throws {
        _ = try await store.updatePreferences(
            topic: topic, subject: subject, choices: change.choices, quietHours: change.quietHours, at: clock.now())
        caller.logger.info(
            "Changed notification preferences",
            metadata: [LogKey.topic: "\(topic)", "subject": "\(subject)", LogKey.count: "\(change.choices.count)"])
        if audited {
            await audit.record(
                .preferencesChanged, by: caller, app: topic, subject: auditSubject, detail: change.description)
        }
    }
}
