public import Foundation
public import HeraldCore
public import HeraldStore
import PostgresNIO

extension PostgresStore {
    /// One round trip: the `herald_register` function does the locking read, the upsert, the tag rows and the
    /// move-aside in one implicit transaction, durable when it returns.
    public func upsert(_ registration: TokenRegistration) async throws -> UpsertResult {
        let registration = try registration.validated()
        let now = clock.now()
        return try await session("store a registration") { session in
            try UpsertResult(registration, at: now, registered: try await session.rows(StoreSQL.register(registration, at: now))[0])
        }
    }

    public func remove(_ token: DeviceToken) async throws -> Bool {
        try await session("remove a token") { session in
            try await !session.rows(StoreSQL.deleteDevice(token, .postgres)).isEmpty
        }
    }

    public func device(_ token: DeviceToken) async throws -> DeviceRegistration? {
        try await session("read a registration") { session in
            try await session.rows(StoreSQL.selectDevice(token, .postgres)).first?.device()
        }
    }

    public func devices(matching query: DeviceQuery, after cursor: DeviceCursor?, limit: Int) async throws
        -> DevicePage
    {
        let page = query.pageStatement(after: cursor, limit: limit, dialect: .postgres)
        guard let statement = page.statement else { return DevicePage(devices: [], next: nil) }
        let rows = try await session("read registrations") { session in
            try await session.rows(statement).map { try $0.device() }
        }
        return query.page(of: rows, for: page)
    }

    public func count(matching query: DeviceQuery) async throws -> Int {
        try await session("count registrations") { session in
            var total = 0
            for statement in query.countStatements(dialect: .postgres) {
                total += Int(try await session.rows(statement)[0].integer(0))
            }
            return total
        }
    }

    public func timeZones(matching query: DeviceQuery) async throws -> DeviceTimeZones {
        try await session("list the time zones of registrations") { session in
            var zones = DeviceTimeZones()
            for statement in query.timeZoneStatements(dialect: .postgres) {
                for row in try await session.rows(statement) { zones.insert(try row.optionalText(0)) }
            }
            return zones
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

    public func updateEnvironment(token: DeviceToken, to environment: APNSEnvironment) async throws
        -> DeviceRegistration?
    {
        let now = clock.now()
        return try await transaction("correct a token's environment") { session in
            let update = StoreSQL.updateEnvironment(token, to: environment, at: now, .postgres)
            guard !(try await session.rows(update)).isEmpty else { return nil }
            return try await session.rows(StoreSQL.selectDevice(token, .postgres)).first?.device()
        }
    }

    public func purgeInvalidated(before date: Date) async throws -> Int {
        try await session("purge invalidated tokens") { session in
            try await session.rows(StoreSQL.purgeInvalidated(before: date, .postgres)).count
        }
    }
}
