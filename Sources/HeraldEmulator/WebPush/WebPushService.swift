import Crypto
public import Foundation
import HeraldCore
import Synchronization

/// The emulator's push service (RFC 8030), as Apple's `web.push.apple.com` and the browsers' services behave: it
/// makes subscriptions for tests (each with the private key a browser would keep), takes `POST /push/<id>` with the
/// checks a push service makes — VAPID (RFC 8292), `TTL`, `Urgency`, `Topic`, `aes128gcm` within 4,096 bytes —
/// decrypts each message into the subscription's inbox, and answers `201`, or the status and reason a push service
/// gives (docs/emulator.md, "Web Push").
public final class WebPushService: Sendable {
    /// A subscription as a browser holds it: what the page hands to the server, and the private half it keeps.
    public struct Subscription: Sendable {
        public let id: String
        public let endpoint: String
        /// `keys.p256dh`, base64url.
        public let p256dh: String
        /// `keys.auth`, base64url.
        public let auth: String
        /// The VAPID public key the page subscribed with (`applicationServerKey`); `nil`: any key is taken.
        public let applicationServerKey: String?
        /// Whether the person unsubscribed (or the browser dropped it): pushes are answered `410`.
        public let gone: Bool
        /// Messages received.
        public let received: Int
    }

    /// One message as the subscription's browser got it: decrypted, with the push request's headers.
    public struct Message: Sendable {
        public let receivedAt: Date
        /// The decrypted payload.
        public let payload: [UInt8]
        public let ttl: Int
        public let urgency: String
        public let topic: String?
        /// The VAPID `sub` the sender signed with.
        public let subject: String
    }

    /// Counts of what the service answered.
    public struct Counters: Sendable {
        public var accepted = 0
        /// Refusals by reason (`BadJwtToken`, `Gone`, …).
        public var rejected: [String: Int] = [:]
    }

    private struct Entry {
        let key: P256.KeyAgreement.PrivateKey
        let auth: [UInt8]
        let applicationServerKey: String?
        var gone = false
        var messages: [Message] = []
        var received = 0
    }

    private struct State {
        var origin: String?
        var entries: [String: Entry] = [:]
        var order: [String] = []
        var counters = Counters()
        var nextID = 0
    }

    private let state = Mutex(State())
    /// Messages kept per subscription; older ones are dropped.
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// Set once the listener is bound: `https://host:port`, the `aud` every VAPID JWT must carry.
    func setOrigin(_ origin: String) { state.withLock { $0.origin = origin } }

    /// The service's origin; `nil` while it is not listening.
    public var origin: String? { state.withLock { $0.origin } }

    /// Makes a subscription, as `pushManager.subscribe()` does in a browser.
    /// - Parameter applicationServerKey: The VAPID public key (base64url) pushes must be signed with; `nil`: any.
    /// - Throws: ``EmulatorError`` while the service is not listening, or for a key that is not a P-256 public key.
    public func subscribe(applicationServerKey: String? = nil) throws(EmulatorError) -> Subscription {
        try subscribe(applicationServerKey: applicationServerKey, count: 1)[0]
    }

    /// Makes `count` subscriptions at once, sharing one key pair and `auth` secret: for load tests, where a key per
    /// subscription would only cost the emulator time (each message is still encrypted with a key of its own).
    /// - Throws: as ``subscribe(applicationServerKey:)``, and for a count outside 1...1,000,000.
    public func subscribe(applicationServerKey: String?, count: Int) throws(EmulatorError) -> [Subscription] {
        guard (1...1_000_000).contains(count) else {
            throw EmulatorError("\(count) subscriptions cannot be made at once: ask for 1 to 1,000,000.")
        }
        if let applicationServerKey {
            guard let bytes = Base64URL.decode(applicationServerKey),
                (try? P256.Signing.PublicKey(x963Representation: bytes)) != nil
            else {
                throw EmulatorError(
                    "The applicationServerKey is not a P-256 public key in base64url (65 bytes): pass the VAPID public key `herald vapid generate` printed."
                )
            }
        }
        let key = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        return try state.withLock { state throws(EmulatorError) in
            guard let origin = state.origin else {
                throw EmulatorError("The web push service is off: start the emulator with a web push port.")
            }
            return (0..<count).map { _ in
                state.nextID += 1
                // Long and unguessable, as a push service's are: an endpoint is a capability.
                let id = "s\(state.nextID)-" + Base64URL.encode((0..<12).map { _ in UInt8.random(in: 0...255) })
                let entry = Entry(key: key, auth: auth, applicationServerKey: applicationServerKey)
                state.entries[id] = entry
                state.order.append(id)
                return Self.subscription(id, entry, origin: origin)
            }
        }
    }

    /// Every subscription, oldest first.
    public func subscriptions() -> [Subscription] {
        state.withLock { state in
            state.order.compactMap { id in
                state.entries[id].map { Self.subscription(id, $0, origin: state.origin ?? "") }
            }
        }
    }

    public func subscription(_ id: String) -> Subscription? {
        state.withLock { state in state.entries[id].map { Self.subscription(id, $0, origin: state.origin ?? "") } }
    }

    /// The messages a subscription received, oldest first.
    public func messages(_ id: String) throws(EmulatorError) -> [Message] {
        try state.withLock { state throws(EmulatorError) in
            guard let entry = state.entries[id] else { throw Self.unknown(id) }
            return entry.messages
        }
    }

    /// The person unsubscribed: from now on pushes to it are answered `410`.
    public func unsubscribe(_ id: String) throws(EmulatorError) {
        try state.withLock { state throws(EmulatorError) in
            guard state.entries[id] != nil else { throw Self.unknown(id) }
            state.entries[id]!.gone = true
        }
    }

    /// Forgets a subscription altogether: pushes to it are answered `404`.
    @discardableResult public func remove(_ id: String) -> Bool {
        state.withLock { state in
            state.order.removeAll { $0 == id }
            return state.entries.removeValue(forKey: id) != nil
        }
    }

    public var counters: Counters { state.withLock { $0.counters } }

    private static func unknown(_ id: String) -> EmulatorError {
        EmulatorError("No web push subscription \(id): make one with POST /subscriptions.")
    }

    private static func subscription(_ id: String, _ entry: Entry, origin: String) -> Subscription {
        Subscription(
            id: id, endpoint: "\(origin)/push/\(id)", p256dh: Base64URL.encode(entry.key.publicKey.x963Representation),
            auth: Base64URL.encode(entry.auth), applicationServerKey: entry.applicationServerKey, gone: entry.gone,
            received: entry.received)
    }

    // MARK: Pushes

    /// The urgencies of RFC 8030 §5.3.
    static let urgencies: Set<String> = ["very-low", "low", "normal", "high"]

    /// Checks a push request as a push service does and keeps its message: the answer's status and reason.
    func process(_ request: EmulatedRequest, now: Date) -> (status: Int, reason: String?) {
        let answer = check(request, now: now)
        state.withLock { state in
            if answer.status == 201 {
                state.counters.accepted += 1
            } else {
                state.counters.rejected[answer.reason ?? "\(answer.status)", default: 0] += 1
            }
        }
        return answer
    }

    private func check(_ request: EmulatedRequest, now: Date) -> (status: Int, reason: String?) {
        guard request.method == "POST" else { return (405, "MethodNotAllowed") }
        let prefix = "/push/"
        guard request.path.hasPrefix(prefix) else { return (404, "NotFound") }
        let id = String(request.path.dropFirst(prefix.count))
        guard let headers = RequestProcessor.uniqueHeaders(request) else { return (400, "DuplicateHeaders") }
        guard let (entry, origin) = state.withLock({ state in state.entries[id].map { ($0, state.origin ?? "") } })
        else { return (404, "NotFound") }
        // Authorization first: a push service tells a stranger nothing about the subscription.
        let claims: VAPID.Claims
        do {
            claims = try VAPID.verify(authorization: headers["authorization"] ?? "", audience: origin, now: now)
        } catch {
            return (403, "BadJwtToken")
        }
        if let expected = entry.applicationServerKey, expected != claims.publicKey {
            return (403, "BadJwtToken")
        }
        if entry.gone { return (410, "Unsubscribed") }
        guard let ttlText = headers["ttl"], let ttl = Int(ttlText), ttl >= 0 else { return (400, "BadTtl") }
        let urgency = headers["urgency"] ?? "normal"
        guard Self.urgencies.contains(urgency) else { return (400, "BadUrgency") }
        let topic = headers["topic"]
        if let topic {
            guard topic.utf8.count <= 32, !topic.isEmpty,
                topic.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_") })
            else { return (400, "BadWebPushTopic") }
        }
        guard request.body.count <= WebPushEncryption.recordSize else { return (413, "PayloadTooLarge") }
        guard headers["content-encoding"] == "aes128gcm" else { return (400, "BadContentEncoding") }
        let payload: [UInt8]
        do {
            payload = try WebPushEncryption.decrypt(request.body, privateKey: entry.key, auth: entry.auth)
        } catch {
            return (400, "BadPayload")
        }
        let message = Message(
            receivedAt: now, payload: payload, ttl: ttl, urgency: urgency, topic: topic, subject: claims.subject)
        state.withLock { state in
            guard state.entries[id] != nil else { return }
            state.entries[id]!.received += 1
            // A newer message with the same topic replaces one not yet delivered (RFC 8030 §5.4): here every message
            // is delivered at once, so each is kept.
            state.entries[id]!.messages.append(message)
            if state.entries[id]!.messages.count > capacity { state.entries[id]!.messages.removeFirst() }
        }
        return (201, nil)
    }
}
