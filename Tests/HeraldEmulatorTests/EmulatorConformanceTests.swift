import HeraldCore
@testable import HeraldEmulator
import HeraldHTTP2
import HeraldTesting
import NIOCore
import Testing

/// An HTTP/2 conformance suite in the spirit of h2spec: one case per rule of RFC 9113 and RFC 7541 (and per flood
/// NIOHTTP2 guards against), each sent by a raw client to the emulator over loopback TLS and named by its section.
@Suite("Emulator: HTTP/2 conformance (RFC 9113, RFC 7541)", .timeLimit(.minutes(2)))
struct EmulatorConformanceTests {
    /// What the server must answer.
    enum Expectation: Sendable {
        /// A GOAWAY with this code (and, when given, debug data containing the text), then the connection closes.
        case connectionError(HTTP2ErrorCode, containing: String? = nil)
        /// A RST_STREAM with this code on this stream; the connection stays usable.
        case streamError(UInt32, HTTP2ErrorCode)
        /// A frame the predicate accepts, before the closing PING's acknowledgement.
        case frame(@Sendable (HTTP2Frame) -> Bool)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let section: String
        let rule: String
        /// The bytes sent after the preface and an empty SETTINGS frame (the server's SETTINGS are acknowledged first
        /// when `acknowledge` is set).
        let acknowledge: Bool
        let send: @Sendable (inout ByteBuffer) -> Void
        let expect: Expectation

        init(_ section: String, _ rule: String, acknowledge: Bool = false, expect: Expectation, send: @escaping @Sendable (inout ByteBuffer) -> Void) {
            self.section = section
            self.rule = rule
            self.acknowledge = acknowledge
            self.send = send
            self.expect = expect
        }

        var testDescription: String { "\(section): \(rule)" }
    }

    static let path = "/3/device/" + String(repeating: "d0", count: 32)
    /// A request without credentials: a complete, well-formed stream the emulator answers 403.
    static var request: ByteBuffer { RawHTTP2Connection.requestBlock(path: path, headers: [("apns-topic", APNSOutcomeTable.bundleID)]) }
    static let sentinel: UInt64 = 0x5E47_1E1

    static let cases: [Case] = [
        // RFC 9113 §4: frames
        Case("RFC 9113 §4.1", "a frame of an unknown type is ignored", expect: .frame { $0.knownType == .ping && $0.pingData == 3 }) {
            $0.writeBytes([0, 0, 4, 0xEE, 0, 0, 0, 0, 0])  // 4 bytes of type 0xEE on stream 0
            $0.writeInteger(UInt32(0))
            $0.writeHTTP2Ping(3, ack: false)
        },
        Case("RFC 9113 §4.2", "a frame over SETTINGS_MAX_FRAME_SIZE is a FRAME_SIZE_ERROR", expect: .connectionError(.frameSizeError)) {
            $0.writeHTTP2Headers(streamID: 1, block: request, endStream: false)
            $0.writeHTTP2Data(streamID: 1, bytes: [UInt8](repeating: 0x20, count: 16_385), endStream: true)
        },
        Case("RFC 9113 §4.3", "a header block that is not valid HPACK is a COMPRESSION_ERROR", expect: .connectionError(.compressionError)) {
            var block = ByteBuffer()
            block.writeHPACKIndexed(200)  // beyond the static table, the dynamic table is empty
            $0.writeHTTP2Headers(streamID: 1, block: block, endStream: true)
        },
        // §5.1: stream states
        Case("RFC 9113 §5.1 idle", "DATA on an idle stream is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2Data(streamID: 1, bytes: [1], endStream: true)
        },
        Case("RFC 9113 §5.1 idle", "RST_STREAM on an idle stream is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2RSTStream(streamID: 1, error: .cancel)
        },
        Case("RFC 9113 §5.1 idle", "WINDOW_UPDATE on an idle stream is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2WindowUpdate(streamID: 1, increment: 1)
        },
        Case("RFC 9113 §5.1 half-closed (remote)", "DATA after END_STREAM is STREAM_CLOSED", expect: .streamError(1, .streamClosed)) {
            $0.writeHTTP2Headers(streamID: 1, block: request, endStream: false)
            $0.writeHTTP2Data(streamID: 1, bytes: Array(APNSOutcomeTable.validBody.utf8), endStream: true)
            $0.writeHTTP2Data(streamID: 1, bytes: [1], endStream: true)
        },
        Case("RFC 9113 §5.1.1", "an even stream id from a client is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2Headers(streamID: 2, block: request, endStream: true)
        },
        Case("RFC 9113 §5.1.1", "a stream id lower than one already used is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2Headers(streamID: 5, block: request, endStream: false)
            $0.writeHTTP2Headers(streamID: 3, block: request, endStream: false)
        },
        Case("RFC 9113 §5.1.2", "a stream over MAX_CONCURRENT_STREAMS gets APNs' GOAWAY",
             acknowledge: true, expect: .connectionError(.enhanceYourCalm, containing: "Maximum active streams")) {
            $0.writeHTTP2Headers(streamID: 1, block: request, endStream: false)
            $0.writeHTTP2Headers(streamID: 3, block: request, endStream: false)
        },
        // §6: frame definitions
        Case("RFC 9113 §6.1", "DATA on stream 0 is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2Data(streamID: 0, bytes: [1], endStream: false)
        },
        Case("RFC 9113 §6.1", "DATA whose padding exceeds the payload is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2Headers(streamID: 1, block: request, endStream: false)
            $0.writeHTTP2FrameHeader(length: 2, type: .data, flags: HTTP2Flags.padded | HTTP2Flags.endStream, streamID: 1)
            $0.writeBytes([9, 0])
        },
        Case("RFC 9113 §6.2", "HEADERS on stream 0 is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2Headers(streamID: 0, block: request, endStream: true)
        },
        Case("RFC 9113 §6.2", "HEADERS whose padding exceeds the payload is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2FrameHeader(length: 1, type: .headers, flags: HTTP2Flags.padded | HTTP2Flags.endHeaders, streamID: 1)
            $0.writeInteger(UInt8(5))
        },
        Case("RFC 9113 §6.3", "PRIORITY on stream 0 is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2FrameHeader(length: 5, type: .priority, streamID: 0)
            $0.writeBytes([0, 0, 0, 0, 16])
        },
        Case("RFC 9113 §6.3", "PRIORITY of the wrong length is a stream FRAME_SIZE_ERROR", expect: .streamError(1, .frameSizeError)) {
            $0.writeHTTP2FrameHeader(length: 4, type: .priority, streamID: 1)
            $0.writeBytes([0, 0, 0, 0])
        },
        Case("RFC 9113 §6.4", "RST_STREAM on stream 0 is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2RSTStream(streamID: 0, error: .cancel)
        },
        Case("RFC 9113 §6.4", "RST_STREAM of the wrong length is a FRAME_SIZE_ERROR", expect: .connectionError(.frameSizeError)) {
            $0.writeHTTP2Headers(streamID: 1, block: request, endStream: false)
            $0.writeHTTP2FrameHeader(length: 3, type: .rstStream, streamID: 1)
            $0.writeBytes([0, 0, 8])
        },
        Case("RFC 9113 §6.5", "SETTINGS on a stream is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2FrameHeader(length: 0, type: .settings, streamID: 1)
        },
        Case("RFC 9113 §6.5", "a SETTINGS acknowledgement with a payload is a FRAME_SIZE_ERROR", expect: .connectionError(.frameSizeError)) {
            $0.writeHTTP2FrameHeader(length: 6, type: .settings, flags: HTTP2Flags.ack, streamID: 0)
            $0.writeBytes([0, 3, 0, 0, 0, 1])
        },
        Case("RFC 9113 §6.5", "SETTINGS whose length is not a multiple of 6 is a FRAME_SIZE_ERROR", expect: .connectionError(.frameSizeError)) {
            $0.writeHTTP2FrameHeader(length: 3, type: .settings, streamID: 0)
            $0.writeBytes([0, 3, 0])
        },
        Case("RFC 9113 §6.5.2", "SETTINGS_ENABLE_PUSH other than 0 or 1 is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2Settings([(.enablePush, 2)])
        },
        Case("RFC 9113 §6.5.2", "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1 is a FLOW_CONTROL_ERROR", expect: .connectionError(.flowControlError)) {
            $0.writeHTTP2Settings([(.initialWindowSize, 1 << 31)])
        },
        Case("RFC 9113 §6.5.2", "SETTINGS_MAX_FRAME_SIZE below 16,384 is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2Settings([(.maxFrameSize, 16_383)])
        },
        Case("RFC 9113 §6.5.2", "SETTINGS_MAX_FRAME_SIZE above 2^24-1 is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2Settings([(.maxFrameSize, 1 << 24)])
        },
        Case("RFC 9113 §6.5.3", "SETTINGS are acknowledged", expect: .frame { $0.knownType == .settings && $0.has(HTTP2Flags.ack) }) {
            $0.writeHTTP2Settings([(.maxConcurrentStreams, 10)])
        },
        Case("RFC 9113 §6.5.3", "a SETTINGS acknowledgement for nothing is a PROTOCOL_ERROR", acknowledge: true, expect: .connectionError(.protocolError)) {
            $0.writeHTTP2SettingsAck()
        },
        Case("RFC 9113 §6.7", "PING is answered with the same data", expect: .frame { $0.knownType == .ping && $0.has(HTTP2Flags.ack) && $0.pingData == 77 }) {
            $0.writeHTTP2Ping(77, ack: false)
        },
        Case("RFC 9113 §6.7", "PING on a stream is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2FrameHeader(length: 8, type: .ping, streamID: 1)
            $0.writeInteger(UInt64(1))
        },
        Case("RFC 9113 §6.7", "PING of the wrong length is a FRAME_SIZE_ERROR", expect: .connectionError(.frameSizeError)) {
            $0.writeHTTP2FrameHeader(length: 6, type: .ping, streamID: 0)
            $0.writeBytes([0, 0, 0, 0, 0, 0])
        },
        Case("RFC 9113 §6.8", "GOAWAY on a stream is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2FrameHeader(length: 8, type: .goAway, streamID: 1)
            $0.writeInteger(UInt64(0))
        },
        Case("RFC 9113 §6.9", "a connection WINDOW_UPDATE of 0 is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2WindowUpdate(streamID: 0, increment: 0)
        },
        Case("RFC 9113 §6.9", "a stream WINDOW_UPDATE of 0 is a stream PROTOCOL_ERROR", expect: .streamError(1, .protocolError)) {
            $0.writeHTTP2Headers(streamID: 1, block: request, endStream: false)
            $0.writeHTTP2WindowUpdate(streamID: 1, increment: 0)
        },
        Case("RFC 9113 §6.9", "WINDOW_UPDATE of the wrong length is a FRAME_SIZE_ERROR", expect: .connectionError(.frameSizeError)) {
            $0.writeHTTP2FrameHeader(length: 3, type: .windowUpdate, streamID: 0)
            $0.writeBytes([0, 0, 1])
        },
        Case("RFC 9113 §6.9.1", "a connection window above 2^31-1 is a FLOW_CONTROL_ERROR", expect: .connectionError(.flowControlError)) {
            $0.writeHTTP2WindowUpdate(streamID: 0, increment: 0x7FFF_FFFF)
        },
        Case("RFC 9113 §6.9.1", "a stream window above 2^31-1 is a stream FLOW_CONTROL_ERROR", expect: .streamError(1, .flowControlError)) {
            $0.writeHTTP2Headers(streamID: 1, block: request, endStream: false)
            $0.writeHTTP2WindowUpdate(streamID: 1, increment: 0x7FFF_FFFF)
        },
        Case("RFC 9113 §6.9.2", "an INITIAL_WINDOW_SIZE change that takes a stream window above 2^31-1 is a FLOW_CONTROL_ERROR",
             expect: .connectionError(.flowControlError)) {
            $0.writeHTTP2Headers(streamID: 1, block: request, endStream: false)
            $0.writeHTTP2WindowUpdate(streamID: 1, increment: 0x7FFF_FFFF - 65_535)
            $0.writeHTTP2Settings([(.initialWindowSize, 65_536)])
        },
        Case("RFC 9113 §6.10", "CONTINUATION without a header block is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2FrameHeader(length: 0, type: .continuation, flags: HTTP2Flags.endHeaders, streamID: 1)
        },
        Case("RFC 9113 §6.10", "a header block interrupted by another frame is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2FrameHeader(length: request.readableBytes, type: .headers, streamID: 1)
            $0.writeImmutableBuffer(request)
            $0.writeHTTP2Ping(1, ack: false)
        },
        Case("RFC 9113 §6.10", "CONTINUATION on another stream is a PROTOCOL_ERROR", expect: .connectionError(.protocolError)) {
            $0.writeHTTP2FrameHeader(length: request.readableBytes, type: .headers, streamID: 1)
            $0.writeImmutableBuffer(request)
            $0.writeHTTP2FrameHeader(length: 0, type: .continuation, flags: HTTP2Flags.endHeaders, streamID: 3)
        },
        Case("RFC 9113 §8.1.1", "a content-length that disagrees with the body is a stream PROTOCOL_ERROR", expect: .streamError(1, .protocolError)) {
            $0.writeHTTP2Headers(streamID: 1, block: RawHTTP2Connection.requestBlock(path: path, headers: [("content-length", "5")]), endStream: false)
            $0.writeHTTP2Data(streamID: 1, bytes: [1, 2, 3], endStream: true)
        },
        Case("RFC 9113 §8.2.1", "an uppercase header name is a stream PROTOCOL_ERROR", expect: .streamError(1, .protocolError)) {
            $0.writeHTTP2Headers(streamID: 1, block: RawHTTP2Connection.requestBlock(path: path, headers: [("Apns-Topic", "x")]), endStream: true)
        },
        Case("RFC 9113 §8.3.1", "a request without :path is a stream PROTOCOL_ERROR", expect: .streamError(1, .protocolError)) {
            var block = ByteBuffer()
            block.writeHPACKIndexed(HPACKStaticIndex.methodPost)
            block.writeHPACKIndexed(HPACKStaticIndex.schemeHTTPS)
            $0.writeHTTP2Headers(streamID: 1, block: block, endStream: true)
        },
        Case("RFC 9113 §10.5.1", "a header list over SETTINGS_MAX_HEADER_LIST_SIZE is answered 431 with a reason that says so",
             expect: .frame { $0.knownType == .data && String(buffer: $0.payload).contains("Header list too large") }) {
            $0.writeHTTP2Headers(streamID: 1, block: RawHTTP2Connection.requestBlock(path: path, headers: [("x-big", String(repeating: "b", count: 9000))]), endStream: true)
        },
        // RFC 7541
        Case("RFC 7541 §2.3.3", "an index beyond both tables is a COMPRESSION_ERROR", expect: .connectionError(.compressionError)) {
            var block = ByteBuffer()
            block.writeHPACKIndexed(62)
            $0.writeHTTP2Headers(streamID: 1, block: block, endStream: true)
        },
        Case("RFC 7541 §4.2", "a table size update above SETTINGS_HEADER_TABLE_SIZE is a COMPRESSION_ERROR", expect: .connectionError(.compressionError)) {
            var block = ByteBuffer()
            block.writeHPACKInteger(8192, prefixBits: 5, pattern: 0x20)
            block.writeImmutableBuffer(request)
            $0.writeHTTP2Headers(streamID: 1, block: block, endStream: true)
        },
        Case("RFC 7541 §5.2", "a string longer than the block is a COMPRESSION_ERROR", expect: .connectionError(.compressionError)) {
            var block = ByteBuffer()
            block.writeHPACKInteger(HPACKStaticIndex.path, prefixBits: 4, pattern: 0)
            block.writeHPACKInteger(100, prefixBits: 7, pattern: 0)
            block.writeBytes(Array("/3/".utf8))
            $0.writeHTTP2Headers(streamID: 1, block: block, endStream: true)
        },
        Case("RFC 7541 §4.1", "a header list that decodes to far more than the limit (an HPACK bomb) ends the connection as too large",
             expect: .connectionError(.enhanceYourCalm, containing: "header list too large")) {
            var block = ByteBuffer()
            block.writeHPACKIndexed(HPACKStaticIndex.methodPost)
            block.writeHPACKIndexed(HPACKStaticIndex.schemeHTTPS)
            block.writeHPACKLiteral(nameIndex: HPACKStaticIndex.path, value: path.utf8)
            block.writeInteger(UInt8(0x40))  // with incremental indexing: a 4,000-byte entry
            block.writeHPACKString(Array("x-bomb".utf8))
            block.writeHPACKString([UInt8](repeating: 0x61, count: 4000))
            for _ in 0..<20 { block.writeHPACKIndexed(62) }  // 80 kB decoded from 20 bytes
            $0.writeHTTP2Headers(streamID: 1, block: block, endStream: true)
        },
        // Floods NIOHTTP2 guards against
        Case("CVE-2023-44487", "rapid reset: more than 200 streams reset in 30 s get GOAWAY ENHANCE_YOUR_CALM",
             expect: .connectionError(.enhanceYourCalm, containing: "RST_STREAM")) {
            for index in 0..<201 {
                let streamID = UInt32(2 * index + 1)
                $0.writeHTTP2Headers(streamID: streamID, block: request, endStream: false)
                $0.writeHTTP2RSTStream(streamID: streamID, error: .cancel)
            }
        },
        Case("CVE-2024-27316", "more than 5 CONTINUATION frames in one header block get GOAWAY ENHANCE_YOUR_CALM",
             expect: .connectionError(.enhanceYourCalm, containing: "CONTINUATION")) {
            $0.writeHTTP2FrameHeader(length: 0, type: .headers, streamID: 1)
            for _ in 0..<6 { $0.writeHTTP2FrameHeader(length: 0, type: .continuation, streamID: 1) }
        },
        Case("CVE-2019-9518", "empty DATA frames in a row get GOAWAY ENHANCE_YOUR_CALM",
             expect: .connectionError(.enhanceYourCalm, containing: "empty DATA")) {
            $0.writeHTTP2Headers(streamID: 1, block: request, endStream: false)
            for _ in 0..<2 { $0.writeHTTP2Data(streamID: 1, bytes: [], endStream: false) }
        },
        Case("CVE-2019-9512", "a PING flood gets GOAWAY ENHANCE_YOUR_CALM", expect: .connectionError(.enhanceYourCalm, containing: "PING")) {
            for index in 0..<300 { $0.writeHTTP2Ping(UInt64(index), ack: false) }
        },
        Case("CVE-2019-9515", "a SETTINGS flood gets GOAWAY ENHANCE_YOUR_CALM", expect: .connectionError(.enhanceYourCalm, containing: "SETTINGS")) {
            for _ in 0..<300 { $0.writeHTTP2Settings([]) }
        },
    ]

    let fixture = EmulatorFixture()

    @Test(arguments: cases)
    func conformance(_ testCase: Case) async throws {
        try await fixture.run { emulator in
            let connection = try await RawHTTP2Connection.connect(port: emulator.port(for: .development)!, trustRootPEM: emulator.certificateAuthorityPEM!)
            try await connection.start()
            _ = try await connection.frames { $0.knownType == .settings && !$0.has(HTTP2Flags.ack) }
            var bytes = ByteBuffer()
            if testCase.acknowledge { bytes.writeHTTP2SettingsAck() }
            testCase.send(&bytes)
            bytes.writeHTTP2Ping(Self.sentinel, ack: false)
            try await connection.write(bytes)
            // Until the sentinel's acknowledgement (the server read everything and still talks) or the close.
            let frames = try await connection.frames { $0.knownType == .ping && $0.has(HTTP2Flags.ack) && $0.pingData == Self.sentinel }
            let goAway = frames.first { $0.knownType == .goAway }
            switch testCase.expect {
            case .connectionError(let code, let text):
                let frame = try #require(goAway, "no GOAWAY; frames: \(frames.map(\.type))")
                #expect(frame.payload.getInteger(at: frame.payload.readerIndex + 4, as: UInt32.self) == code.rawValue,
                        "GOAWAY \(String(buffer: frame.payload.getSlice(at: frame.payload.readerIndex + 8, length: frame.payload.readableBytes - 8)!))")
                if let text {
                    #expect(String(buffer: frame.payload).contains(text))
                }
            case .streamError(let streamID, let code):
                #expect(goAway == nil, "no connection error")
                let reset = try #require(frames.first { $0.knownType == .rstStream && $0.streamID == streamID }, "frames: \(frames.map(\.type))")
                #expect(reset.resetCode == code.rawValue)
            case .frame(let accept):
                #expect(goAway == nil, "no connection error")
                #expect(frames.contains(where: accept), "frames: \(frames.map(\.type))")
            }
            await connection.close()
        }
    }
}
