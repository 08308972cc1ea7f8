package import Foundation
package import HeraldCore

extension StatementStore {
    public func remove(_ token: DeviceToken) async throws -> Bool {
        try await !writeRows("remove a token", StoreSQL.deleteDevice(token, dialect)).isEmpty
    }

    public func count(matching query: DeviceQuery) async throws -> Int {
        let statements = query.countStatements(dialect: dialect)
        guard !statements.isEmpty else { return 0 }
        return try await readRows("count registrations", statements).reduce(0) { total, rows in
            total + Int(try rows[0].integer(0))
        }
    }

    public func timeZones(matching query: DeviceQuery) async throws -> DeviceTimeZones {
        let statements = query.timeZoneStatements(dialect: dialect)
        var zones = DeviceTimeZones()
        guard !statements.isEmpty else { return zones }
        for row in try await readRows("list the time zones of registrations", statements).joined() {
            zones.insert(try row.optionalText(0), ownQuietHours: query.groupsByOwnQuietHours ? try row.optionalText(1) : nil)
        }
        return zones
    }

    public func purgeInvalidated(before date: Date) async throws -> Int {
        try await writeRows("purge invalidated tokens", StoreSQL.purgeInvalidated(before: date, dialect)).count
    }
}
