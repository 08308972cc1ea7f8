import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTesting
import Testing

extension OutsideClientTests {
    @Test("curl --http2 manages channels and broadcasts with apns-channel-id; each mistake gets its §5.5 reason")
    func curlChannels() async throws {
        let ca = directory.appendingPathComponent("ca.pem").path
        let configuration = EmulatorConfiguration(adminPort: 0, tls: .generated(caFile: URL(fileURLWithPath: ca)), trustedKeys: [.init(key)])
            .servingChannels()
        try await APNSEmulator.withRunning(configuration) { emulator in
            let jwt = try await pythonJWT()
            let manage = "https://localhost:\(emulator.port(for: .development, service: .channelManagement)!)/1/apps/com.example.app"
            let broadcast = "https://localhost:\(emulator.port(for: .development, service: .broadcast)!)/4/broadcasts/apps/com.example.app"
            let admin = "http://127.0.0.1:\(emulator.adminPort!)"
            let common = ["--http2", "--cacert", ca, "-H", "authorization: bearer \(jwt)"]
            let createBody = #"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#

            // Create: 201, no body, the id in apns-channel-id, the request id echoed.
            let requestID = UUID().uuidString.lowercased()
            let created = try await curl(common + ["-H", "apns-request-id: \(requestID)", "-d", createBody, manage + "/channels"])
            #expect(created.status == 201 && created.body.isEmpty)
            #expect(created.headers["apns-request-id"] == requestID && created.headers["apns-id"] == nil)
            let id = try #require(created.headers["apns-channel-id"])
            #expect(Data(base64Encoded: id) != nil)

            // Read and list.
            let read = try await curl(common + ["-H", "apns-channel-id: \(id)", manage + "/channels"])
            #expect(read.status == 200)
            #expect(try JSONValue(parsing: Array(read.body.utf8)) == ["message-storage-policy": 1, "push-type": "LiveActivity"])
            #expect(read.headers["apns-request-id"].flatMap(APNSID.init(headerValue:)) != nil, "a generated request id")
            let list = try await curl(common + [manage + "/all-channels"])
            #expect(list.status == 200 && list.body == #"{"channels":["\#(id)"]}"#)

            // A Live Activity subscribes through the admin API; a broadcast lands in its inbox.
            let device = try emulator.createDevice(environment: .development, topic: "com.example.app.push-type.liveactivity")
            let subscribed = try await curl(["-X", "POST", "-d", #"{"channel":"\#(id)"}"#, "\(admin)/devices/\(device.token.hex)/subscribe"])
            #expect(subscribed.status == 200 && subscribed.body.contains(id))
            let update = #"{"aps":{"event":"update","timestamp":1767225600,"content-state":{"score":"2-1"}}}"#
            let sent = try await curl(common + [
                "-H", "apns-push-type: LiveActivity", "-H", "apns-channel-id: \(id)", "-H", "apns-priority: 10", "-d", update, broadcast,
            ])
            #expect(sent.status == 200 && sent.body.isEmpty && sent.headers["apns-request-id"] != nil)
            let inbox = try await curl(["\(admin)/devices/\(device.token.hex)/inbox"])
            let entries = try JSONValue(parsing: Array(inbox.body.utf8)).arrayValue ?? []
            #expect(entries.count == 1 && entries.first?["channelId"]?.stringValue == id)
            #expect(entries.first?["apnsId"]?.stringValue == sent.headers["apns-request-id"])

            let unknown = "dW5rbm93bi1jaGFubmVs"
            let invalid: [([String], Int, String)] = [
                (["-H", "apns-channel-id: \(id)", "-d", "", manage + "/channels"], 400, "PayloadEmpty"),
                (["-d", "{", manage + "/channels"], 400, "BadRequestPayload"),
                (["-d", #"{"message-storage-policy": 1, "push-type": "LiveActivity", "name": "x"}"#, manage + "/channels"], 400, "BadRequestParams"),
                (["-d", #"{"message-storage-policy": 2, "push-type": "LiveActivity"}"#, manage + "/channels"], 400, "BadRequestParams"),
                (["-d", #"{"message-storage-policy": 1}"#, manage + "/channels"], 400, "MissingPushType"),
                (["-d", #"{"message-storage-policy": 1, "push-type": "alert"}"#, manage + "/channels"], 400, "InvalidPushType"),
                ([manage + "/channels"], 400, "MissingChannelId"),
                (["-H", "apns-channel-id: not base64!", manage + "/channels"], 400, "BadChannelId"),
                (["-X", "DELETE", "-H", "apns-channel-id: \(unknown)", manage + "/channels"], 400, "ChannelNotRegistered"),
                (["-H", "apns-request-id: 42", manage + "/all-channels"], 400, "BadMessageId"),
                (["-X", "PUT", "-d", createBody, manage + "/channels"], 405, "MethodNotAllowed"),
                (["-X", "POST", "-d", "{}", manage + "/all-channels"], 405, "MethodNotAllowed"),
                ([manage + "/channels/\(id)"], 404, "BadPath"),
                (["-d", createBody, manage + ".push-type.liveactivity/channels"], 400, "TopicDisallowed"),
                (["-H", "apns-channel-id: \(id)", "-d", update, broadcast], 400, "MissingPushType"),
                (["-H", "apns-push-type: alert", "-H", "apns-channel-id: \(id)", "-d", update, broadcast], 400, "InvalidPushType"),
                (["-H", "apns-push-type: liveactivity", "-d", update, broadcast], 400, "MissingChannelId"),
                (["-H", "apns-push-type: liveactivity", "-H", "apns-channel-id: \(unknown)", "-d", update, broadcast], 400, "ChannelNotRegistered"),
                (["-H", "apns-push-type: liveactivity", "-H", "apns-channel-id: \(id)", "-H", "apns-expiration: soon", "-d", update, broadcast], 400, "BadExpirationDate"),
                (["-H", "apns-push-type: liveactivity", "-H", "apns-channel-id: \(id)", "-H", "apns-priority: 1", "-d", update, broadcast], 400, "BadPriority"),
                (["-H", "apns-push-type: liveactivity", "-H", "apns-channel-id: \(id)", "-d", String(repeating: " ", count: 5121), broadcast], 413, "PayloadTooLarge"),
                (["-X", "GET", "-H", "apns-push-type: liveactivity", "-H", "apns-channel-id: \(id)", broadcast], 405, "MethodNotAllowed"),
            ]
            for (arguments, status, reason) in invalid {
                let response = try await curl(common + arguments)
                #expect(response.status == status, "\(reason): \(arguments)")
                #expect(response.body == #"{"reason":"\#(reason)"}"#, "\(arguments)")
                #expect(response.headers["apns-request-id"] != nil)
            }
            // The channel-management listener serves only its paths; the device-push port does not take broadcasts.
            let devicePort = "https://localhost:\(emulator.port(for: .development)!)/4/broadcasts/apps/com.example.app"
            let misrouted = try await curl(common + ["-H", "apns-push-type: liveactivity", "-H", "apns-channel-id: \(id)", "-d", update, devicePort])
            #expect(misrouted.status == 404 && misrouted.body == #"{"reason":"BadPath"}"#)
            let anonymous = try await curl(["--http2", "--cacert", ca, manage + "/all-channels"])
            #expect(anonymous.status == 403 && anonymous.body == #"{"reason":"MissingProviderToken"}"#)

            // Delete: 204, then the channel is gone and a broadcast to it is refused.
            let deleted = try await curl(common + ["-X", "DELETE", "-H", "apns-channel-id: \(id)", manage + "/channels"])
            #expect(deleted.status == 204 && deleted.body.isEmpty)
            let after = try await curl(common + ["-H", "apns-push-type: liveactivity", "-H", "apns-channel-id: \(id)", "-d", update, broadcast])
            #expect(after.status == 400 && after.body == #"{"reason":"ChannelNotRegistered"}"#)

            // The admin API reports channels, counters and the budget.
            let channels = try await curl(["\(admin)/channels"])
            #expect(channels.body.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
            let counters = try JSONValue(parsing: Array(try await curl(["\(admin)/counters"]).body.utf8))
            #expect(counters["broadcasts"] == 1 && counters["broadcastDeliveries"] == 1 && counters["channelRequests"] == 4)
            let budget = try await curl(["-X", "PUT", "-d", #"{"updatesPerHour": 12}"#, "\(admin)/budget"])
            #expect(budget.status == 200 && emulator.liveActivityBudget == 12)
            let badBudget = try await curl(["-X", "PUT", "-d", #"{"updatesPerHour": "many"}"#, "\(admin)/budget"])
            #expect(badBudget.status == 400 && badBudget.body.contains("updatesPerHour") && emulator.liveActivityBudget == 12)
        }
    }
}
