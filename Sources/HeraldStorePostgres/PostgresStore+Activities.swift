import HeraldCore
public import HeraldStore

extension PostgresStore {
    public func createActivity(_ activity: NewActivity) async throws -> ActivityRecord? {
        let now = clock.now()
        return try await transaction("record an activity") { session in
            try await session.rows(StoreSQL.insertActivity(activity, at: now, .postgres)).first?.activity()
        }
    }

    public func activity(topic: String, id: String) async throws -> ActivityRecord? {
        try await session("read an activity") { session in
            try await session.rows(StoreSQL.selectActivity(topic: topic, id: id, .postgres)).first?.activity()
        }
    }

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

    public func activities(topic: String, active: Bool?, after cursor: ActivityCursor?, limit: Int) async throws
        -> ActivityPage
    {
        try await session("list activities") { session in
            let statement = StoreSQL.selectActivities(topic: topic, active: active, after: cursor, limit: limit, .postgres)
            return ActivityPage(try await session.rows(statement).map { try $0.activity() }, limit: limit)
        }
    }
}
