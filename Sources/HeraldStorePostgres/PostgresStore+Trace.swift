public import HeraldCore
public import HeraldStore

extension PostgresStore {
    public func deliveryTrace(of id: SendID, to token: DeviceToken) async throws -> StoredDeliveryTrace {
        try await session("read a delivery trace") { session in
            var outcome = try await session.rows(StoreSQL.outcome(of: id, to: token, .postgres)).first?
                .outcome(send: id).outcome
            if outcome == nil {
                outcome = try StoreSQL.acceptedOutcome(
                    of: token, send: id, rows: try await session.rows(StoreSQL.acceptance(of: id, to: token, .postgres))
                )?.outcome
            }
            if outcome != nil {
                outcome?.attempts = try await session.rows(StoreSQL.attempts(of: id, to: token, .postgres)).map {
                    try $0.deliveryAttempt()
                }
            }
            let receipts = try await session.rows(StoreSQL.tracedReceipts(of: id, to: token, .postgres)).map {
                try $0.tracedReceipt()
            }
            return StoredDeliveryTrace(outcome: outcome, receipts: receipts)
        }
    }

    /// Stores the attempts of the outcomes of a send that have any, in the session's transaction (most have none:
    /// nothing runs).
    func insertAttempts(_ outcomes: [DeliveryOutcome], of id: SendID, in session: Session) async throws {
        if let statement = StoreSQL.insertAttempts(of: id, outcomes, .postgres) { try await session.execute(statement) }
    }
}
