import Foundation
import HeraldCore
import HeraldTesting
import Testing

@Suite("herald doctor as a process", .timeLimit(.minutes(2)))
struct DoctorProcessTests {
    let temporary: TemporaryDirectory
    let key = TestSigningKeys.makePEM()

    init() throws {
        temporary = try TemporaryDirectory(prefix: "herald-doctor-cli")
        try key.pem.write(to: temporary.appending("AuthKey_ABC123DEFG.p8"), atomically: true, encoding: .utf8)
    }

    /// Runs `herald doctor --json` with only the configuration file: no HERALD_* variable of the test's environment.
    func doctor(_ configuration: String, _ arguments: [String] = []) async throws -> (ProcessRunner.Result, JSONValue) {
        let file = temporary.appending("herald-\(UUID()).json")
        try configuration.write(to: file, atomically: true, encoding: .utf8)
        let herald = ProcessRunner.productsDirectory.appendingPathComponent("herald").path
        let result = try await ProcessRunner.run(
            "/usr/bin/env", ["-i", "PATH=/usr/bin:/bin", herald, "doctor", "--json", "--config", file.path] + arguments)
        let json = try JSONValue(parsing: Data(result.standardOutput.utf8))
        return (result, json)
    }

    func statuses(_ json: JSONValue) -> [String: String] {
        var statuses: [String: String] = [:]
        for check in json["checks"]?.arrayValue ?? [] {
            if let name = check["name"]?.stringValue { statuses[name] = check["status"]?.stringValue }
        }
        return statuses
    }

    @Test("a good configuration exits 0 with every check in the JSON and nothing failed")
    func good() async throws {
        let (result, json) = try await doctor(
            """
            {"listen": "127.0.0.1:0", "databaseURL": "sqlite://\(temporary.path)/herald.sqlite",
             "apns": "custom", "apnsHost": "127.0.0.1",
             "apps": [{"topic": "com.example.app", "teamId": "DEF123GHIJ", "keyFile": "\(temporary.path)/AuthKey_ABC123DEFG.p8"}]}
            """)
        #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
        #expect(json["ok"] == true)
        #expect(
            json["checks"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
                == ["configuration", "credentials com.example.app", "trust store", "database", "clock", "listen"])
        #expect(
            statuses(json) == [
                "configuration": "ok", "credentials com.example.app": "ok", "trust store": "skipped",
                "database": "warning", "clock": "skipped", "listen": "ok",
            ])
        #expect(!result.standardOutput.contains("PRIVATE KEY") && !result.standardOutput.contains("eyJ"))
        #expect(!FileManager.default.fileExists(atPath: temporary.appending("herald.sqlite").path), "doctor creates nothing")
    }

    @Test("a bad configuration exits 1 and names what failed; an unreadable one too")
    func bad() async throws {
        let (result, json) = try await doctor(
            """
            {"listen": "127.0.0.1:0", "databaseURL": "sqlite:///proc/herald-doctor/herald.sqlite", "apns": "apple",
             "apps": [{"topic": "com.example.app", "teamId": "ABC123DEFG", "keyFile": "\(temporary.path)/AuthKey_ABC123DEFG.p8"}]}
            """)
        #expect(result.status == 1, "\(result.standardOutput)\(result.standardError)")
        #expect(json["ok"] == false)
        let found = statuses(json)
        #expect(found["credentials com.example.app"] == "failure" && found["database"] == "failure")
        #expect(!result.standardOutput.contains("PRIVATE KEY") && !result.standardOutput.contains("eyJ"))

        let (unreadable, unreadableJSON) = try await doctor(#"{"listen": "nowhere"}"#)
        #expect(unreadable.status == 1)
        #expect(statuses(unreadableJSON)["configuration"] == "failure")
        #expect(unreadableJSON["checks"]?.arrayValue?.first?["message"]?.stringValue?.contains("\"nowhere\"") == true)
    }

    @Test("without --json: one line per check with its mark, then the summary")
    func human() async throws {
        let file = temporary.appending("human.json")
        try #"{"listen": "127.0.0.1:0", "databaseURL": "sqlite::memory:"}"#.write(to: file, atomically: true, encoding: .utf8)
        let herald = ProcessRunner.productsDirectory.appendingPathComponent("herald").path
        let result = try await ProcessRunner.run(
            "/usr/bin/env", ["-i", "PATH=/usr/bin:/bin", herald, "doctor", "--config", file.path])
        #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n")
        #expect(lines.first?.hasPrefix("✓ configuration: ") == true)
        #expect(lines.contains { $0.hasPrefix("! database: ") })
        #expect(lines.contains { $0.hasPrefix("- trust store: ") })
        #expect(lines.last?.hasSuffix("skipped") == true)
    }
}
