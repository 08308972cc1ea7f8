/// The parsers that read what strangers send, each with the properties it must keep for any input.
///
/// Each target takes arbitrary bytes and returns a ``FuzzFinding`` when a property breaks. A crash, a trap or a hang
/// inside the code under test is a finding too; libFuzzer (the `Fuzz/` package) and the corpus replay test
/// (`HeraldFuzzingTests`) both drive these same functions, so a saved crash input becomes a regression test by being
/// copied into `Fuzz/Corpus/<target>/`.
public enum FuzzTarget: String, Sendable, CaseIterable {
    /// `JSONValue(parsing:)`: strict RFC 8259; whatever it accepts writes back to JSON that parses to the same value.
    case json
    /// `Payload(jsonBytes:)` and `PushNotification.prepare()`: what decodes re-encodes to the same payload, and what
    /// validates fits its push type's size limit.
    case payload
    /// `DeviceToken(hex:)` and `DeviceToken(data:)`: accepted tokens are 8–512 bytes and read back the same.
    case deviceToken = "device-token"
    /// `HTTP2FrameReader`: frames are the same however the bytes are split, never exceed the advertised size, and
    /// write back to the bytes they came from.
    case http2Frames = "http2-frames"
    /// `HTTP2ConnectionState`, the state machine under the sender and the emulator, fed the input's frames as a server
    /// (answering as the emulator does) or a client: any frame sequence ends in an event or a connection error,
    /// never a trap; one frame never makes it write more than a few control frames; windows stay within 2^31−1.
    case http2Connection = "http2-connection"
    /// HPACK: header blocks written with HeraldHTTP2's literals decode (with NIOHPACK, as a peer would) to the same
    /// fields, and arbitrary blocks decode under the emulator's limits without trapping.
    case hpack

    /// Runs the target on one input.
    /// - Returns: the first broken property, or `nil`.
    public func check(_ input: [UInt8]) -> FuzzFinding? {
        switch self {
        case .json: JSONFuzzing.check(input)
        case .payload: PayloadFuzzing.check(input)
        case .deviceToken: DeviceTokenFuzzing.check(input)
        case .http2Frames: HTTP2FrameFuzzing.check(input)
        case .http2Connection: HTTP2ConnectionFuzzing.check(input)
        case .hpack: HPACKFuzzing.check(input)
        }
    }
}

/// A property that broke for an input: what was expected, and what happened.
public struct FuzzFinding: Error, Sendable, CustomStringConvertible {
    public let target: FuzzTarget
    public let property: String
    public let detail: String

    init(_ target: FuzzTarget, _ property: String, _ detail: String) {
        self.target = target
        self.property = property
        self.detail = detail
    }

    public var description: String { "\(target.rawValue): \(property) — \(detail)" }
}

/// Reads an input as a few small choices followed by the rest, so one input can steer how a target splits its work.
struct FuzzInput {
    private(set) var bytes: ArraySlice<UInt8>

    init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    /// The next byte, or 0 when the input is used up.
    mutating func byte() -> UInt8 { bytes.popFirst() ?? 0 }

    /// Up to `count` bytes.
    mutating func take(_ count: Int) -> ArraySlice<UInt8> {
        let taken = bytes.prefix(count)
        bytes = bytes.dropFirst(taken.count)
        return taken
    }

    /// Everything not yet read.
    mutating func rest() -> [UInt8] {
        defer { bytes = [] }
        return Array(bytes)
    }
}
