import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTesting
import Testing

extension OutsideClientTests {
    @Test("curl --http2 push-to-starts: a device that honours starts starts the activity, one told to ignore them accepts the push and starts nothing")
    func curlActivityStarts() async throws {
        let ca = directory.appendingPathComponent("ca.pem").path
        let configuration = EmulatorConfiguration(
            adminPort: 0, tls: .generated(caFile: URL(fileURLWithPath: ca)), trustedKeys: [.init(key)])
        try await APNSEmulator.withRunning(configuration) { emulator in
            let jwt = try await pythonJWT()
            let admin = "http://127.0.0.1:\(emulator.adminPort!)"
            let topic = "com.example.app.push-type.liveactivity"
            let starting = try emulator.createDevice(environment: .development, topic: topic)
            let ignoring = try emulator.createDevice(environment: .development, topic: topic)
            let told = try await curl(["-X", "POST", "\(admin)/devices/\(ignoring.token.hex)/ignore-starts"])
            #expect(told.status == 200 && told.body.contains(#""startsActivities":false"#), "\(told.body)")

            let start = #"{"aps":{"event":"start","timestamp":1767225600,"attributes-type":"MatchAttributes","attributes":{},"content-state":{"score":"0-0"},"alert":{"title":"Kick-off","body":"A v B"}}}"#
            let update = #"{"aps":{"event":"update","timestamp":1767225601,"content-state":{"score":"1-0"}}}"#
            for (device, body) in [(starting, start), (ignoring, start), (starting, update)] {
                let sent = try await curl([
                    "--http2", "--cacert", ca, "-H", "authorization: bearer \(jwt)", "-H", "apns-push-type: liveactivity",
                    "-H", "apns-topic: \(topic)", "-H", "apns-priority: 10", "-d", body,
                    "https://localhost:\(emulator.port(for: .development)!)/3/device/\(device.token.hex)",
                ])
                #expect(sent.status == 200, "APNs accepts every push-to-start: \(sent)")
            }

            let started = try JSONValue(parsing: Array(try await curl(["\(admin)/activities"]).body.utf8)).arrayValue ?? []
            #expect(started.count == 1, "only the start, only on the device that honours starts: \(started)")
            #expect(started.first?["token"]?.stringValue == starting.token.hex)
            #expect(started.first?["attributesType"] == "MatchAttributes")
            #expect(emulator.startedActivities().map(\.token) == [starting.token])
            #expect(try emulator.inbox(for: ignoring.token).count == 1, "the push reached the device all the same")
            let counters = try JSONValue(parsing: Array(try await curl(["\(admin)/counters"]).body.utf8))
            #expect(counters["activitiesStarted"] == 1 && counters["pushToStartsIgnored"] == 1, "\(counters)")

            _ = try await curl(["-X", "POST", "\(admin)/devices/\(ignoring.token.hex)/honour-starts"])
            #expect(emulator.device(ignoring.token)?.startsActivities == true)
        }
    }
}
