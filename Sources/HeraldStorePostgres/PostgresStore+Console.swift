public import Foundation
public import HeraldCore
public import HeraldStore

extension PostgresStore {
    public func createConsoleSession(_ record: ConsoleSession) async throws {
        try await transaction("open a console session") { session in
            try await session.execute(StoreSQL.insertConsoleSession(record, .postgres))
        }
    }

    public func consoleSession(idHash: String) async throws -> ConsoleSession? {
        try await session("read a console session") { session in
            try await session.rows(StoreSQL.selectConsoleSession(idHash: idHash, .postgres)).first?.consoleSession()
        }
    }

    public func touchConsoleSession(idHash: String, at date: Date) async throws {
        try await session("touch a console session") { session in
            try await session.execute(StoreSQL.touchConsoleSession(idHash: idHash, at: date, .postgres))
        }
    }

    public func deleteConsoleSession(idHash: String) async throws -> Bool {
        try await transaction("end a console session") { session in
            try await !session.rows(StoreSQL.deleteConsoleSession(idHash: idHash, .postgres)).isEmpty
        }
    }

    public func deleteConsoleSessions(lastSeenBefore date: Date) async throws -> Int {
        try await session("expire console sessions") { session in
            try await session.rows(StoreSQL.deleteConsoleSessions(lastSeenBefore: date, .postgres)).count
        }
    }

    public func createSignInLink(tokenHash: String, expiresAt: Date) async throws {
        let now = clock.now()
        try await transaction("store a sign-in link") { session in
            try await session.execute(StoreSQL.insertSignInLink(tokenHash: tokenHash, expiresAt: expiresAt, at: now, .postgres))
        }
    }

    public func consumeSignInLink(tokenHash: String, at date: Date) async throws -> Bool {
        try await transaction("use a sign-in link") { session in
            try await !session.rows(StoreSQL.consumeSignInLink(tokenHash: tokenHash, at: date, .postgres)).isEmpty
        }
    }

    public func deviceStatistics() async throws -> DeviceStatistics {
        try await session("count devices") { session in
            try await DeviceStatistics(rows: session.rows(StoreSQL.deviceStatistics(.postgres)))
        }
    }

    public func newDevicesPerDay(since date: Date) async throws -> [DayCount] {
        try await session("count new devices") { session in
            try await session.rows(StoreSQL.newDevicesPerDay(since: date, .postgres)).map {
                DayCount(day: StoreSQL.day(try $0.integer(0)), count: Int(try $0.integer(1)))
            }
        }
    }

    public func sendStatistics(since date: Date, reasons: Int) async throws -> SendStatistics {
        try await session("summarize sends") { session in
            guard let totals = try await session.rows(StoreSQL.sendTotals(since: date, .postgres)).first else {
                return SendStatistics(sends: 0, counts: OutcomeCounts(), removed: 0, topReasons: [])
            }
            return try await SendStatistics(
                totals: totals, reasons: session.rows(StoreSQL.rejectionReasons(since: date, .postgres)), limit: reasons)
        }
    }

    public func sendsPerDay(since date: Date) async throws -> [DaySends] {
        try await session("count sends per day") { session in
            try await session.rows(StoreSQL.sendsPerDay(since: date, .postgres)).map { try DaySends(row: $0) }
        }
    }

    public func recentSends(after cursor: SendListCursor?, limit: Int, topics: Set<String>?) async throws
        -> SendListPage
    {
        try await session("list sends") { session in
            let rows = try await session.rows(
                StoreSQL.recentSends(after: cursor, limit: limit, topics: topics, .postgres))
            return SendListPage(try rows.map { try $0.send() }, limit: limit)
        }
    }

    public func outcomeGroups(of id: SendID, acceptancesFromCounts: Bool) async throws -> [OutcomeGroup] {
        try await session("count a send's outcomes") { session in
            try await session.rows(StoreSQL.outcomeGroups(of: id, acceptancesFromCounts: acceptancesFromCounts, .postgres)).map { try $0.outcomeGroup() }
        }
    }

    public func deliveries(to token: DeviceToken, limit: Int) async throws -> [DeviceDelivery] {
        try await session("list a device's deliveries") { session in
            StoreSQL.latest(
                try await session.rows(StoreSQL.deliveries(to: token, limit: limit, .postgres)).map { try $0.delivery() }
                    + StoreSQL.batchDeliveries(
                        of: token, rows: try await session.rows(StoreSQL.batchDeliveries(to: token, limit: limit, .postgres))),
                limit: limit)
        }
    }

    public func devices(withTokenSuffix suffix: String, limit: Int) async throws -> [DeviceRegistration] {
        try await session("find devices by token") { session in
            try await session.rows(StoreSQL.devices(withTokenSuffix: suffix, limit: limit, .postgres)).map { try $0.device() }
        }
    }
}
