import GRDB
public import HeraldCore
public import HeraldStore

extension SQLiteStore {
    public func deliveryTrace(of id: SendID, to token: DeviceToken) async throws -> StoredDeliveryTrace {
        try await read("read a delivery trace") { db in
            var outcome = try db.rows(StoreSQL.outcome(of: id, to: token, .sqlite)).first?.outcome(send: id).outcome
            if outcome == nil {
                outcome = try StoreSQL.acceptedOutcome(
                    of: token, send: id, rows: try db.rows(StoreSQL.acceptance(of: id, to: token, .sqlite)))?.outcome
            }
            outcome?.attempts = try db.rows(StoreSQL.attempts(of: id, to: token, .sqlite)).map {
                try $0.deliveryAttempt()
            }
            let receipts = try db.rows(StoreSQL.tracedReceipts(of: id, to: token, .sqlite)).map {
                try $0.tracedReceipt()
            }
            return StoredDeliveryTrace(outcome: outcome, receipts: receipts)
        }
    }
}

extension Database {
    /// Stores the attempts of the outcomes that have any (most have none: nothing runs).
    func insertAttempts(_ outcomes: some Sequence<DeliveryOutcome>, of id: SendID) throws {
        if let statement = StoreSQL.insertAttempts(of: id, outcomes, .sqlite) { try execute(statement) }
    }
}
