public import Foundation
import GRDB
public import HeraldCore
public import HeraldStore

extension SQLiteStore {
    public func createConsoleSession(_ session: ConsoleSession) async throws {
        try await write("open a console session") { db in
            try db.execute(StoreSQL.insertConsoleSession(session, .sqlite))
        }
    }

    public func consoleSession(idHash: String) async throws -> ConsoleSession? {
        try await read("read a console session") { db in
            try db.rows(StoreSQL.selectConsoleSession(idHash: idHash, .sqlite)).first?.consoleSession()
        }
    }

    public func touchConsoleSession(idHash: String, at date: Date) async throws {
        try await write("touch a console session") { db in
            try db.execute(StoreSQL.touchConsoleSession(idHash: idHash, at: date, .sqlite))
        }
    }

    public func deleteConsoleSession(idHash: String) async throws -> Bool {
        try await write("end a console session") { db in
            try !db.rows(StoreSQL.deleteConsoleSession(idHash: idHash, .sqlite)).isEmpty
        }
    }

    public func deleteConsoleSessions(lastSeenBefore date: Date) async throws -> Int {
        try await write("expire console sessions") { db in
            try db.rows(StoreSQL.deleteConsoleSessions(lastSeenBefore: date, .sqlite)).count
        }
    }

    public func createSignInLink(tokenHash: String, expiresAt: Date) async throws {
        let now = clock.now()
        try await write("store a sign-in link") { db in
            try db.execute(StoreSQL.insertSignInLink(tokenHash: tokenHash, expiresAt: expiresAt, at: now, .sqlite))
        }
    }

    public func consumeSignInLink(tokenHash: String, at date: Date) async throws -> Bool {
        try await write("use a sign-in link") { db in
            try !db.rows(StoreSQL.consumeSignInLink(tokenHash: tokenHash, at: date, .sqlite)).isEmpty
        }
    }

    public func deviceStatistics() async throws -> DeviceStatistics {
        try await read("count devices") { db in
            try DeviceStatistics(rows: db.rows(StoreSQL.deviceStatistics(.sqlite)))
        }
    }

    public func newDevicesPerDay(since date: Date) async throws -> [DayCount] {
        try await read("count new devices") { db in
            try db.rows(StoreSQL.newDevicesPerDay(since: date, .sqlite)).map {
                DayCount(day: StoreSQL.day(try $0.integer(0)), count: Int(try $0.integer(1)))
            }
        }
    }

    public func sendStatistics(since date: Date, reasons: Int) async throws -> SendStatistics {
        try await read("summarize sends") { db in
            guard let totals = try db.rows(StoreSQL.sendTotals(since: date, .sqlite)).first else {
                return SendStatistics(sends: 0, counts: OutcomeCounts(), removed: 0, topReasons: [])
            }
            return try SendStatistics(
                totals: totals, reasons: db.rows(StoreSQL.rejectionReasons(since: date, .sqlite)), limit: reasons)
        }
    }

    public func sendsPerDay(since date: Date) async throws -> [DaySends] {
        try await read("count sends per day") { db in
            try db.rows(StoreSQL.sendsPerDay(since: date, .sqlite)).map { try DaySends(row: $0) }
        }
    }

    public func recentSends(after cursor: SendListCursor?, limit: Int, topics: Set<String>?) async throws
        -> SendListPage
    {
        try await read("list sends") { db in
            SendListPage(
                try db.rows(StoreSQL.recentSends(after: cursor, limit: limit, topics: topics, .sqlite)).map {
                    try $0.send()
                },
                limit: limit)
        }
    }

    public func outcomeGroups(of id: SendID, acceptancesFromCounts: Bool) async throws -> [OutcomeGroup] {
        try await read("count a send's outcomes") { db in
            try db.rows(StoreSQL.outcomeGroups(of: id, acceptancesFromCounts: acceptancesFromCounts, .sqlite)).map { try $0.outcomeGroup() }
        }
    }

    public func deliveries(to token: DeviceToken, limit: Int) async throws -> [DeviceDelivery] {
        try await read("list a device's deliveries") { db in
            StoreSQL.latest(
                try db.rows(StoreSQL.deliveries(to: token, limit: limit, .sqlite)).map { try $0.delivery() }
                    + StoreSQL.batchDeliveries(
                        of: token, rows: try db.rows(StoreSQL.batchDeliveries(to: token, limit: limit, .sqlite))),
                limit: limit)
        }
    }

    public func devices(withTokenSuffix suffix: String, limit: Int) async throws -> [DeviceRegistration] {
        try await read("find devices by token") { db in
            try db.rows(StoreSQL.devices(withTokenSuffix: suffix, limit: limit, .sqlite)).map { try $0.device() }
        }
    }
}
