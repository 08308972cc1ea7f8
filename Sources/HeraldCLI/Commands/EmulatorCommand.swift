import ArgumentParser
import Crypto
import Foundation
import HeraldCore
import HeraldEmulator
import Logging
import ServiceLifecycle
import UnixSignals

/// `herald emulator`: a local APNs for development and tests.
struct EmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulator",
        abstract: "Run a local APNs (HTTP/2 + TLS) with virtual devices, inboxes and injected faults.",
        discussion: """
            Without --key, a signing key is generated and written next to the CA file, so `herald send` can use it.
            The admin API (plain HTTP JSON) creates devices, reads inboxes and changes faults: see docs/emulator.md.
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port standing in for api.push.apple.com (0 picks a free one).") var productionPort = 7443
    @Option(help: "Port standing in for api.sandbox.push.apple.com (0 picks a free one).") var developmentPort = 7444
    @Option(help: "Port standing in for api-broadcast.push.apple.com, broadcasts to channels (0 picks a free one).")
    var broadcastProductionPort = 7445
    @Option(help: "Port standing in for api-broadcast.sandbox.push.apple.com (0 picks a free one).") var broadcastDevelopmentPort = 7446
    @Option(help: "Port standing in for api-manage-broadcast.push.apple.com:2196, channel management (0 picks a free one).")
    var channelsProductionPort = 7496
    @Option(help: "Port standing in for api-manage-broadcast.sandbox.push.apple.com:2195 (0 picks a free one).")
    var channelsDevelopmentPort = 7495
    @Option(help: "Port of the admin API (0 picks a free one).") var adminPort = 7480
    @Option(help: "Port of the Web Push service, POST /push/<subscription> (0 picks a free one).") var webPushPort = 7447
    @Flag(help: "Turn the Web Push service off.") var noWebPush = false
    @Flag(help: "Turn the admin API off.") var noAdmin = false

    @Option(name: .customLong("key"), help: "A trusted .p8 key, or its public key PEM (repeatable). Key id from AuthKey_<KEYID>.p8 unless --key-id.")
    var keys: [String] = []
    @Option(help: "Key id for a single --key whose file name does not carry it.") var keyID: String?
    @Option(help: "Team id of the trusted keys (required with --key).") var teamID: String?
    @Option(name: .customLong("topic"), help: "Restrict the keys to these bundle ids (repeatable); default: any.")
    var topics: [String] = []
    @Option(help: "Restrict the keys to one environment: development or production.") var keyEnvironment: String?
    @Option(help: "PEM CA whose client certificates authenticate connections (certificate auth).") var clientCA: String?

    @Flag(help: "Accept only devices created through the admin API (default: any well-formed token on first use).")
    var strict = false
    @Option(name: .customLong("device"), help: "Create a device: ENVIRONMENT:TOPIC[:HEXTOKEN] (repeatable).")
    var devices: [String] = []

    @Option(help: "Where to write the generated CA certificate for clients to trust (default: $XDG_STATE_HOME/herald/herald-emulator-ca.pem, else ~/.local/state/herald/…, else the temporary folder).")
    var caFile: String?
    @Option(help: "Serve this PEM certificate chain instead of a generated one.") var tlsCertificate: String?
    @Option(help: "Private key (PEM) of --tls-certificate.") var tlsKey: String?

    @Option(help: "Channels one app may have per environment (CannotCreateChannelConfig beyond).") var channelLimit = 10_000
    @Option(name: .customLong("broadcast-topic"), help: "Bundle ids with the Broadcast capability (repeatable); others get FeatureNotEnabled. Default: every app.")
    var broadcastTopics: [String] = []
    @Option(help: "Priority-10 Live Activity updates a device takes per activity and hour; more are accepted but dropped and counted. Default: no budget.")
    var liveActivityBudget: Int?

    @Option(help: "MAX_CONCURRENT_STREAMS after the first authenticated request.") var maxConcurrentStreams = 1000
    @Option(help: "Notifications kept per device inbox.") var inboxCapacity = 100
    @Flag(help: "Keep only counters (totals, reasons, duplicate apns-ids), no inboxes: for benchmarks.") var countingOnly = false

    // The documented spellings are --fault-429 etc.; --fault429 (the first release's) still works.
    @Option(name: [.customLong("fault-429"), .customLong("fault429")], help: "Fraction of valid requests answered 429 TooManyRequests.")
    var fault429: Double = 0
    @Option(name: [.customLong("fault-500"), .customLong("fault500")], help: "Fraction answered 500 InternalServerError.")
    var fault500: Double = 0
    @Option(name: [.customLong("fault-503"), .customLong("fault503")], help: "Fraction answered 503 ServiceUnavailable.")
    var fault503: Double = 0
    @Option(help: "Fraction answered 503 Shutdown.") var faultShutdown: Double = 0
    @Option(help: "Send GOAWAY after this many streams on a connection.") var goawayAfter: Int?
    @Option(help: "Fraction of requests followed by a GOAWAY.") var goawayRate: Double = 0
    @Option(help: "Close a connection without GOAWAY after this many streams: the last is processed but never answered.")
    var closeAfter: Int?
    @Option(help: "Fraction of requests whose connection is reset.") var resetRate: Double = 0
    @Option(help: "Fraction of requests never answered.") var noResponseRate: Double = 0
    @Option(help: "Fraction of requests refused with RST_STREAM REFUSED_STREAM, unprocessed (1 refuses every stream).")
    var refuseRate: Double = 0
    @Option(help: "Added latency per response: 100ms, 50ms-150ms, or normal:100ms,20ms.") var latency: String?
    @Option(help: "Seed for faults, latency and generated tokens.") var seed: UInt64 = 0x4845_5241_4C44

    /// Where the generated CA (and the generated key beside it) go without `--ca-file`: a state folder of the user's,
    /// never the working folder, which may be a repository.
    static func defaultCAFile(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let directory: String
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            directory = state + "/herald"
        } else if let home = environment["HOME"], !home.isEmpty {
            directory = home + "/.local/state/herald"
        } else {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald").path
        }
        return directory + "/herald-emulator-ca.pem"
    }

    /// The CA file to use, its folder created when it is the default one and something will be written there.
    private func resolvedCAFile() throws -> String {
        if let caFile { return caFile }
        let file = Self.defaultCAFile()
        guard tlsCertificate == nil || keys.isEmpty else { return file }
        do {
            try FileManager.default.createDirectory(at: URL(fileURLWithPath: file).deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            throw ValidationError("Cannot create the folder of \(file) (\(error)); pass --ca-file to choose another place.")
        }
        return file
    }

    func run() async throws {
        let caFile = try resolvedCAFile()
        var trusted = try trustedKeys()
        var generatedKeyNote = ""
        if trusted.isEmpty {
            let (key, file) = try generateKey(caFile: caFile)
            trusted = [ProviderTokenVerifier.TrustedKey(key, bundleIDs: topics.isEmpty ? nil : Set(topics))]
            generatedKeyNote = " from \(file)"
        }
        let tls: EmulatorConfiguration.TLS
        if let tlsCertificate, let tlsKey {
            tls = .files(certificateChain: URL(fileURLWithPath: tlsCertificate), privateKey: URL(fileURLWithPath: tlsKey))
        } else if tlsCertificate != nil || tlsKey != nil {
            throw ValidationError("--tls-certificate and --tls-key go together.")
        } else {
            tls = .generated(caFile: URL(fileURLWithPath: caFile))
        }
        let faults = FaultConfiguration(
            tooManyRequests: fault429, internalServerError: fault500, serviceUnavailable: fault503, shutdown: faultShutdown,
            goAwayAfterStreams: goawayAfter, goAwayProbability: goawayRate, resetProbability: resetRate,
            noResponseProbability: noResponseRate, refusedStreamProbability: refuseRate, latency: try Self.parseLatency(latency),
            closeAfterStreams: closeAfter)
        let configuration = EmulatorConfiguration(
            host: host, productionPort: productionPort, developmentPort: developmentPort, adminPort: noAdmin ? nil : adminPort,
            tls: tls, trustedKeys: trusted, clientCertificateAuthorityPEM: try clientCA.map { try String(contentsOfFile: $0, encoding: .utf8) },
            deviceMode: strict ? .strict : .permissive, maxConcurrentStreams: maxConcurrentStreams,
            inbox: countingOnly ? .countingOnly : .recording(capacity: inboxCapacity), faults: faults, seed: seed,
            broadcastProductionPort: broadcastProductionPort, broadcastDevelopmentPort: broadcastDevelopmentPort,
            channelManagementProductionPort: channelsProductionPort, channelManagementDevelopmentPort: channelsDevelopmentPort,
            channels: .init(limitPerApp: channelLimit, enabledBundleIDs: broadcastTopics.isEmpty ? nil : Set(broadcastTopics)),
            liveActivityBudget: liveActivityBudget, logger: Self.logger)
        var withWebPush = configuration
        withWebPush.webPushPort = noWebPush ? nil : webPushPort
        let emulator: APNSEmulator
        do {
            emulator = try APNSEmulator(configuration: withWebPush)
        } catch {
            throw ValidationError(error.description)
        }
        try await emulator.start()

        let production = emulator.port(for: .production).map { "https://\(host):\($0)" } ?? "-"
        let development = emulator.port(for: .development).map { "https://\(host):\($0)" } ?? "-"
        let admin = emulator.adminPort.map { ", admin http://\(host):\($0)" } ?? ""
        var channels = ""
        for service in [EmulatorService.broadcast, .channelManagement] {
            for environment in [APNSEnvironment.production, .development] {
                let name = (service == .broadcast ? "broadcast " : "channels ") + environment.name
                if let port = emulator.port(for: environment, service: service) { channels += ", \(name) https://\(host):\(port)" }
            }
        }
        if let port = emulator.port(for: .production, service: .webPush) { channels += ", web push https://\(host):\(port)" }
        let keyList = trusted.map { "\($0.keyID) (team \($0.teamID))" }.joined(separator: ", ")
        let trust = tlsCertificate == nil ? " — trust \(caFile)" : ""
        Output.line("APNs emulator: production \(production), development \(development)\(admin)\(channels)\(trust) — keys: \(keyList)\(generatedKeyNote) — \(strict ? "strict" : "permissive") devices\(countingOnly ? ", counting only" : "")")
        for spec in devices { try createDevice(spec, on: emulator) }

        let logger = Self.logger
        let group = ServiceGroup(configuration: .init(services: [.init(service: RunningEmulator(emulator: emulator))], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    private static var logger: Logger {
        var logger = Logger(label: "herald.emulator")
        logger.logLevel = .notice
        return logger
    }

    private func trustedKeys() throws -> [ProviderTokenVerifier.TrustedKey] {
        guard !keys.isEmpty else { return [] }
        guard let teamID else { throw ValidationError("--team-id is required with --key: the 10-character Team ID the keys belong to.") }
        if keyID != nil, keys.count > 1 { throw ValidationError("--key-id names one key; use AuthKey_<KEYID>.p8 file names for several.") }
        let environment = try keyEnvironment.map { name -> APNSEnvironment in
            guard let environment = APNSEnvironment(name: name) else { throw ValidationError("--key-environment is development or production.") }
            return environment
        }
        return try keys.map { path in
            let url = URL(fileURLWithPath: path)
            guard let id = keyID ?? ProviderSigningKey.keyID(fromFileName: url.lastPathComponent) else {
                throw ValidationError("Cannot tell the key id of \(path): name it AuthKey_<KEYID>.p8 or pass --key-id.")
            }
            let text: String
            do { text = try String(contentsOf: url, encoding: .utf8) } catch { throw ValidationError("Cannot read \(path).") }
            let bundleIDs = topics.isEmpty ? nil : Set(topics)
            if text.contains("PRIVATE KEY") {
                do {
                    return .init(try ProviderSigningKey(pem: text, keyID: id, teamID: teamID), environment: environment, bundleIDs: bundleIDs)
                } catch { throw ValidationError("\(path): \(error)") }
            }
            do {
                return .init(keyID: id, teamID: teamID, publicKey: try .init(pemRepresentation: text), environment: environment, bundleIDs: bundleIDs)
            } catch { throw ValidationError("\(path) is neither a .p8 private key nor a P-256 public key in PEM.") }
        }
    }

    /// The emulator's own key, kept beside the CA file and reused on the next start so clients keep working.
    private func generateKey(caFile: String) throws -> (ProviderSigningKey, String) {
        let keyID = "EMULATOR01"
        let directory = URL(fileURLWithPath: caFile).deletingLastPathComponent()
        let file = directory.appendingPathComponent("AuthKey_\(keyID).p8")
        let pem: String
        if let existing = try? String(contentsOf: file, encoding: .utf8) {
            pem = existing
        } else {
            pem = P256.Signing.PrivateKey().pemRepresentation
            try pem.write(to: file, atomically: true, encoding: .utf8)
        }
        do {
            return (try ProviderSigningKey(pem: pem, keyID: keyID, teamID: teamID ?? "EMULATORTM"), file.path)
        } catch {
            throw ValidationError("\(file.path) is not a usable key (\(error)): delete it to get a new one.")
        }
    }

    private func createDevice(_ spec: String, on emulator: APNSEmulator) throws {
        let parts = spec.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 || parts.count == 3, let environment = APNSEnvironment(name: parts[0]) else {
            throw ValidationError("--device \(spec): use ENVIRONMENT:TOPIC[:HEXTOKEN], e.g. development:com.example.app")
        }
        do {
            let token = try parts.count == 3 ? DeviceToken(hex: parts[2]) : nil
            let device = try emulator.createDevice(token: token, environment: environment, topic: parts[1])
            Output.line("device \(device.environment) \(device.topic) \(device.token.hex)")
        } catch {
            throw ValidationError("--device \(spec): \(error)")
        }
    }

    static func parseLatency(_ text: String?) throws -> FaultConfiguration.Latency {
        guard let text, !text.isEmpty, text != "0" else { return .none }
        func milliseconds(_ value: Substring) throws -> Double {
            var number = value.trimmingCharacters(in: .whitespaces)
            var scale = 1.0
            if number.hasSuffix("ms") { number.removeLast(2) } else if number.hasSuffix("s") { number.removeLast(); scale = 1000 }
            guard let parsed = Double(number), parsed >= 0 else {
                throw ValidationError("--latency \(text): use 100ms, 50ms-150ms or normal:100ms,20ms.")
            }
            return parsed * scale
        }
        if text.hasPrefix("normal:") {
            let parts = text.dropFirst("normal:".count).split(separator: ",")
            guard parts.count == 2 else { throw ValidationError("--latency normal:MEAN,DEVIATION, e.g. normal:100ms,20ms.") }
            return .normal(meanMilliseconds: try milliseconds(parts[0]), standardDeviationMilliseconds: try milliseconds(parts[1]))
        }
        let range = text.split(separator: "-")
        if range.count == 2 {
            return .uniform(minimumMilliseconds: try milliseconds(range[0]), maximumMilliseconds: try milliseconds(range[1]))
        }
        return .fixed(milliseconds: try milliseconds(text[...]))
    }
}

/// Keeps a started emulator running until the service group shuts down.
private struct RunningEmulator: Service {
    let emulator: APNSEmulator
    func run() async throws {
        try? await gracefulShutdown()
        await emulator.shutdown()
    }
}
