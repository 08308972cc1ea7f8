import Foundation
import HeraldClient
import HeraldCore
import HeraldTesting
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Delivery receipts in the SDK: read from the payload's `herald` key, queued on disk, sent in batches to
/// `POST /api/events` and retried like registrations.
@Suite("Delivery receipts against a loopback server", .timeLimit(.minutes(1)))
struct ReceiptTests {
    static let sendID = UUID(uuidString: "5a0e7c4e-1f2b-4c3d-9e8f-0123456789ab")!
    static let payload = try! Payload(
        jsonBytes: Array(#"{"aps": {"alert": "Hi"}, "herald": {"send": "5a0e7c4e-1f2b-4c3d-9e8f-0123456789ab"}}"#.utf8))
    static let tokenHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

    /// A client whose storage already holds a registered token (as after `register`).
    static func client(of server: LoopbackHTTPServer, storage: InMemoryStorage = InMemoryStorage(), attempts: Int = 2)
        throws -> RegistrationClient
    {
        try storage.set(Data(tokenHex.utf8), forKey: "herald.registered-token")
        return try RegistrationClientTests.client(of: server, storage: storage, attempts: attempts)
    }

    static func events(_ request: LoopbackHTTPServer.Request) -> [JSONValue] {
        (try? JSONValue(parsing: request.body))?["events"]?.arrayValue ?? []
    }

    @Test("the send id comes from the herald key; payloads without one make no receipt")
    func heraldKey() throws {
        #expect(Self.payload.heraldSendID == Self.sendID)
        let token = try DeviceToken(hex: Self.tokenHex)
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        #expect(DeliveryReceipt(.opened, for: Self.payload, token: token, at: at)?.sendID == Self.sendID)
        for json in [#"{"aps": {"alert": "Hi"}}"#, #"{"herald": "5a0e7c4e-1f2b-4c3d-9e8f-0123456789ab"}"#, #"{"herald": {"send": 1}}"#] {
            let payload = try Payload(jsonBytes: Array(json.utf8))
            #expect(payload.heraldSendID == nil && DeliveryReceipt(.received, for: payload, token: token, at: at) == nil)
        }
    }

    @Test("responses map to events: tap is opened, a button is action with its identifier, dismiss is dismissed")
    func responses() async throws {
        try await withLoopbackServer({ _, _ in .respond(.json(200, #"{"recorded":1,"duplicates":0,"ignored":0}"#)) }) {
            server async throws in
            let reporter = ReceiptReporter(client: try Self.client(of: server))
            let accept = NotificationAction(identifier: "accept", title: "Accept")
            for action in [NotificationResponseAction.open, .action(accept), .dismiss, .unknown("later")] {
                guard case .sent = await reporter.responded(to: Self.payload, with: action) else {
                    Issue.record("not sent: \(action)")
                    return
                }
            }
            guard case .sent = await reporter.received(Self.payload) else {
                Issue.record("not sent")
                return
            }
            let sent = server.requests.flatMap(Self.events)
            #expect(sent.map { $0["type"]?.stringValue } == ["opened", "action", "dismissed", "action", "received"])
            #expect(sent.map { $0["action"]?.stringValue } == [nil, "accept", nil, "later", nil])
            #expect(sent.allSatisfy { $0["token"]?.stringValue == Self.tokenHex && $0["sendId"]?.stringValue == Self.sendID.uuidString.lowercased() })
            #expect(sent.allSatisfy { $0["at"]?.stringValue == "2026-01-01T00:00:00Z" }, "the client's wall clock")
            let request = try #require(server.requests.first)
            #expect(request.method == "POST" && request.path == "/api/events")
            #expect(request.header("X-Herald-Registration-Key") == nil)
        }
    }

    @Test("without a registered token or a herald key nothing is queued or sent")
    func skipped() async throws {
        try await withLoopbackServer({ _, _ in .respond(.json(200, "{}")) }) { server async throws in
            let bare = RegistrationClient(
                configuration: try .init(serverURL: server.baseURL, allowsInsecureHTTP: true), storage: InMemoryStorage())
            guard case .skipped = await ReceiptReporter(client: bare).received(Self.payload) else {
                Issue.record("a device without a token reported")
                return
            }
            let plain = try Payload(jsonBytes: Array(#"{"aps": {"alert": "Hi"}}"#.utf8))
            guard case .skipped = await ReceiptReporter(client: try Self.client(of: server)).received(plain) else {
                Issue.record("a notification without a herald key was reported")
                return
            }
            #expect(server.requests.isEmpty)
        }
    }

    @Test("a server that fails keeps the receipts queued; the next send delivers them all, in batches of 100")
    func retriedFromTheQueue() async throws {
        let failing = Mutex(true)
        try await withLoopbackServer({ _, _ in
            failing.withLock { $0 }
                ? .respond(.json(503, #"{"error":"Starting up","reason":"unavailable"}"#))
                : .respond(.json(200, #"{"recorded":1,"duplicates":0,"ignored":0}"#))
        }) { server async throws in
            let storage = InMemoryStorage()
            let client = try Self.client(of: server, storage: storage)
            let token = try DeviceToken(hex: Self.tokenHex)
            for second in 0..<150 {
                try client.queue(
                    DeliveryReceipt(
                        kind: .action("a\(second)"), token: token, sendID: Self.sendID,
                        at: Date(timeIntervalSince1970: 1_767_225_600 + Double(second))))
            }
            let error = await #expect(throws: RegistrationError.self) { try await client.sendPendingReceipts() }
            #expect(error?.code == .gaveUp && error?.isPendingSaved == true && error?.attempts == 2)
            #expect(try client.pendingReceiptCount() == 150, "nothing was lost")

            failing.withLock { $0 = false }
            // Another client on the same storage (the app, after the extension failed) sends them.
            let app = try Self.client(of: server, storage: storage)
            #expect(try await app.sendPendingReceipts() == 150)
            #expect(try app.pendingReceiptCount() == 0)
            let batches = server.requests.suffix(2).map { Self.events($0).count }
            #expect(batches == [100, 50])
        }
    }

    @Test("a batch the server refuses is dropped: sending it again would get the same answer")
    func refused() async throws {
        try await withLoopbackServer({ _, _ in
            .respond(.json(400, #"{"error":"The field \"events[0].at\" is invalid.","reason":"invalidField"}"#))
        }) { server async throws in
            let client = try Self.client(of: server)
            try client.queue(
                DeliveryReceipt(kind: .opened, token: try DeviceToken(hex: Self.tokenHex), sendID: Self.sendID, at: Date()))
            let error = await #expect(throws: RegistrationError.self) { try await client.sendPendingReceipts() }
            #expect(error?.code == .rejected && error?.reason == "invalidField" && error?.isPendingSaved == false)
            #expect(try client.pendingReceiptCount() == 0)
            #expect(throws: RegistrationError.self) {
                try client.queue(
                    DeliveryReceipt(
                        kind: .action(String(repeating: "x", count: 101)), token: try DeviceToken(hex: Self.tokenHex),
                        sendID: Self.sendID, at: Date()))
            }
        }
    }

    @Test("the queue keeps the newest 500 receipts, on disk, across clients")
    func bounded() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-receipts-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = try RegistrationClient.Configuration(serverURL: URL(string: "https://push.example.com")!)
        let client = RegistrationClient(configuration: configuration, storage: FileStorage(directory: folder))
        let token = try DeviceToken(hex: Self.tokenHex)
        for n in 0..<510 {
            try client.queue(DeliveryReceipt(kind: .action("n\(n)"), token: token, sendID: Self.sendID, at: Date()))
        }
        let reopened = RegistrationClient(configuration: configuration, storage: FileStorage(directory: folder))
        #expect(try reopened.pendingReceiptCount() == 500)
    }

    @Test("the extension's pass queues received and sends it in one attempt after the content is handed over")
    func serviceExtension() async throws {
        try await withLoopbackServer({ _, index in
            index == 0 ? .respond(.json(503, "{}")) : .respond(.json(200, #"{"recorded":1,"duplicates":0,"ignored":0}"#))
        }) { server async throws in
            let storage = InMemoryStorage()
            let processor = NotificationServiceProcessor(
                receipts: ReceiptReporter(client: try Self.client(of: server, storage: storage, attempts: 4)))
            let processed = await processor.process(Self.payload)
            #expect(processed.problems.isEmpty && processed.content.body == "Hi")
            #expect(server.requests.isEmpty, "processing does not wait for the network")
            guard case .queued? = await processor.sendReceipts() else {
                Issue.record("one attempt only")
                return
            }
            #expect(server.requests.count == 1)
            // The app's next start sends what the extension could not.
            let app = try Self.client(of: server, storage: storage)
            #expect(try await app.sendPendingReceipts() == 1)
            #expect(Self.events(try #require(server.requests.last)).first?["type"] == "received")

            let noToken = NotificationServiceProcessor(
                receipts: ReceiptReporter(
                    client: RegistrationClient(
                        configuration: try .init(serverURL: server.baseURL, allowsInsecureHTTP: true),
                        storage: InMemoryStorage())))
            let problems = await noToken.process(Self.payload).problems
            #expect(problems.count == 1 && "\(problems[0])".contains("No token"), "\(problems)")
        }
    }
}
