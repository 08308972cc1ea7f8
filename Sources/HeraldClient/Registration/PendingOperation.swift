public import Foundation
public import HeraldCore

/// A registration or unregistration that failed for a passing reason and is remembered to be tried again later.
///
/// At most one is kept: the latest intent wins. A successful registration or unregistration clears it, and so does
/// a refusal that retrying cannot fix. Apps still register at every launch, which supersedes whatever is pending.
public struct PendingOperation: Sendable, Hashable {
    /// What is to be sent again.
    public enum Kind: Sendable, Hashable {
        /// `POST /api/token` with this registration.
        case register(Registration)
        /// `DELETE /api/token/{token}`.
        case unregister(DeviceToken)
    }

    /// What is to be sent again.
    public var kind: Kind
    /// When the operation first failed.
    public var firstFailure: Date
    /// How many requests have been made for it so far.
    public var attempts: Int
    /// Why the last attempt failed, safe to log.
    public var lastError: String

    /// Describes a pending operation.
    public init(kind: Kind, firstFailure: Date, attempts: Int, lastError: String) {
        self.kind = kind
        self.firstFailure = firstFailure
        self.attempts = attempts
        self.lastError = lastError
    }

    /// The token the operation is about.
    public var token: DeviceToken {
        switch kind {
        case .register(let registration): registration.token
        case .unregister(let token): token
        }
    }
}

/// Where the client keeps its ``PendingOperation``: one JSON record under one storage key.
struct PendingOperationStore: Sendable {
    static let key = "herald.pending-registration"

    let storage: any KeyValueStorage

    /// The saved operation; `nil` when there is none or the record is unreadable (a corrupt record is not worth
    /// failing a launch over: the app registers again anyway).
    func load() throws(StorageError) -> PendingOperation? {
        guard let data = try storage.data(forKey: Self.key) else { return nil }
        return Self.decode(data)
    }

    func save(_ operation: PendingOperation) throws(StorageError) {
        try storage.set(Data(Self.encode(operation)), forKey: Self.key)
    }

    func clear() throws(StorageError) {
        try storage.set(nil, forKey: Self.key)
    }

    static func encode(_ operation: PendingOperation) -> [UInt8] {
        var members: [String: JSONValue] = [
            "firstFailure": .number(operation.firstFailure.timeIntervalSince1970),
            "attempts": .integer(operation.attempts),
            "lastError": .string(operation.lastError),
        ]
        switch operation.kind {
        case .register(let registration):
            members["operation"] = "register"
            members["registration"] = registration.json
        case .unregister(let token):
            members["operation"] = "unregister"
            members["token"] = .string(token.hex)
        }
        return JSONValue.object(members).jsonBytes
    }

    static func decode(_ data: Data) -> PendingOperation? {
        guard let json = try? JSONValue(parsing: data), let seconds = json["firstFailure"]?.doubleValue,
            let attempts = json["attempts"]?.intValue, let lastError = json["lastError"]?.stringValue
        else { return nil }
        let kind: PendingOperation.Kind
        switch json["operation"]?.stringValue {
        case "register":
            guard let registration = json["registration"].flatMap(Registration.init(json:)) else { return nil }
            kind = .register(registration)
        case "unregister":
            guard let hex = json["token"]?.stringValue, let token = try? DeviceToken(hex: hex) else { return nil }
            kind = .unregister(token)
        default:
            return nil
        }
        return PendingOperation(
            kind: kind, firstFailure: Date(timeIntervalSince1970: seconds), attempts: attempts, lastError: lastError)
    }
}
