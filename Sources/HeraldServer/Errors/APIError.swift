public import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
public import Hummingbird

/// An answer of the HTTP API that is not a success: a status, a stable machine-readable `reason`, and a sentence a
/// person can act on.
///
/// Every error the API gives has the body `{"error": "<sentence>", "reason": "<reason>"}` (docs/api-registration.md),
/// and bad input changes nothing. The sentence never contains a full device token, a key or a secret.
public struct APIError: Error, HTTPResponseError, Sendable, CustomStringConvertible {
    /// The HTTP status.
    public let status: HTTPResponse.Status
    /// The stable reason: `badDeviceToken`, `missingEnvironment`, `rateLimited`, `BadPriority`, …
    public let reason: String
    /// What went wrong and what to do.
    public let message: String
    /// Extra response headers, such as `Retry-After`.
    public var headers: HTTPFields

    /// Creates an error answer.
    /// - Parameters:
    ///   - status: The HTTP status.
    ///   - reason: The stable reason.
    ///   - message: A sentence saying what went wrong and what to do; no tokens, keys or secrets.
    public init(_ status: HTTPResponse.Status, reason: String, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.reason = reason
        self.message = message
        self.headers = headers
    }

    public var description: String { "\(status.code) \(reason): \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: status, headers: responseHeaders, body: .init(byteBuffer: ByteBuffer(bytes: jsonBody)))
    }

    /// `{"error": …, "reason": …}`.
    var jsonBody: [UInt8] { JSONValue.object(["error": .string(message), "reason": .string(reason)]).sortedJSONBytes }

    /// The extra headers and the JSON content type.
    var responseHeaders: HTTPFields {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        return headers
    }
}

extension APIError {
    /// `400` for a request body that is not JSON, or not the object the endpoint expects.
    static func invalidJSON(_ detail: String) -> APIError {
        APIError(
            .badRequest, reason: "invalidJSON",
            "The request body is not a JSON object (\(detail)): send a JSON object such as {\"token\": \"…\"}.")
    }

    /// `400` for a field of the wrong type or outside its limits; the message names the field.
    static func invalidField(_ field: String, _ rule: String) -> APIError {
        APIError(.badRequest, reason: "invalidField", "The field \"\(field)\" is invalid: \(rule).")
    }

    /// `413` for a body above the endpoint's limit.
    static func payloadTooLarge(limit: Int) -> APIError {
        APIError(
            .contentTooLarge, reason: "payloadTooLarge", "The request body is larger than \(limit) bytes: send less.")
    }

    /// `404` for a path no route serves.
    static func notFound(_ path: String) -> APIError {
        APIError(.notFound, reason: "notFound", "There is no \(path) here: see /openapi.yaml for the API.")
    }

    /// `405` for a known path asked with a method it does not take; `Allow` lists the ones it takes.
    static func methodNotAllowed(_ method: HTTPRequest.Method, path: String, _ allowed: [String]) -> APIError {
        let list = allowed.joined(separator: ", ")
        return APIError(
            .methodNotAllowed, reason: "methodNotAllowed",
            "\(path) does not take \(method.rawValue): use \(list) (see /openapi.yaml).",
            headers: [.allow: list])
    }

    /// `503` with `Retry-After: 1` when the database does not answer, or cannot take the write now (a restart, a
    /// failover, a full disk): nothing was stored, or — for a write whose commit lost its connection — it may or may
    /// not be; every API write may be sent again as it was.
    static func unavailable(_ code: StoreError.Code) -> APIError {
        let message =
            switch code {
            case .commitUnknown:
                "The connection to the database was lost while it stored this: it may or may not be stored. Send it again: doing so twice changes nothing."
            case .readOnly: "The database accepts no writes right now (a failover is under way): try again shortly."
            case .diskFull: "The database's disk is full: nothing was stored. Try again once the operator freed space."
            case .timedOut: "The database did not answer in time: nothing was stored. Try again shortly."
            case .closed: "The server is shutting down: try again shortly."
            default: "The database is not reachable right now: nothing was stored. Try again shortly."
            }
        return APIError(.serviceUnavailable, reason: "unavailable", message, headers: [.retryAfter: "1"])
    }

    /// `500` for a failure the server did not expect; the details are in the server's log.
    static let `internal` = APIError(
        .internalServerError, reason: "internal",
        "The server failed unexpectedly: try again, and see the server log if it persists.")
}

extension APIError {
    /// The send engine's refusal as an answer: its code is the `reason`, and the status says whose turn it is.
    init(_ error: SendError) {
        let status: HTTPResponse.Status =
            switch error.code {
            case .unknownToken, .unknownSend: .notFound
            case .sendFinished: .conflict
            default: .badRequest
            }
        self.init(status, reason: error.code.description, error.message)
    }
}
