import Foundation
public import HeraldCore

/// Everything a notification service extension does to a payload, in portable code: decrypt the content, count the
/// badge, queue the `received` receipt, download the media.
///
/// The Apple glue (or your `UNNotificationServiceExtension`) only copies the ``ProcessedNotification`` onto the
/// notification content. Processing never throws, because the extension must always hand back something to show:
/// each step that fails is listed in ``ProcessedNotification/problems`` and the rest goes on.
///
/// The steps run in this order: decryption first (the media URL may be among the encrypted keys), then the badge
/// (so the count is stored even if the system stops the extension during a slow download), then the receipt (queued
/// on disk only: a slow network must not hold the notification back), then the media. Once the content is handed to
/// the system, ``sendReceipts()`` sends the receipt in one attempt; if that fails, the app sends it later.
public struct NotificationServiceProcessor: Sendable {
    /// The app's content keys.
    public let keys: [ContentEncryptionKey]
    /// The shared badge counter, or `nil` to leave the payload's badge as APNs sent it.
    public let badgeCounter: BadgeCounter?
    /// The media downloader, or `nil` to skip media.
    public let mediaDownloader: MediaDownloader?
    /// The custom payload key that holds the media URL.
    public let mediaURLKey: String
    /// Reports the notification `received` (delivery receipts), or `nil` not to.
    public let receipts: ReceiptReporter?

    /// - Parameters:
    ///   - keys: the app's content keys (from the keychain shared with the extension).
    ///   - badgeCounter: counts badges as increments; `nil` keeps APNs's absolute badge.
    ///   - mediaDownloader: downloads attachments; `nil` skips them.
    ///   - mediaURLKey: the custom key holding the media URL; `media-url`, as in the book, by default.
    ///   - receipts: reports `received` for notifications with a `herald` key; its client must use the storage the
    ///     app registers through (the App Group's), where the device's token is.
    public init(
        keys: [ContentEncryptionKey] = [], badgeCounter: BadgeCounter? = nil, mediaDownloader: MediaDownloader? = nil,
        mediaURLKey: String = "media-url", receipts: ReceiptReporter? = nil
    ) {
        self.keys = keys
        self.badgeCounter = badgeCounter
        self.mediaDownloader = mediaDownloader
        self.mediaURLKey = mediaURLKey
        self.receipts = receipts
    }

    /// Sends the queued receipts in one attempt (the extension's time is short); what fails stays queued for the app.
    /// Call it after handing the processed content to the system.
    @discardableResult
    public func sendReceipts() async -> ReceiptReporter.Outcome? {
        await receipts?.send(retry: .never)
    }

    /// Decrypts, counts and downloads.
    ///
    /// On cancellation (the system's time is running out) the media step ends with a `cancelled` problem and the
    /// rest is returned.
    public func process(_ payload: Payload) async -> ProcessedNotification {
        var problems = [ServiceExtensionProblem]()

        var content = DisplayContent(payload: payload)
        do {
            content = try DisplayContent(decrypting: payload, keys: keys)
        } catch {
            problems.append(.decryption(error))
        }

        var badge = payload.aps.badge
        if let badgeCounter {
            do {
                badge = try badgeCounter.apply(badge: payload.aps.badge)
            } catch {
                problems.append(.badge(error))
            }
        }

        if let receipts, payload.heraldSendID != nil, let reason = receipts.queue(.received, for: payload) {
            problems.append(.receipt(reason))
        }

        var attachment: MediaAttachmentFile?
        if let mediaDownloader, let value = content.payload.custom[mediaURLKey] {
            if let text = value.stringValue, let url = URL(string: text) {
                do {
                    attachment = try await mediaDownloader.download(from: url)
                } catch {
                    problems.append(.media(error))
                }
            } else {
                problems.append(
                    .media(
                        MediaDownloadError(
                            .unsupportedURL, url: nil,
                            "The payload's \(mediaURLKey) is not a URL string: send the media's https URL.")))
            }
        }
        return ProcessedNotification(content: content, badge: badge, attachment: attachment, problems: problems)
    }
}

/// What a notification service extension should deliver.
public struct ProcessedNotification: Sendable {
    /// The content to show: decrypted when that worked, the placeholder otherwise.
    public var content: DisplayContent
    /// The badge to set: the counter's new total, the payload's own badge without a counter, or `nil` to leave it.
    public var badge: Int?
    /// The downloaded media, to attach.
    public var attachment: MediaAttachmentFile?
    /// The steps that failed, for logging; the notification is still shown.
    public var problems: [ServiceExtensionProblem]
}

/// A step of ``NotificationServiceProcessor/process(_:)`` that failed.
public enum ServiceExtensionProblem: Error, Sendable, CustomStringConvertible {
    /// The content could not be decrypted; the placeholder is shown.
    case decryption(ContentEnvelopeError)
    /// The badge count could not be stored; the payload's badge is kept.
    case badge(StorageError)
    /// The media could not be downloaded; the notification has no attachment.
    case media(MediaDownloadError)
    /// The `received` receipt could not be queued (no registered token, storage failure): why.
    case receipt(String)

    public var description: String {
        switch self {
        case .decryption(let error): "Decryption failed: \(error)"
        case .badge(let error): "Badge counting failed: \(error)"
        case .media(let error): "Media download failed: \(error)"
        case .receipt(let reason): "Receipt not queued: \(reason)"
        }
    }
}
