import HeraldHTTP2
import NIOCore
import NIOHPACK
import Testing

@Suite("HTTP/2 framing")
struct HTTP2FrameTests {
    @Test("frames written by the writers read back whole, however the bytes are split")
    func roundTripAcrossSplits() throws {
        var wire = ByteBuffer()
        wire.writeHTTP2Settings([(.maxConcurrentStreams, 1000), (.initialWindowSize, 1 << 20)])
        wire.writeHTTP2Ping(0x0102_0304_0506_0708, ack: true)
        wire.writeHTTP2WindowUpdate(streamID: 7, increment: 40_000)
        wire.writeHTTP2Data(streamID: 3, bytes: Array("{\"aps\":{}}".utf8), endStream: true)
        wire.writeHTTP2GoAway(lastStreamID: 9, error: .enhanceYourCalm, debugData: Array("calm".utf8))
        let bytes = Array(wire.readableBytesView)
        for chunk in [1, 2, 7, 9, 13, bytes.count] {
            var reader = HTTP2FrameReader()
            var frames: [HTTP2Frame] = []
            var offset = 0
            while offset < bytes.count {
                reader.append(ByteBuffer(bytes: bytes[offset..<min(bytes.count, offset + chunk)]))
                offset += chunk
                while let frame = try reader.nextFrame() { frames.append(frame) }
            }
            #expect(frames.map(\.knownType) == [.settings, .ping, .windowUpdate, .data, .goAway], "chunk \(chunk)")
            #expect(frames[0].payload.readableBytes == 12)
            #expect(frames[1].has(HTTP2Flags.ack))
            #expect(frames[1].pingData == 0x0102_0304_0506_0708)
            #expect(frames[2].streamID == 7)
            #expect(frames[2].windowIncrement == 40_000)
            #expect(frames[2].pingData == nil && frames[3].resetCode == nil, "fixed-size fields need their exact length")
            #expect(frames[3].has(HTTP2Flags.endStream) && frames[3].streamID == 3)
            #expect(String(buffer: frames[3].payload) == "{\"aps\":{}}")
            #expect(frames[4].payload.readableBytes == 12)
        }
    }

    @Test("a frame longer than the advertised maximum is refused before its payload arrives")
    func frameTooLarge() {
        var wire = ByteBuffer()
        wire.writeHTTP2FrameHeader(length: 16_385, type: .data, streamID: 1)
        var reader = HTTP2FrameReader(maxFrameSize: 16_384)
        reader.append(wire)
        #expect(throws: HTTP2FrameReader.FrameTooLarge.self) { try reader.nextFrame() }
    }

    @Test("padding and priority fields are stripped; padding longer than the frame is detected")
    func padding() throws {
        var wire = ByteBuffer()
        wire.writeHTTP2FrameHeader(length: 1 + 5 + 3 + 2, type: .headers, flags: HTTP2Flags.padded | HTTP2Flags.priority, streamID: 1)
        wire.writeInteger(UInt8(2))
        wire.writeBytes([0, 0, 0, 0, 15])
        wire.writeBytes([0xAA, 0xBB, 0xCC])
        wire.writeBytes([0, 0])
        var reader = HTTP2FrameReader()
        reader.append(wire)
        let frame = try #require(try reader.nextFrame())
        #expect(frame.unpaddedPayload().map { Array($0.readableBytesView) } == [0xAA, 0xBB, 0xCC])

        var bad = ByteBuffer()
        bad.writeHTTP2FrameHeader(length: 2, type: .data, flags: HTTP2Flags.padded, streamID: 1)
        bad.writeBytes([5, 0])
        reader.append(bad)
        #expect(try reader.nextFrame()?.unpaddedPayload() == nil)
    }

    @Test("the connection preface is taken only once complete")
    func preface() {
        var reader = HTTP2FrameReader()
        reader.append(ByteBuffer(bytes: HTTP2Protocol.clientPreface.prefix(10)))
        #expect(reader.readBytes(24) == nil)
        reader.append(ByteBuffer(bytes: HTTP2Protocol.clientPreface.dropFirst(10)))
        #expect(reader.readBytes(24) == HTTP2Protocol.clientPreface)
    }

    @Test("HPACK literals decode with NIOHPACK's decoder, long integers included")
    func hpackLiterals() throws {
        let longValue = String(repeating: "x", count: 300)
        var block = ByteBuffer()
        block.writeHPACKIndexed(HPACKStaticIndex.status200)
        block.writeHPACKLiteral(nameIndex: HPACKStaticIndex.status, value: "410".utf8)
        block.writeHPACKLiteral(nameIndex: HPACKStaticIndex.contentType, value: "application/json".utf8)
        block.writeHPACKLiteral(name: "apns-id".utf8, value: longValue.utf8)
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        let headers = try decoder.decodeHeaders(from: &block)
        #expect(headers.map { "\($0.name)=\($0.value)" } == [
            ":status=200", ":status=410", "content-type=application/json", "apns-id=\(longValue)",
        ])
    }

    @Test("frame headers patched after the block is written carry the right length")
    func headersInPlace() throws {
        var wire = ByteBuffer()
        wire.writeHTTP2Headers(streamID: 5, endStream: true) { block in
            block.writeHPACKIndexed(HPACKStaticIndex.status200)
            block.writeHPACKLiteral(name: "apns-id".utf8, value: "abc".utf8)
        }
        var reader = HTTP2FrameReader()
        reader.append(wire)
        var frame = try #require(try reader.nextFrame())
        #expect(frame.knownType == .headers && frame.has(HTTP2Flags.endHeaders) && frame.has(HTTP2Flags.endStream))
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        #expect(try decoder.decodeHeaders(from: &frame.payload).map(\.value) == ["200", "abc"])
    }
}
