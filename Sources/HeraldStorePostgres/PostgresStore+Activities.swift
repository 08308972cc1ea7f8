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
