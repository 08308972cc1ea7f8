public import HeraldCore

/// Something that happened to a notification in the app, as the Apple glue reports it to the app.
public enum NotificationEvent: Sendable, Hashable {
    /// A notification arrived while the app was in the foreground; it is presented with the configured options.
    case willPresent(Payload)
    /// The user tapped the notification, dismissed it, or chose one of its actions.
    case response(Payload, NotificationResponseAction)
    /// A `content-available` push woke the app (`application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`).
    case backgroundFetch(Payload)
}
