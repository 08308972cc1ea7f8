import NIOCore
import NIOHPACK

/// One request handed to a connection: encoded headers and body, and where the answer goes.
struct APNSStreamRequest {
    let headers: HPACKHeaders
    let body: ByteBuffer
    let promise: EventLoopPromise<APNSResponse>
}

/// The parts of an HTTP/2 response APNs sends.
struct APNSResponse: Sendable {
    var status: Int = 0
    var apnsID: String?
    var uniqueID: String?
    var body: ByteBuffer?
}
