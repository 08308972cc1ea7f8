import ArgumentParser
import Foundation
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldWebhooks

/// `herald webhooks …`: webhook endpoints (docs/integrations.md) on the database, as the admin API manages them.
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "Register, list, pause, resume, test and delete webhook endpoints; rotate secrets; replay dead letters.",
        subcommands: [
            Create.self, List.self, Show.self, Pause.self, Resume.self, RotateSecret.self, Test.self, Replay.self,
            Delete.self,
        ]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register an endpoint and print its secret, once.")

        @Option(help: "The app's bundle id (default: the server's only app).") var topic: String?
        @Option(help: "Where batches are POSTed: https:// in production.") var url: String
        @Option(help: "Comma-separated event types: \(WebhookEventType.subscribable.map(\.rawValue).joined(separator: ", ")).")
        var events: String
        @Option(help: "A note for people.") var description = ""
        @OptionGroup var options: AdministrationOptions

        func validate() throws {
            if let problem = WebhookEndpointRules.problem(withURL: url) { throw ValidationError("--url: \(problem).") }
            _ = try eventNames()
            // The rules the API and the console apply (WebhookEndpoints), so the three doors take the same endpoints.
            if let problem = WebhookEndpointRules.problem(withDescription: description) {
                throw ValidationError("--description: \(problem).")
            }
        }

        private func eventNames() throws -> [String] {
            let names = events.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !names.isEmpty else { throw ValidationError("--events: name at least one event type.") }
            do {
                _ = try WebhookEndpointRules.eventTypes(names)
            } catch {
                throw ValidationError("--events: \(error.description).")
            }
            return names
        }

        func run() async throws {
            let (topic, url, events, description) = (topic, url, try eventNames(), description)
            let (created, secret) = try await options.withAdministration { administration in
                try await administration.registerWebhook(
                    topic: topic, url: url, events: events, description: description)
            }
            Output.line("Registered the webhook endpoint \(created.id.uuidString.lowercased()) for \(created.app): \(created.url)")
            Output.line("Its signing secret, shown only now: \(secret)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List endpoints: id, app, status, URL, events. Never secrets.")

        @Option(help: "Only this app's.") var topic: String?
        @OptionGroup var options: AdministrationOptions

        func run() async throws {
            let topic = self.topic
            let (endpoints, queues) = try await options.withAdministration { administration in
                (try await administration.webhooks(topic: topic), try await administration.webhookQueues())
            }
            for endpoint in endpoints {
                let queue = queues[endpoint.id] ?? WebhookQueue()
                Output.line(
                    "\(endpoint.id.uuidString.lowercased()) \(endpoint.app) \(endpoint.status.rawValue) \(endpoint.url) \(endpoint.events.map(\.rawValue).joined(separator: ",")) pending \(queue.pending) dead \(queue.dead)"
                )
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One endpoint: its state, queue and recent deliveries.")

        @OptionGroup var endpoint: EndpointArguments

        func run() async throws {
            let (endpoint, queue, deliveries) = try await self.endpoint.withEndpoint { administration, uuid in
                (
                    try await administration.webhook(uuid), try await administration.webhookQueues()[uuid],
                    try await administration.webhookDeliveries(of: uuid, limit: 20)
                )
            }
            Output.line("\(endpoint.id.uuidString.lowercased()) \(endpoint.app) \(endpoint.url)")
            Output.line("events: \(endpoint.events.map(\.rawValue).joined(separator: ", "))")
            Output.line("status: \(endpoint.status.rawValue)\(endpoint.pausedReason.map { " — \($0)" } ?? "")")
            if endpoint.consecutiveFailures > 0 {
                Output.line("failing: \(endpoint.consecutiveFailures) in a row; next try \(RFC3339.string(endpoint.nextAttemptAt))")
            }
            let waiting = queue ?? WebhookQueue()
            Output.line(
                "queue: \(waiting.pending) pending\(waiting.oldestPendingAt.map { " since \(RFC3339.string($0))" } ?? ""), \(waiting.dead) in the dead letter"
            )
            for delivery in deliveries {
                let milliseconds = Double(delivery.latency.components.attoseconds) / 1e15
                    + Double(delivery.latency.components.seconds) * 1000
                Output.line(
                    "\(RFC3339.string(delivery.at)) \(delivery.delivered ? "delivered" : "failed") \(delivery.eventCount) events \(delivery.statusCode.map(String.init) ?? "-") \(String(format: "%.1f", milliseconds)) ms\(delivery.error.map { " \($0)" } ?? "")"
                )
            }
        }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Pause an endpoint: its events wait until resumed.")

        @OptionGroup var endpoint: EndpointArguments

        func run() async throws {
            _ = try await endpoint.withEndpoint { try await $0.setWebhook($1, paused: true) }
            Output.line("paused \(endpoint.id)")
        }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Resume an endpoint: its failures are forgotten and its events go.")

        @OptionGroup var endpoint: EndpointArguments

        func run() async throws {
            _ = try await endpoint.withEndpoint { try await $0.setWebhook($1, paused: false) }
            Output.line("resumed \(endpoint.id)")
        }
    }

    struct RotateSecret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-secret", abstract: "Make a new secret and print it, once; the old one signs beside it for the overlap.")

        @OptionGroup var endpoint: EndpointArguments
        @Option(help: "Seconds the previous secret keeps signing.") var overlap = Int(WebhookSettings().secretOverlap.components.seconds)

        func validate() throws {
            guard (0...2_592_000).contains(overlap) else { throw ValidationError("--overlap: 0 to 2592000 seconds.") }
        }

        func run() async throws {
            let overlap = Duration.seconds(overlap)
            let (secret, until) = try await endpoint.withEndpoint {
                try await $0.rotateWebhookSecret(of: $1, overlap: overlap)
            }
            Output.line("The new signing secret, shown only now: \(secret)")
            Output.line("The previous secret signs beside it until \(RFC3339.string(until)).")
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Queue a webhook.test event for an endpoint.")

        @OptionGroup var endpoint: EndpointArguments

        func run() async throws {
            try await endpoint.withEndpoint { try await $0.sendTestEvent(to: $1) }
            Output.line("queued a webhook.test event for \(endpoint.id); a running herald serve delivers it")
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send an endpoint's dead letter again, and resume it.")

        @OptionGroup var endpoint: EndpointArguments

        func run() async throws {
            let count = try await endpoint.withEndpoint { try await $0.replayDeadLetter(of: $1) }
            Output.line("replayed \(count) events of \(endpoint.id)")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete an endpoint with its outbox and deliveries.")

        @OptionGroup var endpoint: EndpointArguments

        func run() async throws {
            try await endpoint.withEndpoint { try await $0.deleteWebhook($1) }
            Output.line("deleted \(endpoint.id)")
        }
    }

    /// The endpoint a command acts on, and where its database is.
    struct EndpointArguments: ParsableArguments {
        @Argument(help: "The endpoint's id.") var id: String
        @OptionGroup var options: AdministrationOptions

        /// Runs `body` with the server's use cases and the endpoint's id.
        func withEndpoint<Result: Sendable>(
            _ body: @Sendable (CommandLineAdministration, UUID) async throws -> Result
        ) async throws -> Result {
            guard let uuid = UUID(uuidString: id) else {
                throw ValidationError("\(id) is not an endpoint id: copy it from herald webhooks list.")
            }
            return try await options.withAdministration { try await body($0, uuid) }
        }
    }
}
