import Foundation
package import HeraldAPNS
package import HeraldCore
package import HeraldStore
import Logging

/// Sends broadcasts and records each as a send: at once for `POST /api/channels/{id}/broadcast`, or when a scheduled
/// one comes due (``SendWorker``).
///
/// A broadcast's counts count its one request: `accepted` 1 when APNs took it (APNs then delivers it to every
/// subscriber, which the server cannot see), `rejected` 1 with APNs's reason in the send's message, `failed` 1 when no
/// answer came. A channel APNs no longer knows (`ChannelNotRegistered`) is marked deleted.
package struct Broadcaster: Sendable {
    let store: any Store
    /// The APNs client of an app in an environment.
    let client: @Sendable (_ bundleID: String, _ environment: APNSEnvironment) -> APNSClient?
    let metrics: any SendingMetrics

    /// - Parameters:
    ///   - client: The APNs client of an app in an environment; `nil` when the server has none.
    package init(
        store: any Store, client: @escaping @Sendable (_ bundleID: String, _ environment: APNSEnvironment) -> APNSClient?,
        metrics: any SendingMetrics
    ) {
        self.store = store
        self.client = client
        self.metrics = metrics
    }

    /// What APNs made of a broadcast.
    package struct Outcome: Sendable {
        /// APNs's answer when it accepted the broadcast, else why not.
        package let result: Result<APNSChannelReply<APNSChannelID>, Failure>
        /// The request counted by what became of it.
        package let counts: OutcomeCounts
        /// The outcome in words, for the send's record.
        package let message: String

        /// Whether APNs accepted the broadcast.
        package var accepted: Bool { if case .success = result { true } else { false } }
    }

    /// Why a broadcast was not accepted.
    package enum Failure: Error {
        /// APNs refused it, or did not answer.
        case apns(APNSChannelError)
        /// This server has no APNs client for the channel's app and environment.
        case noClient(String)
    }

    /// Sends a broadcast, once APNs's answer is in (after the sender's retries).
    package func send(_ plan: BroadcastPlan) async -> Outcome {
        // A recorded channel id was APNs's, so it parses.
        guard let client = client(plan.topic, plan.environment), let id = APNSChannelID(plan.channelID) else {
            let message = "This server has no APNs client for \(plan.topic) in \(plan.environment): configure the app."
            return Outcome(result: .failure(.noClient(message)), counts: OutcomeCounts(failed: 1), message: message)
        }
        metrics.activityPush(event: plan.event, priority: plan.prepared.priority?.rawValue ?? 10, via: .channel)
        do {
            let reply = try await client.broadcast(plan.prepared, to: id)
            // In use: the channel tidy leaves it (a failed mark only makes it look idle sooner).
            try? await store.markChannelUsed(id: plan.channelID)
            return Outcome(
                result: .success(reply), counts: OutcomeCounts(accepted: 1),
                message:
                    "APNs accepted the broadcast (apns-request-id \(reply.requestID), \(reply.attempts) attempt\(reply.attempts == 1 ? "" : "s")) and delivers it to the channel's subscribers."
            )
        } catch {
            if error.reason == .channelNotRegistered { _ = try? await store.markChannelDeleted(id: plan.channelID) }
            let refused = error.code == .rejected
            return Outcome(
                result: .failure(.apns(error)),
                counts: refused ? OutcomeCounts(rejected: 1) : OutcomeCounts(failed: 1), message: error.message)
        }
    }

    /// Sends a broadcast while its request waits and records it whole, in one write: `completed`, `failed`, or
    /// `cancelled` with no outcome when the request's task was cancelled before APNs answered (APNs may still deliver
    /// it; nothing was refused).
    package func sendNow(_ plan: BroadcastPlan) async throws -> (Outcome, SendRecord) {
        let outcome = await send(plan)
        let status: SendStatus
        var counts = outcome.counts
        var message = outcome.message
        if case .failure(.apns(let error)) = outcome.result, error.code == .cancelled {
            metrics.cancelled()
            (status, counts) = (.cancelled, OutcomeCounts())
            message = "Cancelled before APNs answered (the request that sent it ended): APNs may have taken it. \(message)"
        } else {
            status = outcome.accepted ? .completed : .failed
        }
        let send = NewSend(
            id: plan.sendID, target: plan.targetDescription, summary: plan.summary, status: status, targetCount: 1,
            counts: counts, message: message, topic: plan.topic)
        // Its own task: a cancelled request's task would have the store refuse the write that says so.
        let record = try await Task { [store] in try await store.recordFinishedSend(send, outcomes: []) }.value
        return (Outcome(result: outcome.result, counts: counts, message: message), record)
    }

    /// Records a broadcast that waits for its time (`sendAt`): a queued send a worker fires once.
    package func schedule(_ plan: BroadcastPlan) async throws -> SendRecord {
        try await store.createSend(
            NewSend(
                id: plan.sendID, target: plan.targetDescription, summary: plan.summary, job: plan.job.jsonText,
                status: .queued, targetCount: 1, sendAt: plan.sendAt, lane: .broadcast, topic: plan.topic))
    }

    /// Sends a scheduled broadcast a worker claimed, and records how it ended: `completed`, or `failed` with why
    /// (the channel was deleted meanwhile, APNs refused it).
    /// - Parameters:
    ///   - job: The stored broadcast, sent as accepted and stamped with `now`.
    func perform(_ record: SendRecord, job: BroadcastJob, at now: Date, logger: Logger) async throws {
        guard let channel = try await store.channel(id: job.channelID), channel.isLive else {
            logger.warning("A scheduled broadcast's channel was deleted before its time")
            _ = try await store.updateSend(
                record.id, SendUpdate(status: .failed, message: BroadcastPlan.channelGone(job.channelID)))
            return
        }
        let outcome = await send(BroadcastPlan(job: job, sendID: record.id, at: now))
        if case .failure(.apns(let error)) = outcome.result, error.code == .cancelled {
            // The worker stopped before APNs answered: not a failure; the broadcast stays claimed and is sent again
            // when its lease runs out (or this instance starts again).
            throw CancellationError()
        }
        _ = try await store.updateSend(
            record.id,
            SendUpdate(
                status: outcome.accepted ? .completed : .failed, message: outcome.message, counts: outcome.counts))
        logger.info("Sent a scheduled broadcast", metadata: [LogKey.count: "\(outcome.counts)"])
    }
}
