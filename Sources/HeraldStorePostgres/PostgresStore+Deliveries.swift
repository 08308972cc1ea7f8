public import Foundation
import HeraldCore
public import HeraldStore

extension PostgresStore {
    public func createSend(_ send: NewSend) async throws -> SendRecord {
        let now = clock.now()
        return try await session("record a send") { session in
            guard let row = try await session.rows(StoreSQL.insertSend(send, at: now, .postgres)).first else {
                throw NewSend.alreadyExists(send.id)
            }
            return try row.send()
        }
    }

    public func updateSend(_ id: SendID, _ update: SendUpdate) async throws -> SendRecord {
        let now = clock.now()
        return try await session("update a send") { session in
            guard let row = try await session.rows(StoreSQL.updateSend(id, update, at: now, .postgres)).first else {
                throw SendRecord.notFound(id)
            }
            return try row.send()
        }
    }

    public func recordOutcomes(_ outcomes: [DeliveryOutcome], for id: SendID, checkpoint: DeviceCursor?)
        async throws -> OutcomeCounts
    {
        let now = clock.now()
        let batch = OutcomeCounts(outcomes)
        return try await transaction("record delivery outcomes") { session in
            // The UPDATE locks the send's row, so concurrent batches of one send are numbered one after the other.
            let update = StoreSQL.addCounts(batch, to: id, checkpoint: checkpoint, at: now, .postgres)
            guard let row = try await session.rows(update).first else { throw SendRecord.notFound(id) }
            let counts = try OutcomeCounts(stored: row)
            for statement in StoreSQL.insertOutcomes(outcomes, of: id, countsAfter: counts, .postgres) {
                try await session.execute(statement)
            }
            return counts
        }
    }

    public func send(_ id: SendID) async throws -> SendRecord? {
        try await session("read a send") { session in
            try await session.rows(StoreSQL.selectSend(id, .postgres)).first?.send()
        }
    }

    public func outcomes(of id: SendID, after cursor: OutcomeCursor?, limit: Int) async throws -> OutcomePage {
        let limit = max(1, limit)
        let rows = try await session("read delivery outcomes") { session in
            try await session.rows(StoreSQL.outcomes(of: id, after: cursor, limit: limit, .postgres)).map {
                try $0.outcome()
            }
        }
        return OutcomePage(rows, limit: limit)
    }

    public func claimNextQueuedSend(worker: String, leaseUntil: Date) async throws -> SendRecord? {
        let now = clock.now()
        return try await session("claim a send") { session in
            try await session.rows(StoreSQL.claimSend(worker: worker, leaseUntil: leaseUntil, at: now, .postgres))
                .first?.send()
        }
    }

    public func renewLease(of id: SendID, worker: String, until: Date) async throws -> Bool {
        let now = clock.now()
        return try await session("renew a lease") { session in
            try await !session.rows(StoreSQL.renewLease(of: id, worker: worker, until: until, at: now, .postgres))
                .isEmpty
        }
    }
}
