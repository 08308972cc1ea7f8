import ArgumentParser
import Foundation
import HeraldAPNS
import HeraldCore
import Synchronization

/// `herald send`: one push from a `.p8` key (or certificate) in one command.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a push notification to one or more device tokens, or a Live Activity update to a broadcast channel.",
        discussion: """
            herald send --key AuthKey_ABC123DEFG.p8 --team-id DEF123GHIJ --topic com.example.app \\
                        --token <hex> --title "Hello" --body "From Herald"
            The key id comes from the AuthKey_<KEYID>.p8 file name unless --key-id is given. Tokens from an app run
            from Xcode are development (sandbox) tokens, the default; TestFlight and App Store builds need --production.
            Point it at `herald emulator` with --host 127.0.0.1 --port 7444 and --ca-file set to the CA file its first line names
            (by default ~/.local/state/herald/herald-emulator-ca.pem).

            With --channel ID instead of --token, the notification is a broadcast (iOS 18+): one Live Activity update
            for every device subscribed to the channel, sent to Apple's broadcast host (--host/--port name another, such
            as herald emulator's broadcast port, 7446 for development). --topic is then the bare bundle id; give the
            update with --event update --content-state '{"score":"2-1"}' (the timestamp is now) or a --payload file.
            Channels come from `herald channels create`.
            """
    )

    @Option(name: .customLong("token"), help: "Device token in hex (repeatable).") var tokens: [String] = []
    @OptionGroup var notification: NotificationOptions

    @Option(help: "A broadcast channel id (from herald channels create): send a Live Activity update to its subscribers instead of to tokens.")
    var channel: String?
    @OptionGroup var connection: APNSConnectionOptions

    @Option(help: "Send the notification this many times to each token (for load tests).") var `repeat`: Int = 1
    @Option(help: "Notifications in flight at once.") var concurrency: Int = 1000
    @Option(help: "Connections to open.") var connections: Int = 4
    @Option(help: "Seconds a notification APNs asked to retry (429, 5xx) or never answered is retried before it fails; the server's HERALD_RETRY_WINDOW defaults to 600.")
    var retryWindow: Int = 60
    @Flag(help: "Print only a JSON summary line: ok, failed, seconds, rate.") var summaryJSON = false

    func validate() throws {
        if tokens.isEmpty && channel == nil {
            throw ValidationError("Give at least one --token (the hex device token the app received), or --channel ID for a broadcast.")
        }
        if !tokens.isEmpty && channel != nil { throw ValidationError("Give --token or --channel, not both: a broadcast goes to the channel's subscribers.") }
        if let channel, APNSChannelID(channel) == nil {
            throw ValidationError("--channel \(channel) is not a channel id: use the base64 id herald channels create printed.")
        }
        if `repeat` < 1 || concurrency < 1 || connections < 1 { throw ValidationError("--repeat, --concurrency and --connections must be at least 1.") }
        if retryWindow < 0 { throw ValidationError("--retry-window is in seconds: 0 or more (0 sends each notification once).") }
    }

    func run() async throws {
        if let channel, let id = APNSChannelID(channel) { return try await broadcast(to: id) }
        let environment = connection.environment
        let deviceTokens = try tokens.map { text -> DeviceToken in
            do { return try DeviceToken(hex: text) } catch { throw ValidationError("--token \(text.prefix(12))…: \(error)") }
        }
        let prepared: PreparedNotification
        do {
            prepared = try notification.notification().prepare()
        } catch let error as NotificationValidationError {
            throw ValidationError("The notification would be refused: \(error)")
        }
        var configuration = try connection.configuration(for: .devicePush, connections: connections)
        configuration.retry.retryWindow = .seconds(retryWindow)
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
        let (ok, failed) = results.withLock { ($0.ok, $0.failed) }
        try Output.loadSummary(ok: ok, failed: failed, since: started, json: summaryJSON, quiet: quiet)
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
            Output.error("✗ \(delivery.token.redacted) failed after \(delivery.attempts) attempt\(delivery.attempts == 1 ? "" : "s"): \(error)")
        }
    }

    /// `--channel`: one broadcast to the channel's subscribers.
    private func broadcast(to channel: APNSChannelID) async throws {
        let push = try notification.notification()
        let broadcast = BroadcastNotification(
            body: push.body, bundleID: notification.topic, priority: push.priority, expiration: push.expiration, requestID: push.apnsID)
        let prepared: PreparedBroadcast
        do {
            prepared = try broadcast.prepare()
        } catch {
            throw ValidationError("The broadcast would be refused: \(error)")
        }
        try await ChannelsCommand.withClient(connection, for: .broadcast) { client in
            let reply = try await client.broadcast(prepared, to: channel)
            Output.line("✓ broadcast on \(channel) accepted, apns-request-id \(reply.requestID)")
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
