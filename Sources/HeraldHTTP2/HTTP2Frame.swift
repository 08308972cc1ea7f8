package import NIOCore

/// The frame types of RFC 9113 §6 that Herald's two HTTP/2 endpoints handle.
package enum HTTP2FrameType: UInt8, Sendable {
    case data = 0x0
    case headers = 0x1
    case priority = 0x2
    case rstStream = 0x3
    case settings = 0x4
    case pushPromise = 0x5
    case ping = 0x6
    case goAway = 0x7
    case windowUpdate = 0x8
    case continuation = 0x9
}

/// Frame flags (RFC 9113 §6). The same bit means different things on different frame types, hence plain constants.
package enum HTTP2Flags {
    package static let endStream: UInt8 = 0x1
    package static let ack: UInt8 = 0x1
    package static let endHeaders: UInt8 = 0x4
    package static let padded: UInt8 = 0x8
    package static let priority: UInt8 = 0x20
}

/// Error codes of RFC 9113 §7.
package enum HTTP2ErrorCode: UInt32, Sendable {
    case noError = 0x0
    case protocolError = 0x1
    case internalError = 0x2
    case flowControlError = 0x3
    case settingsTimeout = 0x4
    case streamClosed = 0x5
    case frameSizeError = 0x6
    case refusedStream = 0x7
    case cancel = 0x8
    case compressionError = 0x9
    case connectError = 0xa
    case enhanceYourCalm = 0xb
    case inadequateSecurity = 0xc
    case http11Required = 0xd
}

/// SETTINGS parameters of RFC 9113 §6.5.2.
package enum HTTP2SettingID: UInt16, Sendable {
    case headerTableSize = 0x1
    case enablePush = 0x2
    case maxConcurrentStreams = 0x3
    case initialWindowSize = 0x4
    case maxFrameSize = 0x5
    case maxHeaderListSize = 0x6
}

/// Protocol constants both endpoints need.
package enum HTTP2Protocol {
    /// The client connection preface (RFC 9113 §3.4).
    package static let clientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    package static let frameHeaderLength = 9
    package static let defaultWindowSize = 65_535
    package static let maxWindowSize = Int(Int32.max)
    package static let minMaxFrameSize = 16_384
    package static let maxMaxFrameSize = 16_777_215
}

/// One frame as read off the wire: its header and its payload (padding still included; see ``unpaddedPayload()``).
package struct HTTP2Frame: Sendable {
    package var type: UInt8
    package var flags: UInt8
    package var streamID: UInt32
    package var payload: ByteBuffer

    package var knownType: HTTP2FrameType? { HTTP2FrameType(rawValue: type) }

    package func has(_ flag: UInt8) -> Bool { flags & flag != 0 }

    /// A WINDOW_UPDATE's increment (reserved bit cleared), or nil when the payload is not the 4 bytes it must be.
    package var windowIncrement: Int? { fixedPayload(as: UInt32.self).map { Int($0 & 0x7FFF_FFFF) } }
    /// A RST_STREAM's error code, or nil when the payload is not 4 bytes.
    package var resetCode: UInt32? { fixedPayload(as: UInt32.self) }
    /// A PING's opaque data, or nil when the payload is not 8 bytes.
    package var pingData: UInt64? { fixedPayload(as: UInt64.self) }

    private func fixedPayload<Value: FixedWidthInteger>(as: Value.Type) -> Value? {
        payload.readableBytes == MemoryLayout<Value>.size ? payload.getInteger(at: payload.readerIndex, as: Value.self) : nil
    }

    /// The payload without the pad length byte, the padding, and (for HEADERS) the priority fields.
    /// - Returns: nil when the padding is longer than the frame, a `PROTOCOL_ERROR` (RFC 9113 §6.1).
    package func unpaddedPayload() -> ByteBuffer? {
        var payload = self.payload
        var padding = 0
        if has(HTTP2Flags.padded) {
            guard let length = payload.readInteger(as: UInt8.self) else { return nil }
            padding = Int(length)
        }
        if type == HTTP2FrameType.headers.rawValue, has(HTTP2Flags.priority) {
            guard payload.readableBytes >= 5 else { return nil }
            payload.moveReaderIndex(forwardBy: 5)
        }
        guard padding <= payload.readableBytes else { return nil }
        return payload.readSlice(length: payload.readableBytes - padding)
    }
}

/// Cuts a byte stream into frames. Holds at most one partial frame between reads.
package struct HTTP2FrameReader: Sendable {
    /// A frame longer than the limit this endpoint advertised: a connection error of type `FRAME_SIZE_ERROR`.
    package struct FrameTooLarge: Error, Sendable {
        package let length: Int
    }

    private var buffer: ByteBuffer?
    /// The largest payload accepted: this endpoint's `SETTINGS_MAX_FRAME_SIZE`.
    package var maxFrameSize: Int

    package init(maxFrameSize: Int = HTTP2Protocol.minMaxFrameSize) {
        self.maxFrameSize = maxFrameSize
    }

    /// Adds bytes read from the connection.
    package mutating func append(_ bytes: ByteBuffer) {
        if buffer == nil || buffer!.readableBytes == 0 {
            buffer = bytes
        } else {
            var incoming = bytes
            buffer!.writeBuffer(&incoming)
        }
    }

    /// Takes `count` raw bytes (the connection preface) if that many are buffered.
    package mutating func readBytes(_ count: Int) -> [UInt8]? {
        guard buffer?.readableBytes ?? 0 >= count else { return nil }
        return buffer!.readBytes(length: count)
    }

    /// The next complete frame, or nil until more bytes arrive.
    package mutating func nextFrame() throws(FrameTooLarge) -> HTTP2Frame? {
        guard var bytes = buffer, bytes.readableBytes >= HTTP2Protocol.frameHeaderLength else { return nil }
        let start = bytes.readerIndex
        let high = Int(bytes.getInteger(at: start, as: UInt16.self)!)
        let low = Int(bytes.getInteger(at: start + 2, as: UInt8.self)!)
        let length = high << 8 | low
        guard length <= maxFrameSize else { throw FrameTooLarge(length: length) }
        guard bytes.readableBytes >= HTTP2Protocol.frameHeaderLength + length else { return nil }
        let type = bytes.getInteger(at: start + 3, as: UInt8.self)!
        let flags = bytes.getInteger(at: start + 4, as: UInt8.self)!
        let streamID = bytes.getInteger(at: start + 5, as: UInt32.self)! & 0x7FFF_FFFF
        bytes.moveReaderIndex(forwardBy: HTTP2Protocol.frameHeaderLength)
        let payload = bytes.readSlice(length: length)!
        buffer = bytes.readableBytes == 0 ? nil : bytes
        return HTTP2Frame(type: type, flags: flags, streamID: streamID, payload: payload)
    }
}

extension ByteBuffer {
    /// Writes a 9-byte frame header (RFC 9113 §4.1).
    package mutating func writeHTTP2FrameHeader(length: Int, type: HTTP2FrameType, flags: UInt8 = 0, streamID: UInt32) {
        writeInteger(UInt16(truncatingIfNeeded: length >> 8))
        writeInteger(UInt8(truncatingIfNeeded: length))
        writeInteger(type.rawValue)
        writeInteger(flags)
        writeInteger(streamID & 0x7FFF_FFFF)
    }

    package mutating func writeHTTP2Settings(_ settings: [(HTTP2SettingID, Int)]) {
        writeHTTP2FrameHeader(length: settings.count * 6, type: .settings, streamID: 0)
        for (id, value) in settings {
            writeInteger(id.rawValue)
            writeInteger(UInt32(truncatingIfNeeded: value))
        }
    }

    package mutating func writeHTTP2SettingsAck() {
        writeHTTP2FrameHeader(length: 0, type: .settings, flags: HTTP2Flags.ack, streamID: 0)
    }

    package mutating func writeHTTP2Ping(_ opaque: UInt64, ack: Bool) {
        writeHTTP2FrameHeader(length: 8, type: .ping, flags: ack ? HTTP2Flags.ack : 0, streamID: 0)
        writeInteger(opaque)
    }

    package mutating func writeHTTP2WindowUpdate(streamID: UInt32, increment: Int) {
        writeHTTP2FrameHeader(length: 4, type: .windowUpdate, streamID: streamID)
        writeInteger(UInt32(truncatingIfNeeded: increment) & 0x7FFF_FFFF)
    }

    package mutating func writeHTTP2GoAway(lastStreamID: UInt32, error: HTTP2ErrorCode, debugData: [UInt8] = []) {
        writeHTTP2FrameHeader(length: 8 + debugData.count, type: .goAway, streamID: 0)
        writeInteger(lastStreamID & 0x7FFF_FFFF)
        writeInteger(error.rawValue)
        writeBytes(debugData)
    }

    package mutating func writeHTTP2RSTStream(streamID: UInt32, error: HTTP2ErrorCode) {
        writeHTTP2FrameHeader(length: 4, type: .rstStream, streamID: streamID)
        writeInteger(error.rawValue)
    }

    /// A HEADERS frame carrying a complete header block (the block must fit the peer's maximum frame size).
    package mutating func writeHTTP2Headers(streamID: UInt32, block: ByteBuffer, endStream: Bool) {
        writeHTTP2FrameHeader(length: block.readableBytes, type: .headers,
            flags: HTTP2Flags.endHeaders | (endStream ? HTTP2Flags.endStream : 0), streamID: streamID)
        writeImmutableBuffer(block)
    }

    /// A HEADERS frame whose header block is written in place by `encode`; the length is patched in afterwards.
    package mutating func writeHTTP2Headers(streamID: UInt32, endStream: Bool, encode: (inout ByteBuffer) -> Void) {
        let start = writerIndex
        writeHTTP2FrameHeader(length: 0, type: .headers,
            flags: HTTP2Flags.endHeaders | (endStream ? HTTP2Flags.endStream : 0), streamID: streamID)
        encode(&self)
        let length = writerIndex - start - HTTP2Protocol.frameHeaderLength
        setInteger(UInt16(truncatingIfNeeded: length >> 8), at: start)
        setInteger(UInt8(truncatingIfNeeded: length), at: start + 2)
    }

    package mutating func writeHTTP2Data<Bytes: Collection>(streamID: UInt32, bytes: Bytes, endStream: Bool) where Bytes.Element == UInt8 {
        writeHTTP2FrameHeader(length: bytes.count, type: .data, flags: endStream ? HTTP2Flags.endStream : 0, streamID: streamID)
        writeBytes(bytes)
    }

    package mutating func writeHTTP2Data(streamID: UInt32, buffer: ByteBuffer, endStream: Bool) {
        writeHTTP2FrameHeader(length: buffer.readableBytes, type: .data, flags: endStream ? HTTP2Flags.endStream : 0, streamID: streamID)
        writeImmutableBuffer(buffer)
    }
}
