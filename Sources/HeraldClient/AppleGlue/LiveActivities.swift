// Apple-only glue. On Linux it is empty, and CI compiles it against stand-ins of Apple's frameworks
// (scripts/check-apple-glue.sh, docs/apple-glue.md). It only calls the portable, tested part:
// RegistrationClient (registerPushToStartToken, registerActivityUpdateToken, activityEnded), Registration (its app
// initializer), DeviceToken, ResolvedEnvironment, InstallationID.
// Keep it that way: nothing here should decide anything a test would want to check.
//
// ActivityKit's `Activity` is handled only on the main actor, and tasks are handed the activity's id rather than the
// activity, so nothing here depends on whether the SDK in use declares `Activity` Sendable.
#if canImport(ActivityKit) && os(iOS)
public import ActivityKit
import Foundation
public import HeraldCore

/// An `ActivityAttributes` type whose metatype may cross into the tasks that watch its activities: every struct or enum
/// that is not itself isolated to an actor. Swift 6.2 checks it (`SendableMetatype`); earlier compilers cannot say it.
#if compiler(>=6.2)
public typealias LiveActivityAttributes = ActivityAttributes & SendableMetatype
#else
public typealias LiveActivityAttributes = ActivityAttributes
#endif

/// Keeps Herald told about one `ActivityAttributes` type's Live Activity tokens: the push-to-start token (iOS 17.2+),
/// each activity's update token, and each activity's end.
///
/// ```swift
/// let deliveries = LiveActivities<DeliveryAttributes>(
///     configuration: .init(client: client, storage: storage, fallbackEnvironment: .production) { activity in
///         activity.attributes.orderNumber
///     })
/// Task { await deliveries.run() }  // at every launch, next to PushNotifications.start()
/// ```
///
/// The server can then start an activity of this type on the device (its `attributes-type` is
/// ``Configuration/activityType``) and update or end each running one by the app's id of it. An activity that ends
/// while the app is not running is not reported: its update token stays registered until the server ends the activity
/// itself.
@available(iOS 16.1, *)
@MainActor
public final class LiveActivities<Attributes: LiveActivityAttributes> {
    /// What the glue needs.
    public struct Configuration: Sendable {
        /// Uploads the tokens.
        public var client: RegistrationClient
        /// Where the installation id lives; the client's storage is a good choice.
        public var storage: any KeyValueStorage
        /// The environment when the embedded profile cannot decide, as in ``PushNotifications/Configuration``.
        public var fallbackEnvironment: APNSEnvironment
        /// The name the server sends in `attributes-type` to start an activity of this type.
        public var activityType: String
        /// The app's own id of an activity, by which the server updates and ends it.
        public var activityID: @MainActor @Sendable (Activity<Attributes>) -> String

        /// - Parameters:
        ///   - client: the registration client.
        ///   - storage: where the installation id lives.
        ///   - fallbackEnvironment: used when there is no readable embedded profile.
        ///   - activityType: the attributes type's name; `String(describing: Attributes.self)` by default, which is
        ///     what ActivityKit matches `attributes-type` against.
        ///   - activityID: the app's id of an activity (1 to 256 bytes, no control characters); ActivityKit's
        ///     `Activity.id` by default. Use your own (an order number) when your server knows the activity by it.
        public init(
            client: RegistrationClient, storage: any KeyValueStorage, fallbackEnvironment: APNSEnvironment,
            activityType: String = String(describing: Attributes.self),
            activityID: @escaping @MainActor @Sendable (Activity<Attributes>) -> String = { $0.id }
        ) {
            self.client = client
            self.storage = storage
            self.fallbackEnvironment = fallbackEnvironment
            self.activityType = activityType
            self.activityID = activityID
        }
    }

    /// The settings.
    public let configuration: Configuration
    /// The environment the tokens are registered for, and how it was decided.
    public let environment: ResolvedEnvironment
    /// The signed-in user's id, sent with every token. Keep it equal to ``PushNotifications/userID``.
    public var userID: String?
    /// Tags sent with every token.
    public var tags: [String] = []
    /// The last upload failure, for diagnostics. A failure that may pass is saved and retried by `retryPending()`.
    public private(set) var lastError: (any Error)?

    /// The last update token of each observed activity, by ActivityKit's id, for
    /// ``RegistrationClient/activityEnded(updateToken:)``.
    private var updateTokens: [Activity<Attributes>.ID: DeviceToken] = [:]
    /// The app's id of each observed activity, to register its token again when the person's settings change.
    private var activityIDs: [Activity<Attributes>.ID: String] = [:]
    /// The current push-to-start token, to register again when the person's settings change.
    private var pushToStartToken: DeviceToken?
    /// Activities being observed, so one that both `activities` and `activityUpdates` report is observed once.
    private var observed: Set<Activity<Attributes>.ID> = []

    /// - Parameter configuration: the client, storage and activity naming.
    public init(configuration: Configuration) {
        self.configuration = configuration
        self.environment = ResolvedEnvironment.resolve(bundle: .main, fallback: configuration.fallbackEnvironment)
    }

    /// Uploads tokens as ActivityKit hands them out, until the task is cancelled.
    ///
    /// Run it at every launch: ActivityKit delivers the current tokens again to each new observer, and registration is
    /// an idempotent upsert.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            if #available(iOS 17.2, *) {
                group.addTask { await self.uploadPushToStartTokens() }
            }
            group.addTask { await self.observeActivities() }
            group.addTask { await self.observeAuthorization() }
        }
    }

    /// Registers every current token again when the person turns Live Activities, or their frequent updates, on or
    /// off: the server then stops or resumes sending to them, and picks the priority (docs/live-activities.md).
    private func observeAuthorization() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in ActivityAuthorizationInfo().activityEnablementUpdates { await self.registerAgain() }
            }
            if #available(iOS 16.2, *) {
                group.addTask {
                    for await _ in ActivityAuthorizationInfo().frequentPushEnablementUpdates { await self.registerAgain() }
                }
            }
        }
    }

    private func registerAgain() async {
        do {
            if let token = pushToStartToken {
                try await configuration.client.registerPushToStartToken(
                    token, activityType: configuration.activityType, installation: try installation(token))
            }
            for (id, token) in updateTokens {
                guard let activityID = activityIDs[id] else { continue }
                try await configuration.client.registerActivityUpdateToken(
                    token, activityID: activityID, installation: try installation(token))
            }
            lastError = nil
        } catch {
            lastError = error
        }
    }

    @available(iOS 17.2, *)
    private func uploadPushToStartTokens() async {
        for await data in Activity<Attributes>.pushToStartTokenUpdates {
            do {
                let token = try DeviceToken(data: data)
                pushToStartToken = token
                try await configuration.client.registerPushToStartToken(
                    token, activityType: configuration.activityType, installation: try installation(token))
                lastError = nil
            } catch {
                lastError = error
            }
        }
    }

    /// Observes the activities already running (`activityUpdates` reports only new ones) and each one started later,
    /// in the app or by a push.
    private func observeActivities() async {
        await withTaskGroup(of: Void.self) { group in
            for activity in Activity<Attributes>.activities {
                let id = activity.id
                group.addTask { await self.observeActivity(id) }
            }
            for await activity in Activity<Attributes>.activityUpdates {
                let id = activity.id
                group.addTask { await self.observeActivity(id) }
            }
        }
    }

    /// Uploads the activity's update tokens until it ends, then tells the server it ended.
    private func observeActivity(_ id: Activity<Attributes>.ID) async {
        guard observed.insert(id).inserted else { return }
        defer { observed.remove(id) }
        // `true` from the child that saw the end: the token sequence may never finish on its own, so stop it.
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.uploadUpdateTokens(of: id) }
            group.addTask { await self.reportEnd(of: id) }
            while let ended = await group.next() {
                if ended { group.cancelAll() }
            }
        }
    }

    private func uploadUpdateTokens(of id: Activity<Attributes>.ID) async -> Bool {
        guard let activity = Self.activity(id) else { return false }
        let activityID = configuration.activityID(activity)
        for await data in activity.pushTokenUpdates {
            if Self.hasEnded(activity.activityState) { break }
            do {
                let token = try DeviceToken(data: data)
                updateTokens[id] = token
                activityIDs[id] = activityID
                try await configuration.client.registerActivityUpdateToken(
                    token, activityID: activityID, installation: try installation(token))
                lastError = nil
            } catch {
                lastError = error
            }
        }
        return false
    }

    private func reportEnd(of id: Activity<Attributes>.ID) async -> Bool {
        guard let activity = Self.activity(id) else { return false }
        for await state in activity.activityStateUpdates where Self.hasEnded(state) {
            activityIDs.removeValue(forKey: id)
            if let token = updateTokens.removeValue(forKey: id) {
                do {
                    try await configuration.client.activityEnded(updateToken: token)
                } catch {
                    lastError = error
                }
            }
            return true
        }
        return false
    }

    /// This installation's registration of a token, with what the person allows now; the client's Live Activity
    /// calls replace its kind and activity.
    private func installation(_ token: DeviceToken) throws -> Registration {
        var registration = Registration(
            app: token, environment: environment.environment,
            installationID: try InstallationID.current(in: configuration.storage), userID: userID, tags: tags)
        let authorization = ActivityAuthorizationInfo()
        registration.activitiesEnabled = authorization.areActivitiesEnabled
        if #available(iOS 16.2, *) { registration.frequentPushesEnabled = authorization.frequentPushesEnabled }
        return registration
    }

    private static func activity(_ id: Activity<Attributes>.ID) -> Activity<Attributes>? {
        Activity<Attributes>.activities.first { $0.id == id }
    }

    /// Ended activities take no more updates (apns-protocol.md §4.5), whether or not they are still on screen.
    private static func hasEnded(_ state: ActivityState) -> Bool {
        switch state {
        case .ended, .dismissed: true
        default: false
        }
    }
}
#endif
