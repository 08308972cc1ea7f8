public import Foundation
public import HeraldCore

/// How one notification to one token ended.
public struct DeliveryOutcome: Sendable, Hashable, CustomStringConvertible {
    /// The answer, or the lack of one.
    public enum Result: Sendable, Hashable {
        /// APNs answered 200 with this `apns-id`.
        case accepted(apnsID: APNSID)
        /// APNs answered with an error: its status, reason and (for 410) timestamp.
        case rejected(status: Int, reason: APNSReason, timestamp: Date?)
        /// No answer: what went wrong, safe to show (no token, no key).
        case failed(message: String)

        /// `accepted`, `rejected` or `failed`, as stored.
        package var kind: String {
            switch self {
            case .accepted: "accepted"
            case .rejected: "rejected"
            case .failed: "failed"
            }
        }
    }

    /// What Herald did to the registry because of APNs's answer.
    public enum Action: String, Sendable, Hashable, CaseIterable {
        /// `410` or `BadDeviceToken` in both environments: the token is out of every send until registered again.
        case removed
        /// `410`, but the app registered the token after APNs's timestamp: kept.
        case kept
        /// `BadDeviceToken`, and the other environment's host accepted it: the record's environment was corrected.
        case environmentCorrected
    }

    /// The token it was sent to.
    public var token: DeviceToken
    /// The environment it was sent to.
    public var environment: APNSEnvironment
    /// How it ended.
    public var result: Result
    /// When it ended.
    public var at: Date
    /// What the server did about it, if anything.
    public var action: Action?
    /// The sandbox's `apns-unique-id` of the last attempt (development only): what Apple's Push Notifications Console
    /// looks a notification up by.
    public var apnsUniqueID: String?
    /// Every attempt, when there was more than one (``DeliveryAttempt``); empty when the first attempt decided. Only
    /// ``DeliveryTraceStore`` reads them back: outcome pages leave them out.
    public var attempts: [DeliveryAttempt]

    public init(
        token: DeviceToken, environment: APNSEnvironment, result: Result, at: Date, action: Action? = nil,
        apnsUniqueID: String? = nil, attempts: [DeliveryAttempt] = []
    ) {
        self.token = token
        self.environment = environment
        self.result = result
        self.at = at
        self.action = action
        self.apnsUniqueID = apnsUniqueID
        self.attempts = attempts
    }

    /// Safe to log: the token is redacted.
    public var description: String { "DeliveryOutcome(\(token.redacted), \(environment), \(result.kind))" }
}

extension DeliveryOutcome {
    /// Rebuilds an outcome from its stored columns.
    /// - Throws: ``StoreError`` `.corruptRecord` when a column holds something no store writes.
    package init(
        token: String, environment: String, kind: String, apnsID: String?, status: Int?, reason: String?,
        apnsTimestamp: Int64?, message: String?, at: Int64, action: String?, apnsUniqueID: String? = nil
    ) throws {
        guard let parsedToken = try? DeviceToken(hex: token), let parsedEnvironment = APNSEnvironment(name: environment)
        else { throw StoreError(.corruptRecord, "A stored delivery outcome has an unreadable token or environment.") }
        let result: Result
        switch kind {
        case "accepted":
            guard let id = apnsID.flatMap({ APNSID(headerValue: $0) }) else {
                throw StoreError(.corruptRecord, "A stored accepted outcome has no valid apns-id.")
            }
            result = .accepted(apnsID: id)
        case "rejected":
            result = .rejected(
                status: status ?? 0, reason: APNSReason(reason ?? ""), timestamp: apnsTimestamp.map(StoreTime.date))
        case "failed":
            result = .failed(message: message ?? "")
        default:
            throw StoreError(.corruptRecord, "A stored delivery outcome has the unknown kind '\(kind)'.")
        }
        var parsedAction: Action?
        if let action {
            guard let known = Action(rawValue: action) else {
                throw StoreError(.corruptRecord, "A stored delivery outcome has the unknown action '\(action)'.")
            }
            parsedAction = known
        }
        self.init(
            token: parsedToken, environment: parsedEnvironment, result: result, at: StoreTime.date(at),
            action: parsedAction, apnsUniqueID: apnsUniqueID)
    }

    /// The stored columns that depend on the result: apns-id, status, reason, timestamp (µs), message.
    package var resultColumns: (apnsID: String?, status: Int?, reason: String?, timestamp: Int64?, message: String?) {
        switch result {
        case .accepted(let id): (id.headerValue, nil, nil, nil, nil)
        case .rejected(let status, let reason, let timestamp):
            (nil, status, reason.rawValue, timestamp.map(StoreTime.microseconds), nil)
        case .failed(let message): (nil, nil, nil, nil, message)
        }
    }
}

extension DeviceToken {
    /// A token from its stored hex.
    /// - Throws: ``StoreError`` `.corruptRecord` when the column holds something else.
    package init(storedHex hex: String) throws {
        guard let token = try? DeviceToken(hex: hex) else {
            throw StoreError(.corruptRecord, "A stored token is not hex: was the table changed by hand?")
        }
        self = token
    }
}
