import Crypto
import Foundation
import HeraldCore
@testable import HeraldEmulator
import HeraldHTTP2
import HeraldTesting
import NIOCore
import Testing

@Suite("Emulator behaviour", .timeLimit(.minutes(2)))
struct EmulatorBehaviourTests {
    let fixture = EmulatorFixture()

    @Test("an accepted push lands in the inbox with its headers and payload, in order")
    func inbox() async throws {
        try await fixture.run { emulator in
            let client = try await fixture.connect(emulator)
            let id = "0c6f1a1e-5b7b-4a4e-9f39-8f3b6f2a1c01"
            for (index, text) in ["first", "second"].enumerated() {
                let (headers, body) = fixture.alert(text, extra: index == 0 ? [("apns-id", id), ("apns-priority", "5"), ("apns-expiration", "1893456000")] : [])
                let response = try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body)
                #expect(response.status == 200)
                if index == 0 { #expect(response.headers["apns-id"] == id) }
            }
            let inbox = try emulator.inbox(for: fixture.developmentDevice)
            #expect(inbox.map(\.payloadString) == [#"{"aps":{"alert":"first"}}"#, #"{"aps":{"alert":"second"}}"#])
            #expect(inbox[0].apnsID == id && inbox[0].priority == 5 && inbox[0].expiration == 1_893_456_000)
            #expect(inbox[0].pushType == "alert" && inbox[0].topic == APNSOutcomeTable.bundleID)
            #expect(inbox[1].apnsID != id && inbox[1].apnsID == inbox[1].apnsID.lowercased())
            try emulator.clearInbox(for: fixture.developmentDevice)
            #expect(try emulator.inbox(for: fixture.developmentDevice).isEmpty)
            await client.close()
        }
    }

    @Test("a newer notification with the same collapse id replaces the older")
    func collapse() async throws {
        try await fixture.run { emulator in
            let client = try await fixture.connect(emulator)
            for (text, collapse) in [("1-0", "score"), ("other", "news"), ("2-0", "score")] {
                let (headers, body) = fixture.alert(text, extra: [("apns-collapse-id", collapse)])
                #expect(try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body).status == 200)
            }
            let inbox = try emulator.inbox(for: fixture.developmentDevice)
            #expect(inbox.map(\.payloadString) == [#"{"aps":{"alert":"other"}}"#, #"{"aps":{"alert":"2-0"}}"#])
            await client.close()
        }
    }

    @Test("an offline device keeps only the newest notification, drops expired and deliver-once ones")
    func offline() async throws {
        try await fixture.run { emulator in
            let client = try await fixture.connect(emulator)
            try emulator.setOnline(fixture.developmentDevice, false)
            let later = Int(fixture.clock.now().timeIntervalSince1970) + 3600
            for (text, expiration) in [("old", later), ("new", later), ("once", 0)] {
                let (headers, body) = fixture.alert(text, extra: [("apns-expiration", String(expiration))])
                #expect(try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body).status == 200)
            }
            #expect(try emulator.inbox(for: fixture.developmentDevice).isEmpty)
            try emulator.setOnline(fixture.developmentDevice, true)
            #expect(try emulator.inbox(for: fixture.developmentDevice).map(\.payloadString) == [#"{"aps":{"alert":"new"}}"#])

            try emulator.setOnline(fixture.developmentDevice, false)
            let (headers, body) = fixture.alert("stale", extra: [("apns-expiration", String(later))])
            _ = try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body)
            fixture.clock.advance(by: .seconds(7200))
            try emulator.setOnline(fixture.developmentDevice, true)
            #expect(try emulator.inbox(for: fixture.developmentDevice).count == 1, "the expired notification never arrives")
            await client.close()
        }
    }

    @Test("inboxes are bounded, and counting mode keeps totals and duplicate apns-ids only")
    func boundsAndCounting() async throws {
        try await fixture.run(fixture.configuration(inbox: .recording(capacity: 3))) { emulator in
            let client = try await fixture.connect(emulator)
            for index in 0..<5 {
                let (headers, body) = fixture.alert("n\(index)")
                _ = try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body)
            }
            #expect(try emulator.inbox(for: fixture.developmentDevice).map(\.payloadString).last == #"{"aps":{"alert":"n4"}}"#)
            #expect(try emulator.inbox(for: fixture.developmentDevice).count == 3)
            #expect(emulator.counters.droppedFromInbox == 2)
            await client.close()
        }
        try await fixture.run(fixture.configuration(mode: .permissive, inbox: .countingOnly)) { emulator in
            let client = try await fixture.connect(emulator)
            let id = UUID().uuidString
            let token = String(repeating: "7a", count: 40)
            for _ in 0..<3 {
                let (headers, body) = fixture.alert(extra: [("apns-id", id)])
                #expect(try await client.send(path: "/3/device/" + token, headers: headers, body: body).status == 200)
            }
            let (headers, body) = fixture.alert()
            _ = try await client.send(path: "/3/device/" + token, headers: headers, body: body)
            #expect(emulator.counters.accepted == 4)
            #expect(emulator.counters.duplicateAPNSIDs == 2)
            #expect(try emulator.inbox(for: DeviceToken(hex: token)).isEmpty)
            #expect(emulator.device(try DeviceToken(hex: token))?.environment == .development, "permissive mode created the device")
            await client.close()
        }
    }

    @Test("MAX_CONCURRENT_STREAMS starts at 1 and is raised after the first authenticated request")
    func streamLimit() async throws {
        try await fixture.run { emulator in
            let client = try await fixture.connect(emulator)
            let (headers, body) = fixture.alert()
            #expect(try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body).status == 200)
            // The raise is written before the response, so it has arrived once the response has.
            #expect(client.events.maxConcurrentStreams == [1, 1000])
            // Many streams at once now work.
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body).status }
                }
                for try await status in group { #expect(status == 200) }
            }
            await client.close()
        }
    }

    @Test("a failed authentication does not raise the stream limit")
    func noRaiseWithoutAuth() async throws {
        try await fixture.run { emulator in
            let client = try await fixture.connect(emulator)
            let response = try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: [("apns-topic", APNSOutcomeTable.bundleID)], body: Array(APNSOutcomeTable.validBody.utf8))
            #expect(response.reason == "MissingProviderToken")
            #expect(client.events.maxConcurrentStreams == [1])
            await client.close()
        }
    }

    @Test("switching provider tokens within 20 minutes on one connection is TooManyProviderTokenUpdates")
    func twentyMinuteRule() async throws {
        try await fixture.run { emulator in
            let client = try await fixture.connect(emulator)
            let path = "/3/device/" + fixture.developmentDevice.hex
            let body = Array(APNSOutcomeTable.validBody.utf8)
            func send(_ authorization: String) async throws -> HTTP2TestClient.Response {
                try await client.send(path: path, headers: [("authorization", authorization), ("apns-topic", APNSOutcomeTable.bundleID)], body: body)
            }
            let first = fixture.bearer
            #expect(try await send(first).status == 200)
            fixture.clock.advance(by: .seconds(10 * 60))
            #expect(try await send(first).status == 200, "the same token may be reused")
            let second = fixture.freshBearer()
            let refused = try await send(second)
            #expect(refused.status == 429 && refused.reason == "TooManyProviderTokenUpdates")
            fixture.clock.advance(by: .seconds(10 * 60))
            #expect(try await send(second).status == 200, "20 minutes after the first token, a new one is fine")
            fixture.clock.advance(by: .seconds(60))
            #expect(try await send(fixture.freshBearer()).reason == "TooManyProviderTokenUpdates")
            await client.close()
        }
    }

    @Test("a connection stays bound to its first key and team; restricted keys stay in their environment")
    func connectionBinding() async throws {
        let sameTeam = TestSigningKeys.make(keyID: "KEY2222222", teamID: "DEF123GHIJ")
        let otherTeam = TestSigningKeys.make(keyID: "KEY3333333", teamID: "OTHERTEAM1")
        let productionOnly = TestSigningKeys.make(keyID: "KEY4444444", teamID: "DEF123GHIJ")
        let configuration = fixture.configuration(extraKeys: [.init(sameTeam), .init(otherTeam), .init(productionOnly, environment: .production)])
        try await fixture.run(configuration) { emulator in
            let path = "/3/device/" + fixture.developmentDevice.hex
            let body = Array(APNSOutcomeTable.validBody.utf8)
            let client = try await fixture.connect(emulator)
            func send(_ key: ProviderSigningKey, on client: HTTP2TestClient) async throws -> HTTP2TestClient.Response {
                try await client.send(path: path, headers: [("authorization", fixture.freshBearer(key)), ("apns-topic", APNSOutcomeTable.bundleID)], body: body)
            }
            #expect(try await send(fixture.key, on: client).status == 200)
            #expect(try await send(sameTeam, on: client).reason == "UnrelatedKeyIdInToken")
            #expect(try await send(otherTeam, on: client).reason == "InvalidProviderToken")
            await client.close()
            let fresh = try await fixture.connect(emulator)
            #expect(try await send(productionOnly, on: fresh).reason == "BadEnvironmentKeyIdInToken")
            #expect(try await send(sameTeam, on: fresh).status == 200, "a new connection binds to whichever key comes first")
            await fresh.close()
        }
    }

    @Test("client certificates from the configured CA authenticate, limited to their app's topics")
    func certificateAuth() async throws {
        let authority = try LocalCertificateAuthority(commonName: "Test Apple WWDR")
        let certificate = try authority.issueClientCertificate(bundleID: APNSOutcomeTable.bundleID)
        try await fixture.run(fixture.configuration(clientCA: authority.certificatePEM)) { emulator in
            let client = try await fixture.connect(emulator, certificate: certificate)
            let path = "/3/device/" + fixture.developmentDevice.hex
            let body = Array(APNSOutcomeTable.validBody.utf8)
            #expect(try await client.send(path: path, headers: [("apns-push-type", "alert")], body: body).status == 200, "no topic: the certificate's app")
            #expect(try await client.send(path: path, headers: [("apns-topic", APNSOutcomeTable.bundleID)], body: body).status == 200)
            #expect(try await client.send(path: path, headers: [("apns-topic", "com.other.app")], body: body).reason == "TopicDisallowed")
            #expect(client.events.maxConcurrentStreams.first == 1000, "certificate connections start at the full limit")
            await client.close()
        }
    }

    @Test("status faults answer every request with their reason and are counted", arguments: [
        (FaultConfiguration(tooManyRequests: 1), 429, "TooManyRequests"),
        (FaultConfiguration(internalServerError: 1), 500, "InternalServerError"),
        (FaultConfiguration(serviceUnavailable: 1), 503, "ServiceUnavailable"),
        (FaultConfiguration(shutdown: 1), 503, "Shutdown"),
    ])
    func statusFaults(faults: FaultConfiguration, status: Int, reason: String) async throws {
        try await fixture.run(fixture.configuration(faults: faults)) { emulator in
            let client = try await fixture.connect(emulator)
            let (headers, body) = fixture.alert()
            for _ in 0..<3 {
                let response = try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body)
                #expect(response.status == status && response.reason == reason)
            }
            #expect(emulator.counters.faults[reason] == 3)
            #expect(try emulator.inbox(for: fixture.developmentDevice).isEmpty)
            // Invalid requests still get their own reason: faults apply to requests APNs would accept.
            let invalid = try await client.send(path: "/3/device/" + fixture.unknownDevice.hex, headers: headers, body: body)
            #expect(invalid.reason == "BadDeviceToken")
            try emulator.setFaults(FaultConfiguration())
            #expect(try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body).status == 200)
            await client.close()
        }
    }

    @Test("GOAWAY after N streams answers the Nth, sends the reason and closes the connection")
    func goAwayAfterStreams() async throws {
        try await fixture.run(fixture.configuration(faults: FaultConfiguration(goAwayAfterStreams: 3))) { emulator in
            let client = try await fixture.connect(emulator)
            let (headers, body) = fixture.alert()
            for _ in 0..<3 {
                #expect(try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body).status == 200)
            }
            await client.waitUntilClosed()
            #expect(client.events.goAways == [#"{"reason":"Shutdown"}"#])
            #expect(emulator.counters.goAways == 1)
            #expect(try emulator.inbox(for: fixture.developmentDevice).count == 3)
            await #expect(throws: (any Error).self) {
                try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body)
            }
        }
    }

    @Test("a reset fault closes the connection without an answer; nothing is delivered")
    func reset() async throws {
        try await fixture.run(fixture.configuration(faults: FaultConfiguration(resetProbability: 1))) { emulator in
            let client = try await fixture.connect(emulator)
            let (headers, body) = fixture.alert()
            await #expect(throws: (any Error).self) {
                try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body)
            }
            #expect(emulator.counters.faults["reset"] == 1)
            #expect(try emulator.inbox(for: fixture.developmentDevice).isEmpty)
        }
    }

    /// Sends an alert on stream 1 and a PING behind it on a raw connection; the frames until the PING's answer. The
    /// PING is read after the request, so its answer means the request was processed.
    private func alertThenPing(_ emulator: APNSEmulator) async throws -> (RawHTTP2Connection, [HTTP2Frame]) {
        let connection = try await RawHTTP2Connection.connect(port: emulator.port(for: .development)!, trustRootPEM: emulator.certificateAuthorityPEM!)
        try await connection.start()
        let (headers, body) = fixture.alert()
        var bytes = ByteBuffer()
        bytes.writeHTTP2Headers(streamID: 1, block: RawHTTP2Connection.requestBlock(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers), endStream: false)
        bytes.writeHTTP2Data(streamID: 1, bytes: body, endStream: true)
        bytes.writeHTTP2Ping(42, ack: false)
        try await connection.write(bytes)
        return (connection, try await connection.frames { $0.knownType == .ping && $0.has(HTTP2Flags.ack) })
    }

    @Test("a stream that is never answered stays open until the client gives up")
    func noResponse() async throws {
        try await fixture.run(fixture.configuration(faults: FaultConfiguration(noResponseProbability: 1))) { emulator in
            let (connection, frames) = try await alertThenPing(emulator)
            #expect(frames.last?.pingData == 42, "the connection is still open")
            #expect(!frames.contains { $0.streamID == 1 }, "no answer, no reset")
            #expect(emulator.counters.faults["noResponse"] == 1)
            #expect(try emulator.inbox(for: fixture.developmentDevice).isEmpty)
            await connection.close()
        }
    }

    @Test("added latency holds an answer back: a PING sent after the request is answered first")
    func latencyHoldsAnswers() async throws {
        // Ten minutes: the PING's round trip cannot take that long, so the order proves the hold without timing.
        try await fixture.run(fixture.configuration(faults: FaultConfiguration(latency: .fixed(milliseconds: 600_000)))) { emulator in
            let (connection, frames) = try await alertThenPing(emulator)
            #expect(!frames.contains { $0.knownType == .headers && $0.streamID == 1 }, "the answer waits for its latency")
            #expect(emulator.counters.accepted == 1, "the request itself was accepted at once")
            await connection.close()
        }
    }

    @Test("an alert push to a .voip topic is DeviceTokenNotForTopic, as APNs answers a topic of another push type")
    func alertToVoIPTopic() async throws {
        try await fixture.run { emulator in
            let client = try await fixture.connect(emulator)
            let response = try await client.send(path: "/3/device/" + fixture.voipDevice.hex, headers: [
                ("authorization", fixture.bearer), ("apns-topic", APNSOutcomeTable.bundleID + ".voip"), ("apns-push-type", "alert"),
            ], body: Array(APNSOutcomeTable.validBody.utf8))
            #expect(response.status == 400 && response.reason == "DeviceTokenNotForTopic")
            // Another app's .voip topic is still one the key may not use.
            let other = try await client.send(path: "/3/device/" + fixture.voipDevice.hex, headers: [
                ("authorization", fixture.bearer), ("apns-topic", "com.other.app.voip"), ("apns-push-type", "alert"),
            ], body: Array(APNSOutcomeTable.validBody.utf8))
            #expect(other.reason == "TopicDisallowed")
            await client.close()
        }
    }

    @Test("an apns-expiration above 2^32-1 (milliseconds by mistake) is BadExpirationDate; 2^32-1 itself is accepted")
    func expirationInMilliseconds() async throws {
        try await fixture.run { emulator in
            let client = try await fixture.connect(emulator)
            let milliseconds = String(Int(fixture.clock.now().timeIntervalSince1970) * 1000)
            let (headers, body) = fixture.alert(extra: [("apns-expiration", milliseconds)])
            let refused = try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body)
            #expect(refused.status == 400 && refused.reason == "BadExpirationDate")
            let (limitHeaders, _) = fixture.alert(extra: [("apns-expiration", String(UInt32.max))])
            #expect(try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: limitHeaders, body: body).status == 200)
            await client.close()
        }
    }

    @Test("a port in use is reported with the port")
    func portInUse() async throws {
        try await fixture.run { emulator in
            let taken = try #require(emulator.port(for: .production))
            var configuration = fixture.configuration()
            configuration.productionPort = taken
            do {
                try await APNSEmulator.withRunning(configuration) { _ in }
                Issue.record("a second emulator bound the same port")
            } catch let error as EmulatorError {
                #expect(error.message.contains("127.0.0.1:\(taken)") && error.message.contains("production"), "\(error.message)")
            }
        }
    }

    @Test("fault decisions and latency are reproducible from the seed")
    func seeded() throws {
        let faults = FaultConfiguration(tooManyRequests: 0.2, internalServerError: 0.1, latency: .uniform(minimumMilliseconds: 50, maximumMilliseconds: 150))
        let first = FaultInjector(configuration: faults, seed: 42)
        let second = FaultInjector(configuration: faults, seed: 42)
        let other = FaultInjector(configuration: faults, seed: 43)
        let a = (0..<1000).map { _ in first.decide() }
        let b = (0..<1000).map { _ in second.decide() }
        let c = (0..<1000).map { _ in other.decide() }
        #expect(a.map(\.0) == b.map(\.0) && a.map(\.1) == b.map(\.1))
        #expect(a.map(\.1) != c.map(\.1))
        #expect(a.allSatisfy { (50...150).contains($0.1) })
        let tooMany = a.filter { $0.0 == .status(.tooManyRequests) }.count
        let internalErrors = a.filter { $0.0 == .status(.internalServerError) }.count
        #expect((120...280).contains(tooMany) && (50...150).contains(internalErrors))
        let fixed = FaultInjector(configuration: FaultConfiguration(latency: .fixed(milliseconds: 100)), seed: 1)
        #expect(fixed.decide().1 == 100)
        #expect(throws: EmulatorError.self) { try FaultConfiguration(tooManyRequests: 0.7, shutdown: 0.5).validated() }
        #expect(throws: EmulatorError.self) { try FaultConfiguration(resetProbability: -1).validated() }
    }

    @Test("added latency still answers every request, whether answers share a due millisecond or not", arguments: [
        FaultConfiguration.Latency.fixed(milliseconds: 20), .uniform(minimumMilliseconds: 1, maximumMilliseconds: 30),
    ])
    func latency(_ latency: FaultConfiguration.Latency) async throws {
        try await fixture.run(fixture.configuration(faults: FaultConfiguration(latency: latency))) { emulator in
            let client = try await fixture.connect(emulator)
            let (headers, body) = fixture.alert()
            #expect(try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body).status == 200)
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<40 {
                    group.addTask { try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body).status }
                }
                for try await status in group { #expect(status == 200) }
            }
            #expect(emulator.counters.accepted == 41)
            await client.close()
        }
    }
}
