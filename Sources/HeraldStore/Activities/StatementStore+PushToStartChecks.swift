package import Foundation
import HeraldCore

extension StatementStore {
    public func recordActivityStart(topic: String, activityID: String, installationID: UUID) async throws {
        _ = try await writeRows(
            "record an activity's start",
            StoreSQL.insertActivityStart(
                topic: topic, activityID: activityID, installationID: installationID, at: clock.now(), dialect))
    }

    public func activityStartsDue(endedBy: Date, limit: Int) async throws -> [DueStartCheck] {
        try await readRows("find activities whose start is due to check", StoreSQL.activityStartsDue(
            endedBy: endedBy, limit: limit, dialect)).map { row in
            guard let send = SendID(try row.text(2)) else {
                throw StoreError(.corruptRecord, "A stored activity names an unreadable start send: repair or delete the row.")
            }
            return DueStartCheck(topic: try row.text(0), activityID: try row.text(1), sendID: send)
        }
    }

    public func startedInstallations(topic: String, activityID: String) async throws -> Set<UUID> {
        Set(try await readRows(
            "read an activity's starts", StoreSQL.startedInstallations(topic: topic, activityID: activityID, dialect)
        ).compactMap { UUID(text: try $0.text(0)) })
    }
}
