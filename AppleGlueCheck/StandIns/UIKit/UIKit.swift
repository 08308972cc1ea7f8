// A stand-in for the parts of Apple's UIKit that Herald's Apple glue uses, for compiling it on Linux
// (docs/apple-glue.md). Written from Apple's documented declarations (the iOS 18 SDK): UIKit's classes are main-actor
// isolated. The parts marked "Stand-in only" are not Apple's API and let tests drive the glue.
public import Foundation

@available(iOS 2.0, tvOS 9.0, *)
@MainActor
open class UIResponder: NSObject {
    public override init() { super.init() }
}

@available(iOS 2.0, tvOS 9.0, *)
@MainActor
open class UIApplication: UIResponder {
    private static let sharedApplication = UIApplication()

    open class var shared: UIApplication { sharedApplication }

    @available(iOS 3.0, tvOS 9.0, *)
    open func registerForRemoteNotifications() { remoteNotificationRegistrations += 1 }

    @available(iOS 3.0, tvOS 9.0, *)
    open func unregisterForRemoteNotifications() {}

    // MARK: Stand-in only

    /// How many times the app asked APNs for a token.
    public private(set) var remoteNotificationRegistrations = 0

    /// Forgets the registrations: a new launch.
    public func reset() { remoteNotificationRegistrations = 0 }
}
