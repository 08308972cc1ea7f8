import HeraldHTTP2
import NIOCore

enum HTTP2FrameFuzzing {
    private struct Frame: Equatable {
        var type: UInt8
        var flags: UInt8
        var streamID: UInt32
        var payload: [UInt8]
    }

    private struct Reading: Equatable {
        var frames: [Frame] = []
        var tooLarge: Int?
    }

    static func check(_ input: [UInt8]) -> FuzzFinding? {
        var reader = FuzzInput(input)
        // Small limits make FRAME_SIZE_ERROR reachable with short inputs; 16,384 is every endpoint's floor.
        let maxFrameSize = [16, 255, 4096, HTTP2Protocol.minMaxFrameSize][Int(reader.byte()) % 4]
        let chunk = Int(reader.byte() % 32) + 1
        let wire = reader.rest()

        let whole = read([wire[...]], maxFrameSize: maxFrameSize)
        let chunks = stride(from: 0, to: wire.count, by: chunk).map { wire[$0..<min(wire.count, $0 + chunk)] }
        let split = read(chunks, maxFrameSize: maxFrameSize)
        guard whole == split else {
            return FuzzFinding(.http2Frames, "frames are the same however the bytes are split", "chunks of \(chunk)")
        }
        var rewritten: [UInt8] = []
        for frame in whole.frames {
            guard frame.payload.count <= maxFrameSize else {
                return FuzzFinding(.http2Frames, "no frame exceeds the advertised size", "\(frame.payload.count)")
            }
            guard frame.streamID & 0x8000_0000 == 0 else {
                return FuzzFinding(.http2Frames, "the reserved bit is cleared", "\(frame.streamID)")
            }
            var buffer = ByteBuffer()
            buffer.writeInteger(UInt16(truncatingIfNeeded: frame.payload.count >> 8))
            buffer.writeInteger(UInt8(truncatingIfNeeded: frame.payload.count))
            buffer.writeInteger(frame.type)
            buffer.writeInteger(frame.flags)
            buffer.writeInteger(frame.streamID)
            buffer.writeBytes(frame.payload)
            rewritten += buffer.readableBytesView
        }
        // The reader drops the reserved bit, so compare with it cleared in the original too.
        var original = Array(wire.prefix(rewritten.count))
        var offset = 0
        for frame in whole.frames {
            original[offset + 5] &= 0x7F
            offset += HTTP2Protocol.frameHeaderLength + frame.payload.count
        }
        guard rewritten == original else {
            return FuzzFinding(.http2Frames, "frames write back to the bytes they came from", "\(whole.frames.count)")
        }
        return nil
    }

    private static func read(_ chunks: [ArraySlice<UInt8>], maxFrameSize: Int) -> Reading {
        var reader = HTTP2FrameReader(maxFrameSize: maxFrameSize)
        var reading = Reading()
        for chunk in chunks {
            reader.append(ByteBuffer(bytes: chunk))
            do {
                while let frame = try reader.nextFrame() {
                    reading.frames.append(Frame(
                        type: frame.type, flags: frame.flags, streamID: frame.streamID,
                        payload: Array(frame.payload.readableBytesView)))
                    // The accessors every handler calls on untrusted frames must not trap whatever the lengths.
                    _ = (frame.windowIncrement, frame.resetCode, frame.pingData, frame.unpaddedPayload())
                }
            } catch {
                reading.tooLarge = error.length
                return reading
            }
        }
        return reading
    }
}
