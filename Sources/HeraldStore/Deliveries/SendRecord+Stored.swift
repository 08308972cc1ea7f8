extension SendRecord {
    /// Rebuilds a send from its stored columns; both backends read rows through this.
    /// - Throws: ``StoreError`` `.corruptRecord` when a column holds something no store writes.
    package init(
        storedID id: String, createdAt: Int64, updatedAt: Int64, target: String, summary: String, job: String?,
        status: String, targetCount: Int?, accepted: Int, rejected: Int, failed: Int, checkpoint: String?,
        worker: String?, leaseUntil: Int64?, message: String?, sendAt: Int64?, sentThrough: Int64?, lane: String, shardCount: Int?,
        suppressedByPreference: Int, topic: String? = nil, suppressedByFrequencyCap: Int = 0,
        suppressedQuietHours: (dropped: Int, deferred: Int) = (0, 0), suppressedActivitiesDisabled: Int = 0
    ) throws {
        guard let parsedID = SendID(id), let parsedStatus = SendStatus(rawValue: status),
            let parsedLane = SendLane(rawValue: lane)
        else {
            throw StoreError(
                .corruptRecord, "A stored send has an unreadable id, status or lane: repair or delete the row.")
        }
        var parsedCheckpoint: DeviceCursor?
        if let checkpoint {
            guard let cursor = DeviceCursor(checkpoint) else {
                throw StoreError(.corruptRecord, "The stored send \(parsedID) has an unreadable checkpoint.")
            }
            parsedCheckpoint = cursor
        }
        self.init(
            id: parsedID, createdAt: StoreTime.date(createdAt), updatedAt: StoreTime.date(updatedAt), target: target,
            summary: summary, job: job, status: parsedStatus, targetCount: targetCount,
            counts: OutcomeCounts(accepted: accepted, rejected: rejected, failed: failed),
            checkpoint: parsedCheckpoint, worker: worker, leaseUntil: leaseUntil.map(StoreTime.date),
            message: message, sendAt: sendAt.map(StoreTime.date), sentThrough: sentThrough.map(StoreTime.date),
            lane: parsedLane, shardCount: shardCount,
            suppressed: SuppressedCounts(
                preference: suppressedByPreference, frequencyCap: suppressedByFrequencyCap,
                quietHoursDropped: suppressedQuietHours.dropped, quietHoursDeferred: suppressedQuietHours.deferred,
                activitiesDisabled: suppressedActivitiesDisabled),
            topic: topic)
    }

    /// The error for an operation on a send that does not exist.
    package static func notFound(_ id: SendID) -> StoreError {
        StoreError(.notFound, "There is no send \(id): check the id, or whether the send was deleted.")
    }
}
