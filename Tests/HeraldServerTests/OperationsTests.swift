import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// Health, readiness, metrics, logs and the OpenAPI document.
@Suite("Server: operations", .timeLimit(.minutes(2)))
struct OperationsTests {
    @Test("/health is ok; /ready reports the database and 503s once the store is gone", arguments: Backend.available)
    func healthAndReadiness(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let health = try await client.call(.get, "/health")
            #expect(health.status == .ok && health.json["status"]?.stringValue == "ok")
            let ready = try await client.call(.get, "/ready")
            #expect(ready.status == .ok && ready.json["database"]?.stringValue == backend.rawValue, "\(ready)")
            await app.store.close()
            let gone = try await client.call(.get, "/ready")
            #expect(gone.status == .serviceUnavailable && gone.reason == "unavailable", "\(gone)")
            #expect(try await client.call(.get, "/health").status == .ok)
        }
    }

    @Test("/metrics counts registrations, send outcomes and removals per reason in Prometheus text")
    func metrics() async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await app.store.createAPIKey(name: "m", scopes: [.send]).secret.value
            let live = testToken(0x71)
            let dead = testToken(0x72)
            try await client.register(live, debug: true, extra: #", "tags": ["m"]"#)
            try await client.register(dead, debug: true, extra: #", "tags": ["m"]"#)
            try await client.register(live, debug: true, extra: #", "tags": ["m"]"#)
            _ = try app.emulator!.createDevice(token: dead, environment: .development, topic: ServerHarness.topic)
            try app.emulator!.markUnregistered(dead)
            try await client.call(.post, "/api/send", body: #"{"target": {"tag": "m"}, "alert": "x"}"#, bearer: key)
            let answer = try await client.call(.get, "/metrics")
            #expect(answer.status == .ok && answer.headers[.contentType]?.hasPrefix("text/plain") == true)
            let text = answer.body
            #expect(text.contains(#"herald_registrations_total{result="created"} 2"#))
            #expect(text.contains(#"herald_registrations_total{result="updated"} 1"#))
            #expect(text.contains(#"herald_send_outcomes_total{outcome="accepted",reason=""} 1"#))
            #expect(text.contains(#"herald_send_outcomes_total{outcome="rejected",reason="Unregistered"} 1"#))
            #expect(text.contains(#"herald_token_removals_total{reason="Unregistered"} 1"#))
            #expect(text.contains(#"herald_sends_total{mode="inline"} 1"#))
        }
    }

    @Test("logs never contain a full token, the API key or the registration key")
    func logsAreRedacted() async throws {
        let capture = LogCapture()
        let registrationKey = "registration-key-secret"
        try await ServerHarness.withServer(
            logger: capture.logger(), configure: { $0.apps[0].registrationKeys = [registrationKey] }
        ) { client, app in
            let secret = try await app.store.createAPIKey(name: "logs", scopes: [.send, .admin]).secret.value
            let tokens = [testToken(0x81), testToken(0x82), testToken(0x83)]
            for token in tokens {
                let answer = try await client.call(
                    .post, "/api/token", body: #"{"token": "\#(token.hex)", "debug": false, "userId": "u"}"#,
                    headers: [.registrationKey: registrationKey])
                #expect(answer.status == .created)
            }
            // One accepted, one unregistered (removed), one BadDeviceToken corrected.
            _ = try app.emulator!.createDevice(token: tokens[1], environment: .production, topic: ServerHarness.topic)
            try app.emulator!.markUnregistered(tokens[1])
            _ = try app.emulator!.createDevice(token: tokens[2], environment: .development, topic: ServerHarness.topic)
            try await client.call(.post, "/api/send", body: #"{"target": {"user": "u"}, "alert": "x"}"#, bearer: secret)
            try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "u"}, "alert": "x"}"#, bearer: "hrld_wrong")
            try await client.call(.delete, "/api/token/\(tokens[0].hex)", headers: [.registrationKey: registrationKey])
            let lines = capture.all
            #expect(
                lines.contains {
                    $0.contains("Removed a token") && $0.contains(tokens[1].redacted) && $0.contains("Unregistered")
                })
            #expect(lines.contains { $0.contains("Corrected a token's environment") })
            for line in lines {
                for token in tokens { #expect(!line.contains(token.hex), "\(line)") }
                #expect(!line.contains(secret) && !line.contains(registrationKey), "\(line)")
            }
        }
    }

    /// `paths` and their methods in docs/openapi.yaml, as `METHOD /path/{parameter}`.
    static func documentedRoutes() throws -> Set<String> {
        var routes = Set<String>()
        var inPaths = false
        var path: String?
        for line in OpenAPIDocument.yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" {
                inPaths = true
                continue
            }
            guard inPaths else { continue }
            if !line.hasPrefix(" "), !line.isEmpty { break }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let method = line.trimmingCharacters(in: .whitespaces).dropLast().uppercased()
                if ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(method) { routes.insert("\(method) \(path)") }
            }
        }
        return routes
    }

    @Test("every route in docs/openapi.yaml exists in the router, and every route of the router is in it")
    func openAPIMatchesRoutes() async throws {
        try await ServerHarness.withServer { _, app in
            let documented = try Self.documentedRoutes()
            let served = Set(
                app.routes.map { route in
                    // Hummingbird prints captures as {name} or :name; the document writes {name}.
                    route.split(separator: "/", omittingEmptySubsequences: false).map { part in
                        part.hasPrefix(":") ? "{\(part.dropFirst())}" : String(part)
                    }.joined(separator: "/")
                })
            #expect(documented.count >= 10)
            #expect(
                documented.subtracting(served).isEmpty,
                "documented but not served: \(documented.subtracting(served).sorted())")
            #expect(
                served.subtracting(documented).isEmpty,
                "served but not documented: \(served.subtracting(documented).sorted())")
        }
    }

    @Test("/openapi.yaml serves docs/openapi.yaml exactly (embedded by SwiftPM through Sources/HeraldServer/OpenAPI/openapi.yaml)")
    func openAPIServed() async throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../docs/openapi.yaml")
        let text = try String(contentsOf: file, encoding: .utf8)
        try await ServerHarness.withServer { client, _ in
            let answer = try await client.call(.get, "/openapi.yaml")
            #expect(answer.status == .ok && answer.body == text)
            #expect(answer.headers[.contentType]?.hasPrefix("application/yaml") == true)
        }
    }

    @Test("docs/openapi.yaml is a valid OpenAPI 3.1 document (openapi-spec-validator)")
    func openAPIValid() async throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../docs/openapi.yaml"
        ).standardized
        let result = try await ProcessRunner.run(
            "python3",
            [
                "-c",
                "import sys, yaml; from openapi_spec_validator import validate; validate(yaml.safe_load(open(sys.argv[1])))",
                file.path,
            ])
        #expect(result.status == 0, "\(result.standardError)")
    }
}
