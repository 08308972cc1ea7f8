package import Foundation
package import HeraldStore

/// What a send does with the devices it reaches during their quiet hours (`"quietHours"` of `POST /api/send`).
package enum QuietHoursMode: String, Sendable, Hashable, CaseIterable {
    /// Each such device gets the notification once, when its window ends in its time zone. The default: what the
    /// person expects of an app that respects their night.
    case `defer`
    /// Such devices do not get it; they are counted as suppressed.
    case drop
    /// Quiet hours do not apply to this send.
    case ignore
}

/// A send's quiet-hours rule, as its job stores it: the window, what happens to quiet devices, and the zone of
/// devices that registered none.
package struct QuietHoursRule: Sendable, Hashable {
    /// `defer` or `drop` (a send that ignores quiet hours has no rule).
    package var mode: QuietHoursMode
    /// The app's window, in each device's time zone.
    package var window: QuietHours
    /// The time zone of devices that registered none (the app's, UTC unless configured).
    package var unsetZone: TimeZone
    /// When the send's devices are due, quiet hours aside: its `sendAt`, else the instant it was accepted. (Each
    /// time zone of a `localTime` send has its own instant instead.) Stored, so that every worker that runs or
    /// resumes the send finds the same devices quiet.
    package var from: Date

    package init(mode: QuietHoursMode, window: QuietHours, unsetZone: TimeZone, from: Date) {
        self.mode = mode
        self.window = window
        self.unsetZone = unsetZone
        self.from = from
    }
}
