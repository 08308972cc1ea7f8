import Foundation
@testable import HeraldAPNS
import HeraldCore
@testable import HeraldEmulator
import HeraldTesting
import NIOCore
import NIOHPACK
import Testing

@Suite("Sender: broadcast channels against the emulator", .timeLimit(.minutes(2)))
struct ChannelTests {
    let harness = SenderHarness(servesChannels: true)
    let app = APNSOutcomeTable.bundleID
    let activityTopic = APNSOutcomeTable.bundleID + ".push-type.liveactivity"

    /// A Live Activity update as a broadcast.
    func update(_ score: String, priority: APNSPriority? = nil, expiration: APNSExpiration? = nil, requestID: APNSID? = nil) -> BroadcastNotification {
        let payload = Payload(aps: APS(contentState: ["score": .string(score)], timestamp: 1_767_312_000, event: .update))
        return BroadcastNotification(body: .payload(payload), bundleID: app, priority: priority, expiration: expiration, requestID: requestID)
    }

    func liveActivityDevice(_ emulator: APNSEmulator, _ byte: String) throws -> DeviceToken {
        try emulator.createDevice(token: DeviceToken(hex: String(repeating: byte, count: 32)), environment: .development, topic: activityTopic).token
    }

    /// The channel error `body` throws; `nil` when it succeeds.
    func rejection(_ body: () async throws -> Void) async -> APNSChannelError? {
        do {
            try await body()
            return nil
        } catch let error as APNSChannelError {
            return error
        } catch {
            Issue.record("expected an APNSChannelError, got \(error)")
            return nil
        }
    }

    @Test("create, read, list and delete: the id comes back in apns-channel-id, apns-request-id is sent and echoed")
    func management() async throws {
        try await harness.run { emulator, client in
            let requestID = APNSID()
            let created = try await client.createChannel(bundleID: app, storagePolicy: .mostRecentMessageStored, requestID: requestID)
            #expect(created.requestID == requestID.headerValue)
            #expect(created.value.storagePolicy == .mostRecentMessageStored && created.attempts == 1)
            #expect(Data(base64Encoded: created.value.id.rawValue)?.isEmpty == false, "a base64 id: \(created.value.id)")
            let other = try await client.createChannel(bundleID: app, storagePolicy: .noMessageStored)
            #expect(APNSID(headerValue: other.requestID) != nil, "a generated request id is a UUID")

            let read = try await client.channel(created.value.id, bundleID: app)
            #expect(read.value == created.value)
            #expect(try await client.channel(other.value.id, bundleID: app).value.storagePolicy == .noMessageStored)
            #expect(try await client.channels(bundleID: app).value == [created.value.id, other.value.id])

            try await client.deleteChannel(created.value.id, bundleID: app)
            #expect(try await client.channels(bundleID: app).value == [other.value.id])
            let gone = await rejection { _ = try await client.channel(created.value.id, bundleID: app) }
            #expect(gone?.code == .rejected && gone?.reason == .channelNotRegistered && gone?.rejection?.status == 400)
            #expect(emulator.counters.channelRequests == 7)
            // Channel management went to its own listener, not the device-push port.
            #expect(emulator.channels().map(\.id) == [other.value.id.rawValue])
        }
    }

    @Test("a channel's life: create → two devices subscribe → broadcast → both inboxes → delete → broadcast refused")
    func life() async throws {
        try await harness.run { emulator, client in
            let first = try liveActivityDevice(emulator, "11")
            let second = try liveActivityDevice(emulator, "22")
            let bystander = try liveActivityDevice(emulator, "33")
            let channel = try await client.createChannel(bundleID: app, storagePolicy: .noMessageStored).value.id
            try emulator.subscribe(first, to: channel.rawValue)
            try emulator.subscribe(second, to: channel.rawValue)

            let requestID = APNSID()
            let sent = try await client.broadcast(update("1-0", requestID: requestID), to: channel)
            #expect(sent.requestID == requestID.headerValue && sent.value == channel)
            for device in [first, second] {
                let inbox = try emulator.inbox(for: device)
                #expect(inbox.count == 1)
                #expect(inbox.first?.channelID == channel.rawValue && inbox.first?.apnsID == requestID.headerValue)
                #expect(inbox.first?.pushType == "liveactivity")
                #expect(try JSONValue(parsing: inbox.first!.payload)["aps"]?["content-state"] == ["score": "1-0"])
            }
            #expect(try emulator.inbox(for: bystander).isEmpty)
            #expect(emulator.counters.broadcasts == 1 && emulator.counters.broadcastDeliveries == 2)

            try await client.deleteChannel(channel, bundleID: app)
            let refused = await rejection { try await client.broadcast(update("2-0"), to: channel) }
            #expect(refused?.reason == .channelNotRegistered && refused?.attempts == 1)
            #expect(try emulator.inbox(for: first).count == 1)
        }
    }

    @Test("policy 0 refuses a non-zero expiration with BadExpirationDate and takes 0; policy 1 takes one")
    func storagePolicyExpiration() async throws {
        try await harness.run { emulator, client in
            let noStorage = try await client.createChannel(bundleID: app, storagePolicy: .noMessageStored).value.id
            let storing = try await client.createChannel(bundleID: app, storagePolicy: .mostRecentMessageStored).value.id
            let later = APNSExpiration(secondsSince1970: 1_767_315_600)
            let refused = await rejection { try await client.broadcast(update("x", expiration: later), to: noStorage) }
            #expect(refused?.reason == .badExpirationDate && refused?.rejection?.status == 400)
            #expect(refused?.message.contains("BadExpirationDate") == true)
            _ = try await client.broadcast(update("x", expiration: .immediately), to: noStorage)
            _ = try await client.broadcast(update("x"), to: noStorage)
            _ = try await client.broadcast(update("x", expiration: later), to: storing)
            #expect(emulator.counters.broadcasts == 3 && emulator.counters.rejected["BadExpirationDate"] == 1)
        }
    }

    @Test("a stored message (policy 1) reaches a device that comes online within 8 hours; not after, and never on policy 0")
    func storedMessage() async throws {
        try await harness.run { emulator, client in
            let early = try liveActivityDevice(emulator, "44")
            let late = try liveActivityDevice(emulator, "55")
            let storing = try await client.createChannel(bundleID: app, storagePolicy: .mostRecentMessageStored).value.id
            let noStorage = try await client.createChannel(bundleID: app, storagePolicy: .noMessageStored).value.id
            for device in [early, late] {
                try emulator.subscribe(device, to: storing.rawValue)
                try emulator.subscribe(device, to: noStorage.rawValue)
                try emulator.setOnline(device, false)
            }
            try await client.broadcast(update("old"), to: storing)
            try await client.broadcast(update("newest"), to: storing)
            try await client.broadcast(update("live only"), to: noStorage)

            harness.clock.advance(by: .seconds(7 * 3600 + 3599))
            try emulator.setOnline(early, true)
            let inbox = try emulator.inbox(for: early)
            #expect(inbox.count == 1, "only the newest message of the storing channel")
            #expect(try JSONValue(parsing: inbox[0].payload)["aps"]?["content-state"] == ["score": "newest"])
            #expect(inbox[0].channelID == storing.rawValue)

            harness.clock.advance(by: .seconds(2))
            try emulator.setOnline(late, true)
            #expect(try emulator.inbox(for: late).isEmpty, "8 hours and a second later the message is gone")
        }
    }

    @Test("a stored message lives until its apns-expiration when that is sooner than 8 hours")
    func storedMessageExpiration() async throws {
        try await harness.run { emulator, client in
            let device = try liveActivityDevice(emulator, "66")
            let storing = try await client.createChannel(bundleID: app, storagePolicy: .mostRecentMessageStored).value.id
            try emulator.subscribe(device, to: storing.rawValue)
            try emulator.setOnline(device, false)
            let inOneHour = APNSExpiration.at(harness.clock.now().addingTimeInterval(3600))
            try await client.broadcast(update("soon stale", expiration: inOneHour), to: storing)
            harness.clock.advance(by: .seconds(3601))
            try emulator.setOnline(device, true)
            #expect(try emulator.inbox(for: device).isEmpty)
        }
    }

    @Test("the Live Activity budget: priority-10 updates over it are accepted, dropped on the device and counted; priority 5 is free")
    func budget() async throws {
        var configuration = harness.emulatorConfiguration()
        configuration.liveActivityBudget = 2
        try await harness.run(emulator: configuration) { emulator, client in
            let device = try liveActivityDevice(emulator, "77")
            let channel = try await client.createChannel(bundleID: app, storagePolicy: .noMessageStored).value.id
            try emulator.subscribe(device, to: channel.rawValue)
            for score in ["1", "2", "3"] { try await client.broadcast(update(score), to: channel) }
            try await client.broadcast(update("4", priority: .considerPower), to: channel)
            #expect(try emulator.inbox(for: device).count == 3)
            #expect(emulator.counters.liveActivityBudgetDropped == 1)
            #expect(emulator.liveActivityBudgetUse() == [
                LiveActivityBudgetUse(token: device, activity: "channel:\(channel)", usedThisHour: 2, dropped: 1),
            ])
            // Device-token updates are another activity with their own budget.
            let push = try PushNotification(
                Payload(aps: APS(contentState: ["score": "5"], timestamp: 1_767_312_001, event: .update)), pushType: .liveactivity,
                topic: activityTopic).prepare()
            for _ in 0..<3 { #expect(await client.send(push, to: device).outcome.isAccepted) }
            #expect(emulator.counters.liveActivityBudgetDropped == 2)
            // An hour later the budget is whole again.
            harness.clock.advance(by: .seconds(3600))
            try await client.broadcast(update("6"), to: channel)
            #expect(try emulator.inbox(for: device).count == 6)
        }
    }

    @Test("the §5.5 reasons the typed sender can meet, each from the emulator", arguments: [
        APNSReason.channelNotRegistered, .badChannelID, .cannotCreateChannelConfig, .featureNotEnabled, .topicDisallowed,
        .topicMismatch, .badExpirationDate, .payloadTooLarge, .payloadEmpty, .badRequestPayload, .badPriority,
        .invalidProviderToken,
    ])
    func reasons(_ reason: APNSReason) async throws {
        var configuration = harness.emulatorConfiguration()
        configuration.channels = .init(limitPerApp: 1, enabledBundleIDs: reason == .featureNotEnabled ? ["com.other.enabled"] : nil)
        var credentials: APNSCredentials?
        if reason == .invalidProviderToken {
            credentials = .token(ProviderTokenCache(key: TestSigningKeys.make(keyID: "ZZZ999YYYX", teamID: "DEF123GHIJ"), clock: harness.clock))
        }
        try await harness.run(emulator: configuration, client: { harness.clientConfiguration($0, credentials: credentials) }) { emulator, client in
            let policy: APNSMessageStoragePolicy = .noMessageStored
            var channel = APNSChannelID("dGVzdC1jaGFubmVsLWlk")!
            if ![.featureNotEnabled, .invalidProviderToken, .channelNotRegistered, .badChannelID].contains(reason) {
                channel = try await client.createChannel(bundleID: app, storagePolicy: policy).value.id
            }
            func raw(_ body: [UInt8], priority: APNSPriority? = nil) -> PreparedBroadcast {
                PreparedBroadcast(body: body, bundleID: app, priority: priority, expiration: nil, requestID: nil)
            }
            let valid = Array(#"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#.utf8)
            let error: APNSChannelError? = switch reason {
            case .channelNotRegistered: await rejection { _ = try await client.channel(channel, bundleID: app) }
            case .badChannelID: await rejection { _ = try await client.deleteChannel(APNSChannelID("not*base64")!, bundleID: app) }
            case .cannotCreateChannelConfig: await rejection { _ = try await client.createChannel(bundleID: app, storagePolicy: policy) }
            case .featureNotEnabled, .invalidProviderToken: await rejection { _ = try await client.channels(bundleID: app) }
            case .topicDisallowed: await rejection { _ = try await client.channels(bundleID: activityTopic) }
            case .topicMismatch: await rejection { _ = try await client.createChannel(bundleID: "com.other.app", storagePolicy: policy) }
            case .badExpirationDate: await rejection { try await client.broadcast(update("x", expiration: .after(.seconds(60))), to: channel) }
            case .payloadTooLarge: await rejection { try await client.broadcast(raw(valid + Array(repeating: 0x20, count: 5121 - valid.count)), to: channel) }
            case .payloadEmpty: await rejection { try await client.broadcast(raw([]), to: channel) }
            case .badRequestPayload: await rejection { try await client.broadcast(raw(Array("not json".utf8)), to: channel) }
            case .badPriority: await rejection { try await client.broadcast(raw(valid, priority: .prioritizePowerOver), to: channel) }
            default: nil
            }
            let rejected = try #require(error)
            #expect(rejected.code == .rejected)
            #expect(rejected.reason == reason)
            #expect(rejected.rejection?.status == reason.status)
            #expect(rejected.attempts == 1, "4xx are never retried")
            #expect(rejected.requestID.flatMap(APNSID.init(headerValue:)) != nil, "the rejection keeps apns-request-id")
            #expect(emulator.counters.rejected[reason.rawValue] == 1)
        }
    }

    @Test("exactly 5,120 bytes are accepted on a broadcast; the client checks what it can before sending")
    func payloadLimit() async throws {
        try await harness.run { emulator, client in
            let channel = try await client.createChannel(bundleID: app, storagePolicy: .noMessageStored).value.id
            let prefix = #"{"aps":{"event":"update","timestamp":1,"content-state":{"s":""#
            let suffix = #""}}}"#
            let body = prefix + String(repeating: "a", count: BroadcastNotification.maximumPayloadSize - prefix.utf8.count - suffix.utf8.count) + suffix
            let exact = BroadcastNotification(body: .raw(Array(body.utf8)), bundleID: app)
            try await client.broadcast(exact, to: channel)
            let tooLarge = BroadcastNotification(body: .raw(Array((body.dropLast(3) + #"a"}}}"#).utf8)), bundleID: app)
            let invalid = await rejection { try await client.broadcast(tooLarge, to: channel) }
            #expect(invalid?.code == .invalidRequest && invalid?.attempts == 0)
            let start = BroadcastNotification(body: .raw(Array(#"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{},"alert":{"title":"t"}}}"#.utf8)), bundleID: app)
            #expect(await rejection { try await client.broadcast(start, to: channel) }?.code == .invalidRequest)
            #expect(emulator.counters.broadcasts == 1 && emulator.counters.totalRejected == 0)
        }
    }

    @Test("503 is retried with backoff like a device push, up to the policy's attempts; ExpiredProviderToken once with a fresh JWT")
    func retries() async throws {
        let configuration = harness.emulatorConfiguration(faults: FaultConfiguration(serviceUnavailable: 1))
        try await harness.run(emulator: configuration, client: {
            harness.clientConfiguration($0, retry: RetryPolicy(maximumAttempts: 3, initialBackoff: .milliseconds(10)))
        }) { emulator, client in
            let failed = await rejection { _ = try await client.channels(bundleID: app) }
            #expect(failed?.reason == .serviceUnavailable && failed?.attempts == 3)
            try emulator.setFaults(FaultConfiguration())
            #expect(try await client.channels(bundleID: app).attempts == 1)
        }
        // A token signed 65 minutes ago (APNs: expired) that the cache, 20 minutes on, may replace once.
        let signer = ManualWallClock(harness.clock.now().addingTimeInterval(-65 * 60))
        let tokens = ProviderTokenCache(key: harness.key, clock: signer)
        _ = tokens.currentToken()
        signer.advance(by: .seconds(20 * 60))
        try await harness.run(client: { harness.clientConfiguration($0, credentials: .token(tokens)) }) { emulator, client in
            let reply = try await client.createChannel(bundleID: app, storagePolicy: .noMessageStored)
            #expect(reply.attempts == 2)
            #expect(emulator.counters.rejected["ExpiredProviderToken"] == 1)
        }
    }

    @Test("ids are random base64, never reissued after a delete, and do not cross environments")
    func ids() async throws {
        try await harness.run { emulator, client in
            var seen = Set<String>()
            for _ in 0..<20 {
                let id = try await client.createChannel(bundleID: app, storagePolicy: .noMessageStored).value.id
                #expect(seen.insert(id.rawValue).inserted)
                try await client.deleteChannel(id, bundleID: app)
            }
            #expect(try await client.channels(bundleID: app).value.isEmpty)
            let kept = try await client.createChannel(bundleID: app, storagePolicy: .noMessageStored).value.id
            #expect(!seen.contains(kept.rawValue))
            try await APNSClient.withClient(configuration: harness.clientConfiguration(emulator, environment: .production)) { production in
                let refused = await rejection { _ = try await production.channel(kept, bundleID: app) }
                #expect(refused?.reason == .channelNotRegistered)
                let listed = try await production.channels(bundleID: app).value
                #expect(listed.isEmpty)
            }
        }
    }

    @Test("request headers: the channel id travels in apns-channel-id, never in the path; DELETE and GET are encoded")
    func wire() throws {
        var encoder = HPACKRequestEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        let template = APNSHeaderTemplate(fields: [.init(":authority", "localhost"), .init("apns-channel-id", "dGVzdA==")])
        for (method, name) in [(APNSRequestTarget.Method.delete, "DELETE"), (.get, "GET"), (.post, "POST")] {
            var block = ByteBuffer()
            encoder.encode(template: template, method: method, path: "/1/apps/com.example.app/channels", requestID: "r-\(name)", into: &block)
            let headers = try decoder.decodeHeaders(from: &block)
            #expect(Array(headers.map(\.value)) == [name, "https", "/1/apps/com.example.app/channels", "localhost", "dGVzdA==", "r-\(name)"])
            #expect(headers.first(name: "apns-request-id") == "r-\(name)")
        }
    }
}
