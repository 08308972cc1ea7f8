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

extension ConsoleWebhookPageTests {
    @Test("the page is an admin's: a viewer or operator gets 403 and changes nothing; an admin limited to one app sees and acts on its endpoints only")
    func roles() async throws {
        let alpha = "com.alpha.app", beta = "com.beta.app"
        try await ServerHarness.withServer(configure: {
            $0.apps = [AppConfiguration(bundleID: alpha), AppConfiguration(bundleID: beta)]
        }) { client, app in
            let betaEndpoint = try await app.store.createWebhookEndpoint(
                NewWebhookEndpoint(
                    app: beta, url: "http://127.0.0.1:9/beta-hook", events: [.sendCompleted], description: "",
                    secret: WebhookSecret.make()))
            let betaID = betaEndpoint.id.uuidString.lowercased()
            for scopes in [[APIKeyScope.read], [.send]] {
                let key = try await app.store.createAPIKey(name: "not-admin", scopes: Set(scopes))
                var session = ConsoleClient(client)
                #expect(try await session.signIn(key.secret.value).status == .seeOther)
                #expect(try await session.call(.get, "/console/webhooks").status == .forbidden, "\(scopes)")
                let paused = try await session.call(.post, "/console/webhooks/\(betaID)/pause", form: [("_csrf", session.csrf)])
                #expect(paused.status == .forbidden, "\(scopes)")
                let made = try await session.call(
                    .post, "/console/webhooks",
                    form: [("_csrf", session.csrf), ("topic", alpha), ("url", "http://127.0.0.1:9/x"), ("event", "send.completed")])
                #expect(made.status == .forbidden, "\(scopes)")
            }
            let alphaAdmin = try await app.store.createAPIKey(name: "alpha-admin", scopes: [.admin], apps: [alpha])
            var scoped = ConsoleClient(client)
            #expect(try await scoped.signIn(alphaAdmin.secret.value).status == .seeOther)
            let page = try await scoped.call(.get, "/console/webhooks")
            #expect(page.status == .ok && !page.body.contains("beta-hook") && !page.body.contains(beta), "\(page.body)")
            let deleted = try await scoped.call(.post, "/console/webhooks/\(betaID)/delete", form: [("_csrf", scoped.csrf)])
            #expect(deleted.status == .notFound, "\(deleted)")
            let forBeta = try await scoped.call(
                .post, "/console/webhooks",
                form: [("_csrf", scoped.csrf), ("topic", beta), ("url", "http://127.0.0.1:9/x"), ("event", "send.completed")])
            // The API's answer, from the same use case: the form named the app, so naming it back tells nothing.
            #expect(forBeta.status == .forbidden, "\(forBeta)")
            let endpoints = try await app.store.webhookEndpoints(app: nil)
            #expect(endpoints.map(\.id) == [betaEndpoint.id] && endpoints.first?.status == .active, "nothing changed")
        }
    }
}
