import Foundation
@testable import HeraldAPNS
import HeraldCore
import HeraldHTTP2
import NIOCore
import NIOEmbedded
import NIOHPACK
import Synchronization
import Testing

/// The sender's HTTP/2 client handler frame by frame, against a scripted server on an `EmbeddedChannel`.
@Suite("Sender: HTTP/2 framing and flow control")
struct ConnectionHandlerTests {
    /// What the handler told the pool and the senders.
    final class Recorder: Sendable {
        let streamLimits = Mutex<[Int]>([])
        let goAways = Mutex<[String?]>([])
        let closed = Mutex(false)
        let responses = Mutex<[String: Result<APNSResponse, APNSClientError>]>([:])

        var events: APNSConnectionHandler.Events {
            APNSConnectionHandler.Events(
                streamLimitChanged: { limit in self.streamLimits.withLock { $0.append(limit) } },
                goingAway: { reason in self.goAways.withLock { $0.append(reason) } },
                streamsIdle: {},
                closed: { self.closed.withLock { $0 = true } })
        }

        func response(_ apnsID: String) -> Result<APNSResponse, APNSClientError>? { responses.withLock { $0[apnsID] } }
    }

    /// A connected handler whose preface has been read off, with the server's first SETTINGS delivered.
    struct Connection {
        let channel = EmbeddedChannel()
        let handler: APNSConnectionHandler
        let recorder = Recorder()
        var reader = HTTP2FrameReader(maxFrameSize: 1 << 20)
        var serverEncoder = HPACKEncoder(allocator: ByteBufferAllocator())
        let template = APNSHeaderTemplate(fields: [
            .init(":authority", "api.push.apple.com"), .init("authorization", "bearer abc.def.ghi"),
            .init("apns-push-type", "alert"), .init("apns-topic", "com.example.app"),
        ])
        let token = try! DeviceToken(hex: String(repeating: "ab", count: 32))

        init(serverSettings: [(HTTP2SettingID, Int)] = [(.maxConcurrentStreams, 1000)], limits: HTTP2Limits = HTTP2Limits(),
             expectAcknowledgement: Bool = true) throws {
            handler = APNSConnectionHandler(events: recorder.events, requestTimeout: .seconds(30), pingInterval: .seconds(60), limits: limits)
            try channel.pipeline.syncOperations.addHandler(handler)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
            var preface = try #require(try channel.readOutbound(as: ByteBuffer.self))
            #expect(preface.readBytes(length: HTTP2Protocol.clientPreface.count) == HTTP2Protocol.clientPreface)
            reader.append(preface)
            let settings = try #require(try reader.nextFrame())
            #expect(settings.knownType == .settings && !settings.has(HTTP2Flags.ack))
            var wire = ByteBuffer()
            wire.writeHTTP2Settings(serverSettings)
            try serve(wire)
            guard expectAcknowledgement else { return }
            let ack = try #require(try frames().first)
            #expect(ack.knownType == .settings && ack.has(HTTP2Flags.ack))
        }

        /// The error code of the GOAWAY the client wrote, and its debug text.
        mutating func goAway() throws -> (code: UInt32, text: String)? {
            guard let frame = try frames().last(where: { $0.knownType == .goAway }) else { return nil }
            var payload = frame.payload
            payload.moveReaderIndex(forwardBy: 4)
            let code = payload.readInteger(as: UInt32.self)!
            return (code, String(buffer: payload))
        }

        func serve(_ bytes: ByteBuffer) throws {
            try channel.writeInbound(bytes)
        }

        /// Every frame the client wrote since the last call.
        mutating func frames() throws -> [HTTP2Frame] {
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) { reader.append(buffer) }
            var frames: [HTTP2Frame] = []
            while let frame = try reader.nextFrame() { frames.append(frame) }
            return frames
        }

        func send(_ apnsID: String, body: [UInt8]) {
            let recorder = self.recorder
            handler.write([APNSStreamRequest(template: template, token: token, apnsID: apnsID, body: ByteBuffer(bytes: body)) { result in
                recorder.responses.withLock { $0[apnsID] = result }
            }])
        }

        /// Opens a stream with a small body for each id and reads the frames off.
        mutating func open(_ apnsIDs: String...) throws {
            for apnsID in apnsIDs { send(apnsID, body: Array("{}".utf8)) }
            _ = try frames()
        }

        func failure(_ apnsID: String) -> APNSClientError? {
            if case .failure(let error)? = recorder.response(apnsID) { error } else { nil }
        }

        mutating func respond(streamID: UInt32, status: String, apnsID: String, body: String? = nil) throws {
            var block = ByteBuffer()
            try serverEncoder.encode(headers: [":status": status, "apns-id": apnsID], to: &block)
            var wire = ByteBuffer()
            wire.writeHTTP2Headers(streamID: streamID, block: block, endStream: body == nil)
            if let body { wire.writeHTTP2Data(streamID: streamID, bytes: Array(body.utf8), endStream: true) }
            try serve(wire)
        }
    }

    @Test("a request is HEADERS then DATA; the response completes it with status, apns-id and body")
    func requestAndResponse() throws {
        var connection = try Connection()
        #expect(connection.recorder.streamLimits.withLock { $0 } == [1000])
        connection.send("id-1", body: Array("{\"aps\":{}}".utf8))
        let frames = try connection.frames()
        #expect(frames.map(\.knownType) == [.headers, .data])
        #expect(frames[0].streamID == 1 && frames[0].has(HTTP2Flags.endHeaders) && !frames[0].has(HTTP2Flags.endStream))
        #expect(frames[1].has(HTTP2Flags.endStream) && String(buffer: frames[1].payload) == "{\"aps\":{}}")
        var block = frames[0].payload
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        let headers = try decoder.decodeHeaders(from: &block)
        #expect(headers.map(\.name) == [":method", ":scheme", ":path", ":authority", "authorization", "apns-push-type", "apns-topic", "apns-id"])
        #expect(headers.first(name: ":path") == "/3/device/" + String(repeating: "ab", count: 32))
        #expect(headers.first(name: "apns-id") == "id-1")

        try connection.respond(streamID: 1, status: "400", apnsID: "id-1", body: #"{"reason":"BadTopic"}"#)
        let response = try #require(try connection.recorder.response("id-1")?.get())
        #expect(response.status == 400 && response.apnsID == "id-1")
        #expect(response.body.map { String(buffer: $0) } == #"{"reason":"BadTopic"}"#)
    }

    @Test("bodies wait for the server's stream and connection windows and go out as WINDOW_UPDATEs arrive")
    func sendWindows() throws {
        // A stream window of 100 bytes: a 250-byte body goes out 100, then as the server grants more.
        var connection = try Connection(serverSettings: [(.maxConcurrentStreams, 10), (.initialWindowSize, 100)])
        connection.send("small-window", body: Array(repeating: UInt8(ascii: "x"), count: 250))
        var frames = try connection.frames()
        #expect(frames.map(\.knownType) == [.headers, .data])
        #expect(frames[1].payload.readableBytes == 100 && !frames[1].has(HTTP2Flags.endStream))
        var wire = ByteBuffer()
        wire.writeHTTP2WindowUpdate(streamID: 1, increment: 120)
        try connection.serve(wire)
        frames = try connection.frames()
        #expect(frames.map(\.payload.readableBytes) == [120] && !frames[0].has(HTTP2Flags.endStream))
        // Raising the initial window grows open streams' windows too (RFC 9113 §6.9.2).
        wire.clear()
        wire.writeHTTP2Settings([(.initialWindowSize, 200)])
        try connection.serve(wire)
        frames = try connection.frames()
        #expect(frames.map(\.knownType) == [.settings, .data])
        #expect(frames[1].payload.readableBytes == 30 && frames[1].has(HTTP2Flags.endStream))
    }

    @Test("the connection window is shared: a large body blocks on it until the server opens it")
    func connectionWindow() throws {
        var connection = try Connection(serverSettings: [(.maxConcurrentStreams, 10), (.initialWindowSize, 1 << 20)])
        connection.send("big", body: Array(repeating: UInt8(ascii: "y"), count: 70_000))
        var frames = try connection.frames()
        // 65,535 bytes of connection window in frames of at most 16,384 bytes.
        #expect(frames.dropFirst().map(\.payload.readableBytes) == [16_384, 16_384, 16_384, 16_383])
        connection.send("next", body: Array("{}".utf8))
        frames = try connection.frames()
        #expect(frames.map(\.knownType) == [.headers], "no window left for the next body either")
        var wire = ByteBuffer()
        wire.writeHTTP2WindowUpdate(streamID: 0, increment: 10_000)
        try connection.serve(wire)
        frames = try connection.frames()
        // The older stream first: its remaining 4,465 bytes, then the new one's 2.
        #expect(frames.map(\.streamID) == [1, 3])
        #expect(frames.map(\.payload.readableBytes) == [4_465, 2] && frames.allSatisfy { $0.has(HTTP2Flags.endStream) })
    }

    @Test("response data is acknowledged with WINDOW_UPDATEs; PING and SETTINGS are acknowledged")
    func acknowledgements() throws {
        var connection = try Connection()
        var wire = ByteBuffer()
        wire.writeHTTP2Ping(42, ack: false)
        wire.writeHTTP2Settings([(.maxConcurrentStreams, 5)])
        try connection.serve(wire)
        var frames = try connection.frames()
        #expect(frames.map(\.knownType) == [.ping, .settings])
        #expect(frames[0].has(HTTP2Flags.ack) && frames[0].payload.getInteger(at: frames[0].payload.readerIndex, as: UInt64.self) == 42)
        #expect(connection.recorder.streamLimits.withLock { $0 } == [1000, 5])

        try connection.open("chatty")
        var block = ByteBuffer()
        try connection.serverEncoder.encode(headers: [":status": "200"], to: &block)
        wire.clear()
        wire.writeHTTP2Headers(streamID: 1, block: block, endStream: false)
        for _ in 0..<3 { wire.writeHTTP2Data(streamID: 1, bytes: Array(repeating: UInt8(0x20), count: 12_000), endStream: false) }
        try connection.serve(wire)
        frames = try connection.frames()
        #expect(frames.map(\.knownType) == [.windowUpdate, .windowUpdate])
        #expect(Set(frames.map(\.streamID)) == [0, 1])
        #expect(frames.allSatisfy { $0.payload.getInteger(at: $0.payload.readerIndex, as: UInt32.self) == 36_000 })
    }

    @Test("GOAWAY: streams above last-stream-id fail as not processed, the others still complete")
    func goAway() throws {
        var connection = try Connection()
        try connection.open("first", "second")
        var wire = ByteBuffer()
        wire.writeHTTP2GoAway(lastStreamID: 1, error: .noError, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
        try connection.serve(wire)
        #expect(connection.recorder.goAways.withLock { $0 } == ["Shutdown"])
        #expect(connection.failure("second")?.code == .notProcessed)
        connection.send("third", body: [])
        #expect(connection.failure("third")?.code == .notProcessed, "no new streams after GOAWAY")
        try connection.respond(streamID: 1, status: "200", apnsID: "first")
        #expect(try connection.recorder.response("first")?.get().status == 200)
        #expect(!connection.channel.isActive, "the last stream finished, so the connection closed")
    }

    @Test("a protocol violation closes the connection with a GOAWAY and fails streams with the reason")
    func protocolError() throws {
        var connection = try Connection()
        try connection.open("victim")
        var wire = ByteBuffer()
        wire.writeHTTP2Data(streamID: 0, bytes: [1, 2, 3], endStream: false)
        try connection.serve(wire)
        let frames = try connection.frames()
        #expect(frames.last?.knownType == .goAway)
        #expect(frames.last.flatMap { $0.payload.getInteger(at: $0.payload.readerIndex + 4, as: UInt32.self) } == HTTP2ErrorCode.protocolError.rawValue)
        #expect(!connection.channel.isActive && connection.recorder.closed.withLock { $0 })
        let error = try #require(connection.failure("victim"))
        #expect(error.code == .connectionClosed && error.message.contains("PROTOCOL_ERROR") && error.message.contains("DATA on stream 0"))
    }

    @Test("REFUSED_STREAM is safe to resend; other resets are not")
    func resets() throws {
        var connection = try Connection()
        try connection.open("refused", "cancelled")
        var wire = ByteBuffer()
        wire.writeHTTP2RSTStream(streamID: 1, error: .refusedStream)
        wire.writeHTTP2RSTStream(streamID: 3, error: .internalError)
        try connection.serve(wire)
        #expect(connection.failure("refused")?.code == .notProcessed)
        let reset = try #require(connection.failure("cancelled"))
        #expect(reset.code == .connectionClosed && reset.message.contains("INTERNAL_ERROR"))
    }

    @Test("the request encoder indexes a template's fields once and follows the peer's table size")
    func requestEncoder() throws {
        let template = APNSHeaderTemplate(fields: [
            .init(":authority", "api.push.apple.com"), .init("authorization", "bearer " + String(repeating: "j", count: 200)),
            .init("apns-topic", "com.example.app"), .init("apns-expiration", "1767312000", indexable: false),
        ])
        var encoder = HPACKRequestEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var blocks: [ByteBuffer] = []
        for index in 0..<3 {
            var block = ByteBuffer()
            encoder.encode(template: template, tokenHex: "abcd", apnsID: "id-\(index)", into: &block)
            blocks.append(block)
            let headers = try decoder.decodeHeaders(from: &block)
            #expect(Array(headers.map(\.value)) == ["POST", "https", "/3/device/abcd", "api.push.apple.com", "bearer " + String(repeating: "j", count: 200),
                                                     "com.example.app", "1767312000", "id-\(index)"])
        }
        #expect(blocks[1].readableBytes < blocks[0].readableBytes - 200, "the JWT became an index")
        #expect(blocks[1].readableBytes == blocks[2].readableBytes)
        // The same fields in another template object still hit the table.
        var other = ByteBuffer()
        encoder.encode(template: APNSHeaderTemplate(fields: template.fields), tokenHex: "abcd", apnsID: "id-9", into: &other)
        #expect(other.readableBytes == blocks[1].readableBytes)
        _ = try decoder.decodeHeaders(from: &other)
        // A server that allows no table: the encoder announces the change and sends literals only.
        encoder.peerMaximumSizeChanged(to: 0)
        var literal = ByteBuffer()
        encoder.encode(template: template, tokenHex: "abcd", apnsID: "id-10", into: &literal)
        #expect(literal.readableBytes > blocks[0].readableBytes - 10)
        let headers = try decoder.decodeHeaders(from: &literal)
        #expect(headers.first(name: "authorization") == "bearer " + String(repeating: "j", count: 200))
    }

    @Test("RFC 9113 §6.5.2: SETTINGS_ENABLE_PUSH=1 from the server ends the connection with PROTOCOL_ERROR")
    func enablePushFromServer() throws {
        var connection = try Connection(serverSettings: [(.enablePush, 1)], expectAcknowledgement: false)
        let goAway = try #require(try connection.goAway())
        #expect(goAway.code == HTTP2ErrorCode.protocolError.rawValue && goAway.text.contains("ENABLE_PUSH"))
        #expect(!connection.channel.isActive)
    }

    @Test("RFC 9113 §6.9.2: an INITIAL_WINDOW_SIZE that takes an open stream's window above 2^31-1 is a FLOW_CONTROL_ERROR")
    func initialWindowOverflow() throws {
        var connection = try Connection(serverSettings: [(.maxConcurrentStreams, 10), (.initialWindowSize, 0)])
        connection.send("waiting", body: Array("{}".utf8))
        _ = try connection.frames()
        var wire = ByteBuffer()
        // The 2-byte body goes out on the update, leaving 2^31-3; a larger initial window by 10 overflows it.
        wire.writeHTTP2WindowUpdate(streamID: 1, increment: 0x7FFF_FFFF)
        wire.writeHTTP2Settings([(.initialWindowSize, 10)])
        try connection.serve(wire)
        let goAway = try #require(try connection.goAway())
        #expect(goAway.code == HTTP2ErrorCode.flowControlError.rawValue)
        #expect(connection.failure("waiting")?.message.contains("FLOW_CONTROL_ERROR") == true)
    }

    @Test("RFC 9113 §6.10: more than five CONTINUATION frames in a response header block end the connection, ENHANCE_YOUR_CALM")
    func continuationFlood() throws {
        var connection = try Connection()
        try connection.open("flooded")
        var wire = ByteBuffer()
        wire.writeHTTP2FrameHeader(length: 0, type: .headers, streamID: 1)
        for _ in 0..<6 { wire.writeHTTP2FrameHeader(length: 0, type: .continuation, streamID: 1) }
        try connection.serve(wire)
        let goAway = try #require(try connection.goAway())
        #expect(goAway.code == HTTP2ErrorCode.enhanceYourCalm.rawValue && goAway.text.contains("CONTINUATION"))
    }

    @Test("PING acknowledgements owed while the channel is not writable are bounded: past the limit, GOAWAY ENHANCE_YOUR_CALM")
    func bufferedControlFrames() throws {
        var limits = HTTP2Limits()
        limits.maxBufferedControlFrames = 10
        limits.controlFrames.maximumCount = 1000
        var connection = try Connection(limits: limits)
        connection.channel.isWritable = false
        connection.channel.pipeline.fireChannelWritabilityChanged()
        var wire = ByteBuffer()
        for index in 0..<11 { wire.writeHTTP2Ping(UInt64(index), ack: false) }
        try connection.serve(wire)
        let goAway = try #require(try connection.goAway())
        #expect(goAway.code == HTTP2ErrorCode.enhanceYourCalm.rawValue && goAway.text.contains("does not read"))
    }

    @Test("a response header list far over the limit fails the streams as too large, not as undecodable")
    func headerListTooLarge() throws {
        var connection = try Connection()
        try connection.open("bombed")
        var block = ByteBuffer()
        block.writeHPACKIndexed(HPACKStaticIndex.status200)
        block.writeInteger(UInt8(0x40))
        block.writeHPACKString(Array("x-bomb".utf8))
        block.writeHPACKString([UInt8](repeating: 0x61, count: 4000))
        for _ in 0..<20 { block.writeHPACKIndexed(62) }
        var wire = ByteBuffer()
        wire.writeHTTP2Headers(streamID: 1, block: block, endStream: true)
        try connection.serve(wire)
        let error = try #require(connection.failure("bombed"))
        #expect(error.message.contains("header list too large") && !error.message.contains("decod"))
    }

    @Test("RFC 7541 §4.2: a table size that went down and back up is announced smallest first, then final")
    func tableSizeUpdates() throws {
        let template = APNSHeaderTemplate(fields: [.init(":authority", "api.push.apple.com"), .init("apns-topic", "com.example.app")])
        var encoder = HPACKRequestEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var first = ByteBuffer()
        encoder.encode(template: template, tokenHex: "abcd", apnsID: "id-0", into: &first)
        _ = try decoder.decodeHeaders(from: &first)
        encoder.peerMaximumSizeChanged(to: 0)
        encoder.peerMaximumSizeChanged(to: 4096)
        var block = ByteBuffer()
        encoder.encode(template: template, tokenHex: "abcd", apnsID: "id-1", into: &block)
        #expect(block.getInteger(at: block.readerIndex, as: UInt8.self) == 0x20, "a size update to 0 first")
        #expect(block.getInteger(at: block.readerIndex + 1, as: UInt8.self) == 0x3F, "then 4,096")
        // The decoder emptied its table too, so the encoder's new indices mean the same to both.
        for index in 1...40 {
            if index > 1 {
                block.clear()
                encoder.encode(template: APNSHeaderTemplate(fields: [.init("apns-collapse-id", "c\(index)")] + template.fields),
                               tokenHex: "abcd", apnsID: "id-\(index)", into: &block)
            }
            let headers = try decoder.decodeHeaders(from: &block)
            #expect(headers.first(name: "apns-topic") == "com.example.app")
            #expect(headers.first(name: "apns-id") == "id-\(index)")
        }
    }

    @Test("a stream the server never answers fails with a timeout once the event loop's clock passes its deadline, and is reset with CANCEL")
    func requestTimeout() throws {
        var connection = try Connection()
        try connection.open("never-answered")
        connection.channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        #expect(connection.recorder.response("never-answered") == nil, "not before the 30 s timeout")
        connection.channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(connection.failure("never-answered")?.code == .timeout)
        let reset = try #require(try connection.frames().first { $0.knownType == .rstStream })
        #expect(reset.streamID == 1 && reset.resetCode == HTTP2ErrorCode.cancel.rawValue)
    }

    @Test("apns-ids are lowercase version-4 UUIDs and do not repeat")
    func apnsIDs() {
        let generator = APNSIDGenerator(seed: 5)
        let ids = (0..<1000).map { _ in generator.next() }
        #expect(Set(ids).count == 1000)
        for id in ids.prefix(20) {
            #expect(APNSID(headerValue: id)?.headerValue == id)
            #expect(Array(id)[14] == "4" && "89ab".contains(Array(id)[19]))
        }
        #expect(APNSID.headerValue(high: 0, low: 0) == "00000000-0000-4000-8000-000000000000")
    }
}
