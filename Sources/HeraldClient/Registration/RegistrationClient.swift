public import HeraldCore

#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// Uploads token registrations to a Herald server, retrying passing failures and remembering to try again later.
///
/// ```swift
/// let client = RegistrationClient(
///     configuration: try .init(serverURL: URL(string: "https://push.example.com")!),
///     storage: FileStorage(directory: applicationSupport.appendingPathComponent("Herald")))
/// let registration = try Registration(deviceToken: tokenData, environment: .production, topic: "com.example.app")
/// _ = try await client.register(registration)
/// ```
///
/// Each operation makes up to ``RetryPolicy/maximumAttempts`` requests. Network errors, 429 and 5xx are retried after
/// an exponential backoff with jitter (honouring `Retry-After`); other 4xx are not. When every attempt fails, the
/// operation is saved in the storage and ``retryPending()`` sends it again later: at the next launch, when the
/// network returns, or when the app becomes active.
///
/// The clock and the random source are injected so that tests never wait: the client only sleeps through `clock`.
public struct RegistrationClient: Sendable {
    /// Where the server is and how to retry.
    public let configuration: Configuration
    private let session: URLSession
    private let clock: any Clock<Duration>
    let wallClock: any WallClock
    private let randomFraction: @Sendable () -> Double
    private let pending: PendingOperationStore
    /// Where the token of the last registration and the queued delivery receipts are kept.
    let storage: any KeyValueStorage

    /// - Parameters:
    ///   - configuration: the server and retry policy.
    ///   - session: the session requests go through; `URLSession.shared` by default.
    ///   - storage: where a failed operation is remembered; use a ``FileStorage`` so it survives a relaunch.
    ///   - clock: what backoff waits sleep on.
    ///   - wallClock: where the time of a failure is read.
    ///   - randomFraction: a source of random numbers in 0..<1 for jitter.
    public init(
        configuration: Configuration, session: URLSession = .shared, storage: any KeyValueStorage,
        clock: any Clock<Duration> = ContinuousClock(), wallClock: any WallClock = SystemWallClock(),
        randomFraction: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.configuration = configuration
        self.session = session
        self.clock = clock
        self.wallClock = wallClock
        self.randomFraction = randomFraction
        self.pending = PendingOperationStore(storage: storage)
        self.storage = storage
    }

    // MARK: - Operations

    /// Registers (or re-registers) a token: `POST /api/token`.
    ///
    /// On success any pending operation is cleared. When every attempt fails with a passing error, the registration
    /// is saved for ``retryPending()`` and the error says so (``RegistrationError/isPendingSaved``).
    /// - Returns: whether the server created or updated the registration, and its echo.
    /// - Throws: ``RegistrationError``: `invalidRegistration` before any request; `rejected` for a 4xx other than
    ///   429, carrying the server's `reason` (nothing is saved, since retrying cannot help); `gaveUp` or `cancelled`
    ///   with the registration saved; `storageFailed` when it could not be saved.
    @discardableResult
    public func register(_ registration: Registration) async throws(RegistrationError) -> RegistrationReceipt {
        try registration.validate()
        var request = makeRequest(url: configuration.registrationURL, method: "POST")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(registration.jsonBytes)
        let reply = try await perform(request, kind: .register(registration), acceptsNotFound: false)
        // Remembered for delivery receipts only: the service extension names the device with it, so only the device
        // token counts (a Live Activity or VoIP token never receives the notifications receipts are about). A launch
        // still registers whatever is stored here.
        if registration.tokenKind == .device {
            try? storage.set(Data(registration.token.hex.utf8), forKey: Self.registeredTokenKey)
        }
        let echo = (try? JSONValue(parsing: reply.body)).flatMap(Registration.init(json:))
        return RegistrationReceipt(status: reply.status, registration: echo, attempts: reply.attempts)
    }

    /// Unregisters a token, typically at logout: `DELETE /api/token/{token}`.
    ///
    /// A 404 counts as success: the server does not know the token, which is what was wanted.
    /// - Returns: `true` when the server removed the token, `false` when it did not know it.
    /// - Throws: ``RegistrationError`` as ``register(_:)`` does; a failed unregistration is saved the same way.
    @discardableResult
    public func unregister(_ token: DeviceToken) async throws(RegistrationError) -> Bool {
        let request = makeRequest(url: configuration.unregistrationURL(for: token.hex), method: "DELETE")
        let reply = try await perform(request, kind: .unregister(token), acceptsNotFound: true)
        try? storage.update(Self.registeredTokenKey) { stored in
            if stored == Data(token.hex.utf8) { stored = nil }
        }
        return reply.status != 404
    }

    /// Sends the saved operation again, if there is one.
    ///
    /// Call it when the app becomes active or the network comes back. On success the record is cleared; on another
    /// passing failure it stays, with its attempt count raised.
    /// - Throws: ``RegistrationError`` as ``register(_:)`` does.
    @discardableResult
    public func retryPending() async throws(RegistrationError) -> PendingRetryOutcome {
        guard let operation = try pendingOperation() else { return .nothingPending }
        switch operation.kind {
        case .register(let registration):
            return .registered(try await register(registration))
        case .unregister(let token):
            return .unregistered(removed: try await unregister(token))
        }
    }

    /// The operation waiting to be sent again, if any.
    /// - Throws: ``RegistrationError`` (`storageFailed`) when the storage cannot be read.
    public func pendingOperation() throws(RegistrationError) -> PendingOperation? {
        do {
            return try pending.load()
        } catch {
            throw RegistrationError(
                .storageFailed, "Could not read the pending registration: \(error.message)", underlying: error)
        }
    }

    /// The storage key of the last registered token (hex).
    static let registeredTokenKey = "herald.registered-token"

    /// The device token (`tokenKind` `device`) this installation registered last, through this client or another one
    /// on the same storage (the app's and its extension's, in the App Group); `nil` before the first registration and
    /// after an unregistration.
    ///
    /// It names the device in delivery receipts. It is not a reason to skip a registration: register at every launch.
    /// - Throws: ``RegistrationError`` (`storageFailed`) when the storage cannot be read.
    public func registeredToken() throws(RegistrationError) -> DeviceToken? {
        do {
            guard let data = try storage.data(forKey: Self.registeredTokenKey) else { return nil }
            return try? DeviceToken(hex: String(decoding: data, as: UTF8.self))
        } catch {
            throw RegistrationError(
                .storageFailed, "Could not read the registered token: \(error.message)", underlying: error)
        }
    }

    // MARK: - Transport

    struct Reply {
        var status: Int
        var body: Data
        var attempts: Int
    }

    func makeRequest(url: URL, method: String) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = configuration.requestTimeout.timeInterval
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue("HeraldClient", forHTTPHeaderField: "User-Agent")
        if let key = configuration.registrationKey {
            request.setValue(key, forHTTPHeaderField: "X-Herald-Registration-Key")
        }
        return request
    }

    /// Sends a request under the retry policy, then records the outcome in the pending store.
    private func perform(
        _ request: URLRequest, kind: PendingOperation.Kind, acceptsNotFound: Bool
    ) async throws(RegistrationError) -> Reply {
        do throws(RegistrationError) {
            let reply = try await send(request, what: kind.summary, acceptsNotFound: acceptsNotFound)
            // The intent reached the server: whatever was pending is superseded. Failing to clear the record only
            // means one redundant, idempotent request later, so it does not turn success into failure.
            try? pending.clear()
            return reply
        } catch {
            switch error.code {
            case .gaveUp, .cancelled:
                try remember(kind, after: error)
                throw error.savedForLater(by: "retryPending()")
            default:
                // A refusal: sending it again would get the same answer.
                try? pending.clear()
                throw error
            }
        }
    }

    private func remember(_ kind: PendingOperation.Kind, after error: RegistrationError) throws(RegistrationError) {
        do {
            var operation = PendingOperation(
                kind: kind, firstFailure: wallClock.now(), attempts: error.attempts, lastError: error.message)
            if let previous = try pending.load(), previous.kind == kind {
                operation.firstFailure = previous.firstFailure
                operation.attempts += previous.attempts
            }
            try pending.save(operation)
        } catch let storageError {
            throw RegistrationError(
                .storageFailed,
                "\(error.message) It could not be saved to try again later: \(storageError.message)",
                status: error.status, reason: error.reason, serverMessage: error.serverMessage,
                attempts: error.attempts, underlying: storageError)
        }
    }

    /// The retry loop: returns the first acceptable reply, throws `rejected` at once, and `gaveUp` when attempts run out.
    /// - Parameters:
    ///   - what: The operation in words for messages, without a whole token.
    ///   - policy: The retry policy; the configuration's by default.
    func send(
        _ request: URLRequest, what: String, acceptsNotFound: Bool, policy: RetryPolicy? = nil
    ) async throws(RegistrationError) -> Reply {
        let policy = policy ?? configuration.retry
        var attempt = 0
        while true {
            attempt += 1
            let failure: String
            var status: Int?
            var retryAfter: Duration?
            var underlying: (any Error)?
            do {
                let (body, response) = try await session.data(for: request)
                guard let http = response as? HTTPURLResponse else {
                    throw URLError(.badServerResponse)
                }
                status = http.statusCode
                if (200...299).contains(http.statusCode) || (acceptsNotFound && http.statusCode == 404) {
                    return Reply(status: http.statusCode, body: body, attempts: attempt)
                }
                let problem = ServerProblem(body: body)
                guard RetryPolicy.isRetryable(status: http.statusCode) else {
                    throw RegistrationError(
                        .rejected,
                        Self.rejectionMessage(
                            what, status: http.statusCode, problem: problem, path: Self.endpoint(of: request.url)),
                        status: http.statusCode, reason: problem.reason, serverMessage: problem.message,
                        attempts: attempt)
                }
                failure = "the server answered \(http.statusCode)\(problem.reason.map { " (\($0))" } ?? "")"
                retryAfter = http.value(forHTTPHeaderField: "Retry-After").flatMap(Int.init).map { .seconds($0) }
            } catch let error as RegistrationError {
                throw error
            } catch {
                if Task.isCancelled {
                    throw RegistrationError(
                        .cancelled, "The \(what) was cancelled.", attempts: attempt, underlying: error)
                }
                failure = "the request failed (\(error.localizedDescription))"
                underlying = error
            }
            guard attempt < policy.maximumAttempts else {
                throw RegistrationError(
                    .gaveUp,
                    "The \(what) did not reach the server after \(attempt) attempt\(attempt == 1 ? "" : "s"): \(failure). Check the network and the server.",
                    status: status, attempts: attempt, underlying: underlying)
            }
            let delay = policy.delay(afterAttempt: attempt, randomFraction: randomFraction(), retryAfter: retryAfter)
            do {
                try await clock.sleep(for: delay)
            } catch {
                throw RegistrationError(
                    .cancelled, "The \(what) was cancelled while waiting to retry after \(failure).", status: status,
                    attempts: attempt)
            }
        }
    }

    /// The API path a request went to, for messages: from `/api/`, with a token as `{token}`.
    static func endpoint(of url: URL?) -> String {
        guard let path = url?.path, let start = path.range(of: "/api/") else { return "/api/token" }
        return path[start.lowerBound...].split(separator: "/", omittingEmptySubsequences: true)
            .map { (try? DeviceToken(hex: String($0))) != nil ? "{token}" : String($0) }
            .reduce("") { $0 + "/" + $1 }
    }

    private static func rejectionMessage(_ what: String, status: Int, problem: ServerProblem, path: String) -> String {
        var message = "The server refused the \(what) with \(status)"
        if let reason = problem.reason { message += " (\(reason))" }
        if let text = problem.message { message += ": \(text)" }
        message += "."
        let advice: String =
            switch status {
            case 400: "Fix the field the server names; sending it again unchanged will not help."
            case 401: "Check the registration key the app was configured with."
            case 403: "The registration key is not allowed for this app: check the key and the topic."
            case 404 where problem.reason == "unknownToken": "Register the token first."
            case 404: "Check the server URL: it should be the server's base URL, the SDK adds \(path)."
            case 413: "The request is too large: send fewer tags, languages or events."
            default: "Sending it again unchanged will not help."
            }
        return message + " " + advice
    }
}

/// What ``RegistrationClient/register(_:)`` got back.
public struct RegistrationReceipt: Sendable, Hashable {
    /// The HTTP status: 201 when the server created the registration, 200 when it updated it.
    public var status: Int
    /// The registration as the server stored it, when its response body has one.
    public var registration: Registration?
    /// How many requests it took.
    public var attempts: Int

    /// Whether the server had not known the token before.
    public var isNew: Bool { status == 201 }
}

/// What ``RegistrationClient/retryPending()`` did.
public enum PendingRetryOutcome: Sendable, Hashable {
    /// Nothing was waiting.
    case nothingPending
    /// The saved registration went through.
    case registered(RegistrationReceipt)
    /// The saved unregistration went through; `removed` is false when the server did not know the token.
    case unregistered(removed: Bool)
}

/// The error body of the registration API: `{"error": "<message>", "reason": "<machine reason>"}`.
///
/// Also reads the nested form `{"error": {"message": …, "reason": …}}`, and tolerates bodies that are not JSON.
struct ServerProblem {
    var message: String?
    var reason: String?

    init(body: Data) {
        guard let json = try? JSONValue(parsing: body) else { return }
        switch json["error"] {
        case .string(let text)?:
            message = text
        case .object(let nested)?:
            message = nested["message"]?.stringValue
            reason = nested["reason"]?.stringValue
        default:
            break
        }
        if let reason = json["reason"]?.stringValue { self.reason = reason }
    }
}

extension PendingOperation.Kind {
    /// Names the operation in messages without revealing the token.
    var summary: String {
        switch self {
        case .register(let registration): "registration of token \(registration.token.redacted)"
        case .unregister(let token): "unregistration of token \(token.redacted)"
        }
    }
}

extension Duration {
    /// The duration in seconds, for Foundation APIs.
    var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
