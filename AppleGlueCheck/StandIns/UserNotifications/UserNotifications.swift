// A stand-in for Apple's UserNotifications framework, for compiling Herald's Apple glue on Linux (docs/apple-glue.md).
//
// Written from Apple's documented declarations (the iOS 18 SDK): the names, types, optionality, availability and
// concurrency annotations of what the glue uses, nothing more. Where the SDK's concurrency annotation is uncertain,
// the stricter choice is made (a type not known to be Sendable is not Sendable), so code that compiles here compiles
// with either. The behaviour is a test double's: the parts marked "Stand-in only" are not Apple's API and let tests
// drive the glue.
public import Foundation

// MARK: Options

@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, *)
public struct UNAuthorizationOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let badge = UNAuthorizationOptions(rawValue: 1 << 0)
    public static let sound = UNAuthorizationOptions(rawValue: 1 << 1)
    public static let alert = UNAuthorizationOptions(rawValue: 1 << 2)
    public static let carPlay = UNAuthorizationOptions(rawValue: 1 << 3)
    @available(iOS 12.0, macOS 10.14, watchOS 5.0, tvOS 12.0, *)
    public static let criticalAlert = UNAuthorizationOptions(rawValue: 1 << 4)
    @available(iOS 12.0, macOS 10.14, watchOS 5.0, tvOS 12.0, *)
    public static let providesAppNotificationSettings = UNAuthorizationOptions(rawValue: 1 << 5)
    @available(iOS 12.0, macOS 10.14, watchOS 5.0, tvOS 12.0, *)
    public static let provisional = UNAuthorizationOptions(rawValue: 1 << 6)
}

@available(iOS 10.0, macOS 10.14, watchOS 3.0, tvOS 10.0, *)
public struct UNNotificationPresentationOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let badge = UNNotificationPresentationOptions(rawValue: 1 << 0)
    @available(tvOS, unavailable)
    public static let sound = UNNotificationPresentationOptions(rawValue: 1 << 1)
    @available(iOS, introduced: 10.0, deprecated: 14.0, message: "Use .list and .banner")
    @available(tvOS, unavailable)
    public static let alert = UNNotificationPresentationOptions(rawValue: 1 << 2)
    @available(iOS 14.0, macOS 11.0, watchOS 7.0, *)
    @available(tvOS, unavailable)
    public static let list = UNNotificationPresentationOptions(rawValue: 1 << 3)
    @available(iOS 14.0, macOS 11.0, watchOS 7.0, *)
    @available(tvOS, unavailable)
    public static let banner = UNNotificationPresentationOptions(rawValue: 1 << 4)
}

@available(iOS 10.0, macOS 10.14, watchOS 3.0, *)
@available(tvOS, unavailable)
public struct UNNotificationActionOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let authenticationRequired = UNNotificationActionOptions(rawValue: 1 << 0)
    public static let destructive = UNNotificationActionOptions(rawValue: 1 << 1)
    public static let foreground = UNNotificationActionOptions(rawValue: 1 << 2)
}

@available(iOS 10.0, macOS 10.14, watchOS 3.0, *)
@available(tvOS, unavailable)
public struct UNNotificationCategoryOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let customDismissAction = UNNotificationCategoryOptions(rawValue: 1 << 0)
    @available(iOS 10.0, *)
    @available(macOS, unavailable)
    @available(watchOS, unavailable)
    public static let allowInCarPlay = UNNotificationCategoryOptions(rawValue: 1 << 1)
    @available(iOS 11.0, macOS 10.14, *)
    @available(watchOS, unavailable)
    public static let hiddenPreviewsShowTitle = UNNotificationCategoryOptions(rawValue: 1 << 2)
    @available(iOS 11.0, macOS 10.14, *)
    @available(watchOS, unavailable)
    public static let hiddenPreviewsShowSubtitle = UNNotificationCategoryOptions(rawValue: 1 << 3)
}

// MARK: Content

@available(iOS 10.0, macOS 10.14, watchOS 3.0, tvOS 10.0, *)
open class UNNotificationContent: NSObject, NSCopying, NSMutableCopying {
    open internal(set) var title = ""
    open internal(set) var subtitle = ""
    open internal(set) var body = ""
    open internal(set) var badge: NSNumber?
    open internal(set) var categoryIdentifier = ""
    open internal(set) var userInfo: [AnyHashable: Any] = [:]
    @available(tvOS, unavailable)
    open internal(set) var attachments: [UNNotificationAttachment] = []

    public override init() { super.init() }

    open func copy(with zone: NSZone? = nil) -> Any { copy(into: UNNotificationContent()) }

    open func mutableCopy(with zone: NSZone? = nil) -> Any { copy(into: UNMutableNotificationContent()) }

    private func copy<Content: UNNotificationContent>(into copy: Content) -> Content {
        copy.title = title
        copy.subtitle = subtitle
        copy.body = body
        copy.badge = badge
        copy.categoryIdentifier = categoryIdentifier
        copy.userInfo = userInfo
        copy.attachments = attachments
        return copy
    }
}

@available(iOS 10.0, macOS 10.14, watchOS 3.0, tvOS 10.0, *)
open class UNMutableNotificationContent: UNNotificationContent {
    open override var title: String {
        get { super.title }
        set { super.title = newValue }
    }
    open override var subtitle: String {
        get { super.subtitle }
        set { super.subtitle = newValue }
    }
    open override var body: String {
        get { super.body }
        set { super.body = newValue }
    }
    open override var badge: NSNumber? {
        get { super.badge }
        set { super.badge = newValue }
    }
    open override var categoryIdentifier: String {
        get { super.categoryIdentifier }
        set { super.categoryIdentifier = newValue }
    }
    open override var userInfo: [AnyHashable: Any] {
        get { super.userInfo }
        set { super.userInfo = newValue }
    }
    @available(tvOS, unavailable)
    open override var attachments: [UNNotificationAttachment] {
        get { super.attachments }
        set { super.attachments = newValue }
    }
}

@available(iOS 10.0, macOS 10.14, watchOS 3.0, *)
@available(tvOS, unavailable)
open class UNNotificationAttachment: NSObject {
    open private(set) var identifier: String
    open private(set) var url: URL
    open private(set) var type: String

    /// Stand-in only: the system refuses a file that is not there, as this does.
    public init(identifier: String, url URL: URL, options: [AnyHashable: Any]? = nil) throws {
        guard FileManager.default.fileExists(atPath: URL.path) else {
            throw NSError(domain: "UNErrorDomain", code: 100, userInfo: [NSLocalizedDescriptionKey: "Invalid attachment file URL"])
        }
        self.identifier = identifier
        self.url = URL
        self.type = "public.data"
        super.init()
    }
}

@available(iOS 10.0, macOS 10.14, watchOS 3.0, tvOS 10.0, *)
open class UNNotificationTrigger: NSObject {}

@available(iOS 10.0, macOS 10.14, watchOS 3.0, tvOS 10.0, *)
open class UNNotificationRequest: NSObject {
    open private(set) var identifier: String
    open private(set) var content: UNNotificationContent
    open private(set) var trigger: UNNotificationTrigger?

    public init(identifier: String, content: UNNotificationContent, trigger: UNNotificationTrigger?) {
        self.identifier = identifier
        self.content = content.copy() as! UNNotificationContent
        self.trigger = trigger
        super.init()
    }
}

@available(iOS 10.0, macOS 10.14, watchOS 3.0, tvOS 10.0, *)
open class UNNotification: NSObject {
    open private(set) var date: Date
    open private(set) var request: UNNotificationRequest

    /// Stand-in only: the system makes notifications.
    public init(request: UNNotificationRequest, date: Date = Date()) {
        self.request = request
        self.date = date
        super.init()
    }
}

@available(iOS 10.0, macOS 10.14, watchOS 3.0, *)
@available(tvOS, unavailable)
open class UNNotificationResponse: NSObject {
    open private(set) var notification: UNNotification
    open private(set) var actionIdentifier: String

    /// Stand-in only: the system makes responses.
    public init(notification: UNNotification, actionIdentifier: String) {
        self.notification = notification
        self.actionIdentifier = actionIdentifier
        super.init()
    }
}

/// The identifier of a response to the notification itself (a tap), rather than to one of its actions.
@available(iOS 10.0, macOS 10.14, watchOS 3.0, *)
@available(tvOS, unavailable)
public let UNNotificationDefaultActionIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"

/// The identifier of a dismissal, for categories with `customDismissAction`.
@available(iOS 10.0, macOS 10.14, watchOS 3.0, *)
@available(tvOS, unavailable)
public let UNNotificationDismissActionIdentifier = "com.apple.UNNotificationDismissActionIdentifier"

// MARK: Categories and actions

@available(iOS 10.0, macOS 10.14, watchOS 3.0, *)
@available(tvOS, unavailable)
open class UNNotificationAction: NSObject {
    open private(set) var identifier: String
    open private(set) var title: String
    open private(set) var options: UNNotificationActionOptions

    private init(identifier: String, title: String, options: UNNotificationActionOptions, designated: Void) {
        self.identifier = identifier
        self.title = title
        self.options = options
        super.init()
    }

    public convenience init(identifier: String, title: String, options: UNNotificationActionOptions = []) {
        self.init(identifier: identifier, title: title, options: options, designated: ())
    }
}

@available(iOS 10.0, macOS 10.14, watchOS 3.0, *)
@available(tvOS, unavailable)
open class UNNotificationCategory: NSObject {
    open private(set) var identifier: String
    open private(set) var actions: [UNNotificationAction]
    open private(set) var intentIdentifiers: [String]
    open private(set) var options: UNNotificationCategoryOptions

    private init(
        identifier: String, actions: [UNNotificationAction], intentIdentifiers: [String],
        options: UNNotificationCategoryOptions, designated: Void
    ) {
        self.identifier = identifier
        self.actions = actions
        self.intentIdentifiers = intentIdentifiers
        self.options = options
        super.init()
    }

    public convenience init(
        identifier: String, actions: [UNNotificationAction], intentIdentifiers: [String],
        options: UNNotificationCategoryOptions = []
    ) {
        self.init(
            identifier: identifier, actions: actions, intentIdentifiers: intentIdentifiers, options: options,
            designated: ())
    }
}

// MARK: The notification center

@available(iOS 10.0, macOS 10.14, watchOS 3.0, tvOS 10.0, *)
public protocol UNUserNotificationCenterDelegate: NSObjectProtocol {
    @available(iOS 10.0, macOS 10.14, watchOS 3.0, tvOS 10.0, *)
    func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification) async
        -> UNNotificationPresentationOptions

    @available(iOS 10.0, macOS 10.14, watchOS 3.0, *)
    @available(tvOS, unavailable)
    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async
}

/// The SDK's requirements are optional (Objective-C): a delegate that leaves one out gets the system's default.
extension UNUserNotificationCenterDelegate {
    public func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification)
        async -> UNNotificationPresentationOptions
    { [] }

    public func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse)
        async
    {}
}

/// Sendable in the iOS 18 SDK (`NS_SWIFT_SENDABLE`): the center is thread-safe.
@available(iOS 10.0, macOS 10.14, watchOS 3.0, tvOS 10.0, *)
open class UNUserNotificationCenter: NSObject, @unchecked Sendable {
    private struct State {
        weak var delegate: (any UNUserNotificationCenterDelegate)?
        var categories: Set<UNNotificationCategory> = []
        var authorizationAnswer: Result<Bool, any Error> = .success(true)
        var authorizationRequests: [UNAuthorizationOptions] = []
    }

    private let lock = NSLock()
    private var state = State()

    private static let shared = UNUserNotificationCenter()

    open class func current() -> UNUserNotificationCenter { shared }

    private func withState<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }

    /// Held weakly, as the SDK does: the app keeps its delegate alive.
    weak open var delegate: (any UNUserNotificationCenterDelegate)? {
        get { withState { $0.delegate } }
        set { withState { $0.delegate = newValue } }
    }

    open func requestAuthorization(options: UNAuthorizationOptions = []) async throws -> Bool {
        let answer = withState { state in
            state.authorizationRequests.append(options)
            return state.authorizationAnswer
        }
        return try answer.get()
    }

    @available(tvOS, unavailable)
    open func setNotificationCategories(_ categories: Set<UNNotificationCategory>) {
        withState { $0.categories = categories }
    }

    @available(tvOS, unavailable)
    open func notificationCategories() async -> Set<UNNotificationCategory> { withState { $0.categories } }

    // MARK: Stand-in only

    /// What ``requestAuthorization(options:)`` answers: granted, refused, or an error.
    public func answerAuthorization(with answer: Result<Bool, any Error>) {
        withState { $0.authorizationAnswer = answer }
    }

    /// The options of each authorization request, in order.
    public var authorizationRequests: [UNAuthorizationOptions] { withState { $0.authorizationRequests } }

    /// Forgets the delegate, the categories and the requests: a new launch.
    public func reset() { withState { $0 = State() } }
}

// MARK: Localized texts

extension NSString {
    /// A localized string for a notification, resolved when it is shown. Stand-in only: the key itself, with the
    /// arguments after it, since there is no app bundle.
    @available(iOS 10.0, macOS 10.14, watchOS 3.0, tvOS 10.0, *)
    public class func localizedUserNotificationString(forKey key: String, arguments: [Any]?) -> String {
        ([key] + (arguments ?? []).map { "\($0)" }).joined(separator: " ")
    }
}

// MARK: The service extension

@available(iOS 10.0, macOS 10.14, watchOS 6.0, *)
@available(tvOS, unavailable)
open class UNNotificationServiceExtension: NSObject {
    public override init() { super.init() }

    open func didReceive(
        _ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void
    ) {
        contentHandler(request.content)
    }

    open func serviceExtensionTimeWillExpire() {}
}
