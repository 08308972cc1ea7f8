import ArgumentParser
import Foundation
import HeraldAPNS
import HeraldCore
import Synchronization

/// `herald webpush send`: one Web Push message to one subscription, without a server (docs/web-push.md).
struct WebPushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webpush",
        abstract: "Web Push without a server.",
        subcommands: [Send.self]
    )

    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "send",
            abstract: "Send a notification to one browser subscription (endpoint and keys), as Declarative Web Push.",
            discussion: """
                herald webpush send --endpoint https://web.push.apple.com/QGuQ… --p256dh BCVx… --auth BTBZ… \\
                                    --vapid-key <private key> --subject mailto:push@example.com \\
                                    --title "Hello" --body "From Herald" --navigate https://example.com/
                The subscription is the browser's PushSubscription.toJSON(); the VAPID key is the private half of the
                key pair whose public half the page subscribed with (herald vapid generate). Against herald emulator,
                make a subscription with POST /subscriptions on its admin port and add --ca-file with its CA.
                With --repeat the same message is encrypted and sent again and again: the bare sender's speed.
                """
        )

        @Option(help: "The subscription's endpoint (an https URL of its push service).") var endpoint: String
        @Option(help: "The subscription's keys.p256dh (base64url).") var p256dh: String
        @Option(help: "The subscription's keys.auth (base64url).") var auth: String
        @Option(help: "The VAPID private key (base64url, from herald vapid generate); else --vapid-key-file or HERALD_VAPID_PRIVATE_KEY.")
        var vapidKey: String?
        @Option(help: "A file holding the VAPID private key (base64url or PEM).") var vapidKeyFile: String?
        @Option(help: "The VAPID subject: a mailto: or https: URL the push service can reach you at.") var subject: String
        @Option(help: "The notification's title.") var title: String
        @Option(help: "The notification's body.") var body: String?
        @Option(help: "The https page a click opens.") var navigate: String
        @Option(help: "The app badge to set.") var badge: Int?
        @Option(help: "Also trust the CA certificates in this PEM file (herald emulator writes one).") var caFile: String?

        @Option(help: "Send the message this many times (for load tests).") var `repeat`: Int = 1
        @Option(help: "Messages in flight at once.") var concurrency: Int = 1000
        @Option(help: "Connections to open to the push service.") var connections: Int = 4
        @Flag(help: "Print only a JSON summary line: ok, failed, seconds, rate.") var summaryJSON = false

        func validate() throws {
            if `repeat` < 1 || concurrency < 1 || connections < 1 {
                throw ValidationError("--repeat, --concurrency and --connections must be at least 1.")
            }
        }

        func run() async throws {
            let key = try vapidPrivateKey()
            let endpointURL = URL(string: endpoint)
            guard let host = endpointURL?.host else {
                throw ValidationError("--endpoint \(endpoint.prefix(40)) is not a URL: give the subscription's endpoint.")
            }
            // The command line names its push service itself: its host is the one allowed.
            let hosts = PushServiceHosts([endpointURL?.port.map { "\(host):\($0)" } ?? host])
            let subscription: WebPushSubscription
            let message: WebPushMessage
            do {
                try VAPID.check(subject: subject)
                subscription = try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth, hosts: hosts)
                var alert: [String: JSONValue] = ["title": .string(title)]
                if let body { alert["body"] = .string(body) }
                var aps: [String: JSONValue] = ["alert": .object(alert)]
                if let badge { aps["badge"] = .integer(badge) }
                message = try WebPushMessage.declarative(
                    from: try Payload(json: .object(["aps": .object(aps)])), navigate: navigate, now: Date())
            } catch let error as WebPushError {
                throw ValidationError(error.message)
            } catch let error as NotificationValidationError {
                throw ValidationError("The notification would be refused: \(error)")
            }
            let configuration = WebPushClient.Configuration(
                hosts: hosts, trust: try APNSConnectionOptions.trust(caFile: caFile), connectionsPerService: connections)
            let results = Mutex((ok: 0, failed: 0))
            let quiet = summaryJSON || `repeat` > 20
            let started = ContinuousClock.now
            let (count, inFlight, subject) = (`repeat`, concurrency, self.subject)
            try await WebPushClient.withClient(configuration: configuration) { client in
                await withTaskGroup(of: WebPushDelivery.self) { group in
                    var started = 0
                    func record(_ delivery: WebPushDelivery) {
                        let accepted = delivery.result == .accepted
                        results.withLock { accepted ? ($0.ok += 1) : ($0.failed += 1) }
                        if !quiet || (!accepted && !summaryJSON) { Self.report(delivery) }
                    }
                    while started < count {
                        if started >= inFlight, let delivery = await group.next() { record(delivery) }
                        started += 1
                        group.addTask { await client.send(message, to: subscription, key: key, subject: subject) }
                    }
                    for await delivery in group { record(delivery) }
                }
            }
            let (ok, failed) = results.withLock { ($0.ok, $0.failed) }
            try Output.loadSummary(ok: ok, failed: failed, since: started, json: summaryJSON, quiet: quiet)
        }

        private static func report(_ delivery: WebPushDelivery) {
            switch delivery.result {
            case .accepted:
                Output.line("✓ accepted by the push service (201)")
            case .rejected(let status, let reason):
                let gone = delivery.subscriptionGone ? ": the subscription is gone; the browser must subscribe again" : ""
                Output.error("✗ \(status) \(reason)\(gone)")
            case .failed(let message), .cancelled(let message):
                Output.error("✗ failed after \(delivery.attempts) attempt\(delivery.attempts == 1 ? "" : "s"): \(message)")
            }
        }

        private func vapidPrivateKey() throws -> VAPIDKey {
            var text = vapidKey ?? ProcessInfo.processInfo.environment["HERALD_VAPID_PRIVATE_KEY"]
            if let vapidKeyFile {
                do {
                    text = try String(contentsOfFile: vapidKeyFile, encoding: .utf8)
                } catch {
                    throw ValidationError("--vapid-key-file \(vapidKeyFile) cannot be read: \(error.localizedDescription)")
                }
            }
            guard let text else {
                throw ValidationError("Give the VAPID private key: --vapid-key, --vapid-key-file or HERALD_VAPID_PRIVATE_KEY (herald vapid generate makes one).")
            }
            do {
                return try VAPIDKey(text: text.trimmingCharacters(in: .whitespacesAndNewlines))
            } catch {
                throw ValidationError(error.message)
            }
        }
    }
}
