// Apple-only glue. On Linux it is empty, and CI compiles it against stand-ins of Apple's frameworks
// (scripts/check-apple-glue.sh, docs/apple-glue.md). Keep it a mapping with no decisions;
// everything that decides something lives in the portable part (Actions/) and is tested on Linux.
#if canImport(UserNotifications) && !os(tvOS)
public import UserNotifications

extension UNNotificationCategory {
    /// The system category for a platform-neutral description.
    public convenience init(_ category: NotificationCategory) {
        self.init(
            identifier: category.identifier, actions: category.actions.map(UNNotificationAction.init),
            intentIdentifiers: [], options: UNNotificationCategoryOptions(category.options))
    }
}

extension UNNotificationAction {
    /// The system action for a platform-neutral description.
    public convenience init(_ action: NotificationAction) {
        self.init(
            identifier: action.identifier, title: action.title, options: UNNotificationActionOptions(action.options))
    }
}

extension UNNotificationActionOptions {
    /// The system options for the platform-neutral ones.
    public init(_ options: NotificationAction.Options) {
        self = []
        if options.contains(.authenticationRequired) { insert(.authenticationRequired) }
        if options.contains(.destructive) { insert(.destructive) }
        if options.contains(.foreground) { insert(.foreground) }
    }
}

extension UNNotificationCategoryOptions {
    /// The system options for the platform-neutral ones; options a platform lacks are left out.
    public init(_ options: NotificationCategory.Options) {
        self = []
        if options.contains(.customDismissAction) { insert(.customDismissAction) }
        #if os(iOS) && !targetEnvironment(macCatalyst)
        if options.contains(.allowInCarPlay) { insert(.allowInCarPlay) }
        #endif
        #if os(iOS) || os(macOS) || os(visionOS)
        if options.contains(.hiddenPreviewsShowTitle) { insert(.hiddenPreviewsShowTitle) }
        if options.contains(.hiddenPreviewsShowSubtitle) { insert(.hiddenPreviewsShowSubtitle) }
        #endif
    }
}
#endif
