import Foundation
import HTTPTypes
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// `/metrics` is not public (issue 29, item 4): on loopback by default, behind a bearer key, or on a listener of its
/// own that the API's port does not answer for.
@Suite("Server: who may read /metrics")
struct MetricsAccessTests {
    static let key = String(repeating: "k", count: 40)

    @Test("An API on loopback serves /metrics without a key, as before")
    func loopbackDefault() async throws {
        try await ServerHarness.withServer { client, _ in
            let answer = try await client.call(.get, "/metrics")
            #expect(answer.status == .ok, "\(answer)")
            #expect(answer.body.contains("herald_"))
        }
    }

    @Test("An API beyond loopback with neither a metrics listener nor a key does not serve /metrics")
    func beyondLoopbackOff() async throws {
        try await ServerHarness.withServer(configure: { $0.listen.host = "0.0.0.0" }) { client, _ in
            let answer = try await client.call(.get, "/metrics")
            #expect(answer.status == .notFound, "\(answer)")
            #expect(answer.reason == "metricsNotHere")
            #expect(!answer.body.contains("herald_"))
            #expect(try await client.call(.get, "/health").status == .ok)
        }
    }

    @Test("HERALD_METRICS_KEY: /metrics answers 401 without the key or with another, 200 with it")
    func bearerKey() async throws {
        try await ServerHarness.withServer(configure: {
            $0.listen.host = "0.0.0.0"
            $0.metrics.bearerKey = Self.key
        }) { client, _ in
            let none = try await client.call(.get, "/metrics")
            #expect(none.status == .unauthorized && none.reason == "invalidMetricsKey", "\(none)")
            let wrong = try await client.call(.get, "/metrics", bearer: String(repeating: "x", count: 40))
            #expect(wrong.status == .unauthorized, "\(wrong)")
            let right = try await client.call(.get, "/metrics", bearer: Self.key)
            #expect(right.status == .ok && right.body.contains("herald_"), "\(right.status)")
        }
    }

    @Test("HERALD_METRICS_LISTEN: /metrics is served on its own listener, and the API's port answers 404")
    func ownListener() async throws {
        try await ServerHarness.withServer(testing: .live, configure: {
            $0.metrics.listen = .init(host: "127.0.0.1", port: 0)
        }) { client, app in
            let onAPI = try await client.call(.get, "/metrics")
            #expect(onAPI.status == .notFound && onAPI.reason == "metricsNotHere", "\(onAPI)")
            let port = try #require(await app.metricsPort())
            let connection = try await RawHTTPConnection.connect(port: port)
            try await connection.write("GET /metrics HTTP/1.1\r\nHost: metrics\r\nConnection: close\r\n\r\n")
            let answer = await connection.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(200))")
            #expect(answer.contains("herald_"))
        }
    }

    @Test("The variables: an address, a key of 32 characters or more; bad values are refused naming the variable")
    func variables() throws {
        let configuration = try ServerConfiguration(environment: [
            "HERALD_METRICS_LISTEN": "10.0.0.5:9464", "HERALD_METRICS_KEY": Self.key,
        ])
        #expect(configuration.metrics.listen == .init(host: "10.0.0.5", port: 9464))
        #expect(configuration.metrics.bearerKey == Self.key)
        #expect(configuration.metrics.placement(api: .init(host: "0.0.0.0", port: 8080)) == .own(.init(host: "10.0.0.5", port: 9464)))
        #expect(ServerConfiguration.Metrics().placement(api: .init(host: "0.0.0.0", port: 8080)) == .off)
        #expect(ServerConfiguration.Metrics().placement(api: .init(host: "127.0.0.1", port: 8080)) == .api)
        #expect(throws: ConfigurationError.self) { try ServerConfiguration(environment: ["HERALD_METRICS_KEY": "short"]) }
        do {
            _ = try ServerConfiguration(environment: ["HERALD_METRICS_LISTEN": "nine"])
            Issue.record("a bad address was accepted")
        } catch {
            #expect(error.message.contains("HERALD_METRICS_LISTEN"))
        }
    }
}
