import HeraldCore
public import HeraldStore

extension SQLiteStore {
    public func recordActivityPush(topic: String, id: String, ending: Bool) async throws -> ActivityPush {
        let now = clock.now()
        return try await write("record an activity push") { db in
            if let row = try db.rows(StoreSQL.recordActivityPush(topic: topic, id: id, ending: ending, at: now, .sqlite))
                .first
            {
                if ending { try db.writeWebhookEvents([.event(ofEndedActivity: id, app: topic, at: now)]) }
                return .recorded(try row.activity())
            }
            return try db.rows(StoreSQL.selectActivity(topic: topic, id: id, .sqlite)).first.map { .ended(try $0.activity()) }
                ?? .unknown
        }
    }
}

extension SQLiteStore {
    public func recordStartCheck(_ check: StartCheck) async throws -> RecordedStartCheck? {
        let now = clock.now()
        let statements = StoreSQL.recordStartCheck(check, at: now, .sqlite)
        return try await write("record a push-to-start check") { db in
            guard let activity = try db.rows(statements.claim).first?.activity() else { return nil }
            for statement in statements.changes { try db.execute(statement) }
            let stale = try statements.marksStale.flatMap { try db.rows($0) }.map { try DeviceToken(hex: $0.text(0)) }.sorted()
            try db.writeWebhookEvents(stale.map { .event(ofStale: $0, check: check, at: now) })
            return RecordedStartCheck(activity: activity, newlyStale: stale)
        }
    }
}
