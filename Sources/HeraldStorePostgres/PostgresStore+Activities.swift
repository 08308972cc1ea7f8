import HeraldCore
public import HeraldStore

extension PostgresStore {
    public func recordActivityPush(topic: String, id: String, ending: Bool) async throws -> ActivityPush {
        let now = clock.now()
        return try await transaction("record an activity push") { session in
            let pushed = StoreSQL.recordActivityPush(topic: topic, id: id, ending: ending, at: now, .postgres)
            if let row = try await session.rows(pushed).first {
                if ending { try await session.writeWebhookEvents([.event(ofEndedActivity: id, app: topic, at: now)]) }
                return .recorded(try row.activity())
            }
            return try await session.rows(StoreSQL.selectActivity(topic: topic, id: id, .postgres)).first.map {
                .ended(try $0.activity())
            } ?? .unknown
        }
    }
}

extension PostgresStore {
    public func recordStartCheck(_ check: StartCheck) async throws -> RecordedStartCheck? {
        let now = clock.now()
        let statements = StoreSQL.recordStartCheck(check, at: now, .postgres)
        return try await transaction("record a push-to-start check") { session in
            guard let activity = try await session.rows(statements.claim).first?.activity() else { return nil }
            for statement in statements.changes { try await session.execute(statement) }
            var stale: [DeviceToken] = []
            for statement in statements.marksStale {
                stale += try await session.rows(statement).map { try DeviceToken(hex: $0.text(0)) }
            }
            stale.sort()
            try await session.writeWebhookEvents(stale.map { .event(ofStale: $0, check: check, at: now) })
            return RecordedStartCheck(activity: activity, newlyStale: stale)
        }
    }
}
