import HeraldCore
@testable import HeraldEmulator
import HeraldHTTP2
import HeraldTesting
import NIOCore
import Testing

/// HTTP/2 rules checked frame by frame, with a client that can break them.
@Suite("Emulator: HTTP/2 frame by frame")
struct EmulatorHTTP2Tests {
    let fixture = EmulatorFixture()

    private func connect(_ emulator: APNSEmulator) async throws -> RawHTTP2Connection {
        try await RawHTTP2Connection.connect(port: emulator.port(for: .development)!, trustRootPEM: emulator.certificateAuthorityPEM!)
    }

    private var validRequest: ByteBuffer {
        RawHTTP2Connection.requestBlock(path: "/3/device/" + fixture.developmentDevice.hex, headers: [
            ("authorization", fixture.bearer), ("apns-topic", APNSOutcomeTable.bundleID), ("apns-push-type", "alert"),
        ])
    }

    private static func settings(_ frame: HTTP2Frame) -> [UInt16: UInt32] {
        var payload = frame.payload
        var values: [UInt16: UInt32] = [:]
        while let id = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) { values[id] = value }
        return values
    }

    private static func errorCode(_ frame: HTTP2Frame, at offset: Int) -> UInt32? {
        frame.payload.getInteger(at: frame.payload.readerIndex + offset, as: UInt32.self)
    }

    @Test("the server's SETTINGS start at one stream; SETTINGS are acknowledged; PING is answered with its bytes")
    func settingsAndPing() async throws {
        try await fixture.run { emulator in
            let connection = try await connect(emulator)
            try await connection.start()
            try await connection.send { $0.writeHTTP2Ping(0xFEED_F00D, ack: false) }
            let frames = try await connection.frames { $0.knownType == .ping }
            let serverSettings = try #require(frames.first)
            #expect(serverSettings.knownType == .settings && !serverSettings.has(HTTP2Flags.ack))
            #expect(Self.settings(serverSettings)[HTTP2SettingID.maxConcurrentStreams.rawValue] == 1)
            #expect(frames.contains { $0.knownType == .settings && $0.has(HTTP2Flags.ack) })
            let ping = try #require(frames.last)
            #expect(ping.has(HTTP2Flags.ack))
            #expect(ping.pingData == 0xFEED_F00D)
            await connection.close()
        }
    }

    @Test("opening more streams than advertised gets GOAWAY ENHANCE_YOUR_CALM with APNs' words; the accepted stream is answered, then the connection closes")
    func tooManyStreams() async throws {
        try await fixture.run { emulator in
            let connection = try await connect(emulator)
            try await connection.start()
            _ = try await connection.frames { $0.knownType == .settings && !$0.has(HTTP2Flags.ack) }
            var bytes = ByteBuffer()
            bytes.writeHTTP2SettingsAck()  // the limit of one stream applies from here
            bytes.writeHTTP2Headers(streamID: 1, block: validRequest, endStream: false)
            bytes.writeHTTP2Headers(streamID: 3, block: validRequest, endStream: false)
            try await connection.write(bytes)
            let refused = try await connection.frames { $0.knownType == .goAway }
            let goAway = try #require(refused.last)
            #expect(Self.errorCode(goAway, at: 0) == 1, "last-stream-id: stream 1 was accepted")
            #expect(Self.errorCode(goAway, at: 4) == HTTP2ErrorCode.enhanceYourCalm.rawValue)
            #expect(String(buffer: goAway.payload.getSlice(at: goAway.payload.readerIndex + 8, length: goAway.payload.readableBytes - 8)!)
                == #"{"reason":"Maximum active streams violated for this endpoint."}"#)
            // Stream 1's body still comes in and is answered; only then does the connection close.
            try await connection.send { $0.writeHTTP2Data(streamID: 1, bytes: Array(APNSOutcomeTable.validBody.utf8), endStream: true) }
            let rest = try await connection.frames { _ in false }
            let answer = try #require(rest.first { $0.knownType == .headers })
            #expect(answer.streamID == 1 && answer.has(HTTP2Flags.endStream))
            #expect(!rest.contains { $0.streamID == 3 })
            #expect(emulator.counters.accepted == 1)
        }
    }

    @Test("a malformed request is reset; a protocol violation ends the connection with GOAWAY")
    func malformed() async throws {
        try await fixture.run { emulator in
            let connection = try await connect(emulator)
            try await connection.start()
            let uppercase = RawHTTP2Connection.requestBlock(path: "/3/device/" + fixture.developmentDevice.hex, headers: [("Apns-Topic", "x")])
            var bytes = ByteBuffer()
            bytes.writeHTTP2Headers(streamID: 1, block: uppercase, endStream: true)
            try await connection.write(bytes)
            let answer = try await connection.frames { $0.knownType == .rstStream }
            let reset = try #require(answer.last)
            #expect(reset.streamID == 1 && Self.errorCode(reset, at: 0) == HTTP2ErrorCode.protocolError.rawValue)

            try await connection.send { $0.writeHTTP2Data(streamID: 0, bytes: [1, 2, 3], endStream: false) }
            let frames = try await connection.frames { _ in false }
            let goAway = try #require(frames.first { $0.knownType == .goAway })
            #expect(Self.errorCode(goAway, at: 0) == 1 && Self.errorCode(goAway, at: 4) == HTTP2ErrorCode.protocolError.rawValue)
        }
    }

    @Test("an answer's body waits for the client's flow-control window")
    func flowControl() async throws {
        try await fixture.run { emulator in
            let connection = try await connect(emulator)
            try await connection.start(settings: [(.initialWindowSize, 0)])
            let unauthorized = RawHTTP2Connection.requestBlock(path: "/3/device/" + fixture.developmentDevice.hex, headers: [
                ("apns-topic", APNSOutcomeTable.bundleID),
            ])
            var bytes = ByteBuffer()
            bytes.writeHTTP2Headers(streamID: 1, block: unauthorized, endStream: false)
            bytes.writeHTTP2Data(streamID: 1, bytes: Array(APNSOutcomeTable.validBody.utf8), endStream: true)
            try await connection.write(bytes)
            _ = try await connection.frames { $0.knownType == .headers && $0.streamID == 1 }
            // A PING round trip: a body sent despite the closed window would arrive before the PING's answer.
            try await connection.send { $0.writeHTTP2Ping(7, ack: false) }
            let beforeUpdate = try await connection.frames { $0.knownType == .ping }
            #expect(!beforeUpdate.contains { $0.knownType == .data })

            try await connection.send { $0.writeHTTP2WindowUpdate(streamID: 1, increment: 1000) }
            let afterUpdate = try await connection.frames { $0.knownType == .data }
            let data = try #require(afterUpdate.last)
            #expect(data.streamID == 1 && data.has(HTTP2Flags.endStream))
            #expect(String(buffer: data.payload) == #"{"reason":"MissingProviderToken"}"#)
            await connection.close()
        }
    }

    @Test("an answer body larger than the stream window goes out in pieces, and a stalled stream does not hold back the next")
    func bodyInPieces() async throws {
        try await fixture.run { emulator in
            let connection = try await connect(emulator)
            try await connection.start(settings: [(.initialWindowSize, 10)])
            let unauthorized = RawHTTP2Connection.requestBlock(path: "/3/device/" + fixture.developmentDevice.hex, headers: [
                ("apns-topic", APNSOutcomeTable.bundleID),
            ])
            var bytes = ByteBuffer()
            for streamID: UInt32 in [1, 3] {
                bytes.writeHTTP2Headers(streamID: streamID, block: unauthorized, endStream: false)
                bytes.writeHTTP2Data(streamID: streamID, bytes: Array(APNSOutcomeTable.validBody.utf8), endStream: true)
            }
            try await connection.write(bytes)
            let first = try await connection.frames { $0.knownType == .data && $0.streamID == 3 }
            let pieces = first.filter { $0.knownType == .data }
            #expect(pieces.map(\.streamID) == [1, 3], "each stream's first piece, neither waiting for the other")
            #expect(pieces.allSatisfy { $0.payload.readableBytes == 10 && !$0.has(HTTP2Flags.endStream) })

            try await connection.send { $0.writeHTTP2WindowUpdate(streamID: 1, increment: 100) }
            let rest = try await connection.frames { $0.knownType == .data && $0.has(HTTP2Flags.endStream) }
            let last = try #require(rest.last)
            #expect(last.streamID == 1)
            #expect(String(buffer: pieces[0].payload) + String(buffer: last.payload) == #"{"reason":"MissingProviderToken"}"#)
            await connection.close()
        }
    }

    @Test("a body far over every limit is answered PayloadTooLarge, with or without content-length; a wrong content-length is reset")
    func oversizedBody() async throws {
        try await fixture.run { emulator in
            let connection = try await connect(emulator)
            try await connection.start()
            let path = "/3/device/" + fixture.developmentDevice.hex
            let headers = [("authorization", fixture.bearer), ("apns-topic", APNSOutcomeTable.bundleID)]
            let body = Array(repeating: UInt8(ascii: "x"), count: 10_000)
            var bytes = ByteBuffer()
            bytes.writeHTTP2Headers(streamID: 1, block: RawHTTP2Connection.requestBlock(path: path, headers: headers), endStream: false)
            bytes.writeHTTP2Data(streamID: 1, bytes: body, endStream: true)
            bytes.writeHTTP2Headers(streamID: 3, block: RawHTTP2Connection.requestBlock(path: path, headers: headers + [("content-length", "10000")]), endStream: false)
            bytes.writeHTTP2Data(streamID: 3, bytes: body, endStream: true)
            bytes.writeHTTP2Headers(streamID: 5, block: RawHTTP2Connection.requestBlock(path: path, headers: headers + [("content-length", "9999")]), endStream: false)
            bytes.writeHTTP2Data(streamID: 5, bytes: body, endStream: true)
            try await connection.write(bytes)
            let frames = try await connection.frames { $0.knownType == .rstStream }
            for streamID: UInt32 in [1, 3] {
                let data = try #require(frames.first { $0.knownType == .data && $0.streamID == streamID }, "stream \(streamID)")
                #expect(String(buffer: data.payload) == #"{"reason":"PayloadTooLarge"}"#)
            }
            let reset = try #require(frames.last)
            #expect(reset.streamID == 5 && reset.resetCode == HTTP2ErrorCode.protocolError.rawValue)
            await connection.close()
        }
    }
}
