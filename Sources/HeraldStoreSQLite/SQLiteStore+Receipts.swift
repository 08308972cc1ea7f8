import GRDB
import HeraldCore
public import HeraldStore

extension SQLiteStore {
    public func recordReceipts(_ events: [ReceiptEvent]) async throws -> [ReceiptResult] {
        guard !events.isEmpty else { return [] }
        let now = clock.now()
        return try await write("record delivery receipts") { db in
            var recording = ReceiptRecording(events, at: now, .sqlite)
            for (index, lookup) in recording.lookups.enumerated() {
                try recording.resolve(index, rows: try db.rows(lookup))
            }
            for (index, insert) in recording.inserts().enumerated() {
                recording.inserted(index, row: try db.rows(insert).first)
            }
            for update in recording.countUpdates { try db.execute(update) }
            try db.writeWebhookEvents(recording.webhookDrafts)
            return recording.results
        }
    }
}
