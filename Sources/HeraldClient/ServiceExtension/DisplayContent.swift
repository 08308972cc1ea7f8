public import HeraldCore

/// What a notification service extension should show: the payload with its encrypted content opened, and the alert's
/// plain texts.
///
/// The server seals the alert (and chosen custom keys) with `Payload.encryptingContent(with:customKeys:placeholder:)`;
/// APNs and the lock screen see only a placeholder. The extension opens it here with the app's key and sets the
/// title and body on the notification it hands back.
public struct DisplayContent: Sendable, Hashable {
    /// The payload to show: decrypted when it was encrypted, unchanged otherwise.
    public let payload: Payload

    /// Takes a payload as it is, for notifications that were not encrypted.
    public init(payload: Payload) {
        self.payload = payload
    }

    /// Opens the encrypted content of a payload; a payload without encrypted content is taken as it is.
    /// - Parameters:
    ///   - payload: the received payload.
    ///   - keys: the app's content keys; the envelope names the one it needs, so several can be held during a rotation.
    /// - Throws: `ContentEnvelopeError` when the envelope is malformed, no key has its id, or it was altered. Show
    ///   the placeholder alert then: it never contains the secret text.
    public init(decrypting payload: Payload, keys: [ContentEncryptionKey]) throws(ContentEnvelopeError) {
        self.payload = payload.hasEncryptedContent ? try payload.decryptingContent(using: keys) : payload
    }

    /// The alert as a dictionary (a plain-string alert becomes its body), or `nil` when there is none.
    public var alert: AlertContent? { payload.aps.alert?.content }

    /// The title to show, when it is plain text; localized titles (`title-loc-key`) are left to the system.
    public var title: String? { alert?.title?.text }
    /// The subtitle to show, when it is plain text.
    public var subtitle: String? { alert?.subtitle?.text }
    /// The body to show, when it is plain text.
    public var body: String? { alert?.body?.text }
}
