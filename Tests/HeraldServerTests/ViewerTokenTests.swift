import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// A viewer reads devices without learning their whole tokens (docs/security.md, "Whole device tokens"): the API
/// shortens them as the audit log does, and the console shows the last digits without links that hold the token.
@Suite("Server: a viewer never sees a whole device token", .timeLimit(.minutes(2)))
struct ViewerTokenTests {
    @Test("GET /api/devices and /api/devices/{token}: a read key gets … and the last 8 digits, an admin key the whole token")
    func api() async throws {
        try await ServerHarness.withServer { client, app in
            let device = testToken(0xE1)
            try await client.register(device, debug: false, extra: #", "userId": "v""#)
            let admin = try await app.store.createAPIKey(name: "admin", scopes: [.admin])
            let viewer = try await app.store.createAPIKey(name: "viewer", scopes: [.read])
            for (secret, token) in [(viewer.secret.value, device.redacted), (admin.secret.value, device.hex)] {
                let listed = try await client.call(.get, "/api/devices?user=v", bearer: secret)
                #expect(listed.json["devices"]?.arrayValue?.first?["token"]?.stringValue == token, "\(listed)")
                let shown = try await client.call(.get, "/api/devices/\(device.hex)", bearer: secret)
                #expect(shown.json["token"]?.stringValue == token, "\(shown)")
            }
        }
    }

    @Test("the console's device list and a send's outcomes show a viewer the last 8 digits without links; an admin links by the token")
    func console() async throws {
        try await ServerHarness.withServer { client, app in
            let device = testToken(0xE2)
            try await client.register(device, debug: false, extra: #", "userId": "v""#)
            let admin = try await app.store.createAPIKey(name: "admin", scopes: [.send, .admin])
            let viewerKey = try await app.store.createAPIKey(name: "viewer", scopes: [.read])
            let sent = try await client.call(
                .post, "/api/send", body: #"{"target": {"token": "\#(device.hex)"}, "alert": "x"}"#, bearer: admin.secret.value)
            let sendID = try #require(sent.json["id"]?.stringValue, "\(sent)")
            var viewer = ConsoleClient(client)
            #expect(try await viewer.signIn(viewerKey.secret.value).status == .seeOther)
            var adminSession = ConsoleClient(client)
            #expect(try await adminSession.signIn(admin.secret.value).status == .seeOther)
            for path in ["/console/devices?user=v", "/console/sends/\(sendID)"] {
                let seen = try await viewer.call(.get, path)
                #expect(seen.status == .ok && seen.body.contains(device.redacted), "\(path): \(seen)")
                #expect(!seen.body.contains(device.hex), "\(path) shows the viewer the whole token")
                let full = try await adminSession.call(.get, path)
                #expect(full.status == .ok && full.body.contains("/console/devices/\(device.hex)"), "\(path): \(full)")
            }
        }
    }
}
