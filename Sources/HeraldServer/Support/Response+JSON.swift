import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

extension Response {
    /// A JSON response from a value, encoded by core's writer.
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(
            status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: value.sortedJSONBytes)))
    }
}

extension Request {
    /// The body, refused with `413 payloadTooLarge` beyond `limit` bytes: by its `Content-Length` before reading, and
    /// while reading a chunked body, which NIO reports as `NIOTooManyBytesError`.
    func bodyBytes(limit: Int) async throws -> [UInt8] {
        if let length = headers[.contentLength].flatMap(Int.init), length > limit {
            throw APIError.payloadTooLarge(limit: limit)
        }
        do {
            let buffer = try await body.collect(upTo: limit)
            return Array(buffer.readableBytesView)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw APIError.payloadTooLarge(limit: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(limit: limit)
        }
    }
}

extension HTTPField.Name {
    /// The app's registration key (docs/api-registration.md).
    static let registrationKey = HTTPField.Name("X-Herald-Registration-Key")!
}
