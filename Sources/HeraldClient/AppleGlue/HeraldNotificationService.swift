// Apple-only glue. On Linux it is empty, and CI compiles it against stand-ins of Apple's frameworks
// (scripts/check-apple-glue.sh, docs/apple-glue.md). Decryption, badge counting and media
// download are NotificationServiceProcessor's job (portable, tested); this file only copies its result onto the
// system's notification content.
#if canImport(UserNotifications) && !os(tvOS)
import Foundation
import HeraldCore
public import UserNotifications

extension UNMutableNotificationContent {
    /// Copies a processed notification onto the content: texts, badge, attachment and the decrypted `userInfo`.
    ///
    /// Plain texts are set as they are; localized ones (`title-loc-key`, `loc-key`) are resolved from the app's
    /// strings, as the system would. A badge of `nil` leaves the badge alone. An attachment the system refuses is
    /// left out: the notification is still shown.
    public func apply(_ processed: ProcessedNotification) {
        let content = processed.content
        if let alert = content.alert {
            if let title = Self.text(alert.title, key: alert.titleLocKey, arguments: alert.titleLocArgs) {
                self.title = title
            }
            if let subtitle = Self.text(alert.subtitle, key: alert.subtitleLocKey, arguments: alert.subtitleLocArgs) {
                self.subtitle = subtitle
            }
            if let body = Self.text(alert.body, key: alert.locKey, arguments: alert.locArgs) { self.body = body }
        }
        if let badge = processed.badge { self.badge = NSNumber(value: badge) }
        if let file = processed.attachment,
            let attachment = try? UNNotificationAttachment(identifier: "herald-media", url: file.fileURL)
        {
            attachments = [attachment]
        }
        userInfo = content.payload.userInfo
    }

    private static func text(_ text: AlertText?, key: String?, arguments: [String]?) -> String? {
        switch text {
        case .text(let plain)?:
            return plain
        case .localized(let key, let arguments)?:
            return NSString.localizedUserNotificationString(forKey: key, arguments: arguments)
        case nil:
            return key.map { NSString.localizedUserNotificationString(forKey: $0, arguments: arguments) }
        }
    }
}

/// A notification service extension that decrypts, counts the badge, attaches media and reports the notification
/// received (when its processor has a ``ReceiptReporter``), ready to subclass.
///
/// ```swift
/// final class NotificationService: HeraldNotificationService {
///     override func makeProcessor() -> NotificationServiceProcessor {
///         let group = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.app")!
///         return NotificationServiceProcessor(
///             keys: AppKeys.contentKeys(),   // from the keychain shared with the app
///             badgeCounter: BadgeCounter(storage: FileStorage(directory: group.appendingPathComponent("Herald"))),
///             mediaDownloader: MediaDownloader())
///     }
/// }
/// ```
open class HeraldNotificationService: UNNotificationServiceExtension {
    private let delivery = Delivery()

    /// Makes the processor for one notification. The default only decodes; override it to add keys, a badge counter
    /// and a media downloader.
    open func makeProcessor() -> NotificationServiceProcessor {
        NotificationServiceProcessor()
    }

    /// What receives the problems of each notification (decryption, badge, media), for logging. Ignores them by
    /// default. It runs off the extension object, so it must be `@Sendable`.
    open func problemReporter() -> @Sendable ([ServiceExtensionProblem]) -> Void {
        { _ in }
    }

    open override func didReceive(
        _ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void
    ) {
        let original = request.content
        guard let payload = try? Payload(userInfo: original.userInfo) else {
            contentHandler(original)
            return
        }
        let id = request.identifier
        delivery.begin(id, original: original, handler: contentHandler)
        // Only Sendable values go into the task: the extension object itself stays on this thread.
        let processor = makeProcessor()
        let report = problemReporter()
        let delivery = self.delivery
        Task {
            let processed = await processor.process(payload)
            report(processed.problems)
            delivery.finish(id, with: processed)
            // After the content is handed over: a slow network never holds the notification back. One attempt; what
            // fails stays queued for the app.
            await processor.sendReceipts()
        }
    }

    open override func serviceExtensionTimeWillExpire() {
        // Time is up: show what the system sent (the placeholder for encrypted content), never half-applied work.
        delivery.expireAll()
    }
}

/// The content handlers and original contents of the notifications in progress; hands each one result, exactly once,
/// whichever of processing and expiry comes first.
///
/// `@unchecked Sendable` is safe: `pending` is only read or written under `lock`, and an entry is removed under the
/// lock before its handler is called, so each handler runs once.
private final class Delivery: @unchecked Sendable {
    private struct Pending {
        var original: UNNotificationContent
        var handler: (UNNotificationContent) -> Void
    }

    private let lock = NSLock()
    private var pending: [String: Pending] = [:]

    func begin(_ id: String, original: UNNotificationContent, handler: @escaping (UNNotificationContent) -> Void) {
        lock.withLock { pending[id] = Pending(original: original, handler: handler) }
    }

    /// Delivers the processed content.
    func finish(_ id: String, with processed: ProcessedNotification) {
        guard let entry = lock.withLock({ pending.removeValue(forKey: id) }) else { return }
        guard let content = entry.original.mutableCopy() as? UNMutableNotificationContent else {
            entry.handler(entry.original)
            return
        }
        content.apply(processed)
        entry.handler(content)
    }

    /// Delivers every unfinished notification as the system sent it.
    func expireAll() {
        let entries = lock.withLock {
            defer { pending.removeAll() }
            return Array(pending.values)
        }
        for entry in entries { entry.handler(entry.original) }
    }
}
#endif
