import Foundation
import HeraldCore

extension StatementStore {
    public func createActivity(_ activity: NewActivity) async throws -> ActivityRecord? {
        try await writeRows("record an activity", StoreSQL.insertActivity(activity, at: clock.now(), dialect)).first?
            .activity()
    }

    public func activity(topic: String, id: String) async throws -> ActivityRecord? {
        try await readRows("read an activity", StoreSQL.selectActivity(topic: topic, id: id, dialect)).first?.activity()
    }

    public func activities(topic: String, active: Bool?, after cursor: ActivityCursor?, limit: Int) async throws
        -> ActivityPage
    {
        let page = StoreSQL.selectActivities(topic: topic, active: active, after: cursor, limit: limit, dialect)
        return ActivityPage(try await readRows("list activities", page).map { try $0.activity() }, limit: limit)
    }
}
