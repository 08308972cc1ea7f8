import HeraldCore
package import Foundation

extension StatementStore {
    public func frequencyCapCounters(_ caps: [FrequencyCap], topic: String, subject: String, at date: Date)
        async throws -> [FrequencyCapCounter?]
    {
        let statements = caps.map { StoreSQL.frequencyCapCounter($0, topic: topic, subject: subject, at: date, dialect) }
        guard !statements.isEmpty else { return [] }
        return try await readRows("read frequency cap counters", statements).map { try $0.first?.frequencyCapCounter() }
    }

    public func purgeFrequencyWindows(endedBefore date: Date, limit: Int) async throws -> Int {
        let statement = StoreSQL.purgeFrequencyWindows(endedBefore: date, limit: limit, dialect)
        return try await writeRows("delete ended frequency windows", statement).count
    }
}
