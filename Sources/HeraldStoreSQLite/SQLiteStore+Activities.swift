import HeraldCore
public import HeraldStore

extension SQLiteStore {
    public func createActivity(_ activity: NewActivity) async throws -> ActivityRecord? {
        let now = clock.now()
        return try await write("record an activity") { db in
            try db.rows(StoreSQL.insertActivity(activity, at: now, .sqlite)).first?.activity()
        }
    }

    public func activity(topic: String, id: String) async throws -> ActivityRecord? {
        try await read("read an activity") { db in
            try db.rows(StoreSQL.selectActivity(topic: topic, id: id, .sqlite)).first?.activity()
        }
    }

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

    public func activities(topic: String, active: Bool?, after cursor: ActivityCursor?, limit: Int) async throws
        -> ActivityPage
    {
        try await read("list activities") { db in
            let statement = StoreSQL.selectActivities(topic: topic, active: active, after: cursor, limit: limit, .sqlite)
            return ActivityPage(try db.rows(statement).map { try $0.activity() }, limit: limit)
        }
    }
}
