import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// The OpenAPI document's `webhooks` section against real deliveries (issue 43, item 4): every event a receiver gets
/// validates against the document's schema (JSON Schema 2020-12, through Python's jsonschema), and every signature
/// header matches the documented form, so a receiver generated from the document takes what Herald posts.
@Suite("Server: webhook deliveries match the OpenAPI document", .timeLimit(.minutes(2)))
struct WebhookDocumentTests {
    /// Validates the bodies (a JSON array of bodies) against `webhooks.events.post`'s request body schema, and the
    /// signatures against its header's pattern; prints each problem and exits 1 on any.
    static let validator = #"""
        import json, re, sys, yaml, jsonschema
        document = yaml.safe_load(open(sys.argv[1]))
        deliveries = json.load(open(sys.argv[2]))
        operation = document["webhooks"]["events"]["post"]
        # The request body's schema resolved in the document itself, so that its $refs to components resolve.
        wrapper = dict(document)
        wrapper["$ref"] = "#/webhooks/events/post/requestBody/content/application~1json/schema"
        validator = jsonschema.Draft202012Validator(wrapper)
        pattern = next(p for p in operation["parameters"] if p["name"] == "Herald-Signature")["schema"]["pattern"]
        problems = []
        for delivery in deliveries:
            for error in validator.iter_errors(json.loads(delivery["body"])):
                problems.append(f"{list(error.absolute_path)}: {error.message[:300]}")
            if not re.fullmatch(pattern, delivery["signature"]):
                problems.append(f"signature {delivery['signature']!r} does not match {pattern}")
        print("\n".join(problems))
        sys.exit(1 if problems else 0)
        """#

    @Test("every event of a send with an acceptance, a rejection, a removal, receipts and a test event validates against the document")
    func deliveriesValidate() async throws {
        try await WebhookReceiver.with { receiver, url in
            try await ServerHarness.withServer(configure: WebhookTests.quick) { client, app in
                let key = try await SendTests.key(app)
                let endpoint = try await WebhookTests.register(
                    client, key: key, url: url, events: WebhookEventType.subscribable.map(\.rawValue))
                let (kept, gone) = (testToken(0xD1), testToken(0xD2))
                for token in [kept, gone] { try await client.register(token, debug: false) }
                let emulator = try #require(app.emulator)
                _ = try emulator.createDevice(token: gone, environment: .production, topic: ServerHarness.topic)
                try emulator.markUnregistered(gone, at: Date(timeIntervalSinceNow: 3_600))
                let sent = try await client.call(
                    .post, "/api/send", body: #"{"target": {"tokens": ["\#(kept.hex)", "\#(gone.hex)"]}, "alert": "hello"}"#,
                    bearer: key)
                let send = try #require(sent.json["id"]?.stringValue, "\(sent)")
                let receipt = ReceiptsTests.events(
                    ReceiptsTests.event("opened", kept, send: send), ReceiptsTests.event("action", kept, send: send, extra: #", "action": "reply""#))
                #expect(try await client.call(.post, "/api/events", body: receipt).json["recorded"] == 2)
                #expect(try await client.call(.post, "/api/webhooks/\(endpoint.id)/test", bearer: key).status == .accepted)

                let expected: Set<String> = [
                    "notification.accepted", "notification.rejected", "token.removed", "send.completed",
                    "receipt.received", "receipt.opened", "receipt.action", "webhook.test",
                ]
                await receiver.accepted.wait(untilAtLeast: expected.count)
                let types = Set(receiver.acceptedEvents.compactMap { $0["type"]?.stringValue })
                #expect(types == expected, "\(types.symmetricDifference(expected))")

                let deliveries = receiver.deliveries.map { delivery -> JSONValue in
                    .object(["body": .string(String(decoding: delivery.body, as: UTF8.self)), "signature": .string(delivery.signature)])
                }
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("webhook-document-\(UUID())")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: directory) }
                let file = directory.appendingPathComponent("deliveries.json")
                try Data(JSONValue.array(deliveries).sortedJSONBytes).write(to: file)
                let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                    .appendingPathComponent("../../docs/openapi.yaml").standardized
                let result = try await ProcessRunner.run("python3", ["-c", Self.validator, document.path, file.path])
                #expect(result.status == 0, "the deliveries disagree with docs/openapi.yaml:\n\(result.standardOutput)\(result.standardError.suffix(2000))")
            }
        }
    }
}
