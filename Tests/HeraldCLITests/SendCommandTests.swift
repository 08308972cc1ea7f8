import ArgumentParser
import Foundation
@testable import HeraldCLI
import HeraldCore
import HeraldTesting
import Testing

@Suite("herald send and simulator-file: flags")
struct SendFlagTests {
    let base = ["--key", "AuthKey_ABC123DEFG.p8", "--team-id", "DEF123GHIJ", "--token", String(repeating: "ab", count: 32)]

    func notification(_ arguments: [String]) throws -> PushNotification {
        try SendCommand.parse(base + arguments).notification.notification(now: Date(timeIntervalSince1970: 1_767_225_600))
    }

    @Test("typed flags build the aps dictionary and custom keys")
    func typed() throws {
        let push = try notification(["--topic", "com.example.app", "--title", "Hi", "--body", "There", "--badge", "3", "--sound", "default",
                                     "--custom", "orderID=A-1042", "--custom", #"coords={"lat":1.5}"#])
        guard case .payload(let payload) = push.body else { Issue.record("expected a typed payload"); return }
        #expect(payload.aps.alert == .content(AlertContent(title: "Hi", body: "There")))
        #expect(payload.aps.badge == 3 && payload.aps.sound == .named("default"))
        #expect(payload.custom == ["orderID": "A-1042", "coords": ["lat": 1.5]])
        #expect(push.pushType == .alert && push.topic == "com.example.app")
    }

    @Test("a silent push becomes push type background at priority 5; VoIP gets its topic suffix")
    func inference() throws {
        let silent = try notification(["--topic", "com.example.app", "--content-available"])
        #expect(silent.pushType == .background && silent.priority == .considerPower)
        _ = try silent.prepare()
        let voip = try notification(["--topic", "com.example.app", "--push-type", "voip", "--custom", "caller=Ann"])
        #expect(voip.topic == "com.example.app.voip")
    }

    @Test("expiration takes 0, a UNIX time or a duration, and refuses a 1970 date", arguments: [
        ("0", 0), ("1893456000", 1_893_456_000), ("1h", 1_767_229_200), ("30m", 1_767_227_400), ("2d", 1_767_398_400),
    ])
    func expiration(text: String, seconds: Int) throws {
        #expect(try notification(["--topic", "com.example.app", "--body", "x", "--expiration", text]).expiration?.secondsSince1970 == seconds)
    }

    @Test("mistakes are refused before anything is sent", arguments: [
        ["--topic", "com.example.app", "--body", "x", "--expiration", "300"],
        ["--topic", "com.example.app"],
        ["--topic", "com.example.app", "--body", "x", "--push-type", "banner"],
        ["--topic", "com.example.app", "--body", "x", "--priority", "7"],
        ["--topic", "com.example.app", "--body", "x", "--custom", "novalue"],
        ["--topic", "com.example.app", "--body", "x", "--apns-id", "123"],
    ])
    func refused(arguments: [String]) {
        #expect(throws: (any Error).self) { try notification(arguments) }
    }

    @Test("flag combinations are checked", arguments: [
        ["send", "--topic", "t", "--body", "x", "--key", "k.p8", "--team-id", "DEF123GHIJ"],
        ["send", "--topic", "t", "--body", "x", "--token", "ab", "--key", "k.p8"],
        ["send", "--topic", "t", "--body", "x", "--token", "ab"],
        ["send", "--topic", "t", "--body", "x", "--token", "ab", "--key", "k.p8", "--team-id", "DEF123GHIJ", "--sandbox", "--production"],
    ])
    func validation(arguments: [String]) {
        #expect(throws: (any Error).self) { try Herald.parseAsRoot(arguments) }
    }

    @Test("the .apns file carries the payload and Simulator Target Bundle")
    func simulatorFile() throws {
        let command = try SimulatorFileCommand.parse(["--topic", "com.example.app", "--title", "Hello", "--body", "From an .apns file", "--badge", "1", "--sound", "default", "--custom", "orderID=A-1042"])
        let prepared = try command.notification.notification().prepare()
        let file = try JSONValue(parsing: SimulatorFile.contents(of: prepared, bundleID: "com.example.app"))
        #expect(file == [
            "Simulator Target Bundle": "com.example.app",
            "aps": ["alert": ["title": "Hello", "body": "From an .apns file"], "badge": 1, "sound": "default"],
            "orderID": "A-1042",
        ])
    }
}

@Suite("herald send against herald emulator, as separate processes", .timeLimit(.minutes(2)))
struct SendProcessTests {
    let temporary: TemporaryDirectory
    var directory: URL { temporary.url }

    init() throws { temporary = try TemporaryDirectory(prefix: "herald-send") }

    @Test("a push is accepted and lands in the inbox; the wrong environment is explained; exit codes tell")
    func endToEnd() async throws {
        let herald = ProcessRunner.productsDirectory.appendingPathComponent("herald")
        let token = String(repeating: "4e", count: 32)
        let emulator = try await HeraldEmulatorProcess(arguments: HeraldEmulatorProcess.freePorts + [
            "--ca-file", directory.appendingPathComponent("ca.pem").path, "--strict", "--device", "development:com.example.app:\(token)",
        ])
        let development = String(try #require(emulator.port("development")))
        let production = String(try #require(emulator.port("production")))
        let admin = String(try #require(emulator.port("admin")))
        let common = ["send", "--key", directory.appendingPathComponent("AuthKey_EMULATOR01.p8").path, "--team-id", "EMULATORTM",
                      "--topic", "com.example.app", "--token", token, "--host", "127.0.0.1",
                      "--ca-file", directory.appendingPathComponent("ca.pem").path]

        let accepted = try await ProcessRunner.run(herald.path, common + ["--port", development, "--title", "Hello", "--body", "From herald send"])
        #expect(accepted.status == 0, "\(accepted.standardError)")
        #expect(accepted.standardOutput.contains("accepted, apns-id"))

        let wrongEnvironment = try await ProcessRunner.run(herald.path, common + ["--production", "--port", production, "--body", "x"])
        #expect(wrongEnvironment.status == 1)
        #expect(wrongEnvironment.standardError.contains("BadDeviceToken") && wrongEnvironment.standardError.contains("Try --sandbox"))

        let invalid = try await ProcessRunner.run(herald.path, common + ["--port", development, "--content-available", "--priority", "10"])
        #expect(invalid.status != 0 && invalid.standardError.contains("BadPriority"))

        let inbox = try await ProcessRunner.run("curl", ["-s", "http://127.0.0.1:\(admin)/devices/\(token)/inbox"])
        let entries = try JSONValue(parsing: inbox.standardOutput)
        #expect(entries.arrayValue?.count == 1)
        #expect(entries.arrayValue?.first?["payload"] == ["aps": ["alert": ["title": "Hello", "body": "From herald send"]]])
        await emulator.stop()
    }
}
