public import HeraldCore

/// Whether the app is in the foreground when a notification arrives. Suspended and not running count as background.
public enum AppState: Sendable, Hashable, CaseIterable {
    /// The app is active on screen.
    case foreground
    /// The app is suspended, in the background, or not running.
    case background
}

/// A place an arriving remote notification is handed to.
public enum NotificationHandler: String, Sendable, Hashable, CaseIterable {
    /// The notification service extension's `didReceive(_:withContentHandler:)`, which may change the content first.
    case serviceExtension
    /// `userNotificationCenter(_:willPresent:withCompletionHandler:)`: the app decides how to show it.
    case willPresent
    /// The system shows the alert, plays the sound or sets the badge; the app runs nothing until the user taps it.
    case shownBySystem
    /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`: about 30 seconds of background time.
    case backgroundFetch
}

/// Which handlers an arriving notification goes to, in the order they run.
///
/// The book's table, made precise:
///
/// | app        | content-available | visible (alert, badge or sound) | handlers                      |
/// |------------|-------------------|---------------------------------|-------------------------------|
/// | foreground | no                | yes                             | willPresent                   |
/// | foreground | yes               | yes                             | willPresent, backgroundFetch  |
/// | foreground | yes               | no (silent)                     | backgroundFetch               |
/// | background | no                | yes                             | shownBySystem                 |
/// | background | yes               | yes                             | shownBySystem, backgroundFetch|
/// | background | yes               | no (silent)                     | backgroundFetch               |
///
/// A notification with `mutable-content: 1` and alert text goes to the service extension first, whatever the app's
/// state. A notification that is neither visible nor `content-available` reaches no handler. Silent pushes are not
/// delivered to an app the user force-quit, and the system may hold or coalesce them.
public struct NotificationRoute: Sendable, Hashable, CustomStringConvertible {
    /// The handlers, in the order they run.
    public let handlers: [NotificationHandler]

    /// The route from the payload's flags.
    /// - Parameters:
    ///   - contentAvailable: `content-available: 1`.
    ///   - isVisible: the payload has alert text, a badge or a sound.
    ///   - passesThroughServiceExtension: `mutable-content: 1` with alert text.
    ///   - appState: whether the app is in the foreground.
    public init(contentAvailable: Bool, isVisible: Bool, passesThroughServiceExtension: Bool, appState: AppState) {
        var handlers = [NotificationHandler]()
        if passesThroughServiceExtension { handlers.append(.serviceExtension) }
        if isVisible { handlers.append(appState == .foreground ? .willPresent : .shownBySystem) }
        if contentAvailable { handlers.append(.backgroundFetch) }
        self.handlers = handlers
    }

    /// The route of a decoded payload.
    public init(payload: Payload, appState: AppState) {
        let hasAlertText = payload.aps.alert.map { !$0.isEmpty } ?? false
        self.init(
            contentAvailable: payload.aps.contentAvailable, isVisible: payload.aps.isVisible,
            passesThroughServiceExtension: payload.aps.mutableContent && hasAlertText, appState: appState)
    }

    /// Whether the route includes a handler.
    public func contains(_ handler: NotificationHandler) -> Bool { handlers.contains(handler) }

    public var description: String {
        handlers.isEmpty ? "no handler" : handlers.map(\.rawValue).joined(separator: " → ")
    }
}
