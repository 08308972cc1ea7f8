import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import PostgresNIO
import Testing

@testable import HeraldStorePostgres

@Suite("PostgreSQL store: prepared statements")
struct PreparedStatementTests {
    let token = try! DeviceToken(hex: String(repeating: "7f", count: 32))

    @Test("an inline send's statements are prepared, whatever their values; other shapes are not")
    func hotStatementsArePrepared() {
        let now = Date()
        let send = NewSend(target: "token …7f7f7f7f", summary: "alert push", status: .completed, targetCount: 1)
        for result: DeliveryOutcome.Result in [
            .accepted(apnsID: APNSID()), .rejected(status: 400, reason: .badDeviceToken, timestamp: nil),
            .failed(message: "no answer"),
        ] {
            let outcome = DeliveryOutcome(token: token, environment: .development, result: result, at: now)
            let statement = StoreSQL.insertFinishedSend(send, outcomes: [outcome], at: now)
            #expect(PreparedShapes.bySQL[statement.sql] != nil)
            let two = StoreSQL.insertFinishedSend(send, outcomes: [outcome, outcome], at: now)
            #expect(PreparedShapes.bySQL[two.sql] == nil, "two devices are another shape, sent unnamed")
        }
        #expect(PreparedShapes.bySQL[StoreSQL.selectDevice(token, .postgres).sql] != nil)
        #expect(PreparedShapes.bySQL[StoreSQL.selectDevice(token, .sqlite).sql] == nil)
    }

    @Test("parameter types come from the samples: text and bigint, never left to PostgreSQL to guess from a NULL")
    func parameterTypes() {
        let samples = [
            SQLStatement(.postgres, "SELECT $1, $2, $3", [.text("a"), .null, .null]),
            SQLStatement(.postgres, "SELECT $1, $2, $3", [.null, .integer(1), .null]),
            SQLStatement(.postgres, "SELECT $1, $2, $3", [.null, .text("b"), .integer(2)]),
        ]
        let text = PreparedText(samples: samples)
        #expect(text.sql == "SELECT $1, $2, $3")
        #expect(text.types == [.text, .int8, .int8])
        let names = PreparedShapes.bySQL.values.map { $0.name }
        #expect(Set(names).count == names.count && names.allSatisfy { $0.utf8.count <= 63 }, "\(names)")
        for shape in PreparedShapes.bySQL.values { #expect(!shape.text.types.isEmpty) }
    }

    @Test(
        "one connection runs every prepared statement again and again, each answering as the unnamed ones do",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"), .timeLimit(.minutes(2)))
    func oneConnectionReusesThem() async throws {
        let database = try PostgresStoreTests.caseDatabase()
        let store = try PostgresStore(url: database.url.replacingOccurrences(of: "pool=3", with: "pool=1"))
        try await withCleanup({ await database.fixture.cleanup() }) {
            try await StoreConformance.withRunning(store) { store in
                _ = try await store.upsert(TokenRegistration(token: token, topic: "com.example.app", environment: .development))
                let now = Date()
                for round in 1...3 {
                    let page = try await store.devices(matching: .tokens([token]).inTopic("com.example.app"), after: nil, limit: 1)
                    #expect(page.devices.map(\.token) == [token], "round \(round)")
                    for result: DeliveryOutcome.Result in [
                        .accepted(apnsID: APNSID()), .rejected(status: 400, reason: .badDeviceToken, timestamp: nil),
                        .failed(message: "no answer"),
                    ] {
                        let send = NewSend(target: "one token", summary: "alert push", status: .completed, targetCount: 1)
                        let outcome = DeliveryOutcome(token: token, environment: .development, result: result, at: now)
                        let record = try await store.recordFinishedSend(send, outcomes: [outcome])
                        #expect(record.id == send.id && record.counts.total == 1)
                        let stored = try await store.outcomes(of: send.id, after: nil, limit: 10).outcomes
                        #expect(stored.map(\.result) == [result], "round \(round)")
                    }
                }
            }
        }
    }
}
