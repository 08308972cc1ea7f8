public import Foundation
public import HeraldCore

/// One attempt of a notification that needed more than one: what it met and what the retry policy did next.
///
/// Recorded only once a notification needs a second attempt (its first one then too), so a notification accepted
/// at once allocates nothing for it (``APNSDelivery/trail`` is empty).
public struct APNSAttempt: Sendable, Hashable {
    /// 1 for the first.
    public let number: Int
    /// When its answer (or failure) came, by the client's wall clock.
    public let at: Date
    /// The client's number of the connection it went out on; `nil` when it never got one.
    public let connection: Int?
    /// APNs's status; `nil` without an answer.
    public let status: Int?
    /// APNs's reason (`nil` for a 200 or without an answer).
    public let reason: APNSReason?
    /// Without an answer: why (the client error's code and message).
    public let error: APNSClientError?
    /// The sandbox's `apns-unique-id` of the answer.
    public let uniqueID: String?
    /// The wait before the next attempt; `nil` for the last.
    public let retryAfter: Duration?
}
