import HeraldCore
import NIOCore

/// One request handed to a connection: its header fields and body, and where the answer goes.
struct APNSStreamRequest {
    /// The fields it shares with other requests of its kind.
    let template: APNSHeaderTemplate
    let target: APNSRequestTarget
    /// `apns-id` of a device push, `apns-request-id` of a broadcast or channel-management request.
    let requestID: String
    let body: ByteBuffer
    /// What may cancel it before its answer comes; `nil`: nothing does.
    let cancellation: APNSCancellation?
    /// Called exactly once, on the connection's event loop, with the response or why there is none (for a request
    /// cancelled before it reached the connection, at once by ``APNSConnection/submit(_:)``).
    let onResponse: @Sendable (Result<APNSResponse, APNSClientError>) -> Void

    init(
        template: APNSHeaderTemplate, target: APNSRequestTarget, requestID: String, body: ByteBuffer,
        cancellation: APNSCancellation? = nil,
        onResponse: @escaping @Sendable (Result<APNSResponse, APNSClientError>) -> Void
    ) {
        self.template = template
        self.target = target
        self.requestID = requestID
        self.body = body
        self.cancellation = cancellation
        self.onResponse = onResponse
    }

    /// A device push: `POST /3/device/<token>` with `apns-id`.
    init(
        template: APNSHeaderTemplate, token: DeviceToken, apnsID: String, body: ByteBuffer,
        cancellation: APNSCancellation? = nil,
        onResponse: @escaping @Sendable (Result<APNSResponse, APNSClientError>) -> Void
    ) {
        self.init(
            template: template, target: .device(token), requestID: apnsID, body: body, cancellation: cancellation,
            onResponse: onResponse)
    }
}

/// What a request addresses: one device token, or a path of the broadcast and channel-management APIs.
enum APNSRequestTarget: Sendable {
    enum Method: Sendable {
        case get, post, delete
    }

    /// `POST /3/device/<hex>`, identified by `apns-id`.
    case device(DeviceToken)
    /// `method path` on the broadcast or channel-management host, identified by `apns-request-id`.
    case resource(Method, path: String)
}

/// The parts of an HTTP/2 response APNs sends.
struct APNSResponse: Sendable {
    var status: Int = 0
    var apnsID: String?
    var uniqueID: String?
    /// `apns-request-id`: broadcast and channel-management answers carry it instead of `apns-id`.
    var requestID: String?
    /// `apns-channel-id`: the id of a channel just created.
    var channelID: String?
    var body: ByteBuffer?
}
