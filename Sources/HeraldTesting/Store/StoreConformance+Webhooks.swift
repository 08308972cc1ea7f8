import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var webhookCases: [Case] {
        [
            Case(
                "webhook endpoints are created, listed per app, changed, paused and resumed, rotated and deleted",
                webhookEndpoints),
            Case(
                "outcomes, a send's end, receipts and an activity's end write events to the outbox of the app's subscribed endpoints, in order",
                webhookOutbox),
            Case(
                "a claimed webhook batch is the deliverer's until recorded: delivered, retried after its backoff, or paused into a dead letter that replays",
                webhookClaims),
            Case(
                "two instances claim different webhook endpoints, and a lease that ran out is claimed again with its events",
                webhookLeases),
            Case("delivered webhook events and deliveries older than an age are purged; waiting ones stay", webhookPurge),
            Case(
                "recording a delivered batch claims the endpoint's next one in the same write, in order, until nothing waits; a lost lease or a failure claims nothing",
                webhookRecordAndClaimNext),
            Case(
                "an endpoint created through the same instance gets the next inline send's events, one created through another instance within a second",
                webhookEndpointsSeen),
            Case(
                "a batch of outcomes recorded again (its commit's answer lost, a shard run again) writes events only for the devices it had not recorded",
                webhookEventsOncePerDevice),
        ]
    }

    static func webhookEventsOncePerDevice(_ context: Context) async throws {
        let store = context.store
        for n in 1...4 { _ = try await store.upsert(registration(n, topic: webhookTopic)) }
        let hook = try await endpoint(store, events: [.notificationAccepted, .notificationRejected])
        let send = try await store.createSend(
            NewSend(target: "tag t", summary: "alert", status: .running, topic: webhookTopic))
        let now = context.clock.now()
        let batch = [
            outcome(1, .accepted(apnsID: APNSID()), at: now),
            outcome(2, .rejected(status: 400, reason: .badDeviceToken, timestamp: nil), at: now),
            outcome(3, .accepted(apnsID: APNSID()), at: now),
        ]
        _ = try await store.recordOutcomes(batch, for: send.id, checkpoint: nil)
        #expect(try await store.webhookQueues()[hook.id]?.pending == 3)
        // The same batch again, with one device more: only that one is new.
        let again = try await store.recordOutcomes(
            batch + [outcome(4, .accepted(apnsID: APNSID()), at: now)], for: send.id, checkpoint: nil)
        #expect(again.accepted == 3 && again.rejected == 1, "the send's counts: \(again)")
        #expect(try await store.webhookQueues()[hook.id]?.pending == 4, "one event per device, not per recording")
    }

    static func webhookEndpointsSeen(_ context: Context) async throws {
        let store = context.store
        _ = try await store.upsert(registration(1, topic: webhookTopic))
        func sendInline() async throws {
            _ = try await store.recordFinishedSend(
                NewSend(target: "one token", summary: "s", status: .completed, targetCount: 1, topic: webhookTopic),
                outcomes: [
                    DeliveryOutcome(
                        token: token(1), environment: .production, result: .accepted(apnsID: APNSID()),
                        at: context.clock.now())
                ])
        }
        func pending(_ endpoint: WebhookEndpoint) async throws -> Int {
            try await store.webhookQueues()[endpoint.id]?.pending ?? 0
        }
        // No endpoint yet: a store may remember that nobody wants these events.
        try await sendInline()
        let here = try await endpoint(store, events: [.sendCompleted])
        try await sendInline()
        #expect(try await pending(here) == 1, "the same instance sees its own endpoint at once")

        let elsewhere = try await context.withSecondInstance { other in
            try await endpoint(other, events: [.notificationAccepted])
        }
        context.clock.advance(by: .seconds(2))
        try await sendInline()
        #expect(try await pending(elsewhere) == 1, "another instance's endpoint is seen within a second")
        #expect(try await pending(here) == 2)
    }

    static let webhookTopic = "com.example.herald"
    static let otherWebhookTopic = "com.example.other"

    private static func endpoint(
        _ store: any Store, app: String = webhookTopic, events: [WebhookEventType], secret: String = "whsec_test"
    ) async throws -> WebhookEndpoint {
        try await store.createWebhookEndpoint(
            NewWebhookEndpoint(app: app, url: "http://127.0.0.1:9/hook", events: events, secret: secret))
    }

    static func webhookEndpoints(_ context: Context) async throws {
        let store = context.store
        let first = try await endpoint(store, events: [.sendCompleted, .notificationRejected])
        context.clock.advance(by: .seconds(1))
        let second = try await endpoint(store, app: otherWebhookTopic, events: [.tokenRemoved])
        #expect(first.status == .active && first.events == [.notificationRejected, .sendCompleted])
        #expect(try await store.webhookEndpoints(app: nil).map(\.id) == [first.id, second.id])
        #expect(try await store.webhookEndpoints(app: otherWebhookTopic).map(\.id) == [second.id])
        #expect(try await store.webhookEndpoint(first.id) == first)

        let changed = try #require(
            try await store.updateWebhookEndpoint(
                first.id, WebhookEndpointUpdate(url: "https://example.com/h", events: [.receiptOpened])))
        #expect(changed.url == "https://example.com/h" && changed.events == [.receiptOpened])
        #expect(changed.description == first.description, "what is not given stays")
        let paused = try #require(try await store.setWebhookEndpoint(first.id, paused: "Paused by an administrator."))
        #expect(paused.status == .paused && paused.pausedReason == "Paused by an administrator.")
        let resumed = try #require(try await store.setWebhookEndpoint(first.id, paused: nil))
        #expect(resumed.status == .active && resumed.pausedReason == nil && resumed.consecutiveFailures == 0)

        let until = context.clock.now().addingTimeInterval(3600)
        let rotated = try #require(try await store.rotateWebhookSecret(of: first.id, to: "whsec_new", previousExpiresAt: until))
        #expect(rotated.previousSecretExpiresAt == until)
        #expect(try await store.updateWebhookEndpoint(UUID(), WebhookEndpointUpdate(url: "http://x")) == nil)
        #expect(try await store.deleteWebhookEndpoint(second.id))
        #expect(try await !store.deleteWebhookEndpoint(second.id))
        #expect(try await store.webhookEndpoints(app: nil).map(\.id) == [first.id])
        await #expect(throws: StoreError.self) {
            try await store.createWebhookEndpoint(
                NewWebhookEndpoint(id: first.id, app: webhookTopic, url: "http://x", events: [.sendFailed], secret: "s"))
        }
    }

    static func webhookOutbox(_ context: Context) async throws {
        let store = context.store
        for n in 1...3 { _ = try await store.upsert(registration(n, topic: webhookTopic)) }
        _ = try await store.upsert(registration(4, topic: otherWebhookTopic))
        let wanted: [WebhookEventType] = [
            .notificationRejected, .tokenRemoved, .sendCompleted, .receiptOpened, .receiptAction, .activityEnded,
        ]
        let mine = try await endpoint(store, events: wanted)
        let all = try await endpoint(store, events: WebhookEventType.subscribable)
        let other = try await endpoint(store, app: otherWebhookTopic, events: WebhookEventType.subscribable)

        let now = context.clock.now()
        let send = try await store.createSend(NewSend(target: "user 1", summary: "alert", status: .running))
        let accepted = APNSID()
        _ = try await store.recordOutcomes(
            [
                outcome(1, .accepted(apnsID: accepted), at: now),
                outcome(2, .rejected(status: 410, reason: .unregistered, timestamp: now), at: now, action: .removed),
                outcome(3, .rejected(status: 400, reason: .badDeviceToken, timestamp: nil), at: now),
            ], for: send.id, checkpoint: nil)
        _ = try await store.updateSend(send.id, SendUpdate(status: .completed))
        _ = try await store.recordReceipts([
            ReceiptEvent(kind: .opened, token: token(1), sendID: send.id, at: now),
            ReceiptEvent(kind: .action, token: token(1), sendID: send.id, action: "reply", at: now),
        ])
        // An inline send records its outcomes and its end at once.
        let inline = try await store.recordFinishedSend(
            NewSend(target: "topic \(webhookTopic) (production)", summary: "alert", status: .completed),
            outcomes: [outcome(3, .rejected(status: 400, reason: .badDeviceToken, timestamp: nil), at: now)])

        let batch = try #require(
            try await store.claimWebhookBatch(
                worker: "w", leaseUntil: now.addingTimeInterval(60), limit: 100, only: mine.id))
        #expect(batch.secrets == ["whsec_test"])
        #expect(
            batch.events.map(\.type) == [
                .notificationRejected, .tokenRemoved, .notificationRejected, .sendCompleted, .receiptAction,
                .receiptOpened, .notificationRejected, .sendCompleted,
            ])
        #expect(batch.events.map(\.id) == batch.events.map(\.id).sorted(), "in the order written")
        #expect(batch.events.allSatisfy { $0.app == webhookTopic })
        #expect(batch.events.prefix(6).allSatisfy { $0.sendID == send.id })
        #expect(batch.events.last?.sendID == inline.id)
        let rejected = try JSONValue(parsing: batch.events[0].data)
        #expect(rejected["token"]?.stringValue == token(2).hex && rejected["reason"]?.stringValue == "Unregistered")
        #expect(rejected["status"]?.intValue == 410 && rejected["sendId"]?.stringValue == send.id.description)
        let completed = try JSONValue(parsing: batch.events[3].data)
        #expect(completed["accepted"]?.intValue == 1 && completed["rejected"]?.intValue == 2)
        #expect(try JSONValue(parsing: batch.events[4].data)["action"]?.stringValue == "reply")

        // Every subscribable type: accepted, and the received each opened or action implies, too.
        let everything = try #require(
            try await store.claimWebhookBatch(
                worker: "w", leaseUntil: now.addingTimeInterval(60), limit: 100, only: all.id))
        #expect(everything.events.filter { $0.type == .notificationAccepted }.count == 1)
        #expect(everything.events.filter { $0.type == .receiptReceived }.count == 1, "counted once, like the receipt")
        #expect(try await store.webhookQueues()[other.id] == nil, "another app's endpoint gets none of them")

        // An activity ended through the API reports to its app.
        _ = try await store.createActivity(
            NewActivity(topic: webhookTopic, id: "match-1", activityType: "MatchAttributes"))
        _ = try await store.recordActivityPush(topic: webhookTopic, id: "match-1", ending: true)
        #expect(try await store.webhookQueues()[mine.id]?.pending == 9)
    }

    static func webhookClaims(_ context: Context) async throws {
        let store = context.store
        let endpoint = try await endpoint(store, events: [.activityEnded])
        let now = context.clock.now()
        #expect(try await store.claimWebhookBatch(worker: "w1", leaseUntil: now.addingTimeInterval(60), limit: 10) == nil)
        for n in 1...3 {
            try await store.enqueueWebhookEventForTest(n, endpoint: endpoint.id, at: now)
        }
        #expect(try await store.webhookQueues()[endpoint.id] == WebhookQueue(pending: 3, oldestPendingAt: now, dead: 0))
        let first = try #require(
            try await store.claimWebhookBatch(worker: "w1", leaseUntil: now.addingTimeInterval(60), limit: 2))
        #expect(first.events.count == 2)
        #expect(
            try await store.claimWebhookBatch(worker: "w2", leaseUntil: now.addingTimeInterval(60), limit: 2) == nil,
            "leased")
        // Delivered: the two events leave the outbox.
        #expect(try await store.recordWebhookAttempt(attempt(first, "w1", .delivered, at: now)))
        #expect(try await store.webhookQueues()[endpoint.id]?.pending == 1)

        // Failed: retried only once its backoff is over.
        let second = try #require(
            try await store.claimWebhookBatch(worker: "w1", leaseUntil: now.addingTimeInterval(60), limit: 10))
        #expect(second.events.map(\.attempts) == [0])
        #expect(
            try await store.recordWebhookAttempt(
                attempt(second, "w1", .retry(at: now.addingTimeInterval(30)), at: now, status: 500)))
        #expect(try await store.claimWebhookBatch(worker: "w1", leaseUntil: now.addingTimeInterval(60), limit: 10) == nil)
        context.clock.advance(by: .seconds(30))
        let retried = try #require(
            try await store.claimWebhookBatch(
                worker: "w1", leaseUntil: context.clock.now().addingTimeInterval(60), limit: 10))
        #expect(retried.endpoint.consecutiveFailures == 1 && retried.endpoint.firstFailureAt == now)
        #expect(retried.events.map(\.id) == second.events.map(\.id) && retried.events.map(\.attempts) == [1])

        // Paused: the waiting events go to the dead letter, and new ones wait.
        #expect(
            try await store.recordWebhookAttempt(
                attempt(retried, "w1", .pause(reason: "Paused after 2 failed deliveries"), at: now, status: 500)))
        let paused = try #require(try await store.webhookEndpoint(endpoint.id))
        #expect(paused.status == .paused && paused.pausedReason == "Paused after 2 failed deliveries")
        try await store.enqueueWebhookEventForTest(4, endpoint: endpoint.id, at: now)
        #expect(try await store.webhookQueues()[endpoint.id] == WebhookQueue(pending: 1, oldestPendingAt: now, dead: 1))
        #expect(
            try await store.claimWebhookBatch(
                worker: "w1", leaseUntil: context.clock.now().addingTimeInterval(60), limit: 10) == nil, "paused")

        // Replayed: the dead letter goes back in order, and the endpoint is active again.
        #expect(try await store.replayWebhookDeadLetter(of: endpoint.id) == 1)
        #expect(try await store.replayWebhookDeadLetter(of: UUID()) == nil)
        let replayed = try #require(
            try await store.claimWebhookBatch(
                worker: "w1", leaseUntil: context.clock.now().addingTimeInterval(60), limit: 10))
        #expect(replayed.events.map(\.id) == second.events.map(\.id) + [replayed.events[1].id])
        #expect(replayed.endpoint.consecutiveFailures == 0)

        let history = try await store.webhookDeliveries(of: endpoint.id, limit: 10)
        #expect(history.map(\.delivered) == [false, false, true], "newest first")
        #expect(history.map(\.statusCode) == [500, 500, 200])
        #expect(history.last?.eventCount == 2 && history.last?.latency == .milliseconds(12))
    }

    static func webhookRecordAndClaimNext(_ context: Context) async throws {
        let store = context.store
        let endpoint = try await endpoint(store, events: [.activityEnded])
        let now = context.clock.now()
        let lease = now.addingTimeInterval(60)
        for n in 1...5 { try await store.enqueueWebhookEventForTest(n, endpoint: endpoint.id, at: now) }
        let first = try #require(try await store.claimWebhookBatch(worker: "w1", leaseUntil: lease, limit: 2))
        let second = try #require(
            try await store.recordWebhookDeliveryAndClaimNext(
                attempt(first, "w1", .delivered, at: now), leaseUntil: lease, limit: 2))
        #expect(second.events.count == 2 && second.events[0].id > first.events[1].id, "the next two, in order")
        #expect(second.endpoint.consecutiveFailures == 0)
        #expect(
            try await store.claimWebhookBatch(worker: "w2", leaseUntil: lease, limit: 10) == nil,
            "the endpoint stays the first worker's")
        #expect(try await store.webhookQueues()[endpoint.id]?.pending == 3)

        // A worker that lost the lease takes nothing: its events are marked, the holder's claim stands.
        let stale = try await store.recordWebhookDeliveryAndClaimNext(
            attempt(second, "w2", .delivered, at: now), leaseUntil: lease, limit: 2)
        #expect(stale == nil)
        #expect(try await store.claimWebhookBatch(worker: "w2", leaseUntil: lease, limit: 10) == nil, "still w1's")

        // A failure records and releases as recordWebhookAttempt does, claiming nothing.
        let third = try #require(
            try await store.recordWebhookDeliveryAndClaimNext(
                attempt(second, "w1", .delivered, at: now), leaseUntil: lease, limit: 2))
        #expect(third.events.count == 1)
        let failed = try await store.recordWebhookDeliveryAndClaimNext(
            attempt(third, "w1", .retry(at: now.addingTimeInterval(30)), at: now, status: 500), leaseUntil: lease,
            limit: 2)
        #expect(failed == nil)
        #expect(try await store.webhookQueues()[endpoint.id]?.pending == 1)
        context.clock.advance(by: .seconds(30))
        let retried = try #require(
            try await store.claimWebhookBatch(
                worker: "w1", leaseUntil: context.clock.now().addingTimeInterval(60), limit: 10))
        #expect(retried.events.map(\.id) == third.events.map(\.id))
        let last = try await store.recordWebhookDeliveryAndClaimNext(
            attempt(retried, "w1", .delivered, at: context.clock.now()), leaseUntil: lease, limit: 2)
        #expect(last == nil, "nothing waits")
        #expect(try await store.webhookQueues()[endpoint.id] == nil)
        let settled = try #require(try await store.webhookEndpoint(endpoint.id))
        #expect(settled.consecutiveFailures == 0 && settled.status == .active)
        #expect(try await store.webhookDeliveries(of: endpoint.id, limit: 10).count == 5, "every attempt recorded")
    }

    static func webhookLeases(_ context: Context) async throws {
        let store = context.store
        let first = try await endpoint(store, events: [.activityEnded])
        let second = try await endpoint(store, events: [.activityEnded])
        let now = context.clock.now()
        for id in [first.id, second.id] { try await store.enqueueWebhookEventForTest(1, endpoint: id, at: now) }
        try await context.withSecondInstance { other in
            async let mine = store.claimWebhookBatch(worker: "a", leaseUntil: now.addingTimeInterval(60), limit: 10)
            async let theirs = other.claimWebhookBatch(worker: "b", leaseUntil: now.addingTimeInterval(60), limit: 10)
            let (a, b) = try await (mine, theirs)
            let held = try #require(a, "each instance gets an endpoint")
            let heldByB = try #require(b, "each instance gets an endpoint")
            #expect(Set([held.endpoint.id, heldByB.endpoint.id]) == [first.id, second.id], "one endpoint each")
            #expect(try await other.recordWebhookAttempt(attempt(heldByB, "b", .delivered, at: now)))
            #expect(
                try await other.claimWebhookBatch(worker: "b", leaseUntil: now.addingTimeInterval(60), limit: 10) == nil,
                "a's lease holds")
            // "a" is killed: once its lease runs out, "b" takes its endpoint with its events.
            context.clock.advance(by: .seconds(61))
            let taken = try #require(
                try await other.claimWebhookBatch(
                    worker: "b", leaseUntil: context.clock.now().addingTimeInterval(60), limit: 10))
            #expect(taken.endpoint.id == held.endpoint.id && taken.events.map(\.id) == held.events.map(\.id))
            let late = WebhookAttempt(
                endpointID: held.endpoint.id, worker: "a", eventIDs: held.events.map(\.id), startedAt: now,
                latency: .zero, statusCode: 500, error: "late", outcome: .pause(reason: "late"))
            #expect(try await !store.recordWebhookAttempt(late), "no longer a's")
            #expect(try await store.webhookEndpoint(held.endpoint.id)?.status == .active, "a's late answer pauses nothing")
            #expect(try await store.webhookQueues()[held.endpoint.id]?.dead == 0, "nor moves its events")
        }
    }

    static func webhookPurge(_ context: Context) async throws {
        let store = context.store
        let endpoint = try await endpoint(store, events: [.activityEnded])
        let now = context.clock.now()
        for n in 1...3 { try await store.enqueueWebhookEventForTest(n, endpoint: endpoint.id, at: now) }
        let batch = try #require(try await store.claimWebhookBatch(worker: "w", leaseUntil: now.addingTimeInterval(60), limit: 2))
        try await store.recordWebhookAttempt(attempt(batch, "w", .delivered, at: now))
        context.clock.advance(by: .seconds(86_400))
        #expect(try await store.purgeWebhookHistory(before: now, limit: 100) == 0, "not older than the age yet")
        #expect(try await store.purgeWebhookHistory(before: context.clock.now(), limit: 100) == 3, "2 events, 1 delivery")
        #expect(try await store.webhookQueues()[endpoint.id]?.pending == 1, "the waiting event stays")
        let last = try #require(
            try await store.claimWebhookBatch(
                worker: "w", leaseUntil: context.clock.now().addingTimeInterval(60), limit: 2))
        try await store.recordWebhookAttempt(attempt(last, "w", .delivered, at: context.clock.now()))
        context.clock.advance(by: .seconds(86_400))
        #expect(
            try await store.purgeWebhookHistory(before: context.clock.now(), limit: 100) == 1,
            "the delivery goes; the newest event stays, so its id is never given to another")
    }

    private static func attempt(
        _ batch: WebhookBatch, _ worker: String, _ outcome: WebhookAttempt.Outcome, at date: Date, status: Int = 200
    ) -> WebhookAttempt {
        WebhookAttempt(
            endpointID: batch.endpoint.id, worker: worker, eventIDs: batch.events.map(\.id), startedAt: date,
            latency: .milliseconds(12), statusCode: status, error: outcome == .delivered ? nil : "failed",
            outcome: outcome)
    }
}

extension Store {
    /// Claims only `endpoint`: other endpoints that are due are claimed by others meanwhile (and released at once).
    fileprivate func claimWebhookBatch(worker: String, leaseUntil: Date, limit: Int, only endpoint: UUID) async throws
        -> WebhookBatch?
    {
        var others: [WebhookBatch] = []
        while let batch = try await claimWebhookBatch(worker: worker, leaseUntil: leaseUntil, limit: limit) {
            if batch.endpoint.id == endpoint {
                for other in others { try await release(other, worker: worker) }
                return batch
            }
            others.append(batch)
        }
        for other in others { try await release(other, worker: worker) }
        return nil
    }

    private func release(_ batch: WebhookBatch, worker: String) async throws {
        try await recordWebhookAttempt(
            WebhookAttempt(
                endpointID: batch.endpoint.id, worker: worker, eventIDs: [], startedAt: batch.endpoint.createdAt,
                latency: .zero, statusCode: nil, error: nil, outcome: .delivered))
    }

    /// A `webhook.test` event numbered `n` in its data.
    fileprivate func enqueueWebhookEventForTest(_ n: Int, endpoint: UUID, at date: Date) async throws {
        _ = try await enqueueWebhookEvent(
            WebhookEventDraft(type: .test, app: StoreConformance.webhookTopic, data: .object(["n": .integer(n)]), at: date),
            for: endpoint)
    }
}
