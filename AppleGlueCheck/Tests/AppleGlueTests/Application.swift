// UIKit is imported only here: a file that imports both Testing and UIKit asks for swift-testing's UIKit overlay,
// which Linux does not have.
import UIKit

/// The application's count of token requests, and a new launch of it.
@MainActor
enum Application {
    static var tokenRequests: Int { UIApplication.shared.remoteNotificationRegistrations }

    static func relaunch() { UIApplication.shared.reset() }
}
