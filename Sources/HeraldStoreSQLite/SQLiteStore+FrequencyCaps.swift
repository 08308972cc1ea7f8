public import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    public func claimFrequencyCaps(
        _ caps: [FrequencyCap], topic: String, subjects: [String], send: SendID, recordOnSend: Bool, at date: Date
    ) async throws -> FrequencyCapClaim {
        let plan = FrequencyCapClaimPlan(
            caps, topic: topic, subjects: subjects, send: send, recordOnSend: recordOnSend, at: date, .sqlite)
        guard !plan.isEmpty else { return FrequencyCapClaim(allowed: Set(subjects), suppressed: 0) }
        return try await write("claim frequency caps") { db in
            let decided: (claim: FrequencyCapClaim, spend: [SQLStatement])
            if let upsert = plan.upsert {
                decided = try plan.decide(upserted: try db.rows(upsert))
            } else {
                for statement in plan.prepare { try db.execute(statement) }
                decided = try plan.decide(try plan.lock.map { try db.rows($0) })
            }
            for statement in decided.spend { try db.execute(statement) }
            return decided.claim
        }
    }
}
