import ArgumentParser
import Foundation
@testable import HeraldCLI
import HeraldCore
import HeraldEmulator
import Testing

/// `herald webpush send` against the emulator's push service, over loopback TLS.
@Suite("herald webpush send", .timeLimit(.minutes(2)))
struct WebPushCommandTests {
    @Test("a subscription made in bulk at the emulator gets the message --repeat times, decrypted and declarative; a wrong key is refused before sending")
    func sends() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-webpush-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca.pem")
        let configuration = EmulatorConfiguration(adminPort: nil, tls: .generated(caFile: ca)).servingWebPush()
        try await APNSEmulator.withRunning(configuration) { emulator in
            let key = VAPIDKey.generate()
            let made = try emulator.webPush.subscribe(applicationServerKey: key.publicKeyText, count: 3)
            #expect(Set(made.map(\.endpoint)).count == 3 && Set(made.map(\.p256dh)).count == 1, "one key pair, three endpoints")
            // Base64url values are given with `=`: one that starts with "-" would otherwise read as an option.
            let arguments = [
                "webpush", "send", "--endpoint", made[1].endpoint, "--p256dh=\(made[1].p256dh)", "--auth=\(made[1].auth)",
                "--vapid-key=\(key.privateKeyText)", "--subject", "mailto:push@example.com", "--title", "Hello",
                "--body", "From the CLI", "--navigate", "https://example.com/", "--badge", "2", "--ca-file", ca.path,
                "--repeat", "25", "--concurrency", "10", "--summary-json",
            ]
            var dashed = arguments
            dashed[dashed.firstIndex { $0.hasPrefix("--auth=") }!] = "--auth=-BZ1kGfGzbXcdBwBIjn3lw"
            #expect(
                (try Herald.parseAsRoot(dashed) as? WebPushCommand.Send)?.auth == "-BZ1kGfGzbXcdBwBIjn3lw",
                "a key that begins with - (one in 64 does) is read as the value")
            var command = try #require(try Herald.parseAsRoot(arguments) as? WebPushCommand.Send)
            try await command.run()
            let messages = try emulator.webPush.messages(made[1].id)
            #expect(messages.count == 25)
            let json = try JSONValue(parsing: try #require(messages.first).payload)
            #expect(json["notification"]?["title"] == "Hello" && json["notification"]?["body"] == "From the CLI")
            #expect(json["app_badge"] == 2 && json["web_push"] == 8030)
            #expect(try emulator.webPush.messages(made[0].id).isEmpty)

            var wrong = arguments
            wrong[wrong.firstIndex(of: "--subject")! + 1] = "admin@localhost"
            command = try #require(try Herald.parseAsRoot(wrong) as? WebPushCommand.Send)
            await #expect(throws: ValidationError.self) { try await command.run() }
            #expect(try emulator.webPush.messages(made[1].id).count == 25, "nothing sent")
        }
    }
}
