package import Foundation
package import HeraldCore
package import HeraldStore

/// A broadcast to a channel, validated: what `POST /api/channels/{id}/broadcast` asked for, and what a worker sends
/// when a scheduled one comes due.
///
/// A broadcast is one request to APNs, which delivers it to every device subscribed to the channel. It is a send like
/// any other (recorded, listed by `GET /api/sends`, cancellable while it waits, fired once by one instance), except
/// that the server knows no subscriber: it can wait for an instant (`sendAt`) but not for each device's local time,
/// and there is nothing to pace. A scheduled one stores its ``job`` (``BroadcastJob``): the request as prepared when
/// it was accepted, which a worker sends as it is (``init(job:sendID:at:)``). Its payload's `timestamp`, which a
/// device compares against the update it shows, is the time of sending, not of asking.
package struct BroadcastPlan: Sendable {
    /// The send's id; the broadcast's `apns-request-id` is the same UUID, so APNs's logs name the send.
    package let sendID: SendID
    /// What a scheduled broadcast stores, and a worker sends.
    package let job: BroadcastJob

    /// The channel, as recorded.
    package var channelID: String { job.channelID }
    /// The app (bare bundle id).
    package var topic: String { job.bundleID }
    /// The environment of the channel.
    package var environment: APNSEnvironment { job.environment }
    /// When it is sent; `nil`: now.
    package var sendAt: Date? { job.sendAt }
    /// The request, checked and encoded.
    package var prepared: PreparedBroadcast { job.notification }
    /// `update` or `end`.
    package var event: String { job.event }

    /// The notification in words, as sends show it.
    package var summary: String { "liveactivity broadcast (\(event))" }

    /// The target in words, as sends show it.
    package var targetDescription: String { "channel \(channelID) (\(environment.name))" }

    /// A stored broadcast, as a worker sends it: stamped with the time of sending, nothing checked again.
    package init(job: BroadcastJob, sendID: SendID, at now: Date) {
        self.init(validated: job.stamped(at: now), sendID: sendID)
    }

    /// A broadcast the caller validated.
    package init(validated job: BroadcastJob, sendID: SendID) {
        self.sendID = sendID
        self.job = job
    }

    /// Why a scheduled broadcast was not sent: its channel was deleted before its time.
    package static func channelGone(_ channelID: String) -> String {
        "The channel \(channelID) was deleted before the broadcast's time: nothing was sent."
    }
}
