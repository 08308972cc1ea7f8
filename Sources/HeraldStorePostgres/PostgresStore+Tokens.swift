public import Foundation
public import HeraldCore
public import HeraldStore
import PostgresNIO

extension PostgresStore {
    /// Group commit (``GroupCommit``): registrations that arrive while a batch is being stored go in the
    /// next, one call of `herald_register_batch` for the batch — the locking read, the upsert, the tag rows and the
    /// move-aside of each, in one transaction. Durable when it returns; a lone registration is sent at once.
    public func upsert(_ registration: TokenRegistration) async throws -> UpsertResult {
        let registration = try registration.validated()
        try ensureOpen()
        return try await registrations.submit(
            PendingRegistration(registration: registration, registeredAt: clock.now()))
    }

    /// Stores a batch of the group commit with one call, in one transaction; their results, in the batch's order.
    func storeRegistrations(_ batch: [PendingRegistration]) async throws -> [UpsertResult] {
        let statement = StoreSQL.registerBatch(batch.map { ($0.registration, $0.registeredAt) })
        return try await transaction("store \(batch.count) registrations") { session in
            let rows = try await session.rows(statement)
            guard rows.count == batch.count,
                try rows.enumerated().allSatisfy({ index, row in try row.integer(4) == index + 1 })
            else {
                throw StoreError(
                    .backend,
                    "PostgreSQL's herald_register_batch answered \(rows.count) rows for \(batch.count) registrations, or out of order: check that the database was migrated by this Herald (GET /ready shows the schema version)."
                )
            }
            return try zip(batch, rows).map { pending, row in
                try UpsertResult(pending.registration, at: pending.registeredAt, registered: row)
            }
        }
    }

    /// Stores one registration of the group commit on its own (`herald_register`): when its batch's call failed.
    func storeRegistration(_ pending: PendingRegistration) async throws -> UpsertResult {
        let statement = StoreSQL.register(pending.registration, at: pending.registeredAt)
        return try await transaction("store a registration") { session in
            try UpsertResult(
                pending.registration, at: pending.registeredAt, registered: try await session.rows(statement)[0])
        }
    }

    /// Reads that arrive while one is in flight go together in the next query (``GroupCommit``, `deviceReads`): an
    /// inline send reads its device by token, and under load a round trip each was a fair share of the server's and
    /// the database's time. A lone read goes at once, prepared.
    public func device(_ token: DeviceToken) async throws -> DeviceRegistration? {
        try ensureOpen()
        return try await deviceReads.submit(token)
    }

    /// The devices of a batch of reads, in its order (`nil` for a token not registered), with one query.
    func readDevices(_ tokens: [DeviceToken]) async throws -> [DeviceRegistration?] {
        if tokens.count == 1 { return [try await readDevice(tokens[0])] }
        let statement = StoreSQL.selectDevices(tokens)
        let devices = try await session("read \(tokens.count) registrations") { session in
            try await session.rows(statement).map { try $0.device() }
        }
        let byToken = Dictionary(devices.map { ($0.token, $0) }, uniquingKeysWith: { first, _ in first })
        return tokens.map { byToken[$0] }
    }

    /// One device by its token, a statement prepared once per connection.
    func readDevice(_ token: DeviceToken) async throws -> DeviceRegistration? {
        try await session("read a registration") { session in
            try await session.rows(StoreSQL.selectDevice(token, .postgres)).first?.device()
        }
    }

    public func devices(matching query: DeviceQuery, after cursor: DeviceCursor?, limit: Int) async throws
        -> DevicePage
    {
        if let token = query.singleToken {
            // An inline send's target: a read by key, a statement prepared once per connection.
            return query.singleTokenPage(try await device(token), after: cursor)
        }
        let page = query.pageStatement(after: cursor, limit: limit, dialect: .postgres)
        guard let statement = page.statement else { return DevicePage(devices: [], next: nil) }
        let rows = try await session("read registrations") { session in
            try await session.rows(statement).map { try $0.device() }
        }
        return query.page(of: rows, for: page)
    }

    public func shardBoundaries(matching query: DeviceQuery, size: Int, limit: Int) async throws -> [DeviceCursor] {
        try await session("cut a send into shards") { session in
            var boundaries: [DeviceCursor] = []
            while boundaries.count < limit {
                let rows = try await session.rows(
                    query.boundaryStatement(after: boundaries.last, count: size, dialect: .postgres))
                guard rows.count == 2 else { break }
                boundaries.append(try DeviceCursor(storedEnvironment: rows[0].text(0), token: rows[0].text(1)))
            }
            return boundaries
        }
    }

    public func invalidate(token: DeviceToken, reason: APNSReason, at apnsTimestamp: Date?) async throws
        -> InvalidationResult
    {
        let now = clock.now()
        return try await transaction("invalidate a token") { session in
            guard let state = try await session.rows(StoreSQL.selectDeviceState(token, .postgres)).first else {
                return .notFound
            }
            let result = InvalidationResult.decide(
                registeredAt: StoreTime.date(try state.integer(2)), apnsTimestamp: apnsTimestamp)
            if result == .removed {
                try await session.execute(
                    StoreSQL.invalidate(token, reason: reason, apnsTimestamp: apnsTimestamp, at: now, .postgres))
            }
            return result
        }
    }

    public func updateEnvironment(token: DeviceToken, to environment: APNSEnvironment, correctedBy send: SendID?)
        async throws -> DeviceRegistration?
    {
        let now = clock.now()
        return try await transaction("correct a token's environment") { session in
            let update = StoreSQL.updateEnvironment(token, to: environment, at: now, .postgres)
            guard !(try await session.rows(update)).isEmpty else { return nil }
            if let send { try await session.execute(StoreSQL.recordCorrection(token, by: send, .postgres)) }
            return try await session.rows(StoreSQL.selectDevice(token, .postgres)).first?.device()
        }
    }
}
