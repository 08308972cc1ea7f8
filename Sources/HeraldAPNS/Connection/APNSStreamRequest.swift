import HeraldCore
import NIOCore

/// One request handed to a connection: its header fields and body, and where the answer goes.
struct APNSStreamRequest {
    /// The fields it shares with other requests of its kind.
    let template: APNSHeaderTemplate
    let token: DeviceToken
    let apnsID: String
    let body: ByteBuffer
    /// Called exactly once, on the connection's event loop, with the response or why there is none.
    let onResponse: @Sendable (Result<APNSResponse, APNSClientError>) -> Void
}

/// The parts of an HTTP/2 response APNs sends.
struct APNSResponse: Sendable {
    var status: Int = 0
    var apnsID: String?
    var uniqueID: String?
    var body: ByteBuffer?
}
