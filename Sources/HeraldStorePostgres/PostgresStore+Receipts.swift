import HeraldCore
public import HeraldStore

extension PostgresStore {
    /// One transaction; a round trip per statement (a lookup and one or two inserts per event, an update per send).
    public func recordReceipts(_ events: [ReceiptEvent]) async throws -> [ReceiptResult] {
        guard !events.isEmpty else { return [] }
        let now = clock.now()
        return try await transaction("record delivery receipts") { session in
            var recording = ReceiptRecording(events, at: now, .postgres)
            for (index, lookup) in recording.lookups.enumerated() {
                try recording.resolve(index, rows: try await session.rows(lookup))
            }
            for (index, insert) in recording.inserts().enumerated() {
                recording.inserted(index, row: try await session.rows(insert).first)
            }
            for update in recording.countUpdates { try await session.execute(update) }
            try await session.writeWebhookEvents(recording.webhookDrafts)
            return recording.results
        }
    }
}
