import HeraldHTTP2
import NIOCore
import NIOHPACK
import Testing

/// The state machine both endpoints drive, frame by frame, with time passed in.
@Suite("HTTP/2 connection state")
struct HTTP2ConnectionStateTests {
    /// One endpoint's state with the frames it wrote collected.
    struct Endpoint {
        var state: HTTP2ConnectionState
        var out = ByteBuffer()
        var now = NIODeadline.uptimeNanoseconds(1_000_000_000)

        init(_ role: HTTP2ConnectionState.Role, limits: HTTP2Limits = HTTP2Limits()) {
            state = HTTP2ConnectionState(role: role, limits: limits)
            state.start(settings: [(.maxConcurrentStreams, 100)], into: &out)
            out.clear()
            var settings = ByteBuffer()
            settings.writeHTTP2Settings([])
            _ = try! feed(settings)
            out.clear()
        }

        /// Feeds the frames in `wire`; the events of all of them, or the connection error of the first that fails.
        mutating func feed(_ wire: ByteBuffer) throws(HTTP2ConnectionError) -> [HTTP2Event] {
            var reader = HTTP2FrameReader(maxFrameSize: HTTP2Protocol.maxMaxFrameSize)
            reader.append(wire)
            var events: [HTTP2Event] = []
            while let frame = try! reader.nextFrame() { events.append(try state.receive(frame, now: now, into: &out)) }
            return events
        }

        mutating func feed(_ build: (inout ByteBuffer) -> Void) throws(HTTP2ConnectionError) -> [HTTP2Event] {
            var wire = ByteBuffer()
            build(&wire)
            return try feed(wire)
        }

        /// The frames this side wrote since the last call.
        mutating func written() -> [HTTP2Frame] {
            var reader = HTTP2FrameReader(maxFrameSize: HTTP2Protocol.maxMaxFrameSize)
            reader.append(out)
            out.clear()
            var frames: [HTTP2Frame] = []
            while let frame = try! reader.nextFrame() { frames.append(frame) }
            return frames
        }
    }

    static let request: ByteBuffer = {
        var block = ByteBuffer()
        block.writeHPACKIndexed(HPACKStaticIndex.methodPost)
        block.writeHPACKIndexed(HPACKStaticIndex.schemeHTTPS)
        block.writeHPACKLiteral(nameIndex: HPACKStaticIndex.path, value: "/3/device/ab".utf8)
        return block
    }()

    private func connectionError(_ body: () throws -> Void) -> HTTP2ConnectionError? {
        do {
            try body()
            return nil
        } catch let error as HTTP2ConnectionError {
            return error
        } catch {
            Issue.record("not a connection error: \(error)")
            return nil
        }
    }

    @Test("RFC 9113 §6.5.2: SETTINGS_ENABLE_PUSH=1 from a server is a PROTOCOL_ERROR for a client, not for a server")
    func enablePushFromServer() {
        var client = Endpoint(.client)
        let error = connectionError { _ = try client.feed { $0.writeHTTP2Settings([(.enablePush, 1)]) } }
        #expect(error?.code == .protocolError && error?.message.contains("ENABLE_PUSH") == true)
        var server = Endpoint(.server)
        #expect(connectionError { _ = try server.feed { $0.writeHTTP2Settings([(.enablePush, 1)]) } } == nil)
    }

    @Test("RFC 9113 §6.9.2: raising INITIAL_WINDOW_SIZE past 2^31-1 on an open stream is a FLOW_CONTROL_ERROR")
    func initialWindowOverflow() throws {
        var client = Endpoint(.client)
        let openedstreamID = client.state.openLocalStream(endStream: false)
        let streamID = try #require(openedstreamID)
        _ = try client.feed { $0.writeHTTP2WindowUpdate(streamID: streamID, increment: 0x7FFF_FFFF - 65_535) }
        #expect(client.state.sendWindow(streamID: streamID) == HTTP2Protocol.minMaxFrameSize)
        let error = connectionError { _ = try client.feed { $0.writeHTTP2Settings([(.initialWindowSize, 65_536)]) } }
        #expect(error?.code == .flowControlError)
        // Lowering it is fine, and windows may go negative (RFC 9113 §6.9.2).
        var other = Endpoint(.client)
        let openedsecond = other.state.openLocalStream(endStream: false)
        let second = try #require(openedsecond)
        _ = try other.feed { $0.writeHTTP2Settings([(.initialWindowSize, 0)]) }
        #expect(other.state.sendWindow(streamID: second) == 0)
    }

    @Test("CVE-2023-44487: 200 resets in 30 s pass, the 201st is ENHANCE_YOUR_CALM; resets older than the window do not count")
    func rapidReset() throws {
        var server = Endpoint(.server)
        func openAndReset(_ count: Int, from first: Int) throws(HTTP2ConnectionError) {
            for index in first..<(first + count) {
                let streamID = UInt32(2 * index + 1)
                _ = try server.feed {
                    $0.writeHTTP2Headers(streamID: streamID, block: Self.request, endStream: false)
                    $0.writeHTTP2RSTStream(streamID: streamID, error: .cancel)
                }
            }
        }
        try openAndReset(200, from: 0)
        server.now = server.now + .seconds(31)
        try openAndReset(200, from: 200)
        let error = connectionError { try openAndReset(1, from: 400) }
        #expect(error?.code == .enhanceYourCalm && error?.message.contains("rapid reset") == true)
    }

    @Test("RFC 9113 §6.10: five CONTINUATION frames are accepted, a sixth is ENHANCE_YOUR_CALM")
    func continuationFlood() throws {
        var server = Endpoint(.server)
        var block = Self.request
        let events = try server.feed { wire in
            wire.writeHTTP2FrameHeader(length: 1, type: .headers, streamID: 1)
            wire.writeImmutableBuffer(block.readSlice(length: 1)!)
            for index in 0..<5 {
                let last = index == 4
                let chunk = last ? block.readSlice(length: block.readableBytes)! : block.readSlice(length: 1)!
                wire.writeHTTP2FrameHeader(length: chunk.readableBytes, type: .continuation, flags: last ? HTTP2Flags.endHeaders : 0, streamID: 1)
                wire.writeImmutableBuffer(chunk)
            }
        }
        guard case .headers(1, _, false)? = events.last else { Issue.record("no header block: \(events)"); return }
        let error = connectionError {
            _ = try server.feed { wire in
                wire.writeHTTP2FrameHeader(length: 0, type: .headers, streamID: 3)
                for _ in 0..<6 { wire.writeHTTP2FrameHeader(length: 0, type: .continuation, streamID: 3) }
            }
        }
        #expect(error?.code == .enhanceYourCalm && error?.message.contains("CONTINUATION") == true)
    }

    @Test("empty DATA frames: one is tolerated, two in a row are ENHANCE_YOUR_CALM; END_STREAM or HEADERS resets the count")
    func emptyData() throws {
        var server = Endpoint(.server)
        _ = try server.feed {
            $0.writeHTTP2Headers(streamID: 1, block: Self.request, endStream: false)
            $0.writeHTTP2Data(streamID: 1, bytes: [], endStream: false)
            $0.writeHTTP2Data(streamID: 1, bytes: [1], endStream: false)
            $0.writeHTTP2Data(streamID: 1, bytes: [], endStream: false)
            $0.writeHTTP2Headers(streamID: 3, block: Self.request, endStream: false)
            $0.writeHTTP2Data(streamID: 1, bytes: [], endStream: false)
        }
        let error = connectionError { _ = try server.feed { $0.writeHTTP2Data(streamID: 3, bytes: [], endStream: false) } }
        #expect(error?.code == .enhanceYourCalm)
    }

    @Test("control frames answered while the peer does not read are bounded; writable again resets the count")
    func bufferedControlFrames() throws {
        var limits = HTTP2Limits()
        limits.maxBufferedControlFrames = 10
        limits.controlFrames.maximumCount = 1000
        var server = Endpoint(.server, limits: limits)
        server.state.outputWritable = false
        _ = try server.feed { for index in 0..<10 { $0.writeHTTP2Ping(UInt64(index), ack: false) } }
        server.state.outputWritable = true
        server.state.outputWritable = false
        _ = try server.feed { for index in 0..<10 { $0.writeHTTP2Ping(UInt64(index), ack: false) } }
        let error = connectionError { _ = try server.feed { $0.writeHTTP2Ping(99, ack: false) } }
        #expect(error?.code == .enhanceYourCalm && error?.message.contains("does not read") == true)
    }

    @Test("more than 200 PING or SETTINGS frames in 30 s are ENHANCE_YOUR_CALM")
    func controlFrameFlood() throws {
        var server = Endpoint(.server)
        // The SETTINGS the endpoint started with counted once.
        _ = try server.feed { for index in 0..<199 { $0.writeHTTP2Ping(UInt64(index), ack: false) } }
        #expect(server.written().count == 199)
        let error = connectionError { _ = try server.feed { $0.writeHTTP2Settings([]) } }
        #expect(error?.code == .enhanceYourCalm)
    }

    @Test("RFC 9113 §10.5.1: a header list over the limit opens the stream for a 431; one far over ends the connection as too large")
    func headerListSize() throws {
        var limits = HTTP2Limits()
        limits.maxHeaderListSize = 200
        var server = Endpoint(.server, limits: limits)
        var big = Self.request
        big.writeHPACKLiteral(name: "x-big".utf8, value: [UInt8](repeating: 0x62, count: 300))
        let events = try server.feed { $0.writeHTTP2Headers(streamID: 1, block: big, endStream: true) }
        guard case .headerListTooLarge(1, let size, 200)? = events.first else { Issue.record("\(events)"); return }
        #expect(size > 300)
        #expect(server.state.isOpen(1), "still open for its answer")

        var bomb = Self.request
        bomb.writeInteger(UInt8(0x40))
        bomb.writeHPACKString(Array("x-bomb".utf8))
        bomb.writeHPACKString([UInt8](repeating: 0x61, count: 4000))
        for _ in 0..<20 { bomb.writeHPACKIndexed(62) }
        let error = connectionError { _ = try server.feed { $0.writeHTTP2Headers(streamID: 3, block: bomb, endStream: true) } }
        #expect(error?.code == .enhanceYourCalm && error?.message.contains("header list too large") == true)
    }

    @Test("RFC 9113 §6.9: DATA goes out as the windows allow; a WINDOW_UPDATE opens them again")
    func sendWindows() throws {
        var client = Endpoint(.client)
        _ = try client.feed { $0.writeHTTP2Settings([(.initialWindowSize, 100)]) }
        let openedstreamID = client.state.openLocalStream(endStream: false)
        let streamID = try #require(openedstreamID)
        #expect(client.state.reserveSendWindow(streamID: streamID, wanted: 250) == 100)
        #expect(client.state.reserveSendWindow(streamID: streamID, wanted: 150) == 0)
        let events = try client.feed { $0.writeHTTP2WindowUpdate(streamID: streamID, increment: 120) }
        guard case .windowOpened? = events.first else { Issue.record("\(events)"); return }
        #expect(client.state.reserveSendWindow(streamID: streamID, wanted: 150) == 120)
        #expect(client.state.connectionSendWindow == 65_535 - 220)
    }

    @Test("RFC 9113 §6.8: after a GOAWAY, the server ignores streams above its last-stream-id")
    func goAwayIgnoresLaterStreams() throws {
        var server = Endpoint(.server)
        _ = try server.feed { $0.writeHTTP2Headers(streamID: 1, block: Self.request, endStream: false) }
        server.state.goAway(code: .noError, into: &server.out)
        #expect(server.state.sentGoAwayLastStreamID == 1)
        let events = try server.feed {
            $0.writeHTTP2Headers(streamID: 3, block: Self.request, endStream: true)
            $0.writeHTTP2Data(streamID: 1, bytes: [1], endStream: true)
        }
        guard case .none? = events.first, case .data(1, _, true)? = events.last else { Issue.record("\(events)"); return }
        #expect(!server.state.isOpen(3))
    }

    @Test("RFC 9113 §6.5.3: SETTINGS apply once acknowledged, and an acknowledgement for nothing is a PROTOCOL_ERROR")
    func settingsAcknowledgement() throws {
        var server = Endpoint(.server)
        #expect(server.state.localMaxConcurrentStreams == Int.max, "no limit before the client acknowledged one")
        _ = try server.feed { $0.writeHTTP2SettingsAck() }
        #expect(server.state.localMaxConcurrentStreams == 100)
        let error = connectionError { _ = try server.feed { $0.writeHTTP2SettingsAck() } }
        #expect(error?.code == .protocolError)
    }
}
