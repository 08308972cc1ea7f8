import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import HummingbirdTesting
import Testing

/// An inline send is recorded before it is answered (docs/server.md): what the caller was told is in the store, for
/// the API to show and for a restart to keep. PostgreSQL only, where a trigger can make the write slow (400 ms), so an
/// answer given before its record was committed would show.
@Suite("Server: inline sends are recorded before their answer", .timeLimit(.minutes(2)))
struct InlineRecordTests {
    /// Every insert into `sends` takes 400 ms more.
    static let slowSends = [
        "CREATE FUNCTION slow_send() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.4); RETURN NEW; END $$",
        "CREATE TRIGGER slow_send BEFORE INSERT ON sends FOR EACH ROW EXECUTE FUNCTION slow_send()",
    ]

    @Test(
        "GET /api/sends/{id} right after the answer shows the send as answered; sends answered just before the server stops are in the store after it",
        .enabled(if: Backend.available.contains(.postgres), "set HERALD_TEST_DATABASE_URL"))
    func answeredThenWritten() async throws {
        try await TestDatabase.with(.postgres) { url in
            try await check(databaseURL: url)
        }
    }

    private func check(databaseURL: String) async throws {
        let store = try PostgresStore(url: databaseURL)
        try await StoreConformance.withRunning(store) { _ in try await store.executeRaw(Self.slowSends) }
        let app = try await ServerHarness.build(databaseURL: databaseURL, clock: SystemWallClock(), logger: nil) { _ in }
        let token = testToken(0x71)
        let (first, lastOnes) = try await app.test(.router) { test in
            let client = ServerClient(client: test)
            let key = try await SendTests.key(app)
            try await client.register(token, debug: true)
            let body = #"{"target": {"token": "\#(token.hex)"}, "alert": "Hi"}"#
            let answer = try await client.call(.post, "/api/send", body: body, bearer: key)
            #expect(answer.status == .ok, "\(answer.json)")
            let id = try #require(answer.json["id"]?.stringValue)
            let read = try await client.call(.get, "/api/sends/\(id)", bearer: key)
            #expect(read.status == .ok, "the API reads its own writes")
            for member in ["id", "status", "createdAt", "updatedAt", "counts", "targetCount", "target", "summary"] {
                #expect(read.json[member] == answer.json[member], "\(member)")
            }
            #expect(read.json["outcomes"]?.arrayValue?.count == 1)
            // Answered, then the server stops at once: their records are still being written.
            var lastOnes: [String] = []
            for _ in 0..<3 {
                let answer = try await client.call(.post, "/api/send", body: body, bearer: key)
                lastOnes.append(try #require(answer.json["id"]?.stringValue))
            }
            return (id, lastOnes)
        }
        let reopened = try PostgresStore(url: databaseURL)
        try await StoreConformance.withRunning(reopened, migrate: false) { store in
            for id in [first] + lastOnes {
                let record = try await store.send(try #require(SendID(id)))
                #expect(record?.status == .completed && record?.counts.accepted == 1, "\(id)")
                #expect(try await store.outcomes(of: try #require(SendID(id)), after: nil, limit: 10).outcomes.count == 1)
            }
        }
    }
}
