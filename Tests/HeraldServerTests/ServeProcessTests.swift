import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// `herald serve` as its own process, driven by curl: the book's exact request, then a send that lands in the
/// in-process emulator's inbox.
@Suite("Server: herald serve process", .timeLimit(.minutes(2)))
struct ServeProcessTests {
    let temporary: TemporaryDirectory
    var directory: URL { temporary.url }

    init() throws {
        temporary = try TemporaryDirectory(prefix: "herald-serve")
    }

    /// Runs curl; returns the status code and the body.
    func curl(_ arguments: [String]) async throws -> (status: Int, body: String) {
        let result = try await ProcessRunner.run("curl", ["-s", "-w", "\n%{http_code}"] + arguments)
        var lines = result.standardOutput.split(separator: "\n", omittingEmptySubsequences: false)
        let status = Int(lines.popLast() ?? "") ?? 0
        return (status, lines.joined(separator: "\n"))
    }

    @Test(
        "SIGTERM ends herald serve while a client holds a half-sent body; the SQLite database is closed (no -wal, -shm)"
    )
    func sigtermWithHalfSentBody() async throws {
        let path = directory.appendingPathComponent("herald.sqlite").path
        let server = try await ServeProcess.start(
            in: directory,
            environment: [
                "HERALD_DATABASE_URL": "sqlite://" + path, "HERALD_EMULATOR_ADMIN_PORT": "off",
                "HERALD_SHUTDOWN_GRACE": "1", "HERALD_REQUEST_TIMEOUT": "3600", "HERALD_IDLE_TIMEOUT": "3600",
            ])
        defer { server.process.signal(SIGKILL) }
        let client = try await RawHTTPConnection.connect(port: server.port)
        try await client.write(
            "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"
                + "POST /api/token HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"token\": ")
        _ = await client.read(until: #""status":"ok"}"#)
        let log = await server.terminate()
        _ = await client.readUntilClosed()
        #expect(await server.process.exit() == .exited(0), "\(log)")
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "\(log)")
        #expect(!FileManager.default.fileExists(atPath: path + "-shm"), "\(log)")
    }

    @Test("the book's request with curl registers a development token; a send to it lands in the emulator's inbox")
    func booksRequestWithCurl() async throws {
        let binary = ProcessRunner.productsDirectory.appendingPathComponent("herald")
        let database = "sqlite://" + directory.appendingPathComponent("herald.sqlite").path
        let server = try await ServeProcess.start(
            in: directory, environment: ["HERALD_DATABASE_URL": database, "HERALD_EMULATOR_ADMIN_PORT": "0"])
        let process = server.process
        defer { process.signal(SIGKILL) }
        var text = server.startLog
        let lines = text.split(separator: "\n").map(String.init)
        // The first line says that pushes go to the in-process emulator, and where.
        #expect(lines[0].contains("APNs emulator in this process") && lines[0].contains("not to Apple"), "\(lines[0])")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("herald-emulator-ca.pem").path))
        let admin = try #require(
            lines[0].components(separatedBy: "inboxes at http://127.0.0.1:").last?.prefix { $0.isNumber })
        let base = "http://127.0.0.1:\(server.port)"

        // The book's app: exactly this body.
        let token = "00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9"
        let registered = try await curl([
            "-X", "POST", "-H", "Content-Type: application/json", "-d", #"{"token": "\#(token)", "debug": true}"#,
            "\(base)/api/token",
        ])
        #expect(registered.status == 201, "\(registered.body)")
        #expect(registered.body.contains(#""environment":"development""#))

        let created = try await ProcessRunner.run(binary.path, ["keys", "create", "curl-test", "--database-url", database])
        let secret = try #require(
            created.standardOutput.components(separatedBy: "shown only now: ").last?.trimmingCharacters(
                in: .whitespacesAndNewlines))
        let sent = try await curl([
            "-X", "POST", "-H", "Authorization: Bearer \(secret)", "-d",
            #"{"target": {"token": "\#(token)"}, "alert": {"title": "From curl"}}"#,
            "\(base)/api/send",
        ])
        #expect(sent.status == 200 && sent.body.contains(#""status":"accepted""#), "\(sent.body)")

        let inbox = try await curl(["http://127.0.0.1:\(admin)/devices/\(token)/inbox"])
        #expect(inbox.status == 200 && inbox.body.contains(#""title":"From curl""#), "\(inbox.body)")
        let device = try await curl(["http://127.0.0.1:\(admin)/devices/\(token)"])
        #expect(device.body.contains(#""environment":"development""#), "the development host was used")

        let metrics = try await curl(["\(base)/metrics"])
        #expect(
            metrics.body.contains("herald_apns_sent_total 1")
                && metrics.body.contains(#"herald_registrations_total{result="created"} 1"#))

        text += await server.terminate()
        #expect(await process.exit() == .exited(0), "SIGTERM is a graceful shutdown")
        #expect(text.contains("Sent") && text.contains("curl-test"), "\(text)")
        #expect(!text.contains(token) && !text.contains(secret), "the log shows neither the token nor the key")
    }
}
