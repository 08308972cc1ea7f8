public import Foundation
import GRDB
public import HeraldCore
public import HeraldStore

extension SQLiteStore {
    /// Concurrent upserts are committed together (group commit, ``GroupCommit``): each is durable when it returns.
    public func upsert(_ registration: TokenRegistration) async throws -> UpsertResult {
        let registration = try registration.validated()
        let now = clock.now()
        return try await write("store a registration") { db in try SQLiteStore.write(registration, at: now, in: db) }
    }

    /// Writes one validated registration inside the caller's transaction.
    static func write(_ registration: TokenRegistration, at now: Date, in db: Database) throws -> UpsertResult {
        let previous = try db.rows(StoreSQL.selectDeviceState(registration.token, .sqlite)).first
        let createdAt = try db.rows(StoreSQL.upsertDevice(registration, at: now, .sqlite))[0].integer(0)
        let tags = StoreSQL.rewriteTags(registration, storedTags: try previous?.text(0), .sqlite)
        for statement in tags { try db.execute(statement) }
        let moved = try StoreSQL.moveAside(registration, .sqlite).map { try db.rows($0) } ?? []
        return try UpsertResult(registration, at: now, createdAt: createdAt, previous: previous, movedAside: moved)
    }

    public func device(_ token: DeviceToken) async throws -> DeviceRegistration? {
        try await quickRows("read a registration", StoreSQL.selectDevice(token, .sqlite)).first?.device()
    }

    public func devices(matching query: DeviceQuery, after cursor: DeviceCursor?, limit: Int) async throws
        -> DevicePage
    {
        let page = query.pageStatement(after: cursor, limit: limit, dialect: .sqlite)
        guard let statement = page.statement else { return DevicePage(devices: [], next: nil) }
        let rows: [DeviceRegistration]
        if query.singleToken != nil {
            // The target of an inline send to one device: a read by key.
            rows = try await quickRows("read registrations", statement).map { try $0.device() }
        } else {
            rows = try await read("read registrations") { db in try db.rows(statement).map { try $0.device() } }
        }
        return query.page(of: rows, for: page)
    }

    public func shardBoundaries(matching query: DeviceQuery, size: Int, limit: Int) async throws -> [DeviceCursor] {
        try await read("cut a send into shards") { db in
            var boundaries: [DeviceCursor] = []
            while boundaries.count < limit {
                let rows = try db.rows(query.boundaryStatement(after: boundaries.last, count: size, dialect: .sqlite))
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
        return try await write("invalidate a token") { db in
            guard let state = try db.rows(StoreSQL.selectDeviceState(token, .sqlite)).first else { return .notFound }
            let result = InvalidationResult.decide(
                registeredAt: StoreTime.date(try state.integer(2)), apnsTimestamp: apnsTimestamp)
            if result == .removed {
                try db.execute(
                    StoreSQL.invalidate(token, reason: reason, apnsTimestamp: apnsTimestamp, at: now, .sqlite))
            }
            return result
        }
    }

    public func updateEnvironment(token: DeviceToken, to environment: APNSEnvironment, correctedBy send: SendID?)
        async throws -> DeviceRegistration?
    {
        let now = clock.now()
        return try await write("correct a token's environment") { db in
            guard !(try db.rows(StoreSQL.updateEnvironment(token, to: environment, at: now, .sqlite))).isEmpty else {
                return nil
            }
            if let send { try db.execute(StoreSQL.recordCorrection(token, by: send, .sqlite)) }
            return try db.rows(StoreSQL.selectDevice(token, .sqlite)).first?.device()
        }
    }
}
