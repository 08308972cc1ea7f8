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
