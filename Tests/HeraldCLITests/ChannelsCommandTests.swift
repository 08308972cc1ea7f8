import ArgumentParser
import Foundation
import HeraldAPNS
@testable import HeraldCLI
import HeraldCore
import HeraldTesting
import Testing

@Suite("herald channels and herald send --channel: flags")
struct ChannelsFlagTests {
    let temporary: TemporaryDirectory
    var directory: URL { temporary.url }

    init() throws { temporary = try TemporaryDirectory(prefix: "herald-channels-flags") }

    let credentials = ["--key", "AuthKey_ABC123DEFG.p8", "--team-id", "DEF123GHIJ"]

    @Test("each subcommand parses with the credential and host options of herald send")
    func parsing() throws {
        let keyFile = directory.appendingPathComponent("AuthKey_ABC123DEFG.p8")
        try TestSigningKeys.makePEM().0.write(to: keyFile, atomically: true, encoding: .utf8)
        let credentials = ["--key", keyFile.path, "--team-id", "DEF123GHIJ"]
        let create = try #require(try Herald.parseAsRoot(
            ["channels", "create", "--topic", "com.example.app", "--storage-policy", "1", "--host", "127.0.0.1", "--port", "7495"] + credentials)
            as? ChannelsCommand.Create)
        #expect(create.storagePolicy == 1 && create.common.connection.port == 7495)
        let configuration = try create.common.connection.configuration(for: .channelManagement)
        #expect(configuration.channelManagementDestination.port == 7495 && configuration.channelManagementDestination.host == "127.0.0.1")
        #expect(configuration.destination.host == "api.sandbox.push.apple.com", "device pushes keep Apple's host")
        let production = try #require(try Herald.parseAsRoot(["channels", "list", "--topic", "com.example.app", "--production"] + credentials) as? ChannelsCommand.List)
        let apple = try production.common.connection.configuration(for: .channelManagement).channelManagementDestination
        #expect(apple.host == "api-manage-broadcast.push.apple.com" && apple.port == 2196)
        let read = try #require(try Herald.parseAsRoot(["channels", "read", "dGVzdA==", "--topic", "com.example.app"] + credentials) as? ChannelsCommand.Read)
        #expect(read.target.channel == "dGVzdA==")
        _ = try Herald.parseAsRoot(["channels", "delete", "dGVzdA==", "--topic", "com.example.app"] + credentials)
    }

    @Test("mistakes are refused before anything is sent", arguments: [
        ["channels", "create", "--topic", "com.example.app", "--storage-policy", "2"],
        ["channels", "create", "--topic", "com.example.app"],
        ["channels", "list"],
        ["channels", "read", "--topic", "com.example.app"],
        ["channels", "delete", "dGVzdA==", "--topic", "com.example.app", "--sandbox", "--production"],
        ["channels", "read", "not a channel", "--topic", "com.example.app"],
        ["send", "--topic", "com.example.app", "--channel", "dGVzdA==", "--token", "abcd", "--event", "update"],
        ["send", "--topic", "com.example.app", "--channel", "has space", "--event", "update"],
    ])
    func refused(arguments: [String]) {
        #expect(throws: (any Error).self) { try Herald.parseAsRoot(arguments + credentials) }
        #expect(throws: (any Error).self) { try Herald.parseAsRoot(Array(arguments.prefix(2))) }
    }

    @Test("--event and --content-state make a Live Activity update, which prepares as a broadcast")
    func liveActivityFlags() throws {
        let command = try SendCommand.parse(["--topic", "com.example.app", "--channel", "dGVzdA==", "--event", "update",
                                             "--content-state", #"{"score":"2-1"}"#, "--priority", "5"] + credentials)
        let push = try command.notification.notification(now: Date(timeIntervalSince1970: 1_767_225_600))
        #expect(push.pushType == .liveactivity)
        let prepared = try BroadcastNotification(body: push.body, bundleID: "com.example.app", priority: push.priority).prepare()
        #expect(try JSONValue(parsing: prepared.body) == ["aps": ["event": "update", "timestamp": 1_767_225_600, "content-state": ["score": "2-1"]]])
        #expect(throws: (any Error).self) {
            try SendCommand.parse(["--topic", "t", "--event", "start", "--channel", "x"] + credentials).notification.notification()
        }
        #expect(throws: (any Error).self) {
            try SendCommand.parse(["--topic", "t", "--content-state", "{}", "--token", "ab"] + credentials).notification.notification()
        }
    }
}

@Suite("herald channels and herald send --channel against herald emulator, as separate processes", .timeLimit(.minutes(2)))
struct ChannelsProcessTests {
    let temporary: TemporaryDirectory
    var directory: URL { temporary.url }

    init() throws { temporary = try TemporaryDirectory(prefix: "herald-channels") }

    @Test("create → subscribe → broadcast → inbox → list, read → delete → broadcast refused; policy 0 explains BadExpirationDate")
    func endToEnd() async throws {
        let herald = ProcessRunner.productsDirectory.appendingPathComponent("herald")
        let token = String(repeating: "6a", count: 32)
        let emulator = try await HeraldEmulatorProcess(arguments: HeraldEmulatorProcess.freePorts + [
            "--ca-file", directory.appendingPathComponent("ca.pem").path, "--strict",
            "--device", "development:com.example.app.push-type.liveactivity:\(token)",
        ])
        defer { emulator.process.signal(SIGKILL) }
        let channelsPort = String(try #require(emulator.port("channels development")))
        let broadcastPort = String(try #require(emulator.port("broadcast development")))
        let admin = String(try #require(emulator.port("admin")))
        let common = ["--key", directory.appendingPathComponent("AuthKey_EMULATOR01.p8").path, "--team-id", "EMULATORTM",
                      "--topic", "com.example.app", "--host", "127.0.0.1", "--ca-file", directory.appendingPathComponent("ca.pem").path]
        func channels(_ arguments: [String]) async throws -> ProcessRunner.Result {
            try await ProcessRunner.run(herald.path, ["channels"] + arguments + common + ["--port", channelsPort])
        }
        func broadcast(_ arguments: [String]) async throws -> ProcessRunner.Result {
            try await ProcessRunner.run(herald.path, ["send"] + arguments + common + ["--port", broadcastPort])
        }

        let created = try await channels(["create", "--storage-policy", "0"])
        #expect(created.status == 0, "\(created.standardError)")
        let id = created.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Data(base64Encoded: id) != nil && created.standardError.contains("apns-request-id"))

        let subscribed = try await ProcessRunner.run("curl", ["-s", "-X", "POST", "-d", #"{"channel":"\#(id)"}"#, "http://127.0.0.1:\(admin)/devices/\(token)/subscribe"])
        #expect(subscribed.standardOutput.contains(id))
        let sent = try await broadcast(["--channel", id, "--event", "update", "--content-state", #"{"score":"1-0"}"#])
        #expect(sent.status == 0, "\(sent.standardError)")
        #expect(sent.standardOutput.contains("✓ broadcast on \(id) accepted, apns-request-id"))
        let inbox = try await JSONValue(parsing: ProcessRunner.run("curl", ["-s", "http://127.0.0.1:\(admin)/devices/\(token)/inbox"]).standardOutput)
        #expect(inbox.arrayValue?.first?["payload"]?["aps"]?["content-state"] == ["score": "1-0"])
        #expect(inbox.arrayValue?.first?["channelId"]?.stringValue == id)

        let expiring = try await broadcast(["--channel", id, "--event", "update", "--content-state", "{}", "--expiration", "1h"])
        #expect(expiring.status == 1 && expiring.standardError.contains("BadExpirationDate") && expiring.standardError.contains("policy 0"))

        let listed = try await channels(["list"])
        #expect(listed.status == 0 && listed.standardOutput == id + "\n")
        let read = try await channels(["read", id])
        #expect(read.status == 0 && read.standardOutput.contains("message-storage-policy 0"))
        let deleted = try await channels(["delete", id])
        #expect(deleted.status == 0 && deleted.standardOutput.contains("deleted"))
        let refused = try await broadcast(["--channel", id, "--event", "end", "--content-state", "{}"])
        #expect(refused.status == 1 && refused.standardError.contains("400 ChannelNotRegistered"))
        let missing = try await channels(["read", id])
        #expect(missing.status == 1 && missing.standardError.contains("ChannelNotRegistered"))
    }
}
