import Foundation
import HeraldClient
import HeraldCore
import Testing
import UserNotifications

/// `HeraldNotificationService` driven through the stand-in: a notification is processed and handed over once; one
/// whose time runs out is shown as the system sent it.
@Suite("Apple glue: the notification service extension", .timeLimit(.minutes(1)))
struct ServiceExtensionTests {
    /// The contents a service hands back, and a wait for the first.
    ///
    /// `@unchecked Sendable`: the contents are only read and written under `lock`.
    final class Handed: @unchecked Sendable {
        private let lock = NSLock()
        private var contents: [UNNotificationContent] = []
        private let arrived = AsyncStream<Void>.makeStream()

        func hand(_ content: UNNotificationContent) {
            lock.withLock { contents.append(content) }
            arrived.continuation.yield()
        }

        /// The titles, badges and bodies handed over, in order.
        var all: [(title: String, body: String, badge: Int?)] {
            lock.withLock { contents.map { ($0.title, $0.body, $0.badge?.intValue) } }
        }

        /// Waits for the first content.
        func first() async -> (title: String, body: String, badge: Int?)? {
            var iterator = arrived.stream.makeAsyncIterator()
            _ = await iterator.next()
            return all.first
        }
    }

    static func request(_ userInfo: [AnyHashable: Any]) -> UNNotificationRequest {
        let content = UNMutableNotificationContent()
        content.title = "Placeholder"
        content.userInfo = userInfo
        return UNNotificationRequest(identifier: UUID().uuidString, content: content, trigger: nil)
    }

    @Test("a notification's texts and badge are applied to a copy of its content, handed over once")
    func processed() async throws {
        let service = HeraldNotificationService()
        let handed = Handed()
        service.didReceive(Self.request(["aps": ["alert": ["title": "Order shipped", "body": "On its way"], "badge": 3]])) {
            handed.hand($0)
        }
        let content = try #require(await handed.first())
        #expect(content.title == "Order shipped" && content.body == "On its way")
        #expect(content.badge == 3)
        #expect(handed.all.count == 1)
    }

    @Test("a notification that is not Herald's is handed back as it came")
    func notDecodable() async throws {
        let service = HeraldNotificationService()
        let handed = Handed()
        service.didReceive(Self.request(["no-aps": true])) { handed.hand($0) }
        let content = try #require(await handed.first())
        #expect(content.title == "Placeholder")
    }
}
