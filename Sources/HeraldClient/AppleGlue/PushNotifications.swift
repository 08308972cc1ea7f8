// Apple-only glue. On Linux it is empty, and CI compiles it against stand-ins of Apple's frameworks
// (scripts/check-apple-glue.sh, docs/apple-glue.md). It only calls the portable, tested part:
// RegistrationClient, Registration (its app initializer), ResolvedEnvironment, InstallationID, Payload(userInfo:),
// NotificationResponseAction, ReceiptReporter.
// Keep it that way: nothing here should decide anything a test would want to check.
#if canImport(UserNotifications)
public import Foundation
public import HeraldCore
public import UserNotifications

#if canImport(UIKit) && !os(watchOS)
import UIKit
#elseif canImport(AppKit)
import AppKit
#elseif canImport(WatchKit)
import WatchKit
#endif

/// The app side of push notifications in a few calls: ask for permission, register with APNs at every launch,
/// forward the token to Herald, and present notifications in the foreground.
///
/// ```swift
/// @main final class AppDelegate: UIResponder, UIApplicationDelegate {
///     let push = PushNotifications(configuration: …) { event in … }
///
///     func application(_ application: UIApplication, didFinishLaunchingWithOptions …) -> Bool {
///         Task { await push.start() }
///         return true
///     }
///     func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
///         Task { await push.didRegister(deviceToken: deviceToken) }
///     }
///     func application(_ application: UIApplication, didFailToRegisterForRemoteNotificationsWithError error: any Error) {
///         push.didFailToRegister(error)
///     }
/// }
/// ```
@MainActor
public final class PushNotifications {
    /// What the glue needs.
    public struct Configuration: Sendable {
        /// Uploads registrations.
        public var client: RegistrationClient
        /// Where the installation id lives.
        public var storage: any KeyValueStorage
        /// The environment when the embedded profile cannot decide: `.production` for App Store and TestFlight
        /// builds (they have no profile), `.development` in the Simulator.
        public var fallbackEnvironment: APNSEnvironment
        /// What to ask the user for.
        public var authorizationOptions: UNAuthorizationOptions
        /// The categories (action buttons) to register.
        public var categories: [NotificationCategory]
        /// How a notification is shown while the app is in the foreground.
        public var foregroundPresentation: UNNotificationPresentationOptions
        /// Whether to report delivery receipts: received (in the foreground, background pushes), opened, action,
        /// dismissed.
        public var reportsReceipts: Bool

        /// - Parameters:
        ///   - client: the registration client.
        ///   - storage: where the installation id lives; the client's storage is a good choice.
        ///   - fallbackEnvironment: used when there is no readable embedded profile.
        ///   - authorizationOptions: alert, sound and badge by default.
        ///   - categories: none by default.
        ///   - foregroundPresentation: list, banner, sound and badge by default, as in the book.
        ///   - reportsReceipts: on by default; notifications without a `herald` key are never reported.
        public init(
            client: RegistrationClient, storage: any KeyValueStorage, fallbackEnvironment: APNSEnvironment,
            authorizationOptions: UNAuthorizationOptions = [.alert, .sound, .badge],
            categories: [NotificationCategory] = [],
            foregroundPresentation: UNNotificationPresentationOptions = [.list, .banner, .sound, .badge],
            reportsReceipts: Bool = true
        ) {
            self.reportsReceipts = reportsReceipts
            self.client = client
            self.storage = storage
            self.fallbackEnvironment = fallbackEnvironment
            self.authorizationOptions = authorizationOptions
            self.categories = categories
            self.foregroundPresentation = foregroundPresentation
        }
    }

    /// The settings.
    public let configuration: Configuration
    /// The signed-in user's id, sent with the next registration. Set it before ``start()`` or register again.
    public var userID: String?
    /// Tags sent with the next registration.
    public var tags: [String] = []
    /// The token of this launch, kept in memory only (tokens must not be cached across launches).
    public private(set) var token: DeviceToken?
    /// The environment the tokens are registered for, and how it was decided.
    public let environment: ResolvedEnvironment
    /// The last registration failure, for diagnostics. A failure that may pass is saved and retried later.
    public private(set) var lastError: (any Error)?

    private let delegate: CenterDelegate

    /// - Parameters:
    ///   - configuration: the client, storage and presentation settings.
    ///   - onEvent: called for foreground arrivals and user responses, on whatever thread the system uses.
    public init(configuration: Configuration, onEvent: @escaping @Sendable (NotificationEvent) -> Void) {
        self.configuration = configuration
        self.environment = ResolvedEnvironment.resolve(bundle: .main, fallback: configuration.fallbackEnvironment)
        self.delegate = CenterDelegate(
            presentation: configuration.foregroundPresentation, categories: configuration.categories,
            receipts: configuration.reportsReceipts ? ReceiptReporter(client: configuration.client) : nil,
            onEvent: onEvent)
    }

    /// Sets the delegate, asks for authorization, registers the categories and asks APNs for a token.
    ///
    /// Call it at every launch: APNs then calls `didRegisterForRemoteNotificationsWithDeviceToken`, which must call
    /// ``didRegister(deviceToken:)``. Also sends any registration saved after an earlier failure.
    /// - Returns: whether the user allowed notifications.
    @discardableResult
    public func start() async -> Bool {
        let center = UNUserNotificationCenter.current()
        center.delegate = delegate
        #if !os(tvOS)
        center.setNotificationCategories(Set(configuration.categories.map(UNNotificationCategory.init)))
        #endif
        let granted: Bool
        do {
            granted = try await center.requestAuthorization(options: configuration.authorizationOptions)
        } catch {
            lastError = error
            granted = false
        }
        // Silent pushes need no permission, so the app registers either way.
        #if canImport(UIKit) && !os(watchOS)
        UIApplication.shared.registerForRemoteNotifications()
        #elseif canImport(AppKit)
        NSApplication.shared.registerForRemoteNotifications()
        #elseif canImport(WatchKit)
        WKApplication.shared().registerForRemoteNotifications()
        #endif
        do {
            try await configuration.client.retryPending()
        } catch {
            lastError = error
        }
        // Receipts the extension queued and could not send, and any that failed before.
        await delegate.receipts?.send()
        return granted
    }

    /// Forwards the token APNs delivered to Herald. Call it from
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`.
    ///
    /// Failures are kept in ``lastError``; one that may pass is saved and sent by the next ``start()``.
    public func didRegister(deviceToken: Data) async {
        do {
            let installationID = try InstallationID.current(in: configuration.storage)
            let registration = Registration(
                app: try DeviceToken(data: deviceToken), environment: environment.environment,
                installationID: installationID, userID: userID, tags: tags)
            token = registration.token
            try await configuration.client.register(registration)
            lastError = nil
        } catch {
            lastError = error
        }
    }

    /// Records why APNs gave no token (no network, no push entitlement, the Simulator of an old Xcode).
    public func didFailToRegister(_ error: any Error) {
        lastError = error
    }

    /// Unregisters this launch's token, for logout. A failure that may pass is saved and retried by ``start()``.
    public func logout() async {
        userID = nil
        guard let token else { return }
        do {
            try await configuration.client.unregister(token)
        } catch {
            lastError = error
        }
    }

    /// Reports a background (`content-available`) push. Call it from
    /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`.
    /// - Returns: the decoded payload, or `nil` when it does not decode.
    @discardableResult
    public func didReceiveRemoteNotification(_ userInfo: [AnyHashable: Any]) -> Payload? {
        guard let payload = try? Payload(userInfo: userInfo) else { return nil }
        delegate.onEvent(.backgroundFetch(payload))
        delegate.report { await $0.received(payload) }
        return payload
    }
}

/// The notification center's delegate: decodes what arrives and hands it to the app.
private final class CenterDelegate: NSObject, UNUserNotificationCenterDelegate, Sendable {
    let presentation: UNNotificationPresentationOptions
    let categories: [NotificationCategory]
    let receipts: ReceiptReporter?
    let onEvent: @Sendable (NotificationEvent) -> Void

    init(
        presentation: UNNotificationPresentationOptions, categories: [NotificationCategory],
        receipts: ReceiptReporter?, onEvent: @escaping @Sendable (NotificationEvent) -> Void
    ) {
        self.presentation = presentation
        self.categories = categories
        self.receipts = receipts
        self.onEvent = onEvent
    }

    /// Reports a receipt without holding up the system's callback: sending may wait for the network.
    func report(_ body: @escaping @Sendable (ReceiptReporter) async -> ReceiptReporter.Outcome) {
        guard let receipts else { return }
        Task { _ = await body(receipts) }
    }

    func userNotificationCenter(
        _ center: UNUserNotificationCenter, willPresent notification: UNNotification
    ) async -> UNNotificationPresentationOptions {
        if let payload = try? Payload(userInfo: notification.request.content.userInfo) {
            onEvent(.willPresent(payload))
            report { await $0.received(payload) }
        }
        return presentation
    }

    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async {
        let content = response.notification.request.content
        guard let payload = try? Payload(userInfo: content.userInfo) else { return }
        let action = NotificationResponseAction(
            identifier: response.actionIdentifier, categoryIdentifier: content.categoryIdentifier,
            categories: categories)
        onEvent(.response(payload, action))
        report { await $0.responded(to: payload, with: action) }
    }
}
#endif
