import ArgumentParser
import Foundation
import HeraldAPNS
import HeraldCore
import Synchronization

/// `herald send`: one push from a `.p8` key (or certificate) in one command.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a push notification to one or more device tokens.",
        discussion: """
            herald send --key AuthKey_ABC123DEFG.p8 --team-id DEF123GHIJ --topic com.example.app \\
                        --token <hex> --title "Hello" --body "From Herald"
            The key id comes from the AuthKey_<KEYID>.p8 file name unless --key-id is given. Tokens from an app run
            from Xcode are development (sandbox) tokens, the default; TestFlight and App Store builds need --production.
            Point it at `herald emulator` with --host 127.0.0.1 --port 7444 and --ca-file set to the CA file its first line names
            (by default ~/.local/state/herald/herald-emulator-ca.pem).
            """
    )

    @Option(name: .customLong("token"), help: "Device token in hex (repeatable).") var tokens: [String] = []
    @OptionGroup var notification: NotificationOptions

    @Option(help: "The .p8 signing key from your Apple developer account.") var key: String?
    @Option(help: "Key id (default: from the AuthKey_<KEYID>.p8 file name).") var keyID: String?
    @Option(help: "Your 10-character Team ID.") var teamID: String?
    @Option(help: "Client certificate instead of a key: a PEM file (certificate, and key unless --cert-key) or a .p12.")
    var cert: String?
    @Option(help: "Private key PEM for --cert.") var certKey: String?
    @Option(help: "Password of a .p12 --cert.") var certPassword: String?

    @Flag(help: "Send to the development (sandbox) APNs: tokens from builds run from Xcode. The default.") var sandbox = false
    @Flag(help: "Send to the production APNs: TestFlight, Ad Hoc and App Store builds.") var production = false
    @Option(help: "Another APNs host, such as herald emulator's 127.0.0.1.") var host: String?
    @Option(help: "Port of --host (default 443).") var port: Int?
    @Option(help: "Also trust the CA certificates in this PEM file (herald emulator writes one).") var caFile: String?
    @Option(help: "Seconds to wait for each answer.") var timeout: Int = 30

    @Option(help: "Send the notification this many times to each token (for load tests).") var `repeat`: Int = 1
    @Option(help: "Notifications in flight at once.") var concurrency: Int = 1000
    @Option(help: "Connections to open.") var connections: Int = 4
    @Flag(help: "Print only a JSON summary line: ok, failed, seconds, rate.") var summaryJSON = false

    func validate() throws {
        if tokens.isEmpty { throw ValidationError("Give at least one --token: the hex device token the app received.") }
        if sandbox && production { throw ValidationError("Choose one of --sandbox and --production.") }
        if key == nil && cert == nil { throw ValidationError("Give --key AuthKey_<KEYID>.p8 (with --team-id) or --cert.") }
        if key != nil && cert != nil { throw ValidationError("Give --key or --cert, not both.") }
        if key != nil && teamID == nil { throw ValidationError("--team-id is required with --key: the 10-character Team ID of your developer account.") }
        if `repeat` < 1 || concurrency < 1 || connections < 1 { throw ValidationError("--repeat, --concurrency and --connections must be at least 1.") }
    }

    func run() async throws {
        let environment: APNSEnvironment = production ? .production : .development
        let deviceTokens = try tokens.map { text -> DeviceToken in
            do { return try DeviceToken(hex: text) } catch { throw ValidationError("--token \(text.prefix(12))…: \(error)") }
        }
        let prepared: PreparedNotification
        do {
            prepared = try notification.notification().prepare()
        } catch let error as NotificationValidationError {
            throw ValidationError("The notification would be refused: \(error)")
        }
        let configuration = APNSClientConfiguration(
            destination: host.map { .custom(host: $0, port: port ?? 443, environment: environment) }
                ?? .custom(host: environment.host, port: port ?? APNSEnvironment.port, environment: environment),
            credentials: try credentials(), trust: try trust(), maximumConnections: connections,
            requestTimeout: .seconds(timeout))
        let items = RepeatedNotifications(notification: prepared, tokens: deviceTokens, repetitions: `repeat`)
        let results = Mutex((ok: 0, failed: 0))
        let started = ContinuousClock.now
        let quiet = summaryJSON || deviceTokens.count * `repeat` > 20
        do {
            try await APNSClient.withClient(configuration: configuration) { client in
                try await client.sendAll(items, maximumInFlight: concurrency) { delivery in
                    results.withLock { delivery.outcome.isAccepted ? ($0.ok += 1) : ($0.failed += 1) }
                    if !quiet || !delivery.outcome.isAccepted && !summaryJSON { report(delivery, environment: environment) }
                }
            }
        } catch let error as APNSClientError {
            throw ValidationError(error.description)
        }
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let (ok, failed) = results.withLock { ($0.ok, $0.failed) }
        if summaryJSON {
            Output.line(#"{"ok": \#(ok), "failed": \#(failed), "seconds": \#(seconds), "rate": \#(Double(ok) / max(seconds, 1e-9))}"#)
        } else if quiet {
            Output.line("\(ok) accepted, \(failed) not, in \(String(format: "%.2f", seconds)) s (\(Int(Double(ok) / max(seconds, 1e-9)))/s).")
        }
        if failed > 0 { throw ExitCode(1) }
    }

    private func report(_ delivery: APNSDelivery, environment: APNSEnvironment) {
        switch delivery.outcome {
        case .accepted(let apnsID, let uniqueID):
            Output.line("✓ \(delivery.token.redacted) accepted, apns-id \(apnsID)\(uniqueID.map { ", apns-unique-id \($0)" } ?? "")")
        case .rejected(let rejection):
            var advice = rejection.reason.explanation
            if rejection.reason == .badDeviceToken {
                advice = "APNs does not know this token in \(environment). Is it a \(environment.other) token? Try --\(environment.isDevelopment ? "production" : "sandbox")."
            }
            Output.error("✗ \(delivery.token.redacted) \(rejection.status) \(rejection.reason): \(advice)")
        case .failed(let error):
            Output.error("✗ \(delivery.token.redacted) no answer after \(delivery.attempts) attempt\(delivery.attempts == 1 ? "" : "s"): \(error)")
        }
    }

    private func credentials() throws -> APNSCredentials {
        if let key, let teamID {
            do {
                return .token(try ProviderSigningKey(contentsOf: URL(fileURLWithPath: key), keyID: keyID, teamID: teamID))
            } catch {
                throw ValidationError(error.description)
            }
        }
        guard let cert else { throw ValidationError("Give --key or --cert.") }
        guard let data = FileManager.default.contents(atPath: cert) else { throw ValidationError("Cannot read --cert \(cert).") }
        if cert.hasSuffix(".p12") || cert.hasSuffix(".pfx") {
            return .pkcs12(Array(data), passphrase: certPassword)
        }
        let pem = String(decoding: data, as: UTF8.self)
        let keyPEM: String
        if let certKey {
            guard let keyData = FileManager.default.contents(atPath: certKey) else { throw ValidationError("Cannot read --cert-key \(certKey).") }
            keyPEM = String(decoding: keyData, as: UTF8.self)
        } else if pem.contains("PRIVATE KEY") {
            keyPEM = pem
        } else {
            throw ValidationError("--cert \(cert) has no private key: add --cert-key, or export the certificate with its key.")
        }
        return .certificate(chainPEM: pem, privateKeyPEM: keyPEM)
    }

    private func trust() throws -> APNSClientConfiguration.Trust {
        guard let caFile else { return .system }
        do {
            return try .adding(caFile: URL(fileURLWithPath: caFile))
        } catch {
            throw ValidationError("\(error)")
        }
    }
}

/// Every token `repetitions` times, made on the fly: a million-notification load test holds no million-element array.
struct RepeatedNotifications: Sequence, Sendable {
    let notification: PreparedNotification
    let tokens: [DeviceToken]
    let repetitions: Int

    struct Iterator: IteratorProtocol {
        let base: RepeatedNotifications
        var index = 0

        mutating func next() -> (PreparedNotification, DeviceToken)? {
            guard index < base.tokens.count * base.repetitions else { return nil }
            defer { index += 1 }
            return (base.notification, base.tokens[index % base.tokens.count])
        }
    }

    func makeIterator() -> Iterator { Iterator(base: self) }
}
