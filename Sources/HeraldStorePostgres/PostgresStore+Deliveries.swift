public import Foundation
public import HeraldCore
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
        return try await transaction("record delivery outcomes") { session in
            guard try await session.rows(StoreSQL.lockSend(id, .postgres)).first != nil else { throw SendRecord.notFound(id) }
            let last = try await session.rows(StoreSQL.lastOutcomeSequence(of: id, .postgres)).first?.integer(0) ?? 0
            var batch = OutcomeCounts()
            for statement in StoreSQL.insertOutcomes(outcomes, of: id, firstSequence: last + 1, .postgres) {
                batch.add(kinds: try await session.rows(statement).map { try $0.text(0) })
            }
            let update = StoreSQL.addCounts(batch, to: id, checkpoint: checkpoint, at: now, .postgres)
            guard let row = try await session.rows(update).first else { throw SendRecord.notFound(id) }
            return try OutcomeCounts(stored: row)
        }
    }

    /// One statement, so one round trip: the send with its counts, and its outcomes.
    public func recordFinishedSend(_ send: NewSend, outcomes: [DeliveryOutcome]) async throws -> SendRecord {
        let now = clock.now()
        return try await session("record a finished send") { session in
            guard let row = try await session.rows(StoreSQL.insertFinishedSend(send, outcomes: outcomes, at: now)).first
            else { throw NewSend.alreadyExists(send.id) }
            return try row.send()
        }
    }

    public func tokensWithOutcomes(of id: SendID, among tokens: [DeviceToken]) async throws -> Set<DeviceToken> {
        guard !tokens.isEmpty else { return [] }
        return try await session("read which devices a send has done") { session in
            Set(
                try await session.rows(StoreSQL.tokensWithOutcomes(of: id, among: tokens, .postgres)).map {
                    try DeviceToken(storedHex: $0.text(0))
                })
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

    public func requeueAbandonedSends(keeping worker: String) async throws -> [SendID] {
        // Another instance's worker may be alive: only its lease running out says it is not.
        []
    }

    public func renewLease(of id: SendID, worker: String, until: Date) async throws -> Bool {
        let now = clock.now()
        return try await session("renew a lease") { session in
            try await !session.rows(StoreSQL.renewLease(of: id, worker: worker, until: until, at: now, .postgres))
                .isEmpty
        }
    }
}
