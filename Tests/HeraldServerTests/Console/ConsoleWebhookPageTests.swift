import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import HeraldWebhooks
import Testing

@testable import HeraldServer

@Suite("Console: the Webhooks page", .timeLimit(.minutes(2)))
struct ConsoleWebhookPageTests {
    static func between(_ text: String, _ start: String, _ end: String) -> String? {
        guard let from = text.range(of: start), let to = text[from.upperBound...].range(of: end) else { return nil }
        return String(text[from.upperBound..<to.lowerBound])
    }

    @Test("registers an endpoint (secret shown once), shows its deliveries with status and latency, sends a test event, pauses with the reason and resumes", arguments: Backend.available)
    func page(_ backend: Backend) async throws {
        try await WebhookReceiver.with { receiver, url in
            try await ServerHarness.withServer(backend, configure: WebhookTests.quick) { client, app in
                let secret = try await ConsoleSessionTests.adminKey(app)
                var browser = ConsoleClient(client)
                try await browser.signIn(secret)
                let empty = try await browser.call(.get, "/console/webhooks")
                #expect(empty.body.contains("No webhook endpoints yet"))

                let refused = try await browser.call(
                    .post, "/console/webhooks",
                    form: [("_csrf", browser.csrf), ("topic", ServerHarness.topic), ("url", "ftp://x"), ("event", "send.completed")])
                #expect(refused.status == .badRequest && refused.body.contains("http:// or https://"))
                #expect(try await app.store.webhookEndpoints(app: nil).isEmpty, "a refused form changes nothing")

                let created = try await browser.call(
                    .post, "/console/webhooks",
                    form: [
                        ("_csrf", browser.csrf), ("topic", ServerHarness.topic), ("url", url),
                        ("event", "send.completed"), ("event", "token.removed"), ("description", "CRM"),
                    ])
                #expect(created.status == .created, "\(created.status)")
                let shown = try #require(Self.between(created.body, "<p class=\"secret\" id=\"secret\">", "<"))
                #expect(shown.hasPrefix("whsec_"))
                let endpoint = try #require(try await app.store.webhookEndpoints(app: nil).first)
                #expect(endpoint.events == [.sendCompleted, .tokenRemoved] && endpoint.description == "CRM")
                let id = endpoint.id.uuidString.lowercased()

                let tested = try await browser.call(.post, "/console/webhooks/\(id)/test", form: [("_csrf", browser.csrf)])
                #expect(tested.status == .seeOther)
                await receiver.accepted.wait(untilAtLeast: 1)
                #expect(receiver.acceptedEvents.first?["type"]?.stringValue == "webhook.test")
                await app.webhooks.attemptsRecorded(atLeast: 1)
                let listed = try await browser.call(.get, "/console/webhooks?done=test")
                #expect(listed.body.contains(url) && listed.body.contains("send.completed, token.removed"))
                #expect(listed.body.contains("badge ok\">delivered") && listed.body.contains(" ms</td>"))
                #expect(!listed.body.contains(shown), "the secret is shown once")

                _ = try await browser.call(.post, "/console/webhooks/\(id)/pause", form: [("_csrf", browser.csrf)])
                let paused = try await browser.call(.get, "/console/webhooks")
                #expect(paused.body.contains("Why paused: Paused by an administrator."))
                #expect(paused.body.contains("/console/webhooks/\(id)/resume"))
                _ = try await browser.call(.post, "/console/webhooks/\(id)/resume", form: [("_csrf", browser.csrf)])
                #expect(try await app.store.webhookEndpoint(endpoint.id)?.status == .active)

                let forged = try await browser.call(.post, "/console/webhooks/\(id)/delete", form: [("_csrf", "nope")])
                #expect(forged.status == .forbidden)
                _ = try await browser.call(.post, "/console/webhooks/\(id)/delete", form: [("_csrf", browser.csrf)])
                #expect(try await app.store.webhookEndpoints(app: nil).isEmpty)
            }
        }
    }
}
