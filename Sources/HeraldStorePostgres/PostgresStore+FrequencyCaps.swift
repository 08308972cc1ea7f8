public import Foundation
public import HeraldStore
import PostgresNIO

extension PostgresStore {
    public func claimFrequencyCaps(
        _ caps: [FrequencyCap], topic: String, subjects: [String], send: SendID, recordOnSend: Bool, at date: Date
    ) async throws -> FrequencyCapClaim {
        let plan = FrequencyCapClaimPlan(
            caps, topic: topic, subjects: subjects, send: send, recordOnSend: recordOnSend, at: date, .postgres)
        guard !plan.isEmpty else { return FrequencyCapClaim(allowed: Set(subjects), suppressed: 0) }
        return try await transaction("claim frequency caps") { session in
            let decided: (claim: FrequencyCapClaim, spend: [SQLStatement])
            if let upsert = plan.upsert {
                decided = try plan.decide(upserted: try await session.rows(upsert))
            } else {
                for statement in plan.prepare { try await session.execute(statement) }
                var rows: [[PostgresRandomAccessRow]] = []
                for statement in plan.lock { rows.append(try await session.rows(statement)) }
                decided = try plan.decide(rows)
            }
            for statement in decided.spend { try await session.execute(statement) }
            return decided.claim
        }
    }
}
