package import Foundation
package import HeraldCore

extension StatementStore {
    public func createConsoleSession(_ session: ConsoleSession) async throws {
        _ = try await writeRows("open a console session", StoreSQL.insertConsoleSession(session, dialect))
    }

    public func consoleSession(idHash: String) async throws -> ConsoleSession? {
        try await readRows("read a console session", StoreSQL.selectConsoleSession(idHash: idHash, dialect)).first?
            .consoleSession()
    }

    public func touchConsoleSession(idHash: String, at date: Date) async throws {
        _ = try await writeRows("touch a console session", StoreSQL.touchConsoleSession(idHash: idHash, at: date, dialect))
    }

    public func deleteConsoleSession(idHash: String) async throws -> Bool {
        try await !writeRows("end a console session", StoreSQL.deleteConsoleSession(idHash: idHash, dialect)).isEmpty
    }

    public func deleteConsoleSessions(lastSeenBefore date: Date) async throws -> Int {
        try await writeRows("expire console sessions", StoreSQL.deleteConsoleSessions(lastSeenBefore: date, dialect))
            .count
    }

    public func createSignInLink(tokenHash: String, expiresAt: Date) async throws {
        let statement = StoreSQL.insertSignInLink(tokenHash: tokenHash, expiresAt: expiresAt, at: clock.now(), dialect)
        _ = try await writeRows("store a sign-in link", statement)
    }

    public func consumeSignInLink(tokenHash: String, at date: Date) async throws -> Bool {
        try await !writeRows("use a sign-in link", StoreSQL.consumeSignInLink(tokenHash: tokenHash, at: date, dialect))
            .isEmpty
    }

    public func deviceStatistics() async throws -> DeviceStatistics {
        try DeviceStatistics(rows: try await readRows("count devices", StoreSQL.deviceStatistics(dialect)))
    }

    public func newDevicesPerDay(since date: Date) async throws -> [DayCount] {
        try await readRows("count new devices", StoreSQL.newDevicesPerDay(since: date, dialect)).map {
            DayCount(day: StoreSQL.day(try $0.integer(0)), count: Int(try $0.integer(1)))
        }
    }

    public func sendStatistics(since date: Date, reasons: Int) async throws -> SendStatistics {
        let (totals, rejections) = try await readRows(
            "summarize sends", [StoreSQL.sendTotals(since: date, dialect), StoreSQL.rejectionReasons(since: date, dialect)]
        ).pair
        guard let totals = totals.first else {
            return SendStatistics(sends: 0, counts: OutcomeCounts(), removed: 0, topReasons: [])
        }
        return try SendStatistics(totals: totals, reasons: rejections, limit: reasons)
    }

    public func sendsPerDay(since date: Date) async throws -> [DaySends] {
        try await readRows("count sends per day", StoreSQL.sendsPerDay(since: date, dialect)).map { try DaySends(row: $0) }
    }

    public func recentSends(after cursor: SendListCursor?, limit: Int, topics: Set<String>?) async throws
        -> SendListPage
    {
        let page = StoreSQL.recentSends(after: cursor, limit: limit, topics: topics, dialect)
        return SendListPage(try await readRows("list sends", page).map { try $0.send() }, limit: limit)
    }

    public func outcomeGroups(of id: SendID, acceptancesFromCounts: Bool) async throws -> [OutcomeGroup] {
        let statement = StoreSQL.outcomeGroups(of: id, acceptancesFromCounts: acceptancesFromCounts, dialect)
        return try await readRows("count a send's outcomes", statement).map { try $0.outcomeGroup() }
    }

    public func deliveries(to token: DeviceToken, limit: Int) async throws -> [DeviceDelivery] {
        let (outcomes, batches) = try await readRows(
            "list a device's deliveries",
            [
                StoreSQL.deliveries(to: token, limit: limit, dialect),
                StoreSQL.batchDeliveries(to: token, limit: limit, dialect),
            ]
        ).pair
        return StoreSQL.latest(
            try outcomes.map { try $0.delivery() } + StoreSQL.batchDeliveries(of: token, rows: batches), limit: limit)
    }

    public func devices(withTokenSuffix suffix: String, limit: Int) async throws -> [DeviceRegistration] {
        try await readRows("find devices by token", StoreSQL.devices(withTokenSuffix: suffix, limit: limit, dialect))
            .map { try $0.device() }
    }
}
