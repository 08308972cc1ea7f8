package import HeraldCore

extension StatementStore {
    /// One read of what the send recorded for the device: its outcome (a row, or its batch's acceptance), the outcome's
    /// attempts, and the device's receipts.
    public func deliveryTrace(of id: SendID, to token: DeviceToken) async throws -> StoredDeliveryTrace {
        let rows = try await readRows(
            "read a delivery trace",
            [
                StoreSQL.outcome(of: id, to: token, dialect), StoreSQL.acceptance(of: id, to: token, dialect),
                StoreSQL.attempts(of: id, to: token, dialect), StoreSQL.tracedReceipts(of: id, to: token, dialect),
                StoreSQL.startOutcome(of: id, to: token, dialect),
            ])
        var outcome =
            try rows[0].first?.outcome(send: id).outcome
            ?? StoreSQL.acceptedOutcome(of: token, send: id, rows: rows[1])?.outcome
        outcome?.attempts = try rows[2].map { try $0.deliveryAttempt() }
        var activityStart: ActivityStartOutcome?
        if outcome != nil, let start = rows[4].first {
            if let checked = try start.optionalInteger(0).map(StoreTime.date) {
                activityStart = try start.integer(1) > 0 ? .notStarted(checkedAt: checked) : .started(checkedAt: checked)
            } else {
                activityStart = .pending
            }
        }
        return StoredDeliveryTrace(
            outcome: outcome, receipts: try rows[3].map { try $0.tracedReceipt() }, activityStart: activityStart)
    }
}
