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

        @Option(help: "The app's bundle id.") var topic: String
        @Option(help: "Where batches are POSTed: https:// in production.") var url: String
        @Option(help: "Comma-separated event types: \(WebhookEventType.subscribable.map(\.rawValue).joined(separator: ", ")).")
        var events: String
        @Option(help: "A note for people.") var description = ""
        @OptionGroup var database: DatabaseOptions

        func validate() throws {
            if let problem = WebhookEndpointRules.problem(withURL: url) { throw ValidationError("--url: \(problem).") }
            _ = try eventTypes()
            // The rules the API and the console apply (WebhookEndpoints), so the three doors take the same endpoints.
            if let problem = WebhookEndpointRules.problem(withDescription: description) {
                throw ValidationError("--description: \(problem).")
            }
        }

        private func eventTypes() throws -> [WebhookEventType] {
            let names = events.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !names.isEmpty else { throw ValidationError("--events: name at least one event type.") }
            do {
                return try WebhookEndpointRules.eventTypes(names)
            } catch {
                throw ValidationError("--events: \(error.description).")
            }
        }

        func run() async throws {
            let secret = WebhookSecret.make()
            let endpoint = NewWebhookEndpoint(
                app: topic, url: url, events: try eventTypes(), description: description, secret: secret)
            let created = try await database.withStore { store in
                let created = try await store.createWebhookEndpoint(endpoint)
                try await WebhooksCommand.audit(
                    .webhookCreated, created, in: store,
                    detail: WebhookEndpointRules.auditDetail(url: created.url, events: created.events))
                return created
            }
            Output.line("Registered the webhook endpoint \(created.id.uuidString.lowercased()) for \(created.app): \(created.url)")
            Output.line("Its signing secret, shown only now: \(secret)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List endpoints: id, app, status, URL, events. Never secrets.")

        @Option(help: "Only this app's.") var topic: String?
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let topic = self.topic
            let (endpoints, queues) = try await database.withStore { store in
                (try await store.webhookEndpoints(app: topic), try await store.webhookQueues())
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

        @Argument(help: "The endpoint's id.") var id: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let uuid = try WebhooksCommand.uuid(id)
            let (endpoint, queue, deliveries) = try await database.withStore { store in
                (
                    try await store.webhookEndpoint(uuid), try await store.webhookQueues()[uuid],
                    try await store.webhookDeliveries(of: uuid, limit: 20)
                )
            }
            guard let endpoint else { throw WebhooksCommand.unknown(id) }
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

        @Argument(help: "The endpoint's id.") var id: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let uuid = try WebhooksCommand.uuid(id)
            guard try await WebhooksCommand.setPaused(uuid, WebhookEndpointRules.pausedByAdministrator, database) else {
                throw WebhooksCommand.unknown(id)
            }
            Output.line("paused \(id)")
        }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Resume an endpoint: its failures are forgotten and its events go.")

        @Argument(help: "The endpoint's id.") var id: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let uuid = try WebhooksCommand.uuid(id)
            guard try await WebhooksCommand.setPaused(uuid, nil, database) else { throw WebhooksCommand.unknown(id) }
            Output.line("resumed \(id)")
        }
    }

    struct RotateSecret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-secret", abstract: "Make a new secret and print it, once; the old one signs beside it for the overlap.")

        @Argument(help: "The endpoint's id.") var id: String
        @Option(help: "Seconds the previous secret keeps signing.") var overlap = Int(WebhookSettings().secretOverlap.components.seconds)
        @OptionGroup var database: DatabaseOptions

        func validate() throws {
            guard (0...2_592_000).contains(overlap) else { throw ValidationError("--overlap: 0 to 2592000 seconds.") }
        }

        func run() async throws {
            let uuid = try WebhooksCommand.uuid(id)
            let secret = WebhookSecret.make()
            let until = Date().addingTimeInterval(Double(overlap))
            let rotated = try await database.withStore { store in
                guard let endpoint = try await store.rotateWebhookSecret(of: uuid, to: secret, previousExpiresAt: until)
                else { return false }
                try await WebhooksCommand.audit(
                    .webhookSecretRotated, endpoint, in: store,
                    detail: "the previous secret signs until \(RFC3339.string(until))")
                return true
            }
            guard rotated else { throw WebhooksCommand.unknown(id) }
            Output.line("The new signing secret, shown only now: \(secret)")
            Output.line("The previous secret signs beside it until \(RFC3339.string(until)).")
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Queue a webhook.test event for an endpoint.")

        @Argument(help: "The endpoint's id.") var id: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let uuid = try WebhooksCommand.uuid(id)
            let queued = try await database.withStore { store in
                guard let endpoint = try await store.webhookEndpoint(uuid) else { return false }
                return try await store.enqueueWebhookEvent(
                    WebhookEndpointRules.testEvent(app: endpoint.app, at: Date()), for: uuid)
            }
            guard queued else { throw WebhooksCommand.unknown(id) }
            Output.line("queued a webhook.test event for \(id); a running herald serve delivers it")
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send an endpoint's dead letter again, and resume it.")

        @Argument(help: "The endpoint's id.") var id: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let uuid = try WebhooksCommand.uuid(id)
            let replayed = try await database.withStore { store -> Int? in
                guard let count = try await store.replayWebhookDeadLetter(of: uuid),
                    let endpoint = try await store.webhookEndpoint(uuid)
                else { return nil }
                try await WebhooksCommand.audit(.webhookReplayed, endpoint, in: store, detail: "\(count) dead-letter events")
                return count
            }
            guard let count = replayed else { throw WebhooksCommand.unknown(id) }
            Output.line("replayed \(count) events of \(id)")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete an endpoint with its outbox and deliveries.")

        @Argument(help: "The endpoint's id.") var id: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let uuid = try WebhooksCommand.uuid(id)
            let deleted = try await database.withStore { store in
                guard let endpoint = try await store.webhookEndpoint(uuid), try await store.deleteWebhookEndpoint(uuid)
                else { return false }
                try await WebhooksCommand.audit(
                    .webhookDeleted, endpoint, in: store,
                    detail: WebhookEndpointRules.auditDetail(url: endpoint.url, events: endpoint.events))
                return true
            }
            guard deleted else { throw WebhooksCommand.unknown(id) }
            Output.line("deleted \(id)")
        }
    }

    /// Pauses (with a reason) or resumes an endpoint and records it; false when there is no such endpoint.
    static func setPaused(_ id: UUID, _ reason: String?, _ database: DatabaseOptions) async throws -> Bool {
        try await database.withStore { store in
            guard let endpoint = try await store.setWebhookEndpoint(id, paused: reason) else { return false }
            try await audit(reason == nil ? .webhookResumed : .webhookPaused, endpoint, in: store)
            return true
        }
    }

    /// Records a change to an endpoint in the audit log, as the CLI's user, like `herald keys`.
    static func audit(_ action: AuditAction, _ endpoint: WebhookEndpoint, in store: any Store, detail: String = "")
        async throws
    {
        try await store.recordAudit(
            AuditEntry(
                at: Date(), actor: .commandLine, action: action, app: endpoint.app,
                subject: endpoint.id.lowercasedText, detail: detail))
    }

    static func uuid(_ id: String) throws -> UUID {
        guard let uuid = UUID(uuidString: id) else {
            throw ValidationError("\(id) is not an endpoint id: copy it from herald webhooks list.")
        }
        return uuid
    }

    static func unknown(_ id: String) -> any Error {
        Output.error("There is no webhook endpoint \(id).")
        return ExitCode(1)
    }
}
